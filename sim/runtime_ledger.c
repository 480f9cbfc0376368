/* The simulated runtime's side of the ledger (ledger.h): API scopes that name
 * lines after the runtime entry point, and the failed allocation calls the
 * runtime decides itself. With a driver loaded the driver's ledger
 * (vtsim_ledger_*, exported by libcuda.so.1) writes every line, so one
 * sequence numbers a process's events; without one (no driver: every call
 * fails) the runtime's own copy of ledger.c writes them. */
#define _GNU_SOURCE
#include "ledger.h"
#include "runtime_internal.h"

#include <dlfcn.h>
#include <pthread.h>

struct rt_ledger_fns {
    int (*enter)(const char *);
    void (*leave)(int);
    int (*fail)(const char *, int, size_t, int);
};
static struct rt_ledger_fns fns = {vtsim_ledger_enter, vtsim_ledger_leave, vtsim_ledger_fail};
static pthread_once_t fns_once = PTHREAD_ONCE_INIT;
static __thread cudaError_t tl_result;

static void fns_load(void)
{
    void *h;
    if (rt_load() != cudaSuccess || !(h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD)))
        return;
    struct rt_ledger_fns d = {
        (int (*)(const char *))dlsym(h, "vtsim_ledger_enter"),
        (void (*)(int))dlsym(h, "vtsim_ledger_leave"),
        (int (*)(const char *, int, size_t, int))dlsym(h, "vtsim_ledger_fail")};
    if (d.enter && d.leave && d.fail)
        fns = d;
    dlclose(h); /* the runtime's own dlopen keeps the driver loaded */
}

struct rt_ledger_scope rt_ledger_begin(const char *api, const char *kind, size_t size, int device)
{
    pthread_once(&fns_once, fns_load);
    tl_result = cudaSuccess;
    return (struct rt_ledger_scope){fns.enter(api), kind, size, device};
}

void rt_ledger_end(struct rt_ledger_scope *s)
{
    if (s->kind && tl_result != cudaSuccess) {
        int host = s->kind[0] == 'h'; /* host_pinned, host_registered */
        fns.fail(s->kind, host ? -1 : s->device, s->size, tl_result);
    }
    fns.leave(s->token);
}

void rt_ledger_result(cudaError_t e)
{
    tl_result = e;
}
