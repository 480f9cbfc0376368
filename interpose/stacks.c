/* stacks.c: call stacks (unwind.c's cached CFI rules, else libunwind's
 * unw_backtrace) deduplicated
 * in a trie of (ip, parent) nodes, and the module map from dl_iterate_phdr
 * (each module with its build-id, read from its notes in memory).
 * Anchor: heaptrack's trace tree (each new node written once). */
#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vti_internal.h"

/* Bounded memory: at most this many distinct nodes (16 bytes each plus the
 * hash table), then tracing stops. */
#define MAX_NODES (16u << 20)

typedef struct node {
    uint64_t ip;
    uint32_t parent;
} node;

static pthread_mutex_t trie_lock = PTHREAD_MUTEX_INITIALIZER;
static node *nodes;      /* id = index + 1 */
static uint32_t n_nodes; /* guarded by trie_lock */
static uint32_t cap_nodes;
static uint32_t *table; /* open addressing: node ids, 0 = empty */
static size_t table_mask;

static size_t node_hash(uint64_t ip, uint32_t parent)
{
    uint64_t h = (ip ^ ((uint64_t)parent << 29)) * 0x9E3779B97F4A7C15ull;
    return (size_t)(h ^ (h >> 31));
}

static int table_grow(void)
{
    size_t cap = table ? (table_mask + 1) * 2 : 4096;
    uint32_t *t = calloc(cap, sizeof *t);
    if (!t)
        return -1;
    for (uint32_t id = 1; id <= n_nodes; id++) {
        size_t i = node_hash(nodes[id - 1].ip, nodes[id - 1].parent) & (cap - 1);
        while (t[i])
            i = (i + 1) & (cap - 1);
        t[i] = id;
    }
    free(table);
    table = t;
    table_mask = cap - 1;
    return 0;
}

static int nodes_grow(void)
{
    uint32_t cap = cap_nodes ? cap_nodes * 2 : 4096;
    node *n;
    if (cap > MAX_NODES)
        return -1;
    n = realloc(nodes, cap * sizeof *n);
    if (!n)
        return -1;
    nodes = n;
    cap_nodes = cap;
    return 0;
}

/* The id of (ip, parent), inserting it (*is_new) if absent; 0 when full. */
static uint32_t node_get(uint64_t ip, uint32_t parent, bool *is_new)
{
    size_t i;
    *is_new = false;
    if ((!table || (size_t)n_nodes * 2 >= table_mask + 1) && table_grow() != 0)
        return 0;
    for (i = node_hash(ip, parent) & table_mask; table[i]; i = (i + 1) & table_mask) {
        const node *n = &nodes[table[i] - 1];
        if (n->ip == ip && n->parent == parent)
            return table[i];
    }
    if (n_nodes == cap_nodes && nodes_grow() != 0)
        return 0;
    nodes[n_nodes] = (node){ip, parent};
    table[i] = ++n_nodes;
    *is_new = true;
    return n_nodes;
}

static void emit_node(vti_thread *t, uint32_t id, uint32_t parent, uint64_t ip)
{
    vt_event ev = {.type = VT_REC_STACK_NODE};
    ev.u.stack_node.id = id;
    ev.u.stack_node.parent = parent;
    ev.u.stack_node.ip = ip;
    if (ip & VTI_PY_NODE) {
        ev.type = VT_REC_PY_STACK_NODE;
        ev.u.py_stack_node.frame = (uint32_t)ip;
    }
    vti_write(t, &ev);
}

/* Resolve frames cache_ips[from..n) of t into node ids under the lock.
 * Returns the number of new nodes, -1 when the trie is full. */
static int trie_extend(vti_thread *t, int from, int n)
{
    int created = 0;
    pthread_mutex_lock(&trie_lock);
    for (int i = from; i < n; i++) {
        bool is_new;
        uint32_t parent = i ? t->cache_ids[i - 1] : 0;
        uint32_t id = node_get(t->cache_ips[i], parent, &is_new);
        if (!id) {
            created = -1;
            break;
        }
        t->cache_ids[i] = id;
        if (is_new) {
            emit_node(t, id, parent, t->cache_ips[i]);
            created++;
        }
    }
    pthread_mutex_unlock(&trie_lock);
    return created;
}

static uintptr_t self_start, self_end;

