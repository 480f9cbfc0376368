/* tensor.c — reference-counted tensors on the gan_alloc allocator, allocation log, copies. */
#include "train.h"

#include <cuda_runtime_api.h>
#include <stdlib.h>

static void log_event(tr_runtime *rt, char kind, const tr_tensor *t)
{
    if (rt->alloc_log)
        fprintf(rt->alloc_log, "%c %llu %zu %s\n", kind, (unsigned long long)t->id, t->bytes,
                t->tag);
}

void tr_oom_log_line(void *log, const ga_failure *f)
{
    fprintf(log,
            "{\"requested\":%zu,\"retry\":%d,\"allocated\":%llu,\"reserved\":%llu,"
            "\"largest_free\":%llu,\"device_free\":%zu,\"device_total\":%zu}\n",
            f->requested, f->retry, (unsigned long long)f->allocated_bytes,
            (unsigned long long)f->reserved_bytes, (unsigned long long)f->largest_free_block,
            f->device_free, f->device_total);
    fflush(log);
}

static void die_oom(tr_runtime *rt, size_t bytes, const char *tag)
{
    fflush(stdout);
    ga_stats s = ga_get_stats(rt->ga);
    fprintf(stderr, "%s\n", ga_last_error(rt->ga));
    fprintf(stderr,
            "train: device out of memory at step %ld allocating %zu bytes for %s "
            "(allocated %llu, reserved %llu bytes)\n",
            rt->step, bytes, tag, (unsigned long long)s.allocated_bytes,
            (unsigned long long)s.reserved_bytes);
    if (rt->alloc_log)
        fflush(rt->alloc_log);
    exit(2);
}

static tr_tensor *alloc_tensor(tr_runtime *rt, size_t bytes, const char *tag)
{
    tr_tensor *t = calloc(1, sizeof *t);
    if (!t) {
        fprintf(stderr, "train: out of host memory\n");
        exit(1);
    }
    t->p = ga_malloc(rt->ga, bytes);
    if (!t->p)
        die_oom(rt, bytes, tag);
    t->bytes = bytes;
    t->refs = 1;
    t->id = ++rt->next_id;
    t->tag = tag;
    log_event(rt, 'a', t);
    return t;
}

tr_tensor *tr_new(tr_runtime *rt, int n, int c, int h, int w, tr_dtype dtype, const char *tag)
{
    size_t numel = (size_t)n * c * h * w;
    tr_tensor *t = alloc_tensor(rt, numel * (dtype == TR_F16 ? 2 : 4), tag);
    t->numel = numel;
    t->n = n;
    t->c = c;
    t->h = h;
    t->w = w;
    t->dtype = dtype;
    return t;
}

tr_tensor *tr_scratch(tr_runtime *rt, size_t bytes, const char *tag)
{
    if (bytes == 0)
        return NULL;
    tr_tensor *t = alloc_tensor(rt, bytes, tag);
    t->numel = bytes;
    return t;
}

tr_tensor *tr_ref(tr_tensor *t)
{
    t->refs++;
    return t;
}

void tr_unref(tr_runtime *rt, tr_tensor **tp)
{
    tr_tensor *t = *tp;
    *tp = NULL;
    if (!t || --t->refs > 0)
        return;
    log_event(rt, 'f', t);
    ga_free(rt->ga, t->p);
    free(t);
}

void tr_release_saved(tr_runtime *rt, tr_tensor **t)
{
    if (!*t)
        return;
    if (!rt->retain_history) {
        tr_unref(rt, t);
        return;
    }
    if (rt->n_history == rt->cap_history) {
        size_t cap = rt->cap_history ? rt->cap_history * 2 : 256;
        tr_tensor **h = realloc(rt->history, cap * sizeof *h);
        if (!h) {
            fprintf(stderr, "train: out of host memory\n");
            exit(1);
        }
        rt->history = h;
        rt->cap_history = cap;
    }
    rt->history[rt->n_history++] = *t;
    *t = NULL;
}

void tr_runtime_release_history(tr_runtime *rt)
{
    for (size_t i = 0; i < rt->n_history; i++)
        tr_unref(rt, &rt->history[i]);
    free(rt->history);
    rt->history = NULL;
    rt->n_history = rt->cap_history = 0;
}

void tr_check_op(tr_runtime *rt, int rc, const char *what)
{
    if (rc == 0)
        return;
    fflush(stdout);
    fprintf(stderr, "train: %s failed at step %ld: %s\n", what, rt->step, ops_ctx_error(rt->ops));
    exit(1);
}

static void copy(tr_runtime *rt, void *dst, const void *src, size_t bytes, enum cudaMemcpyKind k)
{
    if (rt->memory_only || bytes == 0)
        return;
    cudaError_t e = cudaMemcpy(dst, src, bytes, k);
    if (e != cudaSuccess) {
        fflush(stdout);
        fprintf(stderr, "train: cudaMemcpy of %zu bytes failed: %s\n", bytes,
                cudaGetErrorString(e));
        exit(1);
    }
}

void tr_h2d(tr_runtime *rt, void *dst, const void *src, size_t bytes)
{
    copy(rt, dst, src, bytes, cudaMemcpyHostToDevice);
}

void tr_d2h(tr_runtime *rt, void *dst, const void *src, size_t bytes)
{
    copy(rt, dst, src, bytes, cudaMemcpyDeviceToHost);
}

void tr_d2d(tr_runtime *rt, void *dst, const void *src, size_t bytes)
{
    copy(rt, dst, src, bytes, cudaMemcpyDeviceToDevice);
}

tr_tensor *tr_unpack(tr_runtime *rt, tr_tensor *t, const char *tag)
{
    if (t->dtype == TR_F32)
        return tr_ref(t);
    tr_tensor *f = tr_new(rt, t->n, t->c, t->h, t->w, TR_F32, tag);
    TR_OP(rt, ops_half_to_float(rt->ops, t->p, f->p, t->numel));
    return f;
}

tr_tensor *tr_pack(tr_runtime *rt, tr_tensor *t, const char *tag)
{
    if (!rt->fp16 || t->dtype == TR_F16)
        return tr_ref(t);
    tr_tensor *h = tr_new(rt, t->n, t->c, t->h, t->w, TR_F16, tag);
    TR_OP(rt, ops_float_to_half(rt->ops, t->p, h->p, t->numel));
    return h;
}
