/* render_text.c: the default report on stdout. Sections: summary, peak,
 * out of memory, leaks, growth, fragmentation, top sites. Several files:
 * a combined summary table, then one section per file. */
#include "internal.h"
#include "vsize.h"

#include <inttypes.h>
#include <string.h>

#define SZ(v, b) vr_format_size((v), (b), sizeof(b))
/* Frames listed of a failed allocation's call. */
#define OOM_FRAMES 8

static void print_frame(FILE *f, const vr_frame *fr, const char *indent, bool first,
                        bool short_files)
{
    char buf[64];
    fprintf(f, "%s%s %s", indent, first ? "at" : "by", vr_frame_label(fr, buf, sizeof buf));
    if (fr->file[0])
        fprintf(f, " (%s:%" PRIu32 ")", short_files ? vr_basename(fr->file) : fr->file, fr->line);
    else if (fr->module[0])
        fprintf(f, " (in %s)", vr_basename(fr->module));
    fputs(fr->inlined ? " [inlined]\n" : "\n", f);
}

/* "... 13 frames in libc10_cuda.so, libtorch_cpu.so, libtorch_python.so":
 * frames [from, to), their modules in order (the first 4 distinct). */
static void print_skipped(FILE *f, const vr_stack *st, size_t from, size_t to, const char *indent)
{
    const char *mods[4];
    size_t more, nmods = vr_fold_modules(st, from, to, mods, &more);
    fprintf(f, "%s... %zu frame%s", indent, to - from, vsize_plural(to - from));
    for (size_t k = 0; k < nmods; k++)
        fprintf(f, "%s%s", k ? ", " : " in ", mods[k]);
    if (more)
        fprintf(f, " (+%zu more modules)", more);
    fputc('\n', f);
}

void vr_print_stack(FILE *f, const vr_stack *st, const char *indent, size_t max, bool short_files)
{
    if (!st->n) {
        fprintf(f, "%s(no stack recorded)\n", indent);
        return;
    }
    size_t at = 0;
    if (vr_stack_folds_to_lead(st, max)) {
        print_frame(f, &st->frames[0], indent, true, short_files);
        print_skipped(f, st, 1, st->lead, indent);
        at = st->lead;
        max -= 1;
    }
    size_t end = at + max < st->n ? at + max : st->n;
    for (size_t i = at; i < end; i++)
        print_frame(f, &st->frames[i], indent, i == 0, short_files);
    const char *cut = st->n > end ? vr_stack_cut(st, end, st->n) : NULL;
    if (st->n > end)
        fprintf(f, "%s... %zu more frame%s%s%s\n", indent, st->n - end, vsize_plural(st->n - end),
                cut ? " including " : "", cut ? cut : "");
}

static void print_stack(FILE *f, const vr_stack *st, const char *indent, size_t max)
{
    vr_print_stack(f, st, indent, max, false);
}

/* One line per (device, kind): the JSON "accounting" numbers. Device rows
 * make the device totals; host kinds are listed apart. */
static void accounting(FILE *f, const vr_report *r)
{
    char b1[32], b2[32];
    if (r->naccounting)
        fputs("  memory by kind (peak live, leaked at exit; device totals count device, managed, "
              "vmm and array only):\n",
              f);
    for (size_t i = 0; i < r->naccounting; i++) {
        const vr_acct_row *a = &r->accounting[i];
        if (a->host)
            fprintf(f, "    host      %-16s", a->kind);
        else
            fprintf(f, "    device %-2d %-16s", a->device, a->kind);
        fprintf(f,
                " %" PRIu64 " allocation%s, %" PRIu64 " free%s, %" PRIu64 " failed, peak live %s, "
                "leaked %s in %" PRIu64 "\n",
                a->allocations, vsize_plural(a->allocations), a->frees, vsize_plural(a->frees),
                a->failed, SZ(a->peak_live_bytes, b1), SZ(a->leaked_bytes, b2),
                a->leaked_allocations);
    }
}

