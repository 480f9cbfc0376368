/* Virtual memory management (cuMemCreate / cuMemMap family) of the simulated
 * driver. Rules (README.md, "Virtual memory management"; CUDA Driver API,
 * "Virtual Memory Management"): a physical allocation (handle) counts
 * against the device's capacity from cuMemCreate until it is released and
 * no longer mapped; a reservation is host address space (PROT_NONE) and
 * costs nothing; cuMemMap maps the handle's pages there (shared memfd pages,
 * so two mappings of one handle share contents). */
#define _GNU_SOURCE
#include "driver_common.h"

#include <stdlib.h>
#include <sys/mman.h>

#define GRAN SIM_LARGE_ALIGN
#define PHYS_MAGIC 0x50485953u

struct sim_phys { /* CUmemGenericAllocationHandle points to one */
    unsigned magic;
    struct sim_device *dev;
    size_t size;
    uint64_t offset; /* in dev->phys_fd */
    int maps, refs;  /* refs: cuMemCreate's and each cuMemRetainAllocationHandle's, less releases */
    struct sim_phys *next;
};

struct sim_resv { /* a cuMemAddressReserve range */
    uintptr_t base;
    size_t size;
    struct sim_resv *next;
};

struct sim_map { /* one cuMemMap */
    uintptr_t base;
    size_t size;
    struct sim_phys *phys;
    struct sim_map *next;
};

static pthread_mutex_t vmm_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sim_phys *physs;
static struct sim_resv *resvs;
static struct sim_map *maps;

/* The device a CUmemAllocationProp names, or NULL (pinned device memory only). */
static struct sim_device *prop_device(const CUmemAllocationProp *prop, CUresult *err)
{
    *err = sim_check_init();
    if (*err)
        return NULL;
    *err = CUDA_ERROR_INVALID_VALUE;
    if (!prop || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
        prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
        return NULL;
    *err = sim_check_device(prop->location.id);
    return *err ? NULL : &sim_devices[prop->location.id];
}

CUresult CUDAAPI cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop,
                                               CUmemAllocationGranularity_flags option)
{
    CUresult err;
    if (!prop_device(prop, &err))
        return err;
    if (!granularity || (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM &&
                         option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED))
        return CUDA_ERROR_INVALID_VALUE;
    *granularity = GRAN; /* 2 MiB, minimum and recommended, as on current GPUs */
    return CUDA_SUCCESS;
}

static CUresult vmm_create(CUmemGenericAllocationHandle *handle, size_t size,
                           const CUmemAllocationProp *prop, unsigned long long flags)
{
    CUresult err;
    struct sim_device *d = prop_device(prop, &err);
    struct sim_phys *ph;
    if (!d)
        return err;
    if (!handle || size == 0 || size % GRAN || flags)
        return CUDA_ERROR_INVALID_VALUE;
    if (!(ph = calloc(1, sizeof *ph)))
        return CUDA_ERROR_OUT_OF_MEMORY;
    err = (CUresult)sim_phys_alloc(d, size, &ph->offset);
    if (err) {
        free(ph);
        return err;
    }
    *ph = (struct sim_phys){PHYS_MAGIC, d, size, ph->offset, 0, 1, NULL};
    pthread_mutex_lock(&vmm_lock);
    ph->next = physs;
    physs = ph;
    sim_ledger_vmm("vmm_create", (uintptr_t)ph, d->ordinal, 0, size);
    pthread_mutex_unlock(&vmm_lock);
    *handle = (CUmemGenericAllocationHandle)(uintptr_t)ph;
    return CUDA_SUCCESS;
}

/* cuMemCreate; a failure is a failed allocation of kind "vmm". */
CUresult CUDAAPI cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                             const CUmemAllocationProp *prop, unsigned long long flags)
{
    SIM_LEDGER_SCOPE("cuMemCreate");
    return (CUresult)vtsim_ledger_fail("vmm", prop ? prop->location.id : -1, size,
                                       vmm_create(handle, size, prop, flags));
}

/* The live handle `h` (not released as often as it was made and retained),
 * or NULL; locked. */
static struct sim_phys *phys_find(CUmemGenericAllocationHandle h)
{
    for (struct sim_phys *p = physs; p; p = p->next)
        if ((CUmemGenericAllocationHandle)(uintptr_t)p == h && p->refs > 0)
            return p;
    return NULL;
}

