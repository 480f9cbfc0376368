/* verdict.c: the headline every report opens with (report.h, vr_headline):
 * one verdict (OOM and its cause, growing, leaked at exit, healthy) and its
 * remedy. The fragmentation remedies are the ones the scenario suite
 * measured (docs/scenarios.md, rows vary_batch_fragmentation and
 * empty_cache); the capacity remedy is the OOM's suggested batch (oom.c). */
#include "internal.h"
#include "vsize.h"

#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#define SZ(v, b) vr_format_size((v), (b), sizeof(b))

/* Innermost frames that every growing site shares (the allocation wrappers);
 * 0 with one site. Never the whole of any stack. */
static size_t common_prefix(const vr_report *r)
{
    if (r->ngrowth < 2)
        return 0;
    size_t p = r->growth[0].stack.n;
    for (size_t i = 1; i < r->ngrowth; i++) {
        p = vr_shared_frames(&r->growth[0].stack, &r->growth[i].stack, p, vr_same_frame);
    }
    for (size_t i = 0; i < r->ngrowth; i++)
        if (r->growth[i].stack.n && p >= r->growth[i].stack.n)
            p = r->growth[i].stack.n - 1;
    return p;
}

static const char *frame_name(vr_arena *a, const vr_frame *fr)
{
    char buf[160];
    const char *fn = vr_frame_label(fr, buf, sizeof buf);
    if (fr->file[0] && fr->line)
        return vr_sprintf(a, "%s (%s:%" PRIu32 ")", fn, vr_basename(fr->file), fr->line);
    return vr_strdup(a, fn);
}

static int cmp_culprit(const void *a, const void *b)
{
    const vr_culprit *x = a, *y = b;
    if (x->bytes_per_iteration != y->bytes_per_iteration)
        return x->bytes_per_iteration < y->bytes_per_iteration ? 1 : -1;
    return strcmp(x->label, y->label);
}

/* A growing site's stack from its culprit frame on: a Python stack's lead
 * (the program's line), else past the p frames every growing site shares. */
static vr_stack culprit_stack(vr_stack st, size_t p)
{
    if (st.lead) {
        st.frames += st.lead;
        st.n -= st.lead;
    } else if (st.n > p) {
        st.frames += p;
        st.n -= p;
    }
    st.lead = 0;
    return st;
}

/* The name of a culprit stack (culprit_stack's): vr_culprit.label. */
static const char *culprit_name(vr_arena *a, const vr_stack *st)
{
    return st->n ? frame_name(a, &st->frames[0]) : "(no stack)";
}

/* The culprit's name of a site's stack, as the headline lists it. */
static const char *culprit_label(const vr_report *r, const vr_stack *stack)
{
    vr_stack st = culprit_stack(*stack, common_prefix(r));
    return culprit_name(r->arena, &st);
}

/* Every growing site grouped by its culprit frame, fastest first, with
 * their shares: of their sum, or of the total growth when growth per site
 * was not analysed for every call site (growth_sites_capped), the share of
 * the sites not analysed then in *unanalysed (0 to 1). Until session 26 the
 * shares were of the sites analysed only: with 4096 new call sites kept
 * each step for 32 steps the headline gave 91 % and 9 % to sites that
 * stopped growing in step 16, and said nothing of the half of the growth
 * past them. */
static vr_culprit *culprits(const vr_report *r, size_t *n, double *unanalysed)
{
    size_t p = common_prefix(r), m = 0;
    double sum = 0;
    vr_culprit *c = vr_alloc(r->arena, (r->ngrowth ? r->ngrowth : 1) * sizeof *c);
    for (size_t i = 0; i < r->ngrowth; i++) {
        const vr_growth *g = &r->growth[i];
        vr_stack st = culprit_stack(g->stack, p);
        const char *label = culprit_name(r->arena, &st);
        size_t k = 0;
        while (k < m && strcmp(c[k].label, label))
            k++;
        if (k == m) /* growth is fastest first: the first stack is the fastest */
            c[m++] = (vr_culprit){.label = label, .stack = st};
        c[k].bytes_per_iteration += g->bytes_per_iteration;
        sum += g->bytes_per_iteration;
    }
    double total = r->total_growth.bytes_per_iteration, rest = total - r->growth_analysed;
    *unanalysed = r->growth_sites_capped && total > 0 && rest > 0 ? rest / total : 0;
    if (r->growth_sites_capped && total > sum)
        sum = total;
    for (size_t k = 0; k < m; k++)
        c[k].share = sum > 0 ? c[k].bytes_per_iteration / sum : 0;
    if (m)
        qsort(c, m, sizeof *c, cmp_culprit);
    *n = m;
    return c;
}

