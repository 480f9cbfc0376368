/* state.h: the replay state (vr_state) and the analyses' entry points,
 * shared by the event driver (replay.c), the state's accessors (state.c),
 * the analyses (peak, frag, growth, oom, leaks, accounting), the model
 * builder (model.c) and the symbolizer. Renderers never include it: they see
 * the model (report.h) only. Files call downwards only (docs/architecture.md,
 * "report/"). Not installed. */
#ifndef VRAMTRACE_REPORT_STATE_H
#define VRAMTRACE_REPORT_STATE_H

#include "internal.h"

#include <bsd/sys/tree.h>

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

/* The trace times (ns, trace clock) at which a growth sampler ticked, in
 * order, at most VR_MAX_TICK_TIMES: which iteration an allocation was made
 * in (vr_sizes_repeat). */
typedef struct vr_ticks {
    uint64_t *ts;
    size_t n, cap;
} vr_ticks;
#define VR_MAX_TICK_TIMES ((size_t)1 << 22)

typedef struct vr_sampler {
    uint64_t ticks;  /* iterations (or time windows) seen */
    uint64_t stride; /* ticks per kept sample */
    uint32_t n;      /* samples kept */
    int slot;        /* which samples[] array in a site this sampler fills */
    vr_ticks times;  /* when it ticked */
} vr_sampler;
/* Samplers, each with its own samples[] array in a site: the top-level
 * range's (slot 0), the call-site pattern's (1), the nested range's (2). */
#define VR_SAMPLER_SLOTS 3

/* Growth samples are kept for at most this many call sites (1.5 KiB each),
 * the first ones live at a sample; past it a note says so. */
#define VR_MAX_SAMPLED_SITES 65536

/* A call site (stack leaf) or an NVTX range: live bytes now and at the
 * peak (lazy snapshot: see peak.c). A site's growth samples ([VR_SAMPLER_SLOTS][VR_SAMPLES],
 * arena) are allocated when it is first live at a sample: a site never live
 * at one has only zeros (vr_counter_samples), and costs 48 bytes. */
typedef struct vr_counter {
    uint64_t key;
    uint64_t live, snap;
    uint64_t snap_epoch;
    /* live allocations: fewer than the live map could ever hold (2^32 of
     * them would take 160 GiB of it), so 32 bits keep the entry small */
    uint32_t live_count, snap_count;
    uint64_t (*samples)[VR_SAMPLES];
    /* site_ranges entries (a "site row", vr_site_row): the items of the
     * same stack's sites counter and the same range's phases counter */
    uint32_t site, phase;
} vr_counter;

/* Growth samples of slot (vr_sampler.slot) of a site: VR_SAMPLES values. */
const uint64_t *vr_counter_samples(const vr_counter *c, int slot);

/* A live allocation: 40 bytes (issue 18: at most 64 per live allocation
 * with the map's index). Its counters are found through its site row, cached
 * at allocation time; what few allocations need (heap, VMM mappings, the
 * time an uncovered one became pending) is in vr_live_ext. */
typedef struct vr_live {
    uint64_t key; /* address */
    uint64_t size;
    uint64_t ts;
    uint32_t stack;
    uint32_t row; /* site row (vr_site_row) of stack and its thread's range */
    int32_t device;
    uint8_t in_heap; /* covered by a registered heap: counts as reserved only */
    uint8_t pending; /* VR_PENDING_*: not counted yet (see below) */
    uint8_t kind;    /* enum vt_kind */
    uint8_t flags;   /* VR_LIVE_* */
} vr_live;
/* vr_live.flags: a VMM handle's cuMemRelease was seen (alive while mapped);
 * taken from a stream-ordered pool (its rounding is the pool's:
 * vr_devstate.slack_pool). */
enum {
    VR_LIVE_RELEASED = 1,
    VR_LIVE_POOLED = 2,
    VR_LIVE_CAPTURED = 4,
    VR_LIVE_GRAPH = 8,
    VR_LIVE_ROUNDED = 16 /* its api takes the driver's rounding (vt_api_rounded) */
};
/* VR_LIVE_CAPTURED: made while its thread had a CUDA stream capture open
 * (vr_thread.captures; docs/report.md, "CUDA graphs"). VR_LIVE_GRAPH: a
 * graph allocation node's memory, made by a launch (api cuGraphLaunch). */

/* The rest of a live allocation that is in a heap, a VMM handle, or
 * uncovered (s->live_ext, same key). */
typedef struct vr_live_ext {
    uint64_t key;
    uint64_t heap;       /* the covering heap's id while in_heap */
    uint64_t pending_ts; /* VR_PENDING_UNCOVERED since (ns, trace clock) */
    uint32_t nmaps;      /* VMM: live mappings of the handle */
} vr_live_ext;

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
/* The heaps registered at one address that wait for their allocation
 * (frag.c: an allocation there is theirs, vr_heap_check_alloc_slow). */
typedef struct vr_uncovered {
    uint64_t key;  /* the heaps' address */
    uint64_t heap; /* the one heap id there; 0 when several (then scanned) */
    uint32_t n;
} vr_uncovered;

typedef struct vr_vmm_map {
    uint64_t key; /* mapped address */
    uint64_t size;
    uint64_t handle_key;
} vr_vmm_map;

/* A region of a heap (a block of a caching allocator's segment), in its
 * heap's tree by address. The sub_ fields describe its subtree (the regions
 * under it, itself included), kept by the tree (state.c, region_augment):
 * its lowest address, its highest end, its largest gap between one region
 * and the next (after the highest end of those before), and whether a
 * region there starts before the highest end of those before it (overlap). */
typedef struct vr_region {
    RB_ENTRY(vr_region) link;
    uint64_t addr, size;
    uint32_t stack, range;
    uint64_t ts;
    uint64_t sub_min, sub_end, sub_gap;
    bool sub_overlap;
} vr_region;

/* A heap's regions by address: libbsd's red-black tree (<bsd/sys/tree.h>),
 * so that registering or unregistering one of n regions costs O(log n) (a
 * sorted array's memmove made a heap of 100 k regions quadratic: a
 * sub-allocator that registers one large arena as its heap has all its live
 * blocks there). Walk it with vr_heap_first and vr_region_next (state.c). */
RB_HEAD(vr_regions, vr_region);
RB_PROTOTYPE(vr_regions, vr_region, link, vr_region_cmp)

