/* report.h: the vramtrace report model and its producers/consumers.
 *
 * vr_analyze() replays one .vtrace file in a single streaming pass (memory
 * proportional to live allocations and distinct stacks, never to the number
 * of events), runs the analyses (peak, leaks, growth, fragmentation, OOM
 * verdicts), symbolizes the stacks that appear in the results (elfutils libdw
 * from the recorded module map) and returns a vr_report. Renderers turn one
 * or several vr_reports into text, JSON, HTML, folded stacks or Chrome trace
 * JSON.
 *
 * Units: sizes in bytes, times in ns since the trace's start (the header's
 * start_mono_ns), unless a field says otherwise.
 */
#ifndef VRAMTRACE_REPORT_H
#define VRAMTRACE_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define VR_REPORT_FORMAT "vramtrace-report"

/* The module of a Python frame (file, function = qualified name, line). */
#define VR_PYTHON_MODULE "python"
/* The function of the frame that marks a thread whose Python frames are
 * unknown (a thread without a Python thread state in a Python process). */
#define VR_PYTHON_UNKNOWN "[Python frames unknown: thread without Python state]"

/* One symbolized frame. Strings are never NULL ("??" or "" when unknown). */
typedef struct vr_frame {
    const char *function; /* demangled where possible; "??" if unknown; "name+0x1c" (offset
                           * of ip in the symbol) when no line is known, so that call
                           * sites of one function without debug info stay apart */
    const char *file;     /* source file, "" if unknown */
    uint32_t line;        /* 0 if unknown */
    const char *module;   /* path of the loaded object, "" if unknown */
    uint64_t ip;          /* recorded ip (return address - 1) */
    bool inlined;         /* an inlined frame (no ip of its own) */
} vr_frame;

/* A symbolized call stack, innermost first, with the frames inside
 * vramtrace and the CUDA libraries folded away (the first user frame
 * leads). n == 0 for allocations without a stack. */
typedef struct vr_stack {
    const vr_frame *frames;
    size_t n;
    uint32_t id; /* recorded trie leaf id (0 = none) */
    /* The frame that names the stack to a person (verdicts, site names, the
     * frames a short listing keeps): in a stack with Python frames the
     * innermost Python frame of the program's own code (not of an installed
     * package or the standard library: vt_py_library_file), else its
     * innermost Python frame; 0 otherwise. < n when n > 0. */
    size_t lead;
} vr_stack;

/* Bytes attributed to one call site (or one NVTX range). */
typedef struct vr_site {
    vr_stack stack;
    const char *range; /* innermost NVTX range, "" if none (phases: the range) */
    /* NVTX Mem region names given at this site ("G.5.bn_out, G.5.x (+2
     * more)"), "" if none (phases: "") */
    const char *names;
    uint64_t bytes;
    uint64_t count;
} vr_site;

typedef struct vr_point {
    uint64_t t_ns;
    uint64_t allocated; /* bytes */
    uint64_t reserved;  /* bytes */
} vr_point;

/* Fragmentation inside registered heaps at one moment. */
typedef struct vr_frag {
    uint64_t t_ns;
    int32_t device;
    uint64_t reserved;     /* bytes in registered heaps */
    uint64_t allocated;    /* bytes of regions inside heaps */
    uint64_t largest_free; /* largest contiguous free block in any heap */
    double fragmentation;  /* 1 - largest_free / total_free; 0 when nothing free */
    const char *when;      /* "peak", "oom", "sample" */
} vr_frag;

typedef struct vr_device {
    int32_t id;
    const char *name;
    uint64_t total_bytes; /* 0 if unknown */
    /* device use outside the recording at the first meminfo sample (the CUDA
     * context, other processes); 0 if unknown */
    uint64_t baseline_bytes;
    uint64_t peak_allocated, peak_allocated_t_ns;
    uint64_t peak_reserved, peak_reserved_t_ns;
    /* The device's stream-ordered pools' reserved bytes (cudaMallocAsync's
     * memory, used or not; cudaMemPoolAttrReservedMemCurrent, what
     * PyTorch's memory_reserved() is under backend:cudaMallocAsync), summed:
     * the most at a pool sample (pool_stat records: NVTX range ends,
     * failures, memory samples), and when; 0 when none was sampled. Not in
     * peak_reserved, which counts the allocations made from the pools. */
    uint64_t pool_reserved_peak, pool_reserved_peak_t_ns;
    /* Of its live direct allocations, the bytes made during CUDA stream
     * captures (a thread's allocations between its cuStreamBeginCapture and
     * that capture's end: PyTorch's CUDA graph private pools' segments), at
     * the peak reserved and at exit (docs/report.md, "CUDA graphs"). */
    uint64_t captured_at_peak, captured_at_exit;
    /* Of its live direct allocations, the bytes of graph allocation nodes'
     * memory, taken by graph launches (api cuGraphLaunch), at the peak
     * reserved and at exit (docs/report.md, "CUDA graphs"). */
    uint64_t graph_at_peak, graph_at_exit;
    const vr_point *timeline; /* downsampled (<= VR_MAX_POINTS), exact peak kept */
    size_t ntimeline;
} vr_device;

