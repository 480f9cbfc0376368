/* train.h — internal interface of the DCGAN trainer (build/bin/train).
 *
 * Modules (one .c each): cli.c (options), data.c (Fashion-MNIST IDX files and
 * synthetic images), png_grid.c (8x8 sample grid), plan.c (layer plan and
 * parameter counts), tensor.c (tensors on the allocator, allocation log),
 * nets.c (forward/backward of G and D), loop.c (the training loop).
 * Nothing here is used outside gan_workload/train and its tests. */
#ifndef VRAMTRACE_GAN_TRAIN_H
#define VRAMTRACE_GAN_TRAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "alloc.h"
#include "ops.h"

/* ---- options (cli.c) ------------------------------------------------------------------------ */

enum { TR_MAX_VARY = 16 };
typedef enum { TR_BACKEND_AUTO, TR_BACKEND_CPU, TR_BACKEND_CUDA } tr_backend;

typedef struct {
    int image_size; /* 32..256, power of two */
    int batch;      /* micro-batch size (images) */
    int channels;   /* image channels, 1 or 3 */
    int nz, ngf, ndf;
    int accum_steps; /* micro-batches per optimizer step */
    int device;      /* CUDA device ordinal */
    int log_every;   /* steps between log lines */
    long steps;      /* optimizer steps; 0 = run `epochs` epochs */
    int epochs;
    uint64_t seed;
    float lr, beta1, beta2;
    tr_backend backend;
    ga_kind allocator;
    bool memory_only, checkpoint, fp16, empty_cache, retain_history, preload_dataset;
    bool no_zero_grad, early_free, synthetic;
    int vary_batch[TR_MAX_VARY]; /* batch sizes cycled per step, n_vary == 0: off */
    int n_vary;
    const char *data_dir;
    const char *samples;         /* PNG grid after training, or NULL */
    const char *samples_initial; /* PNG grid at step 0, or NULL */
    const char *alloc_log;       /* allocation log file, or NULL */
    const char *oom_log;         /* failed device mallocs' log file, or NULL */
} tr_options;

/* Fills o with the defaults (32x32, batch 64, 1 channel, nz 100, ngf = ndf = 64, Adam 2e-4,
 * 0.5, 0.999, seed 1, caching allocator, auto backend, data from
 * /usr/share/datasets/fashion-mnist). */
void tr_options_default(tr_options *o);

/* Parses argv with getopt_long into o (defaults first). Returns 0 to run, 1 when --help was
 * printed (to out), -1 on a bad option or value (message written to err). */
int tr_options_parse(tr_options *o, int argc, char **argv, FILE *out, FILE *err);

/* The usage text. */
void tr_usage(FILE *f, const char *prog);

/* ---- random numbers (data.c) ---------------------------------------------------------------- */

typedef struct {
    uint64_t s;
    bool has_spare;
    double spare;
} tr_rng;

void tr_rng_seed(tr_rng *r, uint64_t seed);
uint64_t tr_rng_u64(tr_rng *r);
/* Uniform in [0, 1). */
double tr_rng_uniform(tr_rng *r);
/* Standard normal (Box-Muller). */
double tr_rng_normal(tr_rng *r);

/* ---- data (data.c) -------------------------------------------------------------------------- */

/* The dataset in host memory as 8-bit images (count, rows, cols), as stored in the IDX file. */
typedef struct {
    uint8_t *pixels;
    int count, rows, cols;
} tr_dataset;

/* Reads a gzip-compressed IDX3 image file (magic 0x00000803, big-endian dims; the format of
 * yann.lecun.com/exdb/mnist, used by Fashion-MNIST) with zlib. Returns 0, or -1 with a message
 * in err (err_size bytes) naming the file. */
int tr_dataset_load_idx(tr_dataset *d, const char *path, char *err, size_t err_size);

/* Loads <dir>/train-images-idx3-ubyte.gz. A missing file gives a message naming the Debian
 * package dataset-fashion-mnist and --data-dir. */
int tr_dataset_load_fashion_mnist(tr_dataset *d, const char *dir, char *err, size_t err_size);

/* Fills d with `count` synthetic 28x28 images (a bright ellipse with random position and
 * size on a dark background) from seed; for tests only. Returns -1 on out of memory. */
