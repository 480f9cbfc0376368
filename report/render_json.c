/* render_json.c: --json FILE. One trace: one object with format
 * "vramtrace-report"; several: {"format", "version", "files": [...]}. Keys
 * are listed in docs/architecture.md ("The JSON report"). Times are ns since the trace's
 * start, sizes are bytes. */
#include "internal.h"
#include "run_internal.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

static void key(FILE *f, const char *k)
{
    vr_json_str(f, k);
    fputc(':', f);
}

/* A double with 15 significant digits, the most any double keeps through a
 * decimal round trip (DBL_DIG): a growth of 46702080 B per iteration is
 * written as such, not as 6 digits' 4.67021e+07 (20 B off). */
static void num(FILE *f, double v)
{
    if (!isfinite(v))
        v = 0;
    fprintf(f, "%.15g", v);
}

static void stack(FILE *f, const vr_stack *st)
{
    fputc('[', f);
    for (size_t i = 0; i < st->n; i++) {
        const vr_frame *fr = &st->frames[i];
        char buf[64];
        fprintf(f, "%s{", i ? "," : "");
        key(f, "function");
        vr_json_str(f, vr_frame_label(fr, buf, sizeof buf));
        fputc(',', f);
        key(f, "file");
        vr_json_str(f, fr->file);
        fprintf(f, ",\"line\":%" PRIu32 ",", fr->line);
        key(f, "module");
        vr_json_str(f, fr->module);
        fprintf(f, ",\"address\":\"0x%" PRIx64 "\",\"inlined\":%s", fr->ip,
                fr->inlined ? "true" : "false");
        /* the frame that names a stack with Python frames (vr_stack.lead) */
        if (i == st->lead && !strcmp(fr->module, VR_PYTHON_MODULE))
            fputs(",\"lead\":true", f);
        fputc('}', f);
    }
    fputc(']', f);
}

static void sites(FILE *f, const char *name, const vr_site *s, size_t n, bool ranges)
{
    fprintf(f, ",\"%s\":[", name);
    for (size_t i = 0; i < n; i++) {
        fprintf(f, "%s{\"bytes\":%" PRIu64 ",\"count\":%" PRIu64 ",", i ? "," : "", s[i].bytes,
                s[i].count);
        if (ranges) {
            key(f, "range");
            vr_json_str(f, s[i].range);
        } else {
            key(f, "stack");
            stack(f, &s[i].stack);
        }
        fputc('}', f);
    }
    fputc(']', f);
}

static void program(FILE *f, const vr_report *r)
{
    fputs(",\"program\":{\"argv\":[", f);
    for (size_t i = 0; i < r->argc; i++) {
        if (i)
            fputc(',', f);
        vr_json_str(f, r->argv[i]);
    }
    fprintf(f, "],\"pid\":%" PRIu32 ",\"ppid\":%" PRIu32 ",\"forked\":%s,", r->pid, r->ppid,
            r->forked ? "true" : "false");
    key(f, "path");
    vr_json_str(f, r->program);
    fputc(',', f);
    key(f, "host");
    vr_json_str(f, r->host);
    fputs(",\"exit\":", f);
    if (!r->has_end) {
        fputs("null", f);
    } else {
        fprintf(f, "{\"status\":%d,\"signal\":%d,", r->exit_status, r->exit_signal);
        key(f, "reason");
        vr_json_str(f, r->exit_reason);
        fputc('}', f);
    }
    fprintf(f,
            ",\"start_wall_ns\":%" PRIu64 ",\"start_mono_ns\":%" PRIu64 ",\"duration_ns\":%" PRIu64
            ",",
            r->start_wall_ns, r->start_mono_ns, r->duration_ns);
    key(f, "recorder_version");
    vr_json_str(f, r->vramtrace_version);
    fputc('}', f);
}