#define VR_MAX_POINTS 2000

/* The largest live call sites at one instant (timeline tooltips): sampled
 * during the replay at most VR_HOVER_POINTS times (internal.h), all devices. */
#define VR_HOVER_SITES 3
typedef struct vr_hover {
    uint64_t t_ns;      /* since the trace's start */
    uint64_t allocated; /* bytes, all devices */
    size_t n;           /* sites below, largest first */
    vr_stack stack[VR_HOVER_SITES];
    uint64_t bytes[VR_HOVER_SITES];
    const char *names[VR_HOVER_SITES]; /* vr_site.names of each */
} vr_hover;

typedef struct vr_leak {
    vr_stack stack;
    uint64_t bytes, count;
    const char *kind; /* vt_kind_name of the memory ("device", "host_pinned", ...) */
    bool host;        /* a host kind (pinned, registered): not device memory */
    /* The caching allocator whose cache this memory is at exit ("PyTorch's
     * caching allocator"; vr_cache_holder), NULL for a leak of the
     * program's. */
    const char *cache_of;
} vr_leak;

/* Entries of one site table (peak, leaks, range sites) symbolized and merged
 * at most (model.c); the rest, the smallest, are left out (vr_left_out) with
 * a note. */
#define VR_MAX_MERGED_SITES 20000

/* What a site table (sites, phases, range_sites, leaks) leaves out: a table of
 * more than VR_MAX_MERGED_SITES distinct stacks keeps the largest only; the
 * rest are neither symbolized nor listed. stacks: the
 * distinct stacks left out (before merging, so several may have the same
 * frames); bytes and count: what they hold (at the peak for sites, at exit
 * for leaks, all kinds together). All 0 when nothing is left out. */
typedef struct vr_left_out {
    uint64_t stacks, bytes, count;
} vr_left_out;

typedef struct vr_growth {
    vr_stack stack;             /* n == 0 and id == 0 for the total */
    double bytes_per_iteration; /* least-squares slope of live bytes at iteration ends */
    double r2;                  /* coefficient of determination of the fit */
    bool sustained;      /* slope >= 1 B and the last third of the samples all above the first
                            third's highest (vr_sustained): growth even when r2 is low */
    uint64_t iterations; /* iterations observed */
    uint64_t live_bytes; /* live at the last iteration end */
    int64_t projected_oom_iteration; /* -1 if not growing or device size unknown */
    /* the total: the device that runs out first (growth is projected per
     * device, each against its own room); -1 with no projection, or when
     * projected over all devices together (more than 64) */
    int32_t projected_oom_device;
    /* a site: the caching allocator (vr_cache_holder) whose segments grow
     * with no segment size repeating across iterations, as its cache does
     * when it grows to larger requests (vr_sizes_repeat): the growth may be
     * cache, not kept blocks; NULL otherwise */
    const char *cache_of;
} vr_growth;

enum vr_verdict {
    VR_VERDICT_CAPACITY = 0,
    VR_VERDICT_LEAK,
    VR_VERDICT_FRAGMENTATION,
    VR_VERDICT_EXTERNAL,
    /* not out of memory: the call failed with another error (an invalid
     * argument, a lost context, no device); never a run's fatal failure */
    VR_VERDICT_ERROR,
};
const char *vr_verdict_name(enum vr_verdict v);

/* A free call that failed (freefail.c; trace format 12): what it freed is
 * nothing, what the address holds stays live. */
/* An entry of a listing that others repeat, or that repeats another
 * (failed allocations: vr_oom_same; failed frees: vr_free_failed_same): the
 * renderers list a repeat only as a count on the entry it repeats. */
typedef struct vr_repeat {
    size_t of; /* SIZE_MAX, or the index of the entry this one repeats */
    /* On an entry others repeat: how many (0 when none), and the indices of
     * the earliest and latest of them. */
    size_t n, first, last;
} vr_repeat;

typedef struct vr_free_failed {
    uint64_t t_ns, addr;
    int32_t error;             /* what the call returned */
    const char *error_meaning; /* " (invalid value: ...)" or "" */
    const char *call;          /* the function ("cudaFreeAsync") */
    const char *what;          /* what the recording held at addr then, and its causes */
    bool graph_node;           /* addr is a CUDA graph allocation node's */
    int32_t live_kind;         /* the kind (enum vt_kind) of the live allocation starting at
                                * addr, -1 when none does (what) */
    uint64_t calls_after;      /* allocations and frees recorded after it */
    vr_stack stack;
    vr_repeat repeat; /* repeats of the same call, error and kind of address */
} vr_free_failed;

