/* render_diff.c: `vramtrace diff` as text, JSON ("vramtrace-diff") and HTML.
 * Run totals first, then the call sites by change (diff.c). */
#include "internal.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

#define DIFF_FRAMES 8 /* frames shown per site in text and HTML */

#define SSIZE(d) vr_format_size_signed((d), (char[40]){0}, 40)
#define USIZE(b) vr_format_size((b), (char[32]){0}, 32)

/* Device memory leaked at exit, a caching allocator's cache aside (the
 * report's headline and check --max-leaked count it so). */
static uint64_t leaked(const vr_report *r)
{
    return r->leaked_bytes - r->cached_at_exit_bytes;
}

static double delta(uint64_t a, uint64_t b)
{
    return (double)b - (double)a;
}

static uint64_t fatal_live(const vr_report *r)
{
    size_t f = vr_fatal_oom(r);
    return f == SIZE_MAX ? 0 : r->ooms[f].live_allocated;
}

/* ---- text ------------------------------------------------------------------ */

static void text_totals(FILE *f, const vr_diff *d)
{
    const vr_report *a = d->run[0], *b = d->run[1];
    fprintf(f, "== vramtrace diff: %s -> %s ==\n", a->path, b->path);
    fprintf(f, "peak allocated   %12s -> %-12s %s\n", USIZE(a->peak_allocated),
            USIZE(b->peak_allocated), SSIZE(delta(a->peak_allocated, b->peak_allocated)));
    fprintf(f, "peak reserved    %12s -> %-12s %s\n", USIZE(a->peak_reserved),
            USIZE(b->peak_reserved), SSIZE(delta(a->peak_reserved, b->peak_reserved)));
    uint64_t la = leaked(a), lb = leaked(b);
    fprintf(f, "leaked at exit   %12s -> %-12s %s\n", USIZE(la), USIZE(lb), SSIZE(delta(la, lb)));
    double ga = a->total_growth.bytes_per_iteration, gb = b->total_growth.bytes_per_iteration;
    fprintf(f, "growth/iteration %12s -> %-12s %s\n", SSIZE(ga), SSIZE(gb), SSIZE(gb - ga));
    fprintf(f, "out-of-memory failures (unrecovered) %" PRIu64 " -> %" PRIu64 "\n",
            vr_unrecovered_ooms(a), vr_unrecovered_ooms(b));
}

/* Site i of d: its changes, its stack and, when a site listed before it
 * reads the same, the frame where their calls part (vr_listed_alike_text). */
static void text_site(FILE *f, const vr_diff *d, size_t i)
{
    const vr_diff_site *s = &d->sites[i];
    fprintf(f, "  change %s\n", USIZE(vr_u64_sat(s->change)));
    if (s->peak[0] || s->peak[1])
        fprintf(f, "    peak    %s -> %s (%s)\n", USIZE(s->peak[0]), USIZE(s->peak[1]),
                SSIZE(delta(s->peak[0], s->peak[1])));
    if (s->growth[0] != 0 || s->growth[1] != 0)
        fprintf(f, "    growth  %s -> %s per iteration\n", SSIZE(s->growth[0]),
                SSIZE(s->growth[1]));
    if (s->leaked[0] || s->leaked[1])
        fprintf(f, "    leaked  %s -> %s (%s)\n", USIZE(s->leaked[0]), USIZE(s->leaked[1]),
                SSIZE(delta(s->leaked[0], s->leaked[1])));
    if (s->oom[0] || s->oom[1])
        fprintf(f, "    at OOM  %s -> %s (%s)\n", USIZE(s->oom[0]), USIZE(s->oom[1]),
                SSIZE(delta(s->oom[0], s->oom[1])));
    vr_print_stack(f, &s->stack, "      ", DIFF_FRAMES, true);
    char line[640];
    if (*vr_listed_alike_text(&d->sites[0].stack, sizeof *s, i, DIFF_FRAMES, VR_ALIKE_ENTRY, line,
                              sizeof line))
        fprintf(f, "    %s\n", line);
}

/* One line per run and table that lists only its largest sites
 * (vr_diff.oom_partial, peak_partial, leak_partial), between pre and post
 * (plain text: no escaping). */