static void devices(FILE *f, const vr_report *r)
{
    fputs(",\"devices\":[", f);
    for (size_t i = 0; i < r->ndevices; i++) {
        const vr_device *d = &r->devices[i];
        fprintf(f, "%s{\"id\":%d,", i ? "," : "", d->id);
        key(f, "name");
        vr_json_str(f, d->name);
        fprintf(f,
                ",\"total_bytes\":%" PRIu64 ",\"peak_allocated_bytes\":%" PRIu64
                ",\"peak_allocated_time_ns\":%" PRIu64 ",\"peak_reserved_bytes\":%" PRIu64
                ",\"peak_reserved_time_ns\":%" PRIu64 ",\"pool_reserved_peak_bytes\":%" PRIu64
                ",\"pool_reserved_peak_time_ns\":%" PRIu64 ",\"captured_at_peak_bytes\":%" PRIu64
                ",\"captured_at_exit_bytes\":%" PRIu64 ",\"graph_memory_at_peak_bytes\":%" PRIu64
                ",\"graph_memory_at_exit_bytes\":%" PRIu64 ",\"timeline\":[",
                d->total_bytes, d->peak_allocated, d->peak_allocated_t_ns, d->peak_reserved,
                d->peak_reserved_t_ns, d->pool_reserved_peak, d->pool_reserved_peak_t_ns,
                d->captured_at_peak, d->captured_at_exit, d->graph_at_peak, d->graph_at_exit);
        for (size_t k = 0; k < d->ntimeline; k++)
            fprintf(f, "%s[%" PRIu64 ",%" PRIu64 ",%" PRIu64 "]", k ? "," : "", d->timeline[k].t_ns,
                    d->timeline[k].allocated, d->timeline[k].reserved);
        fputs("]}", f);
    }
    fputc(']', f);
}

static void totals(FILE *f, const vr_report *r)
{
    fprintf(f,
            ",\"totals\":{\"allocations\":%" PRIu64 ",\"frees\":%" PRIu64
            ",\"failed_allocations\":%" PRIu64 ",\"recovered_failed_allocations\":%" PRIu64
            ",\"error_failed_allocations\":%" PRIu64 ",\"peak_allocated_bytes\":%" PRIu64
            ",\"peak_time_ns\":%" PRIu64 ",\"peak_reserved_bytes\":%" PRIu64
            ",\"peak_reserved_time_ns\":%" PRIu64 ",\"leaked_bytes\":%" PRIu64
            ",\"leaked_allocations\":%" PRIu64 ",\"unknown_frees\":%" PRIu64 ",\"events\":%" PRIu64
            ",\"host_pinned_peak_bytes\":%" PRIu64 ",\"host_leaked_bytes\":%" PRIu64
            ",\"host_leaked_allocations\":%" PRIu64 ",\"cached_at_exit_bytes\":%" PRIu64
            ",\"cached_at_exit_allocations\":%" PRIu64 ",\"host_cached_at_exit_bytes\":%" PRIu64
            ",\"host_cached_at_exit_allocations\":%" PRIu64 ",\"failed_frees\":%" PRIu64 "}",
            r->allocations, r->frees, r->failed_allocations, r->recovered_allocations,
            r->error_allocations, r->peak_allocated, r->peak_allocated_t_ns, r->peak_reserved,
            r->peak_reserved_t_ns, r->leaked_bytes, r->leaked_count, r->unknown_frees, r->events,
            r->host_pinned_peak, r->host_leaked_bytes, r->host_leaked_count,
            r->cached_at_exit_bytes, r->cached_at_exit_count, r->host_cached_at_exit_bytes,
            r->host_cached_at_exit_count, r->free_failed_total);
}

/* The "accounting" section: one object per (device, kind), in the model's
 * order (device, then kind). Field names are the contract with the ledger
 * checker (tests/ledger/check_ledger.py). */