typedef struct vr_oom {
    uint64_t t_ns;
    int32_t device;
    uint64_t requested_bytes;
    int32_t error;
    const char *api;
    bool host_pool;    /* from a host pool (pinned host memory): its maxSize may have refused it */
    bool managed_pool; /* from a managed pool: has_pool false (no pool_stat is taken of one) */
    /* meminfo just after the failure (free 0 and free_known false when the
     * driver could not say, e.g. without a context; the total then is the
     * device record's, 0 if none) */
    uint64_t device_free_bytes, device_total_bytes;
    bool free_known;
    uint64_t live_allocated, live_reserved; /* recorded, at the failure */
    uint64_t live_captured;                 /* of live_reserved, made during CUDA stream captures */
    uint64_t live_graph; /* of live_reserved, graph memory nodes' (taken by launches) */
    /* Device use outside the recording = baseline_bytes + external_bytes:
     * baseline_bytes was already in use at the first memory-info sample (the
     * CUDA context, other processes), external_bytes appeared since (device
     * use not explained by recorded memory + baseline). */
    uint64_t baseline_bytes;
    uint64_t external_bytes;
    /* The most of external_bytes the driver's rounding of the recorded live
     * device and managed allocations can take (vr_driver_rounded; at most
     * external_bytes): what it explains is not use outside the process.
     * (Until session 22 computed only when external_bytes would make the
     * verdict external, so a few KiB of rounding read as use outside.) */
    uint64_t rounding_bytes;
    uint64_t heap_free, heap_largest_free; /* inside registered heaps (and the pool's reserve) */
    /* A stream-ordered failure: its pool's state right after it (pool_stat
     * record; bytes). reserved - used, the pool's free reserve, is counted in
     * live_reserved and, for an out-of-memory error, in heap_free (never in
     * heap_largest_free: every hole of the pool was smaller than the request). */
    bool has_pool;
    uint64_t pool_reserved_bytes, pool_used_bytes;
    /* Another failing call (a cudaMalloc) on a device whose stream-ordered
     * pools hold free reserve: those bytes, counted in live_reserved and
     * heap_free; as sampled at the failure when the recorder did (trace
     * format 13), else each pool at its latest state when the device's free
     * bytes agree that they still hold it, else 0. JSON "pools_free_bytes". */
    uint64_t pools_free_bytes;
    /* The device's CUDA graph memory pool right after the failure (a
     * pool_stat of VT_POOL_GRAPH; trace format 13, and only when the pool
     * held memory): its reserved bytes, and the part no live graph
     * allocation holds (reserved - live_graph), which is counted in
     * live_reserved. JSON "graph_pool" (null without). */
    bool has_graph_pool;
    uint64_t graph_pool_reserved_bytes, graph_pool_kept_bytes;
    /* A failed VMM handle creation (cuMemCreate): the bytes of handles the
     * same thread created since its last mapping, not yet mapped: the pages
     * made for the same mapping before this one failed (PyTorch's expandable
     * segments create a request's pages one by one, then map them); 0 for
     * other failures. */
    uint64_t mapping_bytes;
    enum vr_verdict verdict;
    const char *explanation;
    vr_stack stack; /* the failing call */
    const char *range;
    const vr_site *top_sites; /* live bytes by site at the failure, largest first */
    size_t ntop_sites;
    /* The fatal failure only (vr_fatal_oom): every call site live on its
     * device at the failure, largest first (the diff's bytes at OOM per
     * site); at most 4096 (all_sites_cut: more were live, the largest
     * kept). NULL for the other failures, and for a fatal one whose list
     * was let go (more than 64 later failures not yet recovered at one
     * time, or out of memory): the diff then says its sites may be short. */
    const vr_site *all_sites;
    size_t nall_sites;
    bool all_sites_cut;
    /* Suggested batch (argv --batch scaled to the device; -1 if unknown):
     * "measured" from a completed iteration (the most frequent top-level NVTX
     * range of the failing thread, e.g. train_step): need(B) = fixed +
     * per_sample * B, fixed = bytes live at the failure that were allocated
     * before the first iteration began, per_sample = (that iteration's peak
     * reserved - fixed) / its batch (argv --batch scaled by the ratio of its
     * first allocation to the failing iteration's first allocation), largest
     * B with need(B) <= device total - use outside the recording.
     * "upper_bound" when no iteration completed: the failing iteration's live
     * bytes + request scaled (and below the failed batch); the whole step
     * needs more, so batches above it cannot fit: a bound, never a batch known
     * to fit. "" when none. */
    int64_t batch, max_batch;
    const char *batch_kind;                             /* "measured", "upper_bound", "" */
    uint64_t batch_fixed_bytes, batch_per_sample_bytes; /* measured only, else 0 */
    /* The same thread's next allocation attempt asked for the same size on
     * the same device and succeeded (a caching allocator freed its cache and
     * retried, as PyTorch does): the program went on. A VMM handle's
     * creation only once the retry's handle is mapped (replay.c, attempt). */
    bool recovered;
    /* Repeats (vr_oom_group): repeat.of is the failure this one repeats
     * (vr_oom_same), which the renderers list in its place: the fatal one
     * (vr_fatal_oom) when it repeats that, else the earliest. */
    vr_repeat repeat;
} vr_oom;

