/* render_html.c: --html FILE: one self-contained page (inline CSS, SVG and
 * JS; no network). Per trace: an SVG timeline of allocated/reserved bytes
 * with the peak and the OOMs marked and the iterations shaded (by default
 * over the recorded device activity; a "whole run" checkbox switches to a
 * second SVG over the whole process), the failed allocations (the fatal one
 * first), a flamegraph
 * of the peak (built by the inline script from embedded JSON, widths
 * proportional to bytes, text set with textContent), and tables of sites,
 * phases, leaks, growth, OOMs and fragmentation. Every string from the trace
 * is HTML-escaped (and JSON strings escape '<' so no </script> can close the
 * data block). */
#include "internal.h"
#include "vsize.h"

#include <math.h>
#include <inttypes.h>
#include <string.h>

#define SZ(v, b) vr_format_size((v), (b), sizeof(b))
#define W 1000.0
#define H 240.0
#define FG_MAX_SITES 2000
/* frames of a stack shown before "… N more frames" (which expands it) */
#define STACK_SHOWN 4

static const char css[] =
    "body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}"
    "h1{font-size:1.4em}h2{font-size:1.2em;border-bottom:1px solid #ccc;margin-top:2em}"
    "h3{font-size:1.05em;margin-top:1.5em}"
    "table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ddd;padding:3px 8px;"
    "vertical-align:top;text-align:left}th{background:#f4f4f4}td.n{text-align:right;"
    "font-variant-numeric:tabular-nums;white-space:nowrap}"
    ".stack{font:12px monospace;margin:0;padding-left:1em;list-style:none;"
    "overflow-wrap:anywhere}td.expl{min-width:22em}"
    /* the table's verdict word only: the headline names APIs and files,
     * which upper case would misspell (cuMemAlloc, numba_random.py) */
    ".verdict{font-weight:bold}td.verdict{text-transform:uppercase}.v-error{color:#666}"
    ".v-capacity{color:#b35c00}"
    ".v-leak{color:#b00020}.v-fragmentation{color:#6a1b9a}.v-external{color:#00599c}"
    "svg text{font:11px sans-serif}.fg{position:relative;border:1px solid #ddd;"
    "overflow:hidden}.fg div{position:absolute;height:17px;box-sizing:border-box;"
    "border:1px solid #fff;font:11px monospace;overflow:hidden;white-space:nowrap;"
    "padding:1px 2px;cursor:default}.note{color:#555}"
    "tr.fatal td{background:#fdecec;border-top:2px solid #d00;border-bottom:2px solid #d00}"
    ".fatal-label{color:#b00020;font-weight:bold;margin:0 0 .3em}"
    "tr.recovered td{color:#888}tr.recovered .verdict{color:#999}"
    ".recovered-label{font-style:italic;margin:0 0 .3em}.batch{margin:.3em 0 0;font-weight:bold}"
    /* inline, not inline-block: a heading that wraps stays beside the
     * summary's marker instead of falling below it */
    "details.sec>summary{cursor:pointer;margin:1em 0 .3em}details.sec>summary h3{display:inline;"
    "margin:0}"
    "details.more>summary{cursor:pointer;color:#555}.fg div{cursor:pointer}.fg "
    "div.fg-match{color:#fff}"
    ".tooltip{position:absolute;background:#fff;border:1px solid #888;padding:4px 8px;"
    "box-shadow:2px 2px 6px rgba(0,0,0,.2);font-size:12px;pointer-events:none;max-width:560px}"
    ".regions{font:12px monospace;color:#6a1b9a;padding-left:1em}"
    ".tooltip ol{margin:0;padding-left:1.5em}.tt-time{font-weight:bold}";

/* Builds every icicle (flamegraph) from its JSON block: data = [[bytes,
 * [frames root first]], ...]. A tree is merged by frame label; each node
 * becomes a div whose width is proportional to its bytes, labelled with its
 * size; a click zooms on a node (its ancestors become grey bars that zoom
 * out), the search box highlights frames whose name contains the text and
 * sums their bytes. The timelines' hover reads each tldata block (see
 * hover_data) and shows the time, allocated and reserved bytes and the
 * largest live sites at the pointer. All text goes in with textContent. */
