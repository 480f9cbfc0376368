/* managed_pitch_3d: managed, pitched and 3D allocations; the pitched size is
 * pitch x height, the 3D one pitch x height x depth. One managed buffer and
 * the 3D one are leaked. */
#include <cuda_runtime_api.h>

#include "corpus.h"

int main(void)
{
    void *m1, *m2, *pitched;
    size_t pitch = 0;
    struct cudaPitchedPtr vol;
    struct cudaExtent ext = {1000, 20, 3};
    EXPECT(cudaMallocManaged(&m1, 3 * MiB, cudaMemAttachGlobal), cudaSuccess);
    EXPECT(cudaMallocManaged(&m2, 12345, cudaMemAttachHost), cudaSuccess);
    ((char *)m1)[0] = 1;
    EXPECT(cudaMallocPitch(&pitched, &pitch, 1000, 300), cudaSuccess);
    REQUIRE(pitch >= 1000);
    EXPECT(cudaMalloc3D(&vol, ext), cudaSuccess);
    REQUIRE(vol.pitch >= 1000 && vol.xsize == 1000 && vol.ysize == 20);
    EXPECT(cudaMallocManaged(&m1, 100, 7), cudaErrorInvalidValue); /* bad flags */
    EXPECT(cudaFree(m2), cudaSuccess);
    EXPECT(cudaFree(pitched), cudaSuccess);
    return 0;
}
