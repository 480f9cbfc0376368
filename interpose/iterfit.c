/* iterfit.c: growth per iteration in process, for the exit line's verdict.
 * An iteration is an NVTX push/pop range (the report's rule, report/growth.c:
 * the most frequent top-level range that completed 3 times, else the most
 * frequent range directly inside a top-level one); at each of its ends
 * the live device bytes are sampled into a running least-squares fit per
 * range name, the total and each device's. The projection is the report's
 * (report/model.c, project_per_device): per device, iterations +
 * floor((room - live) / slope) + 1, room = the device's free bytes at its
 * first memory-info sample + the bytes live then + what the CUDA graph
 * memory pool keeps then beyond the live graph allocations (as the
 * report's baseline since trace format 14, report/graphpool.c: 4 steps
 * early in corpus.graph_first_growth without it); the first device to run
 * out. Per device, live bytes are the device memory they take (the
 * driver's rounding, vt_driver_slack, added: a cudaMalloc per tensor
 * projected step 98 for a failure in step 63; a sampled stream-ordered
 * pool's free reserve, device_taken). */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "vsize.h"
#include "vti_internal.h"
#include "vtrace.h"

#define ITER_NAMES 8 /* per level */
#define ITER_LEVELS 2

typedef struct iter_fit {
    char name[48];
    bool stem;                       /* the stem of names numbered by step (vt_range_stem) */
    bool repeated;                   /* a stem whose numbers stopped increasing: counts no more */
    uint64_t last[VT_RANGE_NUMBERS]; /* a stem: the numbers of the last range that ended */
    int parent;      /* level 1: fits[0] index of the range it last ended in, -1 none */
    uint32_t gen;    /* bumped when the slot is given to another name (find) */
    uint64_t starts; /* level 0: begun */
    uint64_t n;      /* completed iterations */
    uint64_t y0;     /* live bytes at the first end (samples are centred on it) */
    uint64_t y_last; /* live bytes at the last end */
    double sx, sy, sxx, sxy, syy;
    /* per device: the same, centred on its first end */
    uint64_t dy0[VTI_MAX_DEVICES], dy_last[VTI_MAX_DEVICES];
    double dsy[VTI_MAX_DEVICES], dsxy[VTI_MAX_DEVICES];
    uint64_t used; /* bit d: device d held bytes at an end */
} iter_fit;

static pthread_mutex_t iter_lock = PTHREAD_MUTEX_INITIALIZER;
/* A top-level fit completed 3 times: a nested range is then never the
 * iteration (vti_iter_headline), and nested ends cost nothing more (the
 * GAN's 28 nested ranges a step added 141 k instructions a step). */
static bool top_repeats;
static iter_fit fits[ITER_LEVELS][ITER_NAMES];
static uint64_t room[VTI_MAX_DEVICES]; /* 0 until the device's first sample */

/* The device memory device's live allocations take (c: its counters): their
 * bytes and the driver's rounding (vt_driver_slack), where once its
 * stream-ordered pools were sampled their free reserve stands for the
 * rounding of the allocations they hold (vti_pool_spare; the report's
 * vr_device_overhead, report/pool.c: without it, a cudaMallocAsync run's
 * exit line projected step 16166 for a failure in step 1669). */
static uint64_t device_taken(int device, const vti_counters *c)
{
    uint64_t spare;
    if (!vti_pool_spare(device, &spare))
        return c->live_bytes + c->slack_bytes;
    return c->live_bytes + c->slack_bytes - c->slack_pool_bytes + spare;
}

/* Each device's live bytes into y, in the device memory they take
 * (device_taken: what fills the device, for the per-device projection),
 * bit d of *held set when device d holds some; the sum of their bytes (the
 * headline's growth). */
static uint64_t live_device_bytes(uint64_t y[VTI_MAX_DEVICES], uint64_t *held)
{
    uint64_t sum = 0;
    *held = 0;
    for (int d = 0; d < VTI_MAX_DEVICES; d++) {
        vti_counters c;
        vti_counters_get(d, &c);
        y[d] = device_taken(d, &c);
        sum += c.live_bytes;
        *held |= c.live_bytes ? 1ull << d : 0;
    }
    return sum;
}

void vti_iter_meminfo(int device, uint64_t free_b, uint64_t graph_b)
{
    if (device < 0 || device >= VTI_MAX_DEVICES)
        return;
    vti_counters c;
    vti_counters_get(device, &c);
    uint64_t taken = device_taken(device, &c);
    pthread_mutex_lock(&iter_lock);
    if (!room[device])
        room[device] = free_b + taken + (graph_b > c.graph_bytes ? graph_b - c.graph_bytes : 0);
    pthread_mutex_unlock(&iter_lock);
}

/* Whether fit f of level holds a one-off range: begun once (level 0) and
 * completed once, so never an iteration; its slot may go to another name. */
static bool one_off(const iter_fit *level, const iter_fit *f)
{
    return f->n == 1 && (level != fits[0] || f->starts <= 1);
}

