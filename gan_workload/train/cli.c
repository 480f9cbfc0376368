/* cli.c — command-line options of train (getopt_long). */
#include "train.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_DATA_DIR "/usr/share/datasets/fashion-mnist"

void tr_options_default(tr_options *o)
{
    memset(o, 0, sizeof *o);
    o->image_size = 32;
    o->batch = 64;
    o->channels = 1;
    o->nz = 100;
    o->ngf = 64;
    o->ndf = 64;
    o->accum_steps = 1;
    o->log_every = 10;
    o->epochs = 1;
    o->seed = 1;
    o->lr = 2e-4f;
    o->beta1 = 0.5f;
    o->beta2 = 0.999f;
    o->backend = TR_BACKEND_AUTO;
    o->allocator = GA_CACHING;
    o->data_dir = DEFAULT_DATA_DIR;
}

void tr_usage(FILE *f, const char *prog)
{
    fprintf(
        f,
        "usage: %s [options]\n"
        "DCGAN on Fashion-MNIST, device memory from a PyTorch-like caching allocator.\n\n"
        "model and data:\n"
        "  --image-size N      32, 64, 128 or 256 (default 32)\n"
        "  --channels N        1 or 3 (default 1; gray replicated)\n"
        "  --nz N --ngf N --ndf N   latent size, G and D widths (default 100, 64, 64)\n"
        "  --data-dir DIR      folder with train-images-idx3-ubyte.gz (default " DEFAULT_DATA_DIR
        ")\n"
        "  --synthetic         synthetic ellipses instead of Fashion-MNIST (tests only)\n"
        "training:\n"
        "  --batch N           images per micro-batch (default 64)\n"
        "  --steps N           optimizer steps (default: --epochs epochs)\n"
        "  --epochs N          epochs of 60000 images (default 1)\n"
        "  --lr F --beta1 F --beta2 F   Adam (default 2e-4, 0.5, 0.999)\n"
        "  --seed N            seed of weights, noise and shuffling (default 1)\n"
        "  --backend B         auto, cpu or cuda (default auto: cpu on the simulated device)\n"
        "  --allocator A       caching or direct (default caching)\n"
        "  --device N          CUDA device (default 0)\n"
        "scenarios:\n"
        "  --memory-only       every allocation as in training, no arithmetic or copies\n"
        "  --accum-steps K     gradient accumulation over K micro-batches\n"
        "  --checkpoint        recompute G's block activations in backward\n"
        "  --fp16              keep saved activations in half precision\n"
        "  --empty-cache       empty the allocator's cache after every step\n"
        "  --retain-history    keep every step's saved activations alive (leak)\n"
        "  --preload-dataset   copy the whole dataset to the device at start\n"
        "  --vary-batch[=LIST] cycle batch sizes per step (default cycle: b/4 b/2 3b/4 b,\n"
        "                      minus 0..2 images); LIST: comma-separated sizes\n"
        "  --no-zero-grad      never free gradients: they accumulate in place\n"
        "  --early-free        free intermediates right after their last use (\"del\")\n"
        "output:\n"
        "  --log-every N       steps between log lines (default 10)\n"
        "  --samples FILE      8x8 PNG grid of G(fixed noise) after training\n"
        "  --samples-initial FILE  the same grid before the first step\n"
        "  --alloc-log FILE    write every allocator malloc/free (debugging, tests)\n"
        "  --oom-log FILE      write the allocator's state at every failed device malloc\n"
        "                      (JSON lines: requested, retry, allocated, reserved,\n"
        "                      largest_free, device_free, device_total; tests)\n"
        "  --help\n"
        "exit status: 0 done, 1 bad usage or error, 2 device out of memory\n",
        prog);
}

enum {
    OPT_IMAGE_SIZE = 256,
    OPT_CHANNELS,
    OPT_NZ,
    OPT_NGF,
    OPT_NDF,
    OPT_DATA_DIR,
    OPT_SYNTHETIC,
    OPT_BATCH,
    OPT_STEPS,
    OPT_EPOCHS,
    OPT_LR,
    OPT_BETA1,
    OPT_BETA2,
    OPT_SEED,
    OPT_BACKEND,
    OPT_ALLOCATOR,
    OPT_DEVICE,
    OPT_MEMORY_ONLY,
    OPT_ACCUM,
    OPT_CHECKPOINT,
    OPT_FP16,
    OPT_EMPTY_CACHE,
    OPT_RETAIN,
    OPT_PRELOAD,
    OPT_VARY,
    OPT_NO_ZERO_GRAD,
    OPT_EARLY_FREE,
    OPT_LOG_EVERY,
    OPT_SAMPLES,
    OPT_SAMPLES_INITIAL,
    OPT_ALLOC_LOG,
    OPT_OOM_LOG,
    OPT_HELP,
};