static void accounting(FILE *f, const vr_report *r)
{
    fputs(",\"accounting\":[", f);
    for (size_t i = 0; i < r->naccounting; i++) {
        const vr_acct_row *a = &r->accounting[i];
        fprintf(f, "%s{\"device\":%" PRId32 ",\"kind\":", i ? "," : "", a->device);
        vr_json_str(f, a->kind);
        fprintf(f,
                ",\"allocations\":%" PRIu64 ",\"frees\":%" PRIu64 ",\"failed\":%" PRIu64
                ",\"peak_live_bytes\":%" PRIu64 ",\"live_bytes_at_failures\":[",
                a->allocations, a->frees, a->failed, a->peak_live_bytes);
        for (size_t k = 0; k < a->nfailures; k++)
            fprintf(f, "%s%" PRIu64, k ? "," : "", a->live_bytes_at_failures[k]);
        fprintf(f, "],\"leaked_bytes\":%" PRIu64 ",\"leaked_allocations\":%" PRIu64 "}",
                a->leaked_bytes, a->leaked_allocations);
    }
    fputc(']', f);
}

static void leaks(FILE *f, const vr_report *r)
{
    fputs(",\"leaks\":[", f);
    for (size_t i = 0; i < r->nleaks; i++) {
        fprintf(f, "%s{\"bytes\":%" PRIu64 ",\"count\":%" PRIu64 ",\"kind\":", i ? "," : "",
                r->leaks[i].bytes, r->leaks[i].count);
        vr_json_str(f, r->leaks[i].kind);
        fputs(",\"cache_of\":", f);
        if (r->leaks[i].cache_of)
            vr_json_str(f, r->leaks[i].cache_of);
        else
            fputs("null", f);
        fputs(",\"stack\":", f);
        stack(f, &r->leaks[i].stack);
        fputc('}', f);
    }
    fputc(']', f);
}

/* ,"left_out":{TABLE:{stacks, bytes, allocations}} for each site table
 * (vr_left_out; zeros when nothing is left out) */
static void left_out(FILE *f, const vr_report *r)
{
    const struct {
        const char *name;
        const vr_left_out *lo;
    } t[] = {{"sites", &r->sites_left_out},
             {"phases", &r->phases_left_out},
             {"range_sites", &r->range_sites_left_out},
             {"leaks", &r->leaks_left_out}};
    fputs(",\"left_out\":{", f);
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        fprintf(f,
                "%s\"%s\":{\"stacks\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"allocations\":%" PRIu64
                "}",
                i ? "," : "", t[i].name, t[i].lo->stacks, t[i].lo->bytes, t[i].lo->count);
    fputc('}', f);
}

static void growth_obj(FILE *f, const vr_growth *g, bool with_stack)
{
    fputs("{\"bytes_per_iteration\":", f);
    num(f, g->bytes_per_iteration);
    fputs(",\"r2\":", f);
    num(f, g->r2);
    fprintf(f, ",\"sustained\":%s", g->sustained ? "true" : "false");
    fprintf(f, ",\"iterations\":%" PRIu64 ",\"live_bytes\":%" PRIu64, g->iterations, g->live_bytes);
    if (g->projected_oom_iteration >= 0)
        fprintf(f, ",\"projected_oom_iteration\":%" PRId64, g->projected_oom_iteration);
    else
        fputs(",\"projected_oom_iteration\":null", f);
    if (!with_stack && g->projected_oom_device >= 0)
        fprintf(f, ",\"projected_oom_device\":%d", g->projected_oom_device);
    else if (!with_stack)
        fputs(",\"projected_oom_device\":null", f);
    if (with_stack) {
        fputs(",\"cache_of\":", f);
        if (g->cache_of)
            vr_json_str(f, g->cache_of);
        else
            fputs("null", f);
        fputs(",\"stack\":", f);
        stack(f, &g->stack);
    }
    fputc('}', f);
}