/* Slot f of level given to a new name: cleared, its generation bumped (an
 * end in flight for the old name is dropped: vti_iter_end), and the nested
 * fits inside it (level 0) no longer inside anything. */
static void reuse(iter_fit *level, iter_fit *f)
{
    uint32_t gen = f->gen + 1;
    memset(f, 0, sizeof *f);
    f->gen = gen;
    for (int j = 0; level == fits[0] && j < ITER_NAMES; j++)
        if (fits[1][j].parent == (int)(f - fits[0]))
            fits[1][j].parent = -1;
}

/* The fit named by the first len bytes of name (a stem or not) in level,
 * created (past ITER_NAMES in the place of a one-off range's in the second
 * half of the table: a program's phases before its loop, "load_data",
 * "warmup", ...; until session 26 the first 8 names stayed, and after 8
 * such phases the exit line had no growth. The first half stays as it
 * was filled: with more names in each step than the table holds, every
 * name would otherwise make way for the next before its second end); NULL
 * when no slot may be given. */
static iter_fit *find(iter_fit *level, const char *name, size_t len, bool stem)
{
    size_t n = len < sizeof level[0].name ? len : sizeof level[0].name - 1;
    iter_fit *slot = NULL;
    for (int i = 0; i < ITER_NAMES && !slot; i++) {
        if (!level[i].name[0])
            slot = &level[i];
        else if (level[i].stem == stem && !strncmp(level[i].name, name, n) && !level[i].name[n])
            return &level[i];
    }
    for (int i = ITER_NAMES / 2; i < ITER_NAMES && !slot; i++) /* the first half stays */
        if (one_off(level, &level[i]))
            reuse(level, slot = &level[i]);
    if (!slot)
        return NULL;
    memcpy(slot->name, name, n);
    slot->name[n] = '\0';
    slot->stem = stem;
    slot->parent = -1;
    return slot;
}

/* The fit range name counts in: its stem's while the stem's numbers keep
 * increasing (ended: this one's number is checked against the last; one
 * not above it ends the stem's counting), else its own. The report's rule
 * (report/state.c, vr_range_end_key). */
static iter_fit *fit_of(iter_fit *level, const char *name, bool ended)
{
    char stem[sizeof level[0].name];
    size_t n = vt_range_stem(name, stem, sizeof stem);
    iter_fit *f = n ? find(level, stem, strlen(stem), true) : NULL;
    if (f && !f->repeated) {
        uint64_t num[VT_RANGE_NUMBERS];
        if (!ended)
            return f;
        vt_range_numbers(name, num);
        if (!f->n || vt_range_numbers_cmp(num, f->last) > 0) {
            memcpy(f->last, num, sizeof f->last);
            return f;
        }
        f->repeated = true;
    }
    return find(level, name, strlen(name), false);
}

void vti_iter_begin(const char *name)
{
    /* the starts only decide nested fits, which cost nothing once a top-level
     * fit completed 3 times (vti_iter_end): nor do the pushes then */
    if (!name || !*name || __atomic_load_n(&top_repeats, __ATOMIC_RELAXED))
        return;
    pthread_mutex_lock(&iter_lock);
    iter_fit *f = fit_of(fits[0], name, false);
    if (f)
        f->starts++;
    pthread_mutex_unlock(&iter_lock);
}

/* One completed iteration of fit f: live device bytes y (dy: each
 * device's; held: the devices holding some) added to its fits. */
static void fit_add(iter_fit *f, uint64_t y, const uint64_t dy[VTI_MAX_DEVICES], uint64_t held)
{
    if (!f->n) {
        f->y0 = y;
        memcpy(f->dy0, dy, sizeof f->dy0);
    }
    double x = (double)++f->n, v = (double)y - (double)f->y0;
    f->sx += x;
    f->sy += v;
    f->sxx += x * x;
    f->sxy += x * v;
    f->syy += v * v;
    f->y_last = y;
    f->used |= held;
    /* a device never used adds 0 - 0 to its sums: only the used ones */
    for (uint64_t m = f->used; m; m &= m - 1) {
        int d = __builtin_ctzll(m);
        double w = (double)dy[d] - (double)f->dy0[d];
        f->dsy[d] += w;
        f->dsxy[d] += x * w;
        f->dy_last[d] = dy[d];
    }
}

/* The fit a range named name that ended at level counts in, NULL when none
 * (the level full, or a nested range inside a parent that began twice:
 * never the iteration). Under iter_lock. */
static iter_fit *ended_fit(const char *name, int level, const char *parent)
{
    iter_fit *p = level && parent && *parent ? fit_of(fits[0], parent, false) : NULL;
    if (p && p->starts > 1)
        return NULL;
    iter_fit *f = fit_of(fits[level], name, true);
    if (f && p)
        f->parent = (int)(p - fits[0]);
    return f;
}