static const char script[] =
    "(function(){\n"
    "function fmt(b){var "
    "u=['B','KiB','MiB','GiB','TiB'],i=0;while(b>=1024&&i<4){b/=1024;i++}return "
    "(i?b.toFixed(2):b)+' '+u[i]}\n"
    "function fmtT(ns){return ns>=1e9?(ns/1e9).toFixed(3)+' s':ns>=1e6?(ns/1e6).toFixed(3)+' "
    "ms':(ns/1e3).toFixed(1)+' us'}\n"
    "function icicle(s){\n"
    " var data=JSON.parse(s.textContent),root={n:'all',b:0,c:{},p:null};\n"
    " data.forEach(function(e){var node=root;root.b+=e[0];e[1].forEach(function(f){\n"
    "  var k=node.c[f]||(node.c[f]={n:f,b:0,c:{},p:node});k.b+=e[0];node=k;});});\n"
    " var "
    "id=s.dataset.target,box=document.getElementById(id),q=document.getElementById(id+'-search'),\n"
    "  "
    "st=document.getElementById(id+'-status'),reset=document.getElementById(id+'-reset'),top=root;"
    "\n"
    " function match(n){var t=q&&q.value;return t&&n.n.toLowerCase().indexOf(t.toLowerCase())>=0}\n"
    " function render(){\n"
    "  box.textContent='';var rows=0,hit=0;\n"
    "  function draw(node,x,d,under){if(d>rows)rows=d;var "
    "el=document.createElement('div'),m=match(node);\n"
    "   var w=top.b?node.b/top.b*100:100;el.style.left=x+'%';el.style.width=w+'%';\n"
    "   el.style.top=(d*18)+'px';var h=(node.n.length*37)%360;\n"
    "   el.style.background=m?'#e040fb':'hsl('+(d?20+h%40:200)+',80%,'+(60+h%20)+'%)';\n"
    "   el.className='fg-frame'+(m?' fg-match':'');el.textContent=node.n+' '+fmt(node.b);\n"
    "   el.title=node.n+' \\u2014 '+fmt(node.b)+' ('+(root.b?node.b/root.b*100:100).toFixed(1)+'% "
    "of all)';\n"
    "   el.addEventListener('click',function(){top=node;render()});box.appendChild(el);\n"
    "   if(m&&!under)hit+=node.b;\n"
    "   var cx=x;Object.keys(node.c).map(function(k){return node.c[k]}).sort(function(a,b){\n"
    "    return "
    "b.b-a.b}).forEach(function(c){draw(c,cx,d+1,under||m);cx+=top.b?c.b/top.b*100:0;});}\n"
    "  var d=0,chain=[];for(var a=top.p;a;a=a.p)chain.unshift(a);\n"
    "  chain.forEach(function(a){var "
    "el=document.createElement('div');el.style.left='0%';el.style.width='100%';\n"
    "   el.style.top=(d*18)+'px';el.style.background='#ddd';el.className='fg-frame fg-parent';\n"
    "   el.textContent=a.n+' "
    "'+fmt(a.b);el.addEventListener('click',function(){top=a;render()});box.appendChild(el);d++;});"
    "\n"
    "  draw(top,0,d,false);box.style.height=((rows+1)*18+2)+'px';\n"
    "  box.dataset.zoom=top.n;\n"
    "  if(st)st.textContent=(top!==root?'zoomed on '+top.n+' ('+fmt(top.b)+'); "
    "':'')+(q&&q.value?'matching \\u201c'+q.value+'\\u201d: '+fmt(hit)+' "
    "('+(root.b?hit/root.b*100:0).toFixed(1)+'%)':'');\n"
    " }\n"
    " render();\n"
    " if(q)q.addEventListener('input',render);\n"
    " if(reset)reset.addEventListener('click',function(){top=root;if(q)q.value='';render()});\n"
    " box.setAttribute('data-rendered','1');\n"
    " var done=document.createElement('span');done.id=id+'-rendered';\n"
    " box.parentNode.insertBefore(done,box.nextSibling);\n"
    "}\n"
    "document.querySelectorAll('script.fgdata').forEach(icicle);\n"
    "function last(a,t){var lo=0,hi=a.length-1,r=-1;while(lo<=hi){var "
    "m=(lo+hi)>>1;if(a[m][0]<=t){r=m;lo=m+1}else hi=m-1}return r}\n"
    "document.querySelectorAll('script.tldata').forEach(function(s){\n"
    " var "
    "data=JSON.parse(s.textContent),idx=s.dataset.idx,tip=document.getElementById('tooltip-'+idx);"
    "\n"
    " ['timeline-'+idx,'timeline-'+idx+'-whole'].forEach(function(sid){\n"
    "  var svg=document.getElementById(sid);if(!svg)return;var "
    "cur=svg.querySelector('line.cursor');\n"
    "  svg.addEventListener('mousemove',function(ev){\n"
    "   var rc=svg.getBoundingClientRect(),x=(ev.clientX-rc.left)*1000/rc.width,\n"
    "    t0=+svg.dataset.t0,t1=+svg.dataset.t1,x0=+svg.dataset.x0,xw=+svg.dataset.xw;\n"
    "   if(x<x0||x>x0+xw){tip.hidden=true;cur.setAttribute('visibility','hidden');return}\n"
    "   var "
    "t=t0+(x-x0)/"
    "xw*(t1-t0);cur.setAttribute('x1',x);cur.setAttribute('x2',x);cur.setAttribute('visibility','"
    "visible');\n"
    "   tip.textContent='';var "
    "h=document.createElement('div');h.className='tt-time';h.textContent='at "
    "'+fmtT(t);tip.appendChild(h);\n"
    "   data.dev.forEach(function(pts,d){var "
    "i=last(pts,t),p=i<0?[0,0,0]:pts[i],e=document.createElement('div');\n"
    "    e.className='tt-bytes';e.textContent=(data.dev.length>1?'device #'+d+': ':'')+'allocated "
    "'+fmt(p[1])+', reserved '+fmt(p[2]);tip.appendChild(e);});\n"
    "   var k=last(data.hover,t),ul=document.createElement('ol');ul.className='tt-sites';\n"
    "   if(k>=0){var hs=data.hover[k];var c=document.createElement('div');c.className='note';\n"
    "    c.textContent='largest live call sites (as of '+fmtT(hs[0])+'):';tip.appendChild(c);\n"
    "    hs[1].forEach(function(e){var "
    "li=document.createElement('li');li.className='tt-site';li.textContent=e[0]+' \\u2014 "
    "'+fmt(e[1]);ul.appendChild(li);});}\n"
    "   "
    "tip.appendChild(ul);tip.hidden=false;tip.style.left=(ev.pageX+12)+'px';tip.style.top=(ev."
    "pageY+12)+'px';});\n"
    "  "
    "svg.addEventListener('mouseleave',function(){tip.hidden=true;cur.setAttribute('visibility','"
    "hidden')});\n"
    " });\n"
    "});\n"
    "document.querySelectorAll('input.tl-whole').forEach(function(cb){\n"
    " cb.checked=false;cb.addEventListener('change',function(){var i=cb.dataset.idx;\n"
    "  document.getElementById('timeline-'+i).style.display=cb.checked?'none':'';\n"
    "  document.getElementById('timeline-'+i+'-whole').style.display=cb.checked?'':'none';});\n"
    "});\n"
    "})();\n";

static void esc(FILE *f, const char *s)
{
    vr_html_str(f, s);
}