static void growth(FILE *f, const vr_report *r)
{
    fputs(",\"iteration\":{", f);
    key(f, "range");
    vr_json_str(f, r->iteration_name);
    fputs(",\"inside\":", f);
    vr_json_str(f, r->iteration_parent);
    fprintf(f, ",\"numbered\":%s", r->iteration_numbered ? "true" : "false");
    fprintf(f, ",\"kind\":\"%s\",\"count\":%" PRIu64,
            r->iteration_kind[0] ? r->iteration_kind : "none", r->iterations);
    if (r->iteration_site.n || r->iteration_site.id) {
        fputs(",\"site\":", f);
        stack(f, &r->iteration_site);
    }
    fputs("},\"total_growth\":", f);
    growth_obj(f, &r->total_growth, false);
    fputs(",\"host_growth\":", f);
    growth_obj(f, &r->host_growth, false);
    fputs(",\"growth\":[", f);
    for (size_t i = 0; i < r->ngrowth; i++) {
        if (i)
            fputc(',', f);
        growth_obj(f, &r->growth[i], true);
    }
    fputc(']', f);
}

/* "suggested_batch": N or null, "suggested_batch_kind": "measured" |
 * "upper_bound" | null, and the measured split (bytes) when measured. */
static void suggested_batch(FILE *f, const vr_oom *o)
{
    if (o->max_batch < 0) {
        fputs("\"suggested_batch\":null,\"suggested_batch_kind\":null,", f);
        return;
    }
    fprintf(f, "\"suggested_batch\":%" PRId64 ",\"suggested_batch_kind\":\"%s\",", o->max_batch,
            o->batch_kind);
    if (!strcmp(o->batch_kind, "measured"))
        fprintf(f, "\"batch_fixed_bytes\":%" PRIu64 ",\"batch_per_sample_bytes\":%" PRIu64 ",",
                o->batch_fixed_bytes, o->batch_per_sample_bytes);
}

/* A failure's device free bytes as JSON: null when the driver could not
 * say (vr_oom.free_known). */
static const char *free_json(const vr_oom *o, char *buf, size_t len)
{
    if (!o->free_known)
        return "null";
    snprintf(buf, len, "%" PRIu64, o->device_free_bytes);
    return buf;
}

static void ooms(FILE *f, const vr_report *r)
{
    /* the last unrecovered failure, unless the program went on past it */
    size_t fatal = vr_oom_handled(r) ? SIZE_MAX : vr_fatal_oom(r);
    fputs(",\"ooms\":[", f);
    for (size_t i = 0; i < r->nooms; i++) {
        const vr_oom *o = &r->ooms[i];
        char freeb[24];
        fprintf(f,
                "%s{\"time_ns\":%" PRIu64 ",\"device\":%d,\"requested_bytes\":%" PRIu64
                ",\"error\":%d,\"device_free_bytes\":%s,\"device_total_bytes\":%" PRIu64
                ",\"live_allocated_bytes\":%" PRIu64 ",\"live_reserved_bytes\":%" PRIu64
                ",\"live_captured_bytes\":%" PRIu64 ",\"live_graph_bytes\":%" PRIu64
                ",\"outside_recording_bytes\":%" PRIu64 ",\"baseline_bytes\":%" PRIu64
                ",\"external_bytes\":%" PRIu64 ",\"rounding_bytes\":%" PRIu64
                ",\"heap_free_bytes\":%" PRIu64 ",\"heap_largest_free_bytes\":%" PRIu64
                ",\"batch\":%" PRId64 ",\"max_batch\":%" PRId64 ",\"recovered\":%s,\"fatal\":%s,",
                i ? "," : "", o->t_ns, o->device, o->requested_bytes, o->error,
                free_json(o, freeb, sizeof freeb), o->device_total_bytes, o->live_allocated,
                o->live_reserved, o->live_captured, o->live_graph,
                o->baseline_bytes + o->external_bytes, o->baseline_bytes, o->external_bytes,
                o->rounding_bytes, o->heap_free, o->heap_largest_free, o->batch, o->max_batch,
                o->recovered ? "true" : "false", i == fatal ? "true" : "false");
        suggested_batch(f, o);
        vr_pool_json(f, o);
        vr_graph_pool_json(f, o);
        fprintf(f, "\"mapping_bytes\":%" PRIu64 ",", o->mapping_bytes);
        key(f, "api");
        vr_json_str(f, o->api);
        fputc(',', f);
        key(f, "verdict");
        vr_json_str(f, vr_verdict_name(o->verdict));
        fputc(',', f);
        key(f, "explanation");
        vr_json_str(f, o->explanation);
        fputc(',', f);
        key(f, "range");
        vr_json_str(f, o->range);
        fputs(",\"stack\":", f);
        stack(f, &o->stack);
        sites(f, "top_sites", o->top_sites, o->ntop_sites, false);
        fputc('}', f);
    }
    fputc(']', f);
}

