/* vt_check: read a .vtrace with the vtrace reader, replay it and print
 * what the interpose tests compare, one key=value per line:
 *
 *   allocs frees failed alloc_bytes peak host_peak leaked leaked_bytes
 *   unmatched_frees failed_errors (comma list) meminfo devices threads
 *   stack_nodes modules module_ids (modules with a recorded build-id)
 *   module_ids_differ (modules whose file here has another build-id than the
 *   recorded one) notes end (0/1) end_signal end_status (the END
 *   record's exit status as an unsigned 32-bit value) truncated
 *   allocs_with_frame (with --frame FUNC: allocations whose stack, symbolized
 *   offline from the trace's module map with libdw, contains FUNC)
 *   failed_with_frame (the same for failed allocations)
 *   stackless_allocs max_stack_depth (frames in the deepest allocation stack)
 *   broken_stacks (allocations and failed allocations whose stack names a
 *   node the trace lacks)
 *   broken_strings (NVTX range records naming a string not defined before)
 *   unmatched_pops (NVTX pops of a thread with no range of its open)
 *   summary_peak_live (the trace summary's most allocations live at once, as
 *   the recorder counted them; 0 without a summary)
 *
 * peak is the maximum of live device bytes (device >= 0) over time;
 * host_peak the same for pinned host memory.
 *
 * usage: vt_check TRACE [--frame FUNC] [--stacks] [--expect KEY=VALUE]...
 * Exit status: 0, 1 when an --expect does not hold, 2 when the trace does
 * not read back. */
#include <elfutils/libdwfl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vtrace.h"

typedef struct live {
    uint64_t addr, size;
    int32_t device;
    int used;
} live;

typedef struct stack_list {
    uint32_t *ids;
    size_t n, cap;
} stack_list;

static void stack_list_add(stack_list *l, uint32_t id)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 1024;
        l->ids = realloc(l->ids, l->cap * sizeof *l->ids);
    }
    l->ids[l->n++] = id;
}

typedef struct state {
    live *map;
    size_t cap, n;
    uint64_t allocs, frees, failed, alloc_bytes, unmatched, meminfo, devices, threads;
    uint64_t nodes, modules, module_ids, module_ids_differ, notes, end, end_signal, end_status;
    uint64_t stackless;
    uint64_t dev_live, dev_peak, host_live, host_peak;
    char errors[4096];
    uint64_t (*node)[2]; /* id -> {parent, ip} */
    size_t node_cap;
    stack_list alloc_stacks, failed_stacks; /* each allocation's, each failure's stack */
    Dwfl *dwfl;
    bool *strings; /* id -> defined so far */
    size_t strings_cap;
    uint64_t broken_strings, unmatched_pops;
    struct {
        uint32_t tid, depth;
    } ranges[256]; /* open push/pop ranges per thread */
    size_t n_ranges;
} state;

static void state_free(state *s)
{
    free(s->map);
    free(s->node);
    free(s->alloc_stacks.ids);
    free(s->failed_stacks.ids);
    free(s->strings);
}

static size_t slot_of(const state *s, uint64_t addr)
{
    size_t i = (size_t)((addr * 0x9E3779B97F4A7C15ull) >> 20) & (s->cap - 1);
    while (s->map[i].used && s->map[i].addr != addr)
        i = (i + 1) & (s->cap - 1);
    return i;
}

static void map_grow(state *s)
{
    live *old = s->map;
    size_t oldcap = s->cap;
    s->cap = s->cap ? s->cap * 2 : 1024;
    s->map = calloc(s->cap, sizeof *s->map);
    for (size_t i = 0; i < oldcap; i++)
        if (old[i].used)
            s->map[slot_of(s, old[i].addr)] = old[i];
    free(old);
}

/* Remove by re-inserting the rest of the cluster (linear probing). */
static void map_erase(state *s, size_t i)
{
    s->map[i].used = 0;
    for (size_t j = (i + 1) & (s->cap - 1); s->map[j].used; j = (j + 1) & (s->cap - 1)) {
        live e = s->map[j];
        s->map[j].used = 0;
        s->map[slot_of(s, e.addr)] = e;
    }
}

static void account(state *s, int32_t device, uint64_t size, int sign)
{
    uint64_t *cur = device >= 0 ? &s->dev_live : &s->host_live;
    uint64_t *peak = device >= 0 ? &s->dev_peak : &s->host_peak;
    *cur = sign > 0 ? *cur + size : *cur - size;
    if (*cur > *peak)
        *peak = *cur;
}