static const struct option long_options[] = {
    {"image-size", required_argument, 0, OPT_IMAGE_SIZE},
    {"channels", required_argument, 0, OPT_CHANNELS},
    {"nz", required_argument, 0, OPT_NZ},
    {"ngf", required_argument, 0, OPT_NGF},
    {"ndf", required_argument, 0, OPT_NDF},
    {"data-dir", required_argument, 0, OPT_DATA_DIR},
    {"synthetic", no_argument, 0, OPT_SYNTHETIC},
    {"batch", required_argument, 0, OPT_BATCH},
    {"steps", required_argument, 0, OPT_STEPS},
    {"epochs", required_argument, 0, OPT_EPOCHS},
    {"lr", required_argument, 0, OPT_LR},
    {"beta1", required_argument, 0, OPT_BETA1},
    {"beta2", required_argument, 0, OPT_BETA2},
    {"seed", required_argument, 0, OPT_SEED},
    {"backend", required_argument, 0, OPT_BACKEND},
    {"allocator", required_argument, 0, OPT_ALLOCATOR},
    {"device", required_argument, 0, OPT_DEVICE},
    {"memory-only", no_argument, 0, OPT_MEMORY_ONLY},
    {"accum-steps", required_argument, 0, OPT_ACCUM},
    {"checkpoint", no_argument, 0, OPT_CHECKPOINT},
    {"fp16", no_argument, 0, OPT_FP16},
    {"empty-cache", no_argument, 0, OPT_EMPTY_CACHE},
    {"retain-history", no_argument, 0, OPT_RETAIN},
    {"preload-dataset", no_argument, 0, OPT_PRELOAD},
    {"vary-batch", optional_argument, 0, OPT_VARY},
    {"no-zero-grad", no_argument, 0, OPT_NO_ZERO_GRAD},
    {"early-free", no_argument, 0, OPT_EARLY_FREE},
    {"log-every", required_argument, 0, OPT_LOG_EVERY},
    {"samples", required_argument, 0, OPT_SAMPLES},
    {"samples-initial", required_argument, 0, OPT_SAMPLES_INITIAL},
    {"alloc-log", required_argument, 0, OPT_ALLOC_LOG},
    {"oom-log", required_argument, 0, OPT_OOM_LOG},
    {"help", no_argument, 0, OPT_HELP},
    {0, 0, 0, 0},
};

