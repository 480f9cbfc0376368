/* run_report.c: several processes of one run (a launcher's children, the
 * ranks of a distributed job) in one report: which files belong together
 * (same run id in the header, trace/vtrace.h "Run naming"; which files are
 * read is the vramtrace command's choice, cli/run_files.c), the processes
 * and their devices side by side with each device summed over processes,
 * and, for each failed allocation, the memory the run's other processes
 * held on its device at that moment, by call site: what one process sees
 * as device use "outside its recording" named by the process that held it.
 *
 * Built on the report model (vr_report) and the trace reader only: the
 * other processes' live memory at a failure comes from one more streaming
 * pass over their traces, up to the failure's time (same host: one
 * CLOCK_MONOTONIC for every process). */
#include "internal.h"
#include "vsize.h"
#include "run_internal.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define SZ(v, b) vr_format_size((v), (b), sizeof(b))
#define MAX_HELD_SITES 3
#define MAX_FAILURES_PER_PROCESS 5

/* ---- the processes' headers ------------------------------------------------ */

/* The run id and clock of path's header; false when unreadable. */
typedef struct run_hdr {
    char run_id[VT_RUN_ID_LEN + 1];
    char host[256];
    uint64_t start_mono;
    uint32_t ppid;
    int64_t rank; /* -1: none */
} run_hdr;

static bool read_hdr(const char *path, run_hdr *out)
{
    char err[256];
    vt_reader *rd = vt_reader_open(path, err, sizeof err);
    memset(out, 0, sizeof *out);
    if (!rd)
        return false;
    const vt_header *h = vt_reader_header(rd);
    snprintf(out->run_id, sizeof out->run_id, "%s", vt_run_id_valid(h->run_id) ? h->run_id : "");
    snprintf(out->host, sizeof out->host, "%s", h->host);
    out->start_mono = h->start_mono_ns;
    out->ppid = h->ppid;
    out->rank = h->has_rank ? (int64_t)h->rank : -1;
    vt_reader_close(rd);
    return true;
}

/* ---- one run's processes -------------------------------------------------- */

typedef struct proc {
    const vr_report *r;
    run_hdr h;
} proc;

static void proc_label(const proc *p, char *buf, size_t len)
{
    size_t n = p->h.rank >= 0 ? (size_t)snprintf(buf, len, "rank %" PRId64 " ", p->h.rank) : 0;
    n += (size_t)snprintf(buf + n, len - n, "pid %" PRIu32 " %s", p->r->pid,
                          vr_basename(p->r->program));
    for (size_t i = 1; i < p->r->argc && n < len; i++)
        n += (size_t)snprintf(buf + n, len - n, " %s", p->r->argv[i]);
    if (n >= len && len > 4)
        strcpy(buf + len - 4, "...");
}

static void exit_text(const vr_report *r, char *buf, size_t len)
{
    if (!r->has_end)
        snprintf(buf, len, "unknown");
    else if (r->exit_signal)
        snprintf(buf, len, "signal %d", r->exit_signal);
    else if (r->exit_status >= 0)
        snprintf(buf, len, "status %d", r->exit_status);
    else
        snprintf(buf, len, "%s", r->exit_reason);
}

static void processes(FILE *f, const proc *p, size_t n)
{
    char b1[32], ex[32], label[160];
    fprintf(f, "%-44s %8s %9s %12s %5s %s\n", "process", "ppid", "allocs", "peak alloc", "OOMs",
            "exit");
    for (size_t i = 0; i < n; i++) {
        proc_label(&p[i], label, sizeof label);
        exit_text(p[i].r, ex, sizeof ex);
        fprintf(f, "%-44s %8" PRIu32 " %9" PRIu64 " %12s %5zu %s\n", label, p[i].h.ppid,
                p[i].r->allocations, SZ(p[i].r->peak_allocated, b1), p[i].r->nooms, ex);
    }
}

static const vr_device *find_device(const vr_report *r, int32_t id)
{
    for (size_t i = 0; i < r->ndevices; i++)
        if (r->devices[i].id == id)
            return &r->devices[i];
    return NULL;
}

typedef struct tpoint {
    uint64_t t;
    size_t proc;
    uint64_t bytes;
    size_t seq; /* its place before sorting: a process's two points at one time keep it */
} tpoint;

