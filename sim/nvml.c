/* libnvidia-ml.so.1 of the simulated device: the few NVML entry points that
 * PyTorch's libc10_cuda.so resolves with dlsym once it finds an NVML library
 * (c10/cuda/driver_api.cpp asserts on each) and calls when it maps an
 * expandable segment (get_fabric_access -> get_nvml_device: nvmlInit_v2 and
 * nvmlDeviceGetHandleByPciBusId_v2 must succeed) and when it words an
 * out-of-memory message. Without any NVML, PyTorch 2.15 calls a null
 * nvmlInit_v2 there and crashes, which a real driver installation never
 * shows. Real NVML always exists beside a driver.
 *
 * The toolkit ships no nvml.h, so the few types and codes are declared here
 * with NVML's documented values (NVML API reference: nvmlReturn_t). No NVLink,
 * no fabric, no per-process accounting: those answer NVML_ERROR_NOT_SUPPORTED,
 * which PyTorch handles (it then omits per-process memory from its OOM
 * message). nvmlDeviceGetGpuFabricInfoV is deliberately absent: PyTorch treats
 * a missing one as "no fabric" and would assert on an error from it. */
#include <cuda.h>
#include <stdio.h>

typedef enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_UNINITIALIZED = 1,
    NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_SUPPORTED = 3,
    NVML_ERROR_NOT_FOUND = 6,
} nvmlReturn_t;

/* One opaque handle per PCI bus number the simulated devices can have. */
enum { SIM_NVML_MAX_BUS = 256 };
struct nvmlDevice_st {
    unsigned char bus;
};
typedef struct nvmlDevice_st *nvmlDevice_t;
static struct nvmlDevice_st devices[SIM_NVML_MAX_BUS];

nvmlReturn_t nvmlInit_v2(void)
{
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlShutdown(void)
{
    return NVML_SUCCESS;
}

/* The CUDA version the driver supports (cuda.h's CUDA_VERSION, what the
 * simulated driver's cuDriverGetVersion reports), e.g. 13000. */
nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *cudaDriverVersion)
{
    if (!cudaDriverVersion)
        return NVML_ERROR_INVALID_ARGUMENT;
    *cudaDriverVersion = CUDA_VERSION;
    return NVML_SUCCESS;
}

/* "domain:bus:device.function" in hexadecimal (NVML_DEVICE_PCI_BUS_ID_FMT,
 * as cudaDeviceGetPCIBusId and PyTorch write it). */
nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *pciBusId, nvmlDevice_t *device)
{
    unsigned dom, bus, dev, fn;
    if (!pciBusId || !device || sscanf(pciBusId, "%x:%x:%x.%x", &dom, &bus, &dev, &fn) != 4)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (bus >= SIM_NVML_MAX_BUS)
        return NVML_ERROR_NOT_FOUND;
    devices[bus].bus = (unsigned char)bus;
    *device = &devices[bus];
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device, unsigned int *count,
                                                  void *infos)
{
    (void)device, (void)count, (void)infos;
    return NVML_ERROR_NOT_SUPPORTED;
}

nvmlReturn_t nvmlDeviceGetNvLinkRemoteDeviceType(nvmlDevice_t device, unsigned int link, int *type)
{
    (void)device, (void)link, (void)type;
    return NVML_ERROR_NOT_SUPPORTED;
}

nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t device, unsigned int link, void *pci)
{
    (void)device, (void)link, (void)pci;
    return NVML_ERROR_NOT_SUPPORTED;
}