static bool growing(const vr_report *r)
{
    const vr_growth *t = &r->total_growth;
    return t->bytes_per_iteration >= 1.0 && (t->r2 >= 0.8 || t->sustained) && r->iterations >= 3 &&
           (t->projected_oom_iteration >= 0 || r->growth_unprojected) && r->ngrowth > 0;
}

/* text followed by h's growing sites with their shares ("a 70%, b 30%"). */
static const char *with_sites(const vr_report *r, const vr_headline *h, const char *text)
{
    for (size_t k = 0; k < h->nsites; k++)
        text = vr_sprintf(r->arena, "%s%s %s %.0f%%", text, k ? "," : "", h->sites[k].label,
                          100.0 * h->sites[k].share);
    if (h->unanalysed_share > 0.005)
        text = vr_sprintf(r->arena, "%s; %.0f%% in call sites not analysed (see the note)", text,
                          100.0 * h->unanalysed_share);
    return text;
}

/* The caching allocator every growing site is in whose growth may be its
 * cache (vr_growth.cache_of), or NULL when one is not. */
static const char *growth_all_cache(const vr_report *r)
{
    for (size_t i = 0; i < r->ngrowth; i++)
        if (!r->growth[i].cache_of || strcmp(r->growth[i].cache_of, r->growth[0].cache_of))
            return NULL;
    return r->ngrowth ? r->growth[0].cache_of : NULL;
}

/* "R^2 0.912 over 40 steps", and when the straight line fits less than
 * 0.8 the rise that kept on and made it growth all the same (vr_sustained). */
/* What a call-site-pattern iteration is, for the growth figures ("" for NVTX
 * ranges): with no range per step, the pattern's anchor may allocate
 * several times a step (a loop over layers), and each figure per iteration
 * is then a part of one step's. */
static const char *pattern_words(const vr_report *r)
{
    const vr_stack *st = &r->iteration_site;
    if (strcmp(r->iteration_kind, "call_site") || !st->n)
        return "";
    return vr_sprintf(r->arena,
                      "; an iteration: each allocation at %s after a free, the call-site "
                      "pattern, which may be a part of a step: an NVTX range per step gives "
                      "per-step figures",
                      frame_name(r->arena, &st->frames[st->lead]));
}

static const char *fit_words(const vr_report *r, const vr_growth *t, const char *iteration)
{
    return vr_sprintf(
        r->arena, "R^2 %.3f over %" PRIu64 " %ss%s%s", t->r2, r->iterations, iteration,
        t->r2 < 0.8 && t->sustained ? vr_sprintf(r->arena,
                                                 "; every %s end of the last third above the first "
                                                 "third's highest",
                                                 iteration)
                                    : "",
        pattern_words(r));
}

/* The growth headline when every growing site is a caching allocator's
 * segments that may be its cache: what grew, and why it is no forecast. */
static void headline_cache_growing(const vr_report *r, vr_headline *h, const char *holder)
{
    char b1[32], b2[32];
    const vr_growth *t = &r->total_growth;
    h->projected_oom_iteration = -1;
    char *s = vr_sprintf(
        r->arena,
        "GROWING (%s's segments): +%s per %s (%s, live %s), none repeating an earlier %s's "
        "size: a cache growing to larger requests does that as well as blocks kept across "
        "%ss, and vramtrace sees the segments, not the blocks, so no out of memory is "
        "projected; growing sites:",
        holder, SZ(vr_u64_sat(t->bytes_per_iteration), b1), h->iteration_name,
        fit_words(r, t, h->iteration_name), SZ(t->live_bytes, b2), h->iteration_name,
        h->iteration_name);
    h->text = with_sites(r, h, s);
    h->remedy = "record with `vramtrace run --torch-tensors` to see whether tensors stay alive "
                "across iterations (or compare torch.cuda.memory_allocated() between them)";
}

/* "a 44.54 MiB per train_step ..." plus the growing sites with shares */
/* " on device N" when the run held memory on more than one device and the
 * projection is one device's (model.c, project_per_device), else "". */
