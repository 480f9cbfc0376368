/* The simulated driver's wider API surface: what real programs resolve and
 * call besides memory (device identity, peer access, IPC, limits, stream
 * extras, the pre-CUDA-4 names), the fallback of the generated entry points
 * and the static-runtime diagnosis (cuGetExportTable). */
#define _GNU_SOURCE /* dladdr */
#include "driver_common.h"
#include "driver_extra.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#define MAX_NAMED 256

/* Names already reported; each is reported once per process. */
static pthread_mutex_t named_lock = PTHREAD_MUTEX_INITIALIZER;
static const char *named[MAX_NAMED];
static int nnamed;

CUresult sim_unsupported(const char *name)
{
    int first = 1;
    pthread_mutex_lock(&named_lock);
    for (int i = 0; i < nnamed && first; i++)
        first = named[i] != name;
    if (first && nnamed < MAX_NAMED)
        named[nnamed++] = name;
    pthread_mutex_unlock(&named_lock);
    if (first)
        fprintf(stderr, "vramtrace-sim: %s: not supported by the simulated device\n", name);
    return CUDA_ERROR_NOT_SUPPORTED;
}

/* The simulated device's identity (README.md, "Identity"): a tool that finds
 * this symbol in libcuda.so.1 knows there is no real driver behind it, e.g.
 * no CUPTI (which needs the driver's export tables and, in CUPTI 13.2,
 * recurses until the stack overflows when they fail). */
const char vtsim_identity[] = "vramtrace simulated device";

enum caller { CALLER_SHARED_CUDART, CALLER_NVIDIA_LIB, CALLER_PROGRAM };

/* Who asks for an export table, from the object holding the return address:
 * NVIDIA's libcudart.so, another NVIDIA library (libcupti, libcublas, ...;
 * they report their own failure), or anything else: a program or library
 * with the runtime linked in statically. */
static enum caller classify(const void *ret)
{
    Dl_info info;
    const char *lib = dladdr(ret, &info) && info.dli_fname ? info.dli_fname : "";
    const char *base = strrchr(lib, '/') ? strrchr(lib, '/') + 1 : lib;
    if (strncmp(base, "libcudart.so", 12) == 0)
        return CALLER_SHARED_CUDART;
    if (strncmp(base, "libcu", 5) == 0 || strncmp(base, "libnv", 5) == 0)
        return CALLER_NVIDIA_LIB;
    return CALLER_PROGRAM;
}

/* NVIDIA's own runtime reaches the driver through this undocumented table,
 * which the sim cannot provide: one line on stderr names the cause and the
 * fix (once per cause), and the call fails with CUDA_ERROR_NOT_SUPPORTED. */