static void frame_html(FILE *f, const vr_frame *fr)
{
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

/* The first max frames, the rest in a closed <details> that expands the
 * stack in full. */
/* Frames [from, to) folded under a summary ("… 13 frames in
 * libc10_cuda.so, …" when in_modules, else "… 13 more frames"). */
static void folded_html(FILE *f, const vr_stack *st, size_t from, size_t to, bool in_modules)
{
    fprintf(f, "<li><details class=\"more\"><summary>… %zu %sframe%s", to - from,
            in_modules ? "" : "more ", vsize_plural(to - from));
    const char *mods[4];
    size_t more, nmods = in_modules ? vr_fold_modules(st, from, to, mods, &more) : 0;
    for (size_t k = 0; k < nmods; k++) {
        fputs(k ? ", " : " in ", f);
        vr_html_str(f, mods[k]);
    }
    const char *cut = in_modules ? NULL : vr_stack_cut(st, from, to);
    if (cut) {
        fputs(" including ", f);
        vr_html_str(f, cut);
    }
    fputs("</summary><ul class=\"stack\">", f);
    for (size_t i = from; i < to; i++)
        frame_html(f, &st->frames[i]);
    fputs("</ul></details></li>", f);
}

/* At most max frames of st shown, the rest folded; a stack with library
 * frames before its lead frame (vr_stack_folds_to_lead) folds the frames
 * between its first frame and the lead instead (text: vr_print_stack). */
static void stack_html(FILE *f, const vr_stack *st, size_t max)
{
    fputs("<ul class=\"stack\">", f);
    if (!st->n)
        fputs("<li>(no stack recorded)</li>", f);
    size_t at = 0;
    if (vr_stack_folds_to_lead(st, max)) {
        frame_html(f, &st->frames[0]);
        folded_html(f, st, 1, st->lead, true);
        at = st->lead;
        max -= 1;
    }
    size_t end = at + max < st->n ? at + max : st->n;
    for (size_t i = at; i < end; i++)
        frame_html(f, &st->frames[i]);
    if (st->n > end)
        folded_html(f, st, end, st->n, false);
    fputs("</ul>", f);
}

/* vr_listed_alike_text's line for row i of a table (its stacks from first,
 * stride bytes apart, max frames each; other_fmt: how it names the row
 * above), as a paragraph; nothing when none. */
static void alike_html(FILE *f, const vr_stack *first, size_t stride, size_t i, size_t max,
                       const char *other_fmt)
{
    char line[640];
    if (!*vr_listed_alike_text(first, stride, i, max, other_fmt, line, sizeof line))
        return;
    fputs("<p class=\"alike\">", f);
    esc(f, line);
    fputs("</p>", f);
}

/* ---- timeline --------------------------------------------------------------- */

/* The visible time window [t0, t1] (ns since the trace's start) and the
 * height of the y axis (bytes). */
typedef struct scale {
    double t0, t1, ymax;
} scale;

#define X0 50.0

static double sx(const scale *s, uint64_t t)
{
    double span = s->t1 - s->t0;
    return span > 0 ? X0 + ((double)t - s->t0) / span * (W - 60.0) : X0;
}

static double sy(const scale *s, uint64_t v)
{
    return H - 20.0 - (s->ymax > 0 ? (double)v / s->ymax * (H - 40.0) : 0);
}

/* Step lines; the last value holds to the end of the run (what is live at
 * exit stays live). The clip path cuts what lies outside the window. */
static void polyline(FILE *f, const scale *s, const vr_report *r, const vr_device *d, bool reserved,
                     const char *color)
{
    fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"", color);
    uint64_t prev = 0;
    for (size_t i = 0; i < d->ntimeline; i++) {
        const vr_point *p = &d->timeline[i];
        uint64_t v = reserved ? p->reserved : p->allocated;
        fprintf(f, "%.1f,%.1f %.1f,%.1f ", sx(s, p->t_ns), sy(s, prev), sx(s, p->t_ns), sy(s, v));
        prev = v;
    }
    if (d->ntimeline)
        fprintf(f, "%.1f,%.1f", sx(s, r->duration_ns > s->t1 ? r->duration_ns : vr_u64_sat(s->t1)),
                sy(s, prev));
    fputs("\"/>", f);
}

/* Whether a top-level span is one of the iterations (a numbered name by its
 * stem, vt_range_stem). */
static bool iteration_span(const vr_report *r, const char *name)
{
    size_t n = strlen(r->iteration_name);
    if (!r->iteration_numbered)
        return !strcmp(name, r->iteration_name);
    char stem[256];
    return vt_range_stem(name, stem, sizeof stem) == n && !strcmp(stem, r->iteration_name);
}

static void spans_svg(FILE *f, const vr_report *r, const scale *s)
{
    size_t k = 0;
    for (size_t i = 0; i < r->nspans; i++) {
        const vr_range_span *sp = &r->spans[i];
        if (r->iteration_name[0] && !iteration_span(r, sp->name))
            continue;
        double x = sx(s, sp->start_ns), w = sx(s, sp->end_ns) - x;
        fprintf(f,
                "<rect class=\"phase\" x=\"%.1f\" y=\"20\" width=\"%.1f\" height=\"%.0f\" "
                "fill=\"%s\" stroke=\"#9fb6d9\" stroke-width=\"0.5\"><title>",
                x, w < 0.5 ? 0.5 : w, H - 40.0, k++ % 2 ? "#d5e2f5" : "#e8eef8");
        esc(f, sp->name);
        fprintf(f, " #%zu: %s – %s</title></rect>", k, VR_TIME(sp->start_ns), VR_TIME(sp->end_ns));
    }
}

static void marks_svg(FILE *f, const vr_report *r, const scale *s)
{
    char b[32];
    for (size_t i = 0; i < r->nooms; i++) {
        const vr_oom *o = &r->ooms[i];
        double x = sx(s, o->t_ns);
        fprintf(f,
                "<line class=\"oom%s\" x1=\"%.1f\" x2=\"%.1f\" y1=\"20\" y2=\"%.0f\" "
                "stroke=\"%s\" stroke-width=\"1.5\" stroke-dasharray=\"4 2\"><title>%s: %s, "
                "%s at %s</title></line>",
                o->recovered ? " recovered" : "", x, x, H - 20.0, o->recovered ? "#e39a9a" : "#d00",
                o->recovered ? "failed allocation, recovered" : "OOM", vr_verdict_name(o->verdict),
                SZ(o->requested_bytes, b), VR_TIME(o->t_ns));
    }
    double px = sx(s, r->peak_allocated_t_ns), py = sy(s, r->peak_allocated);
    fprintf(f,
            "<circle class=\"peak\" cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"#d00\"/>"
            "<text class=\"peak-label\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\">"
            "peak %s</text>",
            px, py, px > W - 160 ? px - 6 : px + 6, py < 35 ? py + 12 : py - 6,
            px > W - 160 ? "end" : "start", SZ(r->peak_allocated, b));
}

/* A tick step of 1, 2 or 5 times a power of ten (ns) giving at most ~8
 * ticks over span ns. */
static uint64_t tick_step(double span)
{
    uint64_t p = 1;
    while ((double)p * 10 <= span / 8)
        p *= 10;
    static const uint64_t mult[] = {1, 2, 5, 10};
    for (size_t i = 0; i < 4; i++)
        if ((double)(p * mult[i]) >= span / 8)
            return p * mult[i];
    return p * 10;
}

/* Tick label in the unit of the window's end: "85 ms", "1.2 s". */
static void tick_label(FILE *f, uint64_t t, double t1)
{
    if (t1 >= 1e9)
        fprintf(f, "%.6g s", (double)t / 1e9);
    else if (t1 >= 1e6)
        fprintf(f, "%.6g ms", (double)t / 1e6);
    else
        fprintf(f, "%.6g us", (double)t / 1e3);
}

/* A y tick step of 1, 2 or 4 times a power of two (bytes) giving at most
 * 6 ticks up to ymax: binary units, so labels read "512 MiB", "1 GiB". */
static uint64_t ytick_step(double ymax)
{
    uint64_t p = 1;
    while ((double)p * 6 < ymax)
        p *= 2;
    return p;
}

/* "0", "512 MiB", "1.5 GiB": the shortest binary-unit label of v. */
static const char *ytick_label(uint64_t v, char *buf, size_t len)
{
    static const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double x = (double)v;
    size_t u = 0;
    while (x >= 1024 && u < 4) {
        x /= 1024;
        u++;
    }
    snprintf(buf, len, "%.4g %s", x, unit[u]);
    return v ? buf : "0";
}

