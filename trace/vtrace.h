/* vtrace.h: the one definition of the .vtrace trace format, its writer and
 * its streaming reader. Shared by interpose/ (writes) and report/ (reads);
 * knows nothing about hooks or about the live process.
 *
 * File layout (all integers little-endian):
 *
 *   "VTRACE\0\n"            8-byte magic
 *   u32 format_version      VT_FORMAT_VERSION
 *   u32 header_len          bytes of the header block that follows
 *   header block            vt_header fields, encoded as records (see trace.md)
 *   zstd frame*             independent frames (checksummed), each one a batch
 *
 * A batch (the content of one zstd frame) is a sequence of chunks; a chunk is
 * the records one thread produced since the last flush:
 *
 *   varint thread_id, varint base_ts_ns, varint payload_len, payload
 *
 * A payload is a sequence of records: a token byte (enum vt_rec) followed by
 * LEB128 varints. Timestamps are deltas from the previous record of the same
 * chunk (the first from base_ts_ns); addresses are zigzag deltas from the
 * previous address of the same chunk. Anchors: memray's record_writer (token
 * byte + varints + deltas) and heaptrack's trace tree (stack trie).
 *
 * Ordering: the writer swaps every thread's buffer at once at each flush, so
 * a batch holds exactly the events between two flushes; the reader merges the
 * chunks of a batch by timestamp (ties: frees before allocations), so events
 * come out in one global time order. Definition records (module, stack node,
 * string, thread, device, note) come out as soon as they are reached.
 *
 * A file cut at any byte reads back up to its last complete frame
 * (vt_reader_truncated() then says so); a corrupt frame or record is an error
 * (vt_reader_next() returns -1 with a message), never a crash.
 */
#ifndef VRAMTRACE_VTRACE_H
#define VRAMTRACE_VTRACE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define VT_MAGIC "VTRACE\0\n"
#define VT_MAGIC_LEN 8
/* 2: VMM map/unmap records, host-register apis, Python frames; 3: pool_stat;
 * 4: the module record's build_id; 5: the from-pool stream-ordered apis;
 * 6: cudaHostAlloc and cuMemHostAlloc; 7: CUDA arrays; 8: pool_stat before
 * memory samples; 9: pool_stat before NVTX range ends; 10: the capture
 * record; 11: the api cuGraphLaunch; 12: the free_failed record; 13: the
 * pool_stat of a device's graph memory pool (VT_POOL_GRAPH) at a failed
 * allocation; 14: that pool_stat before memory samples too; 15: the apis of
 * host and managed pools, the thread record's start (docs/trace.md,
 * "Versioning") */
#define VT_FORMAT_VERSION 15u
/* The writer flushes a batch at least this often (ns). */
#define VT_FLUSH_INTERVAL_NS 100000000ull
/* Longest string a record or header field keeps (bytes, without the NUL);
 * the writer truncates longer strings, the reader rejects them. */
#define VT_MAX_STRING_LEN 8192u
/* Longest identifier a record keeps (bytes): a module's build-id in hex, so
 * build-ids of up to 64 bytes; the writer truncates longer ones, the reader
 * rejects them. */
#define VT_MAX_ID_LEN 128u

/* Record tokens. Values are part of the format: append only. */
enum vt_rec {
    VT_REC_MODULE = 1,         /* a loaded object: id, path, load bias, address range, build-id */
    VT_REC_MODULE_RESET = 2,   /* the module map is re-emitted after this (dlopen/dlclose) */
    VT_REC_STACK_NODE = 3,     /* stack trie node: id, parent id, ip */
    VT_REC_STRING = 4,         /* interned string: id, text */
    VT_REC_THREAD = 5,         /* thread: id, name */
    VT_REC_DEVICE = 6,         /* device: id, name, total bytes */
    VT_REC_ALLOC = 7,          /* allocation: ts, address, size, stack, device, api */
    VT_REC_FREE = 8,           /* free: ts, address, device, api */
    VT_REC_ALLOC_FAILED = 9,   /* failed allocation: ts, size, error, stack, device, api, meminfo */
    VT_REC_MEMINFO = 10,       /* memory-info sample: ts, device, free, total */
    VT_REC_RANGE_PUSH = 11,    /* NVTX range push: ts, domain string id, name string id */
    VT_REC_RANGE_POP = 12,     /* NVTX range pop: ts, domain string id */
    VT_REC_MARK = 13,          /* NVTX mark: ts, domain string id, name string id */
    VT_REC_HEAP_REGISTER = 14, /* NVTX Mem heap: ts, heap id, address, size, usage */
    VT_REC_HEAP_UNREGISTER = 15,   /* ts, heap id */
    VT_REC_HEAP_RESET = 16,        /* ts, heap id: every region in it is gone */
    VT_REC_REGION_REGISTER = 17,   /* NVTX Mem region: ts, heap id, address, size, stack */
    VT_REC_REGION_UNREGISTER = 18, /* ts, heap id, address */
    VT_REC_REGION_RESIZE = 19,     /* ts, heap id, address, new size */
    VT_REC_REGION_NAME = 20,       /* ts, heap id, address, name string id */
    VT_REC_NOTE = 21,              /* free text from the recorder (e.g. "CUPTI unavailable: ...") */
    VT_REC_END = 22,               /* end of process: ts, status, signal, reason */
    VT_REC_RANGE_START = 23,       /* NVTX start/end range: ts, range id, domain, name */
    VT_REC_RANGE_END = 24,         /* ts, range id */
    VT_REC_VMM_MAP = 25,           /* cuMemMap: ts, handle, address, size, device (v2) */
    VT_REC_VMM_UNMAP = 26,         /* cuMemUnmap: ts, address, size (v2) */
    VT_REC_PY_FRAME = 27,      /* (v2) Python frame: id, function string id, file string id, line */
    VT_REC_PY_STACK_NODE = 28, /* (v2) stack trie node holding a Python frame: id, parent, frame */
    VT_REC_POOL_STAT = 29,   /* (v2) memory pool at a failed stream-ordered allocation: ts, device,
                                pool, reserved, used; precedes that failure's alloc_failed */
    VT_REC_SYMBOL = 30,      /* a logical frame at a stack_node's ip, named on the recording
                                machine (vramtrace symbolize): ip, index, function, file, line,
                                flags */
    VT_REC_CAPTURE = 31,     /* (v10) a CUDA stream capture began or ended (cuStreamBeginCapture,
                                cuStreamEndCapture): ts, stream, began; written by the thread
                                that made the call */
    VT_REC_FREE_FAILED = 32, /* (v12) a free call that failed (not a free: its memory, if
                                any, stays live): ts, address, error, stack, call, flags */
    VT_REC_MAX_
};

