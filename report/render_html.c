/* render_html.c: --html FILE: one self-contained page (inline CSS, SVG and
 * JS; no network). Per trace: an SVG timeline of allocated/reserved bytes
 * with the peak and the OOMs marked and the iterations shaded, a flamegraph
 * of the peak (built by the inline script from embedded JSON, widths
 * proportional to bytes, text set with textContent), and tables of sites,
 * phases, leaks, growth, OOMs and fragmentation. Every string from the trace
 * is HTML-escaped (and JSON strings escape '<' so no </script> can close the
 * data block). */
#include "internal.h"

#include <inttypes.h>
#include <string.h>

#define SZ(v, b) vr_format_size((v), (b), sizeof(b))
#define W 1000.0
#define H 240.0
#define FG_MAX_SITES 2000

static const char css[] =
    "body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}"
    "h1{font-size:1.4em}h2{font-size:1.2em;border-bottom:1px solid #ccc;margin-top:2em}"
    "h3{font-size:1.05em;margin-top:1.5em}"
    "table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ddd;padding:3px 8px;"
    "vertical-align:top;text-align:left}th{background:#f4f4f4}td.n{text-align:right;"
    "font-variant-numeric:tabular-nums;white-space:nowrap}"
    ".stack{font:12px monospace;margin:0;padding-left:1em;list-style:none}"
    ".verdict{font-weight:bold;text-transform:uppercase}.v-capacity{color:#b35c00}"
    ".v-leak{color:#b00020}.v-fragmentation{color:#6a1b9a}.v-external{color:#00599c}"
    "svg text{font:11px sans-serif}.fg{position:relative;border:1px solid #ddd;"
    "overflow:hidden}.fg div{position:absolute;height:17px;box-sizing:border-box;"
    "border:1px solid #fff;font:11px monospace;overflow:hidden;white-space:nowrap;"
    "padding:1px 2px;cursor:default}.note{color:#555}";

/* Builds every flamegraph from its JSON block: data = [[bytes, [frames root
 * first]], ...]. A tree is merged by frame label; each node becomes a div
 * whose width is proportional to its bytes. */
static const char script[] =
    "(function(){\n"
    "function fmt(b){var u=['B','KiB','MiB','GiB','TiB'],i=0;while(b>=1024&&i<4){b/=1024;i++}"
    "return (i?b.toFixed(2):b)+' '+u[i]}\n"
    "document.querySelectorAll('script.fgdata').forEach(function(s){\n"
    " var data=JSON.parse(s.textContent),root={n:'all',b:0,c:{}};\n"
    " data.forEach(function(e){var node=root;root.b+=e[0];e[1].forEach(function(f){\n"
    "  var k=node.c[f]||(node.c[f]={n:f,b:0,c:{}});k.b+=e[0];node=k;});});\n"
    " var box=document.getElementById(s.dataset.target),rows=0;\n"
    " function draw(node,x,d){if(d>rows)rows=d;var el=document.createElement('div');\n"
    "  var w=root.b?node.b/root.b*100:100;el.style.left=x+'%';el.style.width=w+'%';\n"
    "  el.style.top=(d*18)+'px';var h=(node.n.length*37)%360;\n"
    "  el.style.background='hsl('+(d?20+h%40:200)+',80%,'+(60+h%20)+'%)';\n"
    "  el.className='fg-frame';el.textContent=node.n;el.title=node.n+' \\u2014 '+fmt(node.b)+"
    "' ('+w.toFixed(1)+'%)';box.appendChild(el);\n"
    "  var cx=x;Object.keys(node.c).map(function(k){return node.c[k]}).sort(function(a,b){"
    "return b.b-a.b}).forEach(function(c){draw(c,cx,d+1);cx+=root.b?c.b/root.b*100:0;});}\n"
    " draw(root,0,0);box.style.height=((rows+1)*18+2)+'px';\n"
    " box.setAttribute('data-rendered','1');\n"
    " var done=document.createElement('span');done.id=s.dataset.target+'-rendered';\n"
    " box.parentNode.insertBefore(done,box.nextSibling);\n"
    "});\n"
    "})();\n";

static void esc(FILE *f, const char *s)
{
    vr_html_str(f, s);
}