static void axes_svg(FILE *f, const scale *s)
{
    char b[32];
    fprintf(f, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"#888\"/>", X0,
            H - 20, W - 10, H - 20);
    uint64_t ystep = ytick_step(s->ymax);
    /* each loop also ends before its tick would pass 2^64 */
    for (uint64_t v = 0; (double)v <= s->ymax; v += ystep) {
        double y = sy(s, v);
        fprintf(f,
                "<line class=\"ytick\" x1=\"%.0f\" x2=\"%.0f\" y1=\"%.1f\" y2=\"%.1f\" "
                "stroke=\"#eee\"/><text class=\"ytick\" x=\"%.0f\" y=\"%.1f\" "
                "text-anchor=\"end\">%s</text>",
                X0, W - 10, y, y, X0 - 3, y + 4, ytick_label(v, b, sizeof b));
        if (v > UINT64_MAX - ystep)
            break;
    }
    uint64_t step = tick_step(s->t1 - s->t0), t0 = vr_u64_sat(s->t0);
    for (uint64_t t = t0 / step * step + (t0 % step ? step : 0); (double)t <= s->t1; t += step) {
        double x = sx(s, t);
        fprintf(f,
                "<line class=\"tick\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.0f\" y2=\"%.0f\" "
                "stroke=\"#888\"/><text class=\"tick\" x=\"%.1f\" y=\"%.0f\" "
                "text-anchor=\"middle\">",
                x, x, H - 20, H - 16, x, H - 5);
        tick_label(f, t, s->t1);
        fputs("</text>", f);
        if (t > UINT64_MAX - step)
            break;
    }
}

/* The recorded device activity: first to last timeline point or failed
 * allocation (ns since the trace's start); false when there is none. */
static bool activity(const vr_report *r, uint64_t *a, uint64_t *b)
{
    *a = UINT64_MAX;
    *b = 0;
    for (size_t i = 0; i < r->ndevices; i++) {
        const vr_device *d = &r->devices[i];
        if (!d->ntimeline)
            continue;
        *a = d->timeline[0].t_ns < *a ? d->timeline[0].t_ns : *a;
        *b = d->timeline[d->ntimeline - 1].t_ns > *b ? d->timeline[d->ntimeline - 1].t_ns : *b;
    }
    for (size_t i = 0; i < r->nooms; i++) {
        *a = r->ooms[i].t_ns < *a ? r->ooms[i].t_ns : *a;
        *b = r->ooms[i].t_ns > *b ? r->ooms[i].t_ns : *b;
    }
    return *a <= *b;
}

/* The default window: the device activity with a 3% margin each side
 * (at least 1 us), never before the start of the run. */
static scale activity_scale(const vr_report *r, double ymax)
{
    uint64_t a, b;
    if (!activity(r, &a, &b))
        return (scale){0, (double)r->duration_ns, ymax};
    double m = (double)(b - a) * 0.03;
    if (m < 1000)
        m = 1000;
    return (scale){(double)a > m ? (double)a - m : 0, (double)b + m, ymax};
}

static double timeline_ymax(const vr_report *r)
{
    double ymax = 1;
    for (size_t i = 0; i < r->ndevices; i++) {
        uint64_t m = r->devices[i].peak_reserved > r->devices[i].peak_allocated
                         ? r->devices[i].peak_reserved
                         : r->devices[i].peak_allocated;
        if ((double)m * 1.1 > ymax)
            ymax = (double)m * 1.1;
    }
    /* the capacity is drawn when it is at most 4x the peak (above, the
     * curves would be flat); the note under the timeline names it anyway */
    for (size_t i = 0; i < r->ndevices; i++) {
        double t = (double)r->devices[i].total_bytes;
        if (t && t <= 4 * ymax && t * 1.05 > ymax)
            ymax = t * 1.05;
    }
    return ymax;
}

static void device_lines(FILE *f, const vr_report *r, const scale *s)
{
    char b[32];
    static const char *colors[][2] = {{"#1f6feb", "#f0883e"}, {"#2da44e", "#bf3989"}};
    for (size_t i = 0; i < r->ndevices; i++) {
        const vr_device *d = &r->devices[i];
        polyline(f, s, r, d, true, colors[i % 2][1]);
        polyline(f, s, r, d, false, colors[i % 2][0]);
        if (d->total_bytes && (double)d->total_bytes <= s->ymax)
            fprintf(f,
                    "<line x1=\"%.0f\" x2=\"%.0f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#999\" "
                    "stroke-dasharray=\"6 3\" class=\"capacity\"><title>device %d capacity"
                    "</title></line><text class=\"capacity\" x=\"%.0f\" y=\"%.1f\" "
                    "text-anchor=\"end\" fill=\"#666\">device %d capacity %s</text>",
                    X0, W - 10, sy(s, d->total_bytes), sy(s, d->total_bytes), d->id, W - 12,
                    sy(s, d->total_bytes) + 12, d->id, SZ(d->total_bytes, b));
    }
}

/* One view of the timeline: id "timeline-IDX" (activity) or
 * "timeline-IDX-whole" (the whole run, hidden until the toggle). */
static void timeline_svg(FILE *f, const vr_report *r, size_t idx, const scale *s, bool whole)
{
    const char *sfx = whole ? "-whole" : "";
    fprintf(f,
            "<svg id=\"timeline-%zu%s\" class=\"timeline%s\" xmlns=\"http://www.w3.org/2000/svg\" "
            "data-idx=\"%zu\" data-t0=\"%.0f\" data-t1=\"%.0f\" data-x0=\"%.0f\" "
            "data-xw=\"%.0f\" "
            "width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\"%s>"
            "<clipPath id=\"clip-%zu%s\"><rect x=\"%.0f\" y=\"0\" width=\"%.0f\" "
            "height=\"%.0f\"/></clipPath><g clip-path=\"url(#clip-%zu%s)\">",
            idx, sfx, whole ? " whole" : "", idx, s->t0, s->t1, X0, W - 60.0, W, H, W, H,
            whole ? " style=\"display:none\"" : "", idx, sfx, X0, W - 10 - X0, H, idx, sfx);
    spans_svg(f, r, s);
    device_lines(f, r, s);
    marks_svg(f, r, s);
    fprintf(f,
            "<line class=\"cursor\" x1=\"0\" x2=\"0\" y1=\"20\" y2=\"%.0f\" "
            "stroke=\"#555\" visibility=\"hidden\"/></g>",
            H - 20);
    axes_svg(f, s);
    fputs("</svg>", f);
}

/* Names the capacities too large to draw (timeline_ymax leaves them out). */
static void capacity_note(FILE *f, const vr_report *r, double ymax)
{
    char b[32];
    for (size_t i = 0; i < r->ndevices; i++) {
        const vr_device *d = &r->devices[i];
        if (d->total_bytes && (double)d->total_bytes > ymax)
            fprintf(f, "; <span class=\"capacity\">device %d capacity %s (above the scale)</span>",
                    d->id, SZ(d->total_bytes, b));
        else if (d->total_bytes)
            fprintf(f, "; dashed grey: device %d capacity", d->id);
    }
}