/* One (device, kind) of the accounting: the same numbers as the simulated
 * device's ledger (docs/CONTRACTS "B"): kind is vt_kind_name's, device -1
 * for host kinds. Sizes as the API defines the allocation; a VMM handle's
 * memory is live from cuMemCreate until released and unmapped everywhere. */
typedef struct vr_acct_row {
    int32_t device;
    const char *kind;     /* "device", "managed", "host_pinned", "host_registered", "vmm" */
    bool host;            /* a host kind: kept out of device totals */
    uint64_t allocations; /* successful allocation calls (VMM: cuMemCreate) */
    uint64_t frees;       /* allocations that stopped being live before the end */
    uint64_t failed;      /* failed allocation calls */
    uint64_t peak_live_bytes;
    const uint64_t *live_bytes_at_failures; /* at each failure of this row, in order */
    size_t nfailures;
    uint64_t leaked_bytes, leaked_allocations; /* live at exit (the end of the trace) */
} vr_acct_row;

typedef struct vr_range_span {
    uint64_t start_ns, end_ns;
    const char *name;
} vr_range_span;

/* One NVTX event as the trace recorded it, in trace order: a thread's name
 * ('M'), a push/pop range's begin ('B') and end ('E': pops without a push
 * are left out), a start/end range's start ('b') and end ('e', matched by
 * id). Chrome's trace event phases (render_chrome.c). */
typedef struct vr_nvtx_event {
    char ph;          /* 'M', 'B', 'E', 'b', 'e' */
    bool capture;     /* 'b'/'e' of a CUDA stream capture (id: its stream), not NVTX's */
    uint32_t tid;     /* the thread (for 'M' the named one) */
    uint64_t t_ns;    /* ns since the trace's start */
    uint64_t id;      /* start/end ranges: their id */
    const char *name; /* thread or range name; "" for 'E', "range" for 'e' */
} vr_nvtx_event;
#define VR_CAPTURE_SPAN "CUDA graph capture" /* the name of a capture's 'b'/'e' */
/* A device's bytes made during captures, in the text and HTML device lines
 * (captured_at_peak, captured_at_exit as sizes). */
#define VR_CAPTURED_FMT                                                                            \
    "; made during CUDA graph captures: %s of the peak reserved, %s live at exit"
/* The same for graph memory nodes (graph_at_peak, graph_at_exit). */
#define VR_GRAPH_FMT                                                                               \
    "; CUDA graph memory nodes (taken by launches): %s of the peak reserved, %s live at exit"