/* Parses a whole decimal integer in [lo, hi]; -1 with a message on anything else. */
static int parse_long(const char *name, const char *s, long lo, long hi, long *out, FILE *err)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi) {
        fprintf(err, "train: --%s: '%s' is not an integer in [%ld, %ld]\n", name, s, lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

static int parse_int(const char *name, const char *s, long lo, long hi, int *out, FILE *err)
{
    long v;
    if (parse_long(name, s, lo, hi, &v, err) != 0)
        return -1;
    *out = (int)v;
    return 0;
}

static int parse_float(const char *name, const char *s, float lo, float hi, float *out, FILE *err)
{
    char *end;
    errno = 0;
    float v = strtof(s, &end);
    if (errno != 0 || end == s || *end != '\0' || !(v > lo) || !(v < hi)) {
        fprintf(err, "train: --%s: '%s' is not a number in (%g, %g)\n", name, s, lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

static int parse_vary(tr_options *o, const char *list, FILE *err)
{
    o->n_vary = 0;
    if (!list) { /* filled in by finish_vary from --batch */
        o->vary_batch[0] = -1;
        o->n_vary = 1;
        return 0;
    }
    char buf[512];
    snprintf(buf, sizeof buf, "%s", list);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        if (o->n_vary == TR_MAX_VARY) {
            fprintf(err, "train: --vary-batch: at most %d sizes\n", TR_MAX_VARY);
            return -1;
        }
        if (parse_int("vary-batch", tok, 1, 1 << 20, &o->vary_batch[o->n_vary], err) != 0)
            return -1;
        o->n_vary++;
    }
    if (o->n_vary == 0) {
        fprintf(err, "train: --vary-batch: empty list\n");
        return -1;
    }
    return 0;
}

static int parse_enum(const char *name, const char *s, const char *const *names, int n, int *out,
                      FILE *err)
{
    for (int i = 0; i < n; i++)
        if (strcmp(s, names[i]) == 0) {
            *out = i;
            return 0;
        }
    fprintf(err, "train: --%s: unknown value '%s'\n", name, s);
    return -1;
}

static int parse_model_opt(tr_options *o, int c, const char *a, FILE *err)
{
    switch (c) {
    case OPT_IMAGE_SIZE:
        if (parse_int("image-size", a, 32, 256, &o->image_size, err) != 0)
            return -1;
        if ((o->image_size & (o->image_size - 1)) != 0) {
            fprintf(err, "train: --image-size: %d is not 32, 64, 128 or 256\n", o->image_size);
            return -1;
        }
        return 0;
    case OPT_CHANNELS:
        if (strcmp(a, "1") != 0 && strcmp(a, "3") != 0) {
            fprintf(err, "train: --channels: '%s' is not 1 or 3\n", a);
            return -1;
        }
        o->channels = a[0] - '0';
        return 0;
    case OPT_NZ:
        return parse_int("nz", a, 1, 100000, &o->nz, err);
    case OPT_NGF:
        return parse_int("ngf", a, 1, 100000, &o->ngf, err);
    case OPT_NDF:
        return parse_int("ndf", a, 1, 100000, &o->ndf, err);
    case OPT_DATA_DIR:
        o->data_dir = a;
        return 0;
    }
    return 1;
}

static int parse_train_opt(tr_options *o, int c, const char *a, FILE *err)
{
    static const char *const backends[] = {"auto", "cpu", "cuda"};
    static const char *const allocators[] = {"caching", "direct"};
    int v;
    switch (c) {
    case OPT_BATCH:
        return parse_int("batch", a, 1, 1 << 20, &o->batch, err);
    case OPT_STEPS:
        return parse_long("steps", a, 1, 1L << 40, &o->steps, err);
    case OPT_EPOCHS:
        return parse_int("epochs", a, 1, 1000000, &o->epochs, err);
    case OPT_LR:
        return parse_float("lr", a, 0.0f, 10.0f, &o->lr, err);
    case OPT_BETA1:
        return parse_float("beta1", a, -1e-30f, 1.0f, &o->beta1, err);
    case OPT_BETA2:
        return parse_float("beta2", a, -1e-30f, 1.0f, &o->beta2, err);
    case OPT_SEED: {
        long s;
        if (parse_long("seed", a, 0, 0x7fffffffffffffffL, &s, err) != 0)
            return -1;
        o->seed = (uint64_t)s;
        return 0;
    }
    case OPT_BACKEND:
        if (parse_enum("backend", a, backends, 3, &v, err) != 0)
            return -1;
        o->backend = (tr_backend)v;
        return 0;
    case OPT_ALLOCATOR:
        if (parse_enum("allocator", a, allocators, 2, &v, err) != 0)
            return -1;
        o->allocator = v == 0 ? GA_CACHING : GA_DIRECT;
        return 0;
    case OPT_DEVICE:
        return parse_int("device", a, 0, 1024, &o->device, err);
    case OPT_ACCUM:
        return parse_int("accum-steps", a, 1, 4096, &o->accum_steps, err);
    case OPT_LOG_EVERY:
        return parse_int("log-every", a, 1, 1 << 30, &o->log_every, err);
    }
    return 1;
}

static int parse_flag_opt(tr_options *o, int c, const char *a, FILE *err)
{
    switch (c) {
    case OPT_SYNTHETIC:
        o->synthetic = true;
        return 0;
    case OPT_MEMORY_ONLY:
        o->memory_only = true;
        return 0;
    case OPT_CHECKPOINT:
        o->checkpoint = true;
        return 0;
    case OPT_FP16:
        o->fp16 = true;
        return 0;
    case OPT_EMPTY_CACHE:
        o->empty_cache = true;
        return 0;
    case OPT_RETAIN:
        o->retain_history = true;
        return 0;
    case OPT_PRELOAD:
        o->preload_dataset = true;
        return 0;
    case OPT_VARY:
        return parse_vary(o, a, err);
    case OPT_NO_ZERO_GRAD:
        o->no_zero_grad = true;
        return 0;
    case OPT_EARLY_FREE:
        o->early_free = true;
        return 0;
    case OPT_SAMPLES:
        o->samples = a;
        return 0;
    case OPT_SAMPLES_INITIAL:
        o->samples_initial = a;
        return 0;
    case OPT_ALLOC_LOG:
        o->alloc_log = a;
        return 0;
    case OPT_OOM_LOG:
        o->oom_log = a;
        return 0;
    }
    return 1;
}

/* The default --vary-batch cycle: b/4, b/2, 3b/4, b, each minus (step % 3) images, so that
 * consecutive requests differ in size and freed blocks rarely fit the next ones. */
static void finish_vary(tr_options *o)
{
    if (o->n_vary != 1 || o->vary_batch[0] != -1)
        return;
    o->n_vary = 0;
    for (int i = 0; i < 12; i++) {
        int b = o->batch * (i % 4 + 1) / 4 - i % 3;
        o->vary_batch[o->n_vary++] = b < 1 ? 1 : b;
    }
}

int tr_options_parse(tr_options *o, int argc, char **argv, FILE *out, FILE *err)
{
    tr_options_default(o);
    optind = 1;
    opterr = 0;
    for (;;) {
        int c = getopt_long(argc, argv, "", long_options, NULL);
        if (c == -1)
            break;
        if (c == OPT_HELP) {
            tr_usage(out, argv[0]);
            return 1;
        }
        if (c == '?' || c == ':') {
            fprintf(err, "train: unknown option or missing value: %s (see --help)\n",
                    argv[optind - 1]);
            return -1;
        }
        int rc = parse_model_opt(o, c, optarg, err);
        if (rc > 0)
            rc = parse_train_opt(o, c, optarg, err);
        if (rc > 0)
            rc = parse_flag_opt(o, c, optarg, err);
        if (rc != 0)
            return -1;
    }
    if (optind < argc) {
        fprintf(err, "train: unexpected argument '%s' (see --help)\n", argv[optind]);
        return -1;
    }
    finish_vary(o);
    return 0;
}
