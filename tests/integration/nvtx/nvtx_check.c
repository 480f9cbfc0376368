/* nvtx_check.c DIR: reads the one .vtrace file in DIR (written by nvtx_prog
 * under the preload) with the vtrace reader and checks that the NVTX ranges
 * and the NVTX Mem heap/regions nvtx_prog made are there exactly: counts,
 * order and nesting per thread, domains, names, sizes, heap ids, stacks.
 * Exit status 0 when everything matches, 1 otherwise (each mismatch is
 * printed). */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../../trace/vtrace.h"

#define MAX_EVENTS 100000
#define MAX_STRINGS 4096
#define SEGMENT_BYTES (1u << 20)

#define MAX_NODES 100000

static vt_event events[MAX_EVENTS];
static size_t nevents;
static uint64_t node_ip[MAX_NODES];   /* stack trie: id -> ip */
static uint64_t prog_start, prog_end; /* nvtx_prog's mapped range */
static char *strings[MAX_STRINGS];
static int failures;

#define EXPECT(cond, ...)                                                                          \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "nvtx_check: " __VA_ARGS__);                                           \
            fputc('\n', stderr);                                                                   \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

static const char *str(uint32_t id)
{
    return id == 0 ? "" : id < MAX_STRINGS && strings[id] ? strings[id] : "<undefined>";
}

/* The path of the only *.vtrace in dir; NULL (with a message) otherwise. */
static char *find_trace(const char *dir)
{
    DIR *d = opendir(dir);
    char *found = NULL;
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
        size_t len = strlen(e->d_name);
        if (len > 7 && strcmp(e->d_name + len - 7, ".vtrace") == 0 && n++ == 0 &&
            asprintf(&found, "%s/%s", dir, e->d_name) < 0)
            found = NULL;
    }
    if (d)
        closedir(d);
    EXPECT(n == 1, "%d .vtrace files in %s, expected exactly 1 (one session)", n, dir);
    return n == 1 ? found : NULL;
}

static void keep(const vt_event *ev)
{
    if (ev->type == VT_REC_STRING && ev->u.string.id < MAX_STRINGS) {
        free(strings[ev->u.string.id]);
        strings[ev->u.string.id] = strdup(ev->u.string.text);
    }
    if (ev->type == VT_REC_STACK_NODE && ev->u.stack_node.id < MAX_NODES)
        node_ip[ev->u.stack_node.id] = ev->u.stack_node.ip;
    if (ev->type == VT_REC_MODULE && ev->u.module.path && strstr(ev->u.module.path, "/nvtx_prog")) {
        prog_start = ev->u.module.start;
        prog_end = ev->u.module.end;
    }
    if (nevents < MAX_EVENTS)
        events[nevents++] = *ev; /* pointers inside are not used later */
}

static int load(const char *path)
{
    char err[256];
    vt_reader *r = vt_reader_open(path, err, sizeof err);
    if (!r) {
        fprintf(stderr, "nvtx_check: %s: %s\n", path, err);
        return -1;
    }
    vt_event ev;
    int rc;
    while ((rc = vt_reader_next(r, &ev)) == 1)
        keep(&ev);
    EXPECT(rc == 0, "reader error: %s", vt_reader_error(r) ? vt_reader_error(r) : "?");
    EXPECT(!vt_reader_truncated(r), "trace is truncated");
    vt_reader_close(r);
    return 0;
}

static int is_range(enum vt_rec t)
{
    return t == VT_REC_RANGE_PUSH || t == VT_REC_RANGE_POP || t == VT_REC_MARK ||
           t == VT_REC_RANGE_START || t == VT_REC_RANGE_END;
}

static int is_mem(enum vt_rec t)
{
    return t >= VT_REC_HEAP_REGISTER && t <= VT_REC_REGION_NAME;
}

/* Thread that pushed a range of this name (0 if none). */
static uint32_t thread_of(const char *name)
{
    for (size_t i = 0; i < nevents; i++)
        if (events[i].type == VT_REC_RANGE_PUSH && strcmp(str(events[i].u.range.name), name) == 0)
            return events[i].thread_id;
    return 0;
}

/* Events of thread tid accepted by pred, in order; returns their count. */
static size_t select_events(uint32_t tid, int (*pred)(enum vt_rec), const vt_event **out,
                            size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < nevents; i++)
        if (events[i].thread_id == tid && pred(events[i].type) && n < max)
            out[n++] = &events[i];
    return n;
}