/* pool_stat's pool for a device's CUDA graph memory pool (v13): its
 * reserved and used bytes are cuDeviceGetGraphMemAttribute's
 * CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT and USED_MEM_CURRENT
 * (docs/trace.md, "Graph memory pool at a failed allocation"). */
#define VT_POOL_GRAPH UINT64_MAX
/* The stream value of the per-thread default stream (CU_STREAM_PER_THREAD,
 * cudaStreamPerThread; what a _ptsz call's stream 0 names): one handle,
 * each thread's own stream (docs/trace.md, "CUDA graph captures"). */
#define VT_STREAM_PER_THREAD 2u

/* free_failed flags: the address is a CUDA graph allocation node's (made by
 * cuGraphAddMemAllocNode or a captured cudaMallocAsync), as the recorder
 * knew it at the call. */
#define VT_FREE_FAILED_GRAPH_NODE 1u

enum vt_api {
    VT_API_UNKNOWN = 0,
    VT_API_CUDA_MALLOC = 1,           /* cudaMalloc */
    VT_API_CUDA_MALLOC_MANAGED = 2,   /* cudaMallocManaged */
    VT_API_CUDA_MALLOC_PITCH = 3,     /* cudaMallocPitch (size = pitch * height) */
    VT_API_CUDA_MALLOC_3D = 4,        /* cudaMalloc3D (size = pitch * height * depth) */
    VT_API_CUDA_MALLOC_HOST = 5,      /* cudaMallocHost (before v6: also cudaHostAlloc) */
    VT_API_CUDA_MALLOC_ASYNC = 6,     /* cudaMallocAsync (before v5: also FromPool) */
    VT_API_CU_MEM_ALLOC = 7,          /* cuMemAlloc_v2 */
    VT_API_CU_MEM_ALLOC_PITCH = 8,    /* cuMemAllocPitch_v2 */
    VT_API_CU_MEM_ALLOC_MANAGED = 9,  /* cuMemAllocManaged */
    VT_API_CU_MEM_ALLOC_HOST = 10,    /* cuMemAllocHost_v2 (before v6: also cuMemHostAlloc) */
    VT_API_CU_MEM_ALLOC_ASYNC = 11,   /* cuMemAllocAsync (before v5: also FromPool) */
    VT_API_CU_MEM_CREATE = 12,        /* cuMemCreate (physical; address = handle) */
    VT_API_CUPTI = 13,                /* seen only by CUPTI activity */
    VT_API_CUDA_HOST_REGISTER = 14,   /* cudaHostRegister: host memory pinned in place (v2) */
    VT_API_CU_MEM_HOST_REGISTER = 15, /* cuMemHostRegister(_v2) (v2) */
    VT_API_CUDA_MALLOC_FROM_POOL_ASYNC = 16,  /* cudaMallocFromPoolAsync (v5) */
    VT_API_CU_MEM_ALLOC_FROM_POOL_ASYNC = 17, /* cuMemAllocFromPoolAsync (v5) */
    VT_API_CUDA_HOST_ALLOC = 18,              /* cudaHostAlloc: pinned host (v6) */
    VT_API_CU_MEM_HOST_ALLOC = 19,            /* cuMemHostAlloc: pinned host (v6) */
    VT_API_CUDA_MALLOC_ARRAY = 20,            /* cudaMallocArray: a CUDA array (v7) */
    VT_API_CUDA_MALLOC_3D_ARRAY = 21,         /* cudaMalloc3DArray (v7) */
    VT_API_CU_ARRAY_CREATE = 22,              /* cuArrayCreate_v2 (v7) */
    VT_API_CU_ARRAY_3D_CREATE = 23,           /* cuArray3DCreate_v2 (v7) */
    VT_API_CUDA_MALLOC_MIPMAPPED_ARRAY = 24,  /* cudaMallocMipmappedArray: all levels (v7) */
    VT_API_CU_MIPMAPPED_ARRAY_CREATE = 25,    /* cuMipmappedArrayCreate (v7) */
    VT_API_CU_GRAPH_LAUNCH = 26,              /* a graph allocation node's memory, made by a
                                                 launch (v11) */
    VT_API_CUDA_MALLOC_HOST_POOL = 27,        /* cudaMallocFromPoolAsync of a host pool:
                                                 pinned host memory (v15) */
    VT_API_CU_MEM_ALLOC_HOST_POOL = 28,       /* cuMemAllocFromPoolAsync of a host pool (v15) */
    VT_API_CUDA_MALLOC_MANAGED_POOL = 29,     /* cudaMallocFromPoolAsync of a managed pool
                                                 (CUDA 13): managed memory (v15) */
    VT_API_CU_MEM_ALLOC_MANAGED_POOL = 30,    /* cuMemAllocFromPoolAsync of a managed pool (v15) */
    VT_API_MAX_
};