static const char *on_device(const vr_report *r, const vr_growth *t)
{
    size_t used = 0;
    for (size_t i = 0; i < r->ndevices; i++)
        used += r->devices[i].id >= 0 && r->devices[i].peak_allocated > 0;
    if (used < 2 || t->projected_oom_device < 0)
        return "";
    return vr_sprintf(r->arena, " on device %d", t->projected_oom_device);
}

static void headline_growing(const vr_report *r, vr_headline *h)
{
    char b1[32], b2[32];
    const vr_growth *t = &r->total_growth;
    h->kind = "growing";
    h->sites = culprits(r, &h->nsites, &h->unanalysed_share);
    h->bytes_per_iteration = t->bytes_per_iteration;
    h->projected_oom_iteration = t->projected_oom_iteration;
    h->iterations = r->iterations;
    const char *holder = growth_all_cache(r);
    if (holder) {
        headline_cache_growing(r, h, holder);
        return;
    }
    const char *when =
        r->growth_unprojected
            ? "no out of memory projected (a stream-ordered pool's reserve is sampled at NVTX "
              "range ends only: see the note)"
            : vr_sprintf(r->arena, "out of memory projected at %s %" PRId64 "%s", h->iteration_name,
                         t->projected_oom_iteration, on_device(r, t));
    char *s = vr_sprintf(r->arena, "GROWING: +%s per %s (%s, live %s): %s; growing sites:",
                         SZ(vr_u64_sat(t->bytes_per_iteration), b1), h->iteration_name,
                         fit_words(r, t, h->iteration_name), SZ(t->live_bytes, b2), when);
    h->text = with_sites(r, h, s);
    h->remedy = vr_sprintf(r->arena,
                           "release what %s keeps alive across %ss (a list or history that "
                           "holds tensors: keep detached scalars, or drop the references at the "
                           "end of each %s)",
                           h->nsites ? h->sites[0].label : "the growing site", h->iteration_name,
                           h->iteration_name);
}

static const char *oom_remedy_of(const vr_report *r, const vr_oom *o, const vr_headline *g);

/* When at least half of what was live at a device failure was allocated
 * during CUDA graph captures (vr_oom.live_captured): what holds it and what
 * frees room; "" otherwise. */
static const char *graphs_hint(const vr_report *r, const vr_oom *o)
{
    char b1[32], b2[32];
    if (o->device < 0 || !o->live_captured || o->live_captured < o->live_reserved / 2)
        return "";
    return vr_sprintf(r->arena,
                      "; %s of the %s live was allocated during CUDA graph captures and is kept "
                      "while those graphs live: fewer graphs, graphs that share one memory pool "
                      "(torch.cuda.graph(pool=...)) or torch.compile without CUDA graphs "
                      "(mode=\"max-autotune-no-cudagraphs\") leave more room",
                      SZ(o->live_captured, b1), SZ(o->live_reserved, b2));
}

/* The failure's remedy; a capacity verdict on a request a caching allocator
 * made whose segments hide their free space says so
 * (vr_cache_holder_oom_hint), and a failure where CUDA graphs hold most of
 * the memory says that (graphs_hint). */
static const char *oom_remedy(const vr_report *r, const vr_oom *o, const vr_headline *g)
{
    const char *rem = oom_remedy_of(r, o, g);
    const char *hint = o->verdict == VR_VERDICT_CAPACITY && o->device >= 0
                           ? vr_cache_holder_oom_hint(vr_cache_holder(&o->stack))
                           : "";
    if (hint[0])
        rem = vr_sprintf(r->arena, "%s (%s)", rem, hint);
    const char *graphs = o->verdict != VR_VERDICT_ERROR ? graphs_hint(r, o) : "";
    return graphs[0] ? vr_sprintf(r->arena, "%s%s", rem, graphs) : rem;
}

/* The last graph launch's out-of-memory failure on o's device before o, or
 * NULL. */
static const vr_oom *launch_before(const vr_report *r, const vr_oom *o)
{
    const vr_oom *last = NULL;
    for (size_t i = 0; i < r->nooms && &r->ooms[i] != o; i++)
        if (r->ooms[i].device == o->device && vr_graph_launch_failed(&r->ooms[i]) &&
            r->ooms[i].error == VT_ERROR_OUT_OF_MEMORY)
            last = &r->ooms[i];
    return last;
}