/* The short name of a hover site: its first frame and file:line (or
 * module), HTML-escaped by the script (textContent). */
static void hover_site_name(FILE *f, const vr_stack *st, const char *names)
{
    char buf[64], name[512];
    if (!st->n) {
        vr_json_str(f, "(no stack)");
        return;
    }
    const vr_frame *fr = &st->frames[0];
    if (fr->file[0])
        snprintf(name, sizeof name, "%s (%s:%" PRIu32 ")", vr_frame_label(fr, buf, sizeof buf),
                 vr_basename(fr->file), fr->line);
    else
        snprintf(name, sizeof name, "%s", vr_frame_label(fr, buf, sizeof buf));
    if (names && names[0]) {
        size_t len = strlen(name);
        snprintf(name + len, sizeof name - len, " [%s]", names);
    }
    vr_json_str(f, name);
}

/* The data the timeline's hover reads: {"dev":[[[t,alloc,res],...],...],
 * "hover":[[t,[[name,bytes],...]],...]} (ns since the start, bytes). */
static void hover_data(FILE *f, const vr_report *r, size_t idx)
{
    fprintf(f, "<script type=\"application/json\" class=\"tldata\" data-idx=\"%zu\">{\"dev\":[",
            idx);
    for (size_t i = 0; i < r->ndevices; i++) {
        const vr_device *d = &r->devices[i];
        fprintf(f, "%s[", i ? "," : "");
        for (size_t k = 0; k < d->ntimeline; k++)
            fprintf(f, "%s[%" PRIu64 ",%" PRIu64 ",%" PRIu64 "]", k ? "," : "", d->timeline[k].t_ns,
                    d->timeline[k].allocated, d->timeline[k].reserved);
        fputc(']', f);
    }
    fputs("],\"hover\":[", f);
    for (size_t i = 0; i < r->nhover; i++) {
        const vr_hover *h = &r->hover[i];
        fprintf(f, "%s[%" PRIu64 ",[", i ? "," : "", h->t_ns);
        for (size_t k = 0; k < h->n; k++) {
            fputs(k ? ",[" : "[", f);
            hover_site_name(f, &h->stack[k], h->names[k]);
            fprintf(f, ",%" PRIu64 "]", h->bytes[k]);
        }
        fputs("]]", f);
    }
    fputs("]}</script>", f);
}

static void timeline(FILE *f, const vr_report *r, size_t idx)
{
    double ymax = timeline_ymax(r);
    scale act = activity_scale(r, ymax);
    scale all = {0, act.t1 > (double)r->duration_ns ? act.t1 : (double)r->duration_ns, ymax};
    fprintf(f,
            "<summary><h3>Timeline</h3></summary><p class=\"note\">showing the recorded device "
            "activity, "
            "%s – %s of a %s run (times since the process started) "
            "<label><input type=\"checkbox\" class=\"tl-whole\" data-idx=\"%zu\"> whole "
            "run</label></p>",
            VR_TIME(vr_u64_sat(act.t0)), VR_TIME(vr_u64_sat(act.t1)), VR_TIME(r->duration_ns), idx);
    timeline_svg(f, r, idx, &act, false);
    timeline_svg(f, r, idx, &all, true);
    fprintf(f, "<div id=\"tooltip-%zu\" class=\"tooltip\" hidden></div>", idx);
    hover_data(f, r, idx);
    fputs("<div class=\"note\">blue: allocated, orange: reserved (registered heaps "
          "+ direct allocations); red dot: peak; dashed red: failed allocations (pale: "
          "recovered); shaded: iterations",
          f);
    if (r->iteration_name[0]) {
        fputs(" (NVTX range ", f);
        esc(f, r->iteration_name);
        fputs(r->iteration_numbered ? "&lt;N&gt;)" : ")", f);
    }
    capacity_note(f, r, timeline_ymax(r));
    fputs("; hover for the largest live call sites</div>", f);
}

/* ---- flamegraph ------------------------------------------------------------- */

static void flamegraph(FILE *f, const vr_report *r, size_t idx)
{
    fprintf(f,
            "<summary><h3>Icicle of the peak</h3></summary><p class=\"fg-tools\">"
            "<input type=\"search\" id=\"flamegraph-%zu-search\" placeholder=\"search "
            "frames\"> <button type=\"button\" id=\"flamegraph-%zu-reset\">reset zoom"
            "</button> <span class=\"note\" id=\"flamegraph-%zu-status\"></span> "
            "<span class=\"note\">(click a frame to zoom, a grey bar to zoom out)</span></p>"
            "<div id=\"flamegraph-%zu\" class=\"fg\"></div>"
            "<script type=\"application/json\" class=\"fgdata\" "
            "data-target=\"flamegraph-%zu\">[",
            idx, idx, idx, idx, idx);
    for (size_t i = 0; i < r->nsites && i < FG_MAX_SITES; i++) {
        const vr_site *s = &r->sites[i];
        fprintf(f, "%s[%" PRIu64 ",[", i ? "," : "", s->bytes);
        if (!s->stack.n)
            vr_json_str(f, "(no stack)");
        for (size_t k = s->stack.n; k-- > 0;) {
            char buf[512];
            vr_json_str(f, vr_frame_name(&s->stack.frames[k], buf, sizeof buf));
            if (k)
                fputc(',', f);
        }
        fputs("]]", f);
    }
    /* what is not drawn, one frame of its own: the icicle's root is the peak */
    uint64_t rest = r->sites_left_out.bytes, stacks = r->sites_left_out.stacks;
    for (size_t i = FG_MAX_SITES; i < r->nsites; i++, stacks++)
        rest += r->sites[i].bytes;
    if (stacks && r->nsites)
        fprintf(f, ",[%" PRIu64 ",[\"(%" PRIu64 " smaller stacks not drawn)\"]]", rest, stacks);
    fputs("]</script>", f);
}

/* ---- tables --------------------------------------------------------------------- */

/* The headline (vr_headline_of): verdict and remedy under the trace's name. */
static void headline(FILE *f, const vr_report *r)
{
    vr_headline h;
    vr_headline_of(r, &h);
    fputs("<p class=\"verdict\" id=\"verdict\" data-kind=\"", f);
    esc(f, h.kind);
    fputs("\"><b>", f);
    esc(f, h.text);
    fputs("</b><br>remedy: ", f);
    esc(f, h.remedy);
    fputs("</p>", f);
}

static double pct(uint64_t a, uint64_t b)
{
    return b ? 100.0 * (double)a / (double)b : 0.0;
}