/* Everything one trace says; owns all its memory (free with vr_report_free). */
typedef struct vr_report {
    const char *path;
    /* header */
    uint32_t pid;
    uint32_t ppid;          /* the parent's pid at start, 0 if unknown */
    uint64_t start_mono_ns; /* CLOCK_MONOTONIC at the trace's start: t_ns fields count from it */
    const char *run_id;     /* the run the process belongs to (vt_run_id_new), "" if none */
    bool forked;            /* written by a process forked without exec (VT_HDR_CHILD_AFTER_FORK) */
    const char *host, *program, *vramtrace_version;
    const char *const *argv;
    size_t argc;
    uint64_t start_wall_ns, duration_ns;
    /* end of process */
    bool has_end;
    bool had_captures;     /* a CUDA stream capture began (VT_REC_CAPTURE) */
    bool had_graph_memory; /* a graph launch took a graph allocation node's memory */
    int32_t exit_status, exit_signal;
    const char *exit_reason;
    bool truncated; /* the file was cut: the report covers what came before */

    const vr_device *devices;
    size_t ndevices;

    uint64_t allocations, frees, failed_allocations, unknown_frees, events;
    uint64_t recovered_allocations; /* failed allocations later recovered (vr_oom.recovered) */
    uint64_t error_allocations;     /* failed with another error than out of memory */
    uint64_t peak_allocated, peak_allocated_t_ns; /* all devices together */
    uint64_t peak_reserved, peak_reserved_t_ns;
    uint64_t leaked_bytes, leaked_count; /* device memory (device, managed, vmm) */
    /* The part of leaked_* a caching allocator holds as its cache at exit
     * (vr_leak.cache_of): memory it frees only when the process ends. */
    uint64_t cached_at_exit_bytes, cached_at_exit_count;
    uint64_t host_cached_at_exit_bytes, host_cached_at_exit_count; /* of host_leaked_* */
    uint64_t host_leaked_bytes, host_leaked_count; /* host kinds (pinned, registered) */
    uint64_t host_pinned_peak;     /* pinned + registered host memory (not counted on devices) */
    const vr_acct_row *accounting; /* sorted by device, then kind */
    size_t naccounting;

    const vr_site *sites; /* call sites live at the peak, largest first */
    size_t nsites;
    const vr_site *phases; /* NVTX ranges live at the peak, largest first */
    size_t nphases;
    /* Call sites live at the peak inside the dominant range (phases[0]),
     * largest first: which allocations of e.g. "D.backward" dominate. */
    const vr_site *range_sites;
    size_t nrange_sites;
    const vr_leak *leaks; /* largest first */
    size_t nleaks;
    /* What each table above leaves out (vr_left_out; for phases "stacks"
     * counts NVTX ranges) */
    vr_left_out sites_left_out, phases_left_out, range_sites_left_out, leaks_left_out;

    const char *iteration_name; /* NVTX range used as an iteration, "" = none */
    /* The range iteration_name was (last) directly inside, when no top-level
     * range repeated 3 times (e.g. "step" ranges inside one "train"); "" =
     * it is a top-level range. */
    const char *iteration_parent;
    /* iteration_name is the stem of ranges numbered by step ("iteration" for
     * "iteration0", "iteration1", ...; trace/vtrace.h, vt_range_stem) */
    bool iteration_numbered;
    /* What an iteration is: "nvtx_range" (iteration_name), "call_site" (each
     * allocation at iteration_site after frees: a repeating call-site
     * pattern) or "" (none: no growth is reported). */
    const char *iteration_kind;
    vr_stack iteration_site;
    uint64_t iterations; /* complete iterations */
    /* The growth is not projected though it grows (every projected_oom_iteration
     * -1): call-site-pattern iterations on a device whose memory a
     * stream-ordered pool holds, whose free reserve the recorder samples at
     * NVTX range ends only (model.c, pool_unsampled) */
    bool growth_unprojected;
    /* Growth per site was analysed for the first call sites live at an
     * iteration end only (VR_MAX_SAMPLED_SITES, report/state.h): the growth
     * list lacks the others; growth_analysed is the growth of the sites
     * analysed, all summed (bytes per iteration, least squares, as
     * total_growth), and the growing sites' shares are of the total
     * (vr_headline.unanalysed_share). 0 when not capped. */
    bool growth_sites_capped;
    double growth_analysed;
    vr_growth total_growth;
    /* pinned and registered host memory at the same iteration ends (no
     * projection: the host's memory is not in the trace) */
    vr_growth host_growth;
    const vr_growth *growth; /* growing sites, fastest first */
    size_t ngrowth;

    const vr_frag *frag; /* at the peak, at each OOM, and over time */
    size_t nfrag;
    const vr_oom *ooms;
    size_t nooms;
    bool records_failed_frees;         /* the trace's format records them (12 and later) */
    const vr_free_failed *free_failed; /* the first VR_FREE_FAILED_KEPT, in order */
    size_t nfree_failed;
    uint64_t free_failed_total; /* all of them */
    const vr_range_span *spans; /* top-level iteration spans (shading), capped */
    size_t nspans;
    const vr_nvtx_event *nvtx; /* every NVTX range and thread name, capped (a note) */
    size_t nnvtx;
    const vr_hover *hover; /* in time order */
    size_t nhover;
    const char *const *notes;
    size_t nnotes;

    struct vr_arena *arena; /* private */
} vr_report;

/* The sections of the report model: when a section is not empty (the
 * expression on `r`, a const vr_report *), the marker that shows it in the
 * text, JSON and HTML outputs. One list: renderers print the markers of the
 * sections it names as VR_MARK_*, and the sections test
 * (tests/report/test_sections.c) checks that every section of a trace where
 * all are non-empty reaches all three outputs. The devices' timelines and
 * hover samples are the "timeline" section. */