static void on_alloc(state *s, const vt_event *ev)
{
    size_t i;
    if ((s->n + 1) * 2 > s->cap)
        map_grow(s);
    i = slot_of(s, ev->u.alloc.addr);
    if (s->map[i].used) /* a lost free: the old one is gone */
        account(s, s->map[i].device, s->map[i].size, -1);
    else
        s->n++;
    s->map[i] = (live){ev->u.alloc.addr, ev->u.alloc.size, ev->u.alloc.device, 1};
    s->allocs++;
    s->alloc_bytes += ev->u.alloc.size;
    account(s, ev->u.alloc.device, ev->u.alloc.size, +1);
    if (!ev->u.alloc.stack)
        s->stackless++;
    stack_list_add(&s->alloc_stacks, ev->u.alloc.stack);
}

static void on_free(state *s, const vt_event *ev)
{
    size_t i = s->cap ? slot_of(s, ev->u.free.addr) : 0;
    s->frees++;
    if (!s->cap || !s->map[i].used) {
        s->unmatched++;
        return;
    }
    account(s, s->map[i].device, s->map[i].size, -1);
    map_erase(s, i);
    s->n--;
}

/* The array p of *cap elements of elem bytes grown (zero-filled) to hold
 * index id; exits on out of memory. */
static void *grow_to(void *p, size_t *cap, size_t id, size_t elem)
{
    size_t n = *cap ? *cap : 1024;
    if (id < *cap)
        return p;
    while (n <= id)
        n *= 2;
    p = realloc(p, n * elem);
    if (!p) {
        fprintf(stderr, "vt_check: out of memory\n");
        exit(2);
    }
    memset((char *)p + *cap * elem, 0, (n - *cap) * elem);
    *cap = n;
    return p;
}

/* A Python frame's node (the cut marker of a native stack among them): in
 * the same id space, its ip this tag (never a native ip, never 0). */
#define PY_NODE_IP (1ull << 63)

static void on_node(state *s, const vt_event *ev)
{
    bool py = ev->type == VT_REC_PY_STACK_NODE;
    uint32_t id = py ? ev->u.py_stack_node.id : ev->u.stack_node.id;
    s->node = grow_to(s->node, &s->node_cap, id, sizeof *s->node);
    s->node[id][0] = py ? ev->u.py_stack_node.parent : ev->u.stack_node.parent;
    s->node[id][1] = py ? PY_NODE_IP | ev->u.py_stack_node.frame : ev->u.stack_node.ip;
    s->nodes++;
}

/* Report each (start address) once: a module map re-emitted after dlopen
 * repeats the modules already reported. */
static bool seen_module(uint64_t start)
{
    static uint64_t seen[4096];
    static size_t n;
    for (size_t i = 0; i < n; i++)
        if (seen[i] == start)
            return true;
    if (n < 4096)
        seen[n++] = start;
    return false;
}

/* Is mod's build-id (libdwfl's reading of the file) the recorded hex text? */
static bool same_build_id(Dwfl_Module *mod, const char *recorded)
{
    const unsigned char *bits;
    GElf_Addr vaddr;
    int n = dwfl_module_build_id(mod, &bits, &vaddr);
    char hex[2 * 64 + 1] = "";
    for (int i = 0; i < n && i < 64; i++)
        snprintf(hex + 2 * i, 3, "%02x", bits[i]);
    return n <= 64 && !strcmp(hex, recorded);
}

static void on_module(state *s, const vt_event *ev)
{
    const char *path = ev->u.module.path, *id = ev->u.module.build_id;
    s->modules++;
    s->module_ids += id && *id;
    if (!path || path[0] != '/' || seen_module(ev->u.module.start))
        return;
    Dwfl_Module *mod = dwfl_report_elf(s->dwfl, path, path, -1, ev->u.module.bias, false);
    if (!mod && getenv("VT_CHECK_DEBUG"))
        fprintf(stderr, "vt_check: %s: %s\n", path, dwfl_errmsg(-1));
    if (mod && !same_build_id(mod, id ? id : "")) {
        s->module_ids_differ++;
        fprintf(stderr, "vt_check: %s: build-id %s recorded, another here\n", path, id);
    }
}

static void on_failed(state *s, const vt_event *ev)
{
    size_t len = strlen(s->errors);
    s->failed++;
    stack_list_add(&s->failed_stacks, ev->u.failed.stack);
    snprintf(s->errors + len, sizeof s->errors - len, "%s%d", len ? "," : "", ev->u.failed.error);
}

static void on_string(state *s, uint32_t id)
{
    s->strings = grow_to(s->strings, &s->strings_cap, id, sizeof *s->strings);
    s->strings[id] = true;
}

/* A record names string id (0: none): broken when not defined before. */
static void uses_string(state *s, uint32_t id)
{
    if (id && (id >= s->strings_cap || !s->strings[id]))
        s->broken_strings++;
}

