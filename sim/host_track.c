/* host_track.c: the host memory the simulated driver knows, pinned
 * (cuMemHostAlloc, cuMemAllocHost: the sim's own page-aligned blocks; a host
 * pool's allocations, below) and
 * registered (cuMemHostRegister: the program's memory), each with the device
 * of the context current when it was made. The end of that device's
 * contexts (sim_ctx_destroy: a primary context reset, its last release,
 * cudaDeviceReset, cuCtxDestroy of the last one) frees the pinned blocks and
 * drops the registrations, with the ledger's free lines: the CUDA
 * documentation lists pinned host memory among what cudaDeviceReset and
 * cuCtxDestroy free, and an H200 (driver 580.159.04,
 * tests/gpu/probe_context.c) no longer knew such pointers after either,
 * portable ones and registrations included. */
#include "driver_common.h"
#include "ledger.h"

#include <stdlib.h>
#include <unistd.h>

struct node {
    struct sim_host h;
    struct node *next;
};
static struct node *hosts;
static pthread_mutex_t hosts_lock = PTHREAD_MUTEX_INITIALIZER;

static const char *ledger_kind(const struct sim_host *h)
{
    return h->registered ? SIM_LK_REGISTERED : SIM_LK_PINNED;
}

/* A registered range overlapping [p, p+size); locked. */
static bool registered_overlap(uintptr_t p, size_t size)
{
    for (const struct node *n = hosts; n; n = n->next)
        if (n->h.registered && p < n->h.base + n->h.size && n->h.base < p + size)
            return true;
    return false;
}

CUresult sim_host_add(const struct sim_host *h)
{
    struct node *n = malloc(sizeof *n);
    CUresult err = CUDA_SUCCESS;
    if (!n)
        return CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&hosts_lock);
    if (h->registered && registered_overlap(h->base, h->size))
        err = CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
    else {
        *n = (struct node){*h, hosts};
        hosts = n;
        sim_ledger_alloc(ledger_kind(h), -1, h->base, h->size);
    }
    pthread_mutex_unlock(&hosts_lock);
    if (err)
        free(n);
    return err;
}

static bool matches(const struct sim_host *h, uintptr_t p, bool exact, enum sim_host_want want)
{
    if (want != SIM_HOST_ANY && want != (h->registered ? SIM_HOST_REGISTERED
                                         : h->pool     ? SIM_HOST_POOLED
                                                       : SIM_HOST_PINNED))
        return false;
    return exact ? p == h->base : (p >= h->base && p < h->base + h->size);
}

bool sim_host_find(uintptr_t p, bool exact, enum sim_host_want want, bool unlink,
                   struct sim_host *out)
{
    struct node *gone = NULL;
    bool found = false;
    pthread_mutex_lock(&hosts_lock);
    for (struct node **pp = &hosts; *pp; pp = &(*pp)->next) {
        if (!matches(&(*pp)->h, p, exact, want))
            continue;
        *out = (*pp)->h;
        found = true;
        if (unlink) {
            gone = *pp;
            *pp = gone->next;
            sim_ledger_free(ledger_kind(&gone->h), -1, gone->h.base, gone->h.size);
        }
        break;
    }
    pthread_mutex_unlock(&hosts_lock);
    free(gone);
    return found;
}

static bool count(struct CUmemPoolHandle_st *pool, size_t size, bool add, CUresult *err);

void sim_host_context_end(int ordinal)
{
    struct node *ended = NULL;
    pthread_mutex_lock(&hosts_lock);
    for (struct node **pp = &hosts; *pp;) {
        struct node *n = *pp;
        if (n->h.ordinal != ordinal) {
            pp = &n->next;
            continue;
        }
        *pp = n->next;
        sim_ledger_free(ledger_kind(&n->h), -1, n->h.base, n->h.size);
        n->next = ended;
        ended = n;
    }
    pthread_mutex_unlock(&hosts_lock);
    while (ended) {
        struct node *n = ended;
        ended = n->next;
        CUresult unused;
        if (n->h.pool) /* a host pool's allocation */
            count(n->h.pool, n->h.size, false, &unused);
        if (!n->h.registered)
            free((void *)n->h.base);
        free(n);
    }
}

/* The host's RAM (bytes). */
size_t sim_host_ram(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page <= 0)
        return SIZE_MAX;
    return (size_t)pages > SIZE_MAX / (size_t)page ? SIZE_MAX : (size_t)pages * (size_t)page;
}

/* ---- host pools ----------------------------------------------------------
 * Memory pools of pinned host memory (CUDA Driver API,
 * cuMemPoolCreate: a CUmemPoolProps location of type
 * CU_MEM_LOCATION_TYPE_HOST, id ignored, or CU_MEM_LOCATION_TYPE_HOST_NUMA,
 * id a NUMA node; "their default accessibility will be from the host
 * CPU"). The sim's host has one NUMA node, 0. Each allocation is its own
 * page-aligned pinned block, tracked with the others (above: the ledger's
 * host_pinned kind, freed by its context's end), so such a pool
 * reserves nothing beyond its allocations: its reserved and used bytes are
 * both the requested bytes of its live allocations, whatever its release
 * threshold or a trim. Its maxSize (0: none) bounds them, as a device
 * pool's bounds its reserve. Counters under the lock of the device that
 * was current at its creation (pool->dev), as a device pool's. */

int sim_pool_admit(const struct CUmemPoolHandle_st *pool, size_t size)
{
    if (pool->destroyed)
        return CUDA_ERROR_INVALID_VALUE;
    return pool->max_size && size > pool->max_size - pool->used ? CUDA_ERROR_OUT_OF_MEMORY
                                                                : CUDA_SUCCESS;
}

void sim_pool_count(struct CUmemPoolHandle_st *pool, size_t size, int sign)
{
    pool->used = sign > 0 ? pool->used + size : pool->used - size;
    pool->reserved = pool->used;
    if (pool->used > pool->used_high)
        pool->used_high = pool->reserved_high = pool->used;
}

/* size more bytes of pool's counted (add) or size fewer; false, with the
 * error in *err, when a destroyed pool or its maxSize refuse them. */
static bool count(struct CUmemPoolHandle_st *pool, size_t size, bool add, CUresult *err)
{
    pthread_mutex_lock(&pool->dev->lock);
    CUresult refused = add ? (CUresult)sim_pool_admit(pool, size) : CUDA_SUCCESS;
    if (!refused)
        sim_pool_count(pool, size, add ? 1 : -1);
    pthread_mutex_unlock(&pool->dev->lock);
    *err = refused;
    return !refused;
}

CUresult sim_host_pool_alloc(struct CUmemPoolHandle_st *pool, size_t size, uintptr_t *out)
{
    CUresult err = CUDA_SUCCESS;
    void *p = NULL;
    if (!count(pool, size, true, &err))
        return err;
    if (size > sim_host_ram() || posix_memalign(&p, 4096, size) != 0) {
        count(pool, size, false, &err);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    struct sim_host h = {(uintptr_t)p, size, 0, pool->dev->ordinal, false, pool};
    if ((err = sim_host_add(&h)) != CUDA_SUCCESS) {
        free(p);
        count(pool, size, false, &err);
        return err;
    }
    *out = (uintptr_t)p;
    return CUDA_SUCCESS;
}

bool sim_host_pool_free(uintptr_t p, CUresult *err)
{
    struct sim_host h;
    if (!p || !sim_host_find(p, true, SIM_HOST_POOLED, true, &h))
        return false;
    CUresult unused;
    count(h.pool, h.size, false, &unused);
    free((void *)h.base);
    *err = CUDA_SUCCESS;
    return true;
}