static void stack_html(FILE *f, const vr_stack *st, size_t max)
{
    fputs("<ul class=\"stack\">", f);
    if (!st->n)
        fputs("<li>(no stack recorded)</li>", f);
    for (size_t i = 0; i < st->n && i < max; i++) {
        const vr_frame *fr = &st->frames[i];
        char buf[64];
        fputs("<li>", f);
        esc(f, vr_frame_label(fr, buf, sizeof buf));
        if (fr->file[0]) {
            fputs(" <span class=\"note\">", f);
            esc(f, fr->file);
            fprintf(f, ":%" PRIu32 "</span>", fr->line);
        } else if (fr->module[0]) {
            fputs(" <span class=\"note\">in ", f);
            esc(f, vr_basename(fr->module));
            fputs("</span>", f);
        }
        if (fr->inlined)
            fputs(" <i>inlined</i>", f);
        fputs("</li>", f);
    }
    if (st->n > max)
        fprintf(f, "<li>… %zu more</li>", st->n - max);
    fputs("</ul>", f);
}

/* ---- timeline --------------------------------------------------------------- */

typedef struct scale {
    double t1, ymax;
} scale;

static double sx(const scale *s, uint64_t t)
{
    return s->t1 > 0 ? 50.0 + (double)t / s->t1 * (W - 60.0) : 50.0;
}

static double sy(const scale *s, uint64_t v)
{
    return H - 20.0 - (s->ymax > 0 ? (double)v / s->ymax * (H - 40.0) : 0);
}

static void polyline(FILE *f, const scale *s, const vr_device *d, bool reserved, const char *color)
{
    fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"", color);
    uint64_t prev = 0;
    for (size_t i = 0; i < d->ntimeline; i++) {
        const vr_point *p = &d->timeline[i];
        uint64_t v = reserved ? p->reserved : p->allocated;
        fprintf(f, "%.1f,%.1f %.1f,%.1f ", sx(s, p->t_ns), sy(s, prev), sx(s, p->t_ns), sy(s, v));
        prev = v;
    }
    fputs("\"/>", f);
}

static void spans_svg(FILE *f, const vr_report *r, const scale *s)
{
    for (size_t i = 0; i < r->nspans; i++) {
        const vr_range_span *sp = &r->spans[i];
        if (r->iteration_name[0] && strcmp(sp->name, r->iteration_name))
            continue;
        fprintf(f,
                "<rect class=\"phase\" x=\"%.1f\" y=\"20\" width=\"%.1f\" height=\"%.0f\" "
                "fill=\"%s\"><title>",
                sx(s, sp->start_ns), sx(s, sp->end_ns) - sx(s, sp->start_ns), H - 40.0,
                i % 2 ? "#eef3fb" : "#f7f7f7");
        esc(f, sp->name);
        fprintf(f, " %s – %s</title></rect>", VR_TIME(sp->start_ns), VR_TIME(sp->end_ns));
    }
}

static void marks_svg(FILE *f, const vr_report *r, const scale *s)
{
    char b[32];
    for (size_t i = 0; i < r->nooms; i++) {
        const vr_oom *o = &r->ooms[i];
        double x = sx(s, o->t_ns);
        fprintf(f,
                "<line class=\"oom\" x1=\"%.1f\" x2=\"%.1f\" y1=\"20\" y2=\"%.0f\" "
                "stroke=\"#d00\" stroke-dasharray=\"4 2\"><title>OOM: %s, %s</title></line>",
                x, x, H - 20.0, vr_verdict_name(o->verdict), SZ(o->requested_bytes, b));
    }
    double px = sx(s, r->peak_allocated_t_ns), py = sy(s, r->peak_allocated);
    fprintf(f,
            "<circle class=\"peak\" cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"#d00\"/>"
            "<text x=\"%.1f\" y=\"%.1f\">peak %s</text>",
            px, py, px + 6, py < 35 ? py + 12 : py - 6, SZ(r->peak_allocated, b));
}

static void axes_svg(FILE *f, const scale *s)
{
    char b[32];
    fprintf(f, "<line x1=\"50\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"#888\"/>", H - 20,
            W - 10, H - 20);
    fprintf(f, "<text x=\"2\" y=\"24\">%s</text><text x=\"2\" y=\"%.0f\">0</text>",
            SZ((uint64_t)s->ymax, b), H - 22);
    fprintf(f,
            "<text x=\"50\" y=\"%.0f\">0 s</text><text x=\"%.0f\" y=\"%.0f\" "
            "text-anchor=\"end\">%s</text>",
            H - 5, W - 10, H - 5, VR_TIME((uint64_t)s->t1));
}