static const char *oom_remedy_of(const vr_report *r, const vr_oom *o, const vr_headline *g)
{
    char b1[32], b2[32];
    switch (o->verdict) {
    case VR_VERDICT_CAPACITY:
        if (o->requested_bytes >= VR_IMPOSSIBLE_REQUEST)
            return vr_sprintf(r->arena,
                              "the request (%s) is larger than any device: its size was likely "
                              "computed wrong (a negative or overflowed size, an uninitialized "
                              "length); check the size passed to %s",
                              SZ(o->requested_bytes, b1), o->api);
        if (o->device < 0 && o->host_pool)
            return "raise the host pool's maximum size (cudaMemPoolProps.maxSize) if it has "
                   "one, else pin less host memory at once or give the host more memory";
        if (o->device < 0)
            return "pin less host memory at once (fewer or smaller pinned buffers; PyTorch: "
                   "DataLoader pin_memory=False or fewer workers) or give the host more memory";
        if (vr_pool_at_limit(o))
            return vr_pool_limit_remedy(r->arena, o);
        if (vr_graph_pool_would_fit(o))
            return vr_graph_pool_remedy(r->arena, o, launch_before(r, o));
        if (o->max_batch > 0 && !strcmp(o->batch_kind, "measured"))
            return vr_sprintf(r->arena,
                              "use --batch %" PRId64 " (measured: the largest batch that fits "
                              "this device, from a completed step at --batch %" PRId64 ")",
                              o->max_batch, o->batch);
        if (o->max_batch > 0)
            return vr_sprintf(r->arena,
                              "use a smaller batch: batches above %" PRId64 " cannot fit (no "
                              "step completed at --batch %" PRId64 "); record --batch %" PRId64
                              " and report both traces to measure the largest that fits",
                              o->max_batch, o->batch, o->max_batch / 2 > 0 ? o->max_batch / 2 : 1);
        if (o->device_total_bytes && o->requested_bytes > o->device_total_bytes)
            return vr_sprintf(r->arena,
                              "the request alone (%s) is larger than the whole device (%s): no "
                              "freeing makes it fit; check the size passed to %s (a shape or "
                              "length computed wrong), or make it smaller: a smaller batch or "
                              "model, or the work split into pieces",
                              SZ(o->requested_bytes, b1), SZ(o->device_total_bytes, b2), o->api);
        return "the working set does not fit: use a smaller batch or model, or a larger device";
    case VR_VERDICT_LEAK:
        /* the verdict's growing site (the one holding the most at the
         * failure), not the fastest of the run: the remedy named another
         * line than the verdict above it where two sites grew */
        if (g && g->nsites)
            return vr_sprintf(
                r->arena, "release what %s keeps alive across iterations%s",
                o->ntop_sites ? culprit_label(r, &o->top_sites[0].stack) : g->sites[0].label,
                g->nsites > 1 ? ", and what the other growing sites listed keep" : "");
        return "memory live from earlier iterations was never freed: release it (see Growth)";
    case VR_VERDICT_FRAGMENTATION:
        if (o->has_pool)
            return vr_pool_remedy(r->arena, o);
        if (o->pools_free_bytes)
            return vr_sprintf(r->arena,
                              "the device's stream-ordered pools hold %s free that a %s cannot "
                              "use: trim them before such calls (cudaMemPoolTrimTo; PyTorch's "
                              "cudaMallocAsync backend: torch.cuda.empty_cache()) or lower their "
                              "release threshold (cudaMemPoolAttrReleaseThreshold)",
                              SZ(o->pools_free_bytes, b1), o->api);
        return vr_sprintf(r->arena,
                          "free blocks (largest %s) are too small: empty the allocator's cache "
                          "between steps (torch.cuda.empty_cache(), train --empty-cache: the "
                          "vary_batch_fragmentation scenario then ran all its steps), keep input "
                          "shapes fixed, or set "
                          "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
                          SZ(o->heap_largest_free, b1));
    case VR_VERDICT_EXTERNAL:
        return vr_sprintf(r->arena,
                          "%s of the device was in use outside this process: free it "
                          "or run alone on the device",
                          SZ(o->baseline_bytes + o->external_bytes, b1));
    case VR_VERDICT_ERROR:
        return "fix the call's arguments or the error before it (compute-sanitizer finds a "
               "kernel's bad access): memory is not what failed";
    }
    return "";
}

