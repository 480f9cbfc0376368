/* native_deep.c: the native half of tests/pytorch/pyframes_random.py
 * --native-deep, loaded with ctypes: recurse `depth` native frames, count
 * the native frames of the stack there with glibc's backtrace() (libgcc's
 * unwinder, not vramtrace's: the truth of whether VRAMTRACE_STACK_DEPTH cut
 * the stack), then cudaMalloc. */
#include <cuda_runtime_api.h>
#include <execinfo.h>
#include <stddef.h>

#define MAX_FRAMES 4096

__attribute__((noinline)) static int at_depth(void **p, size_t n, int depth, int *frames)
{
    int r;
    if (depth > 0) {
        r = at_depth(p, n, depth - 1, frames);
    } else {
        void *buf[MAX_FRAMES];
        *frames = backtrace(buf, MAX_FRAMES); /* from this frame: the one that calls cudaMalloc */
        r = (int)cudaMalloc(p, n);
    }
    __asm__ volatile("" ::: "memory"); /* not a tail call: the frame stays */
    return r;
}

/* cudaMalloc(p, n) from `depth` frames below this one; *frames: the native
 * frames of the stack at the call (innermost: the caller of cudaMalloc).
 * Returns cudaMalloc's result. */
int vt_deep_alloc(void **p, size_t n, int depth, int *frames)
{
    return at_depth(p, n, depth, frames);
}
