/* loop.c — the DCGAN training loop of the PyTorch dcgan example, phase by phase, with the
 * lifetimes of its Python variables (a name keeps its tensor until it is reassigned). */
#include "train.h"

#include <cuda_runtime_api.h>
#include <math.h>
#include <nvtx3/nvToolsExt.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { SAMPLE_COUNT = 64 };

typedef struct {
    const tr_options *o;
    tr_runtime rt;
    tr_net G, D;
    tr_dataset data;
    tr_rng noise_rng, shuffle_rng;
    int *perm;
    int perm_pos, epoch;
    long total_steps;
    size_t image_floats; /* channels * size * size */
    float *host_batch;   /* staging for one micro-batch (or SAMPLE_COUNT images) */
    size_t host_floats;
    tr_tensor *dataset_dev; /* --preload-dataset */
    tr_tensor *fixed_noise;
    /* the example's Python variables */
    tr_tensor *real, *label, *noise, *fake, *output, *err_real, *err_fake, *err_d, *err_g;
    tr_graph g_real, g_fake, g_gen, g_gen_d;
    /* metrics of the current step (NaN in memory-only mode) */
    double loss_d, loss_g, d_x, d_g_z1, d_g_z2;
    double last_progress;
} trainer;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "train: out of host memory (%zu bytes)\n", n);
        exit(1);
    }
    return p;
}

/* name = value: the old tensor is freed after the new one exists, as in Python. */
static void assign(trainer *t, tr_tensor **slot, tr_tensor *value)
{
    tr_tensor *old = *slot;
    *slot = value;
    tr_unref(&t->rt, &old);
}

/* `del name` under --early-free. */
static void del(trainer *t, tr_tensor **slot)
{
    if (t->o->early_free)
        tr_unref(&t->rt, slot);
}

/* ---- data ----------------------------------------------------------------------------------- */

static void shuffle(trainer *t)
{
    int n = t->data.count;
    for (int i = 0; i < n; i++)
        t->perm[i] = i;
    for (int i = n - 1; i > 0; i--) {
        int j = (int)(tr_rng_u64(&t->shuffle_rng) % (uint64_t)(i + 1));
        int tmp = t->perm[i];
        t->perm[i] = t->perm[j];
        t->perm[j] = tmp;
    }
    t->perm_pos = 0;
}

/* Indices of the next batch (drop_last: a new epoch starts when too few are left). */
static const int *next_indices(trainer *t, int b)
{
    if (t->perm_pos + b > t->data.count) {
        t->epoch++;
        shuffle(t);
    }
    const int *idx = t->perm + t->perm_pos;
    t->perm_pos += b;
    return idx;
}

static void stage_images(trainer *t, const int *idx, int b)
{
    const tr_options *o = t->o;
    for (int i = 0; i < b; i++)
        tr_dataset_image(&t->data, idx[i], o->image_size, o->channels,
                         t->host_batch + (size_t)i * t->image_floats);
}

/* real = data[0].to(device): a new device tensor, filled by cudaMemcpy (or a device gather
 * from the preloaded dataset). */
static void load_real(trainer *t, int b)
{
    const tr_options *o = t->o;
    const int *idx = next_indices(t, b);
    size_t img_bytes = t->image_floats * sizeof(float);
    tr_tensor *real = tr_new(&t->rt, b, o->channels, o->image_size, o->image_size, TR_F32, "real");
    if (t->dataset_dev) {
        for (int i = 0; i < b && !o->memory_only; i++)
            tr_d2d(&t->rt, (char *)real->p + i * img_bytes,
                   (char *)t->dataset_dev->p + (size_t)idx[i] * img_bytes, img_bytes);
    } else if (!o->memory_only) {
        stage_images(t, idx, b);
        tr_h2d(&t->rt, real->p, t->host_batch, b * img_bytes);
    }
    assign(t, &t->real, real);
}

/* label = torch.full((b,), value). */
static void new_label(trainer *t, int b, float value)
{
    tr_tensor *label = tr_new(&t->rt, b, 1, 1, 1, TR_F32, "label");
    TR_OP(&t->rt, ops_fill(t->rt.ops, label->p, (size_t)b, value));
    assign(t, &t->label, label);
}