static void summary(FILE *f, const vr_report *r)
{
    char b1[32], b2[32], b3[32];
    fprintf(f, "== vramtrace report: %s ==\n", r->path);
    fputs("program:", f);
    for (size_t i = 0; i < r->argc; i++)
        fprintf(f, " %s", r->argv[i]);
    fprintf(f, "\n  pid %" PRIu32 " on %s, recorded by vramtrace %s, %s, %" PRIu64 " events\n",
            r->pid, r->host, r->vramtrace_version, VR_TIME(r->duration_ns), r->events);
    if (!r->has_end)
        fputs("  exit: unknown (no end-of-process record)\n", f);
    else if (r->exit_signal)
        fprintf(f, "  exit: killed by signal %d (%s)\n", r->exit_signal, r->exit_reason);
    else if (r->exit_status >= 0)
        fprintf(f, "  exit: status %d (%s)\n", r->exit_status, r->exit_reason);
    else
        fprintf(f, "  exit: %s (status not known)\n", r->exit_reason);
    for (size_t i = 0; i < r->ndevices; i++) {
        const vr_device *d = &r->devices[i];
        fprintf(f, "  device %d %s (%s): peak allocated %s at %s, peak reserved %s", d->id,
                d->name[0] ? d->name : "?", d->total_bytes ? SZ(d->total_bytes, b1) : "size ?",
                SZ(d->peak_allocated, b2), VR_TIME(d->peak_allocated_t_ns),
                SZ(d->peak_reserved, b3));
        if (d->pool_reserved_peak)
            fprintf(f, "; stream-ordered pools reserved %s at most where sampled, at %s",
                    SZ(d->pool_reserved_peak, b1), VR_TIME(d->pool_reserved_peak_t_ns));
        if (r->had_captures)
            fprintf(f, VR_CAPTURED_FMT, SZ(d->captured_at_peak, b1), SZ(d->captured_at_exit, b2));
        if (r->had_graph_memory)
            fprintf(f, VR_GRAPH_FMT, SZ(d->graph_at_peak, b1), SZ(d->graph_at_exit, b2));
        fputc('\n', f);
        if (d->ntimeline)
            fprintf(f,
                    "  " VR_MARK_TIMELINE_TEXT "%zu points, %zu hover samples (--html, --chrome)\n",
                    d->ntimeline, r->nhover);
    }
    fprintf(f,
            "  " VR_MARK_TOTALS_TEXT "%" PRIu64 ", frees: %" PRIu64 ", failed: %" PRIu64
            " (%" PRIu64 " recovered",
            r->allocations, r->frees, r->failed_allocations, r->recovered_allocations);
    if (r->error_allocations)
        fprintf(f, ", %" PRIu64 " not out of memory", r->error_allocations);
    fputs(")", f);
    if (r->free_failed_total)
        fprintf(f, ", failed frees: %" PRIu64 " (frees that freed nothing)", r->free_failed_total);
    fputc('\n', f);
    accounting(f, r);
    for (size_t i = 0; i < r->nnotes; i++)
        fprintf(f, "  note: %s\n", r->notes[i]);
}

/* vr_listed_alike_text's line for entry i of a listing (its stacks from
 * first, stride bytes apart, max frames each; other_fmt: how it names
 * the entry above)
 * after indent; nothing when none. */
static void alike(FILE *f, const char *indent, const vr_stack *first, size_t stride, size_t i,
                  size_t max, const char *other_fmt)
{
    char line[640];
    if (*vr_listed_alike_text(first, stride, i, max, other_fmt, line, sizeof line))
        fprintf(f, "%s%s\n", indent, line);
}

/* vr_more_line on a line of its own after indent; nothing when empty. */
static void more_line(FILE *f, const char *indent, size_t rest, const char *unit,
                      const vr_left_out *lo, bool by_range)
{
    char line[256];
    if (*vr_more_line(line, sizeof line, rest, unit, lo, by_range))
        fprintf(f, "%s%s\n", indent, line);
}

