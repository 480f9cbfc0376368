/* batch.c: the largest batch that fits, from runs of one program at
 * different --batch (`vramtrace report A B ...`).
 *
 * Each run is a measured point: a run that completed fits (its need: the
 * peak of reserved bytes, the caching allocator's rounding, fragmentation
 * and cache included); a run that died of an OOM does not fit (its need at
 * the fatal failure: the bytes the program still held after the allocator
 * freed its cache, plus the request). Between the largest batch that
 * completed (L) and the smallest that failed (H) the need is interpolated
 * affinely (fixed + per sample) to the device's usable bytes (total - use
 * outside the recording). With completed runs only, the affine fit of the
 * two largest extrapolates. A caching allocator's reserved memory is a step
 * function of the batch (it frees its cache and retries near the limit), so
 * an extrapolation is only an estimate until a run confirms it: the advice
 * names the next batch to record until L + 1 is known to fail. */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

/* The options that give a program's batch size: this project's trainer
 * (--batch), PyTorch's examples (--batch-size), argparse's underscored
 * spelling, Hugging Face's Trainer (--per_device_train_batch_size) and
 * accelerate's examples (--train_batch_size). The one list of
 * vr_argv_batch and vr_batch_command. */
static const char *const batch_opts[] = {
    "--batch",
    "--batch-size",
    "--batch_size",
    "--per_device_train_batch_size",
    "--per-device-train-batch-size",
    "--train_batch_size",
    "--train-batch-size",
};

/* Whether arg is a batch option: "--OPT" (its value is the next argument:
 * *value NULL) or "--OPT=VALUE" (*value points at VALUE). */
static bool batch_opt(const char *arg, const char **value)
{
    for (size_t k = 0; arg && k < sizeof batch_opts / sizeof batch_opts[0]; k++) {
        size_t n = strlen(batch_opts[k]);
        if (!strncmp(arg, batch_opts[k], n) && (arg[n] == '\0' || arg[n] == '=')) {
            *value = arg[n] ? arg + n + 1 : NULL;
            return true;
        }
    }
    return false;
}

int64_t vr_argv_batch(const char *const *argv, size_t argc)
{
    for (size_t i = 0; argv && i < argc; i++) {
        const char *v;
        if (!batch_opt(argv[i], &v))
            continue;
        if (!v && i + 1 < argc)
            v = argv[i + 1];
        if (v) {
            char *end;
            long long b = strtoll(v, &end, 10);
            if (end != v && *end == '\0' && b > 0)
                return b;
        }
    }
    return -1;
}

typedef struct run_point {
    const vr_report *r;
    int64_t batch;
    bool fits;
    int32_t device; /* a failed run's failing device; -1 for a completed run */
    uint64_t need;  /* a failed run's need there, bytes (see the file comment) */
    int64_t bound;  /* the run's own upper bound (failed runs), -1 none */
} run_point;

static const vr_device *sized_device(const vr_report *r, int32_t id)
{
    for (size_t i = 0; i < r->ndevices; i++)
        if (r->devices[i].total_bytes && (id < 0 || r->devices[i].id == id))
            return &r->devices[i];
    return NULL;
}

/* A run's point; false when it tells nothing (no --batch, no device size,
 * or it ended for another reason than an OOM). */
static bool point_of(const vr_report *r, run_point *p)
{
    size_t fatal = vr_fatal_oom(r);
    *p = (run_point){.r = r, .batch = vr_argv_batch(r->argv, r->argc), .device = -1, .bound = -1};
    if (p->batch <= 0 || !sized_device(r, -1))
        return false;
    if (fatal != SIZE_MAX) {
        const vr_oom *o = &r->ooms[fatal];
        p->device = o->device;
        p->need = o->live_reserved + o->requested_bytes;
        if (!strcmp(o->batch_kind, "upper_bound"))
            p->bound = o->max_batch;
        return true;
    }
    p->fits = r->has_end && r->exit_status == 0 && r->exit_signal == 0;
    return p->fits;
}

/* A run's need on device dev (bytes: a completed run's peak reserved there,
 * a failed run's need if it failed there) and the device's usable bytes
 * (total - use outside the recording). Each device is weighed against its
 * own room: a data-parallel step's bytes on two devices never against one.
 * False when the run tells nothing of dev. */
static bool need_on(const run_point *p, int32_t dev, uint64_t *need, uint64_t *usable)
{
    const vr_device *d = sized_device(p->r, dev);
    if (!d || (!p->fits && p->device != dev))
        return false;
    *need = p->fits ? d->peak_reserved : p->need;
    *usable = d->total_bytes > d->baseline_bytes ? d->total_bytes - d->baseline_bytes : 0;
    return true;
}

