/* Stream handles of the simulated driver: a stream is its device and its
 * creation flags (no work is ever queued on it). Below stream capture
 * (driver_capture.c), which asks it about streams. */
#include "driver_common.h"

#include <stdlib.h>

#define STREAM_MAGIC 0x5354524du

struct CUstream_st {
    unsigned magic;
    int ordinal;
    unsigned flags;
};

/* The device a stream belongs to; NULL and the special handles mean the
 * current context's device. Returns NULL for a handle that is not a stream. */
struct sim_device *sim_stream_device(CUstream s, CUresult *err)
{
    if (s == NULL || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD)
        return sim_need_device(err);
    if (s->magic != STREAM_MAGIC) {
        *err = CUDA_ERROR_INVALID_HANDLE;
        return NULL;
    }
    *err = CUDA_SUCCESS;
    return &sim_devices[s->ordinal];
}

unsigned sim_stream_flags(CUstream s)
{
    if (s == NULL || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD || s->magic != STREAM_MAGIC)
        return 0;
    return s->flags;
}

CUresult CUDAAPI cuStreamCreate(CUstream *phStream, unsigned int Flags)
{
    CUresult err;
    struct sim_device *d = sim_need_device(&err);
    if (!d)
        return err;
    if (!phStream || Flags > CU_STREAM_NON_BLOCKING)
        return CUDA_ERROR_INVALID_VALUE;
    struct CUstream_st *s = malloc(sizeof *s);
    if (!s)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *s = (struct CUstream_st){STREAM_MAGIC, d->ordinal, Flags};
    *phStream = s;
    return CUDA_SUCCESS;
}

void sim_stream_free(CUstream s)
{
    s->magic = 0;
    free(s);
}
