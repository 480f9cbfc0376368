/* render_chrome.c: --chrome FILE: Chrome trace event JSON (loads in
 * Perfetto and chrome://tracing). "C" counter tracks of allocated/reserved
 * bytes per device (the downsampled timeline), NVTX push/pop ranges as
 * "B"/"E" slices per thread and start/end ranges as async "b"/"e" events
 * (both re-read from the trace in a second streaming pass), OOMs as "i"
 * instant events. Timestamps in microseconds since the trace's start. */
#include "internal.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

typedef struct pass {
    FILE *f;
    bool first;
    uint32_t pid;
    uint64_t t0;
    vr_map strings; /* vr_string */
    vr_map depth;   /* thread -> open push ranges (vr_counter.live) */
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

static const char *str(pass *p, uint32_t id)
{
    vr_string *s = id ? vr_map_get(&p->strings, id) : NULL;
    return s ? s->text : "(unnamed)";
}

static void ev_head(pass *p, const char *ph, uint64_t ts, uint32_t tid)
{
    sep(p);
    fprintf(p->f, "{\"ph\":\"%s\",\"ts\":%.3f,\"pid\":%" PRIu32 ",\"tid\":%" PRIu32, ph,
            us(ts > p->t0 ? ts - p->t0 : 0), p->pid, tid);
}

static void on_event(pass *p, const vt_event *ev)
{
    switch (ev->type) {
    case VT_REC_STRING: {
        vr_string *s = vr_map_put(&p->strings, ev->u.string.id, NULL);
        free(s->text);
        s->text = strdup(ev->u.string.text ? ev->u.string.text : "");
        break;
    }
    case VT_REC_THREAD:
        sep(p);
        fprintf(p->f,
                "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32
                ",\"args\":{\"name\":",
                p->pid, ev->u.thread.id);
        vr_json_str(p->f, ev->u.thread.name);
        fputs("}}", p->f);
        break;
    case VT_REC_RANGE_PUSH:
        ((vr_counter *)vr_map_put(&p->depth, ev->thread_id, NULL))->live++;
        ev_head(p, "B", ev->ts_ns, ev->thread_id);
        fputs(",\"cat\":\"nvtx\",\"name\":", p->f);
        vr_json_str(p->f, str(p, ev->u.range.name));
        fputc('}', p->f);
        break;
    case VT_REC_RANGE_POP: {
        vr_counter *d = vr_map_get(&p->depth, ev->thread_id);
        if (!d || !d->live)
            break;
        d->live--;
        ev_head(p, "E", ev->ts_ns, ev->thread_id);
        fputc('}', p->f);
        break;
    }
    case VT_REC_RANGE_START:
    case VT_REC_RANGE_END:
        ev_head(p, ev->type == VT_REC_RANGE_START ? "b" : "e", ev->ts_ns, ev->thread_id);
        fprintf(p->f, ",\"cat\":\"nvtx\",\"id\":\"0x%" PRIx64 "\",\"name\":", ev->u.range_se.id);
        vr_json_str(p->f, ev->type == VT_REC_RANGE_START ? str(p, ev->u.range_se.name) : "range");
        fputc('}', p->f);
        break;
    default:
        break;
    }
}

/* Second pass: NVTX ranges. Stops quietly at corruption (reported elsewhere). */
static void ranges(pass *p, const vr_report *r)
{
    char err[256];
    vt_reader *rd = vt_reader_open(r->path, err, sizeof err);
    if (!rd)
        return;
    p->t0 = vt_reader_header(rd)->start_mono_ns;
    vr_map_init(&p->strings, sizeof(vr_string));
    vr_map_init(&p->depth, sizeof(vr_counter));
    vt_event ev;
    while (vt_reader_next(rd, &ev) == 1)
        on_event(p, &ev);
    size_t i = 0;
    for (vr_string *s; (s = vr_map_next(&p->strings, &i));)
        free(s->text);
    vr_map_destroy(&p->strings);
    vr_map_destroy(&p->depth);
    vt_reader_close(rd);
}

static void counters(pass *p, const vr_report *r)
{
    p->t0 = 0;
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
        fputs("}}", p->f);
    }
}

int vr_render_chrome(FILE *out, vr_report *const *r, size_t n, const vr_options *opt)
{
    (void)opt;
    pass p = {.f = out, .first = true};
    fputs("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n", out);
    for (size_t i = 0; i < n; i++) {
        p.pid = r[i]->pid ? r[i]->pid : (uint32_t)i + 1;
        sep(&p);
        fprintf(out,
                "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%" PRIu32 ",\"args\":{\"name\":",
                p.pid);
        vr_json_str(out, r[i]->argc ? r[i]->argv[0] : vr_basename(r[i]->path));
        fputs("}}", out);
        counters(&p, r[i]);
        ranges(&p, r[i]);
    }
    fputs("\n]}\n", out);
    return fflush(out) == 0 && !ferror(out) ? 0 : -1;
}