/* noise = torch.randn(b, nz, 1, 1): host normals copied to a new device tensor. */
static tr_tensor *randn_noise(trainer *t, int b)
{
    int nz = t->o->nz;
    tr_tensor *z = tr_new(&t->rt, b, nz, 1, 1, TR_F32, "noise");
    if (t->o->memory_only)
        return z;
    float *h = xmalloc((size_t)b * nz * sizeof *h);
    for (size_t i = 0; i < (size_t)b * nz; i++)
        h[i] = (float)tr_rng_normal(&t->noise_rng);
    tr_h2d(&t->rt, z->p, h, (size_t)b * nz * sizeof *h);
    free(h);
    return z;
}

/* The whole dataset as one device tensor, staged in chunks of host_batch. */
static void preload_dataset(trainer *t)
{
    const tr_options *o = t->o;
    int n = t->data.count, chunk = (int)(t->host_floats / t->image_floats);
    t->dataset_dev =
        tr_new(&t->rt, n, o->channels, o->image_size, o->image_size, TR_F32, "dataset");
    if (o->memory_only)
        return;
    int *idx = xmalloc((size_t)chunk * sizeof *idx);
    for (int start = 0; start < n; start += chunk) {
        int m = n - start < chunk ? n - start : chunk;
        for (int i = 0; i < m; i++)
            idx[i] = start + i;
        stage_images(t, idx, m);
        tr_h2d(&t->rt, (float *)t->dataset_dev->p + (size_t)start * t->image_floats, t->host_batch,
               (size_t)m * t->image_floats * sizeof(float));
    }
    free(idx);
}

/* ---- losses --------------------------------------------------------------------------------- */

/* err = criterion(output, label); returns err.item() (NaN in memory-only mode). */
static double bce(trainer *t, tr_tensor **err)
{
    tr_tensor *e = tr_new(&t->rt, 1, 1, 1, 1, TR_F32, "loss");
    TR_OP(&t->rt,
          ops_bce_loss_forward(t->rt.ops, t->output->p, t->label->p, t->output->numel, e->p));
    assign(t, err, e);
    float v = NAN;
    tr_d2h(&t->rt, &v, e->p, sizeof v);
    return v;
}

/* output.mean().item() */
static double mean_output(trainer *t)
{
    size_t n = t->output->numel;
    if (t->o->memory_only)
        return NAN;
    tr_d2h(&t->rt, t->host_batch, t->output->p, n * sizeof(float));
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += t->host_batch[i];
    return s / (double)n;
}

/* d(loss)/d(output) of the BCE mean, scaled by 1/accum_steps. */
static tr_tensor *bce_grad(trainer *t)
{
    size_t n = t->output->numel;
    tr_tensor *dp = tr_new(&t->rt, (int)n, 1, 1, 1, TR_F32, "loss.grad");
    TR_OP(&t->rt, ops_bce_loss_backward(t->rt.ops, t->output->p, t->label->p, n,
                                        1.0f / (float)t->o->accum_steps, dp->p));
    return dp;
}

/* errD = errD_real + errD_fake */
static void sum_errd(trainer *t)
{
    tr_tensor *e = tr_new(&t->rt, 1, 1, 1, 1, TR_F32, "loss");
    TR_OP(&t->rt, ops_copy(t->rt.ops, t->err_real->p, e->p, 1));
    TR_OP(&t->rt, ops_add(t->rt.ops, t->err_fake->p, e->p, 1, 1.0f));
    assign(t, &t->err_d, e);
}

/* ---- phases --------------------------------------------------------------------------------- */

/* output = netD(x); err = criterion(output, label); err.backward(). Returns err.item() and the
 * output mean in *mean; with need_dx the gradient wrt x (new reference). */
static double d_pass(trainer *t, tr_tensor *x, tr_graph *g, tr_tensor **err, double *mean,
                     tr_tensor **dx)
{
    nvtxRangePushA("D.forward");
    assign(t, &t->output, tr_net_forward(&t->rt, &t->D, x, TR_GRAD, g));
    double loss = bce(t, err);
    *mean = mean_output(t);
    nvtxRangePop();
    nvtxRangePushA("D.backward");
    tr_tensor *d = tr_net_backward(&t->rt, g, bce_grad(t), dx != NULL);
    if (dx)
        *dx = d;
    nvtxRangePop();
    del(t, &t->output);
    del(t, err);
    return loss;
}

static void g_forward(trainer *t, int b, tr_grad_mode mode)
{
    nvtxRangePushA("G.forward");
    assign(t, &t->noise, randn_noise(t, b));
    assign(t, &t->fake, tr_net_forward(&t->rt, &t->G, t->noise, mode, &t->g_gen));
    del(t, &t->noise);
    nvtxRangePop();
}

