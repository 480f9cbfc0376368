/* render_chrome.c: --chrome FILE: Chrome trace event JSON (loads in
 * Perfetto and chrome://tracing). "C" counter tracks of allocated/reserved
 * bytes per device (the downsampled timeline), NVTX push/pop ranges as
 * "B"/"E" slices per thread and start/end ranges as async "b"/"e" events
 * (the model's NVTX events, vr_report.nvtx), OOMs and the
 * leaks at exit as "i" instant events whose call stack ("sf") is in the
 * trace's "stackFrames" dictionary (Python frames as "function (file:line)",
 * category "python"). Timestamps in microseconds since the trace's start;
 * the processes of one run (traces with one run id) on one timeline, from
 * the first one's start. */
#include "internal.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

typedef struct pass {
    FILE *f;
    bool first;
    uint32_t pid;
    uint64_t offset_ns; /* the trace's start after the first trace's, in one run */
} pass;

static void sep(pass *p)
{
    if (!p->first)
        fputs(",\n", p->f);
    p->first = false;
}

static double us(uint64_t ns)
{
    return (double)ns / 1000.0;
}

/* t_ns: ns since the trace's start. */
static void ev_head(pass *p, const char *ph, uint64_t t_ns, uint32_t tid)
{
    sep(p);
    fprintf(p->f, "{\"ph\":\"%s\",\"ts\":%.3f,\"pid\":%" PRIu32 ",\"tid\":%" PRIu32, ph,
            us(p->offset_ns + t_ns), p->pid, tid);
}

/* The earliest start of the n traces when they are the processes of one
 * run (the same run id), whose CLOCK_MONOTONIC starts then put them on one
 * timeline; UINT64_MAX for unrelated traces (each from its own start). */
static uint64_t run_start(vr_report *const *r, size_t n)
{
    uint64_t first = UINT64_MAX;
    for (size_t i = 0; i < n; i++) {
        if (!r[i]->run_id[0] || strcmp(r[i]->run_id, r[0]->run_id) || !r[i]->start_mono_ns)
            return UINT64_MAX;
        first = r[i]->start_mono_ns < first ? r[i]->start_mono_ns : first;
    }
    return first;
}

static void nvtx_event(pass *p, const vr_nvtx_event *e)
{
    if (e->ph == 'M') {
        sep(p);
        fprintf(p->f,
                "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32
                ",\"args\":{\"name\":",
                p->pid, e->tid);
        vr_json_str(p->f, e->name);
        fputs("}}", p->f);
        return;
    }
    ev_head(p, (char[]){e->ph, 0}, e->t_ns, e->tid);
    if (e->ph == 'b' || e->ph == 'e')
        fprintf(p->f, ",\"cat\":\"%s\",\"id\":\"0x%" PRIx64 "\"",
                e->capture ? "cuda_graph" : "nvtx", e->id);
    else if (e->ph == 'B')
        fputs(",\"cat\":\"nvtx\"", p->f);
    if (e->ph != 'E') {
        fputs(",\"name\":", p->f);
        vr_json_str(p->f, e->name);
    }
    fputc('}', p->f);
}

/* NVTX ranges and thread names, from the model. */
static void ranges(pass *p, const vr_report *r)
{
    for (size_t i = 0; i < r->nnvtx; i++)
        nvtx_event(p, &r->nvtx[i]);
}

/* The "sf" id of stack k (0 = none): its innermost frame. */
static void sf_field(FILE *f, uint32_t pid, size_t k, const vr_stack *st)
{
    if (st->n)
        fprintf(f, ",\"sf\":\"%" PRIu32 ".%zu.%zu\"", pid, k, st->n - 1);
}

/* One stackFrames entry per frame of stack k, root first (index n-1). */
static void stack_frames(FILE *f, bool *first, uint32_t pid, size_t k, const vr_stack *st)
{
    for (size_t i = st->n; i-- > 0;) {
        const vr_frame *fr = &st->frames[i];
        bool py = !strcmp(fr->module, VR_PYTHON_MODULE);
        char buf[64], *name;
        const char *label = vr_frame_label(fr, buf, sizeof buf);
        fprintf(f, "%s\"%" PRIu32 ".%zu.%zu\":{\"name\":", *first ? "" : ",\n", pid, k,
                st->n - 1 - i);
        *first = false;
        if (fr->file[0] && asprintf(&name, "%s (%s:%" PRIu32 ")", label,
                                    py ? vr_basename(fr->file) : fr->file, fr->line) >= 0) {
            vr_json_str(f, name);
            free(name);
        } else
            vr_json_str(f, label);
        fputs(",\"category\":", f);
        vr_json_str(f, py ? VR_PYTHON_MODULE : vr_basename(fr->module));
        if (i + 1 < st->n)
            fprintf(f, ",\"parent\":\"%" PRIu32 ".%zu.%zu\"", pid, k, st->n - 2 - i);
        fputc('}', f);
    }
}