typedef struct vr_heap {
    uint64_t key; /* heap id */
    uint64_t addr, size;
    int32_t device;
    uint64_t covered_alloc;    /* address of the live allocation it covers, 0 = none */
    struct vr_regions regions; /* by addr; its nodes are malloc'ed (frag.c) */
    size_t nregions;
    uint64_t region_bytes;
    uint64_t largest_free; /* while attached to its device (frag.c) */
    bool attached;
    bool irregular; /* attached without its largest gap (frag.c, attach) */
    bool lf_stale;  /* irregular, and largest_free not walked since */
} vr_heap;

/* h's regions in address order: the first (NULL: none) and the one after r
 * (NULL: r was the last). O(log n) each, O(n) for a whole walk. */
const vr_region *vr_heap_first(const vr_heap *h);
const vr_region *vr_region_next(const vr_region *r);
/* Add region r (all its fields set, no region of h at its address), remove
 * it (not freed), or say that its size changed: O(log n) each. */
void vr_heap_insert_region(vr_heap *h, vr_region *r);
void vr_heap_remove_region(vr_heap *h, vr_region *r);
void vr_heap_region_resized(vr_region *r);
/* Frees all of h's regions at once (O(n), no rebalancing); h is left with
 * none. */
void vr_heap_free_regions(vr_heap *h);
/* The largest free gap of h (bytes between two regions, or between one and
 * the heap's start or end) in O(1) from the tree, when every region lies
 * inside the heap and none overlaps another: true. false otherwise: the
 * caller walks the regions (frag_measure.c). */
bool vr_heap_largest_free_fast(const vr_heap *h, uint64_t *largest);
/* The same by walking h's regions in order (any heap), O(n). */
uint64_t vr_heap_largest_free_walk(const vr_heap *h);

/* How many of a device's heaps have largest free gap `largest` (a
 * multiset of the gaps: the device's largest is the tree's last). */
typedef struct vr_gap_count {
    RB_ENTRY(vr_gap_count) link;
    uint64_t largest, heaps;
} vr_gap_count;
RB_HEAD(vr_gap_counts, vr_gap_count);
RB_PROTOTYPE(vr_gap_counts, vr_gap_count, link, vr_gap_cmp)

typedef struct vr_bucket {
    uint64_t index; /* time bucket number */
    uint64_t max_alloc, t_max, max_res;
    uint64_t last_alloc, last_res, t_last;
} vr_bucket;

/* Growth is projected per device (model.c): a device's room is its own. For
 * the first VR_MAX_GROWTH_DEVICES devices (ids >= 0), each its vr_devgrowth
 * (2.1 KiB, arena); past them the projection takes all devices' bytes
 * together, with a note. */
#define VR_MAX_GROWTH_DEVICES 64
/* Stream-ordered pools followed per device (vr_devstate.pools;
 * trace/vtrace.h, VT_MAX_POOLS). */
#define VR_MAX_POOLS VT_MAX_POOLS
/* Names counted per nesting level, and the levels (vr_level, below). */
#define VR_MAX_TOPNAMES 16
#define VR_LEVELS 2
typedef struct vr_devgrowth {
    /* allocated bytes, and reserved bytes + slack (the device memory they
     * take), on the device at each kept sample of each sampler
     * (vr_state.total_samples and reserved_samples, per device) */
    uint64_t samples[VR_SAMPLER_SLOTS][VR_SAMPLES];
    uint64_t res_samples[VR_SAMPLER_SLOTS][VR_SAMPLES];
    /* per level: the peak reserved bytes of the level's range in progress
     * (vr_level.cur), and of each candidate name's last completed one with
     * its reserved bytes at its end (vr_level.names[].last_peak/last_end,
     * on this device) */
    uint64_t cur_peak[VR_LEVELS];
    uint64_t open_min; /* the least of pat_peak and the open levels' cur_peak
                        * (vr_level.cur set; vr_devgrowth_reopen) */
    uint64_t last_peak[VR_LEVELS][VR_MAX_TOPNAMES], last_end[VR_LEVELS][VR_MAX_TOPNAMES];
    uint64_t last_spare[VR_LEVELS][VR_MAX_TOPNAMES]; /* vr_devstate.pool_spare at its end */
    /* the call-site pattern's (vr_state.pat_*) on this device: the peak
     * reserved bytes since its last iteration began, and the last completed
     * iteration's peak and its reserved bytes at its end */
    uint64_t pat_peak, pat_last_peak, pat_last_end, pat_last_spare;
} vr_devgrowth;

typedef struct vr_devstate {
    uint64_t key;         /* device id + 1 (0 is a valid device) */
    vr_devgrowth *growth; /* NULL: host memory, or past VR_MAX_GROWTH_DEVICES */
    int32_t id;
    char *name;
    uint64_t total;
    uint64_t direct;     /* live direct allocations outside heaps */
    uint64_t heap_bytes; /* registered heaps */
    /* the driver's rounding of the live direct device and managed
     * allocations (vr_driver_rounded - size, bytes): the device memory they
     * take beyond their sizes, for the growth projection */
    uint64_t slack;
    uint64_t slack_pool; /* the part of slack of stream-ordered allocations */
    uint64_t region_bytes;
    /* the fragmentation's inputs over the heaps attached here (frag.c):
     * their region bytes (each at most its heap's size) and their largest
     * free gaps; their sizes are heap_bytes */
    uint64_t frag_allocated;
    struct vr_gap_counts gaps; /* of its regular heaps */
    size_t irregular_heaps;    /* attached heaps not in gaps (frag.c, attach) */
    uint64_t peak_alloc, peak_alloc_t, peak_res, peak_res_t;
    /* live bytes of its direct allocations made during CUDA stream captures
     * (VR_LIVE_CAPTURED), now and when peak_res was last raised */
    uint64_t captured, captured_at_peak;
    /* live bytes of graph allocation nodes' memory (VR_LIVE_GRAPH), now and
     * when peak_res was last raised */
    uint64_t graph, graph_at_peak;
    bool have_baseline;
    uint64_t baseline_used; /* device use outside the recording at the first meminfo */
    /* a pool_stat waiting for its failure or memory sample (the same
     * thread's next alloc_failed or meminfo) */
    bool pool_pending;
    uint32_t pool_tid;
    uint64_t pool_reserved, pool_used; /* bytes */
    /* the free reserve (reserved - used bytes) of the device's pools at
     * their latest pool_stat, summed (pool_spare) and per pool (the first
     * VR_MAX_POOLS, the last one standing for the rest), 0 before any: the
     * recorder writes one at iteration ends (interpose/poolstat.c),
     * failures and memory samples */
    uint64_t pool_spare;
    struct {
        uint64_t pool, spare, reserved;
        uint32_t round; /* pool_round_id when its latest pool_stat came */
    } pools[VR_MAX_POOLS];
    /* the most of the pools' reserved bytes summed over one round's
     * pool_stats (same entries), and when (ns since the start): taken at
     * the end of a round (pool_round: pool_stats of thread pool_tid in a
     * row, the round numbered pool_round_id, its last at pool_round_t),
     * when the recorder has sampled every pool of the device it samples;
     * no state older than the round in the sum */
    uint64_t pool_reserved_peak, pool_reserved_peak_t;
    bool pool_round;
    uint32_t pool_round_id;
    uint64_t pool_round_t;
    uint32_t npools;
    bool pool_sampled; /* a pool_stat of the device was seen */
    /* a graph memory pool's pool_stat (VT_POOL_GRAPH) waiting for the same
     * thread's next failure (graphpool.c): its reserved bytes */
    bool gpool_pending;
    uint32_t gpool_tid;
    uint64_t gpool_reserved;
    bool pool_allocs;   /* a stream-ordered allocation was made on it */
    vr_bucket *buckets; /* grows by doubling up to VR_TIMELINE_BUCKETS */
    size_t nbuckets, capbuckets;
    uint64_t bucket_ns;
    /* where the last bucket's time ends (ns since the start, saturated): an
     * earlier time updates that bucket without a division */
    uint64_t bucket_end;
} vr_devstate;