static void data_load(trainer *t, int b)
{
    nvtxRangePushA("data.load");
    load_real(t, b);
    new_label(t, b, 1.0f);
    nvtxRangePop();
}

/* D's micro-batch: real images, then G's images detached. fake_mode: how G runs. */
static void d_micro_batch(trainer *t, int b, tr_grad_mode fake_mode)
{
    tr_runtime *rt = &t->rt;
    data_load(t, b);
    t->loss_d += d_pass(t, t->real, &t->g_real, &t->err_real, &t->d_x, NULL);
    del(t, &t->real);
    g_forward(t, b, fake_mode);
    TR_OP(rt, ops_fill(rt->ops, t->label->p, (size_t)b, 0.0f));
    t->loss_d += d_pass(t, t->fake, &t->g_fake, &t->err_fake, &t->d_g_z1, NULL);
    if (!t->o->early_free)
        sum_errd(t);
}

/* G's micro-batch: output = netD(fake); errG = criterion(output, 1); errG.backward(). */
static void g_micro_batch(trainer *t, int b)
{
    tr_runtime *rt = &t->rt;
    if (!t->label || (int)t->label->numel != b)
        new_label(t, b, 1.0f);
    else
        TR_OP(rt, ops_fill(rt->ops, t->label->p, (size_t)b, 1.0f));
    tr_tensor *dfake = NULL;
    t->loss_g += d_pass(t, t->fake, &t->g_gen_d, &t->err_g, &t->d_g_z2, &dfake);
    del(t, &t->label);
    nvtxRangePushA("G.backward");
    tr_net_backward(rt, &t->g_gen, dfake, false);
    nvtxRangePop();
    del(t, &t->fake);
}

static void zero_grad(trainer *t, tr_net *net)
{
    if (t->o->no_zero_grad)
        return;
    nvtxRangePushA("zero_grad");
    tr_net_zero_grad(&t->rt, net);
    nvtxRangePop();
}

static void optimizer_step(trainer *t, tr_net *net)
{
    nvtxRangePushA("optimizer.step");
    tr_net_adam_step(&t->rt, net, t->o->lr, t->o->beta1, t->o->beta2);
    nvtxRangePop();
}

static int step_batch(const trainer *t, long step)
{
    const tr_options *o = t->o;
    return o->n_vary ? o->vary_batch[step % o->n_vary] : o->batch;
}

/* The allocation log's line at the end of train_step `step` (1-based): the
 * allocator's allocated and reserved bytes then, the live bytes a profiler
 * samples at the step's end ("s STEP ALLOCATED RESERVED"). */
static void log_step_end(tr_runtime *rt, long step)
{
    if (!rt->alloc_log)
        return;
    ga_stats s = ga_get_stats(rt->ga);
    fprintf(rt->alloc_log, "s %ld %llu %llu\n", step, (unsigned long long)s.allocated_bytes,
            (unsigned long long)s.reserved_bytes);
}

/* One optimizer step of both networks. K = 1: the example's loop (G's output reused for G's
 * update). K > 1: D accumulates over K micro-batches with G under no_grad, then G over K new
 * micro-batches. */
static void train_step(trainer *t, long step)
{
    int k = t->o->accum_steps, b = step_batch(t, step);
    t->loss_d = t->loss_g = 0;
    zero_grad(t, &t->D);
    for (int i = 0; i < k; i++)
        d_micro_batch(t, b,
                      k == 1 ? (t->o->checkpoint ? TR_GRAD_CHECKPOINT : TR_GRAD) : TR_NO_GRAD);
    optimizer_step(t, &t->D);
    zero_grad(t, &t->G);
    for (int i = 0; i < k; i++) {
        if (k > 1)
            g_forward(t, b, t->o->checkpoint ? TR_GRAD_CHECKPOINT : TR_GRAD);
        g_micro_batch(t, b);
    }
    optimizer_step(t, &t->G);
    t->loss_d /= k;
    t->loss_g /= k;
    if (t->o->empty_cache) {
        nvtxRangePushA("empty_cache");
        ga_empty_cache(t->rt.ga);
        nvtxRangePop();
    }
}

/* ---- samples, logging ----------------------------------------------------------------------- */

