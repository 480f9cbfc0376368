/* A vectorAddMMAP-style program on the driver API: checks that the device
 * supports virtual memory management (CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_
 * MANAGEMENT_SUPPORTED, 102), creates its own context (cuCtxCreate, the v4
 * form through cuda.h), backs a reserved range with cuMemCreate + cuMemMap,
 * fills it from the host and reads it back. Module loading and peer queries
 * are made as the sample makes them; the simulated device has no modules,
 * so cuModuleLoadData may fail, but it must exist and fail cleanly.
 * Prints one line per step; exit 0 when the memory round trip is right. */
#include <cuda.h>
#include <stdio.h>
#include <string.h>

#define N (1 << 20) /* floats */

#define CHECK(call)                                                                                \
    do {                                                                                           \
        CUresult r_ = (call);                                                                      \
        if (r_ != CUDA_SUCCESS) {                                                                  \
            printf("%s failed: %d\n", #call, (int)r_);                                             \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

static float host_in[N], host_out[N];

static int round_trip(CUdeviceptr ptr)
{
    for (int i = 0; i < N; i++)
        host_in[i] = (float)i;
    CHECK(cuMemcpyHtoD(ptr, host_in, sizeof host_in));
    CHECK(cuMemcpyDtoH(host_out, ptr, sizeof host_out));
    return memcmp(host_in, host_out, sizeof host_in) != 0;
}

int main(void)
{
    CUdevice dev;
    CUcontext ctx;
    int vmm = 0, peer = -1;
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&dev, 0));
    CHECK(cuDeviceGetAttribute(&vmm, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, dev));
    printf("vmm supported %d\n", vmm);
    if (!vmm)
        return 1;
    CHECK(cuCtxCreate(&ctx, NULL, 0, dev));
    CUmodule mod;
    CUresult lr = cuModuleLoadData(&mod, "not a module");
    printf("cuModuleLoadData %s\n", lr == CUDA_SUCCESS ? "ok" : "failed");
    int ndev = 0;
    CHECK(cuDeviceGetCount(&ndev));
    if (ndev > 1)
        CHECK(cuDeviceCanAccessPeer(&peer, 0, 1));
    printf("peer %d\n", peer);

    CUmemAllocationProp prop = {0};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = dev;
    size_t gran = 0;
    CHECK(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    size_t size = (sizeof host_in + gran - 1) / gran * gran;
    CUmemGenericAllocationHandle h;
    CUdeviceptr ptr;
    CHECK(cuMemCreate(&h, size, &prop, 0));
    CHECK(cuMemAddressReserve(&ptr, size, 0, 0, 0));
    CHECK(cuMemMap(ptr, size, 0, h, 0));
    CUmemAccessDesc acc = {{CU_MEM_LOCATION_TYPE_DEVICE, dev}, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    CHECK(cuMemSetAccess(ptr, size, &acc, 1));
    int bad = round_trip(ptr);
    printf("granularity %zu mapped %zu round trip %s\n", gran, size, bad ? "WRONG" : "ok");
    CHECK(cuMemUnmap(ptr, size));
    CHECK(cuMemAddressFree(ptr, size));
    CHECK(cuMemRelease(h));
    CHECK(cuCtxDestroy(ctx));
    return bad;
}
