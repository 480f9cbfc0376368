/* The simulated runtime's driver: libcuda.so.1 loaded once with dlopen and its
 * entry points fetched with cuGetProcAddress_v2, as the real runtime does.
 * Below every other runtime file (the ledger scope included): it calls none. */
#include "runtime_internal.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct rt_driver rt_drv_plain, rt_drv_per_thread;
_Thread_local int rt_per_thread_call;
static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static cudaError_t load_err;

typedef CUresult (*gpa_fn)(const char *, void **, int, cuuint64_t,
                           CUdriverProcAddressQueryResult *);

struct proto_version {
    const char *name;
    int version;
};

static int by_name(const void *key, const void *row)
{
    return strcmp(key, ((const struct proto_version *)row)->name);
}

int rt_proto_version(const char *name)
{
    static const struct proto_version table[] = {
#define V(n, v) {n, v},
#include "driver_proto_versions.inc" /* sorted by name (gen_entry_points.py) */
#undef V
    };
    const struct proto_version *r =
        bsearch(name, table, sizeof table / sizeof *table, sizeof *table, by_name);
    return r ? r->version : CUDART_VERSION;
}

static int fetch(gpa_fn gpa, const char *name, void **slot, cuuint64_t flags)
{
    CUdriverProcAddressQueryResult st;
    return gpa(name, slot, rt_proto_version(name), flags, &st) == CUDA_SUCCESS ? 0 : -1;
}

#define RT_FETCH(n)                                                                                \
    bad |= fetch(gpa, #n, (void **)&rt_drv_plain.n, CU_GET_PROC_ADDRESS_DEFAULT);                  \
    bad |= fetch(gpa, #n, (void **)&rt_drv_per_thread.n,                                           \
                 CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);

static void load(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    gpa_fn gpa = h ? (gpa_fn)dlsym(h, "cuGetProcAddress_v2") : NULL;
    void (*teardown)(void);
    int bad = 0;
    if (!gpa) {
        load_err = cudaErrorInsufficientDriver;
        return;
    }
    RT_DRIVER_FUNCS(RT_FETCH)
    if (bad)
        load_err = cudaErrorInsufficientDriver;
    else if (rt_drv_plain.cuInit(0) != CUDA_SUCCESS)
        load_err = cudaErrorInitializationError;
    else if ((teardown = (void (*)(void))dlsym(h, "vtsim_runtime_teardown")))
        atexit(teardown); /* NVIDIA's runtime registers its teardown here too (README.md, "Exit") */
}

cudaError_t rt_load(void)
{
    pthread_once(&load_once, load);
    return load_err;
}