static int write_samples(trainer *t, const char *path)
{
    if (!path)
        return 0;
    nvtxRangePushA("samples");
    tr_graph g;
    tr_tensor *img = tr_net_forward(&t->rt, &t->G, t->fixed_noise, TR_NO_GRAD, &g);
    int rc = 0;
    if (!t->o->memory_only) {
        tr_d2h(&t->rt, t->host_batch, img->p, img->bytes);
        char err[512];
        rc = tr_png_write_grid(path, t->host_batch, SAMPLE_COUNT, t->o->channels, t->o->image_size,
                               err, sizeof err);
        if (rc != 0)
            fprintf(stderr, "train: %s\n", err);
        else
            printf("samples: %s\n", path);
    } else {
        printf("samples: %s not written (--memory-only)\n", path);
    }
    tr_unref(&t->rt, &img);
    nvtxRangePop();
    return rc;
}

static void log_step(trainer *t, long step)
{
    ga_stats s = ga_get_stats(t->rt.ga);
    printf("step=%ld/%ld epoch=%d batch=%d loss_D=%.4f loss_G=%.4f D_x=%.4f D_G_z=%.4f/%.4f "
           "allocated=%llu reserved=%llu peak_allocated=%llu peak_reserved=%llu\n",
           step, t->total_steps, t->epoch, step_batch(t, step - 1), t->loss_d, t->loss_g, t->d_x,
           t->d_g_z1, t->d_g_z2, (unsigned long long)s.allocated_bytes,
           (unsigned long long)s.reserved_bytes, (unsigned long long)s.peak_allocated_bytes,
           (unsigned long long)s.peak_reserved_bytes);
    fflush(stdout);
}

static void progress(trainer *t, long step, double start)
{
    double now = now_s();
    if (now - t->last_progress < 10.0)
        return;
    t->last_progress = now;
    fprintf(stderr, "train: step %ld/%ld, %.2f steps/s\n", step, t->total_steps,
            step / (now - start));
}

static void run_steps(trainer *t)
{
    const tr_options *o = t->o;
    double start = now_s();
    t->last_progress = start;
    for (long step = 0; step < t->total_steps; step++) {
        t->rt.step = step + 1;
        nvtxRangePushA("train_step");
        train_step(t, step);
        nvtxRangePop();
        log_step_end(&t->rt, step + 1);
        if (step == 0 || (step + 1) % o->log_every == 0 || step + 1 == t->total_steps)
            log_step(t, step + 1);
        progress(t, step + 1, start);
    }
    if (!o->memory_only)
        tr_check_op(&t->rt, ops_ctx_synchronize(t->rt.ops), "synchronize");
    printf("time: %.1f s for %ld steps\n", now_s() - start, t->total_steps);
}

/* ---- set-up --------------------------------------------------------------------------------- */

static int load_data(trainer *t)
{
    const tr_options *o = t->o;
    char err[1024];
    if (o->synthetic) {
        if (tr_dataset_synthetic(&t->data, 60000, o->seed) == 0)
            return 0;
        fprintf(stderr, "train: out of host memory for the synthetic dataset\n");
        return -1;
    }
    if (tr_dataset_load_fashion_mnist(&t->data, o->data_dir, err, sizeof err) == 0)
        return 0;
    fprintf(stderr, "train: %s\n", err);
    return -1;
}

static int build_models(trainer *t)
{
    const tr_options *o = t->o;
    tr_plan gp, dp;
    if (tr_plan_generator(&gp, o->image_size, o->nz, o->ngf, o->channels) != 0 ||
        tr_plan_discriminator(&dp, o->image_size, o->channels, o->ndf) != 0) {
        fprintf(stderr, "train: no DCGAN plan for image size %d\n", o->image_size);
        return -1;
    }
    printf("G parameters: %lld\nD parameters: %lld\n", tr_plan_param_count(&gp),
           tr_plan_param_count(&dp));
    tr_plan_print(stdout, "G", &gp);
    tr_plan_print(stdout, "D", &dp);
    tr_rng init;
    tr_rng_seed(&init, o->seed);
    tr_net_init(&t->rt, &t->G, "G", &gp, &init);
    tr_net_init(&t->rt, &t->D, "D", &dp, &init);
    return 0;
}

static long count_steps(const tr_options *o, int count)
{
    if (o->steps > 0)
        return o->steps;
    long per_epoch = count / ((long)o->batch * o->accum_steps);
    return (per_epoch > 0 ? per_epoch : 1) * o->epochs;
}

static int max_batch(const tr_options *o)
{
    int b = o->batch;
    for (int i = 0; i < o->n_vary; i++)
        if (o->vary_batch[i] > b)
            b = o->vary_batch[i];
    return b > SAMPLE_COUNT ? b : SAMPLE_COUNT;
}