/* Stacks are numbered: OOMs first, then leaks. */
static void stacks(FILE *f, bool *first, uint32_t pid, const vr_report *r)
{
    for (size_t i = 0; i < r->nooms; i++)
        stack_frames(f, first, pid, i, &r->ooms[i].stack);
    for (size_t i = 0; i < r->nleaks; i++)
        stack_frames(f, first, pid, r->nooms + i, &r->leaks[i].stack);
}

static void leaks(pass *p, const vr_report *r)
{
    for (size_t i = 0; i < r->nleaks; i++) {
        const vr_leak *l = &r->leaks[i];
        ev_head(p, "i", r->duration_ns, 0);
        fprintf(p->f,
                ",\"s\":\"p\",\"name\":\"leak\",\"args\":{\"bytes\":%" PRIu64
                ",\"allocations\":%" PRIu64 "}",
                l->bytes, l->count);
        sf_field(p->f, p->pid, r->nooms + i, &l->stack);
        fputc('}', p->f);
    }
    const vr_left_out *lo = &r->leaks_left_out; /* one event, no stack */
    if (lo->stacks) {
        ev_head(p, "i", r->duration_ns, 0);
        fprintf(p->f,
                ",\"s\":\"p\",\"name\":\"leak\",\"args\":{\"bytes\":%" PRIu64
                ",\"allocations\":%" PRIu64 ",\"stacks_not_listed\":%" PRIu64 "}}",
                lo->bytes, lo->count, lo->stacks);
    }
}

static void counters(pass *p, const vr_report *r)
{
    for (size_t i = 0; i < r->ndevices; i++) {
        const vr_device *d = &r->devices[i];
        for (size_t k = 0; k < d->ntimeline; k++) {
            ev_head(p, "C", d->timeline[k].t_ns, 0);
            fprintf(p->f,
                    ",\"name\":\"device %d memory\",\"args\":{\"allocated\":%" PRIu64
                    ",\"reserved\":%" PRIu64 "}}",
                    d->id, d->timeline[k].allocated, d->timeline[k].reserved);
        }
    }
    for (size_t i = 0; i < r->nooms; i++) {
        const vr_oom *o = &r->ooms[i];
        ev_head(p, "i", o->t_ns, 0);
        fprintf(p->f,
                ",\"s\":\"p\",\"name\":\"OOM (%s)\",\"args\":{\"requested_bytes\":%" PRIu64
                ",\"explanation\":",
                vr_verdict_name(o->verdict), o->requested_bytes);
        vr_json_str(p->f, o->explanation);
        fputc('}', p->f);
        sf_field(p->f, p->pid, i, &o->stack);
        fputc('}', p->f);
    }
    leaks(p, r);
}

int vr_render_chrome(FILE *out, vr_report *const *r, size_t n, const vr_options *opt)
{
    (void)opt;
    pass p = {.f = out, .first = true};
    uint64_t start = run_start(r, n);
    fputs("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n", out);
    for (size_t i = 0; i < n; i++) {
        p.pid = r[i]->pid ? r[i]->pid : (uint32_t)i + 1;
        p.offset_ns = start == UINT64_MAX ? 0 : r[i]->start_mono_ns - start;
        sep(&p);
        fprintf(out,
                "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%" PRIu32 ",\"args\":{\"name\":",
                p.pid);
        vr_json_str(out, r[i]->argc ? r[i]->argv[0] : vr_basename(r[i]->path));
        fputs("}}", out);
        counters(&p, r[i]);
        ranges(&p, r[i]);
    }
    fputs("\n],\"stackFrames\":{\n", out);
    bool first = true;
    for (size_t i = 0; i < n; i++)
        stacks(out, &first, r[i]->pid ? r[i]->pid : (uint32_t)i + 1, r[i]);
    fputs("\n}}\n", out);
    return fflush(out) == 0 && !ferror(out) ? 0 : -1;
}
