/* t_getproc: entry points fetched without the PLT, as a statically linked
 * runtime does: dlopen("libcuda.so.1") + cuGetProcAddress_v2, dlsym of a
 * _v2 name, and the runtime's cudaMalloc through dlsym (which passes through
 * the simulated driver and must count once). Every allocation's stack must
 * contain traced_caller (checked by vt_check --frame). */
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>

#include "tbook.h"

typedef int (*gpa_fn)(const char *, void **, int, unsigned long long, int *);
typedef int (*alloc_fn)(uint64_t *, size_t);
typedef int (*free_fn)(uint64_t);
typedef int (*rt_alloc_fn)(void **, size_t);
typedef int (*rt_free_fn)(void *);

static tbook b;
static gpa_fn gpa;

static void *proc(const char *name)
{
    void *p = NULL;
    int status = 0;
    if (gpa(name, &p, 13000, 0, &status) != 0 || !p)
        exit(20);
    return p;
}

static void context_up(void)
{
    int (*init)(unsigned) = proc("cuInit");
    int (*dev_get)(int *, int) = proc("cuDeviceGet");
    int (*retain)(void **, int) = proc("cuDevicePrimaryCtxRetain");
    int (*set)(void *) = proc("cuCtxSetCurrent");
    int dev = 0;
    void *ctx = NULL;
    if (init(0) || dev_get(&dev, 0) || retain(&ctx, dev) || set(ctx))
        exit(21);
}

__attribute__((noinline)) static void traced_caller(alloc_fn drv_alloc, free_fn drv_free,
                                                    alloc_fn v2_alloc, rt_alloc_fn rt_alloc,
                                                    rt_free_fn rt_free)
{
    uint64_t d[6];
    void *r[3];
    for (int i = 0; i < 6; i++) {
        if ((i % 2 ? v2_alloc : drv_alloc)(&d[i], 4096u << i))
            exit(22);
        tb_alloc(&b, 4096u << i, 0);
    }
    for (int i = 0; i < 3; i++) {
        if (rt_alloc(&r[i], 1000u + (unsigned)i))
            exit(23);
        tb_alloc(&b, 1000u + (unsigned)i, 0);
    }
    for (int i = 0; i < 6; i += 2) {
        if (drv_free(d[i]))
            exit(24);
        tb_free(&b, 4096u << i, 0);
    }
    if (rt_free(r[1]))
        exit(25);
    tb_free(&b, 1001, 0);
    __asm__ volatile("" ::: "memory"); /* keep this frame (no tail call) */
}

int main(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    void *hr = dlopen("libcudart.so.13", RTLD_NOW | RTLD_LOCAL);
    char extra[96];
    if (!h || !hr || !(gpa = (gpa_fn)dlsym(h, "cuGetProcAddress_v2")))
        return 2;
    context_up();
    traced_caller((alloc_fn)proc("cuMemAlloc"), (free_fn)proc("cuMemFree"),
                  (alloc_fn)dlsym(h, "cuMemAlloc_v2"), (rt_alloc_fn)dlsym(hr, "cudaMalloc"),
                  (rt_free_fn)dlsym(hr, "cudaFree"));
    snprintf(extra, sizeof extra, "stackless_allocs=0 allocs_with_frame=%llu",
             (unsigned long long)b.allocs);
    tb_print(&b, extra);
    return 0;
}