/* What kind of memory an api allocates. The names (vt_kind_name) are those
 * of the sim's ledger and of the report's "accounting" section. */
enum vt_kind {
    VT_KIND_DEVICE = 0,      /* device memory: cudaMalloc*, cuMemAlloc*, pools */
    VT_KIND_MANAGED,         /* unified memory: cudaMallocManaged, cuMemAllocManaged */
    VT_KIND_HOST_PINNED,     /* page-locked host memory: cudaMallocHost, cuMemAllocHost */
    VT_KIND_HOST_REGISTERED, /* existing host memory pinned in place: cudaHostRegister */
    VT_KIND_VMM,             /* physical memory of the VMM API: cuMemCreate */
    VT_KIND_ARRAY,           /* CUDA arrays (textures, surfaces): cudaMallocArray, cuArrayCreate */
    VT_KIND_MAX_
};

/* The error of a failed allocation record that ran out of memory:
 * cudaErrorMemoryAllocation (driver_types.h) and CUDA_ERROR_OUT_OF_MEMORY
 * (cuda.h) are both 2. Any other error is not out of memory (an invalid
 * argument, a lost context, no device). */
#define VT_ERROR_OUT_OF_MEMORY 2

enum vt_level { VT_LEVEL_RUNTIME = 0, VT_LEVEL_DRIVER };

/* The handle space of an api's allocation records: a virtual address, a
 * VMM handle (cuMemCreate: not an address, may equal one), or a CUDA array
 * (cudaArray_t, CUarray: an opaque handle, not an address). */
enum vt_space { VT_SPACE_ADDR = 0, VT_SPACE_VMM_HANDLE, VT_SPACE_ARRAY };

/* The properties of an api: the one table that the recorder, its live map
 * and the report read (trace/records.c). */
typedef struct vt_api_info {
    const char *name;    /* short stable name ("cudaMalloc"), "unknown" for others */
    enum vt_level level; /* runtime or driver entry point */
    enum vt_kind kind;   /* the memory it allocates */
    bool stream_ordered; /* cudaMallocAsync & co: lifetime follows the stream */
    enum vt_space space; /* what the record's address field holds */
} vt_api_info;

/* Properties of api; an api out of range gets the "unknown" entry (device
 * memory, runtime, address space). Never NULL. */
const vt_api_info *vt_api_get(enum vt_api api);
/* Short stable name of an api ("cudaMalloc", ...); never NULL. */
const char *vt_api_name(enum vt_api api);
/* "device", "managed", "host_pinned", "host_registered", "vmm"; "unknown"
 * out of range. */
const char *vt_kind_name(enum vt_kind kind);
/* true for memory that lives on the host (pinned or registered): recorded
 * with device -1 and kept out of device totals. */
bool vt_kind_is_host(enum vt_kind kind);

/* Whether a Python frame's file (a py_frame record's file string) is library
 * code rather than the program's own: inside an installed package
 * (".../site-packages/...", ".../dist-packages/..."), the interpreter's
 * standard library (".../lib/pythonX.Y/..." outside those) or not a file
 * ("<frozen ...>", "<string>"), except a notebook cell of IPython
 * ("<ipython-input-N-...>"; newer ones name a file under
 * /tmp/ipykernel_...) or "<stdin>". The rule that names a stack by the
 * program's own line, in the preload's OOM diagnosis and in the report. */
bool vt_py_library_file(const char *file);
/* A stack whose outer frames were not recorded (more Python frames than the
 * recorder reads, more frames in all than a stack holds, or a stack without
 * Python deeper than VRAMTRACE_STACK_DEPTH) ends its
 * recorded part with one Python frame in no file (file "", so library code,
 * never a stack's lead) whose function starts with this prefix and says why,
 * e.g. "[outer Python frames not recorded: more than 128]"
 * (interpose/pyframes.c writes it, docs/trace.md "Python frames"); a report
 * shows it even where it folds the frames around it. */
#define VT_CUT_FRAME_PREFIX "[outer "
/* true for definition records (no timestamp; yielded as soon as reached;
 * a report files them in its tables and replays no event for them).
 * Inline: the reader asks once per record. */
static inline bool vt_rec_is_definition(enum vt_rec rec)
{
    switch (rec) {
    case VT_REC_MODULE:
    case VT_REC_MODULE_RESET:
    case VT_REC_STACK_NODE:
    case VT_REC_STRING:
    case VT_REC_THREAD:
    case VT_REC_DEVICE:
    case VT_REC_NOTE:
    case VT_REC_PY_FRAME:
    case VT_REC_PY_STACK_NODE:
    case VT_REC_SYMBOL:
        return true;
    default:
        return false;
    }
}

/* Name of a record token ("alloc", ...); "unknown" for others. */
const char *vt_rec_name(enum vt_rec rec);
/* A build-id of n bytes as the module record carries it: lowercase hex into
 * out (2n + 1 bytes, NUL-terminated); "" when 2n exceeds VT_MAX_ID_LEN. */
void vt_build_id_hex(const unsigned char *bits, size_t n, char out[VT_MAX_ID_LEN + 1]);
/* The bytes of a recorded build-id (hex as vt_build_id_hex writes it) into
 * bits (VT_MAX_ID_LEN / 2 bytes); how many, 0 when hex is empty or not an
 * even count of lowercase hex digits. */
