/* native_thread.c: a C extension's own thread. start_native_alloc() starts a
 * pthread (never registered with Python, so without a Python thread state and
 * without the GIL) that cudaMallocs `bytes` and keeps them, and joins it.
 * Loaded by threads.py with ctypes. */
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stddef.h>

__attribute__((noinline)) static void *native_worker(void *arg)
{
    void *p = NULL;
    if (cudaMalloc(&p, (size_t)arg) != cudaSuccess)
        return (void *)1;
    return NULL;
}

/* Returns 0 when the thread allocated, -1 otherwise. */
int start_native_alloc(size_t bytes)
{
    pthread_t t;
    void *rc = (void *)1;
    if (pthread_create(&t, NULL, native_worker, (void *)bytes) != 0)
        return -1;
    pthread_join(t, &rc);
    return rc ? -1 : 0;
}