/* The top 3 call sites inside the dominant range at the peak. */
static void range_sites(FILE *f, const vr_report *r)
{
    char b1[32];
    if (!r->nrange_sites)
        return;
    fprintf(f, "top call sites in %s at the peak:\n", r->phases[0].range);
    for (size_t i = 0; i < r->nrange_sites && i < 3; i++) {
        const vr_site *s = &r->range_sites[i];
        fprintf(f, "  %12s %5.1f%% of the range %8" PRIu64 " allocs\n", SZ(s->bytes, b1),
                r->phases[0].bytes ? 100.0 * (double)s->bytes / (double)r->phases[0].bytes : 0.0,
                s->count);
        print_stack(f, &s->stack, "      ", 6);
        alike(f, "    ", &r->range_sites[0].stack, sizeof *s, i, 6, VR_ALIKE_ENTRY);
    }
    more_line(f, "  ", r->nrange_sites > 3 ? r->nrange_sites - 3 : 0, "sites",
              &r->range_sites_left_out, false);
}

static void peak(FILE *f, const vr_report *r, size_t top)
{
    char b1[32], b2[32];
    fprintf(f, "\n-- Peak --\npeak allocated %s at %s; peak reserved %s at %s\n",
            SZ(r->peak_allocated, b1), VR_TIME(r->peak_allocated_t_ns), SZ(r->peak_reserved, b2),
            VR_TIME(r->peak_reserved_t_ns));
    if (!r->nphases)
        return;
    fputs("by NVTX range (innermost range at allocation):\n", f);
    for (size_t i = 0; i < r->nphases && i < top; i++)
        fprintf(f, "  %12s %5.1f%% %8" PRIu64 " allocs  %s\n", SZ(r->phases[i].bytes, b1),
                r->peak_allocated ? 100.0 * (double)r->phases[i].bytes / (double)r->peak_allocated
                                  : 0.0,
                r->phases[i].count, r->phases[i].range);
    more_line(f, "  ", r->nphases > top ? r->nphases - top : 0, "NVTX ranges", &r->phases_left_out,
              true);
    range_sites(f, r);
}

static void fatal_line(FILE *f, const vr_report *r)
{
    fputs("  the last failure that was not recovered", f);
    if (vr_oom_handled(r))
        fputs("; " VR_OOM_HANDLED_TEXT, f);
    else if (r->has_end && r->exit_signal)
        fprintf(f, "; the program then died of signal %d", r->exit_signal);
    else if (r->has_end && r->exit_status > 0)
        fprintf(f, "; the program then exited with status %d", r->exit_status);
    fputc('\n', f);
}

/* The mark of the failure listed first (vr_fatal_oom): FATAL, or HANDLED
 * when the program went on past it (vr_oom_handled). */
static const char *label(const vr_report *r, bool first)
{
    return !first ? "" : vr_oom_handled(r) ? "HANDLED " : "FATAL ";
}