static int cmp_tpoint(const void *a, const void *b)
{
    const tpoint *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The end of the run: the latest end of its processes (ns, their clock). */
static uint64_t run_end(const proc *p, size_t n)
{
    uint64_t end = 0;
    for (size_t i = 0; i < n; i++)
        if (p[i].h.start_mono + p[i].r->duration_ns > end)
            end = p[i].h.start_mono + p[i].r->duration_ns;
    return end;
}

/* The largest sum over processes of device id's allocated bytes at one
 * moment, from the timelines (downsampled, each with its exact peak); a
 * process counts 0 after its end. A process whose end was not recorded (a
 * signal killed it, and it was not the program vramtrace run waited for)
 * ends at its last event, or, with held, at the run's end: it held its
 * memory until it died, some time between the two. Only processes of one
 * host are summed in time. */
static uint64_t peak_of_sum(const proc *p, size_t n, int32_t id, bool held)
{
    size_t np = 0, k = 0;
    uint64_t end = run_end(p, n);
    for (size_t i = 0; i < n; i++) {
        const vr_device *d = find_device(p[i].r, id);
        np += d ? d->ntimeline + 1 : 0;
    }
    tpoint *pts = vr_xcalloc(np ? np : 1, sizeof *pts);
    for (size_t i = 0; i < n; i++) {
        const vr_device *d = find_device(p[i].r, id);
        for (size_t j = 0; d && j < d->ntimeline; j++, k++)
            pts[k] =
                (tpoint){p[i].h.start_mono + d->timeline[j].t_ns, i, d->timeline[j].allocated, k};
        if (d) {
            pts[k] = (tpoint){
                (held && !p[i].r->has_end ? end : p[i].h.start_mono + p[i].r->duration_ns) + 1, i,
                0, k};
            k++;
        }
    }
    qsort(pts, k, sizeof *pts, cmp_tpoint);
    uint64_t *cur = vr_xcalloc(n, sizeof *cur), sum = 0, best = 0;
    for (size_t j = 0; j < k; j++) {
        sum = sum - cur[pts[j].proc] + pts[j].bytes;
        cur[pts[j].proc] = pts[j].bytes;
        /* at a time's last point, and before a process's second point at
         * one time (a bucket's max, then its last state: report/model.c) */
        if (j + 1 == k || pts[j + 1].t != pts[j].t || pts[j + 1].proc == pts[j].proc)
            best = sum > best ? sum : best;
    }
    free(cur);
    free(pts);
    return best;
}

static bool one_host(const proc *p, size_t n)
{
    for (size_t i = 1; i < n; i++)
        if (strcmp(p[i].h.host, p[0].h.host))
            return false;
    return true;
}

/* ---- memory of the other processes at a failure --------------------------- */

typedef struct held_alloc {
    uint64_t key; /* address (VMM handles: bit 63 set) */
    uint64_t size;
    uint32_t stack;
} held_alloc;

typedef struct held_site {
    uint64_t key; /* stack id + 1 */
    uint64_t bytes, count;
} held_site;

static uint64_t alloc_key(uint64_t addr, enum vt_api api)
{
    return api == VT_API_CU_MEM_CREATE ? vr_handle_key(addr) : addr;
}

/* Device memory of device id live in path's trace at time t (CLOCK_MONOTONIC
 * ns), grouped by stack into sites (a vr_map of held_site). Returns the
 * bytes, 0 when the trace cannot be read. */
static uint64_t held_at(const char *path, int32_t id, uint64_t t, vr_map *sites)
{
    char err[256];
    vt_reader *rd = vt_reader_open(path, err, sizeof err);
    vr_map live;
    vt_event ev;
    uint64_t total = 0;
    vr_map_init(&live, sizeof(held_alloc));
    while (rd && vt_reader_next(rd, &ev) == 1) {
        if (ev.ts_ns > t && ev.ts_ns)
            break;
        if (ev.type == VT_REC_ALLOC && ev.u.alloc.device == id &&
            !vt_kind_is_host(vt_api_get(ev.u.alloc.api)->kind)) {
            held_alloc *a = vr_map_put(&live, alloc_key(ev.u.alloc.addr, ev.u.alloc.api), NULL);
            a->size = ev.u.alloc.size;
            a->stack = ev.u.alloc.stack;
        } else if (ev.type == VT_REC_FREE) {
            vr_map_del(&live, alloc_key(ev.u.free.addr, ev.u.free.api));
        }
    }
    size_t i = 0;
    for (held_alloc *a; (a = vr_map_next(&live, &i));) {
        held_site *s = vr_map_put(sites, (uint64_t)a->stack + 1, NULL);
        s->bytes += a->size;
        s->count++;
        total += a->size;
    }
    vr_map_destroy(&live);
    if (rd)
        vt_reader_close(rd);
    return total;
}

/* The symbolized stack of id among the stacks r's tables hold, or NULL. */
static const vr_stack *known_stack(const vr_report *r, uint32_t id)
{
    for (size_t i = 0; i < r->nsites; i++)
        if (r->sites[i].stack.id == id)
            return &r->sites[i].stack;
    for (size_t i = 0; i < r->nleaks; i++)
        if (r->leaks[i].stack.id == id)
            return &r->leaks[i].stack;
    for (size_t i = 0; i < r->nooms; i++)
        for (size_t k = 0; k < r->ooms[i].ntop_sites; k++)
            if (r->ooms[i].top_sites[k].stack.id == id)
                return &r->ooms[i].top_sites[k].stack;
    for (size_t i = 0; i < r->ngrowth; i++)
        if (r->growth[i].stack.id == id)
            return &r->growth[i].stack;
    return NULL;
}

/* The largest sites of a held_site map, up to MAX_HELD_SITES, largest first. */
static size_t top_held(const vr_map *sites, held_site *out)
{
    size_t n = 0, i = 0;
    for (const held_site *s; (s = vr_map_next(sites, &i));) {
        size_t k = n < MAX_HELD_SITES ? n++ : MAX_HELD_SITES;
        if (k == MAX_HELD_SITES && s->bytes <= out[k - 1].bytes)
            continue;
        if (k == MAX_HELD_SITES)
            k--;
        while (k > 0 && out[k - 1].bytes < s->bytes) {
            out[k] = out[k - 1];
            k--;
        }
        out[k] = *s;
    }
    return n;
}

/* ---- the run's model: what both renderers show ----------------------------- */

typedef struct held {
    size_t proc; /* index of the holding process */
    uint64_t bytes;
    held_site sites[MAX_HELD_SITES]; /* largest first */
    size_t nsites;
} held;

typedef struct failure {
    size_t proc; /* index of the failing process */
    const vr_oom *o;
    held *held; /* other processes holding memory on its device then */
    size_t nheld;
} failure;

typedef struct devrow {
    int32_t id;
    uint64_t sum_of_peaks, peak_of_sum;
    uint64_t peak_of_sum_held; /* with the processes of unknown end held to the run's end */
} devrow;

typedef struct run_model {
    const proc *p;
    size_t n;
    bool one_host; /* peak_of_sum is known */
    devrow dev[64];
    size_t ndev;
    failure *fail;
    size_t nfail;
} run_model;

static void model_devices(run_model *m)
{
    for (size_t i = 0; i < m->n; i++)
        for (size_t j = 0; j < m->p[i].r->ndevices; j++) {
            const vr_device *d = &m->p[i].r->devices[j];
            size_t k = 0;
            while (k < m->ndev && m->dev[k].id != d->id)
                k++;
            if (k == m->ndev && m->ndev == 64)
                continue;
            if (k == m->ndev)
                m->dev[m->ndev++] = (devrow){.id = d->id};
            m->dev[k].sum_of_peaks += d->peak_allocated;
        }
    for (size_t k = 0; k < m->ndev && m->one_host; k++) {
        m->dev[k].peak_of_sum = peak_of_sum(m->p, m->n, m->dev[k].id, false);
        m->dev[k].peak_of_sum_held = peak_of_sum(m->p, m->n, m->dev[k].id, true);
    }
}

/* What the other processes of the same host held on o's device at o. */
static void model_held(const run_model *m, failure *fl)
{
    uint64_t t = m->p[fl->proc].h.start_mono + fl->o->t_ns;
    fl->held = vr_xcalloc(m->n, sizeof *fl->held);
    for (size_t q = 0; q < m->n; q++) {
        if (q == fl->proc || strcmp(m->p[q].h.host, m->p[fl->proc].h.host))
            continue;
        vr_map sites;
        vr_map_init(&sites, sizeof(held_site));
        held *h = &fl->held[fl->nheld];
        h->proc = q;
        h->bytes = held_at(m->p[q].r->path, fl->o->device, t, &sites);
        h->nsites = top_held(&sites, h->sites);
        fl->nheld += h->bytes != 0;
        vr_map_destroy(&sites);
    }
}

static void model_failures(run_model *m)
{
    size_t cap = 0;
    for (size_t i = 0; i < m->n; i++)
        cap += m->p[i].r->nooms < MAX_FAILURES_PER_PROCESS ? m->p[i].r->nooms
                                                           : MAX_FAILURES_PER_PROCESS;
    m->fail = vr_xcalloc(cap ? cap : 1, sizeof *m->fail);
    for (size_t i = 0; i < m->n; i++) {
        size_t fatal = vr_fatal_oom(m->p[i].r);
        for (size_t k = 0, j = SIZE_MAX;
             k < MAX_FAILURES_PER_PROCESS && (j = vr_oom_next(m->p[i].r, fatal, j)) != SIZE_MAX;
             k++) {
            failure *fl = &m->fail[m->nfail++];
            fl->proc = i;
            fl->o = &m->p[i].r->ooms[j];
            model_held(m, fl);
        }
    }
}

static void model_build(run_model *m, const proc *p, size_t n)
{
    memset(m, 0, sizeof *m);
    m->p = p;
    m->n = n;
    m->one_host = one_host(p, n);
    model_devices(m);
    model_failures(m);
}

static void model_free(run_model *m)
{
    for (size_t i = 0; i < m->nfail; i++)
        free(m->fail[i].held);
    free(m->fail);
}

/* The groups of r that share a run id (2 or more), each built and given to
 * fn in order of first appearance. */
static void for_each_run(vr_report *const *r, size_t n, void (*fn)(const run_model *, void *),
                         void *arg)
{
    proc *all = vr_xcalloc(n ? n : 1, sizeof *all), *grp = vr_xcalloc(n ? n : 1, sizeof *grp);
    bool *done = vr_xcalloc(n ? n : 1, sizeof *done);
    for (size_t i = 0; i < n; i++) {
        all[i].r = r[i];
        read_hdr(r[i]->path, &all[i].h);
    }
    for (size_t i = 0; i < n; i++) {
        size_t g = 0;
        for (size_t j = i; j < n && all[i].h.run_id[0] && !done[i]; j++)
            if (!done[j] && !strcmp(all[j].h.run_id, all[i].h.run_id)) {
                grp[g++] = all[j];
                done[j] = j != i;
            }
        done[i] = true;
        if (g < 2)
            continue;
        run_model m;
        model_build(&m, grp, g);
        fn(&m, arg);
        model_free(&m);
    }
    free(all);
    free(grp);
    free(done);
}

/* ---- text ---------------------------------------------------------------- */

static void text_devices(FILE *f, const run_model *m)
{
    char b1[32], b2[32];
    fputs("\npeak allocated per device and process:\n", f);
    fprintf(f, "%-8s", "device");
    for (size_t i = 0; i < m->n; i++)
        fprintf(f, " %12s%-6" PRIu32, "pid ", m->p[i].r->pid);
    fprintf(f, " %14s %14s\n", "sum of peaks", m->one_host ? "peak of sum" : "");
    for (size_t k = 0; k < m->ndev; k++) {
        fprintf(f, "%-8d", m->dev[k].id);
        for (size_t i = 0; i < m->n; i++) {
            const vr_device *d = find_device(m->p[i].r, m->dev[k].id);
            fprintf(f, " %18s", d ? SZ(d->peak_allocated, b1) : "-");
        }
        fprintf(f, " %14s", SZ(m->dev[k].sum_of_peaks, b1));
        fprintf(f, " %14s\n", m->one_host ? SZ(m->dev[k].peak_of_sum, b1) : "");
    }
    for (size_t k = 0; k < m->ndev && m->one_host; k++)
        if (m->dev[k].peak_of_sum_held > m->dev[k].peak_of_sum)
            fprintf(f,
                    "device %d: the peak of the sum is between %s and %s: a process whose end "
                    "was not recorded (exit unknown: killed) held its memory from its last "
                    "event until it died, some time before the run's end\n",
                    m->dev[k].id, SZ(m->dev[k].peak_of_sum, b1),
                    SZ(m->dev[k].peak_of_sum_held, b2));
}

static void text_site(FILE *f, const vr_report *r, const held_site *s)
{
    char b1[32], fb[64];
    const vr_stack *st = s->key > 1 ? known_stack(r, (uint32_t)(s->key - 1)) : NULL;
    fprintf(f, "      %s in %" PRIu64 " allocation%s at ", SZ(s->bytes, b1), s->count,
            vsize_plural(s->count));
    if (!st || !st->n) {
        fprintf(f, "stack #%" PRIu64 "%s\n", s->key - 1, s->key > 1 ? " (not symbolized)" : "");
        return;
    }
    for (size_t k = 0; k < st->n && k < 3; k++) {
        const vr_frame *fr = &st->frames[k];
        fprintf(f, "%s%s", k ? " <- " : "", vr_frame_label(fr, fb, sizeof fb));
        if (fr->file[0])
            fprintf(f, " (%s:%" PRIu32 ")", vr_basename(fr->file), fr->line);
    }
    fputc('\n', f);
}

static void text_failure(FILE *f, const run_model *m, const failure *fl)
{
    char b1[32], b2[32], label[160];
    const vr_oom *o = fl->o;
    proc_label(&m->p[fl->proc], label, sizeof label);
    fprintf(f, "  %s: %s of %s on device %d failed at %s (verdict %s)", label, o->api,
            SZ(o->requested_bytes, b1), o->device, VR_TIME(o->t_ns), vr_verdict_name(o->verdict));
    if (o->external_bytes)
        fprintf(f, "; %s in use outside its recording", SZ(o->external_bytes, b2));
    char rep[128];
    if (o->repeat.n) /* held below: at this failure only */
        fprintf(f, "; %s", vr_oom_repeats_text(m->p[fl->proc].r, o, rep, sizeof rep));
    fputc('\n', f);
    for (size_t h = 0; h < fl->nheld; h++) {
        const held *x = &fl->held[h];
        proc_label(&m->p[x->proc], label, sizeof label);
        fprintf(f, "    %s held %s on device %d then:\n", label, SZ(x->bytes, b1), o->device);
        for (size_t k = 0; k < x->nsites; k++)
            text_site(f, m->p[x->proc].r, &x->sites[k]);
    }
    if (!fl->nheld)
        fputs("    no other process of the run held memory on that device then\n", f);
}

static void text_run(const run_model *m, void *arg)
{
    FILE *f = arg;
    fprintf(f, "== vramtrace run %s: %zu processes ==\n", m->p[0].h.run_id, m->n);
    processes(f, m->p, m->n);
    text_devices(f, m);
    if (m->nfail)
        fputs("\nfailed allocations and the run's other processes:\n", f);
    for (size_t i = 0; i < m->nfail; i++)
        text_failure(f, m, &m->fail[i]);
    fputc('\n', f);
}

int vr_render_runs(FILE *out, vr_report *const *r, size_t n, const vr_options *opt)
{
    (void)opt;
    for_each_run(r, n, text_run, out);
    return fflush(out) == 0 && !ferror(out) ? 0 : -1;
}

/* ---- JSON ------------------------------------------------------------------ */

static void json_proc_ref(FILE *f, const proc *p)
{
    fprintf(f, "\"pid\":%" PRIu32 ",\"rank\":", p->r->pid);
    if (p->h.rank >= 0)
        fprintf(f, "%" PRId64, p->h.rank);
    else
        fputs("null", f);
}

static void json_processes(FILE *f, const run_model *m)
{
    fputs("\"processes\":[", f);
    for (size_t i = 0; i < m->n; i++) {
        const vr_report *r = m->p[i].r;
        fputs(i ? ",{" : "{", f);
        json_proc_ref(f, &m->p[i]);
        fprintf(f, ",\"ppid\":%" PRIu32 ",\"path\":", m->p[i].h.ppid);
        vr_json_str(f, r->path);
        fputs(",\"program\":", f);
        vr_json_str(f, r->program);
        fprintf(f,
                ",\"allocations\":%" PRIu64 ",\"failed_allocations\":%" PRIu64
                ",\"peak_allocated_bytes\":%" PRIu64 "}",
                r->allocations, r->failed_allocations, r->peak_allocated);
    }
    fputc(']', f);
}

static void json_devices(FILE *f, const run_model *m)
{
    fputs(",\"devices\":[", f);
    for (size_t k = 0; k < m->ndev; k++) {
        fprintf(f, "%s{\"device\":%d,\"peak_allocated_bytes\":[", k ? "," : "", m->dev[k].id);
        for (size_t i = 0, c = 0; i < m->n; i++) {
            const vr_device *d = find_device(m->p[i].r, m->dev[k].id);
            if (!d)
                continue;
            fprintf(f, "%s{", c++ ? "," : "");
            json_proc_ref(f, &m->p[i]);
            fprintf(f, ",\"bytes\":%" PRIu64 "}", d->peak_allocated);
        }
        fprintf(f, "],\"sum_of_peaks_bytes\":%" PRIu64 ",\"peak_of_sum_bytes\":",
                m->dev[k].sum_of_peaks);
        if (m->one_host)
            fprintf(f, "%" PRIu64 ",\"peak_of_sum_held_bytes\":%" PRIu64 "}", m->dev[k].peak_of_sum,
                    m->dev[k].peak_of_sum_held);
        else
            fputs("null,\"peak_of_sum_held_bytes\":null}", f);
    }
    fputc(']', f);
}

static void json_site(FILE *f, const vr_report *r, const held_site *s)
{
    const vr_stack *st = s->key > 1 ? known_stack(r, (uint32_t)(s->key - 1)) : NULL;
    fprintf(f, "{\"bytes\":%" PRIu64 ",\"count\":%" PRIu64 ",\"stack_id\":%" PRIu64, s->bytes,
            s->count, s->key - 1);
    fputs(",\"function\":", f);
    vr_json_str(f, st && st->n ? st->frames[0].function : "");
    fputs(",\"file\":", f);
    vr_json_str(f, st && st->n ? st->frames[0].file : "");
    fprintf(f, ",\"line\":%" PRIu32 "}", st && st->n ? st->frames[0].line : 0);
}

static void json_failure(FILE *f, const run_model *m, const failure *fl)
{
    const vr_oom *o = fl->o;
    fputc('{', f);
    json_proc_ref(f, &m->p[fl->proc]);
    fprintf(f,
            ",\"device\":%d,\"t_ns\":%" PRIu64 ",\"requested_bytes\":%" PRIu64
            ",\"external_bytes\":%" PRIu64 ",\"verdict\":\"%s\",\"repeats\":%zu,\"held_by\":[",
            o->device, o->t_ns, o->requested_bytes, o->external_bytes, vr_verdict_name(o->verdict),
            o->repeat.n);
    for (size_t h = 0; h < fl->nheld; h++) {
        const held *x = &fl->held[h];
        fputs(h ? ",{" : "{", f);
        json_proc_ref(f, &m->p[x->proc]);
        fprintf(f, ",\"bytes\":%" PRIu64 ",\"sites\":[", x->bytes);
        for (size_t k = 0; k < x->nsites; k++) {
            if (k)
                fputc(',', f);
            json_site(f, m->p[x->proc].r, &x->sites[k]);
        }
        fputs("]}", f);
    }
    fputs("]}", f);
}

typedef struct json_ctx {
    FILE *f;
    size_t nruns;
} json_ctx;

static void json_run(const run_model *m, void *arg)
{
    json_ctx *c = arg;
    fprintf(c->f, "%s{\"run_id\":\"%s\",", c->nruns++ ? "," : "", m->p[0].h.run_id);
    json_processes(c->f, m);
    json_devices(c->f, m);
    fputs(",\"failures\":[", c->f);
    for (size_t i = 0; i < m->nfail; i++) {
        if (i)
            fputc(',', c->f);
        json_failure(c->f, m, &m->fail[i]);
    }
    fputs("]}", c->f);
}

void vr_render_runs_json(FILE *out, vr_report *const *r, size_t n)
{
    json_ctx c = {out, 0};
    fputs(",\"runs\":[", out);
    for_each_run(r, n, json_run, &c);
    fputc(']', out);
}