/* The batch where the line through (b0, n0) and (b1, n1) reaches usable. */
static int64_t affine_cross(int64_t b0, uint64_t n0, int64_t b1, uint64_t n1, uint64_t usable)
{
    double slope = ((double)n1 - (double)n0) / (double)(b1 - b0);
    if (slope <= 0)
        return -1;
    return vr_i64_sat((double)b0 + ((double)usable - (double)n0) / slope);
}

/* The batch where device dev's need, affine through runs a and b (a the
 * smaller batch), reaches its usable bytes (b's report's); -1 when either
 * run tells nothing of dev or the need does not grow. *per_sample: the
 * slope, bytes. */
static int64_t cross_on(const run_point *a, const run_point *b, int32_t dev, double *per_sample)
{
    uint64_t na, nb, ua, ub;
    if (!need_on(a, dev, &na, &ua) || !need_on(b, dev, &nb, &ub))
        return -1;
    *per_sample = ((double)nb - (double)na) / (double)(b->batch - a->batch);
    return affine_cross(a->batch, na, b->batch, nb, ub);
}

char *vr_batch_command(vr_arena *a, const char *const *argv, size_t argc, int64_t batch)
{
    char *c = vr_sprintf(a, "vramtrace run -o batch%lld.vtrace --", (long long)batch);
    for (size_t i = 0; i < argc; i++) {
        const char *arg = argv[i], *v;
        if (i && batch_opt(argv[i - 1], &v) && !v)
            arg = vr_sprintf(a, "%lld", (long long)batch);
        else if (batch_opt(arg, &v) && v)
            arg = vr_sprintf(a, "%.*s%lld", (int)(v - arg), arg, (long long)batch);
        c = vr_sprintf(a, "%s %s", c, arg);
    }
    return c;
}

/* L, H and the best points: lo = the largest completed run, lo2 the next
 * one, hi = the smallest failed run above lo. */
typedef struct bracket {
    const run_point *lo, *lo2, *hi;
    int64_t bound; /* tightest upper bound of failed runs (batch that cannot fit + ...) */
} bracket;

static bracket find_bracket(const run_point *p, size_t n)
{
    bracket b = {.bound = -1};
    for (size_t i = 0; i < n; i++) {
        if (!p[i].fits)
            continue;
        if (!b.lo || p[i].batch > b.lo->batch) {
            b.lo2 = b.lo;
            b.lo = &p[i];
        } else if (p[i].batch != b.lo->batch && (!b.lo2 || p[i].batch > b.lo2->batch)) {
            b.lo2 = &p[i];
        }
    }
    for (size_t i = 0; i < n; i++) {
        if (p[i].fits)
            continue;
        if ((!b.lo || p[i].batch > b.lo->batch) && (!b.hi || p[i].batch < b.hi->batch))
            b.hi = &p[i];
        if (p[i].bound >= 0 && (b.bound < 0 || p[i].bound < b.bound))
            b.bound = p[i].bound;
    }
    return b;
}

static void advise_failed_only(vr_arena *a, const bracket *b, vr_batch_advice *out)
{
    int64_t cap = b->hi->batch - 1;
    if (b->bound >= 0 && b->bound < cap)
        cap = b->bound;
    out->kind = "upper_bound";
    out->batch = cap;
    out->next = cap / 2 > 0 ? cap / 2 : 1;
    out->text = vr_sprintf(a,
                           "no run completed: batches above %lld cannot fit (an upper bound, not "
                           "a batch known to fit); record a run at a smaller batch",
                           (long long)cap);
}

/* "device N" when the run used more than one device of known size, else
 * "the device". */
static const char *the_device(vr_arena *a, const vr_report *r, int32_t dev)
{
    size_t n = 0;
    for (size_t i = 0; i < r->ndevices; i++)
        n += r->devices[i].total_bytes != 0;
    return n > 1 && dev >= 0 ? vr_sprintf(a, "device %d", dev) : "the device";
}

/* The smallest crossing over the devices of lo's run (the first device to
 * run out), extrapolated from lo2 and lo; -1 when no device's need grows. */
static int64_t first_to_run_out(const bracket *b, int32_t *dev, double *per_sample)
{
    int64_t best = -1;
    const vr_report *r = b->lo->r;
    for (size_t i = 0; i < r->ndevices; i++) {
        double slope = 0;
        int64_t e = cross_on(b->lo2, b->lo, r->devices[i].id, &slope);
        if (e >= 0 && (best < 0 || e < best)) {
            best = e;
            *dev = r->devices[i].id;
            *per_sample = slope;
        }
    }
    return best;
}

/* lo fits and tells nothing beyond it (why: the rest of the sentence):
 * measured, and a run at twice its batch next. */
static void measured_only(vr_arena *a, const run_point *lo, const char *why, vr_batch_advice *out)
{
    out->kind = "measured";
    out->batch = lo->batch;
    out->next = lo->batch * 2;
    out->text = vr_sprintf(a, "batch %lld fits (measured); %s: record a run at %lld",
                           (long long)lo->batch, why, (long long)out->next);
}

