/* floor_preload: the unwinding floor for bench/perf.py. A bare LD_PRELOAD
 * hook of cudaMalloc/cudaFree that only takes the call stack with
 * libunwind's unw_backtrace (per-thread cache, as interpose/stacks.c sets
 * it) and calls the real function: what any recorder that unwinds with
 * libunwind pays per event, with nothing recorded.
 *
 * BENCH_FLOOR_FRAMES (environment, read once): frames walked per event,
 * 0..128; default 72, vramtrace's default VRAMTRACE_STACK_DEPTH (64) plus
 * the 8 it walks for its own frames. 0: a bare dlsym hook, no unwinding.
 * Bench-only: not installed, not part of vramtrace. */
#define _GNU_SOURCE
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#define UNW_LOCAL_ONLY /* the local-only unwinder, as interpose/stacks.c */
#include <libunwind.h>
#include <stdlib.h>

#define FLOOR_MAX_FRAMES 128

typedef cudaError_t (*malloc_fn)(void **, size_t);
typedef cudaError_t (*free_fn)(void *);

/* The hook table, filled once by the constructor (this preload's only
 * state, as interpose/'s session is the real preload's). */
static struct {
    malloc_fn real_malloc;
    free_fn real_free;
    int frames;
} floor_hooks;

__attribute__((constructor)) static void floor_init(void)
{
    const char *s = getenv("BENCH_FLOOR_FRAMES");
    int frames = s ? atoi(s) : 72;
    floor_hooks.frames = frames < 0 ? 0 : frames > FLOOR_MAX_FRAMES ? FLOOR_MAX_FRAMES : frames;
    floor_hooks.real_malloc = (malloc_fn)dlsym(RTLD_NEXT, "cudaMalloc");
    floor_hooks.real_free = (free_fn)dlsym(RTLD_NEXT, "cudaFree");
    unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
}

/* Walks the caller's stack into a scratch buffer; the frames are dropped. */
static void floor_unwind(void)
{
    void *frames[FLOOR_MAX_FRAMES];
    if (floor_hooks.frames > 0)
        unw_backtrace(frames, floor_hooks.frames);
    __asm__ volatile("" : : "r"(frames) : "memory"); /* keep the walk */
}

cudaError_t cudaMalloc(void **p, size_t size)
{
    if (!floor_hooks.real_malloc)
        return cudaErrorInitializationError;
    floor_unwind();
    return floor_hooks.real_malloc(p, size);
}

cudaError_t cudaFree(void *p)
{
    if (!floor_hooks.real_free)
        return cudaErrorInitializationError;
    floor_unwind();
    return floor_hooks.real_free(p);
}