static void oom_entry(FILE *f, const vr_report *r, size_t i, bool fatal)
{
    char b1[32], b2[32], b3[32];
    const vr_oom *o = &r->ooms[i];
    if (o->device < 0)
        fprintf(f, "%s#%zu at %s: %s of %s of pinned host memory failed (error %d)\n",
                label(r, fatal), i + 1, VR_TIME(o->t_ns), o->api, SZ(o->requested_bytes, b1),
                o->error);
    else if (!o->free_known) /* cudaMemGetInfo failed too (vtrace.h: 0/0 if unknown) */
        fprintf(f, "%s#%zu at %s: %s of %s on device %d failed (error %d); device free unknown\n",
                label(r, fatal), i + 1, VR_TIME(o->t_ns), o->api, SZ(o->requested_bytes, b1),
                o->device, o->error);
    else
        fprintf(f, "%s#%zu at %s: %s of %s on device %d failed (error %d); device free %s of %s\n",
                label(r, fatal), i + 1, VR_TIME(o->t_ns), o->api, SZ(o->requested_bytes, b1),
                o->device, o->error, SZ(o->device_free_bytes, b2), SZ(o->device_total_bytes, b3));
    if (fatal)
        fatal_line(f, r);
    if (o->recovered)
        fputs("  recovered: the same call's retry succeeded and the program went on\n", f);
    if (o->verdict == VR_VERDICT_ERROR) /* "not out of memory: ..." */
        fprintf(f, "  %s\n", o->explanation);
    else
        fprintf(f, "  verdict: %s: %s\n", vr_verdict_name(o->verdict), o->explanation);
    vr_pool_text(f, o);
    vr_graph_pool_text(f, o);
    if (o->live_captured)
        fprintf(f,
                "  of the %s live then, %s was allocated during CUDA graph captures (kept while "
                "their graphs live)\n",
                SZ(o->live_reserved, b1), SZ(o->live_captured, b2));
    if (o->live_graph)
        fprintf(f,
                "  of the %s live then, %s was CUDA graph memory nodes' (taken by launches, "
                "held until a free node or a free outside the graph)\n",
                SZ(o->live_reserved, b1), SZ(o->live_graph, b2));
    if (o->range[0])
        fprintf(f, "  in NVTX range %s\n", o->range);
    print_stack(f, &o->stack, "    ", OOM_FRAMES);
    char line[640];
    if (*vr_oom_alike_text(r, vr_fatal_oom(r), i, OOM_FRAMES, line, sizeof line))
        fprintf(f, "  %s\n", line);
    if (o->repeat.n)
        fprintf(f, "  %s\n", vr_oom_repeats_text(r, o, line, sizeof line));
}

/* The fatal failure (vr_fatal_oom) first, then the others in time order,
 * repeats counted on the failure they repeat (vr_oom_next); numbers are the
 * failures' order in time. */
static void ooms(FILE *f, const vr_report *r, size_t top)
{
    if (r->error_allocations) /* failures of other errors are listed too */
        fprintf(f,
                "\n-- Out of memory (%zu; %" PRIu64
                " of the failed allocations not out of memory) --\n",
                r->nooms, r->error_allocations);
    else
        fprintf(f, "\n-- Out of memory (%zu) --\n", r->nooms);
    if (r->failed_allocations > r->nooms)
        fprintf(f, "(%zu of %" PRIu64 " failed allocations kept: the first ones and the latest)\n",
                r->nooms, r->failed_allocations);
    if (!r->nooms)
        fputs("no failed allocations\n", f);
    size_t fatal = vr_fatal_oom(r), covered = 0;
    for (size_t i = SIZE_MAX, shown = 0; shown < top && (i = vr_oom_next(r, fatal, i)) != SIZE_MAX;
         shown++) {
        if (shown == 1 && fatal != SIZE_MAX)
            fputs("other failed allocations, in time order:\n", f);
        oom_entry(f, r, i, i == fatal);
        covered += 1 + r->ooms[i].repeat.n;
    }
    if (r->nooms > covered)
        fprintf(f, "... %zu more\n", r->nooms - covered);
}

/* The failed free calls (freefail.c): nothing when none. */
static void free_failed(FILE *f, const vr_report *r, size_t top)
{
    if (!r->nfree_failed)
        return;
    fprintf(f, "\n-- Failed frees (%" PRIu64 ") --\n", r->free_failed_total);
    size_t covered = 0;
    char line[192];
    for (size_t i = 0, shown = 0; i < r->nfree_failed && shown < top; i++) {
        const vr_free_failed *x = &r->free_failed[i];
        if (x->repeat.of != SIZE_MAX)
            continue;
        fprintf(f, "#%zu at %s: %s(0x%" PRIx64 ") failed with error %d%s; %s\n", i + 1,
                VR_TIME(x->t_ns), x->call, x->addr, x->error, x->error_meaning, x->what);
        print_stack(f, &x->stack, "    ", 8);
        alike(f, "  ", &r->free_failed[0].stack, sizeof *x, i, 8, "#%zu");
        if (x->repeat.n)
            fprintf(f, "  %s\n", vr_free_failed_repeats_text(r, x, line, sizeof line));
        covered += 1 + x->repeat.n;
        shown++;
    }
    if (r->free_failed_total > covered)
        fprintf(f, "... %" PRIu64 " more (--json lists the first %zu)\n",
                r->free_failed_total - covered, r->nfree_failed);
}