/* The failed free calls kept (freefail.c), in time order. */
static void free_failed(FILE *f, const vr_report *r)
{
    if (!r->records_failed_frees) { /* a trace before format 12: not recorded */
        fputs(",\"failed_frees\":null", f);
        return;
    }
    fputs(",\"failed_frees\":[", f);
    for (size_t i = 0; i < r->nfree_failed; i++) {
        const vr_free_failed *x = &r->free_failed[i];
        fprintf(f, "%s{\"time_ns\":%" PRIu64 ",\"call\":", i ? "," : "", x->t_ns);
        vr_json_str(f, x->call);
        fprintf(f,
                ",\"address\":\"0x%" PRIx64 "\",\"error\":%d,\"graph_node\":%s,\"what\":", x->addr,
                x->error, x->graph_node ? "true" : "false");
        vr_json_str(f, x->what);
        fputs(",\"stack\":", f);
        stack(f, &x->stack);
        fputc('}', f);
    }
    fputc(']', f);
}

static void frag(FILE *f, const vr_report *r)
{
    fputs(",\"fragmentation\":[", f);
    for (size_t i = 0; i < r->nfrag; i++) {
        const vr_frag *x = &r->frag[i];
        fprintf(f,
                "%s{\"when\":\"%s\",\"time_ns\":%" PRIu64
                ",\"device\":%d,\"reserved_bytes\":%" PRIu64 ",\"allocated_bytes\":%" PRIu64
                ",\"largest_free_bytes\":%" PRIu64 ",\"fragmentation\":",
                i ? "," : "", x->when, x->t_ns, x->device, x->reserved, x->allocated,
                x->largest_free);
        num(f, x->fragmentation);
        fputc('}', f);
    }
    fputc(']', f);
}

/* ,"range_sites":{"range": the dominant range (phases[0]), "sites":[...]} */
static void range_sites(FILE *f, const vr_report *r, size_t top)
{
    fputs("," VR_MARK_RANGE_SITES_JSON "{\"range\":", f);
    vr_json_str(f, r->nphases ? r->phases[0].range : "");
    sites(f, "sites", r->range_sites, r->nrange_sites < top ? r->nrange_sites : top, false);
    fputc('}', f);
}

/* ,"spans":[{name, start_ns, end_ns}] (top-level ranges, capped),
 * ,"nvtx":{ranges, start_end_ranges, named_threads} (the events: --chrome) */
static void nvtx(FILE *f, const vr_report *r)
{
    fputs("," VR_MARK_SPANS_JSON "[", f);
    for (size_t i = 0; i < r->nspans; i++) {
        fputs(i ? ",{\"name\":" : "{\"name\":", f);
        vr_json_str(f, r->spans[i].name);
        fprintf(f, ",\"start_ns\":%" PRIu64 ",\"end_ns\":%" PRIu64 "}", r->spans[i].start_ns,
                r->spans[i].end_ns);
    }
    vr_nvtx_counts c = vr_nvtx_count(r);
    fprintf(
        f, "]," VR_MARK_NVTX_JSON "{\"ranges\":%zu,\"start_end_ranges\":%zu,\"named_threads\":%zu}",
        c.ranges, c.start_end, c.threads);
}

static void notes(FILE *f, const vr_report *r)
{
    fprintf(f, ",\"truncated\":%s,\"notes\":[", r->truncated ? "true" : "false");
    for (size_t i = 0; i < r->nnotes; i++) {
        if (i)
            fputc(',', f);
        vr_json_str(f, r->notes[i]);
    }
    fputc(']', f);
}