size_t vt_build_id_bits(const char *hex, unsigned char bits[VT_MAX_ID_LEN / 2]);

/* Stream-ordered memory pools followed one by one: the preload samples the
 * first this many pools a program names (cudaMallocFromPoolAsync) at
 * iteration ends (interpose/poolstat.c), and the report sums this many per
 * device (report/pool.c; past them, a note). Until session 26 8 each: a
 * program of 12 pools was reported holding 1 GiB of their 1.5 GiB. */
#define VT_MAX_POOLS 64

/* ---- Header --------------------------------------------------------------- */

#define VT_MAX_ARGV 64

typedef struct vt_header {
    uint32_t format_version;
    uint32_t pid;
    const char *host;              /* hostname */
    const char *program;           /* executable path (/proc/self/exe) */
    uint32_t argc;                 /* at most VT_MAX_ARGV kept */
    const char *const *argv;       /* argc strings */
    uint64_t start_wall_ns;        /* CLOCK_REALTIME at start, ns since the epoch */
    uint64_t start_mono_ns;        /* CLOCK_MONOTONIC at start: event timestamps use this clock */
    const char *vramtrace_version; /* e.g. "0.1.0" */
    uint32_t stack_depth;          /* VRAMTRACE_STACK_DEPTH in force */
    uint32_t flags;                /* VT_HDR_* */
    const char *run_id;            /* the run this process belongs to (vt_run_id_new), "" if none */
    uint32_t ppid;                 /* parent process id at start, 0 if unknown */
    bool has_rank;                 /* a launcher gave this process a rank (vt_rank_from_env) */
    uint32_t rank;                 /* that rank when has_rank */
} vt_header;

#define VT_HDR_CHILD_AFTER_FORK 0x1u /* written by a forked child (own file) */

/* ---- Clock ------------------------------------------------------------------
 * One clock for the recorder, the writer and the report (clock.c): event
 * timestamps are CLOCK_MONOTONIC ns (the header's start_mono_ns is on it). */

/* CLOCK_MONOTONIC now, in ns. */
uint64_t vt_clock_ns(void);
/* The state of one process's event stamps (vt_clock_stamp): the last stamp
 * and the calibration of the time stamp counter against CLOCK_MONOTONIC
 * (clock.c). Zero-initialised; one per process. */
typedef struct vt_stamp_clock {
    _Atomic uint64_t last;                /* vt_clock_stamp's latest (odd) */
    _Atomic uint64_t last_locked;         /* vt_clock_stamp_locked's latest (even) */
    _Atomic int tsc_state;                /* clock.c's TSC_* */
    _Atomic int writing;                  /* one thread writes an anchor */
    _Atomic uint64_t seq;                 /* odd while an anchor is written */
    _Atomic uint64_t first_tsc, first_ns; /* the first anchor (the rate's base) */
    _Atomic uint64_t base_tsc, base_ns;   /* the latest anchor */
    _Atomic uint64_t mult, period;        /* ns per tick << 32; ticks between anchors */
} vt_stamp_clock;

/* An event's timestamp: CLOCK_MONOTONIC ns, made strictly greater than every
 * stamp taken before from the same *c, across threads (one compare-and-swap,
 * repeated only under contention): the stamps' order is the order in which
 * the calls took them, and each thread's stamps increase. Read from the time
 * stamp counter once calibrated where the kernel's CLOCK_MONOTONIC runs on
 * it (x86-64, clocksource "tsc"): then never behind CLOCK_MONOTONIC and at
 * most a few microseconds ahead (clock.c). */
uint64_t vt_clock_stamp(vt_stamp_clock *c);
/* The same promise without a read-modify-write, for callers that hold one
 * lock of their own around every call of it on *c (the same lock for all
 * of them; vt_clock_stamp may be called anywhere meanwhile): a plain load
 * and store of the last stamp under that lock. The two kinds of stamp never
 * meet: vt_clock_stamp's are odd, these even; each is greater than every
 * stamp of either kind taken before it (that it can see: the lock's
 * acquire, or the caller's own earlier stamps). About 7 ns less than
 * vt_clock_stamp's compare-and-swap on this project's VM. */
uint64_t vt_clock_stamp_locked(vt_stamp_clock *c);
/* true once c's stamps come from the calibrated time stamp counter. */
bool vt_clock_stamp_uses_tsc(vt_stamp_clock *c);

/* ---- Asymmetric barrier -----------------------------------------------------
 * Linux membarrier(2), private expedited (barrier.c): a thread makes every
 * thread of the process pass a full memory barrier, so the others' fast
 * paths need only compiler barriers (an asymmetric Dekker handshake; used by
 * the writer's per-thread buffers and the recorder's order lock). Both
 * calls keep errno and are async-signal-safe. */

/* Register this process (idempotent); false where the kernel lacks it
 * (before Linux 4.14, or under valgrind): the callers then use full
 * barriers of their own. */
bool vt_barrier_register(void);
/* Every thread of the process passes a full memory barrier before this
 * returns true; false when the process is not registered. */
bool vt_barrier_all(void);

/* ---- Run naming ------------------------------------------------------------
 * The one naming rule of the traces of a run (shared by libvramtrace.so and
 * the vramtrace command; interpose/README.md, "Processes and runs").
 *
 * A run is the process tree started under one run id (VT_ENV_RUN_ID, 16
 * lower-case hex digits, set by `vramtrace run` or, when absent, by the first
 * preloaded process, and inherited). A process records only once it makes a
 * hooked CUDA call. Its trace is named:
 *   - with VT_ENV_OUTPUT (a pattern: %p = pid, %h = host, %% = %; any other
 *     %-sequence is an error): the expanded name if it is free (the first
 *     recording process of the run gets it), else that name with ".<pid>"
 *     inserted before the extension (a.vtrace -> a.<pid>.vtrace; then
 *     a.<pid>.<n>.vtrace, n = 1.., if that exists too, e.g. pid reuse);
 *   - else vramtrace.<program>.<pid>.vtrace (then .<pid>.<n>.vtrace).
 * An existing file is never overwritten. Each recording process appends its
 * trace's absolute path, one line per write(2), to the file VT_ENV_RUN_LIST
 * names when that is set (`vramtrace run` reads it back at the end). */