__attribute__((noinline)) CUresult CUDAAPI cuGetExportTable(const void **ppExportTable,
                                                            const CUuuid *pExportTableId)
{
    static int told[3];
    (void)pExportTableId;
    if (ppExportTable)
        *ppExportTable = NULL;
    enum caller c = classify(__builtin_return_address(0));
    if (c == CALLER_NVIDIA_LIB || __atomic_exchange_n(&told[c], 1, __ATOMIC_ACQ_REL))
        return CUDA_ERROR_NOT_SUPPORTED;
    if (c == CALLER_SHARED_CUDART)
        fprintf(stderr, "vramtrace-sim: NVIDIA's libcudart.so was loaded instead of the simulated "
                        "runtime and cannot reach the simulated device (cuGetExportTable); put "
                        "the simulator's directory first on LD_LIBRARY_PATH\n");
    else
        fprintf(stderr, "vramtrace-sim: this program links the CUDA runtime statically "
                        "(cuGetExportTable), which cannot reach the simulated device; "
                        "rebuild it with nvcc -cudart shared\n");
    return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult CUDAAPI cuDeviceComputeCapability(int *major, int *minor, CUdevice dev)
{
    CUresult err = sim_check_device(dev);
    if (err)
        return err;
    if (!major || !minor)
        return CUDA_ERROR_INVALID_VALUE;
    *major = sim_cfg.profile->major;
    *minor = sim_cfg.profile->minor;
    return CUDA_SUCCESS;
}

/* A stable UUID per profile and ordinal: "vramtrace-sim" bytes, the ordinal,
 * the compute capability. */
CUresult CUDAAPI cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev)
{
    CUresult err = sim_check_device(dev);
    if (err)
        return err;
    if (!uuid)
        return CUDA_ERROR_INVALID_VALUE;
    memset(uuid->bytes, 0, sizeof uuid->bytes);
    memcpy(uuid->bytes, "vramtrace-sim", 13);
    uuid->bytes[13] = (char)dev;
    uuid->bytes[14] = (char)sim_cfg.profile->major;
    uuid->bytes[15] = (char)sim_cfg.profile->minor;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetUuid(CUuuid *uuid, CUdevice dev)
{
    return cuDeviceGetUuid_v2(uuid, dev);
}

/* "domain:bus:device.function" from the PCI attributes (bus 0, device = the
 * ordinal); len too small for the 13 bytes: CUDA_ERROR_INVALID_VALUE. */
CUresult CUDAAPI cuDeviceGetPCIBusId(char *pciBusId, int len, CUdevice dev)
{
    CUresult err = sim_check_device(dev);
    if (err)
        return err;
    if (!pciBusId || len < 13)
        return CUDA_ERROR_INVALID_VALUE;
    snprintf(pciBusId, (size_t)len, "0000:00:%02x.0", (unsigned)dev & 0xff);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetByPCIBusId(CUdevice *dev, const char *pciBusId)
{
    unsigned dom, bus, d, fn;
    if (sim_check_init())
        return sim_check_init();
    if (!dev || !pciBusId || sscanf(pciBusId, "%x:%x:%x.%x", &dom, &bus, &d, &fn) != 4)
        return CUDA_ERROR_INVALID_VALUE;
    if (dom || bus || fn || d >= (unsigned)sim_cfg.ndevices)
        return CUDA_ERROR_INVALID_DEVICE;
    *dev = (CUdevice)d;
    return CUDA_SUCCESS;
}

/* No peer access between simulated devices (each device's memory is its own
 * range; peer mappings are not modelled): 0, as a real driver answers for
 * boards without P2P. */
CUresult CUDAAPI cuDeviceCanAccessPeer(int *canAccessPeer, CUdevice dev, CUdevice peerDev)
{
    CUresult err = sim_check_device(dev);
    if (!err)
        err = sim_check_device(peerDev);
    if (err)
        return err;
    if (!canAccessPeer)
        return CUDA_ERROR_INVALID_VALUE;
    *canAccessPeer = 0;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetP2PAttribute(int *value, CUdevice_P2PAttribute attrib,
                                         CUdevice srcDevice, CUdevice dstDevice)
{
    CUresult err = sim_check_device(srcDevice);
    if (!err)
        err = sim_check_device(dstDevice);
    if (err)
        return err;
    if (!value || srcDevice == dstDevice)
        return srcDevice == dstDevice ? CUDA_ERROR_INVALID_DEVICE : CUDA_ERROR_INVALID_VALUE;
    (void)attrib;
    *value = 0;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxEnablePeerAccess(CUcontext peerContext, unsigned int Flags)
{
    CUresult err;
    (void)peerContext;
    if (!sim_need_device(&err))
        return err;
    return Flags ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_PEER_ACCESS_UNSUPPORTED;
}

CUresult CUDAAPI cuCtxDisablePeerAccess(CUcontext peerContext)
{
    CUresult err;
    (void)peerContext;
    if (!sim_need_device(&err))
        return err;
    return CUDA_ERROR_PEER_ACCESS_NOT_ENABLED;
}

/* Inter-process handles are not modelled: CUDA_ERROR_NOT_SUPPORTED, what a
 * real driver answers where IPC is unavailable (e.g. WSL), without a
 * message: programs such as numba probe these routinely. */
CUresult CUDAAPI cuIpcGetMemHandle(CUipcMemHandle *pHandle, CUdeviceptr dptr)
{
    (void)pHandle, (void)dptr;
    return sim_check_init() ? sim_check_init() : CUDA_ERROR_NOT_SUPPORTED;
}

CUresult CUDAAPI cuIpcOpenMemHandle_v2(CUdeviceptr *pdptr, CUipcMemHandle handle,
                                       unsigned int Flags)
{
    (void)pdptr, (void)handle, (void)Flags;
    return sim_check_init() ? sim_check_init() : CUDA_ERROR_NOT_SUPPORTED;
}

CUresult CUDAAPI cuIpcOpenMemHandle(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags)
{
    return cuIpcOpenMemHandle_v2(pdptr, handle, Flags);
}

CUresult CUDAAPI cuIpcCloseMemHandle(CUdeviceptr dptr)
{
    (void)dptr;
    return sim_check_init() ? sim_check_init() : CUDA_ERROR_NOT_SUPPORTED;
}

CUresult CUDAAPI cuIpcGetEventHandle(CUipcEventHandle *pHandle, CUevent event)
{
    (void)pHandle, (void)event;
    return sim_check_init() ? sim_check_init() : CUDA_ERROR_NOT_SUPPORTED;
}

CUresult CUDAAPI cuIpcOpenEventHandle(CUevent *phEvent, CUipcEventHandle handle)
{
    (void)phEvent, (void)handle;
    return sim_check_init() ? sim_check_init() : CUDA_ERROR_NOT_SUPPORTED;
}