#define VR_MODEL_SECTIONS(X)                                                                       \
    X(verdict, r->nooms || r->ngrowth, "remedy: ", "\"verdict\":", "id=\"verdict\"")               \
    X(program, r->argc, "program: ", "\"program\":", "<th>program</th>")                           \
    X(devices, r->ndevices, "): peak allocated ", "\"devices\":", "<th>device ")                   \
    X(timeline, r->ndevices && r->devices[0].ntimeline && r->nhover, VR_MARK_TIMELINE_TEXT,        \
      "\"timeline\":", "\"hover\":[[")                                                             \
    X(totals, r->allocations, VR_MARK_TOTALS_TEXT,                                                 \
      "\"totals\":", "<th>allocations / frees / failed</th>")                                      \
    X(accounting, r->naccounting, "memory by kind", "\"accounting\":", VR_MARK_ACCOUNTING_HTML)    \
    X(notes, r->nnotes, "  note: ", "\"notes\":[\"", "note: ")                                     \
    X(sites, r->nsites, "-- Top sites at peak --", "\"sites\":", "id=\"sites\"")                   \
    X(phases, r->nphases, "by NVTX range", "\"phases\":", "Peak by NVTX range")                    \
    X(range_sites, r->nrange_sites, "top call sites in ", VR_MARK_RANGE_SITES_JSON,                \
      VR_MARK_RANGE_SITES_HTML)                                                                    \
    X(leaks, r->nleaks, "-- Leaks --", "\"leaks\":", "id=\"leaks\"")                               \
    X(left_out,                                                                                    \
      r->sites_left_out.stacks || r->phases_left_out.stacks || r->range_sites_left_out.stacks ||   \
          r->leaks_left_out.stacks,                                                                \
      VR_MARK_LEFT_OUT, "\"left_out\":", VR_MARK_LEFT_OUT)                                         \
    X(growth, r->ngrowth, "-- Growth --", "\"growth\":", "id=\"growth\"")                          \
    X(ooms, r->nooms, "-- Out of memory", "\"ooms\":", "id=\"ooms\"")                              \
    X(free_failed, r->nfree_failed, "-- Failed frees", "\"failed_frees\":", "id=\"failed_frees\"") \
    X(fragmentation, r->nfrag, "-- Fragmentation", "\"fragmentation\":", "id=\"fragmentation\"")   \
    X(spans, r->nspans, VR_MARK_SPANS_TEXT, VR_MARK_SPANS_JSON, "class=\"phase\"")                 \
    X(nvtx, r->nnvtx, VR_MARK_NVTX_TEXT, VR_MARK_NVTX_JSON, VR_MARK_NVTX_HTML)

/* Markers of VR_MODEL_SECTIONS that renderers print from here. */
#define VR_MARK_TIMELINE_TEXT "  timeline: "
#define VR_MARK_TOTALS_TEXT "allocations: "
#define VR_MARK_LEFT_OUT " not listed (" /* text and HTML: vr_more_line */
#define VR_MARK_ACCOUNTING_HTML "id=\"accounting\""
#define VR_MARK_RANGE_SITES_JSON "\"range_sites\":"
#define VR_MARK_RANGE_SITES_HTML "id=\"range_sites\""
#define VR_MARK_SPANS_TEXT "top-level ranges: "
#define VR_MARK_SPANS_JSON "\"spans\":"
#define VR_MARK_NVTX_TEXT "NVTX events: "
#define VR_MARK_NVTX_JSON "\"nvtx\":"
#define VR_MARK_NVTX_HTML "id=\"nvtx\""

/* NVTX events of r by kind: push/pop ranges ('B'), start/end ranges ('b'),
 * named threads ('M'). */
typedef struct vr_nvtx_counts {
    size_t ranges, start_end, threads;
} vr_nvtx_counts;
vr_nvtx_counts vr_nvtx_count(const vr_report *r);

typedef struct vr_options {
    size_t top;                 /* entries per table; 0 = 10 */
    bool no_symbols;            /* skip libdw (addresses only) */
    bool native;                /* keep the interpreter's frames in stacks with Python frames */
    bool trace_symbols;         /* name native frames only from the trace's symbol records */
    bool progress;              /* progress bar on stderr if it is a TTY and takes > 2 s */
    uint32_t progress_after_ms; /* show it after this long instead; 0 = 2000 */
} vr_options;

/* Replay path and analyze it. Returns NULL with a message in err (errlen
 * bytes) when the file cannot be used (not a trace, unreadable, corrupt).
 * A truncated file yields a report with truncated = true. */
vr_report *vr_analyze(const char *path, const vr_options *opt, char *err, size_t errlen);
/* Same from an in-memory image (tests). */
vr_report *vr_analyze_mem(const void *data, size_t len, const vr_options *opt, char *err,
                          size_t errlen);
void vr_report_free(vr_report *r);

/* What vr_embed_symbols did. */
typedef struct vr_embed_result {
    size_t ips;     /* distinct native ips in the trace's call stacks */
    size_t named;   /* of them, named here (their symbols appended) */
    size_t frames;  /* symbol records appended (inlined frames count) */
    size_t strings; /* string records appended */
    bool already;   /* the trace carried symbols already: nothing appended */
} vr_embed_result;

/* Name, on the machine that recorded the trace at path, every native frame
 * of its call stacks from the files here (the recorded modules, checked by
 * build-id; libdw as the report does), and append the names to the trace
 * as symbol records (docs/trace.md, "Symbols"; vt_append_definitions), so
 * that a report on another machine, without those files, names the same
 * frames; opt (may be NULL): its progress bar while the trace is read. A
 * trace that carries symbols already is left as it is
 * (res->already). Returns 0, or -1 with a message in err (errlen bytes):
 * not a trace, unreadable, cut short, still being written, or a write
 * error (the file is then as it was). */