/* The failing call's frame that follows the allocation wrappers: the
 * innermost functions that the largest live sites (two or three) share; the
 * failing stack's last frame in one of them is a wrapper, the next one is
 * named. Its first frame when no wrapper is recognised; its lead frame
 * (the program's Python line) in a stack with Python frames. */
static const char *oom_site(const vr_report *r, const vr_oom *o)
{
    if (!o->stack.n)
        return "(no stack)";
    if (o->stack.lead) /* a Python stack: the program's line */
        return frame_name(r->arena, &o->stack.frames[o->stack.lead]);
    size_t m = o->ntop_sites < 3 ? o->ntop_sites : 3, p = m ? o->top_sites[0].stack.n : 0, at = 0;
    for (size_t i = 1; i < m; i++) {
        const vr_stack *a = &o->top_sites[0].stack, *b = &o->top_sites[i].stack;
        size_t k = 0;
        while (k < p && k < b->n && !strcmp(a->frames[k].function, b->frames[k].function))
            k++;
        p = k;
    }
    for (size_t j = 0; m >= 2 && j < o->stack.n; j++)
        for (size_t k = 0; k < p; k++)
            if (!strcmp(o->stack.frames[j].function, o->top_sites[0].stack.frames[k].function))
                at = j + 1 < o->stack.n ? j + 1 : j;
    return frame_name(r->arena, &o->stack.frames[at]);
}

static void headline_oom(const vr_report *r, size_t i, vr_headline *h)
{
    char b1[32], b2[32], b3[32];
    const vr_oom *o = &r->ooms[i];
    vr_headline g = {.iteration_name = h->iteration_name};
    if (growing(r))
        headline_growing(r, &g);
    bool handled = vr_oom_handled(r);
    h->kind = handled ? "oom_handled" : "oom";
    h->cause = vr_verdict_name(o->verdict);
    const char *site = oom_site(r, o), *head = handled ? "OUT OF MEMORY, HANDLED" : "OUT OF MEMORY";
    const char *went_on = handled ? "; " VR_OOM_HANDLED_TEXT : "";
    if (o->device < 0)
        h->text = vr_sprintf(r->arena, "%s (%s): %s of %s of pinned host memory failed at %s%s%s%s",
                             head, h->cause, o->api, SZ(o->requested_bytes, b1), site,
                             o->range[0] ? " in " : "", o->range, went_on);
    else
        h->text = vr_sprintf(
            r->arena, "%s (%s): %s of %s failed on device %d (free %s of %s) at %s%s%s%s", head,
            h->cause, o->api, SZ(o->requested_bytes, b1), o->device,
            o->free_known ? SZ(o->device_free_bytes, b2) : "unknown", SZ(o->device_total_bytes, b3),
            site, o->range[0] ? " in " : "", o->range, went_on);
    h->remedy = oom_remedy(r, o, &g);
    if (o->verdict == VR_VERDICT_LEAK && g.kind) {
        h->sites = g.sites;
        h->nsites = g.nsites;
        h->bytes_per_iteration = g.bytes_per_iteration;
    }
}

/* The caching allocator holding memory of host kinds (host) or device
 * kinds at exit (vr_leak.cache_of), NULL if none; the first one when
 * several do. */
static const char *cache_holder(const vr_report *r, bool host)
{
    for (size_t i = 0; i < r->nleaks; i++)
        if (r->leaks[i].cache_of && r->leaks[i].host == host)
            return r->leaks[i].cache_of;
    return NULL;
}

/* "nothing leaked" or "no device memory leaked", with " by the program"
 * when a caching allocator holds memory at exit, and in parentheses what it
 * holds and the pinned host memory leaked, "; "-separated. */
