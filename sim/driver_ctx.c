/* Contexts of the simulated driver: the primary contexts (retain, release,
 * reset), each thread's context stack and its current device, contexts made
 * with cuCtxCreate besides the primary ones. Above driver.c (cuInit and the
 * device checks), which never calls here. Rules: CUDA Driver API
 * reference, "Context Management" (cuCtxCreate pushes the new context,
 * cuCtxDestroy pops it when current to the calling thread, cuCtxSetCurrent
 * replaces the top of the stack, NULL pops). Simplification: every context of
 * a device shares the device's memory and context reserve; that memory is
 * released when the device's last context (primary or created) is destroyed. */
#include "driver_common.h"
#include "driver_extra.h"
#include "ledger.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#define CTX_STACK_MAX 64
#define CREATED_MAGIC 0x43545843u

/* A context from cuCtxCreate; `base` first, so a CUcontext points at both. */
struct created_ctx {
    struct CUctx_st base;
    unsigned magic; /* CREATED_MAGIC while alive, 0 once destroyed */
    unsigned flags;
    struct created_ctx *next;
};

static __thread struct CUctx_st *stack[CTX_STACK_MAX];
static __thread int depth;
static pthread_mutex_t created_lock = PTHREAD_MUTEX_INITIALIZER;
/* Destroyed contexts stay listed (never freed): another thread may still
 * hold the handle, and using it must answer CUDA_ERROR_INVALID_CONTEXT. */
static struct created_ctx *created;
static int created_live[SIM_MAX_DEVICES];

static int is_primary(const struct CUctx_st *c)
{
    for (int i = 0; i < sim_cfg.ndevices; i++)
        if (c == &sim_devices[i].ctx)
            return 1;
    return 0;
}

static struct created_ctx *find_created(const struct CUctx_st *c)
{
    pthread_mutex_lock(&created_lock);
    struct created_ctx *k = created;
    while (k && &k->base != c)
        k = k->next;
    pthread_mutex_unlock(&created_lock);
    return k;
}

static int is_live(const struct CUctx_st *c)
{
    if (!c)
        return 0;
    if (is_primary(c))
        return 1;
    const struct created_ctx *k = find_created(c);
    return k && __atomic_load_n(&k->magic, __ATOMIC_ACQUIRE) == CREATED_MAGIC;
}

/* The calling thread's current context (top of its context stack), or NULL;
 * a destroyed context is never returned. */
static struct CUctx_st *sim_ctx_current(void)
{
    struct CUctx_st *c = depth ? stack[depth - 1] : NULL;
    return c && (is_primary(c) || is_live(c)) ? c : NULL;
}

struct sim_device *sim_current_device(void)
{
    struct CUctx_st *c = sim_ctx_current();
    return c ? &sim_devices[c->ordinal] : NULL;
}

/* Whether contexts made with cuCtxCreate are alive on device `ordinal`
 * (the device's memory lives while any context does). Takes no lock. */
static int created_live_on(int ordinal)
{
    return __atomic_load_n(&created_live[ordinal], __ATOMIC_ACQUIRE) > 0;
}

/* A current primary context that a reset or its last release destroyed is
 * not initialised again by use, only by cuDevicePrimaryCtxRetain:
 * CUDA_ERROR_CONTEXT_IS_DESTROYED ("the context current to the calling
 * thread ... is a primary context which has not yet been initialized",
 * cuda.h; an H200, driver 580.159.04: cuMemAlloc after
 * cuDevicePrimaryCtxReset, with the context still current). The runtime
 * retains it again at its next call (runtime_device.c). */
struct sim_device *sim_need_device(CUresult *err)
{
    *err = sim_check_init();
    if (*err)
        return NULL;
    struct CUctx_st *c = sim_ctx_current();
    if (!c)
        *err = CUDA_ERROR_INVALID_CONTEXT;
    else if (is_primary(c) && !__atomic_load_n(&c->active, __ATOMIC_ACQUIRE))
        *err = CUDA_ERROR_CONTEXT_IS_DESTROYED;
    return *err ? NULL : &sim_devices[c->ordinal];
}

/* The context reserve is taken when the primary context is first retained
 * (or retained again after a reset). */
CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    CUresult err = sim_check_device(dev);
    if (err)
        return err;
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    struct sim_device *d = &sim_devices[dev];
    pthread_mutex_lock(&d->lock);
    d->ctx.refcount++;
    if (!d->ctx.active)
        sim_ctx_activate(d);
    pthread_mutex_unlock(&d->lock);
    *pctx = &d->ctx;
    return CUDA_SUCCESS;
}

/* At refcount 0 the context is destroyed with all its memory, unless contexts
 * made with cuCtxCreate still live on the device. */
CUresult CUDAAPI cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
    SIM_LEDGER_SCOPE("cuDevicePrimaryCtxRelease_v2");
    CUresult err = sim_check_device(dev);
    if (err)
        return err;
    struct sim_device *d = &sim_devices[dev];
    pthread_mutex_lock(&d->lock);
    if (d->ctx.refcount == 0)
        err = CUDA_ERROR_INVALID_CONTEXT;
    else if (--d->ctx.refcount == 0 && !created_live_on(d->ordinal))
        sim_ctx_destroy(d);
    pthread_mutex_unlock(&d->lock);
    return err;
}