int vr_embed_symbols(const char *path, const vr_options *opt, vr_embed_result *res, char *err,
                     size_t errlen);

/* Renderers. Each returns 0 or -1 (I/O error). n >= 1 reports side by side. */
int vr_render_text(FILE *out, vr_report *const *r, size_t n, const vr_options *opt);
int vr_render_json(FILE *out, vr_report *const *r, size_t n, const vr_options *opt);
int vr_render_html(FILE *out, vr_report *const *r, size_t n, const vr_options *opt);
/* Folded stacks of the bytes live at the peak: "root;...;leaf bytes". */
int vr_render_folded(FILE *out, vr_report *const *r, size_t n, const vr_options *opt);
/* Chrome trace JSON: counters from the timelines, NVTX ranges as B/E slices
 * (the model's nvtx events), OOMs as instant events. */
int vr_render_chrome(FILE *out, vr_report *const *r, size_t n, const vr_options *opt);

/* ---- the headline verdict (verdict.c) ----------------------------------- */

/* One growing call site named by its culprit: the first frame outside the
 * allocation wrappers that every growing site shares (the common innermost
 * frames), so that "tr_new <- alloc_tensor <- ga_malloc" is skipped and the
 * function that keeps creating what is retained is named. */
typedef struct vr_culprit {
    const char *label;          /* "function (file:line)" of the culprit frame */
    vr_stack stack;             /* the culprit's stack (from the culprit frame outward) */
    double bytes_per_iteration; /* summed over the growing sites through it */
    double share;               /* of the growing sites' summed rate, 0..1 */
} vr_culprit;

/* The one verdict a report opens with (text's first line, the HTML header,
 * JSON "verdict"), and its remedy. kind is, in this order of precedence:
 * "oom" (a failed allocation that was not recovered; cause = its
 * vr_verdict_name), "growing" (total live bytes grow per iteration with
 * R^2 >= 0.8 over >= 3 iterations and an out-of-memory iteration can be
 * projected), "leaked" (device memory live at exit), "healthy" (the peak's
 * headroom on the device). Strings live in the report's arena. */
typedef struct vr_headline {
    const char *kind, *cause;
    const char *text;                /* one line, no newline */
    const char *remedy;              /* one sentence, no newline */
    double bytes_per_iteration;      /* growing: total rate; else 0 */
    int64_t projected_oom_iteration; /* growing: as vr_growth; else -1 */
    uint64_t iterations;
    const char *iteration_name; /* "train_step" or "iteration" */
    const vr_culprit *sites;    /* growing: every growing site, fastest first */
    size_t nsites;
    /* growing: the share of the total growth in call sites whose growth was
     * not analysed (vr_report.growth_sites_capped), 0 to 1; else 0 */
    double unanalysed_share;
} vr_headline;
void vr_headline_of(const vr_report *r, vr_headline *out);

/* PyTorch memory snapshot (the pickled dict of torch.cuda.memory._snapshot(),
 * PyTorch 2.x) of the one trace r[0] (re-read from its file): segments and
 * blocks at the fatal failure, else at the peak of allocated bytes, and the
 * device_traces up to then (memviz.c gives the mapping). -1 with a message
 * when n != 1 or the file cannot be re-read; -1 on I/O error. */
int vr_render_memviz(FILE *out, vr_report *const *r, size_t n, const vr_options *opt);

/* ---- batch advice across runs (batch.c) -------------------------------- */

/* The batch size argv gives (--batch N, --batch-size, --batch_size,
 * --per_device_train_batch_size, --train_batch_size and their -- spellings,
 * also --OPT=N: batch.c, batch_opts), -1 if none. */
int64_t vr_argv_batch(const char *const *argv, size_t argc);

/* The largest batch that fits, from n runs of one program at different
 * --batch (see batch.c): each completed run fits, each run that died of an
 * OOM does not; between the largest completed batch and the smallest failed
 * one the need (bytes, fixed + per sample) is interpolated to the device's
 * usable bytes, or extrapolated from the two largest completed runs, per
 * device (each device's peak reserved against its own usable bytes). */
typedef struct vr_batch_advice {
    /* "measured": batch is a run that completed (the largest one when
     * batch + 1 failed; else no estimate goes beyond it); "estimate": not run
     * yet, between fits and fails or beyond fits; "upper_bound": no run completed, batches above
     * batch cannot fit.
     * "" when the runs tell nothing. */
    const char *kind;
    int64_t batch;       /* the advised batch, -1 none */
    int64_t fits, fails; /* largest completed / smallest failed batch, -1 none */
    int64_t next;        /* the batch to record next to confirm or narrow it, -1 none */
    /* The device whose need the advice follows (the one the smallest failed
     * run failed on, else the first to run out by the completed runs' fit),
     * each device against its own usable bytes; -1 none. */
    int32_t device;
    const char *text;         /* one sentence for the text report */
    const char *next_command; /* `vramtrace run` command line for next, "" none */
} vr_batch_advice;