static const char *leaks_clause(const vr_report *r)
{
    char b1[32];
    const char *dev = cache_holder(r, false), *host = cache_holder(r, true);
    uint64_t host_leak = r->host_leaked_bytes - r->host_cached_at_exit_bytes;
    const char *parts = "";
    if (dev)
        parts = vr_sprintf(r->arena, "%s at exit is the cache of %s, freed when the process ends",
                           SZ(r->cached_at_exit_bytes, b1), dev);
    if (host)
        parts = vr_sprintf(r->arena, "%s%s%s of pinned host memory at exit is the cache of %s",
                           parts, parts[0] ? "; " : "", SZ(r->host_cached_at_exit_bytes, b1), host);
    if (host_leak)
        parts = vr_sprintf(r->arena, "%s%s%s of pinned host memory was%s", parts,
                           parts[0] ? "; " : "", SZ(host_leak, b1), parts[0] ? " leaked" : "");
    return vr_sprintf(
        r->arena, "%s%s%s%s%s", host_leak ? "no device memory leaked" : "nothing leaked",
        dev || host ? " by the program" : "", parts[0] ? " (" : "", parts, parts[0] ? ")" : "");
}

/* "no growth" where growth was measured; without iterations (no NVTX range
 * nor call-site pattern repeated 3 times) it was not, and a run that kept
 * memory in a loop nothing marks must not read as one that did not grow. */
static const char *growth_clause(const vr_report *r)
{
    const vr_growth *h = &r->host_growth;
    char b[32];
    if (!r->iteration_kind[0])
        return "growth not measured (no iterations: no NVTX range nor call-site pattern repeated "
               "3 times)";
    if (r->iterations < 3 || h->bytes_per_iteration < 1.0 || (h->r2 < 0.8 && !h->sustained))
        return "no growth";
    /* the growing rule of device memory (growing()), on pinned host memory */
    return vr_sprintf(r->arena,
                      "no growth of device memory, but pinned host memory grows +%s per %s (%s)",
                      SZ(vr_u64_sat(h->bytes_per_iteration), b),
                      r->iteration_name[0] ? r->iteration_name : "iteration",
                      fit_words(r, h, r->iteration_name[0] ? r->iteration_name : "iteration"));
}

/* The healthy verdict's account of leaks, growth and failures: no device
 * memory leaked (pinned host memory that was is named; what a caching
 * allocator holds as its cache is not a leak), no growth, and no failed
 * allocation, or none fatal (the failed ones were recovered or not out of
 * memory). */
static const char *healthy_rest(const vr_report *r)
{
    const char *leaks = leaks_clause(r);
    if (!r->failed_allocations)
        return vr_sprintf(r->arena, "%s, %s, no failed allocation", leaks, growth_clause(r));
    return vr_sprintf(r->arena,
                      "%s, %s, no out-of-memory failure left unrecovered (%" PRIu64
                      " failed allocation%s: %" PRIu64 " recovered, %" PRIu64 " not out of memory)",
                      leaks, growth_clause(r), r->failed_allocations,
                      vsize_plural(r->failed_allocations), r->recovered_allocations,
                      r->error_allocations);
}

/* "EXITED WITH STATUS 1" or "KILLED BY SIGNAL 9" when the end-of-process
 * record says the program failed; NULL when it exited 0 or is unknown. A
 * healthy memory account must not read as a healthy run then: an allocator
 * can raise out of memory by a limit of its own, with no failing CUDA call
 * (PyTorch's set_per_process_memory_fraction). */
static const char *failed_exit(const vr_report *r)
{
    if (!r->has_end)
        return NULL;
    if (r->exit_signal > 0)
        return vr_sprintf(r->arena, "KILLED BY SIGNAL %d", (int)r->exit_signal);
    if (r->exit_status > 0)
        return vr_sprintf(r->arena, "EXITED WITH STATUS %d", (int)r->exit_status);
    return NULL;
}

/* The remedy of a failed run with no device memory failure. */
static const char *failed_remedy(const vr_report *r)
{
    if (r->exit_signal == SIGKILL)
        return "no device memory call failed: a SIGKILL with no failed device allocation is "
               "often the kernel's out-of-memory killer (host memory; dmesg), or a notebook "
               "restarting its kernel; else it came from another process";
    return "no device memory call failed: if the program's error was CUDA out of "
           "memory, an allocator refused by a limit of its own without asking CUDA "
           "(PyTorch: torch.cuda.set_per_process_memory_fraction), or the memory "
           "failed in another process; else the error is not about device memory";
}

/* The remedy of a run whose memory is sound but where allocations failed
 * with another error than out of memory: no memory remedy, and the first
 * such failure (its explanation, e.g. a fork child's initialisation error,
 * is in the failures' list). NULL when none failed so. */
