/* vmm_retain: cuMemRetainAllocationHandle, which gives one more reference
 * to a mapped handle (the same value: an H200 returned it). A handle
 * released while mapped and then retained by its address is live again
 * (the H200 allowed it): its memory outlives the unmap until that reference
 * is released, through an allocation made in between. A handle retained
 * twice takes three releases. An address no longer mapped cannot be
 * retained. The free-memory checks hold on a real GPU too (tests/corpus/vmm.c's
 * did on the H200). */
#include <cuda.h>

#include "corpus.h"

#define G (2 * MiB)

int main(void)
{
    CUmemAllocationProp prop = corpus_vmm_prop(0);
    CUmemGenericAllocationHandle h1, h2, h3, got, again;
    CUdeviceptr va;
    corpus_driver_start();
    size_t before = corpus_free_bytes();
    EXPECT(cuMemAddressReserve(&va, 8 * G, 0, 0, 0), CUDA_SUCCESS);

    /* released, retained again while mapped, unmapped: still live */
    EXPECT(cuMemCreate(&h1, 2 * G, &prop, 0), CUDA_SUCCESS);
    EXPECT(cuMemMap(va, 2 * G, 0, h1, 0), CUDA_SUCCESS);
    EXPECT(cuMemRelease(h1), CUDA_SUCCESS);
    EXPECT(cuMemRetainAllocationHandle(&got, (void *)(va + G)), CUDA_SUCCESS);
    REQUIRE(got == h1);
    EXPECT(cuMemUnmap(va, 2 * G), CUDA_SUCCESS);
    REQUIRE_EQ(corpus_free_bytes(), before - 2 * G);
    EXPECT(cuMemCreate(&h2, 3 * G, &prop, 0), CUDA_SUCCESS); /* the peak: h1's memory and h2 */
    EXPECT(cuMemRelease(got), CUDA_SUCCESS);
    REQUIRE_EQ(corpus_free_bytes(), before - 3 * G);
    EXPECT(cuMemRetainAllocationHandle(&got, (void *)va), CUDA_ERROR_INVALID_VALUE);

    /* retained twice: three releases, the memory going with the last (after
     * its unmap) */
    EXPECT(cuMemCreate(&h3, G, &prop, 0), CUDA_SUCCESS);
    EXPECT(cuMemMap(va + 4 * G, G, 0, h3, 0), CUDA_SUCCESS);
    EXPECT(cuMemRetainAllocationHandle(&got, (void *)(va + 4 * G)), CUDA_SUCCESS);
    EXPECT(cuMemRetainAllocationHandle(&again, (void *)(va + 4 * G)), CUDA_SUCCESS);
    REQUIRE(got == h3 && again == h3);
    EXPECT(cuMemRelease(h3), CUDA_SUCCESS);
    EXPECT(cuMemRelease(got), CUDA_SUCCESS);
    EXPECT(cuMemUnmap(va + 4 * G, G), CUDA_SUCCESS);
    REQUIRE_EQ(corpus_free_bytes(), before - 4 * G);
    EXPECT(cuMemRelease(again), CUDA_SUCCESS);
    REQUIRE_EQ(corpus_free_bytes(), before - 3 * G);
    EXPECT(cuMemRelease(again), CUDA_ERROR_INVALID_VALUE);

    EXPECT(cuMemRelease(h2), CUDA_SUCCESS);
    REQUIRE_EQ(corpus_free_bytes(), before);
    EXPECT(cuMemAddressFree(va, 8 * G), CUDA_SUCCESS);
    return 0;
}
