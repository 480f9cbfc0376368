/* Contexts on the simulated driver as HAMi-core's and GStreamer's driver code
 * uses them (CUDA Driver API reference, "Context Management"): cuCtxCreate
 * pushes, cuCtxPushCurrent/cuCtxPopCurrent nest, cuCtxDestroy pops a current
 * context and frees the device's memory when it was the device's last
 * context. Device: 64 MiB, no context reserve. */
#define CUDA_ENABLE_DEPRECATED 1
#include <cuda.h>
#include <cudaTypedefs.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

static size_t free_bytes(void)
{
    size_t f = 0, t = 0;
    assert_int_equal(cuMemGetInfo(&f, &t), CUDA_SUCCESS);
    return f;
}

static void create_push_pop_destroy(void **state)
{
    (void)state;
    CUcontext a, b, cur, popped;
    assert_int_equal(cuCtxCreate(&a, NULL, 0, 0), CUDA_SUCCESS);
    assert_int_equal(cuCtxGetCurrent(&cur), CUDA_SUCCESS);
    assert_ptr_equal(cur, a);
    /* The CUDA 3.2 form, as a program built with older headers calls it. */
    PFN_cuCtxCreate_v3020 create_v2 = NULL;
    CUdriverProcAddressQueryResult st;
    assert_int_equal(cuGetProcAddress("cuCtxCreate", (void **)&create_v2, 3020, 0, &st),
                     CUDA_SUCCESS);
    assert_int_equal(create_v2(&b, 0, 0), CUDA_SUCCESS);
    assert_int_equal(cuCtxGetCurrent(&cur), CUDA_SUCCESS);
    assert_ptr_equal(cur, b);
    assert_int_equal(cuCtxPopCurrent(&popped), CUDA_SUCCESS);
    assert_ptr_equal(popped, b);
    assert_int_equal(cuCtxGetCurrent(&cur), CUDA_SUCCESS);
    assert_ptr_equal(cur, a);
    assert_int_equal(cuCtxPushCurrent(b), CUDA_SUCCESS);
    assert_int_equal(cuCtxDestroy(b), CUDA_SUCCESS); /* current: popped too */
    assert_int_equal(cuCtxGetCurrent(&cur), CUDA_SUCCESS);
    assert_ptr_equal(cur, a);
    assert_int_equal(cuCtxDestroy(b), CUDA_ERROR_INVALID_CONTEXT);
    assert_int_equal(cuCtxPushCurrent(b), CUDA_ERROR_INVALID_CONTEXT);
    assert_int_equal(cuCtxDestroy(a), CUDA_SUCCESS);
    assert_int_equal(cuCtxGetCurrent(&cur), CUDA_SUCCESS);
    assert_null(cur);
    assert_int_equal(cuCtxPopCurrent(&popped), CUDA_ERROR_INVALID_CONTEXT);
}

static void last_context_frees_the_memory(void **state)
{
    (void)state;
    CUcontext a, prim;
    CUdeviceptr p;
    assert_int_equal(cuCtxCreate(&a, NULL, 0, 0), CUDA_SUCCESS);
    size_t f0 = free_bytes();
    assert_int_equal(cuMemAlloc(&p, 4 << 20), CUDA_SUCCESS);
    assert_int_equal(f0 - free_bytes(), 4 << 20);
    /* The primary context's retain and release do not free a created
     * context's memory. */
    assert_int_equal(cuDevicePrimaryCtxRetain(&prim, 0), CUDA_SUCCESS);
    assert_ptr_not_equal(prim, a);
    assert_int_equal(cuDevicePrimaryCtxRelease(0), CUDA_SUCCESS);
    assert_int_equal(f0 - free_bytes(), 4 << 20);
    assert_int_equal(cuCtxDestroy(a), CUDA_SUCCESS);
    assert_int_equal(cuDevicePrimaryCtxRetain(&prim, 0), CUDA_SUCCESS);
    assert_int_equal(cuCtxPushCurrent(prim), CUDA_SUCCESS);
    assert_int_equal(free_bytes(), f0); /* released with the last context */
    assert_int_equal(cuMemFree(p), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuCtxPopCurrent(NULL), CUDA_SUCCESS);
    assert_int_equal(cuDevicePrimaryCtxRelease(0), CUDA_SUCCESS);
}

static void queries(void **state)
{
    (void)state;
    int major = 0, minor = 0, can = -1, v = 0;
    CUuuid u1, u2;
    char bus[32];
    CUdevice d = -1;
    assert_int_equal(cuDeviceComputeCapability(&major, &minor, 0), CUDA_SUCCESS);
    assert_int_equal(major * 10 + minor, 75);
    assert_int_equal(cuDeviceGetUuid(&u1, 0), CUDA_SUCCESS);
    assert_int_equal(cuDeviceGetUuid(&u2, 0), CUDA_SUCCESS);
    assert_memory_equal(u1.bytes, u2.bytes, sizeof u1.bytes);
    assert_int_equal(cuDeviceGetPCIBusId(bus, sizeof bus, 0), CUDA_SUCCESS);
    assert_int_equal(cuDeviceGetByPCIBusId(&d, bus), CUDA_SUCCESS);
    assert_int_equal(d, 0);
    assert_int_equal(cuDeviceCanAccessPeer(&can, 0, 0), CUDA_SUCCESS);
    assert_int_equal(can, 0);
    assert_int_equal(cuDeviceGetAttribute(&v, (CUdevice_attribute)0, 0), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MAX, 0),
                     CUDA_ERROR_INVALID_VALUE);
    CUdeviceptr p = 0;
    CUipcMemHandle h;
    assert_int_equal(cuIpcOpenMemHandle(&p, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS),
                     CUDA_ERROR_NOT_SUPPORTED);
}

int main(void)
{
    if (cuInit(0) != CUDA_SUCCESS)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(create_push_pop_destroy),
        cmocka_unit_test(last_context_frees_the_memory),
        cmocka_unit_test(queries),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