static void timeline(FILE *f, const vr_report *r, size_t idx)
{
    scale s = {.t1 = (double)r->duration_ns, .ymax = 1};
    for (size_t i = 0; i < r->ndevices; i++) {
        uint64_t m = r->devices[i].peak_reserved > r->devices[i].peak_allocated
                         ? r->devices[i].peak_reserved
                         : r->devices[i].peak_allocated;
        if ((double)m * 1.1 > s.ymax)
            s.ymax = (double)m * 1.1;
    }
    fprintf(f,
            "<h3>Timeline</h3><svg id=\"timeline-%zu\" class=\"timeline\" "
            "xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
            "viewBox=\"0 0 %.0f %.0f\">",
            idx, W, H, W, H);
    spans_svg(f, r, &s);
    axes_svg(f, &s);
    static const char *colors[][2] = {{"#1f6feb", "#f0883e"}, {"#2da44e", "#bf3989"}};
    for (size_t i = 0; i < r->ndevices; i++) {
        polyline(f, &s, &r->devices[i], true, colors[i % 2][1]);
        polyline(f, &s, &r->devices[i], false, colors[i % 2][0]);
        const vr_device *d = &r->devices[i];
        if (d->total_bytes && (double)d->total_bytes <= s.ymax)
            fprintf(f,
                    "<line x1=\"50\" x2=\"%.0f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#999\" "
                    "stroke-dasharray=\"6 3\"><title>device %d total</title></line>",
                    W - 10, sy(&s, d->total_bytes), sy(&s, d->total_bytes), d->id);
    }
    marks_svg(f, r, &s);
    fputs("</svg><div class=\"note\">blue: allocated, orange: reserved (registered heaps "
          "+ direct allocations); red dot: peak; dashed red: failed allocations; shaded: "
          "iterations</div>",
          f);
}

/* ---- flamegraph ------------------------------------------------------------- */

static void flamegraph(FILE *f, const vr_report *r, size_t idx)
{
    fprintf(f,
            "<h3>Flamegraph of the peak</h3><div id=\"flamegraph-%zu\" class=\"fg\"></div>"
            "<script type=\"application/json\" class=\"fgdata\" "
            "data-target=\"flamegraph-%zu\">[",
            idx, idx);
    for (size_t i = 0; i < r->nsites && i < FG_MAX_SITES; i++) {
        const vr_site *s = &r->sites[i];
        fprintf(f, "%s[%" PRIu64 ",[", i ? "," : "", s->bytes);
        if (!s->stack.n)
            vr_json_str(f, "(no stack)");
        for (size_t k = s->stack.n; k-- > 0;) {
            char buf[64];
            vr_json_str(f, vr_frame_label(&s->stack.frames[k], buf, sizeof buf));
            if (k)
                fputc(',', f);
        }
        fputs("]]", f);
    }
    fputs("]</script>", f);
}

/* ---- tables --------------------------------------------------------------------- */

static void summary(FILE *f, const vr_report *r)
{
    char b1[32], b2[32], b3[32];
    fputs("<table><tr><th>program</th><td>", f);
    for (size_t i = 0; i < r->argc; i++) {
        esc(f, r->argv[i]);
        fputc(' ', f);
    }
    fprintf(f, "</td></tr><tr><th>pid / host</th><td>%" PRIu32 " / ", r->pid);
    esc(f, r->host);
    fputs("</td></tr><tr><th>exit</th><td>", f);
    if (!r->has_end)
        fputs("unknown (no end-of-process record)", f);
    else if (r->exit_signal)
        fprintf(f, "killed by signal %d", r->exit_signal);
    else if (r->exit_status >= 0)
        fprintf(f, "status %d", r->exit_status);
    else
        esc(f, r->exit_reason);
    fprintf(f,
            "</td></tr><tr><th>peak allocated</th><td>%s at %s</td></tr>"
            "<tr><th>peak reserved</th><td>%s</td></tr><tr><th>leaked</th><td>%s in %" PRIu64
            " allocations</td></tr><tr><th>allocations / frees / failed</th><td>%" PRIu64
            " / %" PRIu64 " / %" PRIu64 "</td></tr>",
            SZ(r->peak_allocated, b1), VR_TIME(r->peak_allocated_t_ns), SZ(r->peak_reserved, b2),
            SZ(r->leaked_bytes, b3), r->leaked_count, r->allocations, r->frees,
            r->failed_allocations);
    for (size_t i = 0; i < r->ndevices; i++) {
        fprintf(f, "<tr><th>device %d</th><td>", r->devices[i].id);
        esc(f, r->devices[i].name);
        fprintf(f, " (%s)</td></tr>", SZ(r->devices[i].total_bytes, b1));
    }
    fputs("</table>", f);
    for (size_t i = 0; i < r->nnotes; i++) {
        fputs("<p class=\"note\">note: ", f);
        esc(f, r->notes[i]);
        fputs("</p>", f);
    }
}