static void oom_notes(FILE *f, const vr_diff *d, const char *pre, const char *post)
{
    for (int k = 0; k < 2; k++) {
        const char *run = k ? "after" : "before";
        if (d->oom_partial[k])
            fprintf(f,
                    "%sat OOM %s: only the fatal failure's largest sites were kept; a site's 0 "
                    "there may be more%s",
                    pre, run, post);
        if (d->peak_partial[k])
            fprintf(f,
                    "%speak %s: %" PRIu64 " smaller stacks were not listed; a site's 0 there "
                    "may be more%s",
                    pre, run, d->run[k]->sites_left_out.stacks, post);
        if (d->leak_partial[k])
            fprintf(f,
                    "%sleaked %s: %" PRIu64 " smaller stacks were not listed; a site's 0 there "
                    "may be more%s",
                    pre, run, d->run[k]->leaks_left_out.stacks, post);
    }
}

int vr_render_diff_text(FILE *out, vr_report *const *r, size_t n, const vr_options *opt)
{
    if (n != 2)
        return -1;
    vr_diff *d = vr_diff_new(r[0], r[1]);
    text_totals(out, d);
    size_t changed = 0;
    for (size_t i = 0; i < d->nsites; i++)
        changed += d->sites[i].change > 0;
    fprintf(out,
            "\n-- Call sites by change (%zu changed of %zu; %zu only before, %zu only after) --\n",
            changed, d->nsites, d->only[0], d->only[1]);
    if (!changed)
        fputs("no call site changed\n", out);
    oom_notes(out, d, "note: ", "\n");
    size_t top = vr_top(opt);
    for (size_t i = 0; i < d->nsites && i < top && d->sites[i].change > 0; i++)
        text_site(out, d, i);
    vr_diff_free(d);
    return ferror(out) ? -1 : 0;
}

/* ---- JSON ------------------------------------------------------------------ */

static void json_stack(FILE *f, const vr_stack *st)
{
    fputc('[', f);
    for (size_t i = 0; i < st->n; i++) {
        const vr_frame *fr = &st->frames[i];
        char buf[64];
        fputs(i ? ",{\"function\":" : "{\"function\":", f);
        vr_json_str(f, vr_frame_label(fr, buf, sizeof buf));
        fputs(",\"file\":", f);
        vr_json_str(f, fr->file);
        fprintf(f, ",\"line\":%" PRIu32 ",\"module\":", fr->line);
        vr_json_str(f, fr->module);
        fputc('}', f);
    }
    fputc(']', f);
}

static void json_pair_u(FILE *f, const char *name, uint64_t a, uint64_t b)
{
    fprintf(f, "\"%s\":{\"before\":%" PRIu64 ",\"after\":%" PRIu64 ",\"delta\":%.0f}", name, a, b,
            delta(a, b));
}

static void json_pair_d(FILE *f, const char *name, double a, double b)
{
    fprintf(f, "\"%s\":{\"before\":%.17g,\"after\":%.17g,\"delta\":%.17g}", name, a, b, b - a);
}

static void json_run(FILE *f, const char *name, const vr_report *r)
{
    fprintf(f, "\"%s\":", name);
    vr_json_str(f, r->path);
    fputc(',', f);
}

static void json_totals(FILE *f, const vr_diff *d)
{
    const vr_report *a = d->run[0], *b = d->run[1];
    fputs("\"totals\":{", f);
    json_pair_u(f, "peak_allocated", a->peak_allocated, b->peak_allocated);
    fputc(',', f);
    json_pair_u(f, "peak_reserved", a->peak_reserved, b->peak_reserved);
    fputc(',', f);
    json_pair_u(f, "leaked_bytes", leaked(a), leaked(b));
    fputc(',', f);
    json_pair_d(f, "growth_bytes_per_iteration", a->total_growth.bytes_per_iteration,
                b->total_growth.bytes_per_iteration);
    fputc(',', f);
    json_pair_u(f, "unrecovered_failures", vr_unrecovered_ooms(a), vr_unrecovered_ooms(b));
    fputc(',', f);
    json_pair_u(f, "live_at_fatal_oom", fatal_live(a), fatal_live(b));
    fputs("},", f);
}

