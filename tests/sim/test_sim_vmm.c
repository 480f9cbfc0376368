/* Virtual memory management of the simulated driver (sim/README.md,
 * "Virtual memory management"), reached through dlopen("libcuda.so.1") +
 * cuGetProcAddress_v2 as a runtime would. Device: 64 MiB, no context
 * reserve, so free = 64 MiB - physical bytes created. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cuda.h>
#include <dlfcn.h>
#include <string.h>

#define MiB ((size_t)1 << 20)

typedef CUresult (*gpa_t)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
static struct {
    CUresult (*info)(size_t *, size_t *);
    CUresult (*gran)(size_t *, const CUmemAllocationProp *, CUmemAllocationGranularity_flags);
    CUresult (*create)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *,
                       unsigned long long);
    CUresult (*release)(CUmemGenericAllocationHandle);
    CUresult (*reserve)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long);
    CUresult (*afree)(CUdeviceptr, size_t);
    CUresult (*map)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long);
    CUresult (*unmap)(CUdeviceptr, size_t);
    CUresult (*access)(CUdeviceptr, size_t, const CUmemAccessDesc *, size_t);
} f;
static CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                   .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0}};

static void *get(gpa_t gpa, const char *name)
{
    void *fn = NULL;
    CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    if (gpa(name, &fn, 13000, CU_GET_PROC_ADDRESS_DEFAULT, &st) != CUDA_SUCCESS ||
        st != CU_GET_PROC_ADDRESS_SUCCESS)
        return NULL;
    return fn;
}

static int setup(void **state)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    gpa_t gpa = lib ? (gpa_t)dlsym(lib, "cuGetProcAddress_v2") : NULL;
    CUresult (*init)(unsigned);
    CUresult (*retain)(CUcontext *, CUdevice);
    CUresult (*setcur)(CUcontext);
    CUcontext ctx;
    (void)state;
    if (!gpa || !(init = get(gpa, "cuInit")) || !(retain = get(gpa, "cuDevicePrimaryCtxRetain")) ||
        !(setcur = get(gpa, "cuCtxSetCurrent")))
        return -1;
    f.info = get(gpa, "cuMemGetInfo");
    f.gran = get(gpa, "cuMemGetAllocationGranularity");
    f.create = get(gpa, "cuMemCreate");
    f.release = get(gpa, "cuMemRelease");
    f.reserve = get(gpa, "cuMemAddressReserve");
    f.afree = get(gpa, "cuMemAddressFree");
    f.map = get(gpa, "cuMemMap");
    f.unmap = get(gpa, "cuMemUnmap");
    f.access = get(gpa, "cuMemSetAccess");
    for (size_t i = 0; i < sizeof f / sizeof(void *); i++)
        if (!((void **)&f)[i])
            return -1;
    if (init(0) || retain(&ctx, 0) || setcur(ctx))
        return -1;
    return 0;
}

static size_t free_now(void)
{
    size_t fr = 0, to = 0;
    assert_int_equal(f.info(&fr, &to), CUDA_SUCCESS);
    assert_int_equal(to, 64 * MiB);
    return fr;
}

static void granularity(void **state)
{
    size_t g = 0;
    CUmemAllocationProp bad = prop;
    (void)state;
    assert_int_equal(f.gran(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM), CUDA_SUCCESS);
    assert_int_equal(g, 2 * MiB);
    g = 0;
    assert_int_equal(f.gran(&g, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED), CUDA_SUCCESS);
    assert_int_equal(g, 2 * MiB);
    bad.location.id = 7;
    assert_int_equal(f.gran(&g, &bad, CU_MEM_ALLOC_GRANULARITY_MINIMUM), CUDA_ERROR_INVALID_DEVICE);
    assert_int_equal(f.gran(&g, NULL, CU_MEM_ALLOC_GRANULARITY_MINIMUM), CUDA_ERROR_INVALID_VALUE);
}

static void create_release_accounting(void **state)
{
    CUmemGenericAllocationHandle a, b;
    size_t f0 = free_now();
    (void)state;
    assert_int_equal(f0, 64 * MiB);
    assert_int_equal(f.create(&a, 6 * MiB, &prop, 0), CUDA_SUCCESS);
    assert_int_equal(free_now(), f0 - 6 * MiB);
    assert_int_equal(f.create(&b, 2 * MiB, &prop, 0), CUDA_SUCCESS);
    assert_int_equal(free_now(), f0 - 8 * MiB);
    assert_int_equal(f.release(a), CUDA_SUCCESS);
    assert_int_equal(free_now(), f0 - 2 * MiB);
    assert_int_equal(f.release(a), CUDA_ERROR_INVALID_VALUE); /* already released */
    assert_int_equal(f.release(b), CUDA_SUCCESS);
    assert_int_equal(free_now(), f0);
}

static void out_of_memory(void **state)
{
    CUmemGenericAllocationHandle a, b;
    (void)state;
    assert_int_equal(f.create(&a, 60 * MiB, &prop, 0), CUDA_SUCCESS);
    assert_int_equal(f.create(&b, 6 * MiB, &prop, 0), CUDA_ERROR_OUT_OF_MEMORY);
    assert_int_equal(free_now(), 4 * MiB);                           /* the failure took nothing */
    assert_int_equal(f.create(&b, 4 * MiB, &prop, 0), CUDA_SUCCESS); /* not sticky */
    assert_int_equal(free_now(), 0);
    assert_int_equal(f.release(a), CUDA_SUCCESS);
    assert_int_equal(f.release(b), CUDA_SUCCESS);
    assert_int_equal(free_now(), 64 * MiB);
}

