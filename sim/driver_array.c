/* CUDA arrays of the simulated driver: cuArrayCreate_v2, cuArray3DCreate_v2,
 * cuMipmappedArrayCreate and their destroys, cuMipmappedArrayGetLevel (the
 * other array entry points keep their generated CUDA_ERROR_NOT_SUPPORTED
 * stubs). An array takes device memory as
 * cuMemAlloc does, recorded in the ledger under the kind "array"; its handle
 * is the address of that memory (a real driver's CUarray is an opaque
 * pointer: a profiler must not read it as an address).
 *
 * Size: width x height x depth elements (a height or depth of 0 counts as
 * 1), each the format's bytes times its channels, summed over the levels of
 * a mipmapped array (level_bytes); block-compressed formats
 * by 4x4 blocks of 8 (BC1, BC4) or 16 bytes. That is the elements' own
 * bytes: a real driver lays arrays out in its own tiles and alignment,
 * larger, and says how much only for arrays created with deferred mapping
 * (cuArrayGetMemoryRequirements). Not modelled, CUDA_ERROR_NOT_SUPPORTED:
 * the video formats (NV12 ...), sparse arrays and deferred mapping (their
 * memory comes later, from cuMemCreate handles). The rows of a one-level
 * array (or of a mipmap level) are contiguous, row_bytes apart
 * (sim_array_data): 2D copies (driver_copy2d.c) address its first layer. */
#include "driver_common.h"

#include <pthread.h>
#include <stdlib.h>

/* Bytes of one element (or, for block-compressed formats, of one 4x4 block:
 * *block = 4); 0 for a format the sim does not model. */
static size_t element_bytes(CUarray_format f, unsigned channels, unsigned *block)
{
    *block = 1;
    switch (f) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8:
        return channels;
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF:
        return 2u * channels;
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT:
        return 4u * channels;
    case CU_AD_FORMAT_BC1_UNORM:
    case CU_AD_FORMAT_BC1_UNORM_SRGB:
    case CU_AD_FORMAT_BC4_UNORM:
    case CU_AD_FORMAT_BC4_SNORM:
        *block = 4;
        return 8;
    case CU_AD_FORMAT_BC2_UNORM:
    case CU_AD_FORMAT_BC2_UNORM_SRGB:
    case CU_AD_FORMAT_BC3_UNORM:
    case CU_AD_FORMAT_BC3_UNORM_SRGB:
    case CU_AD_FORMAT_BC5_UNORM:
    case CU_AD_FORMAT_BC5_SNORM:
    case CU_AD_FORMAT_BC6H_UF16:
    case CU_AD_FORMAT_BC6H_SF16:
    case CU_AD_FORMAT_BC7_UNORM:
    case CU_AD_FORMAT_BC7_UNORM_SRGB:
        *block = 4;
        return 16;
    default:
        return 0;
    }
}

static size_t at_least_1(size_t n)
{
    return n ? n : 1;
}

/* The bytes of level `level` of descriptor a (level 0: the array itself):
 * width and height halve at each level (at least 1), depth too unless the
 * array is layered or a cubemap (layers and faces stay); elem bytes per
 * element or per 4x4 block; 0 when too large for size_t. */
static size_t level_bytes(const CUDA_ARRAY3D_DESCRIPTOR *a, unsigned level, size_t elem,
                          unsigned block)
{
    size_t w = a->Width >> level, h = at_least_1(a->Height) >> level, d = at_least_1(a->Depth);
    if (!(a->Flags & (CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_CUBEMAP)))
        d >>= level;
    w = (at_least_1(w) + block - 1) / block;
    h = (at_least_1(h) + block - 1) / block;
    d = at_least_1(d);
    size_t n = elem;
    if (w > SIZE_MAX / n || h > SIZE_MAX / (n *= w) || d > SIZE_MAX / (n *= h))
        return 0;
    return n * d;
}

/* Levels a mipmapped array of a may have: 1 + log2 of its largest extent
 * (layers and faces not counted). */
