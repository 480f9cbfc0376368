/* device.c — which device we run on and which ops backend computes there. */
#define _GNU_SOURCE /* dl_iterate_phdr, RTLD_NOLOAD */
#include "train.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <link.h>
#include <string.h>

static int find_sim_cudart(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    const char *name = info->dlpi_name;
    const char *base = name ? strrchr(name, '/') : NULL;
    if (!base || strncmp(base + 1, "libcudart.so", 12) != 0)
        return 0;
    /* build/lib/sim/ or <prefix>/lib/vramtrace/sim/ (sim/README.md) */
    size_t dir_len = (size_t)(base - name);
    if (dir_len >= 4 && strncmp(base - 4, "/sim", 4) == 0)
        *(int *)data = 1;
    return 0;
}

int tr_device_is_simulated(void)
{
    int sim = 0;
    dl_iterate_phdr(find_sim_cudart, &sim);
    if (sim)
        return 1;
    /* The simulated runtime exports the memory subset only: no kernel launches. */
    void *h = dlopen("libcudart.so.13", RTLD_NOW | RTLD_NOLOAD);
    if (!h)
        return 0;
    int no_launch = dlsym(h, "cudaLaunchKernel") == NULL;
    dlclose(h);
    return no_launch;
}

static ops_ctx *create(ops_backend b)
{
    char err[512] = "";
    ops_ctx *ctx = ops_ctx_create(b, err, sizeof err);
    if (!ctx)
        fprintf(stderr, "train: cannot create the %s backend: %s\n", b == OPS_CUDA ? "cuda" : "cpu",
                err);
    return ctx;
}

ops_ctx *tr_open_backend(const tr_options *o)
{
    int sim = tr_device_is_simulated();
    tr_backend b = o->backend;
    if (b == TR_BACKEND_AUTO)
        b = sim || !ops_have_cuda() ? TR_BACKEND_CPU : TR_BACKEND_CUDA;
    if (b == TR_BACKEND_CPU && !sim && !o->memory_only) {
        fprintf(stderr, "train: the cpu backend computes on host-accessible device memory, which "
                        "only the simulated device has (LD_LIBRARY_PATH=build/lib/sim); on a GPU "
                        "use --backend cuda (a build with nvcc and cuDNN) or --memory-only\n");
        return NULL;
    }
    if (b == TR_BACKEND_CUDA && sim && !o->memory_only) {
        fprintf(stderr, "train: the simulated device runs no kernels: use --backend cpu\n");
        return NULL;
    }
    return create(b == TR_BACKEND_CUDA ? OPS_CUDA : OPS_CPU);
}