static int setup(trainer *t)
{
    const tr_options *o = t->o;
    if (load_data(t) != 0)
        return -1;
    if (max_batch(o) > t->data.count) {
        fprintf(stderr, "train: batch larger than the dataset (%d images)\n", t->data.count);
        return -1;
    }
    t->image_floats = (size_t)o->channels * o->image_size * o->image_size;
    t->host_floats = (size_t)max_batch(o) * t->image_floats;
    t->host_batch = xmalloc(t->host_floats * sizeof(float));
    t->perm = xmalloc((size_t)t->data.count * sizeof *t->perm);
    tr_rng_seed(&t->noise_rng, o->seed * 2 + 1);
    tr_rng_seed(&t->shuffle_rng, o->seed * 3 + 7);
    shuffle(t);
    t->total_steps = count_steps(o, t->data.count);
    if (o->preload_dataset)
        preload_dataset(t);
    if (build_models(t) != 0)
        return -1;
    t->fixed_noise = randn_noise(t, SAMPLE_COUNT);
    return 0;
}

static int open_runtime(trainer *t)
{
    const tr_options *o = t->o;
    cudaError_t e = cudaSetDevice(o->device);
    if (e != cudaSuccess) {
        fprintf(stderr, "train: cudaSetDevice(%d): %s\n", o->device, cudaGetErrorString(e));
        return -1;
    }
    t->rt.ops = tr_open_backend(o);
    if (!t->rt.ops)
        return -1;
    t->rt.ga = ga_create(o->allocator, NULL, o->device);
    if (!t->rt.ga) {
        fprintf(stderr, "train: cannot create the allocator\n");
        return -1;
    }
    t->rt.memory_only = o->memory_only;
    t->rt.fp16 = o->fp16;
    t->rt.retain_history = o->retain_history;
    if (o->alloc_log && !(t->rt.alloc_log = fopen(o->alloc_log, "w"))) {
        perror(o->alloc_log);
        return -1;
    }
    if (o->oom_log) {
        if (!(t->rt.oom_log = fopen(o->oom_log, "w"))) {
            perror(o->oom_log);
            return -1;
        }
        ga_set_failure_observer(t->rt.ga, tr_oom_log_line, t->rt.oom_log);
    }
    printf(
        "backend: %s%s, allocator: %s\n", ops_ctx_backend(t->rt.ops) == OPS_CUDA ? "cuda" : "cpu",
        o->memory_only ? " (memory-only)" : "", o->allocator == GA_CACHING ? "caching" : "direct");
    return 0;
}

static void teardown(trainer *t)
{
    tr_runtime *rt = &t->rt;
    tr_tensor **vars[] = {&t->real,   &t->label,       &t->noise,      &t->fake,
                          &t->output, &t->err_real,    &t->err_fake,   &t->err_d,
                          &t->err_g,  &t->fixed_noise, &t->dataset_dev};
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++)
        tr_unref(rt, vars[i]);
    if (rt->ga) {
        tr_runtime_release_history(rt);
        tr_net_free(rt, &t->G);
        tr_net_free(rt, &t->D);
        ga_destroy(rt->ga);
    }
    ops_ctx_destroy(rt->ops);
    if (rt->alloc_log)
        fclose(rt->alloc_log);
    if (rt->oom_log)
        fclose(rt->oom_log);
    tr_dataset_free(&t->data);
    free(t->host_batch);
    free(t->perm);
}

static void print_summary(trainer *t)
{
    ga_stats s = ga_get_stats(t->rt.ga);
    printf("done: steps=%ld peak_allocated=%llu peak_reserved=%llu device_mallocs=%llu "
           "history_tensors=%zu\n",
           t->total_steps, (unsigned long long)s.peak_allocated_bytes,
           (unsigned long long)s.peak_reserved_bytes, (unsigned long long)s.device_malloc_calls,
           t->rt.n_history);
}

int tr_train_run(const tr_options *o)
{
    trainer *t = calloc(1, sizeof *t);
    if (!t)
        return 1;
    t->o = o;
    t->loss_d = t->loss_g = t->d_x = t->d_g_z1 = t->d_g_z2 = NAN;
    int rc = open_runtime(t) == 0 && setup(t) == 0 ? 0 : 1;
    if (rc == 0)
        rc = write_samples(t, o->samples_initial) == 0 ? 0 : 1;
    if (rc == 0) {
        run_steps(t);
        rc = write_samples(t, o->samples) == 0 ? 0 : 1;
        print_summary(t);
    }
    teardown(t);
    free(t);
    return rc;
}