/* Free the physical memory once released and unmapped; locked. */
static void phys_maybe_free(struct sim_phys *ph)
{
    if (ph->refs > 0 || ph->maps)
        return;
    for (struct sim_phys **pp = &physs; *pp; pp = &(*pp)->next)
        if (*pp == ph) {
            *pp = ph->next;
            break;
        }
    sim_phys_free(ph->dev, ph->offset, ph->size);
    ph->magic = 0;
    free(ph);
}

/* cuMemRelease: one reference fewer; the handle is gone at its last
 * (cuMemCreate's, and each retain's), its memory when it is also no longer
 * mapped (cuMemRelease documentation). The ledger's release is that last
 * one. */
CUresult CUDAAPI cuMemRelease(CUmemGenericAllocationHandle handle)
{
    struct sim_phys *ph;
    SIM_LEDGER_SCOPE("cuMemRelease");
    if (sim_check_init())
        return (CUresult)sim_ledger_bad_free(handle, sim_check_init());
    pthread_mutex_lock(&vmm_lock);
    ph = phys_find(handle);
    if (ph && --ph->refs == 0) {
        sim_ledger_vmm("vmm_release", (uintptr_t)ph, ph->dev->ordinal, 0, ph->size);
        phys_maybe_free(ph);
    }
    pthread_mutex_unlock(&vmm_lock);
    return ph ? CUDA_SUCCESS : (CUresult)sim_ledger_bad_free(handle, CUDA_ERROR_INVALID_VALUE);
}

/* cuMemRetainAllocationHandle: the handle of the memory mapped at addr, with
 * one more reference (to be released with cuMemRelease), the same value
 * cuMemCreate returned (an H200, driver 580.159.04, returned it so). A handle
 * already released whose memory is still mapped is live again (the H200
 * allowed it): the ledger's "vmm_retain". addr not mapped:
 * CUDA_ERROR_INVALID_VALUE. */
CUresult CUDAAPI cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *handle, void *addr)
{
    struct sim_phys *ph = NULL;
    SIM_LEDGER_SCOPE("cuMemRetainAllocationHandle");
    if (sim_check_init())
        return sim_check_init();
    if (!handle)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&vmm_lock);
    for (struct sim_map *m = maps; m && !ph; m = m->next)
        if ((uintptr_t)addr >= m->base && (uintptr_t)addr - m->base < m->size)
            ph = m->phys;
    if (ph && ph->refs++ == 0)
        sim_ledger_vmm("vmm_retain", (uintptr_t)ph, ph->dev->ordinal, 0, ph->size);
    pthread_mutex_unlock(&vmm_lock);
    if (ph)
        *handle = (CUmemGenericAllocationHandle)(uintptr_t)ph;
    return ph ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* Host address space, inaccessible, `align`-aligned (a power of two). */
