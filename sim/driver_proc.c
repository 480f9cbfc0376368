/* cuGetProcAddress: the driver's entry points by base name and CUDA version.
 * Rule (cuda.h, cuGetProcAddress): `symbol` is the base name ("cuMemAlloc");
 * the driver returns the newest variant introduced at or before
 * `cudaVersion` (cuMemAlloc at >= 3020 is cuMemAlloc_v2). A name not known:
 * CUDA_ERROR_NOT_FOUND and CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND; a name whose
 * variants are all newer than `cudaVersion`: CUDA_ERROR_NOT_FOUND and
 * CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT. The pre-3.2 32-bit variants
 * (cuMemAlloc v1 ...) are not provided, so older versions get the latter. */
#include "driver_common.h"
#include "driver_extra.h"

#include <cudaProfiler.h>

#include <string.h>

struct proc {
    const char *name;
    int version; /* CUDA version that introduced this variant */
    void *fn;
};

#define P(n, v, f)                                                                                 \
    {                                                                                              \
        n, v, (void *)(f)                                                                          \
    }
/* Every entry point of the toolkit's cudaTypedefs.h, generated at build time
 * (tools/gen_entry_points.py); the sim's own definitions replace the
 * generated fallbacks at link time, so each slot is the sim's function. */
static const struct proc procs[] = {
#include "driver_procs.inc"
    /* not exported by their own names (tools/gen_entry_points.py, HIDDEN) */
    P("cuCtxGetDevice", 13000, sim_cuCtxGetDevice_v13000),
    P("cuCtxSynchronize", 13000, sim_cuCtxSynchronize_v13000),
};

static const struct proc *lookup(const char *symbol, int version, int *known)
{
    const struct proc *best = NULL;
    *known = 0;
    for (size_t i = 0; i < sizeof procs / sizeof *procs; i++) {
        if (strcmp(procs[i].name, symbol) != 0)
            continue;
        *known = 1;
        if (procs[i].version <= version && (!best || procs[i].version > best->version))
            best = &procs[i];
    }
    return best;
}

/* fn's per-thread-default-stream variant (its _ptds or _ptsz form), or fn
 * itself when it has none (cuda.h, cuGetProcAddress:
 * CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM "search for all symbols
 * ... with the per-thread default stream semantics"). */
static void *per_thread_variant(void *fn)
{
    for (size_t i = 0; i < sim_per_thread_count; i++)
        if (sim_per_thread[i].plain == fn)
            return sim_per_thread[i].per_thread;
    return fn;
}

CUresult CUDAAPI cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                                     cuuint64_t flags, CUdriverProcAddressQueryResult *symbolStatus)
{
    int known;
    if (!symbol || !pfn ||
        flags > (CU_GET_PROC_ADDRESS_LEGACY_STREAM | CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM))
        return CUDA_ERROR_INVALID_VALUE;
    const struct proc *p = lookup(symbol, cudaVersion, &known);
    void *fn = p ? p->fn : NULL;
    if (fn && (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM))
        fn = per_thread_variant(fn);
    *pfn = fn;
    if (symbolStatus)
        *symbolStatus = fn      ? CU_GET_PROC_ADDRESS_SUCCESS
                        : known ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                                : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return fn ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

/* The CUDA 11.3 form, without the status. */
CUresult CUDAAPI cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
    return cuGetProcAddress_v2(symbol, pfn, cudaVersion, flags, NULL);
}