/* One row per (device, kind): the JSON "accounting" numbers. */
static void accounting_table(FILE *f, const vr_report *r)
{
    char b1[32], b2[32];
    if (!r->naccounting)
        return;
    fputs("<table " VR_MARK_ACCOUNTING_HTML "><tr><th>device</th><th>kind</th><th>allocations</th>"
          "<th>frees</th><th>failed</th><th>peak live</th><th>leaked</th></tr>",
          f);
    for (size_t i = 0; i < r->naccounting; i++) {
        const vr_acct_row *a = &r->accounting[i];
        fprintf(f, a->host ? "<tr><td>host</td><td>" : "<tr><td>%d</td><td>", a->device);
        esc(f, a->kind);
        fprintf(f,
                "</td><td class=\"n\">%" PRIu64 "</td><td class=\"n\">%" PRIu64
                "</td><td class=\"n\">%" PRIu64 "</td><td class=\"n\">%s</td><td "
                "class=\"n\">%s in %" PRIu64 "</td></tr>",
                a->allocations, a->frees, a->failed, SZ(a->peak_live_bytes, b1),
                SZ(a->leaked_bytes, b2), a->leaked_allocations);
    }
    fputs("</table>", f);
}

/* How many NVTX events the Chrome trace (--chrome) shows. */
static void nvtx_line(FILE *f, const vr_report *r)
{
    if (!r->nnvtx)
        return;
    vr_nvtx_counts c = vr_nvtx_count(r);
    fprintf(f,
            "<p class=\"note\" " VR_MARK_NVTX_HTML ">NVTX: %zu push/pop ranges, %zu start/end "
            "ranges, %zu named threads (--chrome shows them)</p>",
            c.ranges, c.start_end, c.threads);
}

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
            " allocation%s</td></tr><tr><th>allocations / frees / failed</th><td>%" PRIu64
            " / %" PRIu64 " / %" PRIu64 "</td></tr>",
            SZ(r->peak_allocated, b1), VR_TIME(r->peak_allocated_t_ns), SZ(r->peak_reserved, b2),
            SZ(r->leaked_bytes, b3), r->leaked_count, vsize_plural(r->leaked_count), r->allocations,
            r->frees, r->failed_allocations);
    for (size_t i = 0; i < r->ndevices; i++) {
        fprintf(f, "<tr><th>device %d</th><td>", r->devices[i].id);
        esc(f, r->devices[i].name);
        fprintf(f, " (%s)", SZ(r->devices[i].total_bytes, b1));
        if (r->devices[i].pool_reserved_peak)
            fprintf(f, "; stream-ordered pools reserved %s at most where sampled",
                    SZ(r->devices[i].pool_reserved_peak, b1));
        if (r->had_captures)
            fprintf(f, VR_CAPTURED_FMT, SZ(r->devices[i].captured_at_peak, b1),
                    SZ(r->devices[i].captured_at_exit, b2));
        if (r->had_graph_memory)
            fprintf(f, VR_GRAPH_FMT, SZ(r->devices[i].graph_at_peak, b1),
                    SZ(r->devices[i].graph_at_exit, b2));
        fputs("</td></tr>", f);
    }
    fputs("</table>", f);
    for (size_t i = 0; i < r->nnotes; i++) {
        fputs("<p class=\"note\">note: ", f);
        esc(f, r->notes[i]);
        fputs("</p>", f);
    }
    accounting_table(f, r);
    nvtx_line(f, r);
}

/* The NVTX Mem region names given at a site, beside its stack. */
static void names_html(FILE *f, const char *names)
{
    if (!names || !names[0])
        return;
    fputs("<div class=\"regions\">regions: ", f);
    esc(f, names);
    fputs("</div>", f);
}

/* vr_more_line as a note under a table of n entries showing top; nothing
 * when empty. */
static void more_html(FILE *f, size_t n, size_t top, const char *unit, const vr_left_out *lo,
                      bool by_range)
{
    char line[256];
    if (*vr_more_line(line, sizeof line, n > top ? n - top : 0, unit, lo, by_range)) {
        fputs("<p class=\"note\">", f);
        esc(f, line);
        fputs("</p>", f);
    }
}

/* Call sites live at the peak inside the dominant range (phases[0]). */
static void range_sites_table(FILE *f, const vr_report *r, size_t top)
{
    char b[32];
    if (!r->nrange_sites)
        return;
    fputs("<h3 " VR_MARK_RANGE_SITES_HTML ">Top call sites in ", f);
    esc(f, r->phases[0].range);
    fputs(" at the peak</h3><table><tr><th>bytes</th><th>% of the range</th>"
          "<th>allocations</th><th>stack</th></tr>",
          f);
    for (size_t i = 0; i < r->nrange_sites && i < top; i++) {
        const vr_site *s = &r->range_sites[i];
        fprintf(f,
                "<tr><td class=\"n\">%s</td><td class=\"n\">%.1f</td><td class=\"n\">%" PRIu64
                "</td><td>",
                SZ(s->bytes, b), pct(s->bytes, r->phases[0].bytes), s->count);
        stack_html(f, &s->stack, STACK_SHOWN);
        alike_html(f, &r->range_sites[0].stack, sizeof *s, i, STACK_SHOWN, VR_ALIKE_ROW);
        fputs("</td></tr>", f);
    }
    fputs("</table>", f);
    more_html(f, r->nrange_sites, top, "sites", &r->range_sites_left_out, false);
}

static void sites_table(FILE *f, const vr_report *r, size_t top)
{
    char b[32];
    fputs("<summary><h3>Top call sites at the peak</h3></summary><table "
          "id=\"sites\"><tr><th>bytes</th><th>%</th>"
          "<th>allocations</th><th>stack</th></tr>",
          f);
    for (size_t i = 0; i < r->nsites && i < top; i++) {
        fprintf(f,
                "<tr><td class=\"n\">%s</td><td class=\"n\">%.1f</td><td class=\"n\">%" PRIu64
                "</td><td>",
                SZ(r->sites[i].bytes, b), pct(r->sites[i].bytes, r->peak_allocated),
                r->sites[i].count);
        stack_html(f, &r->sites[i].stack, STACK_SHOWN);
        alike_html(f, &r->sites[0].stack, sizeof r->sites[0], i, STACK_SHOWN, VR_ALIKE_ROW);
        names_html(f, r->sites[i].names);
        fputs("</td></tr>", f);
    }
    fputs("</table>", f);
    more_html(f, r->nsites, top, "sites", &r->sites_left_out, false);
    fputs("<h3>Peak by NVTX range</h3><table><tr><th>bytes</th><th>%</th>"
          "<th>range</th></tr>",
          f);
    for (size_t i = 0; i < r->nphases && i < top; i++) {
        fprintf(f, "<tr><td class=\"n\">%s</td><td class=\"n\">%.1f</td><td>",
                SZ(r->phases[i].bytes, b), pct(r->phases[i].bytes, r->peak_allocated));
        esc(f, r->phases[i].range);
        fputs("</td></tr>", f);
    }
    fputs("</table>", f);
    more_html(f, r->nphases, top, "NVTX ranges", &r->phases_left_out, true);
    range_sites_table(f, r, top);
}