static int self_range_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    uintptr_t pc = (uintptr_t)arg;
    (void)size;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && pc >= lo && pc < lo + ph->p_memsz) {
            self_start = lo;
            self_end = lo + ph->p_memsz;
            return 1;
        }
    }
    return 0;
}

static bool in_self(uintptr_t pc)
{
    return pc >= self_start && pc < self_end;
}

/* Once, before the session records: the code range of this library (its
 * frames are skipped), and libunwind's per-thread cache: no lock on the
 * unwinding path. The cache is not used under a sanitizer: its thread-exit
 * destructor locks a mutex after the TSan runtime has torn the thread down. */
void vti_stacks_init(void)
{
    dl_iterate_phdr(self_range_cb, (void *)(uintptr_t)in_self);
#ifndef VRAMTRACE_SANITIZED
    unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
#endif
}

/* Return addresses of the calling thread, innermost first. Sanitized
 * builds take libunwind's step-by-step path: the fast path's per-thread
 * trace cache is freed by a TSD destructor that runs after the TSan runtime
 * has finished the thread. */
static inline int backtrace_frames(void **buf, int max)
{
#ifdef VRAMTRACE_SANITIZED
    unw_context_t ctx;
    unw_cursor_t cur;
    int n = 0;
    if (unw_getcontext(&ctx) != 0 || unw_init_local(&cur, &ctx) != 0)
        return 0;
    while (n < max && unw_step(&cur) > 0) {
        unw_word_t ip;
        if (unw_get_reg(&cur, UNW_REG_IP, &ip) != 0)
            break;
        buf[n++] = (void *)(uintptr_t)ip;
    }
    return n;
#else
    return unw_backtrace(buf, max);
#endif
}

/* Frames outside this library agree (check mode). */
static bool same_frames(void **a, int na, void **b, int nb)
{
    while (na > 0 && in_self((uintptr_t)*a))
        a++, na--;
    while (nb > 0 && in_self((uintptr_t)*b))
        b++, nb--;
    return na == nb && memcmp(a, b, (size_t)na * sizeof *a) == 0;
}

/* Return addresses, innermost first (mode: the settings' unwind): the fast
 * walk, else libunwind (the step loop that also teaches the fast walk its
 * missing rules, or unw_backtrace). All are called from this one frame (its
 * caller's: inlined, so a walk has one frame of this library fewer to read),
 * so buf[0] is in this library either way. */
static inline __attribute__((always_inline)) int capture_frames(vti_thread *t, int mode, void **buf,
                                                                int max, bool *same,
                                                                vti_uw_ref *ref, uint64_t lazy)
{
    int n = -1;
    *same = false;
    *ref = (vti_uw_ref){0, 0, 0};
    if (mode != VTI_UNWIND_LIBUNWIND)
        n = vti_unwind_fast(&t->uw, buf, max, same, ref, mode == VTI_UNWIND_CHECK ? 0 : lazy);
    if (n < 0 && mode != VTI_UNWIND_LIBUNWIND && t->uw.missed)
        n = vti_unwind_learn(&t->uw, buf, max);
    if (mode == VTI_UNWIND_CHECK && n >= 0) {
        void *ref[VTI_MAX_STACK_DEPTH + 8];
        int nr = backtrace_frames(ref, max);
        if (!same_frames(buf, n, ref, nr))
            vti_stop("the fast stack walk differs from libunwind (VRAMTRACE_UNWIND=check)");
    }
    if (n < 0)
        n = backtrace_frames(buf, max);
    return n;
}

/* Native frames (innermost first) into the cache (outermost first, return
 * addresses minus one); returns how many leading entries were already there. */
static int cache_native(vti_thread *t, void *const *frames, int kept)
{
    int i = 0, limit = kept < t->cache_n ? kept : t->cache_n, common;
    for (; i < limit; i++)
        if (t->cache_ips[i] != (uint64_t)(uintptr_t)frames[kept - 1 - i] - 1)
            break;
    common = i;
    for (; i < kept; i++)
        t->cache_ips[i] = (uint64_t)(uintptr_t)frames[kept - 1 - i] - 1;
    return common;
}

static int cache_merged(vti_thread *t, const uint64_t *ips, int kept)
{
    int i = 0, limit = kept < t->cache_n ? kept : t->cache_n, common;
    while (i < limit && t->cache_ips[i] == ips[i])
        i++;
    common = i;
    memcpy(t->cache_ips + i, ips + i, (size_t)(kept - i) * sizeof *ips);
    return common;
}