int tr_dataset_synthetic(tr_dataset *d, int count, uint64_t seed);

void tr_dataset_free(tr_dataset *d);

/* Converts image `index` of d into out (channels, size, size) floats in [-1, 1]: bilinear
 * resize (half-pixel centres, as torchvision's Resize with antialias off) from rows x cols
 * to size x size, the gray value replicated to every channel. */
void tr_dataset_image(const tr_dataset *d, int index, int size, int channels, float *out);

/* ---- PNG grid (png_grid.c) ------------------------------------------------------------------ */

/* Writes `count` images (count, channels, size, size) floats in [-1, 1] as an 8-column grid
 * with 2-pixel black padding (torchvision.utils.make_grid(padding=2, normalize to [-1,1]))
 * to path: gray PNG for 1 channel, RGB for 3. Returns 0, or -1 with a message in err. */
int tr_png_write_grid(const char *path, const float *images, int count, int channels, int size,
                      char *err, size_t err_size);

/* ---- layer plan (plan.c) -------------------------------------------------------------------- */

enum { TR_MAX_LAYERS = 8 };
typedef enum { TR_CONV, TR_CONVT } tr_conv_kind;
typedef enum { TR_ACT_RELU, TR_ACT_LRELU, TR_ACT_TANH, TR_ACT_SIGMOID } tr_act;

/* One block: convolution (kernel 4, no bias), optional BatchNorm2d, activation. */
typedef struct {
    tr_conv_kind kind;
    int c_in, c_out, k, stride, pad;
    int hw_in, hw_out; /* spatial size of input and output (square) */
    bool bn;
    tr_act act;
} tr_layer_spec;

typedef struct {
    int n;
    tr_layer_spec l[TR_MAX_LAYERS];
} tr_plan;

/* The PyTorch dcgan example's generator generalised to image_size = 2^k, 32 <= size <= 256:
 * L = log2(size) - 1 blocks; block 0 ConvTranspose2d(nz, ngf*2^(L-2), 4, 1, 0) to 4x4, each
 * next one halves the channels and doubles the size (4, 2, 1), BN + ReLU on all but the last,
 * which maps ngf to nc with Tanh. Returns 0, or -1 for an invalid size or non-positive width. */
int tr_plan_generator(tr_plan *p, int image_size, int nz, int ngf, int nc);

/* The discriminator: Conv2d(nc, ndf, 4, 2, 1) + LeakyReLU(0.2), then L-2 blocks doubling the
 * channels (BN + LeakyReLU), then Conv2d(ndf*2^(L-2), 1, 4, 1, 0) + Sigmoid. */
int tr_plan_discriminator(tr_plan *p, int image_size, int nc, int ndf);

/* Number of parameters: conv weights + BN gamma and beta (running stats are buffers). */
long long tr_plan_param_count(const tr_plan *p);

/* Weight elements of block i (k*k*c_in*c_out). */
size_t tr_layer_weight_count(const tr_layer_spec *s);

/* Prints one line per block to f, prefixed by name ("G" / "D"). */
void tr_plan_print(FILE *f, const char *name, const tr_plan *p);

/* ---- tensors on the allocator (tensor.c) ---------------------------------------------------- */

typedef enum { TR_F32, TR_F16 } tr_dtype;

/* A reference-counted device tensor (NCHW) or scratch buffer: memory from ga_malloc, freed
 * with ga_free when the last reference goes, like a PyTorch storage. */
typedef struct tr_tensor {
    void *p;      /* device pointer */
    size_t numel; /* elements (scratch: bytes) */
    size_t bytes;
    int n, c, h, w;
    tr_dtype dtype;
    uint64_t id; /* allocation ordinal, 1-based */
    int refs;
    const char *tag;
} tr_tensor;

/* Everything the layers need: allocator, ops context and the run's switches. */
typedef struct tr_runtime {
    ga_allocator *ga;
    ops_ctx *ops;
    bool memory_only;    /* skip arithmetic and copies */
    bool fp16;           /* saved activations in half precision */
    bool retain_history; /* saved activations never released */
    FILE *alloc_log; /* "a ID BYTES TAG" / "f ID BYTES TAG", "s STEP ALLOCATED RESERVED" lines */
    FILE *oom_log;   /* one JSON line per failed device malloc (tr_oom_log_line), or NULL */
    uint64_t next_id;
    long step; /* current step, for messages */
    tr_tensor **history;
    size_t n_history, cap_history;
} tr_runtime;