struct want_range {
    enum vt_rec type;
    const char *domain, *name; /* name NULL: not checked (pop, end) */
};

static void check_ranges(const char *who, uint32_t tid, const struct want_range *w, size_t nw)
{
    const vt_event *got[64];
    size_t n = select_events(tid, is_range, got, 64);
    EXPECT(n == nw, "%s: %zu NVTX range events, expected %zu", who, n, nw);
    for (size_t i = 0; i < n && i < nw; i++) {
        const vt_event *e = got[i];
        EXPECT(e->type == w[i].type, "%s #%zu: %s, expected %s", who, i, vt_rec_name(e->type),
               vt_rec_name(w[i].type));
        if (e->type == VT_REC_RANGE_START || e->type == VT_REC_RANGE_END)
            continue;
        EXPECT(strcmp(str(e->u.range.domain), w[i].domain) == 0, "%s #%zu: domain '%s', want '%s'",
               who, i, str(e->u.range.domain), w[i].domain);
        EXPECT(!w[i].name || strcmp(str(e->u.range.name), w[i].name) == 0,
               "%s #%zu: name '%s', want '%s'", who, i, str(e->u.range.name), w[i].name);
    }
}

static void check_start_end(uint32_t tid)
{
    const vt_event *got[64];
    size_t n = select_events(tid, is_range, got, 64);
    const vt_event *s = NULL, *e = NULL;
    for (size_t i = 0; i < n; i++) {
        if (got[i]->type == VT_REC_RANGE_START)
            s = got[i];
        if (got[i]->type == VT_REC_RANGE_END)
            e = got[i];
    }
    EXPECT(s && e, "start/end range missing");
    if (!s || !e)
        return;
    EXPECT(s->u.range_se.id != 0 && s->u.range_se.id == e->u.range_se.id, "start/end ids differ");
    EXPECT(s->u.range_se.domain == 0, "start range not in the default domain");
    EXPECT(strcmp(str(s->u.range_se.name), "epoch") == 0, "start range name '%s'",
           str(s->u.range_se.name));
}

static const struct want_range main_ranges[] = {
    {VT_REC_RANGE_PUSH, "", "train"},
    {VT_REC_RANGE_PUSH, "vtdom", "G.forward"},
    {VT_REC_RANGE_PUSH, "", "wide-\xc3\xbc\xe5\x90\x8d"},
    {VT_REC_MARK, "", "mark1"},
    {VT_REC_RANGE_POP, "", NULL},
    {VT_REC_RANGE_POP, "vtdom", NULL},
    {VT_REC_RANGE_START, "", "epoch"},
    {VT_REC_MARK, "vtdom", "reg"},
    {VT_REC_RANGE_END, "", NULL},
    {VT_REC_RANGE_POP, "", NULL},
};

static const struct want_range worker_ranges[] = {
    {VT_REC_RANGE_PUSH, "", "worker"},
    {VT_REC_RANGE_POP, "", NULL},
};

struct want_mem {
    enum vt_rec type;
    uint64_t offset, size; /* from the segment base; size 0: not checked */
    const char *name;
};

static const struct want_mem mem_want[] = {
    {VT_REC_HEAP_REGISTER, 0, SEGMENT_BYTES, NULL},
    {VT_REC_REGION_REGISTER, 0, 4096, NULL},
    {VT_REC_REGION_REGISTER, 4096, 8192, NULL},
    {VT_REC_REGION_REGISTER, 16384, 65536, NULL},
    {VT_REC_REGION_RESIZE, 16384, 32768, NULL},
    {VT_REC_REGION_NAME, 4096, 0, "activations"},
    {VT_REC_REGION_UNREGISTER, 0, 0, NULL},
    {VT_REC_REGION_UNREGISTER, 4096, 0, NULL},
    {VT_REC_HEAP_RESET, 0, 0, NULL},
    {VT_REC_REGION_REGISTER, 0, 512, NULL},
    {VT_REC_REGION_UNREGISTER, 0, 0, NULL},
    {VT_REC_HEAP_UNREGISTER, 0, 0, NULL},
};