/* "  of which ... is a caching allocator's cache" under a live-at-exit line */
static void cached_line(FILE *f, uint64_t bytes, uint64_t count)
{
    char b1[32];
    if (count)
        fprintf(f,
                "  of which %s in %" PRIu64 " allocation%s is a caching allocator's cache at exit "
                "(freed when the process ends)\n",
                SZ(bytes, b1), count, vsize_plural(count));
}

static void leaks(FILE *f, const vr_report *r, size_t top)
{
    char b1[32];
    fprintf(f, "\n-- Leaks --\n");
    if (!r->nleaks) {
        fputs("no allocation is live at exit\n", f);
        return;
    }
    const char *when = r->has_end ? "exit" : "the end of the trace";
    fprintf(f, "device memory: %s in %" PRIu64 " allocation%s %s live at %s\n",
            SZ(r->leaked_bytes, b1), r->leaked_count, vsize_plural(r->leaked_count),
            r->leaked_count == 1 ? "is" : "are", when);
    cached_line(f, r->cached_at_exit_bytes, r->cached_at_exit_count);
    if (r->host_leaked_count)
        fprintf(f,
                "host memory (pinned, registered): %s in %" PRIu64 " allocation%s %s live at %s\n",
                SZ(r->host_leaked_bytes, b1), r->host_leaked_count,
                vsize_plural(r->host_leaked_count), r->host_leaked_count == 1 ? "is" : "are", when);
    cached_line(f, r->host_cached_at_exit_bytes, r->host_cached_at_exit_count);
    for (size_t i = 0; i < r->nleaks && i < top; i++) {
        const vr_leak *l = &r->leaks[i];
        if (l->cache_of)
            fprintf(f,
                    "%" PRIu64 " bytes in %" PRIu64
                    " allocation%s %s held at exit by %s as its cache (%s memory), allocated "
                    "at:\n",
                    l->bytes, l->count, vsize_plural(l->count), l->count == 1 ? "is" : "are",
                    l->cache_of, l->kind);
        else
            fprintf(f,
                    "%" PRIu64 " bytes in %" PRIu64
                    " allocation%s %s never freed (%s memory), allocated at:\n",
                    l->bytes, l->count, vsize_plural(l->count), l->count == 1 ? "was" : "were",
                    l->kind);
        print_stack(f, &l->stack, "    ", 12);
        alike(f, "  ", &r->leaks[0].stack, sizeof *l, i, 12, VR_ALIKE_ENTRY);
    }
    more_line(f, "", r->nleaks > top ? r->nleaks - top : 0, "stacks", &r->leaks_left_out, false);
}