/* The allocator's failure observer of --oom-log (ga_set_failure_observer; log: a FILE *): one
 * line {"requested":B,"retry":0|1,"allocated":B,"reserved":B,"largest_free":B,
 * "device_free":B,"device_total":B} per failed device malloc, in bytes, flushed. */
void tr_oom_log_line(void *log, const ga_failure *f);

/* Allocates a tensor of n*c*h*w elements of dtype (f32 4 bytes, f16 2 bytes). On device OOM
 * (ga_malloc NULL) prints the allocator's PyTorch-style message to stderr and exits with
 * status 2. tag names the tensor in the allocation log (a string literal). */
tr_tensor *tr_new(tr_runtime *rt, int n, int c, int h, int w, tr_dtype dtype, const char *tag);
/* Allocates a scratch buffer of `bytes` bytes (ops workspaces); NULL when bytes == 0. */
tr_tensor *tr_scratch(tr_runtime *rt, size_t bytes, const char *tag);
/* Adds a reference; returns t. */
tr_tensor *tr_ref(tr_tensor *t);
/* Drops the reference *t (NULL allowed) and sets *t = NULL; frees at zero references. */
void tr_unref(tr_runtime *rt, tr_tensor **t);
/* Drops a saved-for-backward reference: with retain_history it is moved to rt's history
 * instead (kept alive until tr_runtime_release_history). */
void tr_release_saved(tr_runtime *rt, tr_tensor **t);
void tr_runtime_release_history(tr_runtime *rt);
/* Exits with status 1 after an ops failure (message from ops_ctx_error). */
void tr_check_op(tr_runtime *rt, int rc, const char *what);
/* Host<->device copies with cudaMemcpy (skipped in memory-only mode); exit 1 on error. */
void tr_h2d(tr_runtime *rt, void *dst, const void *src, size_t bytes);
void tr_d2h(tr_runtime *rt, void *dst, const void *src, size_t bytes);
void tr_d2d(tr_runtime *rt, void *dst, const void *src, size_t bytes);
/* Converts a saved tensor to an f32 tensor for a backward computation: a new reference to t
 * if it is f32, else a new f32 tensor holding float(t). */
tr_tensor *tr_unpack(tr_runtime *rt, tr_tensor *t, const char *tag);
/* What is kept for backward of the f32 activation t: t itself (a new reference) or, with
 * rt->fp16, a new half-precision copy. */
tr_tensor *tr_pack(tr_runtime *rt, tr_tensor *t, const char *tag);

