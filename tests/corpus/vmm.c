/* vmm: the driver's virtual memory management. A handle is released right
 * after it is mapped (its memory stays live until the unmap); one handle is
 * mapped twice and unmapped one mapping at a time (still live after the
 * first unmap); one handle is retained by address and released twice, as
 * NCCL frees; one handle is leaked unmapped; one cuMemCreate is too big.
 * Mapped memory is made accessible (cuMemSetAccess) and touched through the
 * driver, never by the host: on a real GPU a host access to it faults (the
 * first GPU run: SIGSEGV at the memset, with and without the preload). */
#include <cuda.h>
#include <string.h>

#include "corpus.h"

#define G (2 * MiB)

/* Read and write access for device 0 to [p, p + size). */
static void allow(CUdeviceptr p, size_t size)
{
    CUmemAccessDesc a;
    memset(&a, 0, sizeof a);
    a.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    a.location.id = 0;
    a.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    EXPECT(cuMemSetAccess(p, size, &a, 1), CUDA_SUCCESS);
}

int main(void)
{
    CUmemAllocationProp prop = corpus_vmm_prop(0);
    CUmemGenericAllocationHandle h1, h2, h3, big;
    CUdeviceptr va;
    corpus_driver_start();
    size_t before = corpus_free_bytes();
    EXPECT(cuMemAddressReserve(&va, 16 * G, 0, 0, 0), CUDA_SUCCESS);

    /* map, then release at once: live until unmapped */
    EXPECT(cuMemCreate(&h1, 2 * G, &prop, 0), CUDA_SUCCESS);
    EXPECT(cuMemMap(va, 2 * G, 0, h1, 0), CUDA_SUCCESS);
    EXPECT(cuMemRelease(h1), CUDA_SUCCESS);
    /* released twice, while its memory is still mapped (later, a real
     * driver may have given h1's value to a new handle: on an H200 a
     * release of h1 after h3's create succeeded) */
    EXPECT(cuMemRelease(h1), CUDA_ERROR_INVALID_VALUE);
    allow(va, 2 * G);
    EXPECT(cuMemsetD8(va, 7, 2 * G), CUDA_SUCCESS);
    REQUIRE_EQ(corpus_free_bytes(), before - 2 * G);

    /* one handle mapped twice; partial unmap */
    EXPECT(cuMemCreate(&h2, G, &prop, 0), CUDA_SUCCESS);
    EXPECT(cuMemMap(va + 4 * G, G, 0, h2, 0), CUDA_SUCCESS);
    EXPECT(cuMemMap(va + 6 * G, G, 0, h2, 0), CUDA_SUCCESS);
    allow(va + 4 * G, G);
    allow(va + 6 * G, G);
    unsigned char seen = 0;
    EXPECT(cuMemsetD8(va + 4 * G, 42, 1), CUDA_SUCCESS);
    EXPECT(cuMemcpyDtoH(&seen, va + 6 * G, 1), CUDA_SUCCESS);
    REQUIRE(seen == 42);
    EXPECT(cuMemRelease(h2), CUDA_SUCCESS);
    EXPECT(cuMemUnmap(va + 4 * G, G), CUDA_SUCCESS);
    REQUIRE_EQ(corpus_free_bytes(), before - 3 * G);
    EXPECT(cuMemUnmap(va + 6 * G, G), CUDA_SUCCESS);
    REQUIRE_EQ(corpus_free_bytes(), before - 2 * G);

    EXPECT(cuMemUnmap(va, 2 * G), CUDA_SUCCESS);
    REQUIRE_EQ(corpus_free_bytes(), before);

    /* NCCL's free (ncclCuMemFree): the handle retained by its address (the
     * same value), released, unmapped, released: the memory lives until the
     * last release, through an allocation made before it */
    CUmemGenericAllocationHandle h4, h5, got;
    EXPECT(cuMemCreate(&h4, 2 * G, &prop, 0), CUDA_SUCCESS);
    EXPECT(cuMemMap(va + 8 * G, 2 * G, 0, h4, 0), CUDA_SUCCESS);
    EXPECT(cuMemRetainAllocationHandle(&got, (void *)(va + 9 * G)), CUDA_SUCCESS);
    REQUIRE(got == h4);
    EXPECT(cuMemRelease(got), CUDA_SUCCESS);
    EXPECT(cuMemUnmap(va + 8 * G, 2 * G), CUDA_SUCCESS);
    REQUIRE_EQ(corpus_free_bytes(), before - 2 * G);
    EXPECT(cuMemCreate(&h5, 4 * G, &prop, 0), CUDA_SUCCESS); /* the peak: h4's memory and h5 */
    EXPECT(cuMemRelease(h4), CUDA_SUCCESS);
    REQUIRE_EQ(corpus_free_bytes(), before - 4 * G);
    EXPECT(cuMemRelease(h5), CUDA_SUCCESS);
    EXPECT(cuMemRetainAllocationHandle(&got, (void *)(va + 8 * G)), CUDA_ERROR_INVALID_VALUE);

    EXPECT(cuMemCreate(&big, (size_t)1 << 44, &prop, 0), CUDA_ERROR_OUT_OF_MEMORY);
    EXPECT(cuMemCreate(&h3, 3 * G, &prop, 0), CUDA_SUCCESS); /* leaked */
    EXPECT(cuMemAddressFree(va, 16 * G), CUDA_SUCCESS);
    return 0;
}