static void json_site(FILE *f, const vr_diff_site *s)
{
    fprintf(f, "{\"change\":%.0f,", s->change);
    json_pair_u(f, "peak", s->peak[0], s->peak[1]);
    fputc(',', f);
    json_pair_u(f, "leaked", s->leaked[0], s->leaked[1]);
    fputc(',', f);
    json_pair_d(f, "growth_bytes_per_iteration", s->growth[0], s->growth[1]);
    fputc(',', f);
    json_pair_u(f, "oom", s->oom[0], s->oom[1]);
    fputs(",\"stack\":", f);
    json_stack(f, &s->stack);
    fputc('}', f);
}

int vr_render_diff_json(FILE *out, vr_report *const *r, size_t n, const vr_options *opt)
{
    (void)opt;
    if (n != 2)
        return -1;
    vr_diff *d = vr_diff_new(r[0], r[1]);
    fputs("{\"format\":\"vramtrace-diff\",\"version\":1,", out);
    json_run(out, "before", r[0]);
    json_run(out, "after", r[1]);
    json_totals(out, d);
    fprintf(out, "\"only_before\":%zu,\"only_after\":%zu,", d->only[0], d->only[1]);
    fprintf(out, "\"oom_sites_complete\":{\"before\":%s,\"after\":%s},",
            d->oom_partial[0] ? "false" : "true", d->oom_partial[1] ? "false" : "true");
    fprintf(out, "\"peak_sites_complete\":{\"before\":%s,\"after\":%s},",
            d->peak_partial[0] ? "false" : "true", d->peak_partial[1] ? "false" : "true");
    fprintf(out, "\"leak_sites_complete\":{\"before\":%s,\"after\":%s},\"sites\":[",
            d->leak_partial[0] ? "false" : "true", d->leak_partial[1] ? "false" : "true");
    for (size_t i = 0; i < d->nsites; i++) {
        if (i)
            fputc(',', out);
        json_site(out, &d->sites[i]);
    }
    fputs("]}\n", out);
    vr_diff_free(d);
    return ferror(out) ? -1 : 0;
}

/* ---- HTML ------------------------------------------------------------------ */

static const char html_head[] =
    "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>vramtrace diff</title><style>"
    "body{font:14px sans-serif;margin:1.5em}table{border-collapse:collapse}"
    "td,th{padding:2px 8px;text-align:right;border-bottom:1px solid #ddd}"
    "td.s{text-align:left;font:12px monospace}.up{color:#b00}.down{color:#070}"
    "details summary{cursor:pointer}</style></head><body>\n";

static void html_delta(FILE *f, double d, const char *s)
{
    fprintf(f, "<td class=\"%s\">%s</td>", d > 0 ? "up" : d < 0 ? "down" : "", s);
}

static void html_row(FILE *f, const char *name, uint64_t a, uint64_t b)
{
    fprintf(f, "<tr><th>%s</th><td>%s</td><td>%s</td>", name, USIZE(a), USIZE(b));
    html_delta(f, delta(a, b), SSIZE(delta(a, b)));
    fputs("</tr>\n", f);
}

static void html_totals(FILE *f, const vr_diff *d)
{
    const vr_report *a = d->run[0], *b = d->run[1];
    fputs("<h1>vramtrace diff</h1><p>before: <code>", f);
    vr_html_str(f, a->path);
    fputs("</code><br>after: <code>", f);
    vr_html_str(f, b->path);
    fputs("</code></p><table><tr><th></th><th>before</th><th>after</th><th>change</th></tr>\n", f);
    html_row(f, "peak allocated", a->peak_allocated, b->peak_allocated);
    html_row(f, "peak reserved", a->peak_reserved, b->peak_reserved);
    html_row(f, "leaked at exit", leaked(a), leaked(b));
    double ga = a->total_growth.bytes_per_iteration, gb = b->total_growth.bytes_per_iteration;
    fprintf(f, "<tr><th>growth/iteration</th><td>%s</td><td>%s</td>", SSIZE(ga), SSIZE(gb));
    html_delta(f, gb - ga, SSIZE(gb - ga));
    fprintf(f,
            "</tr>\n<tr><th>unrecovered out-of-memory failures</th><td>%" PRIu64 "</td><td>%" PRIu64
            "</td><td></td></tr></table>\n",
            vr_unrecovered_ooms(a), vr_unrecovered_ooms(b));
    oom_notes(f, d, "<p>note: ", "</p>\n");
}