/* The id of the frames (first..kept) through the trie and the thread's last
 * stack (cache_ips, cache_ids); py > 0: the merged frames instead. */
static uint32_t stack_id(vti_thread *t, int first, int kept, int py, const uint64_t *merged)
{
    int common, created = 0;
    if (py > 0)
        kept = py;
    common = py > 0 ? cache_merged(t, merged, kept) : cache_native(t, t->frames + first, kept);
    t->cache_native = py <= 0;
    t->cache_n = kept;
    if (common < kept)
        created = trie_extend(t, common, kept);
    if (created < 0) {
        t->cache_n = 0;
        vti_stop("too many distinct call stacks");
        return 0;
    }
    if (created > 0)
        vti_modules_sync(t, false);
    return t->cache_ids[kept - 1];
}

/* The frames of the walk are the last walk's (the same frames of this
 * library too, hence the same caller and skip) and the cache holds them; or
 * they are a remembered walk's (ref) whose stack id for this skip is its tag
 * ((skip + 1) << 32 | id): a function of the frames alone in a process
 * without CPython (no Python frames merged). Under VRAMTRACE_UNWIND=check a
 * tag is compared with the id found again instead of taken. */
static inline __attribute__((always_inline)) uint32_t capture(vti_thread *t, int skip)
{
    const vti_settings *s = vti_settings_get();
    int depth = s->stack_depth, n, first = skip, kept, py;
    uint64_t merged[VTI_MAX_STACK_DEPTH], kind = (uint64_t)(skip + 1) << 32, tag = 0;
    uint32_t id;
    vti_uw_ref ref;
    bool same, cut, native = vti_py_none();
    if (depth <= 0)
        return 0;
    n = capture_frames(t, s->unwind, t->frames, depth + 8, &same, &ref, native ? kind : 0);
    if (native && ref.tag >> 32 == kind >> 32)
        tag = ref.tag;
    if (tag && s->unwind != VTI_UNWIND_CHECK)
        return (uint32_t)tag;
    while (first < n && in_self((uintptr_t)t->frames[first]))
        first++;
    kept = n - first < depth ? n - first : depth;
    if (kept <= 0)
        return 0;
    cut = n - first > depth; /* more native frames than the depth kept */
    py = vti_py_merge(t, t->frames + first, kept, cut, merged, VTI_MAX_STACK_DEPTH);
    if (py < 0 && cut) /* no Python: its outermost kept frame is the marker */
        py = vti_native_cut(t, t->frames + first, kept, merged);
    if (py < 0 && same && t->cache_native && t->cache_n == kept)
        return t->cache_ids[kept - 1];
    id = stack_id(t, first, kept, py, merged);
    if (tag && (uint32_t)tag != id)
        vti_stop("a remembered stack differs from the walked one (VRAMTRACE_UNWIND=check)");
    if (native && id && ref.node)
        vti_unwind_set_tag(&t->uw, ref, kind | id);
    return id;
}

uint32_t vti_stack_capture(int skip)
{
    vti_thread *t = vti_thread_get();
    uint32_t id = t ? capture(t, skip) : 0;
    vti_thread_put(t);
    return id;
}

int vti_stack_ips(uint32_t id, uint64_t *ips, int max)
{
    int n = 0;
    pthread_mutex_lock(&trie_lock);
    while (id && id <= n_nodes && n < max) {
        ips[n++] = nodes[id - 1].ip;
        id = nodes[id - 1].parent;
    }
    pthread_mutex_unlock(&trie_lock);
    return n;
}

/* ---- module map --------------------------------------------------------- */

static pthread_mutex_t module_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long long seen_adds, seen_subs; /* guarded by module_lock */
static bool modules_emitted;

typedef struct counts {
    unsigned long long adds, subs;
} counts;

static int counts_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    counts *c = arg;
    (void)size;
    c->adds = info->dlpi_adds;
    c->subs = info->dlpi_subs;
    return 1;
}

typedef struct emit_ctx {
    vti_thread *t;
    uint32_t next_id;
} emit_ctx;

static const char *module_path(const char *name, char *buf, size_t len)
{
    ssize_t n;
    if (name && *name)
        return name;
    n = readlink("/proc/self/exe", buf, len - 1);
    if (n <= 0)
        return "";
    buf[n] = '\0';
    return buf;
}

/* Longest build-id recorded (bytes): its hex fills a record's id field. */
#define MAX_BUILD_ID (VT_MAX_ID_LEN / 2)