static const char *error_remedy(const vr_report *r)
{
    for (size_t i = 0; i < r->nooms; i++) {
        const vr_oom *o = &r->ooms[i];
        if (o->verdict != VR_VERDICT_ERROR)
            continue;
        return vr_sprintf(r->arena,
                          "none for memory; but %" PRIu64 " allocation%s failed with another "
                          "error than out of memory, the first with error %d at %s: its "
                          "explanation is in the list of failed allocations",
                          r->error_allocations, vsize_plural(r->error_allocations), (int)o->error,
                          oom_site(r, o));
    }
    return NULL;
}

/* Where the largest device leak (caches too, or only those that are no
 * cache) was allocated: its lead frame. */
static const char *leak_site(const vr_report *r, bool caches)
{
    for (size_t i = 0; i < r->nleaks; i++) {
        const vr_stack *st = &r->leaks[i].stack;
        if (!r->leaks[i].host && (caches || !r->leaks[i].cache_of))
            return st->n ? frame_name(r->arena, &st->frames[st->lead]) : "(no stack)";
    }
    return "(no stack)";
}

/* No end-of-process record (killed, or the trace was read while the program
 * ran, or cut short): what is live then was never a leak at exit. */
static void headline_no_end(const vr_report *r, vr_headline *h)
{
    char b1[32], b2[32];
    h->kind = "no_end";
    const char *live = "nothing is live when the trace ends";
    if (r->leaked_count)
        live = vr_sprintf(r->arena,
                          "%s of device memory in %" PRIu64
                          " allocation%s live when the trace ends, the largest part allocated at "
                          "%s",
                          SZ(r->leaked_bytes, b1), r->leaked_count, vsize_plural(r->leaked_count),
                          leak_site(r, true));
    h->text = vr_sprintf(r->arena,
                         "NO END OF PROCESS RECORDED (killed, cut short or still running): peak "
                         "reserved %s, %s, no out-of-memory failure left unrecovered; %s",
                         SZ(r->peak_reserved, b2), growth_clause(r), live);
    h->remedy = "what is live when the trace ends is not a leak: the program did not reach its "
                "exit. A SIGKILL with no failed device allocation is often the kernel's "
                "out-of-memory killer (host memory; dmesg); vramtrace recover FILE adds what a "
                "killed process had not written (vramtrace run does, and records the kill)";
}

/* LEAKED AT EXIT: the program's own leaks (not a cache's) at a clean exit. */
static void headline_leaked(const vr_report *r, vr_headline *h)
{
    char b1[32], b2[32];
    h->kind = "leaked";
    const char *site = leak_site(r, false);
    const char *holder = cache_holder(r, false);
    h->text = vr_sprintf(r->arena,
                         "LEAKED AT EXIT: %s of device memory in %" PRIu64
                         " allocation%s%s%s%s%s, the largest part allocated at %s",
                         SZ(r->leaked_bytes - r->cached_at_exit_bytes, b1),
                         r->leaked_count - r->cached_at_exit_count,
                         vsize_plural(r->leaked_count - r->cached_at_exit_count),
                         holder ? " (besides " : "", holder ? SZ(r->cached_at_exit_bytes, b2) : "",
                         holder ? " held by " : "",
                         holder ? vr_sprintf(r->arena, "%s as its cache)", holder) : "", site);
    h->remedy = vr_sprintf(r->arena, "free what %s allocates before the program exits", site);
}

/* HEALTHY, or EXITED WITH STATUS N / KILLED BY SIGNAL N (failed, non-NULL):
 * the peak against the device, and what a failed run left live (told, not
 * the verdict: a crash leaves memory live that is no leak). */