static double pct(uint64_t a, uint64_t b)
{
    return b ? 100.0 * (double)a / (double)b : 0.0;
}

static void sites_table(FILE *f, const vr_report *r, size_t top)
{
    char b[32];
    fputs("<h3>Top call sites at the peak</h3><table id=\"sites\"><tr><th>bytes</th><th>%</th>"
          "<th>allocations</th><th>stack</th></tr>",
          f);
    for (size_t i = 0; i < r->nsites && i < top; i++) {
        fprintf(f,
                "<tr><td class=\"n\">%s</td><td class=\"n\">%.1f</td><td class=\"n\">%" PRIu64
                "</td><td>",
                SZ(r->sites[i].bytes, b), pct(r->sites[i].bytes, r->peak_allocated),
                r->sites[i].count);
        stack_html(f, &r->sites[i].stack, 10);
        fputs("</td></tr>", f);
    }
    fputs("</table><h3>Peak by NVTX range</h3><table><tr><th>bytes</th><th>%</th>"
          "<th>range</th></tr>",
          f);
    for (size_t i = 0; i < r->nphases && i < top; i++) {
        fprintf(f, "<tr><td class=\"n\">%s</td><td class=\"n\">%.1f</td><td>",
                SZ(r->phases[i].bytes, b), pct(r->phases[i].bytes, r->peak_allocated));
        esc(f, r->phases[i].range);
        fputs("</td></tr>", f);
    }
    fputs("</table>", f);
}

static void ooms_table(FILE *f, const vr_report *r, size_t top)
{
    char b1[32], b2[32];
    fprintf(f, "<h3>Out of memory (%zu)</h3>", r->nooms);
    if (!r->nooms)
        return;
    fputs("<table id=\"ooms\"><tr><th>time</th><th>request</th><th>device free</th>"
          "<th>verdict</th><th>explanation</th><th>failing call</th></tr>",
          f);
    for (size_t i = 0; i < r->nooms && i < top; i++) {
        const vr_oom *o = &r->ooms[i];
        fprintf(f,
                "<tr><td class=\"n\">%s</td><td class=\"n\">%s</td><td class=\"n\">%s</td>"
                "<td class=\"verdict v-%s\">%s</td><td>",
                VR_TIME(o->t_ns), SZ(o->requested_bytes, b1), SZ(o->device_free_bytes, b2),
                vr_verdict_name(o->verdict), vr_verdict_name(o->verdict));
        esc(f, o->explanation);
        fputs("</td><td>", f);
        stack_html(f, &o->stack, 6);
        fputs("</td></tr>", f);
    }
    fputs("</table>", f);
}

static void leaks_table(FILE *f, const vr_report *r, size_t top)
{
    char b[32];
    fprintf(f, "<h3>Leaks: %s in %" PRIu64 " allocations live at %s</h3>", SZ(r->leaked_bytes, b),
            r->leaked_count, r->has_end ? "exit" : "the end");
    if (!r->nleaks)
        return;
    fputs("<table id=\"leaks\"><tr><th>bytes</th><th>allocations</th><th>allocated at</th></tr>",
          f);
    for (size_t i = 0; i < r->nleaks && i < top; i++) {
        fprintf(f, "<tr><td class=\"n\">%s</td><td class=\"n\">%" PRIu64 "</td><td>",
                SZ(r->leaks[i].bytes, b), r->leaks[i].count);
        stack_html(f, &r->leaks[i].stack, 10);
        fputs("</td></tr>", f);
    }
    fputs("</table>", f);
}