static void growth(FILE *f, const vr_report *r, size_t top)
{
    char b1[32], b2[32];
    fputs("\n-- Growth --\n", f);
    if (!r->iteration_kind[0]) {
        fputs("no iterations (no NVTX range nor call-site pattern repeated 3 times): growth is "
              "only measured over iterations\n",
              f);
        return;
    }
    if (r->iteration_name[0]) {
        fprintf(f, "iteration: NVTX range \"%s%s\"%s", r->iteration_name,
                r->iteration_numbered ? "<N>" : "",
                r->iteration_numbered ? " (ranges numbered by step)" : "");
        if (r->iteration_parent[0])
            fprintf(f, " (inside \"%s\", no top-level range repeats)", r->iteration_parent);
        fprintf(f, ", %" PRIu64 " iterations\n", r->iterations);
    } else {
        fprintf(f,
                "iteration: repeating call-site pattern, %" PRIu64 " iterations, each begun by\n",
                r->iterations);
        print_stack(f, &r->iteration_site, "    ", 3);
    }
    const vr_growth *t = &r->total_growth;
    char b3[40];
    fprintf(f, "total: %s/iteration (R^2 %.3f)",
            vr_format_size_signed(t->bytes_per_iteration, b3, sizeof b3), t->r2);
    if (t->projected_oom_iteration >= 0)
        fprintf(f, ", projected out of memory at iteration %" PRId64, t->projected_oom_iteration);
    if (t->projected_oom_iteration >= 0 && t->projected_oom_device >= 0)
        fprintf(f, " on device %d", t->projected_oom_device);
    fputc('\n', f);
    const vr_growth *h = &r->host_growth;
    if (h->bytes_per_iteration >= 1.0 || h->bytes_per_iteration <= -1.0)
        fprintf(f, "pinned host memory: %s/iteration (R^2 %.3f), live %s\n",
                vr_format_size_signed(h->bytes_per_iteration, b3, sizeof b3), h->r2,
                SZ(h->live_bytes, b2));
    for (size_t i = 0; i < r->ngrowth && i < top; i++) {
        const vr_growth *g = &r->growth[i];
        fprintf(f, "  %s/iteration (R^2 %.3f), live %s", SZ(vr_u64_sat(g->bytes_per_iteration), b1),
                g->r2, SZ(g->live_bytes, b2));
        if (g->projected_oom_iteration >= 0)
            fprintf(f, ", out of memory at iteration %" PRId64, g->projected_oom_iteration);
        fputc('\n', f);
        print_stack(f, &g->stack, "    ", 6);
        alike(f, "  ", &r->growth[0].stack, sizeof *g, i, 6, VR_ALIKE_ENTRY);
    }
}

static void frag(FILE *f, const vr_report *r, size_t top)
{
    char b1[32], b2[32], b3[32];
    fputs("\n-- Fragmentation (registered heaps) --\n", f);
    if (!r->nfrag) {
        fputs("no heaps registered (no NVTX Mem annotations)\n", f);
        return;
    }
    size_t shown = 0, nsamples = 0;
    const vr_frag *worst = NULL;
    for (size_t i = 0; i < r->nfrag; i++) {
        const vr_frag *x = &r->frag[i];
        if (!strcmp(x->when, "sample")) {
            nsamples++;
            continue;
        }
        if (shown++ >= top)
            continue;
        fprintf(f,
                "  at %-4s %s dev %d: reserved %s, allocated %s, largest free %s, "
                "fragmentation %.1f%%\n",
                x->when, VR_TIME(x->t_ns), x->device, SZ(x->reserved, b1), SZ(x->allocated, b2),
                SZ(x->largest_free, b3), 100.0 * x->fragmentation);
    }
    for (size_t i = 0; i < r->nfrag; i++) /* the worst of every instant measured */
        if (!worst || r->frag[i].fragmentation > worst->fragmentation)
            worst = &r->frag[i];
    fprintf(f,
            "  over time: worst %.1f%% at %s (%s; %zu samples, the peak and each OOM; reserved "
            "%s, largest free %s)\n",
            100.0 * worst->fragmentation, VR_TIME(worst->t_ns), worst->when, nsamples,
            SZ(worst->reserved, b1), SZ(worst->largest_free, b2));
    fputs("  fragmentation = 1 - largest free block / bytes free inside the registered heaps\n", f);
}

static void sites(FILE *f, const vr_report *r, size_t top)
{
    char b1[32];
    fputs("\n-- Top sites at peak --\n", f);
    for (size_t i = 0; i < r->nsites && i < top; i++) {
        const vr_site *s = &r->sites[i];
        fprintf(f, "%s (%.1f%%) in %" PRIu64 " allocation%s\n", SZ(s->bytes, b1),
                r->peak_allocated ? 100.0 * (double)s->bytes / (double)r->peak_allocated : 0.0,
                s->count, vsize_plural(s->count));
        print_stack(f, &s->stack, "    ", 8);
        alike(f, "  ", &r->sites[0].stack, sizeof *s, i, 8, VR_ALIKE_ENTRY);
    }
    more_line(f, "", r->nsites > top ? r->nsites - top : 0, "sites", &r->sites_left_out, false);
}

