/* The simulated device's own ledger (sim/README.md, "Ledger"), read back
 * line by line after known calls, and its host registration. Linked with the
 * toolkit's libcudart and libcuda; ctest runs it on the simulated libraries
 * with VRAMTRACE_SIM_LEDGER set to a file in the build tree. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MiB ((size_t)1 << 20)

static long consumed; /* bytes of the ledger already read */

/* The ledger lines written since the last call, as one string (caller frees). */
static char *new_lines(void)
{
    FILE *f = fopen(getenv("VRAMTRACE_SIM_LEDGER"), "r");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long end = ftell(f);
    char *buf = calloc(1, (size_t)(end - consumed) + 1);
    fseek(f, consumed, SEEK_SET);
    assert_int_equal(fread(buf, 1, (size_t)(end - consumed), f), (size_t)(end - consumed));
    fclose(f);
    consumed = end;
    return buf;
}

static int count(const char *s, const char *needle)
{
    int n = 0;
    for (const char *p = s; (p = strstr(p, needle)); p++)
        n++;
    return n;
}

static void expect_once(const char *lines, const char *needle)
{
    if (count(lines, needle) != 1)
        fail_msg("expected once: %s\nin:\n%s", needle, lines);
}

static void setup_ledger(void)
{
    void *p;
    assert_int_equal(cudaFree(NULL), cudaSuccess); /* context */
    assert_int_equal(cudaMalloc(&p, 1), cudaSuccess);
    assert_int_equal(cudaFree(p), cudaSuccess);
    free(new_lines());
}

static void alloc_free_fail_lines(void **state)
{
    (void)state;
    void *p, *q;
    char want[256];
    size_t fr, to;
    setup_ledger();
    assert_int_equal(cudaMalloc(&p, 1000), cudaSuccess);
    assert_int_equal(cudaMalloc(&q, (size_t)1 << 44), cudaErrorMemoryAllocation);
    assert_int_equal(cudaMemGetInfo(&fr, &to), cudaSuccess); /* what the fail line says */
    assert_int_equal(cudaFree(p), cudaSuccess);
    assert_int_equal(cudaFree(p), cudaErrorInvalidValue);
    char *l = new_lines();
    snprintf(want, sizeof want,
             "\"op\":\"alloc\",\"api\":\"cudaMalloc\",\"error\":0,\"kind\":\"device\",\"device\":0,"
             "\"addr\":\"%p\",\"size\":1000}",
             p);
    expect_once(l, want);
    snprintf(want, sizeof want,
             "\"op\":\"fail\",\"api\":\"cudaMalloc\",\"kind\":\"device\",\"device\":0,"
             "\"size\":17592186044416,\"error\":2,\"free\":%zu,\"total\":%zu,\"outside\":",
             fr, to);
    expect_once(l, want);
    snprintf(want, sizeof want,
             "\"op\":\"free\",\"api\":\"cudaFree\",\"error\":0,\"kind\":\"device\","
             "\"device\":0,\"addr\":\"%p\",\"size\":1000}",
             p);
    expect_once(l, want);
    snprintf(want, sizeof want,
             "\"op\":\"bad_free\",\"api\":\"cudaFree\",\"addr\":\"%p\",\"error\":1}", p);
    expect_once(l, want);
    assert_int_equal(count(l, "\n"), 4);
    free(l);
}

/* Pitched and 3D sizes are the API's (pitch x rows), never the rounding;
 * a failure decided in the driver is written once, named after the runtime call. */
static void sizes_and_one_fail_per_call(void **state)
{
    (void)state;
    void *p;
    size_t pitch;
    struct cudaPitchedPtr v;
    setup_ledger();
    assert_int_equal(cudaMallocPitch(&p, &pitch, 1000, 3), cudaSuccess);
    assert_int_equal(pitch, 1024);
    void *keep = p;
    assert_int_equal(cudaMalloc3D(&v, (struct cudaExtent){100, 2, 5}), cudaSuccess);
    assert_int_equal(cudaMallocPitch(&p, &pitch, 0, 3), cudaErrorInvalidValue);
    assert_int_equal(cudaMallocManaged(&p, 100, 99), cudaErrorInvalidValue);
    char *l = new_lines();
    expect_once(l, "\"api\":\"cudaMallocPitch\",\"error\":0,\"kind\":\"device\"");
    expect_once(l, "\"size\":3072}");
    expect_once(l, "\"api\":\"cudaMalloc3D\",\"error\":0,\"kind\":\"device\"");
    expect_once(l, "\"size\":5120}");
    expect_once(l, "\"op\":\"fail\",\"api\":\"cudaMallocPitch\"");
    expect_once(l, "\"op\":\"fail\",\"api\":\"cudaMallocManaged\",\"kind\":\"managed\"");
    assert_int_equal(count(l, "\n"), 4);
    free(l);
    assert_int_equal(cudaFree(keep), cudaSuccess);
    assert_int_equal(cudaFree(v.ptr), cudaSuccess);
}