static void growth_table(FILE *f, const vr_report *r, size_t top)
{
    char b1[32], b2[32];
    fputs("<h3>Growth per iteration (", f);
    if (r->iteration_name[0]) {
        fputs("NVTX range ", f);
        esc(f, r->iteration_name);
    } else {
        fputs("time windows", f);
    }
    fprintf(f, ", %" PRIu64 " iterations): total %+.0f B/iteration, R² %.3f</h3>", r->iterations,
            r->total_growth.bytes_per_iteration, r->total_growth.r2);
    if (!r->ngrowth)
        return;
    fputs("<table id=\"growth\"><tr><th>per iteration</th><th>R²</th><th>live</th>"
          "<th>out of memory at</th><th>stack</th></tr>",
          f);
    for (size_t i = 0; i < r->ngrowth && i < top; i++) {
        const vr_growth *g = &r->growth[i];
        fprintf(f,
                "<tr><td class=\"n\">%s</td><td class=\"n\">%.3f</td><td class=\"n\">%s</td>"
                "<td class=\"n\">",
                SZ((uint64_t)g->bytes_per_iteration, b1), g->r2, SZ(g->live_bytes, b2));
        if (g->projected_oom_iteration >= 0)
            fprintf(f, "iteration %" PRId64, g->projected_oom_iteration);
        fputs("</td><td>", f);
        stack_html(f, &g->stack, 8);
        fputs("</td></tr>", f);
    }
    fputs("</table>", f);
}

static void frag_table(FILE *f, const vr_report *r, size_t top)
{
    char b1[32], b2[32], b3[32];
    fputs("<h3>Fragmentation inside registered heaps</h3>", f);
    if (!r->nfrag) {
        fputs("<p class=\"note\">no heaps registered (no NVTX Mem annotations)</p>", f);
        return;
    }
    fputs("<table id=\"fragmentation\"><tr><th>when</th><th>time</th><th>reserved</th>"
          "<th>allocated</th><th>largest free</th><th>fragmentation</th></tr>",
          f);
    for (size_t i = 0; i < r->nfrag && i < top * 4; i++) {
        const vr_frag *x = &r->frag[i];
        fprintf(f,
                "<tr><td>%s</td><td class=\"n\">%s</td><td class=\"n\">%s</td>"
                "<td class=\"n\">%s</td><td class=\"n\">%s</td><td class=\"n\">%.1f%%</td></tr>",
                x->when, VR_TIME(x->t_ns), SZ(x->reserved, b1), SZ(x->allocated, b2),
                SZ(x->largest_free, b3), 100.0 * x->fragmentation);
    }
    fputs("</table>", f);
}

static void combined(FILE *f, vr_report *const *r, size_t n)
{
    char b1[32], b2[32], b3[32];
    fputs("<h2>Summary</h2><table><tr><th>file</th><th>peak allocated</th><th>peak reserved"
          "</th><th>leaked</th><th>OOMs</th></tr>",
          f);
    for (size_t i = 0; i < n; i++) {
        fprintf(f, "<tr><td><a href=\"#trace-%zu\">", i);
        esc(f, vr_basename(r[i]->path));
        fprintf(f,
                "</a></td><td class=\"n\">%s</td><td class=\"n\">%s</td><td class=\"n\">%s</td>"
                "<td class=\"n\">%zu</td></tr>",
                SZ(r[i]->peak_allocated, b1), SZ(r[i]->peak_reserved, b2),
                SZ(r[i]->leaked_bytes, b3), r[i]->nooms);
    }
    fputs("</table>", f);
}

int vr_render_html(FILE *out, vr_report *const *r, size_t n, const vr_options *opt)
{
    size_t top = vr_top(opt);
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
          "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
          "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">"
          "<title>vramtrace report</title><style>",
          out);
    fputs(css, out);
    fputs("</style></head><body><h1>vramtrace report</h1>\n", out);
    if (n > 1)
        combined(out, r, n);
    for (size_t i = 0; i < n; i++) {
        fprintf(out, "<section id=\"trace-%zu\"><h2>", i);
        esc(out, r[i]->path);
        fputs("</h2>", out);
        summary(out, r[i]);
        timeline(out, r[i], i);
        ooms_table(out, r[i], top);
        flamegraph(out, r[i], i);
        sites_table(out, r[i], top);
        leaks_table(out, r[i], top);
        growth_table(out, r[i], top);
        frag_table(out, r[i], top);
        fputs("</section>\n", out);
    }
    fputs("<script>", out);
    fputs(script, out);
    fputs("</script></body></html>\n", out);
    return fflush(out) == 0 && !ferror(out) ? 0 : -1;
}