/* Runs an ops call unless in memory-only mode. */
#define TR_OP(rt, call)                                                                            \
    do {                                                                                           \
        if (!(rt)->memory_only)                                                                    \
            tr_check_op((rt), (call), #call);                                                      \
    } while (0)

/* ---- networks (nets.c) ---------------------------------------------------------------------- */

/* Tags of one block's tensors in the allocation log. */
enum {
    TR_TAG_W,
    TR_TAG_GAMMA,
    TR_TAG_BETA,
    TR_TAG_RMEAN,
    TR_TAG_RVAR,
    TR_TAG_GRAD_W,
    TR_TAG_GRAD_GAMMA,
    TR_TAG_GRAD_BETA,
    TR_TAG_ADAM_M,
    TR_TAG_ADAM_V,
    TR_TAG_CONV_OUT,
    TR_TAG_BN_OUT,
    TR_TAG_ACT_OUT,
    TR_TAG_MEAN,
    TR_TAG_INVSTD,
    TR_TAG_PACKED,
    TR_TAG_UNPACKED,
    TR_TAG_WS_FWD,
    TR_TAG_WS_BWD_DATA,
    TR_TAG_WS_BWD_FILTER,
    TR_TAG_D_ACT,
    TR_TAG_D_BN,
    TR_TAG_D_IN,
    TR_TAG_COUNT
};

/* One block's parameters (conv weight, BN gamma/beta), buffers (running stats), their .grad
 * (NULL = None, as after zero_grad(set_to_none=True)) and Adam state (m, v per parameter). */
typedef struct {
    tr_layer_spec s;
    tr_tensor *param[3]; /* weight, gamma, beta (gamma/beta NULL without BN) */
    tr_tensor *grad[3];
    tr_tensor *exp_avg[3], *exp_avg_sq[3];
    tr_tensor *running_mean, *running_var;
    char tag[TR_TAG_COUNT][24];
} tr_layer;

typedef struct {
    char name[8];
    int n;
    tr_layer l[TR_MAX_LAYERS];
    long adam_step;
} tr_net;

typedef enum {
    TR_NO_GRAD,        /* torch.no_grad(): intermediates freed as soon as consumed */
    TR_GRAD,           /* autograd: every activation a backward needs is kept */
    TR_GRAD_CHECKPOINT /* checkpoint per block: only block outputs (segment inputs) kept */
} tr_grad_mode;

/* What one block keeps for backward (NULL where not kept). */
typedef struct {
    tr_tensor *y, *mean, *invstd; /* BN input (conv output) and batch statistics */
    tr_tensor *out;               /* block output (activation result), maybe f16 */
} tr_saved;

/* The autograd graph of one forward pass. */
typedef struct {
    tr_net *net;
    tr_grad_mode mode;
    tr_tensor *input;
    tr_saved b[TR_MAX_LAYERS];
} tr_graph;

/* Allocates the parameters and buffers of plan p (module order: per block weight, gamma,
 * beta, running_mean, running_var) and initialises them as the dcgan example's weights_init:
 * conv N(0, 0.02), gamma N(1, 0.02), beta 0, running stats 0 and 1 (host RNG, cudaMemcpy). */
void tr_net_init(tr_runtime *rt, tr_net *net, const char *name, const tr_plan *p, tr_rng *rng);
/* Frees everything the net holds. */
void tr_net_free(tr_runtime *rt, tr_net *net);

/* Forward pass of x (batch, c_in, hw_in, hw_in) f32. Returns a new reference to the output
 * (batch, c_out, hw_out, hw_out) f32. With mode != TR_NO_GRAD fills g for tr_net_backward.
 * BatchNorm runs in training mode and updates the running statistics. */
tr_tensor *tr_net_forward(tr_runtime *rt, tr_net *net, tr_tensor *x, tr_grad_mode mode,
                          tr_graph *g);

/* Backward through g from dout (gradient of the output; the reference is consumed). Parameter
 * gradients are accumulated into .grad (allocated on first use, as PyTorch's AccumulateGrad).
 * The graph's saved tensors are released (kept with retain_history). Returns the gradient of
 * the input if need_dx (new reference), else NULL. */
tr_tensor *tr_net_backward(tr_runtime *rt, tr_graph *g, tr_tensor *dout, bool need_dx);

/* optimizer.zero_grad(set_to_none=True): drops every .grad. */
void tr_net_zero_grad(tr_runtime *rt, tr_net *net);

/* One Adam step over every parameter with a gradient; exp_avg and exp_avg_sq are allocated
 * (zeroed) on the first step, as torch.optim.Adam's lazy state. */
void tr_net_adam_step(tr_runtime *rt, tr_net *net, float lr, float beta1, float beta2);

/* ---- training loop (loop.c, device.c) ------------------------------------------------------- */

/* Runs the whole training described by o: prints the parameter counts, the log lines
 * ("step=S/T epoch=E loss_D=... loss_G=... D_x=... D_G_z=A/B allocated=BYTES reserved=BYTES")
 * and a summary on stdout. Returns the exit status: 0 done, 1 error; on device OOM the process
 * exits with status 2 from tr_new. */
int tr_train_run(const tr_options *o);

/* 1 if the loaded libcudart is vramtrace's simulated device (a libcudart.so.13 loaded from a
 * folder named "sim", or a runtime without kernel launch), else 0. */
int tr_device_is_simulated(void);

/* Picks the ops backend for o (auto: cpu on the simulated device or without the CUDA backend,
 * else cuda) and creates its context; NULL with a message on stderr on failure. */
ops_ctx *tr_open_backend(const tr_options *o);

#endif /* VRAMTRACE_GAN_TRAIN_H */