/* The primary context of dev destroyed with its memory; release: its
 * references dropped too. */
static CUresult primary_reset(CUdevice dev, int release)
{
    CUresult err = sim_check_device(dev);
    if (err)
        return err;
    struct sim_device *d = &sim_devices[dev];
    pthread_mutex_lock(&d->lock);
    sim_ctx_destroy(d);
    if (release)
        d->ctx.refcount = 0;
    pthread_mutex_unlock(&d->lock);
    return CUDA_SUCCESS;
}

/* "Resetting the primary context does not release it" (CUDA Driver API,
 * cuDevicePrimaryCtxReset_v2). */
CUresult CUDAAPI cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
    SIM_LEDGER_SCOPE("cuDevicePrimaryCtxReset_v2");
    return primary_reset(dev, 0);
}

/* The CUDA 7.0 ABI's reset also drops the references: on an H200 (driver
 * 580.159.04), after it and one retain, a second cuDevicePrimaryCtxRelease
 * failed with CUDA_ERROR_INVALID_CONTEXT (the _v2 sentence above, added
 * with _v2 in CUDA 11, says what changed). */
CUresult CUDAAPI cuDevicePrimaryCtxReset(CUdevice dev)
{
    SIM_LEDGER_SCOPE("cuDevicePrimaryCtxReset");
    return primary_reset(dev, 1);
}

CUresult CUDAAPI cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
{
    CUresult err = sim_check_device(dev);
    if (err)
        return err;
    if (!flags || !active)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&sim_devices[dev].lock);
    *active = sim_devices[dev].ctx.active;
    pthread_mutex_unlock(&sim_devices[dev].lock);
    *flags = 0;
    return CUDA_SUCCESS;
}