/* true when [vaddr, vaddr + len) of info's object lies in one of its PT_LOAD
 * segments' file contents (so it is mapped and holds the file's bytes). */
static bool mapped(const struct dl_phdr_info *info, uint64_t vaddr, uint64_t len)
{
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD && vaddr >= ph->p_vaddr && len <= ph->p_filesz &&
            vaddr - ph->p_vaddr <= ph->p_filesz - len)
            return true;
    }
    return false;
}

/* n rounded up to a multiple of a (a power of two): a note's name and
 * descriptor are padded so. */
static uint64_t note_align(uint64_t n, uint64_t a)
{
    return (n + a - 1) & ~(a - 1);
}

/* The descriptor of the GNU build-id note among the len bytes of notes at p
 * (entries aligned to a: 4 or 8), as lowercase hex in out (at least
 * VT_MAX_ID_LEN + 1 bytes). true when found. */
static bool build_id_in_notes(const uint8_t *p, uint64_t len, uint64_t a, char *out)
{
    ElfW(Nhdr) nh;
    for (uint64_t off = 0; len - off >= sizeof nh;) {
        memcpy(&nh, p + off, sizeof nh);
        uint64_t name = off + sizeof nh, desc = name + note_align(nh.n_namesz, a);
        uint64_t next = desc + note_align(nh.n_descsz, a);
        if (desc > len || next > len)
            return false;
        if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 && !memcmp(p + name, "GNU", 4) &&
            nh.n_descsz > 0 && nh.n_descsz <= MAX_BUILD_ID) {
            vt_build_id_hex(p + desc, nh.n_descsz, out);
            return true;
        }
        off = next;
    }
    return false;
}

/* The GNU build-id of a loaded object as lowercase hex in out (at least
 * VT_MAX_ID_LEN + 1 bytes), read from its PT_NOTE segments in memory (no
 * file I/O); "" when it has none (or one over MAX_BUILD_ID bytes). */
static void module_build_id(const struct dl_phdr_info *info, char *out)
{
    out[0] = '\0';
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_NOTE || !mapped(info, ph->p_vaddr, ph->p_filesz))
            continue;
        const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
        if (build_id_in_notes(p, ph->p_filesz, ph->p_align == 8 ? 8 : 4, out))
            return;
    }
}

static int module_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    emit_ctx *c = arg;
    uint64_t lo = UINT64_MAX, hi = 0;
    char buf[4096], build_id[VT_MAX_ID_LEN + 1];
    vt_event ev = {.type = VT_REC_MODULE};
    (void)size;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        if (ph->p_vaddr < lo)
            lo = ph->p_vaddr;
        if (ph->p_vaddr + ph->p_memsz > hi)
            hi = ph->p_vaddr + ph->p_memsz;
    }
    if (hi == 0)
        return 0;
    ev.u.module.id = ++c->next_id;
    ev.u.module.path = module_path(info->dlpi_name, buf, sizeof buf);
    ev.u.module.bias = info->dlpi_addr;
    ev.u.module.start = info->dlpi_addr + lo;
    ev.u.module.end = info->dlpi_addr + hi;
    module_build_id(info, build_id);
    ev.u.module.build_id = build_id;
    vti_write(c->t, &ev);
    return vti_on() ? 0 : 1;
}

void vti_modules_sync(vti_thread *t, bool force)
{
    counts c = {0, 0};
    emit_ctx ctx = {t, 0};
    dl_iterate_phdr(counts_cb, &c);
    pthread_mutex_lock(&module_lock);
    if (force || !modules_emitted || c.adds != seen_adds || c.subs != seen_subs) {
        if (modules_emitted) {
            vt_event ev = {.type = VT_REC_MODULE_RESET};
            vti_write(t, &ev);
        }
        seen_adds = c.adds;
        seen_subs = c.subs;
        modules_emitted = true;
        dl_iterate_phdr(module_cb, &ctx);
    }
    pthread_mutex_unlock(&module_lock);
}

void vti_stacks_fork_reset(void)
{
    nodes = NULL; /* the parent's trie is left, not freed: it may be mid-growth */
    n_nodes = cap_nodes = 0;
    table = NULL;
    table_mask = 0;
    pthread_mutex_init(&trie_lock, NULL);
    seen_adds = seen_subs = 0;
    modules_emitted = false;
    pthread_mutex_init(&module_lock, NULL);
}
