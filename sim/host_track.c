/* host_track.c: the host memory the simulated driver knows, pinned
 * (cuMemHostAlloc, cuMemAllocHost: the sim's own page-aligned blocks) and
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

static bool matches(const struct sim_host *h, uintptr_t p, bool exact, int registered)
{
    if (registered >= 0 && h->registered != (registered != 0))
        return false;
    return exact ? p == h->base : (p >= h->base && p < h->base + h->size);
}

bool sim_host_find(uintptr_t p, bool exact, int registered, bool unlink, struct sim_host *out)
{
    struct node *gone = NULL;
    bool found = false;
    pthread_mutex_lock(&hosts_lock);
    for (struct node **pp = &hosts; *pp; pp = &(*pp)->next) {
        if (!matches(&(*pp)->h, p, exact, registered))
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
        if (!n->h.registered)
            free((void *)n->h.base);
        free(n);
    }
}