/* cudaDeviceReset writes one free per live allocation, named after it. */
static void reset_frees_every_allocation(void **state)
{
    (void)state;
    void *a, *b, *c;
    setup_ledger();
    assert_int_equal(cudaMalloc(&a, 3 * MiB), cudaSuccess);
    assert_int_equal(cudaMallocManaged(&b, 10, cudaMemAttachGlobal), cudaSuccess);
    assert_int_equal(cudaMallocAsync(&c, 100, 0), cudaSuccess);
    assert_int_equal(cudaDeviceReset(), cudaSuccess);
    char *l = new_lines();
    assert_int_equal(count(l, "\"op\":\"alloc\""), 3);
    assert_int_equal(count(l, "\"op\":\"free\",\"api\":\"cudaDeviceReset\""), 3);
    assert_int_equal(count(l, "\"kind\":\"managed\",\"device\":0,\"addr\":"), 2);
    free(l);
}

/* Registration: the range, 712 for an overlap, 713 for an unknown base. */
static void host_register_rules(void **state)
{
    (void)state;
    static char buf[3][4096];
    setup_ledger();
    assert_int_equal(cudaHostRegister(buf[0], 4096, 0), cudaSuccess);
    assert_int_equal(cudaHostRegister(buf[0] + 4000, 200, 0), cudaErrorHostMemoryAlreadyRegistered);
    assert_int_equal(cudaHostRegister(buf[1], 4096, 0x100), cudaErrorInvalidValue);
    assert_int_equal(cudaHostRegister(buf[1], 0, 0), cudaErrorInvalidValue);
    assert_int_equal(cudaHostUnregister(buf[0] + 1), cudaErrorHostMemoryNotRegistered);
    assert_int_equal(cudaHostRegister(buf[1], 4096, cudaHostRegisterPortable), cudaSuccess);
    assert_int_equal(cudaHostUnregister(buf[0]), cudaSuccess);
    assert_int_equal(cudaHostUnregister(buf[0]), cudaErrorHostMemoryNotRegistered);
    assert_int_equal(cuMemHostRegister(buf[2], 4096, CU_MEMHOSTREGISTER_DEVICEMAP), CUDA_SUCCESS);
    assert_int_equal(cuMemHostUnregister(buf[2]), CUDA_SUCCESS);
    assert_int_equal(cudaHostUnregister(buf[1]), cudaSuccess);
    char *l = new_lines();
    assert_int_equal(count(l, "\"op\":\"alloc\",\"api\":\"cudaHostRegister\""), 2);
    assert_int_equal(
        count(l, "\"kind\":\"host_registered\",\"device\":-1,\"size\":200,\"error\":712"), 1);
    assert_int_equal(count(l, "\"op\":\"fail\""), 3);
    assert_int_equal(count(l, "\"op\":\"bad_free\",\"api\":\"cudaHostUnregister\""), 2);
    assert_int_equal(count(l, "\"op\":\"free\",\"api\":\"cudaHostUnregister\""), 2);
    expect_once(l, "\"op\":\"alloc\",\"api\":\"cuMemHostRegister_v2\"");
    expect_once(l, "\"op\":\"free\",\"api\":\"cuMemHostUnregister\"");
    free(l);
}

/* VMM: create, two maps, release while mapped, unmaps; sizes are the handle's. */
static void vmm_lines(void **state)
{
    (void)state;
    CUmemAllocationProp prop = {0};
    CUmemGenericAllocationHandle h;
    CUdeviceptr va;
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    setup_ledger();
    assert_int_equal(cuMemCreate(&h, 4 * MiB, &prop, 0), CUDA_SUCCESS);
    assert_int_equal(cuMemAddressReserve(&va, 8 * MiB, 0, 0, 0), CUDA_SUCCESS);
    assert_int_equal(cuMemMap(va, 2 * MiB, 0, h, 0), CUDA_SUCCESS);
    assert_int_equal(cuMemMap(va + 4 * MiB, 4 * MiB, 0, h, 0), CUDA_SUCCESS);
    assert_int_equal(cuMemRelease(h), CUDA_SUCCESS);
    assert_int_equal(cuMemUnmap(va, 8 * MiB), CUDA_ERROR_INVALID_VALUE); /* a gap */
    assert_int_equal(cuMemUnmap(va, 2 * MiB), CUDA_SUCCESS);
    assert_int_equal(cuMemUnmap(va + 4 * MiB, 4 * MiB), CUDA_SUCCESS);
    assert_int_equal(cuMemAddressFree(va, 8 * MiB), CUDA_SUCCESS);
    char *l = new_lines();
    expect_once(l, "\"op\":\"vmm_create\",\"api\":\"cuMemCreate\"");
    expect_once(l, "\"op\":\"vmm_release\",\"api\":\"cuMemRelease\"");
    assert_int_equal(count(l, "\"op\":\"vmm_map\""), 2);
    assert_int_equal(count(l, "\"op\":\"vmm_unmap\""), 2);
    assert_int_equal(count(l, "\"size\":4194304"), 4); /* create, release, second map and unmap */
    assert_int_equal(count(l, "\n"), 6);
    free(l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(alloc_free_fail_lines),
        cmocka_unit_test(sizes_and_one_fail_per_call),
        cmocka_unit_test(reset_frees_every_allocation),
        cmocka_unit_test(host_register_rules),
        cmocka_unit_test(vmm_lines),
    };
    if (!getenv("VRAMTRACE_SIM_LEDGER"))
        return fprintf(stderr, "test_sim_ledger: set VRAMTRACE_SIM_LEDGER\n"), 1;
    remove(getenv("VRAMTRACE_SIM_LEDGER"));
    return cmocka_run_group_tests(tests, NULL, NULL);
}