#define VT_ENV_OUTPUT "VRAMTRACE_OUTPUT"
#define VT_ENV_RUN_ID "VRAMTRACE_RUN_ID"
#define VT_ENV_RUN_LIST "VRAMTRACE_RUN_LIST"
#define VT_RUN_ID_LEN 16

/* The rule of a name pattern and the default name, as messages show them. */
#define VT_NAME_PATTERN_RULE "a path with only %p (pid), %h (host) or %% escapes"
#define VT_NAME_DEFAULT_SHOWN "vramtrace.<program>.<pid>.vtrace"
/* Expand %p (pid), %h (host) and %% of pattern into out (len bytes).
 * Returns 0, or -1 when it does not fit, is empty or has another %-escape. */
int vt_name_expand(const char *pattern, uint32_t pid, const char *host, char *out, size_t len);
/* true when pattern has a %p escape (each process then gets its own name;
 * "%%p" is a literal "%p", not one), read by vt_name_expand's rule. */
bool vt_name_has_pid(const char *pattern);
/* vramtrace.<program>.<pid>.vtrace (n = 0) or vramtrace.<program>.<pid>.<n>.vtrace.
 * 0, or -1 when it does not fit. */
int vt_name_default(const char *program, uint32_t pid, unsigned n, char *out, size_t len);
/* name with ".<pid>" (n = 0) or ".<pid>.<n>" inserted before the extension
 * of its last component (the text from its last '.', not a leading one; no
 * extension: appended). 0, or -1 when it does not fit. */
int vt_name_with_pid(const char *name, uint32_t pid, unsigned n, char *out, size_t len);
/* true when path is run_name with a pid inserted (vt_name_with_pid's shape). */
bool vt_name_is_sibling(const char *run_name, const char *path);
/* A new random run id (VT_RUN_ID_LEN hex digits + NUL) from getrandom(2). 0 or -1. */
int vt_run_id_new(char out[VT_RUN_ID_LEN + 1]);
/* true when s has the run id's shape. */
bool vt_run_id_valid(const char *s);
/* The rank a distributed launcher gave this process, from the first set of
 * RANK (torchrun), OMPI_COMM_WORLD_RANK (Open MPI), PMI_RANK (MPICH, Intel
 * MPI), SLURM_PROCID (srun): a decimal 0..INT32_MAX; -1 when none is set. */
int32_t vt_rank_from_env(void);
/* Append path (made absolute with the working directory) and a newline to
 * the existing file list with one O_APPEND write. 0, or -1 with errno. */
int vt_run_list_add(const char *list, const char *path);

/* ---- Events (what the reader yields, what the writer takes) -------------- */

typedef struct vt_event {
    enum vt_rec type;
    uint32_t thread_id; /* the recording thread's id (gettid) */
    uint64_t ts_ns;     /* CLOCK_MONOTONIC ns; 0 for definition records */
    union {
        struct {
            uint32_t id;
            const char *path;
            uint64_t bias, start, end;
            /* lowercase hex of its GNU build-id (the NT_GNU_BUILD_ID note); "" or
             * NULL when it has none; NULL in traces before version 4 */
            const char *build_id;
        } module;
        struct {
            uint32_t id, parent;
            uint64_t ip;
        } stack_node; /* ip: return address - 1 */
        struct {
            uint32_t id;       /* py frame id, from 1 */
            uint32_t function; /* string id of the code object's qualified name */
            uint32_t file;     /* string id of its file name (co_filename) */
            uint32_t line;     /* current line, 0 = unknown */
        } py_frame;
        struct {
            uint64_t ip;       /* a stack_node's ip (return address - 1) */
            uint32_t index;    /* 0: the innermost logical frame at ip; k: the frame that
                                * index k - 1 was inlined into */
            uint32_t function; /* string id of its name (demangled; "name+0x1c" without a line) */
            uint32_t file;     /* string id of its source file; 0 = unknown */
            uint32_t line;     /* 0 = unknown */
            uint32_t flags;    /* VT_SYMBOL_* */
        } symbol;
        struct {
            uint64_t stream; /* the CUstream handle the capture is on */
            uint32_t began;  /* 1: began on this thread; 0: ended (on any thread) */
        } capture;
        struct {
            uint64_t addr;  /* the pointer, handle or array the call was given */
            int32_t error;  /* what the call returned (cudaError_t or CUresult) */
            uint32_t stack; /* the call's stack */
            uint32_t call;  /* string id of the function's name ("cudaFreeAsync") */
            uint32_t flags; /* VT_FREE_FAILED_* */
        } free_failed;
        struct {
            uint32_t id, parent; /* same id space as stack_node */
            uint32_t frame;      /* py_frame id; 0 = the thread's Python frames are unknown */
        } py_stack_node;
        struct {
            uint32_t id;
            const char *text;
        } string;
        struct {
            uint32_t id;
            const char *name;
            /* 1: written before the thread's first other record (the
             * thread started, as the recorder saw it; a new thread given an
             * id seen before means the earlier one ended); 0: a name given
             * later (nvtxNameOsThread). v15; 0 in older traces. */
            uint32_t start;
        } thread;
        struct {
            int32_t id;
            const char *name;
            uint64_t total_bytes;
        } device;
        struct {
            uint64_t addr, size; /* bytes */
            uint32_t stack;      /* stack trie leaf id, 0 = no stack */
            int32_t device;      /* -1 for pinned host memory */
            enum vt_api api;
            uint64_t stream; /* stream handle for async allocations, else 0 */
        } alloc;
        struct {
            uint64_t addr;
            int32_t device;
            enum vt_api api;
        } free;
        struct {
            uint64_t size; /* bytes requested */
            int32_t error; /* cudaError_t or CUresult as returned (VT_ERROR_OUT_OF_MEMORY) */
            uint32_t stack;
            int32_t device;
            enum vt_api api;
            uint64_t free_bytes, total_bytes; /* cudaMemGetInfo right after; 0/0 if unknown */
        } failed;
        struct {
            int32_t device;
            uint64_t free_bytes, total_bytes;
        } meminfo;
        struct {
            int32_t device;          /* the failed allocation's device */
            uint64_t pool;           /* the pool's handle (CUmemoryPool / cudaMemPool_t) */
            uint64_t reserved_bytes; /* ReservedMemCurrent: bytes the pool holds from the device */
            uint64_t used_bytes;     /* UsedMemCurrent: bytes of its live allocations */
        } pool;
        struct {
            uint32_t domain, name;
        } range; /* string ids; domain 0 = default domain */
        struct {
            uint64_t id;
            uint32_t domain, name;
        } range_se; /* start/end ranges */
        struct {
            uint64_t heap, addr, size;
            uint32_t usage;
        } heap;
        struct {
            uint64_t heap, addr, size;
            uint32_t stack, name;
        } region;
        struct {
            uint64_t handle;     /* cuMemCreate handle (VMM_MAP only) */
            uint64_t addr, size; /* mapped virtual range, bytes */
            int32_t device;      /* the handle's device (VMM_MAP only) */
        } vmm;
        struct {
            const char *text;
        } note;
        struct {
            int32_t status;
            int32_t signal;
            const char *reason;
        } end;
    } u;
} vt_event;