static void bad_sizes(void **state)
{
    CUmemGenericAllocationHandle h;
    CUdeviceptr va;
    CUmemAllocationProp host = prop;
    (void)state;
    assert_int_equal(f.create(&h, 0, &prop, 0), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(f.create(&h, 3 * MiB, &prop, 0), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(f.create(&h, 2 * MiB + 512, &prop, 0), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(f.create(&h, 2 * MiB, &prop, 1), CUDA_ERROR_INVALID_VALUE);
    host.location.type = CU_MEM_LOCATION_TYPE_HOST;
    assert_int_equal(f.create(&h, 2 * MiB, &host, 0), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(f.reserve(&va, 3 * MiB, 0, 0, 0), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(f.reserve(&va, 0, 0, 0, 0), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(free_now(), 64 * MiB);
}

static void reserve_map_unmap_free(void **state)
{
    CUmemGenericAllocationHandle h;
    CUdeviceptr va;
    CUmemAccessDesc acc = {.location = prop.location, .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    (void)state;
    assert_int_equal(f.reserve(&va, 1024 * MiB, 0, 0, 0), CUDA_SUCCESS); /* > capacity: virtual */
    assert_int_equal(va % (2 * MiB), 0);
    assert_int_equal(free_now(), 64 * MiB);
    assert_int_equal(f.create(&h, 4 * MiB, &prop, 0), CUDA_SUCCESS);
    assert_int_equal(f.map(va + 2 * MiB, 4 * MiB, 0, h, 0), CUDA_SUCCESS);
    assert_int_equal(f.access(va + 2 * MiB, 4 * MiB, &acc, 1), CUDA_SUCCESS);
    assert_int_equal(free_now(), 60 * MiB); /* mapping costs nothing more */
    assert_int_equal(f.map(va + 4 * MiB, 2 * MiB, 0, h, 0), CUDA_ERROR_INVALID_VALUE); /* mapped */
    assert_int_equal(f.map(va + 1024 * MiB, 2 * MiB, 0, h, 0), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(f.map(va, 2 * MiB, 2 * MiB, h, 0), CUDA_ERROR_INVALID_VALUE); /* offset */
    assert_int_equal(f.afree(va, 1024 * MiB), CUDA_ERROR_INVALID_VALUE); /* still mapped */
    assert_int_equal(f.release(h), CUDA_SUCCESS); /* still mapped: memory stays */
    assert_int_equal(free_now(), 60 * MiB);
    assert_int_equal(f.unmap(va + 2 * MiB, 2 * MiB), CUDA_ERROR_INVALID_VALUE); /* half */
    assert_int_equal(f.unmap(va + 2 * MiB, 4 * MiB), CUDA_SUCCESS);
    assert_int_equal(free_now(), 64 * MiB); /* released and unmapped: freed */
    assert_int_equal(f.unmap(va + 2 * MiB, 4 * MiB), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(f.afree(va, 2 * MiB), CUDA_ERROR_INVALID_VALUE); /* not the reserved size */
    assert_int_equal(f.afree(va, 1024 * MiB), CUDA_SUCCESS);
    assert_int_equal(f.afree(va, 1024 * MiB), CUDA_ERROR_INVALID_VALUE);
}

static void write_through_mapping(void **state)
{
    CUmemGenericAllocationHandle h;
    CUdeviceptr va;
    (void)state;
    assert_int_equal(f.reserve(&va, 8 * MiB, 0, 0, 0), CUDA_SUCCESS);
    assert_int_equal(f.create(&h, 2 * MiB, &prop, 0), CUDA_SUCCESS);
    assert_int_equal(f.map(va, 2 * MiB, 0, h, 0), CUDA_SUCCESS);
    assert_int_equal(f.map(va + 4 * MiB, 2 * MiB, 0, h, 0), CUDA_SUCCESS); /* twice */
    memset((void *)(uintptr_t)va, 0x5a, 2 * MiB);
    /* Two mappings of one handle share its memory. */
    assert_int_equal(((unsigned char *)(uintptr_t)va)[4 * MiB + 12345], 0x5a);
    assert_int_equal(f.unmap(va, 2 * MiB), CUDA_SUCCESS);
    assert_int_equal(((unsigned char *)(uintptr_t)va)[4 * MiB + 2 * MiB - 1], 0x5a);
    assert_int_equal(f.map(va, 2 * MiB, 0, h, 0), CUDA_SUCCESS); /* contents kept */
    assert_int_equal(((unsigned char *)(uintptr_t)va)[7], 0x5a);
    assert_int_equal(f.unmap(va, 2 * MiB), CUDA_SUCCESS);
    assert_int_equal(f.unmap(va + 4 * MiB, 2 * MiB), CUDA_SUCCESS);
    assert_int_equal(f.release(h), CUDA_SUCCESS);
    assert_int_equal(f.afree(va, 8 * MiB), CUDA_SUCCESS);
    assert_int_equal(free_now(), 64 * MiB);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(granularity),
        cmocka_unit_test(create_release_accounting),
        cmocka_unit_test(out_of_memory),
        cmocka_unit_test(bad_sizes),
        cmocka_unit_test(reserve_map_unmap_free),
        cmocka_unit_test(write_through_mapping),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