typedef struct vr_thread {
    uint64_t key;    /* thread id */
    uint64_t *stack; /* NVTX ranges: domain << 32 | name string id */
    uint64_t *stack_ts;
    size_t depth, cap;
    uint32_t nvtx_open; /* push ranges open, as nvtx.c counts them */
    uint32_t captures;  /* CUDA stream captures it began that have not ended */
    /* the thread's last failed allocation, until its next allocation attempt */
    bool fail_open;
    int32_t fail_device;
    uint64_t fail_size;
    bool fail_vmm;     /* a VMM handle's creation (cuMemCreate) failed */
    uint64_t unmapped; /* bytes of VMM handles created since its last mapping */
    size_t fail_index; /* into vr_state.ooms */
    uint64_t fail_seq; /* vr_oom_raw.seq of that failure, in case its slot was reused */
} vr_thread;

typedef struct vr_module {
    uint32_t id;
    char *path;
    uint64_t bias, start, end;
    char *build_id; /* recorded GNU build-id in hex, "" none; NULL: a trace before
                     * version 4 (not recorded) */
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

/* A logical frame named on the recording machine (VT_REC_SYMBOL): string
 * ids, the line, and whether it was inlined at its ip. */
typedef struct vr_symbol {
    uint32_t function, file, line;
    bool inlined;
} vr_symbol;

/* The recorded symbols of one ip: vr_state.syms[first .. first + n),
 * innermost first. */
typedef struct vr_ipsyms {
    uint64_t key; /* ip */
    uint32_t first, n;
} vr_ipsyms;

typedef struct vr_string {
    uint64_t key; /* string id */
    char *text;
    /* a name numbered by step ("iteration12", "epoch 1 step 12";
     * vt_range_stem): the id of the first string of its stem, the stem
     * (owned) and the name's numbers (vt_range_numbers); else 0 and NULL */
    uint32_t stem;
    char *stem_text;
    uint64_t number[VT_RANGE_NUMBERS];
    /* the first string of a stem: the numbers of the last range of the stem
     * that ended, and whether one ended whose numbers did not come after the
     * ones before ("layer0" again after "layer11": the names are not
     * numbered by step, and count apart from then on) */
    uint64_t stem_last[VT_RANGE_NUMBERS];
    bool stem_seen, stem_repeated;
} vr_string;

/* The first string of each stem of numbered names: stems, keyed by the
 * stem's 64-bit FNV-1a hash (text compared on lookup). */
typedef struct vr_stem {
    uint64_t key;
    uint32_t id;
} vr_stem;

/* An OOM before symbolization. */
/* A free call that failed (VT_REC_FREE_FAILED, freefail.c), with what the
 * recording held at its address then. */
typedef struct vr_free_failed_raw {
    uint64_t ts, addr;
    int32_t error;
    uint32_t stack, call, flags; /* call: string id; flags: VT_FREE_FAILED_* */
    uint64_t live_size;          /* the live allocation starting at addr, 0 if none */
    uint8_t live_kind;           /* its enum vt_kind */
    uint64_t calls_before;       /* allocations and frees recorded before it */
} vr_free_failed_raw;

typedef struct vr_oom_raw {
    vr_oom o;
    uint32_t stack, range;
    uint64_t top_keys[5], top_bytes[5], top_counts[5];
    size_t ntop;
    double leak_slope, leak_r2; /* growth of top_keys[0] when the verdict is leak */
    bool sizes_repeat;          /* leak: vr_sizes_repeat of top_keys[0] at the failure */
    uint64_t baseline;          /* device use outside the recording (bytes) */
    uint64_t seq;               /* which failed allocation of the trace (1-based) */
    /* Every call site live on the failing device (stack id, live bytes),
     * largest first, at most VR_OOM_ALL (all_cut: more were live); malloc'd,
     * NULL once let go (the failure recovered, or more than VR_OOM_LISTS
     * later failures keep theirs): what vr_oom.all_sites of the fatal
     * failure is made of (oom.c, keep_all). */
    uint64_t (*all)[2];
    uint32_t nall;
    bool all_cut;
} vr_oom_raw;

/* Iteration candidates at one nesting level of NVTX ranges (growth.c):
 * level 0 the top-level ranges, level 1 the ranges directly inside one
 * (e.g. "step" ranges inside one "train" range). VR_MAX_TOPNAMES names of
 * a level are counted: past them a name takes the place of one that began
 * once and ended (growth.c, level_slot). */
typedef struct vr_level {
    struct {
        uint32_t name;
        uint64_t count;       /* completed */
        uint64_t starts;      /* begun (completed or open) */
        uint64_t first_start; /* ts of the first start (trace clock) */
        /* the last completed one's measure, of the last one during which
         * no allocation failed for lack of memory once there is such a one
         * (vr_level.cur_ooms) */
        uint64_t last_peak;  /* its peak reserved bytes */
        uint64_t last_end;   /* reserved bytes at its end */
        uint64_t last_input; /* its first device allocation (bytes), 0 = none */
        uint64_t last_spare; /* pools' free reserve at its end (vr_pool_spares) */
        bool clean;          /* last_* are of one without such a failure */
        uint32_t parent;     /* level 1: the range it was last inside */
    } names[VR_MAX_TOPNAMES];
    size_t nnames;
    /* the range of this level in progress */
    uint32_t cur;
    uint64_t cur_peak, cur_input; /* peak reserved, first allocation (bytes) */
    /* out-of-memory failures before it began (growth.c, measures_need): one that
     * failed ends with the bytes the failure left live (a PyTorch step's
     * activations, held by the exception), no measure of a step's need */
    uint64_t cur_ooms;
    uint32_t iter_name; /* the most frequent name: the candidate, 0 = none */
    vr_sampler iter;
} vr_level;
#define VR_MAX_SPANS 2000

/* What the replay needs of an api (vt_api_get's table), per api, looked up
 * once at vr_state_init instead of once per event. */
typedef struct vr_api_props {
    uint8_t kind; /* enum vt_kind */
    bool host;    /* vt_kind_is_host(kind): counted on device -1 */
    bool handle;  /* its address field is a handle (a VMM handle or a CUDA array) */
    /* the VR_LIVE_* flags of its allocations: VR_LIVE_POOLED when
     * stream-ordered (from a pool: vt_api_info.stream_ordered),
     * VR_LIVE_GRAPH for cuGraphLaunch */
    uint8_t live_flags;
} vr_api_props;

/* CUDA stream captures open at once that the replay follows (a stream has
 * one at a time); begins past them are ignored. */
#define VR_MAX_CAPTURES 4096

typedef struct vr_state {
    vr_arena *arena;
    vr_api_props api[VT_API_MAX_];
    const vt_header *hdr;
    uint64_t t0, t_last;

    vr_map strings, stems, stacknodes, pyframes, threads, devices, live, heaps, sites, phases;
    vr_map site_ranges; /* counters keyed by range << 32 | stack: sites inside a range */
    vr_map acct;        /* vr_acct per (device, kind) */
    vr_map vmm_maps;    /* vr_vmm_map per mapped address */
    vr_map live_ext;    /* vr_live_ext of some live allocations */
    uint32_t *pend;     /* live items of pending allocations, in time order */
    size_t npend, cappend;
    vr_module *modules;
    size_t nmodules, capmodules;
    /* one-entry caches (item + 1, 0 = none) of the maps that never delete:
     * most events hit the same thread, device and (device, kind) row */
    uint32_t thread_tid, thread_item, device_item, acct_item;
    int32_t device_id;
    uint64_t acct_key;
    /* site row of each leaf stack id below leaf_cap, with its range:
     * range << 32 | (row item + 1), so the common allocation needs no
     * hash lookup for its counters */
    uint64_t *leaf_rows;
    size_t leaf_cap;

    uint64_t allocated, reserved; /* all devices */
    uint64_t peak_alloc, peak_alloc_t, peak_res, peak_res_t;
    uint64_t epoch;        /* snapshot epoch of the counters */
    bool peak_pending;     /* a new peak was reached and not yet snapshotted */
    uint64_t frag_peak_at; /* peak value when peak_frag was taken */
    vr_frag peak_frag;
    size_t uncovered_heaps; /* heaps without a covering allocation */
    vr_map uncovered_at;    /* vr_uncovered per address of such heaps */
    bool have_peak_frag;

    uint64_t host_pinned, host_pinned_peak;
    uint64_t allocations, frees, failed, unknown_frees, events;
    uint64_t failed_error; /* failed with another error than out of memory */

    /* growth: iterations (NVTX ranges at levels 0 and 1, growth.c), the
     * call-site pattern, time windows */
    vr_level level[VR_LEVELS];
    vr_sampler pat;
    uint64_t recovered;                  /* failed allocations retried successfully */
    uint32_t repeat_checks;              /* leak verdicts checked with vr_sizes_repeat (oom.c) */
    vr_hover_raw hover[VR_HOVER_POINTS]; /* timeline tooltips (peak.c) */
    size_t nhover;
    uint64_t hover_ns;           /* window length */
    uint64_t hover_t;            /* last change of the site counters (ns since the start) */
    uint64_t hover_lo, hover_hi; /* the window of hover_ns holding hover_t (hi saturated) */
    bool hover_dirty;            /* changed since the last kept sample */
    size_t nsampled_sites;       /* sites with growth samples (VR_MAX_SAMPLED_SITES) */
    bool sampled_sites_capped;
    uint64_t total_samples[VR_SAMPLER_SLOTS][VR_SAMPLES];
    /* reserved bytes + slack (the device memory they take) at the same samples */
    uint64_t reserved_samples[VR_SAMPLER_SLOTS][VR_SAMPLES];
    uint64_t host_samples[VR_SAMPLER_SLOTS][VR_SAMPLES]; /* host_pinned at the same samples */
    /* the devices with a vr_devgrowth (item numbers + 1 in devices) */
    uint32_t growth_devices[VR_MAX_GROWTH_DEVICES];
    uint32_t ngrowth_devices;
    bool growth_devices_capped; /* a device past them: growth projected over all together */
    /* without NVTX: a repeating call-site pattern (see growth.c) */
    vr_map alloc_sites;               /* stack id -> device allocations seen there */
    vr_map site_names;                /* stack id -> vr_site_names (region names) */
    uint32_t pat_anchor;              /* stack whose allocations start an iteration, 0 = none yet */
    bool pat_freed;                   /* a free happened since the anchor's last allocation */
    uint64_t pat_ooms;                /* as vr_level.cur_ooms, for the pattern's iteration */
    bool pools_pending;               /* a device's pool_pending may be set (vr_pool_stat) */
    bool pool_rounds;                 /* a device's pool_round may be set (vr_pool_stat) */
    bool pat_clean;                   /* as vr_level.names[].clean, for vr_devgrowth.pat_last_* */
    uint64_t win_ns, win_next, win_n; /* fragmentation samples over time */

    vr_range_span *spans;
    size_t nspans;
    /* NVTX events for the model (nvtx.c); name holds a string id until
     * vr_build_model resolves it (thread names: their own copy) */
    vr_nvtx_event *nvtx;
    size_t nnvtx, capnvtx;
    bool nvtx_capped;

    vr_oom_raw *ooms;
    size_t nooms, capooms;
    /* failed free calls: the first VR_FREE_FAILED_KEPT, and how many in all */
    vr_free_failed_raw *free_failed;
    size_t nfree_failed, capfree_failed;
    uint64_t free_failed_total;
    size_t oom_lists; /* ooms whose all list is held (oom.c, vr_oom_keep_all) */
    /* failed VMM handle creations whose same-size retry made handle key:
     * recovered once it is mapped (replay.c, attempt) */
    struct vr_recovery {
        uint64_t key, tid;
        size_t fail_index;
        uint64_t fail_seq;
    } * recov;
    size_t nrecov, caprecov;
    vr_frag *frags;
    size_t nfrags, capfrags;
    /* CUDA stream captures open (VT_REC_CAPTURE): each one's stream and the
     * thread that began it, whose allocations are the capture's until a
     * capture end on that stream (from any thread); had_captures: one began */
    struct vr_capture {
        uint64_t stream;
        uint32_t tid;
    } * captures;
    size_t ncaptures, capcaptures;
    bool had_captures;
    bool had_graph_memory; /* an allocation of api cuGraphLaunch was seen */

    char **notes;
    size_t nnotes, capnotes;
    vr_map ipsyms;   /* vr_ipsyms per ip with recorded symbols (vramtrace symbolize) */
    vr_symbol *syms; /* their frames, each ip's in a row */
    size_t nsyms, capsyms;
    bool has_end;
    int32_t exit_status, exit_signal;
    char *exit_reason;
} vr_state;

/* ---- state.c: the state and its accessors (layer 1: calls util only) ---- */

/* The files of report/ call downwards only (checked by the call-graph test):
 *   util, accounting  <  state, frag_measure  <  peak  <  frag, growth  <  oom
 *   <  leaks, symbolize  <  model  <  replay (the event driver, on top).
 * An analysis never calls the driver: what must happen after it (a pending
 * allocation committed, a thread touched) is returned to the driver. */
void vr_state_init(vr_state *s, vr_arena *arena, const vt_header *hdr);
/* Size the live map for the most allocations live at once that rd's trace
 * summary names (vt_summary.peak_live, the recorder's count; nothing when it
 * has none) before the first event, so that it is never rebuilt while it
 * fills: at most VR_PRESIZE_MAX entries (a hint from the file is not
 * trusted with more memory; past it the map grows as usual). Changes no
 * result, only when memory is taken. */
#define VR_PRESIZE_MAX (1u << 22)
void vr_state_presize(vr_state *s, const vt_reader *rd);
void vr_state_destroy(vr_state *s);
void vr_state_note(vr_state *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* vr_state_note unless s already holds a note of the same text. */
void vr_state_note_once(vr_state *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *vr_state_string(const vr_state *s, uint32_t id);
/* Growth device i (0 .. ngrowth_devices - 1): its state, with a vr_devgrowth. */
static inline vr_devstate *vr_growth_device(const vr_state *s, uint32_t i)
{
    return vr_map_item(&s->devices, s->growth_devices[i] - 1);
}
/* g's open_min again, after the open levels (vr_level.cur) or their peaks
 * changed (growth.c, vr_device_peak_res). */
static inline void vr_devgrowth_reopen(const vr_state *s, vr_devgrowth *g)
{
    g->open_min = g->pat_peak; /* the call-site pattern's iteration is always open */
    for (int k = 0; k < VR_LEVELS; k++)
        if (s->level[k].cur && g->cur_peak[k] < g->open_min)
            g->open_min = g->cur_peak[k];
}
/* A VT_REC_SYMBOL into s->ipsyms/syms: index 0 starts its ip's frames
 * (replacing any earlier ones), index k must follow k - 1 of the same ip;
 * a record out of that order is ignored, with a note. */
void vr_state_symbol(vr_state *s, const vt_event *ev);
/* The string id that stands for NVTX range name id among iteration
 * candidates: the first string of its stem when it is numbered by step
 * ("iteration0" for "iteration12", vt_range_stem) and the stem's numbers
 * have kept increasing, else id itself. */
uint32_t vr_range_key(const vr_state *s, uint32_t id);
/* A range named id ended: its key (vr_range_key), after its number was
 * checked against the stem's last one (a number not above it ends the
 * stem's counting as one range). */
uint32_t vr_range_end_key(vr_state *s, uint32_t id);
/* false for the key of a stem whose numbers stopped increasing: no longer
 * an iteration candidate. */
bool vr_range_key_live(const vr_state *s, uint32_t key);
/* The name shown for range key id: the stem of a numbered name
 * ("iteration", *numbered true), else the string (arena copy). */
const char *vr_range_key_name(vr_state *s, uint32_t id, bool *numbered);
/* The device and thread tables (created on first use). The last one asked
 * for is cached: inline, most events hit it. */
vr_devstate *vr_state_device_lookup(vr_state *s, int32_t id);
vr_thread *vr_state_thread_lookup(vr_state *s, uint32_t tid);
static inline vr_devstate *vr_state_device(vr_state *s, int32_t id)
{
    if (s->device_item && s->device_id == id)
        return vr_map_item(&s->devices, s->device_item - 1);
    return vr_state_device_lookup(s, id);
}
static inline vr_thread *vr_state_thread(vr_state *s, uint32_t tid)
{
    if (s->thread_item && s->thread_tid == tid)
        return vr_map_item(&s->threads, s->thread_item - 1);
    return vr_state_thread_lookup(s, tid);
}
/* The properties of api (out of range: the unknown api's). */
static inline const vr_api_props *vr_api(const vr_state *s, enum vt_api api)
{
    return &s->api[(unsigned)api < VT_API_MAX_ ? api : VT_API_UNKNOWN];
}
/* The innermost NVTX range of a thread (NULL: none), 0 if none. */
static inline uint32_t vr_thread_range(const vr_thread *t)
{
    return t && t->depth ? (uint32_t)t->stack[t->depth - 1] : 0;
}
/* ns since the trace's start of a trace-clock time (0 before it). */
static inline uint64_t vr_rel_ns(const vr_state *s, uint64_t ts)
{
    return ts > s->t0 ? ts - s->t0 : 0;
}
/* A device allocation or region of `bytes` was counted (iteration input).
 * Inline: every allocation. */
static inline void vr_iteration_alloc(vr_state *s, uint64_t bytes)
{
    for (int k = 0; k < VR_LEVELS; k++)
        if (s->level[k].cur && !s->level[k].cur_input)
            s->level[k].cur_input = bytes;
}
/* names[] index of a range name of level lv, SIZE_MAX when it has none
 * (growth.c adds them). */
size_t vr_level_find(const vr_level *lv, uint32_t name);

/* nvtx.c: keeps ev for the model's NVTX events when it is one (thread
 * names, push/pop and start/end ranges); vr_nvtx_build puts them in the
 * model with their names (arena copies). vr_state_destroy frees them. */
void vr_nvtx_record(vr_state *s, const vt_event *ev);
/* Thread tid ended (replay.c, thread_announced): the push ranges it left
 * open end by the latest time replayed, so that a new thread's ranges under
 * its id do not nest inside them. */
void vr_nvtx_thread_ended(vr_state *s, uint32_t tid);
void vr_nvtx_build(vr_state *s, vr_report *r);

/* frag_measure.c: fragmentation of the device's heaps now (reads heaps). */
vr_frag vr_frag_now(vr_state *s, int32_t device, const char *when);
/* f's fragmentation from its reserved, allocated and largest free bytes:
 * 1 - largest free block / bytes free (0 when nothing is free; frag.c's
 * definition), after bytes were added to them. */
void vr_frag_settle(vr_frag *f);
void vr_frag_push(vr_state *s, const vr_frag *f);

/* The live allocation's extension (created zeroed). */
vr_live_ext *vr_live_ext_get(vr_state *s, uint64_t key);
/* A capture record (VT_REC_CAPTURE): a begin opens a capture of its thread
 * on its stream; an end closes the capture open on its stream, whichever
 * thread began it, except on the per-thread default stream
 * (VT_STREAM_PER_THREAD), where only the ending thread's own (an end of a
 * stream with none open is ignored). */
void vr_state_capture(vr_state *s, const vt_event *ev);
/* Thread tid ended: the captures it began are no longer counted as its (a
 * new thread given its id began none; an end of their streams later finds
 * none open). */
void vr_state_captures_drop(vr_state *s, uint32_t tid);

/* peak.c: every change of allocated/reserved bytes goes through here. */
/* The site row (site_ranges item) of allocations at stack inside range,
 * created with its sites and phases counters when new. Inline: the leaf
 * cache's hit (the common allocation). */
uint32_t vr_site_row_lookup(vr_state *s, uint32_t stack, uint32_t range);
static inline uint32_t vr_site_row(vr_state *s, uint32_t stack, uint32_t range)
{
    uint64_t e = stack < s->leaf_cap ? s->leaf_rows[stack] : 0;
    if (e && (uint32_t)(e >> 32) == range)
        return (uint32_t)e - 1;
    return vr_site_row_lookup(s, stack, range);
}
/* Add delta (signed, bytes; count +1/-1/0) to the site row and site
 * counters and to the device's allocated bytes; tracks peaks and lazy
 * snapshots. */
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
/* The phase counters (s->phases: live and peak bytes and counts of each NVTX
 * range), summed from the site rows: the replay updates the rows and the
 * site counters only (one counter fewer per allocation and free). Call once
 * the replay is over, before reading them. */
void vr_phases_sum(vr_state *s);
/* A new peak is complete: take the (lazy) snapshot of the counters. */
void vr_snapshot_peak(vr_state *s);
/* Materialized snapshot value of a counter (bytes/count at the peak). */
uint64_t vr_counter_peak(const vr_state *s, const vr_counter *c, uint64_t *count);
/* Called before every event: time windows, growth sampling. Inline: most
 * events are inside the current window (win_next, ns since the start). */
void vr_tick_windows(vr_state *s, uint64_t ts);
static inline void vr_tick_time(vr_state *s, uint64_t ts)
{
    if (ts > s->t0 && ts - s->t0 >= s->win_next)
        vr_tick_windows(s, ts);
}
/* One tick of a growth sampler (an iteration ended, or a time window) at
 * trace time ts (ns). */
void vr_sampler_tick(vr_state *s, vr_sampler *sp, uint64_t ts);

/* frag.c: heaps and regions. A heap id registered again is first dropped by
 * the driver (vr_heap_known, vr_heap_unregister). */
bool vr_heap_known(const vr_state *s, uint64_t heap);
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
/* A direct allocation l appeared (still pending: VR_PENDING_NEW): when a
 * heap registered before it is at its address, that heap claims it
 * (in_heap, no longer pending, never counted as allocated): true. Inline:
 * every allocation, and only a heap without its allocation yet
 * (uncovered_heaps) can. */
bool vr_heap_check_alloc_slow(vr_state *s, vr_live *l);
static inline bool vr_heap_check_alloc(vr_state *s, vr_live *l)
{
    return s->uncovered_heaps && l->device >= 0 && vr_heap_check_alloc_slow(s, l);
}

/* accounting.c: the per-(device, kind) ledger of report.h's vr_acct_row.
 * An allocation of size bytes became live / stopped being live; a failed
 * allocation call (live bytes of its row are recorded). */
static inline uint64_t vr_acct_key(int32_t device, enum vt_kind kind)
{
    return (uint64_t)(uint32_t)device << 8 | (uint64_t)kind;
}
/* The row of (device, kind), created when new; the last one is cached
 * (inline: most events hit it). */
vr_acct *vr_acct_lookup(vr_state *s, int32_t device, enum vt_kind kind);
static inline vr_acct *vr_acct_get(vr_state *s, int32_t device, enum vt_kind kind)
{
    if (s->acct_item && s->acct_key == vr_acct_key(device, kind))
        return vr_map_item(&s->acct, s->acct_item - 1);
    return vr_acct_lookup(s, device, kind);
}
static inline void vr_acct_alloc(vr_state *s, int32_t device, enum vt_kind kind, uint64_t size)
{
    vr_acct *a = vr_acct_get(s, device, kind);
    a->allocations++;
    a->live += size;
    a->live_count++;
    if (a->live > a->peak)
        a->peak = a->live;
}
static inline void vr_acct_free(vr_state *s, int32_t device, enum vt_kind kind, uint64_t size)
{
    vr_acct *a = vr_acct_get(s, device, kind);
    a->frees++;
    a->live -= size < a->live ? size : a->live;
    if (a->live_count)
        a->live_count--;
}
void vr_acct_failed(vr_state *s, int32_t device, enum vt_kind kind);
/* The rows, sorted by device then kind, into r (arena memory). */
void vr_acct_build(vr_state *s, vr_report *r);
void vr_acct_destroy(vr_state *s);
/* The device (-1 for host kinds) an event of api on device counts on. */
static inline int32_t vr_kind_device(const vr_state *s, enum vt_api api, int32_t device)
{
    return vr_api(s, api)->host ? -1 : device;
}

/* growth.c */
void vr_growth_range_push(vr_state *s, vr_thread *t, uint64_t entry, uint64_t ts);
void vr_growth_range_pop(vr_state *s, vr_thread *t, uint32_t domain, uint64_t ts);
/* Thread t ended by ts (its id was given to a new thread): the ranges it
 * left open end uncounted (never popped: no iteration ends with them), the
 * top-level one's span shown up to ts. */
void vr_growth_thread_ended(vr_state *s, vr_thread *t, uint64_t ts);
/* Least-squares fit of samples (x = (i+1) * stride). */
void vr_fit(const uint64_t *y, uint32_t n, uint64_t stride, double *slope, double *r2);
/* Whether live bytes sampled at n iteration ends stride iterations apart
 * (y), fitted at slope bytes per iteration, kept rising: slope >= 1 B, at
 * least 6 samples, every one of the last third above the highest of the
 * first third, a new highest in the middle third, and in the last third a
 * new highest that rises above the earlier highest by at least a quarter
 * of what the slope adds over a third (slope * stride * (n / 3) / 4). One
 * rise that then stays (a lazily made buffer; a jump of 624 MiB and then
 * 2 MiB, which a PyTorch run with threads showed as a leak) is not growth.
 * A leak whose kept sizes vary (a history of tensors of random lengths)
 * grows in stairs whose straight-line fit can have a low R^2. */
bool vr_sustained(const uint64_t *y, uint32_t n, uint64_t stride, double slope);
/* The sampler to use for growth: NVTX iterations if one was seen at least 3
 * times (the most frequent top-level range; else the most frequent range
 * directly inside one), else the call-site pattern's if it completed at
 * least 3, else NULL (no growth is reported). */
const vr_sampler *vr_growth_sampler(const vr_state *s);
/* The NVTX level whose iterations vr_growth_sampler uses, NULL when it uses
 * none (the call-site pattern, or no growth). */
const vr_level *vr_growth_level(const vr_state *s);
/* A device allocation at stack is about to be replayed: true when it starts
 * a call-site-pattern iteration (vr_pattern_alloc will tick). */
bool vr_pattern_anchor_lookup(const vr_state *s, uint32_t stack);
static inline bool vr_pattern_ticks(const vr_state *s, uint32_t stack)
{
    if (!s->pat_freed || !stack)
        return false;
    return s->pat_anchor ? stack == s->pat_anchor : vr_pattern_anchor_lookup(s, stack);
}
/* Account an allocation at stack for the call-site pattern; ticks the
 * pattern sampler (before the allocation counts) when it starts an
 * iteration. */
void vr_pattern_alloc_slow(vr_state *s, uint32_t stack, uint64_t ts);
static inline void vr_pattern_alloc(vr_state *s, uint32_t stack, uint64_t ts)
{
    /* else nothing to do: another site than the anchor, or the anchor again
     * with no free since its last allocation (no iteration starts) */
    if (stack && (!s->pat_anchor || (stack == s->pat_anchor && s->pat_freed)))
        vr_pattern_alloc_slow(s, stack, ts);
}

/* An entry of vr_sizes_repeat's sites map: a stack id and its group. */
typedef struct vr_site_group {
    uint64_t key; /* stack id */
    uint32_t group;
} vr_site_group;

/* Whether the live allocations of the call sites in `sites` (a vr_map of
 * vr_site_group entries) include, in
 * one group, two of the same size made in different iterations of sampler
 * sp: groups[g] is set for each such group (ngroups entries, cleared first).
 * A caching allocator's segments that repeat a size from one iteration to
 * the next were not reused, so the blocks in the earlier ones were still
 * held; a cache growing to larger requests repeats none. One pass over the
 * live allocations. */
void vr_sizes_repeat(const vr_state *s, const vr_sampler *sp, const vr_map *sites, bool *groups,
                     size_t ngroups);

/* oom.c */
/* A failed allocation by thread t (its ranges give the failure's range and
 * the batch estimate's iteration); touches no thread. */
void vr_oom_failed(vr_state *s, const vt_event *ev, vr_thread *t);
/* Let go of failure index's list of every live site (vr_oom_raw.all): it
 * recovered, or its slot is reused (vr_state_destroy frees the rest). */
void vr_oom_drop_all(vr_state *s, size_t index);
/* A memory sample (VT_REC_MEMINFO) ev; pending: the bytes of the sampled
 * device's allocations not counted yet (pending, replay.c: a caching
 * allocator's cudaMalloc whose heap registration may still claim it), which
 * the device's use holds all the same. */
void vr_oom_meminfo(vr_state *s, const vt_event *ev, uint64_t pending);

/* freefail.c: a VT_REC_FREE_FAILED, classified by the live map at its time;
 * the first VR_FREE_FAILED_KEPT are kept, all are counted. */
#define VR_FREE_FAILED_KEPT 1000
void vr_free_failed_note(vr_state *s, const vt_event *ev);

/* graphpool.c: a device's CUDA graph memory pool at a failed allocation. */
/* A VT_REC_POOL_STAT of pool VT_POOL_GRAPH: held on its device until the
 * same thread's next failure. */
void vr_graph_pool_stat(vr_state *s, const vt_event *ev);
/* At failure ev on device d (after o->live_graph is set), when a graph pool
 * state is held for ev's thread: o->has_graph_pool, its reserved bytes, and
 * the part no live graph allocation holds (graph_pool_kept_bytes, bytes),
 * which is added to o->live_reserved: the process's, not use outside the
 * recording. */
void vr_oom_take_graph_pool(vr_devstate *d, const vt_event *ev, vr_oom *o);
/* At a memory sample of device d from thread tid (trace format 14): the
 * part of the graph memory pool state held for tid that no live graph
 * allocation holds (bytes; 0 when none is held), taken: the process's
 * memory, not use outside the recording. */
uint64_t vr_graph_pool_kept(vr_devstate *d, uint32_t tid);

/* pool.c: a memory pool's state at a failed stream-ordered allocation. */
/* A VT_REC_POOL_STAT: held on its device until the same thread's failure,
 * and its free reserve kept as the device's (vr_devstate.pool_spare). */
void vr_pool_stat(vr_state *s, const vt_event *ev);
/* An event of thread tid other than a pool_stat (tid UINT32_MAX: the
 * trace's end): the rounds of pool samples it ends are summed into their
 * devices' pool_reserved_peak, each the pools it sampled only. A round is the pool_stats one thread
 * writes in a row (interpose/poolstat.c: every pool of the device it samples, at iteration ends,
 * memory samples and failures); a peak taken between two of them summed one pool's new state with
 * another's old one (a random program's "288 MiB" where its pools never reserved more than 256 at
 * once: corpus.pools_random). Inline test first (every event). */
void vr_pool_rounds_end(vr_state *s, uint32_t tid);
/* A range of thread tid ended: a pool state it held was the one the
 * recorder writes before an iteration's end (interpose/poolstat.c), no
 * failure's or memory sample's: it is let go. */
void vr_pool_range_ended(vr_state *s, uint32_t tid);
/* The devices' pool_spare summed, bytes. */
uint64_t vr_pool_spares(vr_state *s);
/* The driver's rounding of d's live direct allocations (slack), less that
 * of the stream-ordered ones once the device's pool was sampled: a pool's
 * reserved bytes are its used bytes, their sizes, plus its free reserve,
 * wherever its placement left them. Bytes. */
uint64_t vr_device_rounding(const vr_devstate *d);
/* The device memory d's live direct allocations take beyond their sizes:
 * vr_device_rounding plus, once the device's pool was sampled, its free
 * reserve. Bytes. */
uint64_t vr_device_overhead(const vr_devstate *d);
/* At failure ev on device d, when a pool state is held for ev's thread (a
 * stream-ordered call's failure): that state into o (has_pool,
 * pool_reserved_bytes, pool_used_bytes) and the free reserve of d's pools
 * (pool_spare: the failing one's just before the failure, the others' at
 * their latest state) into o->live_reserved. Nothing else (oom.c,
 * pools_held, for another call's failure). */
void vr_oom_take_pool(vr_devstate *d, const vt_event *ev, vr_oom *o);
/* The free reserve (reserved - used bytes) of device d's pools
 * (vr_devstate.pool_spare: each pool at its latest state) when a pool state
 * is held on d for thread tid, 0 when none is: device memory the process
 * holds that no allocation uses, at a memory sample or failure. take: the
 * held state is used up (a memory sample's; a failure's goes to
 * vr_oom_take_pool). */
uint64_t vr_pool_spare(vr_devstate *d, uint32_t tid, bool take);
/* Add the pool of an out-of-memory failure o to f, the heaps' fragmentation
 * at that failure (frag.c's one definition): its reserved bytes to
 * f->reserved, its used bytes to f->allocated. None of its free reserve
 * counts as f->largest_free: a pool does not show its holes, and its failure
 * shows that every one of them is smaller than the request (a free hole that
 * fits is where a pool places an allocation: CUDA Programming Guide,
 * "Stream Ordered Memory Allocator", memory reuse). */
void vr_frag_add_pool(vr_frag *f, const vr_oom *o);
/* The explanation of a fragmentation verdict with a pool (arena a), naming
 * the reserve and the device's free bytes; live: the live-data summary. */
const char *vr_pool_explain(vr_arena *a, const vr_oom *o, const char *live);
/* The explanation of a fragmentation verdict where another call than a
 * pool's failed while the device's pools held free reserve
 * (vr_oom.pools_free_bytes): what they hold, the device's free bytes, the
 * remedy (CUDA Runtime API: cudaMemPoolAttrReleaseThreshold,
 * cudaMemPoolTrimTo). */
const char *vr_pools_held_explain(vr_arena *a, const vr_oom *o, const char *live);
/* The explanation of a failure refused by its pool's own limit
 * (vr_pool_at_limit): the device's free bytes, the pool's reserve. */
const char *vr_pool_limit_explain(vr_arena *a, const vr_oom *o, const char *live);

/* leaks.c: live allocations grouped by kind (enum vt_kind) and stack: for each
 * kind, counters keyed by stack id in groups[kind] (initialized here), their
 * bytes and count. One pass over the live allocations. */
void vr_leaks_group(vr_state *s, vr_map groups[VT_KIND_MAX_], uint64_t bytes[VT_KIND_MAX_],
                    uint64_t count[VT_KIND_MAX_]);

/* model.c */
void vr_build_model(vr_state *s, vr_report *r, const vr_options *opt);

/* symbolize.c */
typedef struct vr_symbolizer vr_symbolizer;
/* no_symbols: addresses only; native: keep the interpreter's frames in
 * stacks with Python frames; trace_only: name native frames from the
 * trace's symbol records only, never from files here. */
vr_symbolizer *vr_symbolizer_new(vr_state *s, bool no_symbols, bool native, bool trace_only);
void vr_symbolizer_free(vr_symbolizer *sy);
/* Every distinct native ip of s's stack trie that a file here names (the
 * recorded module, checked by build-id, as vr_symbolize finds it), as the
 * definition records vt_append_definitions takes: the strings they need,
 * with ids above every string of s, then each ip's symbols, innermost
 * first. The array is in s's arena, its count returned; counts into res. */
size_t vr_symbols_records(vr_symbolizer *sy, vt_event **out, vr_embed_result *res);
/* Symbolize and fold the stack of leaf id (cached per stack). */
vr_stack vr_symbolize(vr_symbolizer *sy, uint32_t leaf);
/* freefail.c: r's failed frees from s, their stacks symbolized by sy. */
void vr_free_failed_build(vr_state *s, vr_symbolizer *sy, vr_report *r);
/* A stable key string for merging stacks that symbolize alike: per frame
 * "function\x1f file\x1f line\x1f module\x1f ip\x1e" (the ip in hex, 0
 * unless the function is "??"). The definition of vr_stack_order's order;
 * the report makes no such string (unit test_stack_order holds the two to
 * agree). */
const char *vr_stack_key(vr_arena *a, const vr_stack *st);
/* strcmp's order of vr_stack_key(a) and vr_stack_key(b) (<0, 0, >0) without
 * making them: the order and the merging of the sites' tables (131 k stacks
 * took 494 MB in the report, 300 MB of it such keys, made once per table). */
int vr_stack_order(const vr_stack *a, const vr_stack *b);

/* Whether frames x and y give the same part of vr_stack_key: the same
 * function, file, line and module, and the same address where the function
 * is "??" (so two stacks order 0 when every frame holds this). */
bool vr_frame_same_key(const vr_frame *x, const vr_frame *y);

/* replay.c: replay one event into s (as vr_analyze does); settle what is
 * pending after the last one. */
void vr_replay_one(vr_state *s, const vt_event *ev);
void vr_replay_settle(vr_state *s);

#endif