/* The suggested batch of a capacity failure, worded by its kind. */
static void batch_html(FILE *f, const vr_oom *o)
{
    if (o->verdict != VR_VERDICT_CAPACITY || o->max_batch < 0)
        return;
    if (!strcmp(o->batch_kind, "upper_bound"))
        fprintf(f,
                "<p class=\"batch upper_bound\">batches above %" PRId64
                " cannot fit (an upper bound, not a batch known to fit: no training step "
                "completed; the explanation gives the run that measures one)</p>",
                o->max_batch);
    else if (!strcmp(o->batch_kind, "measured"))
        fprintf(f,
                "<p class=\"batch measured\">estimated largest batch: about %" PRId64
                " (from a completed training step; the explanation gives the run that "
                "confirms it)</p>",
                o->max_batch);
}

static void oom_row(FILE *f, const vr_report *r, size_t i, bool fatal)
{
    char b1[32], b2[32];
    const vr_oom *o = &r->ooms[i];
    fprintf(f,
            "<tr class=\"%s\"><td class=\"n\">#%zu<br>%s</td><td class=\"n\">%s</td>"
            "<td class=\"n\">%s</td><td class=\"verdict v-%s\">%s</td><td class=\"expl\">",
            fatal          ? "fatal"
            : o->recovered ? "recovered"
                           : "failed",
            i + 1, VR_TIME(o->t_ns), SZ(o->requested_bytes, b1),
            o->free_known ? SZ(o->device_free_bytes, b2) : "unknown", vr_verdict_name(o->verdict),
            vr_verdict_name(o->verdict));
    if (fatal && vr_oom_handled(r))
        fputs("<p class=\"fatal-label\">HANDLED: the last failure that was not "
              "recovered; " VR_OOM_HANDLED_TEXT "</p>",
              f);
    else if (fatal)
        fputs("<p class=\"fatal-label\">FATAL: the last failure that was not recovered</p>", f);
    if (o->recovered)
        fputs("<p class=\"recovered-label\">recovered: the program retried and went on</p>", f);
    esc(f, o->explanation);
    batch_html(f, o);
    char line[640];
    if (*vr_oom_alike_text(r, vr_fatal_oom(r), i, STACK_SHOWN, line, sizeof line)) {
        fputs("<p class=\"alike\">", f);
        esc(f, line);
        fputs("</p>", f);
    }
    if (o->repeat.n) {
        fputs("<p class=\"repeats\">", f);
        esc(f, vr_oom_repeats_text(r, o, line, sizeof line));
        fputs("</p>", f);
    }
    fputs("</td><td>", f);
    stack_html(f, &o->stack, STACK_SHOWN);
    fputs("</td></tr>", f);
}

/* The fatal failure (vr_fatal_oom) first and marked, then the others in
 * time order, recovered ones muted, repeats counted on the failure they
 * repeat (vr_oom_next). */
static void ooms_table(FILE *f, const vr_report *r, size_t top)
{
    if (r->error_allocations) /* failures of other errors are listed too */
        fprintf(f,
                "<summary><h3>Out of memory (%zu; %" PRIu64 " of the failed allocations not out "
                "of memory)</h3></summary>",
                r->nooms, r->error_allocations);
    else
        fprintf(f, "<summary><h3>Out of memory (%zu)</h3></summary>", r->nooms);
    if (!r->nooms)
        return;
    fputs("<table id=\"ooms\"><tr><th>#, time</th><th>request</th><th>device free</th>"
          "<th>verdict</th><th>explanation</th><th>failing call</th></tr>",
          f);
    size_t fatal = vr_fatal_oom(r), covered = 0;
    for (size_t i = SIZE_MAX, shown = 0; shown < top && (i = vr_oom_next(r, fatal, i)) != SIZE_MAX;
         shown++) {
        oom_row(f, r, i, i == fatal);
        covered += 1 + r->ooms[i].repeat.n;
    }
    fputs("</table>", f);
    if (r->nooms > covered)
        fprintf(f, "<p class=\"note\">… %zu more</p>", r->nooms - covered);
}

/* The failed free calls (freefail.c), the first `top`. */
static void free_failed_table(FILE *f, const vr_report *r, size_t top)
{
    fprintf(f, "<summary><h3>Failed frees (%" PRIu64 ")</h3></summary>", r->free_failed_total);
    fputs("<table id=\"failed_frees\"><tr><th>#, time</th><th>call</th><th>address</th>"
          "<th>error</th><th>what the address held</th><th>call stack</th></tr>",
          f);
    size_t covered = 0;
    char line[192];
    for (size_t i = 0, shown = 0; i < r->nfree_failed && shown < top; i++) {
        const vr_free_failed *x = &r->free_failed[i];
        if (x->repeat.of != SIZE_MAX)
            continue;
        fprintf(f, "<tr><td>#%zu, %s</td><td>", i + 1, VR_TIME(x->t_ns));
        esc(f, x->call);
        fprintf(f, "</td><td>0x%" PRIx64 "</td><td>%d", x->addr, x->error);
        esc(f, x->error_meaning);
        fputs("</td><td>", f);
        esc(f, x->what);
        if (x->repeat.n) {
            fputs("<p class=\"repeats\">", f);
            esc(f, vr_free_failed_repeats_text(r, x, line, sizeof line));
            fputs("</p>", f);
        }
        fputs("</td><td>", f);
        stack_html(f, &x->stack, 8);
        alike_html(f, &r->free_failed[0].stack, sizeof *x, i, 8, "#%zu");
        fputs("</td></tr>", f);
        covered += 1 + x->repeat.n;
        shown++;
    }
    fputs("</table>", f);
    if (r->free_failed_total > covered)
        fprintf(f, "<p class=\"note\">… %" PRIu64 " more (--json lists the first %zu)</p>",
                r->free_failed_total - covered, r->nfree_failed);
}