static void advise_completed_only(vr_arena *a, const bracket *b, vr_batch_advice *out)
{
    const run_point *lo = b->lo;
    out->fits = lo->batch;
    if (!b->lo2) {
        measured_only(a, lo, "one completed run gives no per-sample cost", out);
        return;
    }
    double slope = 0;
    int64_t e = first_to_run_out(b, &out->device, &slope);
    if (e < 0) {
        measured_only(a, lo,
                      vr_sprintf(a,
                                 "the step peaks of the runs at %lld and %lld do not grow "
                                 "with the batch",
                                 (long long)b->lo2->batch, (long long)lo->batch),
                      out);
        return;
    }
    out->kind = e > lo->batch ? "estimate" : "measured";
    out->batch = e > lo->batch ? e : lo->batch;
    out->next = e > lo->batch ? e : -1;
    out->text = vr_sprintf(
        a,
        "batch %lld fits (measured); the affine fit of the step peaks of the runs at %lld and "
        "%lld (%s per sample) reaches %s at about %lld%s",
        (long long)lo->batch, (long long)b->lo2->batch, (long long)lo->batch,
        vr_format_size((uint64_t)slope, (char[32]){0}, 32), the_device(a, lo->r, out->device),
        (long long)out->batch,
        e > lo->batch ? " (an estimate until a run confirms it: the allocator's reserved memory "
                        "is a step function of the batch)"
                      : "");
}

static void advise_between(vr_arena *a, const bracket *b, vr_batch_advice *out)
{
    const run_point *lo = b->lo, *hi = b->hi;
    double slope = 0;
    int64_t e = cross_on(lo, hi, hi->device, &slope); /* the device the larger batch failed on */
    out->device = hi->device;
    if (e < 0)
        e = lo->batch + (hi->batch - lo->batch) / 2;
    if (e >= hi->batch)
        e = hi->batch - 1;
    if (e < lo->batch)
        e = lo->batch;
    out->fits = lo->batch;
    out->fails = hi->batch;
    out->batch = e;
    if (e == lo->batch && hi->batch == lo->batch + 1) {
        out->kind = "measured";
        out->text = vr_sprintf(a,
                               "the largest batch that fits is %lld (measured: it completed, "
                               "and %lld failed)",
                               (long long)lo->batch, (long long)hi->batch);
        return;
    }
    if (e == lo->batch) {
        out->kind = "measured";
        out->text =
            vr_sprintf(a,
                       "batch %lld fits (measured) and %lld fails; the need interpolated "
                       "between them already reaches %s at %lld, so %lld is "
                       "advised (batches %lld to %lld are not measured)",
                       (long long)lo->batch, (long long)hi->batch, the_device(a, lo->r, hi->device),
                       (long long)lo->batch, (long long)lo->batch, (long long)lo->batch + 1,
                       (long long)hi->batch - 1);
        return;
    }
    out->kind = "estimate";
    out->next = e;
    out->text = vr_sprintf(
        a,
        "batch %lld fits and %lld fails (measured); between them the need (fixed + per sample: "
        "the completed run's peak reserved, the failed run's bytes held at its fatal failure + "
        "the request) reaches %s at about %lld (an estimate until a run confirms it)",
        (long long)lo->batch, (long long)hi->batch, the_device(a, lo->r, hi->device), (long long)e);
}

bool vr_batch_advise(vr_report *const *r, size_t n, vr_batch_advice *out)
{
    *out = (vr_batch_advice){.kind = "",
                             .batch = -1,
                             .fits = -1,
                             .fails = -1,
                             .next = -1,
                             .device = -1,
                             .text = "",
                             .next_command = ""};
    if (n < 2)
        return false;
    run_point *p = vr_xcalloc(n, sizeof(run_point));
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (!strcmp(r[i]->program, r[0]->program) && point_of(r[i], &p[m]))
            m++;
    bool distinct = false; /* the processes of one run share a batch: no advice */
    for (size_t i = 1; i < m; i++)
        distinct |= p[i].batch != p[0].batch;
    bracket b = distinct ? find_bracket(p, m) : (bracket){.bound = -1};
    vr_arena *a = r[0]->arena;
    if (b.lo && b.hi)
        advise_between(a, &b, out);
    else if (b.lo)
        advise_completed_only(a, &b, out);
    else if (b.hi)
        advise_failed_only(a, &b, out);
    const vr_report *model = b.hi ? b.hi->r : b.lo ? b.lo->r : NULL;
    if (model && out->next > 0)
        out->next_command = vr_batch_command(a, model->argv, model->argc, out->next);
    free(p);
    return out->kind[0] != '\0';
}
