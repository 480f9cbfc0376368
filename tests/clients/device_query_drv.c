/* A cuda-samples-style deviceQueryDrv on the driver API (linked with
 * -lcuda): name, compute capability, memory, UUID, every CUdevice_attribute
 * value 1 .. CU_DEVICE_ATTRIBUTE_MAX - 1 ("attr N V" or "attr N error E").
 * Exit 0 when every device was queried. */
/* cuDeviceComputeCapability is deprecated; deviceQueryDrv and ffmpeg call it. */
#define CUDA_ENABLE_DEPRECATED 1
#include <cuda.h>
#include <stdio.h>

static int query(CUdevice dev)
{
    char name[256];
    int major = 0, minor = 0;
    size_t mem = 0;
    CUuuid uuid;
    if (cuDeviceGetName(name, sizeof name, dev) || cuDeviceComputeCapability(&major, &minor, dev) ||
        cuDeviceTotalMem(&mem, dev) || cuDeviceGetUuid(&uuid, dev)) {
        printf("device %d: identity query failed\n", dev);
        return 1;
    }
    printf("device %d \"%s\" cc %d.%d mem %zu\n", dev, name, major, minor, mem);
    for (int a = 1; a < CU_DEVICE_ATTRIBUTE_MAX; a++) {
        int v = 0;
        CUresult r = cuDeviceGetAttribute(&v, (CUdevice_attribute)a, dev);
        const char *err = NULL;
        if (r == CUDA_SUCCESS)
            printf("attr %d %d\n", a, v);
        else
            printf("attr %d error %s\n", a, cuGetErrorName(r, &err) ? "?" : err);
    }
    return 0;
}

int main(void)
{
    int n = 0, drv = 0;
    CUresult r = cuInit(0);
    if (r == CUDA_SUCCESS)
        r = cuDeviceGetCount(&n);
    if (r != CUDA_SUCCESS) {
        printf("cuInit/cuDeviceGetCount: %d\n", (int)r);
        return 1;
    }
    cuDriverGetVersion(&drv);
    printf("devices %d driver %d\n", n, drv);
    int bad = 0;
    for (CUdevice d = 0; d < n; d++)
        bad |= query(d);
    return bad;
}