/* Fills *out (strings owned by r[0]); false when there is no advice (fewer
 * than two runs with a --batch and a known device size, or all at one batch,
 * such as the processes of one run). */
bool vr_batch_advise(vr_report *const *r, size_t n, vr_batch_advice *out);

/* ---- CI limits (vramtrace check) ---------------------------------------- */

typedef struct vr_limits {
    int64_t max_peak, max_leaked, max_growth; /* device memory, bytes; -1 = no limit */
    int64_t max_host_leaked;                  /* host kinds (pinned, registered); -1 = none */
    bool no_oom;
} vr_limits;

/* Out-of-memory failures that were not recovered (failed allocations less the
 * recovered ones and those of another error): what check --no-oom and diff
 * count. */
uint64_t vr_unrecovered_ooms(const vr_report *r);

/* Write one line per broken limit to out; returns the number broken.
 * no_oom counts only unrecovered out-of-memory failures (vr_oom.recovered;
 * not VR_VERDICT_ERROR). */
int vr_check(FILE *out, const vr_report *r, const vr_limits *lim);

/* Human size "1.50 GiB" into buf; returns buf. The one byte format of the
 * project (size/vsize.h's vsize_format); the report's sizes are read by the
 * vramtrace command with vsize_parse. */
const char *vr_format_size(uint64_t bytes, char *buf, size_t len);

/* The line under a table that shows only its first entries, into buf:
 * "... N more UNIT" for rest entries not shown and, when the table left
 * some out (lo, vr_left_out: ranges when by_range, else stacks), "M smaller
 * stacks not listed (SIZE in K allocations)"; "" when neither. The text and
 * HTML reports' one wording of it. Returns buf. */
const char *vr_more_line(char *buf, size_t len, size_t rest, const char *unit,
                         const vr_left_out *lo, bool by_range);

/* The run section of the text report (run_report.c): for every run id that
 * 2 or more of the reports r[n] share, the processes side by side, each
 * device's peak per process and summed over them, and for each failed
 * allocation the memory the other processes held on its device at that
 * moment, by call site. Nothing for traces of no shared run. 0 or -1 (I/O
 * error). */
int vr_render_runs(FILE *out, vr_report *const *r, size_t n, const vr_options *opt);

/* ---- diff of two runs (diff.c; heaptrack_print --diff is the anchor) ---- */

/* One call site in two runs, matched by its symbolized frames (function,
 * source file name, line and module name of every frame; never addresses,
 * so two builds or two address layouts of one program match). [0] is the
 * run before, [1] the run after; 0 where a run lacks the site. */
typedef struct vr_diff_site {
    vr_stack stack;     /* from the run after, else the run before */
    uint64_t peak[2];   /* bytes live at the peak (vr_report.sites) */
    uint64_t leaked[2]; /* device bytes leaked at exit (vr_report.leaks, caches aside) */
    double growth[2];   /* bytes per iteration (vr_report.growth) */
    uint64_t oom[2];    /* bytes live at the fatal failure (its all_sites) */
    /* The sort key, bytes: the largest of |delta peak|, |delta leaked|,
     * |delta oom| and |delta growth| times the larger iteration count. */
    double change;
} vr_diff_site;

typedef struct vr_diff {
    const vr_report *run[2];
    vr_diff_site *sites; /* largest change first; equal changes: the larger
                          * bytes at the peak (both runs summed) first */
    size_t nsites;
    size_t only[2]; /* sites seen in one run only: [0] before, [1] after */
    /* The run's fatal failure lists only its largest sites (vr_oom.all_sites
     * cut, or not kept: its top_sites then): a site's oom bytes there may be
     * missing (0). */
    bool oom_partial[2];
    /* The run's sites at the peak or its leaks left stacks out (vr_left_out:
     * more than VR_MAX_MERGED_SITES): a site's peak or leaked bytes there
     * may be missing (0). */
    bool peak_partial[2], leak_partial[2];
} vr_diff;

/* Match the sites of before and after (both must outlive the diff). Never
 * NULL (vr_xmalloc's rule: out of memory ends the process). */
vr_diff *vr_diff_new(const vr_report *before, const vr_report *after);
void vr_diff_free(vr_diff *d);
/* Renderers of the diff of r[0] (before) and r[1] (after); n must be 2.
 * Text: totals then sites by change; JSON: format "vramtrace-diff"; HTML: a
 * self-contained page. 0 or -1 (I/O error, n != 2). */
int vr_render_diff_text(FILE *out, vr_report *const *r, size_t n, const vr_options *opt);
int vr_render_diff_json(FILE *out, vr_report *const *r, size_t n, const vr_options *opt);
int vr_render_diff_html(FILE *out, vr_report *const *r, size_t n, const vr_options *opt);

#ifdef __cplusplus
}
#endif
#endif