CUresult sim_ctx_current_destroyed(void)
{
    struct CUctx_st *c = depth ? stack[depth - 1] : NULL;
    return c && is_primary(c) && !__atomic_load_n(&c->active, __ATOMIC_ACQUIRE)
               ? CUDA_ERROR_CONTEXT_IS_DESTROYED
               : CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetDevice(CUdevice *device)
{
    CUresult err;
    struct sim_device *d = sim_need_device(&err);
    if (!d)
        return err;
    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    *device = d->ordinal;
    return CUDA_SUCCESS;
}

/* A context argument of CUDA 13.0's variants: NULL or live, else (a value
 * that was never a context) a real driver crashes; the sim says so and
 * raises SIGSEGV. An H200's driver 580.159.04 crashed in cuCtxGetDevice_v2
 * called with one argument (tests/gpu/README.md, session 30), so a caller's
 * such mistake fails here too. A destroyed context: CUDA_ERROR_INVALID_CONTEXT. */
CUresult sim_ctx_check_v13000(const char *fn, CUcontext ctx)
{
    if (!ctx || is_live(ctx))
        return CUDA_SUCCESS;
    if (is_primary(ctx) || find_created(ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    fprintf(stderr,
            "vramtrace-sim: %s given %p, which is no context (a caller of the one-argument "
            "form through cuGetProcAddress at CUDA 13.0?): a real driver crashes here\n",
            fn, (void *)ctx);
    raise(SIGSEGV);
    return CUDA_ERROR_INVALID_CONTEXT;
}

CUresult CUDAAPI sim_cuCtxGetDevice_v13000(CUdevice *device, CUcontext ctx)
{
    CUresult err = sim_check_init();
    if (err || (err = sim_ctx_check_v13000("cuCtxGetDevice_v2", ctx)))
        return err;
    if (!ctx)
        return cuCtxGetDevice(device);
    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    *device = ctx->ordinal;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxSetCurrent(CUcontext ctx)
{
    if (sim_check_init())
        return sim_check_init();
    if (ctx && !is_live(ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    if (!ctx) {
        depth -= depth > 0;
        return CUDA_SUCCESS;
    }
    stack[depth ? depth - 1 : depth++] = ctx;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetCurrent(CUcontext *pctx)
{
    if (sim_check_init())
        return sim_check_init();
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    *pctx = sim_ctx_current();
    return CUDA_SUCCESS;
}

/* CUDA_ERROR_INVALID_CONTEXT for a handle that is not a live context. */
CUresult CUDAAPI cuCtxPushCurrent_v2(CUcontext ctx)
{
    if (sim_check_init())
        return sim_check_init();
    if (!is_live(ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    if (depth == CTX_STACK_MAX)
        return CUDA_ERROR_OUT_OF_MEMORY;
    stack[depth++] = ctx;
    return CUDA_SUCCESS;
}

/* An empty stack: CUDA_ERROR_INVALID_CONTEXT. pctx may be NULL. */
CUresult CUDAAPI cuCtxPopCurrent_v2(CUcontext *pctx)
{
    if (sim_check_init())
        return sim_check_init();
    if (!depth)
        return CUDA_ERROR_INVALID_CONTEXT;
    struct CUctx_st *c = stack[--depth];
    if (pctx)
        *pctx = c;
    return CUDA_SUCCESS;
}

/* The pre-4.0 names behave alike. */
CUresult CUDAAPI cuCtxPushCurrent(CUcontext ctx)
{
    return cuCtxPushCurrent_v2(ctx);
}

CUresult CUDAAPI cuCtxPopCurrent(CUcontext *pctx)
{
    return cuCtxPopCurrent_v2(pctx);
}

static CUresult create(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    CUresult err = sim_check_device(dev);
    if (err)
        return err;
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    if (depth == CTX_STACK_MAX)
        return CUDA_ERROR_OUT_OF_MEMORY;
    struct created_ctx *k = calloc(1, sizeof *k);
    if (!k)
        return CUDA_ERROR_OUT_OF_MEMORY;
    struct sim_device *d = &sim_devices[dev];
    k->base.ordinal = dev;
    k->base.refcount = 1;
    k->base.active = 1;
    k->flags = flags;
    k->magic = CREATED_MAGIC;
    pthread_mutex_lock(&created_lock);
    k->next = created;
    created = k;
    __atomic_add_fetch(&created_live[dev], 1, __ATOMIC_ACQ_REL);
    pthread_mutex_unlock(&created_lock);
    pthread_mutex_lock(&d->lock);
    if (!d->ctx.active)
        sim_ctx_activate(d);
    pthread_mutex_unlock(&d->lock);
    stack[depth++] = &k->base;
    *pctx = &k->base;
    return CUDA_SUCCESS;
}

/* cuCtxCreate in its CUDA 3.2 (v2), 11.4 (v3, execution affinity ignored)
 * and 12.5 (v4, create parameters ignored) forms, and the pre-3.2 name. */
CUresult CUDAAPI cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    return create(pctx, flags, dev);
}

CUresult CUDAAPI cuCtxCreate(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    return create(pctx, flags, dev);
}

CUresult CUDAAPI cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray, int numParams,
                                unsigned int flags, CUdevice dev)
{
    if (numParams < 0 || (numParams > 0 && !paramsArray))
        return CUDA_ERROR_INVALID_VALUE;
    return create(pctx, flags, dev);
}

CUresult CUDAAPI cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *ctxCreateParams,
                                unsigned int flags, CUdevice dev)
{
    (void)ctxCreateParams;
    return create(pctx, flags, dev);
}

/* Removes ctx from the calling thread's stack wherever it is. */
static void unstack(const struct CUctx_st *ctx)
{
    int j = 0;
    for (int i = 0; i < depth; i++)
        if (stack[i] != ctx)
            stack[j++] = stack[i];
    depth = j;
}

/* A primary context or a destroyed one: CUDA_ERROR_INVALID_CONTEXT. */
CUresult CUDAAPI cuCtxDestroy_v2(CUcontext ctx)
{
    SIM_LEDGER_SCOPE("cuCtxDestroy_v2");
    if (sim_check_init())
        return sim_check_init();
    struct created_ctx *k = ctx ? find_created(ctx) : NULL;
    unsigned live = CREATED_MAGIC;
    if (!k ||
        !__atomic_compare_exchange_n(&k->magic, &live, 0, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return CUDA_ERROR_INVALID_CONTEXT;
    unstack(ctx);
    struct sim_device *d = &sim_devices[ctx->ordinal];
    pthread_mutex_lock(&d->lock);
    if (__atomic_sub_fetch(&created_live[ctx->ordinal], 1, __ATOMIC_ACQ_REL) == 0 &&
        d->ctx.refcount == 0)
        sim_ctx_destroy(d);
    pthread_mutex_unlock(&d->lock);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxDestroy(CUcontext ctx)
{
    SIM_LEDGER_SCOPE("cuCtxDestroy");
    return cuCtxDestroy_v2(ctx);
}

CUresult CUDAAPI cuCtxGetFlags(unsigned int *flags)
{
    CUresult err;
    if (!sim_need_device(&err))
        return err;
    if (!flags)
        return CUDA_ERROR_INVALID_VALUE;
    struct CUctx_st *c = sim_ctx_current();
    *flags = is_primary(c) ? 0 : ((struct created_ctx *)c)->flags;
    return CUDA_SUCCESS;
}

/* The API version of a context (cuCtxGetApiVersion; every context here is
 * 3020: the context API these entry points implement). */
CUresult CUDAAPI cuCtxGetApiVersion(CUcontext ctx, unsigned int *version)
{
    if (sim_check_init())
        return sim_check_init();
    if (!version)
        return CUDA_ERROR_INVALID_VALUE;
    if (ctx ? !is_live(ctx) : !sim_ctx_current())
        return CUDA_ERROR_INVALID_CONTEXT;
    *version = 3020;
    return CUDA_SUCCESS;
}
