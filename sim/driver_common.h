/* Shared by the simulated driver's source files (internal). */
#ifndef SIM_DRIVER_COMMON_H
#define SIM_DRIVER_COMMON_H
/* Declare the old and the _v2 entry points under their exported names. */
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>

#include "ledger.h"
#include "sim_internal.h"

/* The device of the calling thread's current context, or NULL. */
struct sim_device *sim_current_device(void);
/* CUDA_ERROR_NOT_INITIALIZED before cuInit, else CUDA_SUCCESS. */
CUresult sim_check_init(void);
/* CUDA_ERROR_NOT_INITIALIZED before cuInit, CUDA_ERROR_INVALID_DEVICE for an ordinal
 * out of range, else CUDA_SUCCESS. */
CUresult sim_check_device(CUdevice dev);
/* The ordinal of the calling thread's current device, or -1 (ledger lines). */
static inline int sim_current_ordinal(void)
{
    struct sim_device *d = sim_current_device();
    return d ? d->ordinal : -1;
}
/* Frees a device allocation (any kind but an array; 0 is a no-op): cuMemFree's rules. */
CUresult sim_free_dptr(CUdeviceptr dptr);
/* The memory of the CUDA array h (a one-level array, or a level of a
 * mipmapped one from cuMipmappedArrayGetLevel; driver_array.c): its first
 * layer's *rows rows of *row_bytes each from *data;
 * CUDA_ERROR_INVALID_HANDLE when h is no such array. */
CUresult sim_array_data(CUarray h, size_t *row_bytes, size_t *rows, uintptr_t *data);
/* The current device, or a CUresult error in *err. */
struct sim_device *sim_need_device(CUresult *err);

/* CUDA_ERROR_CONTEXT_IS_DESTROYED when the calling thread's current context
 * is a primary context that was reset and not retained since, else
 * CUDA_SUCCESS (no current context included). */
CUresult sim_ctx_current_destroyed(void);

/* ---- host memory the driver knows (host_track.c) ---- */
/* A pinned block (cuMemHostAlloc, or an allocation of a host pool) or a
 * registered range (cuMemHostRegister). */
struct sim_host {
    uintptr_t base;
    size_t size;
    unsigned flags;
    int ordinal;     /* the device of the context current when it was made */
    bool registered; /* the program's memory, registered; else the sim's pinned block */
    struct CUmemPoolHandle_st *pool; /* the host pool it was allocated from, or NULL */
};
/* What sim_host_find looks for. */
enum sim_host_want {
    SIM_HOST_ANY = -1,
    SIM_HOST_PINNED = 0,     /* a pinned block of cuMemHostAlloc (not a pool's) */
    SIM_HOST_REGISTERED = 1, /* a registered range */
    SIM_HOST_POOLED = 2,     /* a host pool's allocation */
};
/* Track *h, with the ledger's alloc line. A registered range overlapping a
 * registered one: CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED; no memory for
 * the record: CUDA_ERROR_OUT_OF_MEMORY. */
CUresult sim_host_add(const struct sim_host *h);
/* The tracked block containing p (exact: starting at p) of the kind want,
 * copied to *out; unlink: no longer tracked, with the ledger's free line
 * (the caller frees a pinned block's memory). */
bool sim_host_find(uintptr_t p, bool exact, enum sim_host_want want, bool unlink,
                   struct sim_host *out);
/* The host's RAM (bytes): more cannot be page-locked. */
size_t sim_host_ram(void);
/* Host pools (host_track.c; made by sim_pool_create): a pool of pinned host
 * memory (CU_MEM_LOCATION_TYPE_HOST or _HOST_NUMA), each allocation its own
 * pinned block, so the pool reserves nothing beyond its allocations; maxSize
 * (0: none) bounds them. */
/* An allocation of size bytes from host pool pool into *out:
 * CUDA_ERROR_OUT_OF_MEMORY past its maxSize or the host's RAM,
 * CUDA_ERROR_INVALID_VALUE for a destroyed pool. */
CUresult sim_host_pool_alloc(struct CUmemPoolHandle_st *pool, size_t size, uintptr_t *out);
/* Frees p when it is a host pool's allocation: true, with the result in
 * *err; false when it is not one. */
bool sim_host_pool_free(uintptr_t p, CUresult *err);
/* The context argument of CUDA 13.0's cuCtxGetDevice_v2 / cuCtxSynchronize_v2
 * (fn, for the message): CUDA_SUCCESS for NULL or a live context,
 * CUDA_ERROR_INVALID_CONTEXT for a destroyed one; a value that was never a
 * context crashed a real driver (driver_ctx.c), so the sim says so on stderr
 * and raises SIGSEGV. */
CUresult sim_ctx_check_v13000(const char *fn, CUcontext ctx);
/* At a synchronization point the default pool keeps at most its release
 * threshold of unused memory (CUDA Programming Guide, stream-ordered
 * allocator, "Physical page caching behavior"). */
void sim_sync_device(struct sim_device *d);
/* The device of a stream (NULL and the special handles: the current one;
 * not a stream: NULL, CUDA_ERROR_INVALID_HANDLE in *err; driver_stream.c). */
struct sim_device *sim_stream_device(CUstream s, CUresult *err);
/* The flags s was created with (0 for NULL and the special handles). */
unsigned sim_stream_flags(CUstream s);
/* Frees the stream s (a stream sim_stream_device accepts, not a special handle). */
void sim_stream_free(CUstream s);
#endif