static void combined(FILE *f, vr_report *const *r, size_t n)
{
    char b1[32], b2[32], b3[32], b4[32];
    fprintf(f, "== vramtrace: %zu traces ==\n", n);
    fprintf(f, "%-32s %12s %12s %12s %5s %14s %s\n", "file", "peak alloc", "peak reserv", "leaked",
            "OOMs", "growth/iter", "verdicts");
    for (size_t i = 0; i < n; i++) {
        char verdicts[64] = "";
        for (size_t k = 0; k < r[i]->nooms && strlen(verdicts) < 40; k++)
            snprintf(verdicts + strlen(verdicts), sizeof verdicts - strlen(verdicts), "%s%s",
                     k ? "," : "", vr_verdict_name(r[i]->ooms[k].verdict));
        double g = r[i]->total_growth.bytes_per_iteration;
        fprintf(f, "%-32s %12s %12s %12s %5zu %14s %s\n", vr_basename(r[i]->path),
                SZ(r[i]->peak_allocated, b1), SZ(r[i]->peak_reserved, b2),
                SZ(r[i]->leaked_bytes, b3), r[i]->nooms, g > 0 ? SZ((uint64_t)g, b4) : "0",
                verdicts);
    }
    vr_batch_advice adv;
    if (vr_batch_advise(r, n, &adv)) {
        fprintf(f, "batch advice: %s\n", adv.text);
        if (adv.next_command[0])
            fprintf(f, "  next run: %s\n", adv.next_command);
    }
    fputc('\n', f);
}

/* The headline (vr_headline_of): the verdict line, its remedy, then each
 * growing site with its share and the culprit's stack. */
static void headline(FILE *f, const vr_report *r, size_t top)
{
    char b1[32];
    vr_headline h;
    vr_headline_of(r, &h);
    fprintf(f, "%s\nremedy: %s\n", h.text, h.remedy);
    for (size_t k = 0; k < h.nsites && k < top; k++) {
        fprintf(f, "  %5.1f%%  %s/%s  %s\n", 100.0 * h.sites[k].share,
                SZ(vr_u64_sat(h.sites[k].bytes_per_iteration), b1), h.iteration_name,
                h.sites[k].label);
        print_stack(f, &h.sites[k].stack, "      ", 4);
    }
    if (h.nsites > top)
        fprintf(f, "  ... %zu more growing sites\n", h.nsites - top);
    fputc('\n', f);
}

/* Top-level NVTX ranges (the iterations the timeline shades) and how many
 * NVTX events the Chrome trace has. */
static void nvtx(FILE *f, const vr_report *r)
{
    vr_nvtx_counts c = vr_nvtx_count(r);
    if (!r->nspans && !r->nnvtx)
        return;
    fputs("\n-- NVTX --\n", f);
    if (r->nspans)
        fprintf(f, VR_MARK_SPANS_TEXT "%zu spans, the first %s from %s to %s\n", r->nspans,
                r->spans[0].name, VR_TIME(r->spans[0].start_ns), VR_TIME(r->spans[0].end_ns));
    fprintf(f,
            VR_MARK_NVTX_TEXT "%zu push/pop ranges, %zu start/end ranges, %zu named threads "
                              "(--chrome shows them)\n",
            c.ranges, c.start_end, c.threads);
}

int vr_render_text(FILE *out, vr_report *const *r, size_t n, const vr_options *opt)
{
    size_t top = vr_top(opt);
    if (n > 1)
        combined(out, r, n);
    for (size_t i = 0; i < n; i++) {
        if (i)
            fputc('\n', out);
        headline(out, r[i], top);
        summary(out, r[i]);
        peak(out, r[i], top);
        ooms(out, r[i], top);
        free_failed(out, r[i], top);
        leaks(out, r[i], top);
        growth(out, r[i], top);
        frag(out, r[i], top);
        nvtx(out, r[i]);
        sites(out, r[i], top);
    }
    return fflush(out) == 0 && !ferror(out) ? 0 : -1;
}