/* The open push/pop ranges of thread tid (a slot made on first use). */
static uint32_t *range_depth(state *s, uint32_t tid)
{
    for (size_t i = 0; i < s->n_ranges; i++)
        if (s->ranges[i].tid == tid)
            return &s->ranges[i].depth;
    if (s->n_ranges == sizeof s->ranges / sizeof s->ranges[0])
        return NULL;
    s->ranges[s->n_ranges].tid = tid;
    s->ranges[s->n_ranges].depth = 0;
    return &s->ranges[s->n_ranges++].depth;
}

static void on_range(state *s, const vt_event *ev)
{
    uint32_t *depth = range_depth(s, ev->thread_id);
    if (ev->type == VT_REC_RANGE_POP) {
        if (depth && *depth)
            --*depth;
        else
            s->unmatched_pops++;
        return;
    }
    uses_string(s, ev->u.range.domain);
    uses_string(s, ev->u.range.name);
    if (ev->type == VT_REC_RANGE_PUSH && depth)
        ++*depth;
}

static void on_event(state *s, const vt_event *ev)
{
    switch (ev->type) {
    case VT_REC_STRING:
        on_string(s, ev->u.string.id);
        break;
    case VT_REC_RANGE_PUSH:
    case VT_REC_RANGE_POP:
    case VT_REC_MARK:
        on_range(s, ev);
        break;
    case VT_REC_ALLOC:
        on_alloc(s, ev);
        break;
    case VT_REC_FREE:
        on_free(s, ev);
        break;
    case VT_REC_ALLOC_FAILED:
        on_failed(s, ev);
        break;
    case VT_REC_STACK_NODE:
    case VT_REC_PY_STACK_NODE:
        on_node(s, ev);
        break;
    case VT_REC_MODULE:
        on_module(s, ev);
        break;
    case VT_REC_MEMINFO:
        s->meminfo++;
        break;
    case VT_REC_DEVICE:
        s->devices++;
        break;
    case VT_REC_THREAD:
        s->threads++;
        break;
    case VT_REC_NOTE:
        s->notes++;
        break;
    case VT_REC_END:
        s->end = 1;
        s->end_signal = (uint64_t)ev->u.end.signal;
        s->end_status = (uint32_t)ev->u.end.status;
        break;
    default:
        break;
    }
}

static bool stack_has(state *s, uint32_t id, const char *func)
{
    for (int depth = 0; id && id < s->node_cap && depth < 1024; depth++) {
        uint64_t ip = s->node[id][1];
        Dwfl_Module *m = dwfl_addrmodule(s->dwfl, ip);
        const char *name = m ? dwfl_module_addrname(m, ip) : NULL;
        if (name && strcmp(name, func) == 0)
            return true;
        id = (uint32_t)s->node[id][0];
    }
    return false;
}

/* --stacks: each allocation's stack, symbolized, on stderr. */
static void dump_stacks(state *s)
{
    for (size_t i = 0; i < s->alloc_stacks.n; i++) {
        uint32_t id = s->alloc_stacks.ids[i];
        fprintf(stderr, "alloc %zu:", i);
        for (int depth = 0; id && id < s->node_cap && depth < 1024; depth++) {
            uint64_t ip = s->node[id][1];
            Dwfl_Module *m = dwfl_addrmodule(s->dwfl, ip);
            const char *name = m ? dwfl_module_addrname(m, ip) : NULL;
            fprintf(stderr, " %s@%" PRIx64, name ? name : "?", ip);
            id = (uint32_t)s->node[id][0];
        }
        fprintf(stderr, "\n");
    }
}

/* Stacks of l that lead to a node the trace never defined (each node is
 * written before the first record that names it). */
static uint64_t broken_in(const state *s, const stack_list *l)
{
    uint64_t broken = 0;
    for (size_t i = 0; i < l->n; i++) {
        uint32_t id = l->ids[i];
        for (int n = 0; id && n < 4096; n++) {
            if (id >= s->node_cap || !s->node[id][1]) {
                broken++;
                break;
            }
            id = (uint32_t)s->node[id][0];
        }
    }
    return broken;
}

/* Allocations and failed allocations whose stack is broken. */
static uint64_t broken_stacks(const state *s)
{
    return broken_in(s, &s->alloc_stacks) + broken_in(s, &s->failed_stacks);
}

/* Stacks of l that hold frame func. */
static uint64_t with_frame(state *s, const stack_list *l, const char *func)
{
    uint64_t n = 0;
    for (size_t i = 0; i < l->n; i++)
        n += stack_has(s, l->ids[i], func);
    return n;
}

/* Frames in the deepest stack of any allocation. */
static uint64_t max_depth(const state *s)
{
    uint64_t best = 0;
    for (size_t i = 0; i < s->alloc_stacks.n; i++) {
        uint64_t n = 0;
        for (uint32_t id = s->alloc_stacks.ids[i]; id && id < s->node_cap && n < 4096; n++)
            id = (uint32_t)s->node[id][0];
        if (n > best)
            best = n;
    }
    return best;
}