/* ,"verdict":{kind, cause, text, remedy, bytes_per_iteration,
 * projected_oom_iteration, iterations, iteration_name, sites: [{label,
 * bytes_per_iteration, share, stack}]} (report.h, vr_headline) */
static void verdict(FILE *f, const vr_report *r)
{
    vr_headline h;
    vr_headline_of(r, &h);
    fputs(",\"verdict\":{\"kind\":", f);
    vr_json_str(f, h.kind);
    fputs(",\"cause\":", f);
    vr_json_str(f, h.cause);
    fputs(",\"text\":", f);
    vr_json_str(f, h.text);
    fputs(",\"remedy\":", f);
    vr_json_str(f, h.remedy);
    fputs(",\"bytes_per_iteration\":", f);
    num(f, h.bytes_per_iteration);
    fprintf(f, ",\"projected_oom_iteration\":%" PRId64 ",\"iterations\":%" PRIu64,
            h.projected_oom_iteration, h.iterations);
    fputs(",\"iteration_name\":", f);
    vr_json_str(f, h.iteration_name);
    fputs(",\"unanalysed_share\":", f);
    num(f, h.unanalysed_share);
    fputs(",\"sites\":[", f);
    for (size_t k = 0; k < h.nsites; k++) {
        fputs(k ? ",{\"label\":" : "{\"label\":", f);
        vr_json_str(f, h.sites[k].label);
        fputs(",\"bytes_per_iteration\":", f);
        num(f, h.sites[k].bytes_per_iteration);
        fputs(",\"share\":", f);
        num(f, h.sites[k].share);
        fputs(",\"stack\":", f);
        stack(f, &h.sites[k].stack);
        fputc('}', f);
    }
    fputs("]}", f);
}

static void one(FILE *f, const vr_report *r, size_t top)
{
    fputs("{\"format\":\"" VR_REPORT_FORMAT "\",\"version\":1,", f);
    key(f, "file");
    vr_json_str(f, r->path);
    verdict(f, r);
    program(f, r);
    devices(f, r);
    totals(f, r);
    accounting(f, r);
    leaks(f, r);
    growth(f, r);
    ooms(f, r);
    free_failed(f, r);
    sites(f, "sites", r->sites, r->nsites < top ? r->nsites : top, false);
    sites(f, "phases", r->phases, r->nphases, true);
    range_sites(f, r, top);
    left_out(f, r);
    nvtx(f, r);
    frag(f, r);
    notes(f, r);
    fputs("}", f);
}

/* ,"batch_advice":{...} across the runs (vr_batch_advise), when there is one */
static void batch_advice(FILE *f, vr_report *const *r, size_t n)
{
    vr_batch_advice a;
    if (!vr_batch_advise(r, n, &a))
        return;
    fputs(",\"batch_advice\":{\"kind\":", f);
    vr_json_str(f, a.kind);
    fprintf(f,
            ",\"batch\":%" PRId64 ",\"largest_completed_batch\":%" PRId64
            ",\"smallest_failed_batch\":%" PRId64 ",\"next_batch\":%" PRId64 ",\"device\":%" PRId32
            ",\"text\":",
            a.batch, a.fits, a.fails, a.next, a.device);
    vr_json_str(f, a.text);
    fputs(",\"next_command\":", f);
    vr_json_str(f, a.next_command);
    fputc('}', f);
}

int vr_render_json(FILE *out, vr_report *const *r, size_t n, const vr_options *opt)
{
    size_t top = vr_top(opt) * 10; /* JSON is for machines: more sites */
    if (n == 1) {
        one(out, r[0], top);
    } else {
        fputs("{\"format\":\"" VR_REPORT_FORMAT "\",\"version\":1,\"files\":[", out);
        for (size_t i = 0; i < n; i++) {
            if (i)
                fputc(',', out);
            one(out, r[i], top);
        }
        fputc(']', out);
        vr_render_runs_json(out, r, n); /* run_report.c */
        batch_advice(out, r, n);
        fputc('}', out);
    }
    fputc('\n', out);
    return fflush(out) == 0 && !ferror(out) ? 0 : -1;
}