/* Leading (leaf-side) frames every shown site shares (an allocator's own
 * frames): the summaries start after them. 0 with fewer than two sites. */
static size_t shared_frames(const vr_diff *d, size_t shown)
{
    if (shown < 2)
        return 0;
    size_t n = d->sites[0].stack.n;
    for (size_t k = 1; k < shown; k++) {
        n = vr_shared_frames(&d->sites[0].stack, &d->sites[k].stack, n, vr_same_frame);
    }
    return n;
}

/* The stack, collapsed to its first frame after the shared ones (its lead
 * frame when it has one: the program's Python line). */
static void html_stack(FILE *f, const vr_stack *st, size_t shared)
{
    char buf[64];
    fputs("<details><summary>", f);
    size_t k = st->lead ? st->lead : shared < st->n ? shared : 0;
    if (!st->n)
        fputs("(no stack)", f);
    else {
        vr_html_str(f, vr_frame_label(&st->frames[k], buf, sizeof buf));
        if (st->frames[k].file[0]) {
            fputs(" (", f);
            vr_html_str(f, vr_basename(st->frames[k].file));
            fprintf(f, ":%" PRIu32 ")", st->frames[k].line);
        }
    }
    fputs("</summary>", f);
    for (size_t i = 0; i < st->n; i++) {
        const vr_frame *fr = &st->frames[i];
        vr_html_str(f, vr_frame_label(fr, buf, sizeof buf));
        if (fr->file[0]) {
            fputs(" (", f);
            vr_html_str(f, vr_basename(fr->file));
            fprintf(f, ":%" PRIu32 ")", fr->line);
        }
        fputs("<br>", f);
    }
    fputs("</details>", f);
}

/* One table row: change, peak, growth, leaked, OOM, the stack (expandable). */
static void html_site(FILE *f, const vr_diff_site *s, size_t shared)
{
    fprintf(f, "<tr><td>%s</td>", USIZE(vr_u64_sat(s->change)));
    fprintf(f, "<td>%s &rarr; %s</td>", USIZE(s->peak[0]), USIZE(s->peak[1]));
    html_delta(f, delta(s->peak[0], s->peak[1]), SSIZE(delta(s->peak[0], s->peak[1])));
    fprintf(f, "<td>%s &rarr; %s</td>", SSIZE(s->growth[0]), SSIZE(s->growth[1]));
    fprintf(f, "<td>%s &rarr; %s</td>", USIZE(s->leaked[0]), USIZE(s->leaked[1]));
    fprintf(f, "<td>%s &rarr; %s</td><td class=\"s\">", USIZE(s->oom[0]), USIZE(s->oom[1]));
    html_stack(f, &s->stack, shared);
    fputs("</td></tr>\n", f);
}

int vr_render_diff_html(FILE *out, vr_report *const *r, size_t n, const vr_options *opt)
{
    if (n != 2)
        return -1;
    vr_diff *d = vr_diff_new(r[0], r[1]);
    fputs(html_head, out);
    html_totals(out, d);
    fprintf(out,
            "<h2>Call sites by change</h2><p>%zu sites; %zu only before, %zu only after</p>"
            "<table><tr><th>change</th><th>peak</th><th>&Delta; peak</th><th>growth/iteration</th>"
            "<th>leaked</th><th>at OOM</th><th>call stack</th></tr>\n",
            d->nsites, d->only[0], d->only[1]);
    size_t top = vr_top(opt), shown = 0;
    while (shown < d->nsites && shown < top && d->sites[shown].change > 0)
        shown++;
    size_t shared = shared_frames(d, shown);
    for (size_t i = 0; i < shown; i++)
        html_site(out, &d->sites[i], shared);
    fputs("</table></body></html>\n", out);
    vr_diff_free(d);
    return ferror(out) ? -1 : 0;
}