static char report[8192];

static void put(const char *key, uint64_t v)
{
    size_t len = strlen(report);
    snprintf(report + len, sizeof report - len, "%s=%" PRIu64 "\n", key, v);
}

static void summarize(state *s, const char *frame, const vt_reader *r)
{
    vt_summary sum = {0};
    bool truncated = vt_reader_truncated(r), has_summary = vt_reader_summary(r, &sum);
    uint64_t leaked_bytes = 0;
    for (size_t i = 0; i < s->cap; i++)
        if (s->map[i].used)
            leaked_bytes += s->map[i].size;
    put("allocs", s->allocs);
    put("frees", s->frees - s->unmatched);
    put("unmatched_frees", s->unmatched);
    put("failed", s->failed);
    put("alloc_bytes", s->alloc_bytes);
    put("peak", s->dev_peak);
    put("host_peak", s->host_peak);
    put("leaked", s->n);
    put("leaked_bytes", leaked_bytes);
    put("meminfo", s->meminfo);
    put("devices", s->devices);
    put("threads", s->threads);
    put("stack_nodes", s->nodes);
    put("modules", s->modules);
    put("module_ids", s->module_ids);
    put("module_ids_differ", s->module_ids_differ);
    put("notes", s->notes);
    put("end", s->end);
    put("end_signal", s->end_signal);
    put("end_status", s->end_status);
    put("stackless_allocs", s->stackless);
    put("max_stack_depth", max_depth(s));
    put("broken_stacks", broken_stacks(s));
    put("broken_strings", s->broken_strings);
    put("unmatched_pops", s->unmatched_pops);
    put("truncated", truncated);
    put("summary_peak_live", has_summary ? sum.peak_live : 0);
    if (frame) {
        put("allocs_with_frame", with_frame(s, &s->alloc_stacks, frame));
        put("failed_with_frame", with_frame(s, &s->failed_stacks, frame));
    }
    snprintf(report + strlen(report), sizeof report - strlen(report), "failed_errors=%s\n",
             s->errors);
}

/* Does report contain the line "key=value"? Prints a diagnosis if not. */
static bool expect(const char *kv)
{
    char line[512];
    const char *eq = strchr(kv, '=');
    const char *p;
    size_t klen = eq ? (size_t)(eq - kv) : strlen(kv);
    snprintf(line, sizeof line, "\n%s\n", kv);
    if (strstr(report, line + 1) == report || strstr(report, line))
        return true;
    for (p = report; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (strncmp(p, kv, klen + 1) == 0) {
            fprintf(stderr, "vt_check: expected %s, got %.*s\n", kv, (int)strcspn(p, "\n"), p);
            return false;
        }
    fprintf(stderr, "vt_check: expected %s: no such key\n", kv);
    return false;
}

int main(int argc, char **argv)
{
    static const Dwfl_Callbacks cb = {.find_elf = dwfl_linux_proc_find_elf,
                                      .find_debuginfo = dwfl_standard_find_debuginfo};
    state s = {0};
    char err[256];
    const char *frame = NULL;
    vt_event ev;
    vt_reader *r;
    int rc, ok = 1;
    if (argc < 2) {
        fprintf(stderr, "usage: vt_check TRACE [--frame FUNC] [--expect KEY=VALUE]...\n");
        return 2;
    }
    for (int i = 2; i + 1 < argc; i += 2)
        if (strcmp(argv[i], "--frame") == 0)
            frame = argv[i + 1];
    if (!(r = vt_reader_open(argv[1], err, sizeof err))) {
        fprintf(stderr, "vt_check: %s: %s\n", argv[1], err);
        return 2;
    }
    s.dwfl = dwfl_begin(&cb);
    dwfl_report_begin(s.dwfl);
    while ((rc = vt_reader_next(r, &ev)) == 1)
        on_event(&s, &ev);
    dwfl_report_end(s.dwfl, NULL, NULL);
    if (rc < 0) {
        fprintf(stderr, "vt_check: %s: %s\n", argv[1], vt_reader_error(r));
        vt_reader_close(r);
        dwfl_end(s.dwfl);
        state_free(&s);
        return 2;
    }
    summarize(&s, frame, r);
    for (int i = 2; i < argc; i++)
        if (strcmp(argv[i], "--stacks") == 0)
            dump_stacks(&s);
    fputs(report, stdout);
    for (int i = 2; i + 1 < argc; i += 2)
        if (strcmp(argv[i], "--expect") == 0)
            ok &= expect(argv[i + 1]);
    vt_reader_close(r);
    dwfl_end(s.dwfl);
    state_free(&s);
    return ok ? 0 : 1;
}
