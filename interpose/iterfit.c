/* iterfit.c: growth per iteration in process, for the exit line's verdict.
 * An iteration is an NVTX push/pop range (the report's rule, report/growth.c:
 * the most frequent top-level range that completed 3 times, else the most
 * frequent range directly inside a top-level one); at each of its ends
 * the live device bytes are sampled into a running least-squares fit per
 * range name. The projection is the report's (report/model.c, fit_growth):
 * iterations + floor((room - live) / slope) + 1, room = the device's free bytes
 * at its first memory-info sample + the bytes live then. */
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
    char parent[48]; /* level 1: the top-level range it last ended in */
    uint64_t starts; /* level 0: begun */
    uint64_t n;      /* completed iterations */
    uint64_t y0;     /* live bytes at the first end (samples are centred on it) */
    uint64_t y_last; /* live bytes at the last end */
    double sx, sy, sxx, sxy, syy;
} iter_fit;

static pthread_mutex_t iter_lock = PTHREAD_MUTEX_INITIALIZER;
static iter_fit fits[ITER_LEVELS][ITER_NAMES];
static uint64_t room[VTI_MAX_DEVICES]; /* 0 until the device's first sample */

static uint64_t live_device_bytes(void)
{
    uint64_t sum = 0;
    for (int d = 0; d < VTI_MAX_DEVICES; d++) {
        vti_counters c;
        vti_counters_get(d, &c);
        sum += c.live_bytes;
    }
    return sum;
}

void vti_iter_meminfo(int device, uint64_t free_b)
{
    if (device < 0 || device >= VTI_MAX_DEVICES)
        return;
    vti_counters c;
    vti_counters_get(device, &c);
    pthread_mutex_lock(&iter_lock);
    if (!room[device])
        room[device] = free_b + c.live_bytes;
    pthread_mutex_unlock(&iter_lock);
}

/* The fit of range name in level (created), NULL when the level is full.
 * Names numbered by step share their stem's fit (vt_range_stem). */
static iter_fit *fit_of(iter_fit *level, const char *name)
{
    char key[48];
    size_t stem = vt_range_stem(name);
    snprintf(key, sizeof key, "%.*s", (int)(stem ? stem : strlen(name)), name);
    for (int i = 0; i < ITER_NAMES; i++) {
        if (!level[i].name[0]) {
            snprintf(level[i].name, sizeof level[i].name, "%s", key);
            return &level[i];
        }
        if (!strcmp(level[i].name, key))
            return &level[i];
    }
    return NULL;
}

void vti_iter_begin(const char *name)
{
    if (!name || !*name)
        return;
    pthread_mutex_lock(&iter_lock);
    iter_fit *f = fit_of(fits[0], name);
    if (f)
        f->starts++;
    pthread_mutex_unlock(&iter_lock);
}

void vti_iter_end(const char *name, int level, const char *parent)
{
    if (!name || !*name || level < 0 || level >= ITER_LEVELS)
        return;
    uint64_t y = live_device_bytes();
    pthread_mutex_lock(&iter_lock);
    iter_fit *f = fit_of(fits[level], name);
    if (f && parent) {
        size_t stem = vt_range_stem(parent);
        snprintf(f->parent, sizeof f->parent, "%.*s", (int)(stem ? stem : strlen(parent)), parent);
    }
    if (f) {
        if (!f->n)
            f->y0 = y;
        double x = (double)++f->n, v = (double)y - (double)f->y0;
        f->sx += x;
        f->sy += v;
        f->sxx += x * x;
        f->sxy += x * v;
        f->syy += v * v;
        f->y_last = y;
    }
    pthread_mutex_unlock(&iter_lock);
}

/* b bytes, rounded to a whole byte, in the one byte format (size/vsize.h). */
static void fmt_size(double b, char *out, size_t len)
{
    vsize_format(b > 0 ? (uint64_t)(b + 0.5) : 0, out, len);
}

/* "GROWING: ..." for the most frequent iteration name when it grows. */
static bool growing_line(const iter_fit *f, uint64_t rm, char *out, size_t len)
{
    double n = (double)f->n, dx = n * f->sxx - f->sx * f->sx, dy = n * f->syy - f->sy * f->sy;
    if (f->n < 3 || dx <= 0)
        return false;
    double cov = n * f->sxy - f->sx * f->sy, slope = cov / dx;
    double r2 = dy > 0 ? cov * cov / (dx * dy) : 0;
    if (slope < 1.0 || r2 < 0.8 || rm <= f->y_last)
        return false;
    /* floor + 1, as the report's fit_growth (report/model.c); the report also
     * leaves room for what the last iteration needed above its end, which
     * this fit does not see (it samples iteration ends only) */
    int64_t at = (int64_t)f->n + (int64_t)((double)(rm - f->y_last) / slope) + 1; /* q > 0 */
    char rate[32];
    fmt_size(slope, rate, sizeof rate);
    snprintf(out, len,
             "GROWING: +%s per %s (R^2 %.3f over %" PRIu64 " %ss): out of memory projected at "
             "%s %" PRId64,
             rate, f->name, r2 > 1 ? 1.0 : r2, f->n, f->name, f->name, at);
    return true;
}

/* Whether the top-level range parent began at most once (report/growth.c,
 * parent_once: a parent that repeats is the loop itself); one not counted
 * (the table full: ranges named by their step's number) is taken to. */
static bool parent_once(const char *parent)
{
    for (int i = 0; i < ITER_NAMES; i++)
        if (!strcmp(fits[0][i].name, parent))
            return fits[0][i].starts <= 1;
    return true;
}

bool vti_iter_headline(char *out, size_t len)
{
    bool ok = false;
    pthread_mutex_lock(&iter_lock);
    const iter_fit *best = NULL;
    uint64_t rm = 0;
    for (int l = 0; l < ITER_LEVELS && (!best || best->n < 3); l++) {
        best = NULL; /* the top level's when one completed 3 times */
        for (int i = 0; i < ITER_NAMES; i++)
            if (fits[l][i].name[0] && (!best || fits[l][i].n > best->n))
                best = &fits[l][i];
    }
    if (best && best->parent[0] && !parent_once(best->parent))
        best = NULL;
    for (int d = 0; d < VTI_MAX_DEVICES; d++)
        rm = room[d] > rm ? room[d] : rm;
    if (best)
        ok = growing_line(best, rm, out, len);
    pthread_mutex_unlock(&iter_lock);
    return ok;
}