static uintptr_t reserve_space(size_t size, size_t align)
{
    char *p =
        mmap(NULL, size + align, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    uintptr_t base, end;
    if (p == MAP_FAILED)
        return 0;
    base = ((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1);
    end = (uintptr_t)p + size + align;
    if (base > (uintptr_t)p)
        munmap(p, base - (uintptr_t)p);
    if (end > base + size)
        munmap((void *)(base + size), end - (base + size));
    return base;
}

/* cuMemAddressReserve: `addr` is only a hint and is ignored; alignment 0
 * means the granularity. Costs no device memory. */
CUresult CUDAAPI cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment,
                                     CUdeviceptr addr, unsigned long long flags)
{
    struct sim_resv *r;
    size_t align = alignment ? alignment : GRAN;
    (void)addr;
    if (sim_check_init())
        return sim_check_init();
    if (!ptr || size == 0 || size % GRAN || flags || (align & (align - 1)) || align % GRAN ||
        size > SIZE_MAX / 2)
        return CUDA_ERROR_INVALID_VALUE;
    if (!(r = malloc(sizeof *r)))
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (!(r->base = reserve_space(size, align))) {
        free(r);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    r->size = size;
    pthread_mutex_lock(&vmm_lock);
    r->next = resvs;
    resvs = r;
    pthread_mutex_unlock(&vmm_lock);
    *ptr = (CUdeviceptr)r->base;
    return CUDA_SUCCESS;
}

/* The reservation holding [p, p+size), or NULL; locked. */
static struct sim_resv *resv_of(uintptr_t p, size_t size)
{
    for (struct sim_resv *r = resvs; r; r = r->next)
        if (p >= r->base && size <= r->size && p - r->base <= r->size - size)
            return r;
    return NULL;
}

/* 1 when a mapping overlaps [p, p+size); locked. */
static int mapped_in(uintptr_t p, size_t size)
{
    for (struct sim_map *m = maps; m; m = m->next)
        if (m->base < p + size && p < m->base + m->size)
            return 1;
    return 0;
}

/* cuMemAddressFree: ptr and size exactly as reserved, nothing mapped in it
 * (the sim refuses with CUDA_ERROR_INVALID_VALUE rather than guess). */
CUresult CUDAAPI cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
    struct sim_resv *r = NULL;
    if (sim_check_init())
        return sim_check_init();
    pthread_mutex_lock(&vmm_lock);
    for (struct sim_resv **pp = &resvs; *pp; pp = &(*pp)->next)
        if ((*pp)->base == (uintptr_t)ptr && (*pp)->size == size && !mapped_in(ptr, size)) {
            r = *pp;
            *pp = r->next;
            break;
        }
    pthread_mutex_unlock(&vmm_lock);
    if (!r)
        return CUDA_ERROR_INVALID_VALUE;
    munmap((void *)r->base, r->size);
    free(r);
    return CUDA_SUCCESS;
}

/* Map the handle's pages at p; locked. */
static CUresult map_locked(uintptr_t p, size_t size, struct sim_phys *ph)
{
    struct sim_map *m = malloc(sizeof *m);
    if (!m)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (mmap((void *)p, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, ph->dev->phys_fd,
             (off_t)ph->offset) == MAP_FAILED) {
        free(m);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *m = (struct sim_map){p, size, ph, maps};
    sim_ledger_vmm("vmm_map", (uintptr_t)ph, ph->dev->ordinal, p, size);
    maps = m;
    ph->maps++;
    return CUDA_SUCCESS;
}

/* cuMemMap: offset must be 0 and flags 0 (cuMemMap documentation); ptr and
 * size multiples of the granularity, inside one reservation, not mapped. The
 * range is readable and writable at once (cuMemSetAccess records nothing). */
CUresult CUDAAPI cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                          CUmemGenericAllocationHandle handle, unsigned long long flags)
{
    CUresult err = CUDA_ERROR_INVALID_VALUE;
    struct sim_phys *ph;
    SIM_LEDGER_SCOPE("cuMemMap");
    if (sim_check_init())
        return sim_check_init();
    if (size == 0 || size % GRAN || ptr % GRAN || offset || flags)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&vmm_lock);
    ph = phys_find(handle);
    if (ph && size <= ph->size && resv_of(ptr, size) && !mapped_in(ptr, size))
        err = map_locked(ptr, size, ph);
    pthread_mutex_unlock(&vmm_lock);
    return err;
}

/* Unmap the mappings inside [p, p+size) that exactly cover it; locked. */
static CUresult unmap_locked(uintptr_t p, size_t size)
{
    size_t covered = 0;
    for (struct sim_map *m = maps; m; m = m->next) {
        if (m->base >= p + size || p >= m->base + m->size)
            continue;
        if (m->base < p || m->base + m->size > p + size)
            return CUDA_ERROR_INVALID_VALUE; /* a mapping cut in two */
        covered += m->size;
    }
    if (covered != size)
        return CUDA_ERROR_INVALID_VALUE;
    for (struct sim_map **pp = &maps; *pp;) {
        struct sim_map *m = *pp;
        if (m->base < p || m->base >= p + size) {
            pp = &m->next;
            continue;
        }
        *pp = m->next;
        sim_ledger_vmm("vmm_unmap", (uintptr_t)m->phys, m->phys->dev->ordinal, m->base, m->size);
        m->phys->maps--;
        phys_maybe_free(m->phys);
        free(m);
    }
    /* Back to a reservation: inaccessible again, pages dropped. */
    mmap((void *)p, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1,
         0);
    return CUDA_SUCCESS;
}

/* cuMemUnmap: [ptr, ptr+size) must be whole mappings, leaving no gap. */
CUresult CUDAAPI cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    CUresult err;
    SIM_LEDGER_SCOPE("cuMemUnmap");
    if (sim_check_init())
        return sim_check_init();
    if (size == 0 || size % GRAN || ptr % GRAN)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&vmm_lock);
    err = unmap_locked(ptr, size);
    pthread_mutex_unlock(&vmm_lock);
    return err;
}

/* cuMemSetAccess: checked for shape, then accepted; mapped memory is always
 * readable and writable from the host, which stands in for every device. */
CUresult CUDAAPI cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc,
                                size_t count)
{
    int ok;
    if (sim_check_init())
        return sim_check_init();
    if (!desc || count == 0 || size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&vmm_lock);
    ok = resv_of(ptr, size) != NULL;
    pthread_mutex_unlock(&vmm_lock);
    return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