/* ---- Summary ------------------------------------------------------------- */

/* What the recorder knows only at the end, written after the last batch of
 * a trace that was closed cleanly (docs/trace.md, "Summary"), so that a
 * reader can size its state before the first event: a hint, never needed
 * for a correct reading (a trace cut short, or written before the summary
 * existed, has none). */
typedef struct vt_summary {
    /* The most allocations live at once in the recorder's own live map
     * (device, managed and pinned host memory, VMM handles; counts, not
     * bytes). */
    uint64_t peak_live;
} vt_summary;

/* ---- Writer -------------------------------------------------------------- */

typedef struct vt_writer vt_writer;
/* One thread's buffer; owned by the writer, used only by its thread. */
typedef struct vt_tbuf vt_tbuf;

typedef struct vt_writer_opts {
    size_t tbuf_bytes; /* per-thread buffer size; 0 = default (64 KiB) */
    uint64_t flush_ns; /* flush interval; 0 = VT_FLUSH_INTERVAL_NS */
    int zstd_level;    /* 0 = default (1) */
    bool no_thread;    /* no writer thread: flush only in vt_writer_flush (tests) */
} vt_writer_opts;

/* Create path (O_CREAT|O_EXCL|O_NOFOLLOW, mode 0600; an existing file is an
 * error, never overwritten or followed), write the header and start the
 * writer thread. Returns NULL with a message in err (errlen bytes) that
 * names path on failure. opts may be NULL. */
vt_writer *vt_writer_open(const char *path, const vt_header *hdr, const vt_writer_opts *opts,
                          char *err, size_t errlen);
/* Register the calling thread (thread_id = its gettid) and return its buffer.
 * Thread-safe. NULL if the writer has failed. The caller keeps the pointer
 * (e.g. in thread-local storage) and passes it to vt_write(). */
vt_tbuf *vt_writer_attach(vt_writer *w, uint32_t thread_id);
/* The calling thread is exiting: its buffer is flushed at the next batch and
 * recycled. */
void vt_writer_detach(vt_writer *w, vt_tbuf *tb);
/* Append one record to tb. Thread-safe with respect to the writer thread;
 * tb must belong to the calling thread. Strings are copied. Returns 0, or -1
 * if the writer has failed (then every later call is a no-op returning -1)
 * or ev->type is not a record token. ev->thread_id is ignored (the buffer's
 * thread is used). A timestamp below the last flush's swap time is raised
 * to it, so batches are in time order (docs/trace.md, "Ordering"). */
int vt_write(vt_tbuf *tb, const vt_event *ev);
/* Write one batch now with everything recorded so far, from every thread.
 * Returns 0 or -1 (I/O error; the message is in vt_writer_error()). */
int vt_writer_flush(vt_writer *w);
/* Flush from a signal handler: best effort, async-signal-safe as far as
 * zstd allows (only try-locks: gives up while a flush runs, skips buffers
 * being written; no malloc). Limits: docs/trace.md. */
void vt_writer_flush_from_signal(vt_writer *w);
/* The process is about to die of a signal, after vt_writer_flush_from_signal:
 * remove the spill file when every record is in the trace (nothing left for
 * vt_recover), so a crash leaves nothing behind in /dev/shm. Async-signal-safe. */
void vt_writer_drop_spill_from_signal(vt_writer *w);
/* The summary vt_writer_close writes after the last batch (copied; a later
 * call replaces it). Not thread-safe: the thread that closes w calls it. */
