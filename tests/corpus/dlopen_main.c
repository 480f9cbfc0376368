/* dlopen_main: allocations made by a dlopen'ed library (path in argv[1]),
 * some freed by the library, one by the program, one leaked; the library is
 * closed before exit. */
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include "corpus.h"

int main(int argc, char **argv)
{
    void *p[3];
    REQUIRE(argc == 2);
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    REQUIRE(h != NULL);
    int (*lib_alloc)(void **, size_t) = (int (*)(void **, size_t))dlsym(h, "corpus_lib_alloc");
    int (*lib_free)(void *) = (int (*)(void *))dlsym(h, "corpus_lib_free");
    REQUIRE(lib_alloc && lib_free);
    for (int i = 0; i < 3; i++)
        EXPECT(lib_alloc(&p[i], (size_t)(i + 1) * 5 * MiB), cudaSuccess);
    EXPECT(lib_alloc(&p[0], (size_t)1 << 45), cudaErrorMemoryAllocation);
    EXPECT(lib_free(p[1]), cudaSuccess);
    EXPECT(cudaFree(p[2]), cudaSuccess);
    REQUIRE(dlclose(h) == 0);
    return 0;
}