static unsigned max_levels(const CUDA_ARRAY3D_DESCRIPTOR *a)
{
    size_t m = a->Width > a->Height ? a->Width : a->Height;
    if (!(a->Flags & (CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_CUBEMAP)) && a->Depth > m)
        m = a->Depth;
    unsigned n = 0;
    for (; m; m >>= 1)
        n++;
    return n;
}

/* The bytes of an array of descriptor a with `levels` mipmap levels (1: a
 * plain array), 0 when it is invalid (*err says why) or too large for size_t
 * (out of memory). */
static size_t array_bytes(const CUDA_ARRAY3D_DESCRIPTOR *a, unsigned levels, CUresult *err)
{
    unsigned block;
    *err = CUDA_ERROR_INVALID_VALUE;
    if (!a || a->Width == 0 ||
        (a->NumChannels != 1 && a->NumChannels != 2 && a->NumChannels != 4) || levels == 0 ||
        levels > max_levels(a))
        return 0;
    if (a->Flags & (CUDA_ARRAY3D_SPARSE | CUDA_ARRAY3D_DEFERRED_MAPPING)) {
        *err = CUDA_ERROR_NOT_SUPPORTED;
        return 0;
    }
    size_t elem = element_bytes(a->Format, a->NumChannels, &block), total = 0;
    if (!elem) {
        *err = CUDA_ERROR_NOT_SUPPORTED;
        return 0;
    }
    *err = CUDA_ERROR_OUT_OF_MEMORY;
    for (unsigned l = 0; l < levels; l++) {
        size_t n = level_bytes(a, l, elem, block);
        if (!n || n > SIZE_MAX - total)
            return 0;
        total += n;
    }
    *err = CUDA_SUCCESS;
    return total;
}

static CUresult array_create(void **pHandle, const CUDA_ARRAY3D_DESCRIPTOR *a, unsigned levels,
                             size_t *bytes)
{
    CUresult err;
    struct sim_device *d = sim_need_device(&err);
    uintptr_t p = 0;
    *bytes = 0;
    if (!d)
        return err;
    if (!pHandle)
        return CUDA_ERROR_INVALID_VALUE;
    *bytes = array_bytes(a, levels, &err);
    if (err != CUDA_SUCCESS)
        return err;
    err = (CUresult)sim_alloc(d, *bytes, SIM_ARRAY_MEM, &p);
    if (err != CUDA_SUCCESS)
        return err;
    if (levels == 1) {
        unsigned block;
        size_t elem = element_bytes(a->Format, a->NumChannels, &block);
        sim_array_set_rows(d, p, (a->Width + block - 1) / block * elem,
                           (at_least_1(a->Height) + block - 1) / block);
    }
    *pHandle = (void *)p;
    return CUDA_SUCCESS;
}

/* ---- mipmap levels ---------------------------------------------------------
 * A mipmapped array's descriptor and level count are kept (mips) from its
 * create; a level's handle (cuMipmappedArrayGetLevel) is a struct level_rec,
 * asked once per level and kept for the process (never freed: a program may
 * still hold it). Both name their array by address and serial, so a record
 * of a destroyed array (cuMipmappedArrayDestroy, a context reset) is never
 * taken for a new array at the same address. */
struct mip_rec {
    uintptr_t base;
    uint64_t serial;
    CUDA_ARRAY3D_DESCRIPTOR desc;
    unsigned levels;
    struct mip_rec *next;
};

struct level_rec {
    uintptr_t base;
    uint64_t serial;
    unsigned level;
    size_t offset, row_bytes, rows;
    struct level_rec *next;
};

static pthread_mutex_t mip_lock = PTHREAD_MUTEX_INITIALIZER;
static struct mip_rec *mips;
static struct level_rec *level_recs;

/* Whether the array at base is still the allocation of that serial. */
static int alive(uintptr_t base, uint64_t serial)
{
    struct sim_alloc a;
    int ordinal;
    return sim_find(base, &a, &ordinal) == 0 && a.ptr == base && a.serial == serial &&
           a.kind == SIM_ARRAY_MEM;
}