void vt_writer_set_summary(vt_writer *w, const vt_summary *s);
/* Stop the writer thread, flush, write the summary (vt_writer_set_summary)
 * when one was set and the flush succeeded, close. Returns 0 or -1. Frees w. Buffers
 * still attached are marked dead (vt_write returns -1 on them); no other
 * call may use w afterwards. */
int vt_writer_close(vt_writer *w);
/* Last error message, or NULL. */
const char *vt_writer_error(const vt_writer *w);
/* Bytes written to the file so far (header + frames). */
uint64_t vt_writer_bytes(const vt_writer *w);
/* Give up the writer in a forked child without touching the parent's file:
 * frees nothing shared, closes the descriptor. */
void vt_writer_abandon_after_fork(vt_writer *w);

/* ---- Recovery after a kill -------------------------------------------------
 * While a trace is open its thread buffers live in a spill file in /dev/shm
 * (trace/spill.h), removed when the trace is closed. A process killed by
 * SIGKILL (the out-of-memory killer, a notebook's restart) or leaving by
 * _exit leaves it behind, holding what it recorded since the last flush. */

typedef struct vt_recover_end {
    uint32_t pid;       /* the process that ended: only its trace gets this end */
    int32_t status;     /* exit status, when signal is 0 */
    int32_t signal;     /* the signal that killed the process, or 0 */
    const char *reason; /* e.g. "killed; recorded by vramtrace run" */
    uint64_t ts_ns;     /* when it was seen to end (vt_clock_ns); raised to the last event's */
} vt_recover_end;

typedef struct vt_recover_result {
    uint64_t chunks;        /* thread buffers recovered from the spill file */
    uint64_t bytes;         /* their encoded records (bytes) */
    uint64_t dropped_bytes; /* an incomplete last frame cut off the trace (its records recovered) */
    uint64_t invalid_bytes; /* bytes of the spill file that were not whole records: left out */
    bool end_added;         /* end was appended (the trace had no end-of-process record) */
} vt_recover_result;

/* Append to the trace at path what its spill file holds, then remove the
 * spill file. With end (may be NULL), also append that end of process when
 * the trace is end->pid's (its header) and has none. Returns 1 when there was a spill file, 0 when
 * there is none (nothing to do: the trace was closed, or never had one), -1 with a message in err
 * (not a trace, unreadable, a spill file that is not this trace's, its process still running and
 * recording; the spill file is then left in place). Never touches a trace that was closed (it ends
 * with its summary) beyond removing a spill file with nothing to recover. */
int vt_recover(const char *path, const vt_recover_end *end, vt_recover_result *res, char *err,
               size_t errlen);
/* Does the trace at path have a spill file (its process still runs, or died
 * without closing it)? Its name into spill (len bytes) when it does. */
bool vt_recover_pending(const char *path, char *spill, size_t len);

/* ---- Appending definitions ------------------------------------------------ */

/* A symbol record's flags: the frame was inlined at the ip (it has no ip
 * of its own; the record after it, index + 1, is its caller). */
#define VT_SYMBOL_INLINED 0x1u

/* Append the definition records evs[0..n) (strings, symbols, notes: records
 * without a time, vt_rec_is_definition) to the finished trace at path as
 * one or more frames of one chunk each (thread 0), after its last frame;
 * a trace closed with its summary gets a copy of the summary after them,
 * so the summary stays last and nothing already in the file is changed or
 * moved (the old summary stays in place, read as an empty batch).
 * Used by `vramtrace symbolize` (docs/trace.md, "Symbols"). Returns 0, or -1 with a
 * message in err (errlen bytes): not a trace, unreadable, not finished (its
 * last frame is cut, it has a spill file to recover, or its process still
 * has it open), an event that is not a definition, a write error (the
 * file is then cut back to its old length). */
int vt_append_definitions(const char *path, const vt_event *evs, size_t n, char *err,
                          size_t errlen);

/* ---- Reader -------------------------------------------------------------- */

typedef struct vt_reader vt_reader;

/* Open and read the header. NULL with a message in err on failure (not a
 * .vtrace file, unsupported version, I/O error), without the path: the
 * caller's message names it. */
vt_reader *vt_reader_open(const char *path, char *err, size_t errlen);
/* The header; strings live as long as the reader. */
const vt_header *vt_reader_header(const vt_reader *r);
/* Next event in global time order. Returns 1 with *ev filled (strings valid
 * until the next call), 0 at the end (clean or truncated), -1 on corruption
 * (message in vt_reader_error()). Never crashes on any input. */
int vt_reader_next(vt_reader *r, vt_event *ev);
/* The next events, as vt_reader_next would give them one by one, up to n of
 * them into evs: how many (0 at the end), -1 on corruption before the first
 * (corruption after it: those before come out, the next call returns -1).
 * It stops after an event that holds a string: its string is valid until
 * the next call. For a replay that takes events by the batch (one call, and
 * one chunk's records decoded in a loop, for many events). */
long vt_reader_read(vt_reader *r, vt_event *evs, size_t n);
/* The trace's summary (vt_summary) into *out: true when the file ends with
 * one (read at open), false when it has none (cut short, still being
 * written, an older writer). A hint for sizing: nothing the reader returns
 * depends on it. */
bool vt_reader_summary(const vt_reader *r, vt_summary *out);
/* true when the file ended inside a frame (cut): the events before it were
 * all returned. */
bool vt_reader_truncated(const vt_reader *r);
const char *vt_reader_error(const vt_reader *r);
/* Compressed bytes consumed so far and file size, for progress bars. */
uint64_t vt_reader_offset(const vt_reader *r);
uint64_t vt_reader_file_size(const vt_reader *r);
void vt_reader_close(vt_reader *r);