/* A region's stack starts (innermost frame) in the program, not in vramtrace. */
static void check_stack(size_t i, uint32_t leaf)
{
    EXPECT(leaf != 0, "mem #%zu: region registered without a stack", i);
    if (leaf == 0 || leaf >= MAX_NODES)
        return;
    uint64_t ip = node_ip[leaf];
    EXPECT(ip >= prog_start && ip < prog_end,
           "mem #%zu: innermost frame 0x%llx is not in nvtx_prog [0x%llx, 0x%llx)", i,
           (unsigned long long)ip, (unsigned long long)prog_start, (unsigned long long)prog_end);
}

static void check_mem_one(size_t i, const vt_event *e, uint64_t base, uint64_t heap)
{
    const struct want_mem *w = &mem_want[i];
    EXPECT(e->type == w->type, "mem #%zu: %s, expected %s", i, vt_rec_name(e->type),
           vt_rec_name(w->type));
    if (e->type != w->type)
        return;
    if (e->type == VT_REC_HEAP_RESET || e->type == VT_REC_HEAP_UNREGISTER) {
        EXPECT(e->u.heap.heap == heap, "mem #%zu: heap id differs", i);
        return;
    }
    if (e->type == VT_REC_HEAP_REGISTER) {
        EXPECT(e->u.heap.usage == 1, "heap usage %u, want sub-allocator (1)", e->u.heap.usage);
        return;
    }
    EXPECT(e->u.region.heap == heap, "mem #%zu: heap %llu, want %llu", i,
           (unsigned long long)e->u.region.heap, (unsigned long long)heap);
    EXPECT(e->u.region.addr == base + w->offset, "mem #%zu: address off by %lld", i,
           (long long)(e->u.region.addr - base - w->offset));
    if (w->size)
        EXPECT(e->u.region.size == w->size, "mem #%zu: size %llu, want %llu", i,
               (unsigned long long)e->u.region.size, (unsigned long long)w->size);
    if (e->type == VT_REC_REGION_REGISTER)
        check_stack(i, e->u.region.stack);
    if (w->name)
        EXPECT(strcmp(str(e->u.region.name), w->name) == 0, "mem #%zu: name '%s'", i,
               str(e->u.region.name));
}

/* The segment the heap was registered on was cudaMalloc'ed (hooks) and freed. */
static void check_segment(uint64_t base)
{
    int alloc = 0, freed = 0;
    for (size_t i = 0; i < nevents; i++) {
        const vt_event *e = &events[i];
        alloc +=
            e->type == VT_REC_ALLOC && e->u.alloc.addr == base && e->u.alloc.size == SEGMENT_BYTES;
        freed += e->type == VT_REC_FREE && e->u.free.addr == base;
    }
    EXPECT(alloc == 1, "%d allocations of the 1 MiB segment, expected 1", alloc);
    EXPECT(freed == 1, "%d frees of the segment, expected 1", freed);
}

static void check_mem(uint32_t tid)
{
    const vt_event *got[64];
    size_t nw = sizeof mem_want / sizeof mem_want[0];
    size_t n = select_events(tid, is_mem, got, 64);
    EXPECT(n == nw, "%zu heap/region events, expected %zu", n, nw);
    if (n == 0 || got[0]->type != VT_REC_HEAP_REGISTER)
        return;
    uint64_t base = got[0]->u.heap.addr, heap = got[0]->u.heap.heap;
    EXPECT(heap != 0, "heap id 0 for a registered heap");
    EXPECT(got[0]->u.heap.size == SEGMENT_BYTES, "heap size %llu",
           (unsigned long long)got[0]->u.heap.size);
    for (size_t i = 0; i < n && i < nw; i++)
        check_mem_one(i, got[i], base, heap);
    check_segment(base);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: nvtx_check DIR\n");
        return 2;
    }
    char *path = find_trace(argv[1]);
    if (!path || load(path) != 0)
        return 1;
    uint32_t main_tid = thread_of("train"), worker_tid = thread_of("worker");
    EXPECT(main_tid != 0 && worker_tid != 0 && main_tid != worker_tid,
           "threads: main %u, worker %u", main_tid, worker_tid);
    check_ranges("main", main_tid, main_ranges, sizeof main_ranges / sizeof main_ranges[0]);
    check_ranges("worker", worker_tid, worker_ranges, 2);
    check_start_end(main_tid);
    check_mem(main_tid);
    printf("nvtx_check: %s: %zu events, %d mismatches\n", path, nevents, failures);
    free(path);
    return failures ? 1 : 0;
}