/* Keep the descriptor of the mipmapped array just made at p; the records of
 * arrays gone are dropped on the way. */
static void mip_keep(uintptr_t p, const CUDA_ARRAY3D_DESCRIPTOR *desc, unsigned levels)
{
    struct sim_alloc a;
    int ordinal;
    struct mip_rec *r = malloc(sizeof *r);
    if (!r || sim_find(p, &a, &ordinal) != 0) {
        free(r);
        return;
    }
    *r = (struct mip_rec){p, a.serial, *desc, levels, NULL};
    pthread_mutex_lock(&mip_lock);
    for (struct mip_rec **pp = &mips; *pp;) {
        struct mip_rec *m = *pp;
        if (alive(m->base, m->serial)) {
            pp = &m->next;
            continue;
        }
        *pp = m->next;
        free(m);
    }
    r->next = mips;
    mips = r;
    pthread_mutex_unlock(&mip_lock);
}

/* The level record of (m, level), made on first asking; locked. */
static struct level_rec *level_of(const struct mip_rec *m, unsigned level)
{
    for (struct level_rec *l = level_recs; l; l = l->next)
        if (l->base == m->base && l->serial == m->serial && l->level == level)
            return l;
    struct level_rec *l = calloc(1, sizeof *l);
    if (!l)
        return NULL;
    unsigned block;
    size_t elem = element_bytes(m->desc.Format, m->desc.NumChannels, &block);
    *l = (struct level_rec){m->base, m->serial, level, 0, 0, 0, level_recs};
    for (unsigned k = 0; k < level; k++)
        l->offset += level_bytes(&m->desc, k, elem, block);
    l->row_bytes = (at_least_1(m->desc.Width >> level) + block - 1) / block * elem;
    l->rows = (at_least_1(at_least_1(m->desc.Height) >> level) + block - 1) / block;
    level_recs = l;
    return l;
}

/* A level of a mipmapped array as a CUDA array of its own (not an
 * allocation: it lives as long as its mipmapped array). A level past the
 * array's: CUDA_ERROR_INVALID_VALUE (an H200: levels 9 and up of a 9-level
 * array); no such mipmapped array: CUDA_ERROR_INVALID_HANDLE. */
CUresult CUDAAPI cuMipmappedArrayGetLevel(CUarray *pLevelArray, CUmipmappedArray hMipmappedArray,
                                          unsigned int level)
{
    CUresult err = sim_check_init();
    const struct mip_rec *m = NULL;
    struct level_rec *l = NULL;
    if (err)
        return err;
    if (!pLevelArray)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&mip_lock);
    for (struct mip_rec *r = mips; r && !m; r = r->next)
        if (r->base == (uintptr_t)hMipmappedArray && alive(r->base, r->serial))
            m = r;
    if (!m)
        err = CUDA_ERROR_INVALID_HANDLE;
    else if (level >= m->levels)
        err = CUDA_ERROR_INVALID_VALUE;
    else if (!(l = level_of(m, level)))
        err = CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_unlock(&mip_lock);
    if (l)
        *pLevelArray = (CUarray)l;
    return err;
}

/* The level record h, if it is one whose array is alive. */
static const struct level_rec *live_level(CUarray h, struct level_rec *out)
{
    const struct level_rec *found = NULL;
    pthread_mutex_lock(&mip_lock);
    for (struct level_rec *l = level_recs; l && !found; l = l->next)
        if ((CUarray)l == h) {
            *out = *l;
            found = out;
        }
    pthread_mutex_unlock(&mip_lock);
    return found && alive(found->base, found->serial) ? found : NULL;
}

CUresult sim_array_data(CUarray h, size_t *row_bytes, size_t *rows, uintptr_t *data)
{
    struct sim_alloc a;
    struct level_rec l;
    int ordinal;
    if (h && sim_find((uintptr_t)h, &a, &ordinal) == 0 && a.ptr == (uintptr_t)h &&
        a.kind == SIM_ARRAY_MEM && a.row_bytes) {
        *row_bytes = a.row_bytes;
        *rows = a.rows;
        *data = a.ptr;
        return CUDA_SUCCESS;
    }
    if (!h || !live_level(h, &l))
        return CUDA_ERROR_INVALID_HANDLE;
    *row_bytes = l.row_bytes;
    *rows = l.rows;
    *data = l.base + l.offset;
    return CUDA_SUCCESS;
}