void vti_iter_end(const char *name, int level, const char *parent)
{
    if (!name || !*name || level < 0 || level >= ITER_LEVELS)
        return;
    if (level > 0 && __atomic_load_n(&top_repeats, __ATOMIC_RELAXED))
        return;
    pthread_mutex_lock(&iter_lock);
    iter_fit *f = ended_fit(name, level, parent);
    uint32_t gen = f ? f->gen : 0;
    pthread_mutex_unlock(&iter_lock);
    if (!f)
        return;
    /* never under iter_lock: the counters take the order lock, which
     * vti_iter_meminfo's callers may hold while they take iter_lock (a
     * deadlock corpus.random_killed met once in CI: threads pushing ranges
     * while others failed allocations) */
    uint64_t dy[VTI_MAX_DEVICES], held, y = live_device_bytes(dy, &held);
    pthread_mutex_lock(&iter_lock);
    if (f->gen == gen) /* else its slot went to another name meanwhile */
        fit_add(f, y, dy, held);
    if (level == 0 && f->n >= 3 && !f->repeated)
        __atomic_store_n(&top_repeats, true, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&iter_lock);
}

/* b bytes, rounded to a whole byte, in the one byte format (size/vsize.h). */
static void fmt_size(double b, char *out, size_t len)
{
    vsize_format(b > 0 ? (uint64_t)(b + 0.5) : 0, out, len);
}

/* The first iteration after which a device of f runs out (its live bytes
 * growing at its own slope past its room; the report's project_per_device),
 * its device into *device; -1 when none does. Under iter_lock. */
static int64_t project(const iter_fit *f, double dx, int *device)
{
    double n = (double)f->n;
    int64_t best = -1;
    for (int d = 0; d < VTI_MAX_DEVICES; d++) {
        double slope = (n * f->dsxy[d] - f->sx * f->dsy[d]) / dx;
        if (!room[d] || !(slope > 0) || room[d] < f->dy_last[d])
            continue;
        /* floor + 1, as the report's project (report/model.c: a device filled
         * exactly runs out in the next iteration; a caching allocator's
         * segments fill it steps before it runs out, and the line said
         * nothing); the report also leaves room for what the last iteration
         * needed above its end, which this fit does not see (it samples
         * iteration ends only) */
        double q = (double)(room[d] - f->dy_last[d]) / slope; /* >= 0: its floor is its cast */
        if (q >= 0x1p62)
            continue;
        int64_t at = (int64_t)f->n + (int64_t)q + 1;
        if (best < 0 || at < best) {
            best = at;
            *device = d;
        }
    }
    return best;
}

/* "GROWING: ..." for the most frequent iteration name when it grows. */
static bool growing_line(const iter_fit *f, char *out, size_t len)
{
    double n = (double)f->n, dx = n * f->sxx - f->sx * f->sx, dy = n * f->syy - f->sy * f->sy;
    if (f->n < 3 || dx <= 0)
        return false;
    double cov = n * f->sxy - f->sx * f->sy, slope = cov / dx;
    double r2 = dy > 0 ? cov * cov / (dx * dy) : 0;
    int device = -1;
    int64_t at = slope >= 1.0 && r2 >= 0.8 ? project(f, dx, &device) : -1;
    if (at < 0)
        return false;
    char rate[32], on[32] = "";
    fmt_size(slope, rate, sizeof rate);
    if (f->used & (f->used - 1)) /* bytes on more than one device: say which runs out */
        snprintf(on, sizeof on, " on device %d", device);
    snprintf(out, len,
             "GROWING: +%s per %s (R^2 %.3f over %" PRIu64 " %ss): out of memory projected at "
             "%s %" PRId64 "%s",
             rate, f->name, r2 > 1 ? 1.0 : r2, f->n, f->name, f->name, at, on);
    return true;
}

/* Whether a level-1 fit's top-level parent began at most once
 * (report/growth.c, parent_once: a parent that repeats is the loop itself);
 * one not counted (the table full) is taken to. */
static bool parent_once(const iter_fit *f)
{
    return f->parent < 0 || fits[0][f->parent].starts <= 1;
}

bool vti_iter_headline(char *out, size_t len)
{
    bool ok = false;
    pthread_mutex_lock(&iter_lock);
    const iter_fit *best = NULL;
    int level = 0;
    for (; level < ITER_LEVELS; level++) {
        best = NULL; /* the top level's when one completed 3 times */
        for (int i = 0; i < ITER_NAMES; i++) {
            const iter_fit *f = &fits[level][i];
            if (f->name[0] && !f->repeated && (!best || f->n > best->n))
                best = f;
        }
        if (best && best->n >= 3)
            break;
    }
    if (level == 1 && best && !parent_once(best))
        best = NULL;
    if (best)
        ok = growing_line(best, out, len);
    pthread_mutex_unlock(&iter_lock);
    return ok;
}

void vti_iter_fork_reset(void)
{
    top_repeats = false;
    memset(fits, 0, sizeof fits);
    memset(room, 0, sizeof room);
    pthread_mutex_init(&iter_lock, NULL);
}