/* Open a reader on an in-memory image (fuzzing, tests). The buffer must
 * outlive the reader. */
vt_reader *vt_reader_open_mem(const void *data, size_t len, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
/* ---- The driver's rounding ----------------------------------------------
 * The device memory the driver takes for an allocation of size bytes beyond
 * size (bytes): up to a multiple of 512 bytes under 2 MiB, of 2 MiB from
 * there (the driver's allocation granularity, cuMemGetAllocationGranularity;
 * 512 bytes is the spacing of consecutive small cudaMalloc blocks;
 * sim/README.md "Rounding" measures the same). 0 for a size within 2 MiB of
 * 2^64. The one rule of the report (vr_driver_rounded, the replay's slack)
 * and the preload's exit line (interpose/livemap.c). */
static inline uint64_t vt_driver_slack(uint64_t size)
{
    uint64_t g = size < (2u << 20) ? 512 : (2u << 20); /* powers of two: masks */
    return size > UINT64_MAX - g ? 0 : (0 - size) & (g - 1);
}

/* Whether allocations of kind are rounded by the driver (vt_driver_slack):
 * device and managed memory, and arrays (laid out by the driver and their
 * bytes estimated, interpose/arrays.c, but taken from the same pages: the
 * sim charges them whole 512-byte granules, and without them a failure
 * counted an array's few hundred bytes of rounding as use outside the
 * recording, corpus.arrays against the ledger). Not VMM physical memory
 * (cuMemCreate takes a multiple of the granularity its caller asked,
 * cuMemGetAllocationGranularity) or host memory. The one rule of the
 * report's replay (report/peak_hot.h) and the preload's counters
 * (interpose/livemap.c). */
static inline bool vt_kind_rounded(enum vt_kind kind)
{
    return kind == VT_KIND_DEVICE || kind == VT_KIND_MANAGED || kind == VT_KIND_ARRAY;
}

/* Whether an allocation made by api (of kind, its vt_api_get(api)->kind) takes its driver rounding
 * (vt_driver_slack) from the device beyond what a pool holds: its kind is
 * rounded (vt_kind_rounded) and it is not a graph launch's, whose rounding
 * is within the graph memory pool's reserve (a failure's pool_stat of
 * VT_POOL_GRAPH counts it; counted twice, it hid the graph launches' 2 MiB
 * memset base from a failure's use outside the recording:
 * corpus.graph_memory_random_* against the sim's ledger, session 32). The
 * one rule of the report's replay (report/peak_hot.h) and the preload's
 * counters (interpose/livemap.c). */
static inline bool vt_api_rounded(enum vt_api api, enum vt_kind kind)
{
    return api != VT_API_CU_GRAPH_LAUNCH && vt_kind_rounded(kind);
}

/* ---- NVTX range names numbered by step ----------------------------------
 * The one rule by which the report (report/growth.c) and the preload's exit
 * line (interpose/iterfit.c) take ranges named by a number as one range:
 * "iteration0", "iteration1", ... (Nsight Systems' PyTorch examples name each
 * step's range so), "epoch 3", "step_12", and names of several numbers that
 * end in one: "epoch 1 step 12", "step 12/100". A name is numbered when it
 * ends in a decimal digit (not "conv2d", "G2.forward", "step[3]"). Its stem
 * is the name without its trailing digits and then without trailing
 * separators (VT_RANGE_SEPARATORS), each other run of digits written
 * VT_RANGE_NUMBER_MARK: "iteration", "epoch <N> step", "step <N>". Its
 * numbers are its runs of digits in order (vt_range_numbers), compared
 * first to last. Both users count a stem as one range only while the
 * numbers of its ranges, as they end, keep increasing ("layer0" after
 * "layer3" ends that: report/state.c, vr_range_end_key;
 * interpose/iterfit.c, fit_of). Until session 26 the stem was the name
 * without its last number only, so "epoch 1 step 0" began a new stem and
 * each epoch's steps were one range of their own. */
#define VT_RANGE_SEPARATORS " _-.:#=/"
#define VT_RANGE_NUMBER_MARK "<N>"
#define VT_RANGE_NUMBERS 4
/* The stem of a numbered name into out (cap bytes, NUL-terminated,
 * truncated to fit; out may be NULL): its whole length in bytes, 0 when
 * name is not numbered or its stem is empty ("42"). An operator's range
 * (vt_range_is_operator) is numbered by operator, not by step: 0. */
size_t vt_range_stem(const char *name, char *out, size_t cap);
/* The numbers of name's last VT_RANGE_NUMBERS runs of decimal digits (the
 * step's is the last), in order, each saturated at UINT64_MAX; 0 for the
 * runs it does not have. */
void vt_range_numbers(const char *name, uint64_t out[VT_RANGE_NUMBERS]);
/* <0, 0 or >0 as the numbers a come before, equal or after b (first to
 * last). */
int vt_range_numbers_cmp(const uint64_t a[VT_RANGE_NUMBERS], const uint64_t b[VT_RANGE_NUMBERS]);
/* Whether name is the range of one operator that PyTorch's
 * torch.autograd.profiler.emit_nvtx() pushes: the operator's name followed
 * by ", seq = N" (its autograd sequence number), ", op_id = N" (a counter
 * over all operators), ", sizes = [...]" (record_shapes) or
 * ", input_op_ids = [...]" (torch/csrc/profiler/standalone/nvtx_observer.cpp,
 * getNvtxStr; the format strings are in libtorch_cpu.so). Each such name is
 * one operator call: never a step, whatever its number. */
bool vt_range_is_operator(const char *name);

#endif
