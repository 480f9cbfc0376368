/* The simulated driver reached as the real runtime reaches a driver:
 * dlopen("libcuda.so.1") + cuGetProcAddress_v2, never linked. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>

typedef CUresult (*gpa_t)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
static void *lib;
static gpa_t gpa;

static void *get(const char *name, int version)
{
    void *fn = NULL;
    CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    assert_int_equal(gpa(name, &fn, version, CU_GET_PROC_ADDRESS_DEFAULT, &st), CUDA_SUCCESS);
    assert_int_equal(st, CU_GET_PROC_ADDRESS_SUCCESS);
    assert_non_null(fn);
    return fn;
}

static int setup(void **state)
{
    (void)state;
    lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    gpa = lib ? (gpa_t)dlsym(lib, "cuGetProcAddress_v2") : NULL;
    return gpa ? 0 : -1;
}

static void alloc_through_proc_address(void **state)
{
    (void)state;
    CUresult (*init)(unsigned) = get("cuInit", 13000);
    CUresult (*dget)(CUdevice *, int) = get("cuDeviceGet", 13000);
    CUresult (*retain)(CUcontext *, CUdevice) = get("cuDevicePrimaryCtxRetain", 13000);
    CUresult (*setcur)(CUcontext) = get("cuCtxSetCurrent", 13000);
    CUresult (*alloc)(CUdeviceptr *, size_t) = get("cuMemAlloc", 13000);
    CUresult (*mfree)(CUdeviceptr) = get("cuMemFree", 13000);
    CUresult (*info)(size_t *, size_t *) = get("cuMemGetInfo", 13000);
    CUdevice dev;
    CUcontext ctx;
    CUdeviceptr p;
    size_t f0, f1, t;
    assert_ptr_equal((void *)alloc, dlsym(lib, "cuMemAlloc_v2")); /* >= 3020: the _v2 */
    assert_int_equal(alloc(&p, 1), CUDA_ERROR_NOT_INITIALIZED);
    assert_int_equal(init(0), CUDA_SUCCESS);
    assert_int_equal(alloc(&p, 1), CUDA_ERROR_INVALID_CONTEXT); /* no current context */
    assert_int_equal(dget(&dev, 0), CUDA_SUCCESS);
    assert_int_equal(dget(&dev, 1), CUDA_ERROR_INVALID_DEVICE);
    assert_int_equal(retain(&ctx, dev), CUDA_SUCCESS);
    assert_int_equal(setcur(ctx), CUDA_SUCCESS);
    assert_int_equal(info(&f0, &t), CUDA_SUCCESS);
    assert_int_equal(alloc(&p, 6 << 20), CUDA_SUCCESS);
    assert_int_equal(info(&f1, &t), CUDA_SUCCESS);
    assert_int_equal(f0 - f1, 6 << 20);
    *(volatile int *)(uintptr_t)p = 7; /* host accessible */
    assert_int_equal(alloc(&p, 0), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(alloc(&p, t), CUDA_ERROR_OUT_OF_MEMORY);
    assert_int_equal(mfree(p), CUDA_SUCCESS);
    assert_int_equal(mfree(p), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(info(&f1, &t), CUDA_SUCCESS);
    assert_int_equal(f0, f1);
}

/* A real driver hands out CUDA 13.0's two-argument cuCtxGetDevice_v2 for
 * "cuCtxGetDevice" at 13000 (an H200's driver 580 crashed when the preload
 * called it with one argument, session 30), the one-argument form below. */
static void cuda13_variants(void **state)
{
    (void)state;
    CUresult (*old)(CUdevice *) = get("cuCtxGetDevice", 12090);
    CUresult (*v13)(CUdevice *, CUcontext) = get("cuCtxGetDevice", 13000);
    CUresult (*sync13)(CUcontext) = get("cuCtxSynchronize", 13000);
    CUresult (*retain)(CUcontext *, CUdevice) = get("cuDevicePrimaryCtxRetain", 13000);
    CUdevice d = -1;
    CUcontext ctx;
    assert_ptr_equal((void *)old, dlsym(lib, "cuCtxGetDevice"));
    assert_ptr_not_equal((void *)v13, (void *)old);
    assert_null(dlsym(lib, "cuCtxGetDevice_v2")); /* not by name (gen_entry_points.py) */
    assert_int_equal(retain(&ctx, 0), CUDA_SUCCESS);
    assert_int_equal(v13(&d, NULL), CUDA_SUCCESS); /* the current context's */
    assert_int_equal(d, 0);
    d = -1;
    assert_int_equal(v13(&d, ctx), CUDA_SUCCESS);
    assert_int_equal(d, 0);
    assert_int_equal(sync13(NULL), CUDA_SUCCESS);
    assert_int_equal(sync13(ctx), CUDA_SUCCESS);
    assert_int_equal(old(&d), CUDA_SUCCESS);
}

static void proc_address_rules(void **state)
{
    (void)state;
    void *fn = (void *)1;
    CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SUCCESS;
    assert_int_equal(gpa("cuNoSuchFunction", &fn, 13000, 0, &st), CUDA_ERROR_NOT_FOUND);
    assert_int_equal(st, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    assert_null(fn);
    assert_int_equal(gpa("cuMemAlloc", &fn, 3000, 0, &st), CUDA_ERROR_NOT_FOUND);
    assert_int_equal(st, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
    assert_ptr_equal(get("cuMemAlloc", 3020), dlsym(lib, "cuMemAlloc_v2"));
    assert_ptr_equal(get("cuMemFree", 12000), dlsym(lib, "cuMemFree_v2"));
    assert_ptr_equal(get("cuGetProcAddress", 11030), dlsym(lib, "cuGetProcAddress"));
    assert_ptr_equal(get("cuGetProcAddress", 12000), dlsym(lib, "cuGetProcAddress_v2"));
    assert_ptr_equal(get("cuMemAllocAsync", 13000), dlsym(lib, "cuMemAllocAsync"));
    CUresult (*old)(const char *, void **, int, cuuint64_t) = get("cuGetProcAddress", 11030);
    assert_int_equal(old("cuMemGetInfo", &fn, 13000, 0), CUDA_SUCCESS);
    assert_ptr_equal(fn, dlsym(lib, "cuMemGetInfo_v2"));
}

static void error_strings(void **state)
{
    (void)state;
    CUresult (*str)(CUresult, const char **) = get("cuGetErrorString", 13000);
    CUresult (*name)(CUresult, const char **) = get("cuGetErrorName", 13000);
    const char *s = NULL;
    assert_int_equal(str(CUDA_ERROR_OUT_OF_MEMORY, &s), CUDA_SUCCESS);
    assert_string_equal(s, "out of memory");
    assert_int_equal(name(CUDA_ERROR_OUT_OF_MEMORY, &s), CUDA_SUCCESS);
    assert_string_equal(s, "CUDA_ERROR_OUT_OF_MEMORY");
    assert_int_equal(str(CUDA_ERROR_INVALID_VALUE, &s), CUDA_SUCCESS);
    assert_string_equal(s, "invalid argument");
    assert_int_equal(str((CUresult)123456, &s), CUDA_ERROR_INVALID_VALUE);
    assert_null(s);
}

/* The symbols the real driver exports under these names, unversioned. */
static void exported_names(void **state)
{
    (void)state;
    const char *names[] = {"cuMemAlloc_v2",       "cuMemFree_v2",
                           "cuMemGetInfo_v2",     "cuDeviceTotalMem_v2",
                           "cuGetProcAddress_v2", "cuMemAllocHost_v2",
                           "cuMemAllocPitch_v2",  "cuGetProcAddress",
                           "cuMemAllocManaged",   "cuMemHostAlloc",
                           "cuMemFreeHost",       "cuMemAllocAsync",
                           "cuMemFreeAsync",      "cuInit",
                           "cuDriverGetVersion"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        assert_non_null(dlsym(lib, names[i]));
    assert_null(dlsym(lib, "sim_alloc")); /* internals stay local */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(alloc_through_proc_address),
        cmocka_unit_test(cuda13_variants),
        cmocka_unit_test(proc_address_rules),
        cmocka_unit_test(error_strings),
        cmocka_unit_test(exported_names),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