static void leaks_table(FILE *f, const vr_report *r, size_t top)
{
    char b[32];
    char h[32];
    fprintf(f,
            "<summary><h3>Leaks: %s of device memory in %" PRIu64
            " allocation%s live at %s; host memory "
            "(pinned, registered): %s in %" PRIu64 "</h3></summary>",
            SZ(r->leaked_bytes, b), r->leaked_count, vsize_plural(r->leaked_count),
            r->has_end ? "exit" : "the end", SZ(r->host_leaked_bytes, h), r->host_leaked_count);
    if (!r->nleaks)
        return;
    if (r->cached_at_exit_count || r->host_cached_at_exit_count)
        fprintf(f,
                "<p class=\"note\">of which a caching allocator's cache at exit (freed when "
                "the process ends): %s of device memory in %" PRIu64 " allocation%s, %s of host "
                "memory in %" PRIu64 "</p>",
                SZ(r->cached_at_exit_bytes, b), r->cached_at_exit_count,
                vsize_plural(r->cached_at_exit_count), SZ(r->host_cached_at_exit_bytes, h),
                r->host_cached_at_exit_count);
    fputs("<table id=\"leaks\"><tr><th>bytes</th><th>allocations</th><th>kind</th>"
          "<th>allocated at</th></tr>",
          f);
    for (size_t i = 0; i < r->nleaks && i < top; i++) {
        fprintf(f, "<tr><td class=\"n\">%s</td><td class=\"n\">%" PRIu64 "</td><td>",
                SZ(r->leaks[i].bytes, b), r->leaks[i].count);
        vr_html_str(f, r->leaks[i].kind);
        if (r->leaks[i].cache_of) {
            fputs(" (cache of ", f);
            vr_html_str(f, r->leaks[i].cache_of);
            fputc(')', f);
        }
        fputs("</td><td>", f);
        stack_html(f, &r->leaks[i].stack, STACK_SHOWN);
        alike_html(f, &r->leaks[0].stack, sizeof r->leaks[0], i, STACK_SHOWN, VR_ALIKE_ROW);
        fputs("</td></tr>", f);
    }
    fputs("</table>", f);
    more_html(f, r->nleaks, top, "stacks", &r->leaks_left_out, false);
}

static void growth_table(FILE *f, const vr_report *r, size_t top)
{
    char b1[32], b2[32];
    fputs("<summary><h3>Growth per iteration (", f);
    if (r->iteration_name[0]) {
        fputs("NVTX range ", f);
        esc(f, r->iteration_name);
        if (r->iteration_numbered)
            fputs("&lt;N&gt;", f);
        if (r->iteration_parent[0]) {
            fputs(" inside ", f);
            esc(f, r->iteration_parent);
        }
    } else if (r->iteration_kind[0]) {
        fputs("repeating call-site pattern", f);
    } else {
        fputs("no iterations: no growth measured", f);
    }
    const vr_growth *t = &r->total_growth, *h = &r->host_growth;
    char g1[40];
    fprintf(f, ", %" PRIu64 " iterations): total %s/iteration, R² %.3f", r->iterations,
            vr_format_size_signed(t->bytes_per_iteration, g1, sizeof g1), t->r2);
    if (t->projected_oom_iteration >= 0 && t->projected_oom_device >= 0)
        fprintf(f, ", out of memory at iteration %" PRId64 " on device %d",
                t->projected_oom_iteration, t->projected_oom_device);
    if (h->bytes_per_iteration >= 1.0 || h->bytes_per_iteration <= -1.0)
        fprintf(f, "; pinned host memory %s/iteration, R² %.3f",
                vr_format_size_signed(h->bytes_per_iteration, g1, sizeof g1), h->r2);
    fputs("</h3></summary>", f);
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
                SZ(vr_u64_sat(g->bytes_per_iteration), b1), g->r2, SZ(g->live_bytes, b2));
        if (g->projected_oom_iteration >= 0)
            fprintf(f, "iteration %" PRId64, g->projected_oom_iteration);
        fputs("</td><td>", f);
        stack_html(f, &g->stack, STACK_SHOWN);
        alike_html(f, &r->growth[0].stack, sizeof *g, i, STACK_SHOWN, VR_ALIKE_ROW);
        fputs("</td></tr>", f);
    }
    fputs("</table>", f);
}

static void frag_table(FILE *f, const vr_report *r, size_t top)
{
    char b1[32], b2[32], b3[32];
    fputs("<summary><h3>Fragmentation inside registered heaps</h3></summary>", f);
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

/* "+1.00 MiB (R² 0.998, 5 iterations)", or why there is none. */
static void growth_cell(FILE *f, const vr_report *r)
{
    char b[32];
    double g = r->total_growth.bytes_per_iteration;
    if (!r->iterations || !(r->iteration_name[0] || r->iteration_kind[0])) {
        fputs("no iterations", f);
        return;
    }
    fprintf(f, "%s%s (R² %.3f, %" PRIu64 " iterations)", g < 0 ? "−" : "+",
            SZ(vr_u64_sat(fabs(g)), b), r->total_growth.r2, r->iterations);
}

static void combined(FILE *f, vr_report *const *r, size_t n)
{
    char b1[32], b2[32], b3[32];
    fputs("<h2>Summary</h2><table><tr><th>file</th><th>peak allocated</th><th>peak reserved"
          "</th><th>leaked</th><th>growth per iteration</th><th>OOMs</th></tr>",
          f);
    for (size_t i = 0; i < n; i++) {
        fprintf(f, "<tr><td><a href=\"#trace-%zu\">", i);
        esc(f, vr_basename(r[i]->path));
        fprintf(f,
                "</a></td><td class=\"n\">%s</td><td class=\"n\">%s</td><td class=\"n\">%s</td>"
                "<td class=\"n growth\">",
                SZ(r[i]->peak_allocated, b1), SZ(r[i]->peak_reserved, b2),
                SZ(r[i]->leaked_bytes, b3));
        growth_cell(f, r[i]);
        fprintf(f, "</td><td class=\"n\">%zu</td></tr>", r[i]->nooms);
    }
    fputs("</table>", f);
}

static void sec_open(FILE *f, const char *name, bool open)
{
    fprintf(f, "<details class=\"sec\" data-sec=\"%s\"%s>", name, open ? " open" : "");
}

/* The sections of one trace, each a <details> whose summary is its heading:
 * the timeline, the failures and the icicle open, the long tables closed
 * unless they are what the run is about (leaks, growth), so the page opens
 * short. */
static void sections(FILE *f, const vr_report *r, size_t i, size_t top)
{
    sec_open(f, "timeline", true);
    timeline(f, r, i);
    fputs("</details>", f);
    sec_open(f, "ooms", r->nooms > 0);
    ooms_table(f, r, top);
    fputs("</details>", f);
    if (r->nfree_failed) {
        sec_open(f, "failed_frees", true);
        free_failed_table(f, r, top);
        fputs("</details>", f);
    }
    sec_open(f, "icicle", true);
    flamegraph(f, r, i);
    fputs("</details>", f);
    sec_open(f, "sites", false);
    sites_table(f, r, top);
    fputs("</details>", f);
    sec_open(f, "leaks", r->leaked_bytes > 0);
    leaks_table(f, r, top);
    fputs("</details>", f);
    sec_open(f, "growth", r->ngrowth > 0);
    growth_table(f, r, top);
    fputs("</details>", f);
    sec_open(f, "fragmentation", false);
    frag_table(f, r, top);
    fputs("</details>", f);
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
        headline(out, r[i]);
        summary(out, r[i]);
        sections(out, r[i], i, top);
        fputs("</section>\n", out);
    }
    fputs("<script>", out);
    fputs(script, out);
    fputs("</script></body></html>\n", out);
    return fflush(out) == 0 && !ferror(out) ? 0 : -1;
}