static void headline_finished(const vr_report *r, vr_headline *h, const char *failed, bool leaked)
{
    char b1[32], b2[32], b3[32];
    uint64_t total = 0;
    for (size_t i = 0; i < r->ndevices; i++)
        total = r->devices[i].total_bytes > total ? r->devices[i].total_bytes : total;
    h->kind = failed ? "exited" : "healthy";
    const char *what =
        failed ? vr_sprintf(r->arena, "%s, NO MEMORY FAILURE SEEN", failed) : "HEALTHY";
    const char *rest =
        leaked ? vr_sprintf(r->arena,
                            "%s of device memory in %" PRIu64 " allocation%s live at exit "
                            "(the largest part allocated at %s), %s, no out-of-memory failure "
                            "left unrecovered",
                            SZ(r->leaked_bytes - r->cached_at_exit_bytes, b1),
                            r->leaked_count - r->cached_at_exit_count,
                            vsize_plural(r->leaked_count - r->cached_at_exit_count),
                            leak_site(r, false), growth_clause(r))
               : healthy_rest(r);
    if (total)
        h->text = vr_sprintf(r->arena, "%s: peak reserved %s of %s (%.1f%%), headroom %s; %s", what,
                             SZ(r->peak_reserved, b1), SZ(total, b2),
                             100.0 * (double)r->peak_reserved / (double)total,
                             SZ(total > r->peak_reserved ? total - r->peak_reserved : 0, b3), rest);
    else
        h->text = vr_sprintf(r->arena, "%s: peak reserved %s (device size unknown); %s", what,
                             SZ(r->peak_reserved, b1), rest);
    const char *holder = cache_holder(r, false);
    const char *errors = failed ? NULL : error_remedy(r);
    if (failed)
        h->remedy = failed_remedy(r);
    else if (errors)
        h->remedy = errors;
    else
        h->remedy = holder && vr_cache_holder_hint(holder)[0]
                        ? vr_sprintf(r->arena, "none needed (%s)", vr_cache_holder_hint(holder))
                        : "none needed";
}

/* No OOM and no growth: how the run ended decides the headline. */
static void headline_rest(const vr_report *r, vr_headline *h)
{
    if (!r->has_end) {
        headline_no_end(r, h);
        return;
    }
    const char *failed = failed_exit(r);
    bool leaked = r->leaked_count > r->cached_at_exit_count;
    if (leaked && !failed)
        headline_leaked(r, h);
    else
        headline_finished(r, h, failed, leaked);
}

/* The run's last failed free when the run failed (a signal or a non-zero
 * status) and no allocation or free was recorded after it: the program's
 * handling of that failure likely ended it (PyTorch's backend:cudaMallocAsync
 * aborts on a failed free: torch_graphs_5_abort). NULL otherwise, and when
 * not every failed free was kept. */
static const vr_free_failed *fatal_free(const vr_report *r)
{
    if (!failed_exit(r) || !r->nfree_failed || r->nfree_failed != r->free_failed_total)
        return NULL;
    const vr_free_failed *f = &r->free_failed[r->nfree_failed - 1];
    return f->calls_after == 0 ? f : NULL;
}

/* KILLED BY SIGNAL N / EXITED WITH STATUS N AFTER A FAILED FREE. */
static void headline_free(const vr_report *r, const vr_free_failed *f, vr_headline *h)
{
    const vr_stack *st = &f->stack;
    const char *site = st->n ? frame_name(r->arena, &st->frames[st->lead]) : "(no stack)";
    uint64_t end = r->duration_ns > f->t_ns ? r->duration_ns - f->t_ns : 0;
    h->kind = "failed_free";
    h->text = vr_sprintf(r->arena,
                         "%s AFTER A FAILED FREE: %s(0x%" PRIx64 ") failed with error %d%s at %s, "
                         "the run's last memory call (%s before its end); %s",
                         failed_exit(r), f->call, f->addr, (int)f->error, f->error_meaning, site,
                         VR_TIME(end), f->what);
    h->remedy = f->graph_node
                    ? "keep a captured graph's outputs until the graph has run, or replay it "
                      "before they are dropped (PyTorch's backend:cudaMallocAsync aborts on this "
                      "free); every failed free is under Failed frees"
                    : "free each allocation once, with the call that matches how it was made "
                      "(the program's handling of this failure likely ended it); every failed "
                      "free is under Failed frees";
}

void vr_headline_of(const vr_report *r, vr_headline *h)
{
    *h = (vr_headline){.cause = "",
                       .projected_oom_iteration = -1,
                       .iteration_name = r->iteration_name[0] ? r->iteration_name : "iteration"};
    size_t fatal = vr_fatal_oom(r);
    const vr_free_failed *free_end = fatal == SIZE_MAX ? fatal_free(r) : NULL;
    if (fatal != SIZE_MAX)
        headline_oom(r, fatal, h);
    else if (free_end)
        headline_free(r, free_end, h);
    else if (growing(r))
        headline_growing(r, h);
    else
        headline_rest(r, h);
}