/* The ledger's size of a failed create: the elements' bytes as far as they
 * are known (0 for an invalid descriptor). */
static CUresult create_logged(void **pHandle, const CUDA_ARRAY3D_DESCRIPTOR *a, unsigned levels)
{
    size_t bytes;
    CUresult rc = array_create(pHandle, a, levels, &bytes);
    return (CUresult)vtsim_ledger_fail(SIM_LK_ARRAY, sim_current_ordinal(), bytes, rc);
}

CUresult CUDAAPI cuArray3DCreate_v2(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pAllocateArray)
{
    SIM_LEDGER_SCOPE("cuArray3DCreate_v2");
    return create_logged((void **)pHandle, pAllocateArray, 1);
}

/* A 1D or 2D array: cuArray3DCreate's with depth 0 and no flags. */
CUresult CUDAAPI cuArrayCreate_v2(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR *pAllocateArray)
{
    SIM_LEDGER_SCOPE("cuArrayCreate_v2");
    CUDA_ARRAY3D_DESCRIPTOR a = {0};
    if (pAllocateArray)
        a = (CUDA_ARRAY3D_DESCRIPTOR){pAllocateArray->Width,  pAllocateArray->Height,      0,
                                      pAllocateArray->Format, pAllocateArray->NumChannels, 0};
    return create_logged((void **)pHandle, pAllocateArray ? &a : NULL, 1);
}

/* All levels in one allocation, whose address is the handle. The level
 * count "is clamped to the range [1, 1 + floor(log2(max(width, height,
 * depth)))]" (CUDA Driver API, cuMipmappedArrayCreate; an H200, driver
 * 580.159.04: 0 gave one level, 30 for 64 x 32 gave 7). */
CUresult CUDAAPI cuMipmappedArrayCreate(CUmipmappedArray *pHandle,
                                        const CUDA_ARRAY3D_DESCRIPTOR *pMipmappedArrayDesc,
                                        unsigned int numMipmapLevels)
{
    SIM_LEDGER_SCOPE("cuMipmappedArrayCreate");
    unsigned levels = numMipmapLevels ? numMipmapLevels : 1;
    if (pMipmappedArrayDesc && max_levels(pMipmappedArrayDesc) &&
        levels > max_levels(pMipmappedArrayDesc))
        levels = max_levels(pMipmappedArrayDesc);
    CUresult rc = create_logged((void **)pHandle, pMipmappedArrayDesc, levels);
    if (rc == CUDA_SUCCESS)
        mip_keep((uintptr_t)*pHandle, pMipmappedArrayDesc, levels);
    return rc;
}

static CUresult destroy(uintptr_t p)
{
    if (sim_check_init())
        return (CUresult)sim_ledger_bad_free(p, sim_check_init());
    struct sim_device *d = p ? sim_device_of(p) : NULL;
    return (CUresult)sim_ledger_bad_free((CUdeviceptr)p, d && sim_free(d, p, true) == CUDA_SUCCESS
                                                             ? CUDA_SUCCESS
                                                             : CUDA_ERROR_INVALID_HANDLE);
}

CUresult CUDAAPI cuArrayDestroy(CUarray hArray)
{
    SIM_LEDGER_SCOPE("cuArrayDestroy");
    return destroy((uintptr_t)hArray);
}

/* A mipmapped array and a plain one are both arrays to the sim: either
 * destroy frees either (a real driver tells them apart). */
CUresult CUDAAPI cuMipmappedArrayDestroy(CUmipmappedArray hMipmappedArray)
{
    SIM_LEDGER_SCOPE("cuMipmappedArrayDestroy");
    return destroy((uintptr_t)hMipmappedArray);
}
