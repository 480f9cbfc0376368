/* internal.h: report/ internals shared by replay, analyses, symbolizer and
 * renderers. Not installed; the public interface is report.h. */
#ifndef VRAMTRACE_REPORT_INTERNAL_H
#define VRAMTRACE_REPORT_INTERNAL_H

#include "report.h"
#include "vtrace.h"

#include <stdarg.h>

/* ---- arena: bump allocator owning a report's memory --------------------- */

typedef struct vr_arena vr_arena;
vr_arena *vr_arena_new(void);
void vr_arena_free(vr_arena *a);
/* Zeroed memory; aborts on OOM (the report cannot go on without it). */
void *vr_alloc(vr_arena *a, size_t bytes);
char *vr_strdup(vr_arena *a, const char *s);
char *vr_sprintf(vr_arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Checked heap allocation for replay state: aborts with a message on OOM. */
void *vr_xmalloc(size_t bytes);
void *vr_xcalloc(size_t n, size_t size);
void *vr_xrealloc(void *p, size_t bytes);

/* ---- map: open-addressing hash table, u64 key -> fixed-size entry ------- */

/* Entries start with a uint64_t key. Linear probing, backward-shift delete:
 * entry pointers are valid until the next put or del. */
typedef struct vr_map {
    uint8_t *slots; /* cap * esize */
    uint8_t *used;  /* cap */
    size_t cap, len, esize;
} vr_map;

void vr_map_init(vr_map *m, size_t esize);
void vr_map_destroy(vr_map *m);
void *vr_map_get(const vr_map *m, uint64_t key);
/* Returns the entry for key, inserting a zeroed one (key set) if absent;
 * *created tells which (may be NULL). */
void *vr_map_put(vr_map *m, uint64_t key, bool *created);
bool vr_map_del(vr_map *m, uint64_t key);
/* Iterate: start with *i = 0; returns NULL at the end. */
void *vr_map_next(const vr_map *m, size_t *i);

/* ---- replay state ------------------------------------------------------- */

#define VR_SAMPLES 64 /* growth samples kept per site (decimated by 2) */
#define VR_TIMELINE_BUCKETS 1000
/* Hover samples (timeline tooltips): at most this many instants, each with
 * the VR_HOVER_SITES largest live call sites (decimated by 2 when full). */
#define VR_HOVER_POINTS 256

/* Names (NVTX Mem region names: tensor names a caching allocator gives its
 * regions) given at one call site: the first VR_SITE_NAMES distinct ones and
 * how many more. */
#define VR_SITE_NAMES 3
typedef struct vr_site_names {
    uint64_t key; /* stack id */
    uint32_t name[VR_SITE_NAMES];
    uint32_t n;
    uint64_t more;
} vr_site_names;

/* One hover sample: the largest live sites (stack ids, bytes) as the last
 * change in a window of hover_ns left them. */
typedef struct vr_hover_raw {
    uint64_t t_rel; /* ns since the trace's start */
    uint64_t allocated;
    uint32_t stack[VR_HOVER_SITES];
    uint64_t bytes[VR_HOVER_SITES];
} vr_hover_raw;

typedef struct vr_sampler {
    uint64_t ticks;  /* iterations (or time windows) seen */
    uint64_t stride; /* ticks per kept sample */
    uint32_t n;      /* samples kept */
    int slot;        /* which samples[] array in a site this sampler fills */
} vr_sampler;

/* Growth samples are kept for at most this many call sites (1 KiB each),
 * the first ones live at a sample; past it a note says so. */
#define VR_MAX_SAMPLED_SITES 65536
/* Entries of one site table (peak, leaks, range sites) symbolized and merged
 * at most (model.c); the rest, the smallest, are left out with a note. */
#define VR_MAX_MERGED_SITES 20000

/* A call site (stack leaf) or an NVTX range: live bytes now and at the
 * peak (lazy snapshot: see peak.c). A site's growth samples ([2][VR_SAMPLES],
 * arena) are allocated when it is first live at a sample: a site never live
 * at one has only zeros (vr_counter_samples), and costs 48 bytes. */
typedef struct vr_counter {
    uint64_t key;
    uint64_t live, snap;
    uint64_t snap_epoch;
    /* live allocations: fewer than the live map could ever hold (2^32 of
     * them would take 256 GiB of it), so 32 bits keep the entry at 48 bytes */
    uint32_t live_count, snap_count;
    uint64_t (*samples)[VR_SAMPLES];
} vr_counter;

/* Growth samples of slot (vr_sampler.slot) of a site: VR_SAMPLES values. */
const uint64_t *vr_counter_samples(const vr_counter *c, int slot);

typedef struct vr_live {
    uint64_t key; /* address */
    uint64_t size;
    uint64_t ts;
    uint32_t stack, range;
    int32_t device;
    uint8_t in_heap;     /* covered by a registered heap: counts as reserved only */
    uint8_t pending;     /* VR_PENDING_*: not counted yet (see below) */
    uint8_t kind;        /* enum vt_kind */
    uint8_t released;    /* VMM: cuMemRelease seen, alive while mapped */
    uint32_t nmaps;      /* VMM: live mappings of the handle */
    uint64_t pending_ts; /* when it became pending (ns, trace clock) */
    uint64_t heap;       /* the covering heap's id while in_heap */
} vr_live;

/* A device allocation whose accounting waits for the next event (of any
 * thread, in the trace's time order) that reads or lowers the allocated
 * bytes: NEW (a cudaMalloc: a heap registration at its address before then
 * makes it reserved only, anything else makes it a direct allocation counted
 * at its own time) or UNCOVERED (its heap was unregistered: a free of it
 * before then drops it, anything else makes it a direct allocation). Events
 * that only add pending allocations or heaps (vr_event_neutral) do not settle
 * it, so a caching allocator's segment never counts as allocated for the
 * instant between its cudaMalloc and heap registration, and an allocation
 * never waits for its own thread's next event. */
enum { VR_PENDING_NONE = 0, VR_PENDING_NEW, VR_PENDING_UNCOVERED };

/* One (device, kind) row of the accounting (report.h vr_acct_row), as the
 * replay builds it. key: acct_key(device, kind). */
typedef struct vr_acct {
    uint64_t key;
    int32_t device;
    uint8_t kind; /* enum vt_kind */
    uint64_t allocations, frees, failed;
    uint64_t live, live_count, peak;
    uint64_t *at_fail; /* live bytes at each failure */
    size_t nfail, capfail;
} vr_acct;

/* A VMM mapping: virtual address -> the live-map key of its handle. */
typedef struct vr_vmm_map {
    uint64_t key; /* mapped address */
    uint64_t size;
    uint64_t handle_key;
} vr_vmm_map;

typedef struct vr_region {
    uint64_t addr, size;
    uint32_t stack, range;
    uint64_t ts;
} vr_region;

typedef struct vr_heap {
    uint64_t key; /* heap id */
    uint64_t addr, size;
    int32_t device;
    uint64_t covered_alloc; /* address of the live allocation it covers, 0 = none */
    vr_region *regions;     /* sorted by addr */
    size_t nregions, capregions;
    uint64_t region_bytes;
    uint64_t largest_free; /* cached heap_largest_free, valid unless lf_dirty */
    bool lf_dirty;
} vr_heap;

typedef struct vr_bucket {
    uint64_t index; /* time bucket number */
    uint64_t max_alloc, t_max, max_res;
    uint64_t last_alloc, last_res, t_last;
} vr_bucket;

typedef struct vr_devstate {
    uint64_t key; /* device id + 1 (0 is a valid device) */
    int32_t id;
    char *name;
    uint64_t total;
    uint64_t direct;     /* live direct allocations outside heaps */
    uint64_t heap_bytes; /* registered heaps */
    uint64_t region_bytes;
    uint64_t peak_alloc, peak_alloc_t, peak_res, peak_res_t;
    bool have_baseline;
    uint64_t baseline_used; /* device use outside the recording at the first meminfo */
    /* a pool_stat waiting for its failure (the same thread's next alloc_failed) */
    bool pool_pending;
    uint32_t pool_tid;
    uint64_t pool_reserved, pool_used; /* bytes */
    vr_bucket *buckets;                /* grows by doubling up to VR_TIMELINE_BUCKETS */
    size_t nbuckets, capbuckets;
    uint64_t bucket_ns;
} vr_devstate;

typedef struct vr_thread {
    uint64_t key;    /* thread id */
    uint64_t *stack; /* NVTX ranges: domain << 32 | name string id */
    uint64_t *stack_ts;
    size_t depth, cap;
    /* the thread's last failed allocation, until its next allocation attempt */
    bool fail_open;
    int32_t fail_device;
    uint64_t fail_size;
    size_t fail_index; /* into vr_state.ooms */
    uint64_t fail_seq; /* vr_oom_raw.seq of that failure, in case its slot was reused */
} vr_thread;

typedef struct vr_module {
    uint32_t id;
    char *path;
    uint64_t bias, start, end;
} vr_module;

typedef struct vr_stacknode {
    uint64_t key; /* node id */
    uint32_t parent;
    uint64_t ip;
    bool python;      /* a py_stack_node: pyframe instead of ip */
    uint32_t pyframe; /* vr_pyframe id; 0 = the thread's Python frames are unknown */
} vr_stacknode;

/* A recorded Python frame (VT_REC_PY_FRAME): string ids and the line. */
typedef struct vr_pyframe {
    uint64_t key; /* py frame id */
    uint32_t function, file, line;
} vr_pyframe;

typedef struct vr_string {
    uint64_t key; /* string id */
    char *text;
} vr_string;

/* An OOM before symbolization. */
typedef struct vr_oom_raw {
    vr_oom o;
    uint32_t stack, range;
    uint64_t top_keys[5], top_bytes[5], top_counts[5];
    size_t ntop;
    double leak_slope, leak_r2; /* growth of top_keys[0] when the verdict is leak */
    uint64_t baseline;          /* device use outside the recording (bytes) */
    uint64_t seq;               /* which failed allocation of the trace (1-based) */
} vr_oom_raw;

#define VR_MAX_TOPNAMES 16
#define VR_MAX_SPANS 2000

typedef struct vr_state {
    vr_arena *arena;
    const vt_header *hdr;
    uint64_t t0, t_last;

    vr_map strings, stacknodes, pyframes, threads, devices, live, heaps, sites, phases;
    vr_map site_ranges; /* counters keyed by range << 32 | stack: sites inside a range */
    vr_map acct;        /* vr_acct per (device, kind) */
    vr_map vmm_maps;    /* vr_vmm_map per mapped address */
    uint64_t *pend;     /* live keys of pending allocations, in time order */
    size_t npend, cappend;
    vr_module *modules;
    size_t nmodules, capmodules;

    uint64_t allocated, reserved; /* all devices */
    uint64_t peak_alloc, peak_alloc_t, peak_res, peak_res_t;
    uint64_t epoch;        /* snapshot epoch of the counters */
    bool peak_pending;     /* a new peak was reached and not yet snapshotted */
    uint64_t frag_peak_at; /* peak value when peak_frag was taken */
    vr_frag peak_frag;
    size_t uncovered_heaps; /* heaps without a covering allocation */
    bool have_peak_frag;

    uint64_t host_pinned, host_pinned_peak;
    uint64_t allocations, frees, failed, unknown_frees, events;

    /* growth: iterations (top-level NVTX ranges) and time windows */
    struct {
        uint32_t name;
        uint64_t count;       /* completed */
        uint64_t first_start; /* ts of the first start (trace clock) */
        uint64_t last_peak;   /* peak reserved bytes of the last completed one */
        uint64_t last_input;  /* its first device allocation (bytes), 0 = none */
    } topnames[VR_MAX_TOPNAMES];
    /* the top-level range in progress (iteration candidate) */
    uint32_t cur_top;
    uint64_t cur_top_peak, cur_top_input; /* peak reserved, first allocation (bytes) */
    uint64_t recovered;                   /* failed allocations retried successfully */
    size_t ntopnames;
    uint32_t iter_name; /* current candidate, 0 = none */
    vr_sampler iter, pat;
    vr_hover_raw hover[VR_HOVER_POINTS]; /* timeline tooltips (peak.c) */
    size_t nhover;
    uint64_t hover_ns;     /* window length */
    uint64_t hover_t;      /* last change of the site counters (ns since the start) */
    bool hover_dirty;      /* changed since the last kept sample */
    size_t nsampled_sites; /* sites with growth samples (VR_MAX_SAMPLED_SITES) */
    bool sampled_sites_capped;
    uint64_t total_samples[2][VR_SAMPLES];
    /* without NVTX: a repeating call-site pattern (see growth.c) */
    vr_map alloc_sites;               /* stack id -> device allocations seen there */
    vr_map site_names;                /* stack id -> vr_site_names (region names) */
    uint32_t pat_anchor;              /* stack whose allocations start an iteration, 0 = none yet */
    bool pat_freed;                   /* a free happened since the anchor's last allocation */
    uint64_t win_ns, win_next, win_n; /* fragmentation samples over time */

    vr_range_span *spans;
    size_t nspans;

    vr_oom_raw *ooms;
    size_t nooms, capooms;
    vr_frag *frags;
    size_t nfrags, capfrags;

    char **notes;
    size_t nnotes, capnotes;
    bool has_end;
    int32_t exit_status, exit_signal;
    char *exit_reason;
} vr_state;

void vr_state_init(vr_state *s, vr_arena *arena, const vt_header *hdr);
void vr_state_destroy(vr_state *s);
void vr_state_note(vr_state *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *vr_state_string(const vr_state *s, uint32_t id);
vr_devstate *vr_state_device(vr_state *s, int32_t id);
vr_thread *vr_state_thread(vr_state *s, uint32_t tid);
/* The innermost NVTX range of a thread, 0 if none. */
uint32_t vr_thread_range(const vr_thread *t);

/* peak.c: every change of allocated/reserved bytes goes through here. */
vr_counter *vr_counter_get(vr_map *m, uint64_t key);
/* Add delta (signed, bytes; count +1/-1/0) to the site and phase counters
 * and to the device's allocated bytes; tracks peaks and lazy snapshots. */
void vr_account(vr_state *s, int32_t device, uint32_t stack, uint32_t range, int64_t delta,
                int count);
void vr_account_reserved(vr_state *s, int32_t device, int64_t delta);
/* A direct allocation (outside heaps) starts (sign +1) or stops (-1) counting:
 * its device's direct bytes, vr_account and vr_account_reserved in one step,
 * with one device lookup and one timeline update. */
void vr_account_direct(vr_state *s, const vr_live *l, int sign);
/* Timeline downsampling: record the current state of dev at time ts. */
void vr_timeline_touch(vr_state *s, vr_devstate *d, uint64_t ts);
/* Keeps the hover sample of the last change (end of the replay). */
void vr_hover_flush(vr_state *s);
/* A new peak is complete: take the (lazy) snapshot of the counters. */
void vr_snapshot_peak(vr_state *s);
/* Materialized snapshot value of a counter (bytes/count at the peak). */
uint64_t vr_counter_peak(const vr_state *s, const vr_counter *c, uint64_t *count);
/* Called before every event: time windows, growth sampling. */
void vr_tick_time(vr_state *s, uint64_t ts);

/* frag.c: heaps and regions */
void vr_heap_register(vr_state *s, const vt_event *ev);
/* Drops a heap (or only its regions). A live allocation it covered becomes
 * VR_PENDING_UNCOVERED: returns its address (the caller hands it to the
 * unregistering thread or commits it), 0 when none. */
uint64_t vr_heap_unregister(vr_state *s, uint64_t heap, bool reset_only);
void vr_region_register(vr_state *s, const vt_event *ev, uint32_t range);
void vr_region_unregister(vr_state *s, uint64_t heap, uint64_t addr);
/* A region was named (string id): the name is kept for the call site that
 * registered the region (vr_site_names); unknown regions are ignored. */
void vr_region_name(vr_state *s, uint64_t heap, uint64_t addr, uint32_t name);
void vr_region_resize(vr_state *s, uint64_t heap, uint64_t addr, uint64_t size);
/* A direct allocation appeared: mark it in_heap when a heap covers it. */
void vr_heap_check_alloc(vr_state *s, vr_live *l);
/* Fragmentation of the device's heaps now. */
vr_frag vr_frag_now(vr_state *s, int32_t device, const char *when);
void vr_frag_push(vr_state *s, const vr_frag *f);

/* accounting.c: the per-(device, kind) ledger of report.h's vr_acct_row.
 * An allocation of size bytes became live / stopped being live; a failed
 * allocation call (live bytes of its row are recorded). */
void vr_acct_alloc(vr_state *s, int32_t device, enum vt_kind kind, uint64_t size);
void vr_acct_free(vr_state *s, int32_t device, enum vt_kind kind, uint64_t size);
void vr_acct_failed(vr_state *s, int32_t device, enum vt_kind kind);
/* The rows, sorted by device then kind, into r (arena memory). */
void vr_acct_build(vr_state *s, vr_report *r);
void vr_acct_destroy(vr_state *s);
/* The device (-1 for host kinds) an event of api on device counts on. */
int32_t vr_kind_device(enum vt_api api, int32_t device);

/* replay.c: count a pending allocation as a direct allocation now. */
void vr_pending_commit(vr_state *s, vr_live *l);
/* A device allocation or region of `bytes` was counted (iteration input). */
void vr_iteration_alloc(vr_state *s, uint64_t bytes);
/* topnames entry of a top-level range name (created), NULL when full. */
size_t vr_topname(vr_state *s, uint32_t name);

/* growth.c */
void vr_growth_range_push(vr_state *s, vr_thread *t, uint64_t entry, uint64_t ts);
void vr_growth_range_pop(vr_state *s, vr_thread *t, uint32_t domain, uint64_t ts);
void vr_sampler_tick(vr_state *s, vr_sampler *sp);
/* Least-squares fit of samples (x = (i+1) * stride). */
void vr_fit(const uint64_t *y, uint32_t n, uint64_t stride, double *slope, double *r2);
/* The sampler to use for growth: NVTX iterations if one was seen at least 3
 * times, else the call-site pattern's if it completed at least 3, else NULL
 * (no growth is reported). */
const vr_sampler *vr_growth_sampler(const vr_state *s);
/* A device allocation at stack is about to be replayed: true when it starts
 * a call-site-pattern iteration (vr_pattern_alloc will tick). */
bool vr_pattern_ticks(const vr_state *s, uint32_t stack);
/* Account an allocation at stack for the call-site pattern; ticks the
 * pattern sampler (before the allocation counts) when it starts an
 * iteration. */
void vr_pattern_alloc(vr_state *s, uint32_t stack);

/* oom.c */
/* A failed allocation by thread t (its ranges give the failure's range and
 * the batch estimate's iteration); touches no thread. */
void vr_oom_failed(vr_state *s, const vt_event *ev, vr_thread *t);
void vr_oom_meminfo(vr_state *s, const vt_event *ev);

/* pool.c: a memory pool's state at a failed stream-ordered allocation. */
/* A VT_REC_POOL_STAT: held on its device until the same thread's failure. */
void vr_pool_stat(vr_state *s, const vt_event *ev);
/* At failure ev on device d: the held pool state goes into o (has_pool,
 * pool_reserved_bytes, pool_used_bytes) and the pool's free reserve
 * (reserved - used, bytes) into o->live_reserved. Nothing when none is held
 * for ev's thread. */
void vr_oom_take_pool(vr_devstate *d, const vt_event *ev, vr_oom *o);
/* Add the pool of an out-of-memory failure o to f, the heaps' fragmentation
 * at that failure (frag.c's one definition): its reserved bytes to
 * f->reserved, its used bytes to f->allocated. None of its free reserve
 * counts as f->largest_free: a pool does not show its holes, and its failure
 * shows that every one of them is smaller than the request (a free hole that
 * fits is where a pool places an allocation: CUDA Programming Guide,
 * "Stream Ordered Memory Allocator", memory reuse). */
void vr_frag_add_pool(vr_frag *f, const vr_oom *o);
/* A fragmentation verdict of a failure with a pool: its explanation (naming
 * the reserve; live: the live-data summary) and its remedy, in arena a. */
const char *vr_pool_explain(vr_arena *a, const vr_oom *o, const char *live);
const char *vr_pool_remedy(vr_arena *a, const vr_oom *o);
/* The pool's numbers of a failure: one text line (nothing without a pool),
 * and the JSON member "pool" with its trailing comma (null without one). */
void vr_pool_text(FILE *f, const vr_oom *o);
void vr_pool_json(FILE *f, const vr_oom *o);

/* leaks.c: live allocations of one kind grouped by stack (counters keyed by
 * stack id); their bytes and count. */
void vr_leaks_group(vr_state *s, enum vt_kind kind, vr_map *groups, uint64_t *bytes,
                    uint64_t *count);

/* batch.c: "vramtrace run -o batchN.vtrace -- ARGV" with argv's --batch set
 * to batch (the vramtrace run options of the first recording, such as
 * --sim, are the user's to repeat). */
char *vr_batch_command(vr_arena *a, const char *const *argv, size_t argc, int64_t batch);

/* model.c */
void vr_build_model(vr_state *s, vr_report *r, const vr_options *opt);

/* symbolize.c */
typedef struct vr_symbolizer vr_symbolizer;
vr_symbolizer *vr_symbolizer_new(vr_state *s, bool no_symbols, bool native);
void vr_symbolizer_free(vr_symbolizer *sy);
/* Symbolize and fold the stack of leaf id (cached per stack). */
vr_stack vr_symbolize(vr_symbolizer *sy, uint32_t leaf);
/* A stable key string for merging stacks that symbolize alike. */
const char *vr_stack_key(vr_arena *a, const vr_stack *st);

/* util */
/* Duration/time "12.3 ms", "4.567 s" into buf; returns buf. */
const char *vr_format_time(uint64_t ns, char *buf, size_t len);
#define VR_TIME(ns) vr_format_time((ns), (char[32]){0}, 32)
uint64_t vr_rel_ns(const vr_state *s, uint64_t ts);
const char *vr_basename(const char *path);

/* Escaping helpers for renderers: a quoted JSON string / HTML text. Bytes
 * that are not well-formed UTF-8 come out as U+FFFD (\ufffd, &#xfffd;), so
 * the output is valid UTF-8 whatever the trace holds. */
void vr_json_str(FILE *f, const char *s);
void vr_html_str(FILE *f, const char *s);
const char *vr_frame_label(const vr_frame *fr, char *buf, size_t len);
/* Two frames are the same source place: function, file and line. */
bool vr_same_frame(const vr_frame *a, const vr_frame *b);
/* How many leading (innermost) frames stacks a and b share, at most limit,
 * by `same` (vr_same_frame, or a caller's own rule). */
size_t vr_shared_frames(const vr_stack *a, const vr_stack *b, size_t limit,
                        bool (*same)(const vr_frame *, const vr_frame *));
size_t vr_top(const vr_options *opt);
/* The failure users care about: the last failed allocation that was not
 * recovered (r->ooms is in time order). Its index, or SIZE_MAX when every
 * failure was recovered or there was none. */
size_t vr_fatal_oom(const vr_report *r);
/* The order renderers list failures in: the k-th (0-based) shown is the fatal
 * one (vr_fatal_oom's index, or SIZE_MAX for none) first, then the others in
 * time order, at most top in all (the fatal one always). The index into
 * r->ooms, SIZE_MAX past the last. */
size_t vr_oom_shown(const vr_report *r, size_t fatal, size_t k, size_t top);

/* replay.c: replay one event into s (as vr_analyze does); settle what is
 * pending after the last one. */
void vr_replay_one(vr_state *s, const vt_event *ev);
void vr_replay_settle(vr_state *s);
/* util.c: length (2..4) of the well-formed UTF-8 sequence at p (a byte >=
 * 0x80), 0 when it is not one (RFC 3629 section 4). */
int vr_utf8_len(const unsigned char *p);

/* pickle.c: a streaming writer of Python pickle protocol 2 (the opcodes of
 * CPython's Lib/pickletools.py that a dict of lists of dicts of ints and
 * strings needs). Values are pushed on the unpickler's stack: a container is
 * begun (vr_pk_dict / vr_pk_list), then vr_pk_mark, its items (key, value
 * pairs for a dict), then vr_pk_setitems / vr_pk_appends. Errors show in
 * ferror(f). */
typedef struct vr_pickle {
    FILE *f;
    uint32_t memo; /* next memo index (LONG_BINPUT) */
} vr_pickle;
void vr_pk_begin(vr_pickle *p, FILE *f);   /* PROTO 2 */
void vr_pk_end(vr_pickle *p);              /* STOP */
void vr_pk_dict(vr_pickle *p);             /* EMPTY_DICT */
void vr_pk_list(vr_pickle *p);             /* EMPTY_LIST */
void vr_pk_mark(vr_pickle *p);             /* MARK */
void vr_pk_setitems(vr_pickle *p);         /* SETITEMS: pairs since the mark into the dict */
void vr_pk_appends(vr_pickle *p);          /* APPENDS: items since the mark into the list */
void vr_pk_int(vr_pickle *p, int64_t v);   /* BININT (32-bit) or LONG1 (8 bytes) */
void vr_pk_uint(vr_pickle *p, uint64_t v); /* BININT or LONG1 (up to 9 bytes) */
/* BINUNICODE; bytes that are not well-formed UTF-8 become U+FFFD. */
void vr_pk_str(vr_pickle *p, const char *s);
void vr_pk_tuple2(vr_pickle *p); /* TUPLE2 of the two values on top */
/* LONG_BINPUT: remember the value on top; returns its memo index. */
uint32_t vr_pk_put(vr_pickle *p);
void vr_pk_get(vr_pickle *p, uint32_t memo); /* LONG_BINGET */

#endif
