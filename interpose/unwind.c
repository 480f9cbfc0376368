/* unwind.c: the fast path of stack capture. Each return address is mapped
 * once to the unwinding rule of its call site, read from the module's own
 * .eh_frame by elfutils libdw (dwarf_getcfi_elf, dwarf_cfi_addrframe); the
 * walk then follows cached rules, a few instructions per frame. Any frame
 * whose rule is not "CFA = rsp|rbp + N, return address at CFA-8, rbp
 * unchanged or saved at CFA-M" (signal frames, expression rules, no CFI, JIT
 * code), and any address outside the thread's stack, sends the whole capture
 * back to libunwind (stacks.c), so the result is always libunwind's. A walk
 * never computes a rule: a return address not seen yet sends the capture to
 * vti_unwind_learn (libunwind's step loop), which learns the rules of the
 * whole stack where that is safe (no signal frame on it). Frames the last
 * walk of the thread also had (same pc and rsp) are not walked again: the
 * words that walk read there are compared instead.
 * Anchors: libunwind's x86_64 trace cache (Gtrace.c: the same "standard
 * frame" rule, cfa = rsp|rbp + offset, rip at cfa-8, rbp at cfa + offset, a
 * per-thread hash of return addresses) and the DWARF 5 call frame
 * information rules (section 6.4). x86-64 only; elsewhere every capture is
 * libunwind's. */
#include <dwarf.h>
#define UNW_LOCAL_ONLY
#include <elfutils/libdw.h>
#include <libunwind.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vti_internal.h"

enum { K_RSP, K_RBP, K_END, K_LIBUNWIND, K_MISS };
static const vti_uw_rule use_libunwind = {.kind = K_LIBUNWIND};
/* How far vti_unwind_learn looks for a signal frame before it gives up. */
#define LEARN_STEPS 4096

/* DWARF register numbers on x86-64 (System V psABI, figure 3.36). */
enum { DW_RBP = 6, DW_RSP = 7, DW_RA = 16 };

/* ---- the process-wide rule table (filled under rules_lock) -------------- */

typedef struct module {
    struct module *next;
    uintptr_t lo, hi, bias; /* PT_LOAD extent in memory, load bias */
    Elf *elf;               /* the file, mapped; NULL: none readable */
    Dwarf_CFI *cfi;         /* its .eh_frame; NULL: none */
} module;

static pthread_mutex_t rules_lock = PTHREAD_MUTEX_INITIALIZER;
static module *modules;    /* guarded by rules_lock, never freed */
static uint64_t *rule_pcs; /* open addressing, 0 = empty */
static vti_uw_rule *rule_vals;
static size_t rule_mask, rule_count;

static size_t pc_hash(uint64_t pc)
{
    uint64_t h = pc * 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 32);
}

static int table_grow(void)
{
    size_t cap = rule_pcs ? (rule_mask + 1) * 2 : 4096;
    uint64_t *pcs = calloc(cap, sizeof *pcs);
    vti_uw_rule *vals = calloc(cap, sizeof *vals);
    if (!pcs || !vals) {
        free(pcs);
        free(vals);
        return -1;
    }
    for (size_t i = 0; rule_pcs && i <= rule_mask; i++) {
        size_t j = pc_hash(rule_pcs[i]) & (cap - 1);
        if (!rule_pcs[i])
            continue;
        while (pcs[j])
            j = (j + 1) & (cap - 1);
        pcs[j] = rule_pcs[i];
        vals[j] = rule_vals[i];
    }
    free(rule_pcs);
    free(rule_vals);
    rule_pcs = pcs;
    rule_vals = vals;
    rule_mask = cap - 1;
    return 0;
}

typedef struct find_ctx {
    uintptr_t pc, lo, hi, bias;
    char path[4096];
    bool found;
} find_ctx;

static int find_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    find_ctx *c = arg;
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    (void)size;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        if (info->dlpi_addr + ph->p_vaddr < lo)
            lo = info->dlpi_addr + ph->p_vaddr;
        if (info->dlpi_addr + ph->p_vaddr + ph->p_memsz > hi)
            hi = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
    }
    if (c->pc < lo || c->pc >= hi)
        return 0;
    c->lo = lo;
    c->hi = hi;
    c->bias = info->dlpi_addr;
    c->found = true;
    if (info->dlpi_name && *info->dlpi_name)
        snprintf(c->path, sizeof c->path, "%s", info->dlpi_name);
    else
        snprintf(c->path, sizeof c->path, "/proc/self/exe");
    return 1;
}

/* The module's file mapped (no descriptor kept open: the program's
 * descriptors stay its own) and its .eh_frame. */
static void module_open(module *m, const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    elf_version(EV_CURRENT);
    m->elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    /* all read or mapped; FDREAD also lets go of the descriptor */
    if (m->elf && elf_cntl(m->elf, ELF_C_FDREAD) == 0) {
        elf_cntl(m->elf, ELF_C_FDDONE);
        m->cfi = dwarf_getcfi_elf(m->elf);
    }
    close(fd);
}

/* The module holding pc as the loader has it now (dlclose'd modules at the
 * same place are told apart by their extent and bias); NULL if none. */
static module *module_for(uintptr_t pc)
{
    find_ctx c = {.pc = pc};
    module *m;
    dl_iterate_phdr(find_cb, &c);
    if (!c.found)
        return NULL;
    for (m = modules; m; m = m->next)
        if (m->lo == c.lo && m->hi == c.hi && m->bias == c.bias)
            return m;
    m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->lo = c.lo;
    m->hi = c.hi;
    m->bias = c.bias;
    module_open(m, c.path);
    m->next = modules;
    modules = m;
    return m;
}

/* "at CFA + off" as libdw writes an offset(N) register rule. */
static bool at_cfa(const Dwarf_Op *ops, size_t nops, intptr_t *off)
{
    if (nops == 1 && ops[0].atom == DW_OP_call_frame_cfa) {
        *off = 0;
        return true;
    }
    if (nops == 2 && ops[0].atom == DW_OP_call_frame_cfa && ops[1].atom == DW_OP_plus_uconst) {
        *off = (intptr_t)ops[1].number;
        return true;
    }
    return false;
}

/* The rule of one CFI row (libdw.h: dwarf_frame_cfa, dwarf_frame_register). */
static vti_uw_rule rule_of_frame(Dwarf_Frame *f)
{
    Dwarf_Op mem[3], *ops;
    size_t nops;
    intptr_t n, ra, bp = 0;
    bool signal = false;
    int reg;
    if (dwarf_frame_info(f, NULL, NULL, &signal) != DW_RA || signal)
        return use_libunwind;
    if (dwarf_frame_cfa(f, &ops, &nops) != 0 || nops != 1 || ops[0].atom != DW_OP_bregx)
        return use_libunwind;
    reg = (int)ops[0].number;
    n = (intptr_t)ops[0].number2;
    if ((reg != DW_RSP && reg != DW_RBP) || n < INT32_MIN || n > INT32_MAX)
        return use_libunwind;
    if (dwarf_frame_register(f, DW_RA, mem, &ops, &nops) != 0)
        return use_libunwind;
    if (nops == 0 && ops) /* undefined: the outermost frame */
        return (vti_uw_rule){.kind = K_END};
    if (!at_cfa(ops, nops, &ra) || ra != -8)
        return use_libunwind;
    if (dwarf_frame_register(f, DW_RBP, mem, &ops, &nops) != 0)
        return use_libunwind;
    if ((nops != 0 || ops) && (!at_cfa(ops, nops, &bp) || bp > -16 || bp < -0xffff))
        return use_libunwind;
    return (vti_uw_rule){(int32_t)n, bp ? (uint16_t)-bp : 8, reg == DW_RSP ? K_RSP : K_RBP};
}

/* The rule for return address pc (the call site is pc - 1; the capture's
 * own first pc is passed plus one). */
static vti_uw_rule rule_compute(uintptr_t pc)
{
    module *m = module_for(pc - 1);
    Dwarf_Frame *f = NULL;
    vti_uw_rule r;
    if (!m || !m->cfi || dwarf_cfi_addrframe(m->cfi, pc - 1 - m->bias, &f) != 0)
        return use_libunwind;
    r = rule_of_frame(f);
    free(f);
    return r;
}

/* The process-wide rule for pc (under rules_lock): K_MISS when absent
 * (computed and added only when learn: never inside a walk, which may run in
 * a signal handler, where libdw's allocations are not safe). */
static vti_uw_rule rule_global(uintptr_t pc, bool learn)
{
    size_t i = 0;
    vti_uw_rule r = {.kind = K_MISS};
    if (rule_pcs)
        for (i = pc_hash(pc) & rule_mask; rule_pcs[i]; i = (i + 1) & rule_mask)
            if (rule_pcs[i] == pc)
                return rule_vals[i];
    if (!learn)
        return r;
    if (!rule_pcs || rule_count * 2 >= rule_mask + 1) {
        if (table_grow() != 0)
            return r;
        for (i = pc_hash(pc) & rule_mask; rule_pcs[i]; i = (i + 1) & rule_mask)
            ;
    }
    rule_vals[i] = rule_compute(pc);
    rule_pcs[i] = pc;
    rule_count++;
    return rule_vals[i];
}

/* A miss in the thread's direct-mapped cache: the process-wide table fills
 * slot s; a rule not known yet is left to vti_unwind_learn (u->missed). */
static __attribute__((noinline, cold)) vti_uw_rule rule_miss(vti_uw_thread *u, vti_uw_slot *s,
                                                             uintptr_t pc)
{
    vti_uw_rule r;
    pthread_mutex_lock(&rules_lock);
    r = rule_global(pc, false);
    pthread_mutex_unlock(&rules_lock);
    if (r.kind == K_MISS) {
        u->missed = true;
        u->miss_pc = pc;
        return r;
    }
    s->rule = r;
    s->pc = pc;
    return r;
}

static void bounds_init(vti_uw_thread *u)
{
    pthread_attr_t a;
    void *addr;
    size_t size;
    u->stack_lo = 1;
    u->stack_hi = 1; /* unknown: every capture is libunwind's */
    if (pthread_getattr_np(pthread_self(), &a) != 0)
        return;
    if (pthread_attr_getstack(&a, &addr, &size) == 0) {
        u->stack_lo = (uintptr_t)addr;
        u->stack_hi = (uintptr_t)addr + size;
    }
    pthread_attr_destroy(&a);
}

#if defined(__x86_64__)
/* One step out of frame *f by its rule into *next; false when the rule is
 * not a simple one (*end: it was the outermost frame) or a read would leave
 * [f->sp, hi), the live part of the thread's stack. */
static inline bool step(vti_uw_thread *u, vti_uw_frame *f, uintptr_t hi, vti_uw_frame *next,
                        bool *end)
{
    vti_uw_slot *s = &u->slot[pc_hash(f->pc) & (VTI_UW_SLOTS - 1)];
    vti_uw_rule r = s->pc == f->pc ? s->rule : rule_miss(u, s, f->pc);
    uintptr_t cfa;
    if (r.kind > K_RBP) {
        *end = r.kind == K_END;
        return false;
    }
    f->rbp_cfa = r.kind == K_RBP;
    cfa = (r.kind == K_RSP ? f->sp : f->bp) + (uintptr_t)(intptr_t)r.n;
    if (cfa < f->sp + r.lim || cfa > hi)
        return false;
    next->pc = *(const uintptr_t *)(cfa - 8);
    next->sp = cfa;
    next->bp_at = r.lim == 8 ? 0 : cfa - r.lim;
    next->bp = next->bp_at ? *(const uintptr_t *)next->bp_at : f->bp;
    return true;
}

/* The last walk's frames j+1.. still hold: each return address it read is
 * unchanged, and so is each rbp the walk depended on (live). Their return
 * addresses go to buf (at most want) and their rbp is brought up to date
 * from bp, frame j's rbp now. Returns how many held. */
static int recheck(vti_uw_thread *u, int j, uintptr_t bp, void **buf, int want)
{
    vti_uw_frame *first = &u->last[j + 1], *o = first;
    vti_uw_frame *end = o + (u->n - j - 1 < want ? u->n - j - 1 : want);
    for (; o < end; o++, buf++) {
        if (*(const uintptr_t *)(o->sp - 8) != o->pc)
            break;
        if (o->bp_at) {
            uintptr_t nb = *(const uintptr_t *)o->bp_at;
            if (o->live && nb != o->bp)
                break;
            bp = nb;
        }
        o->bp = bp;
        *buf = (void *)o->pc;
    }
    return (int)(o - first);
}

/* Which of last[0..k] have an rbp the rest of the walk depends on: the frame
 * itself or one beyond it, before rbp is read from the stack, takes rbp for
 * its CFA. The outermost frame's rbp counts unless the walk ended there. */
static void mark_live(vti_uw_thread *u, int k)
{
    vti_uw_frame *f = &u->last[k];
    bool live =
        k + 1 == u->n ? !u->complete || f->rbp_cfa : f->rbp_cfa || (!f[1].bp_at && f[1].live);
    for (;; f--) {
        f->live = live;
        if (f == u->last)
            break;
        live = f[-1].rbp_cfa || (!f->bp_at && live);
    }
}

/* The new walk's frames: tmp[from..k] after last[0..from-1]. */
static void keep(vti_uw_thread *u, int from, int k, bool complete)
{
    memcpy(u->last + from, u->tmp + from, (size_t)(k + 1 - from) * sizeof *u->tmp);
    u->n = k + 1;
    u->complete = complete;
    mark_live(u, k);
}

/* Frames tmp[0..k] of this walk and frames j.. of the last one are the same
 * frame (same pc, rsp and rbp): take the last walk's frames beyond it for as
 * long as they hold. last[] becomes tmp[0..k] and those; returns the new k. */
static int take_last(vti_uw_thread *u, int k, int j, void **buf, int max, bool *complete,
                     bool *same)
{
    int got = recheck(u, j, u->tmp[k].bp, buf + k, max - k);
    bool all = j + 1 + got == u->n, rbp_cfa = u->last[j].rbp_cfa;
    if (k != j)
        memmove(u->last + k + 1, u->last + j + 1, (size_t)got * sizeof *u->last);
    memcpy(u->last, u->tmp, (size_t)(k + 1) * sizeof *u->tmp);
    u->last[k].rbp_cfa = rbp_cfa; /* the same pc: the same rule */
    *complete = k + got < max && all && u->complete;
    *same = k == 0 && j == 0 && all && (*complete || got == max);
    k += got;
    u->tmp[k] = u->last[k];
    return k;
}

/* From frame tmp[0]: buf gets the return addresses, up to max; -1 when a
 * frame needs libunwind. *same: they are the last walk's. */
static int walk(vti_uw_thread *u, void **buf, int max, bool *same)
{
    const uintptr_t hi = u->stack_hi;
    int k = 0, j = 0, from = 0;
    bool end = false;
    if (u->tmp[0].sp < u->stack_lo || u->tmp[0].sp >= hi)
        return -1;
    while (k < max) {
        vti_uw_frame *f = &u->tmp[k];
        while (j < u->n && u->last[j].sp < f->sp)
            j++;
        if (j < u->n && u->last[j].sp == f->sp && u->last[j].pc == f->pc &&
            (!u->last[j].live || u->last[j].bp == f->bp)) {
            int at = k;
            k = take_last(u, k, j, buf, max, &end, same);
            if (end) {
                u->n = k + 1;
                u->complete = true;
                mark_live(u, at);
                return k;
            }
            from = k + 1;
            j = VTI_UW_LOG; /* the rest is walked */
            continue;
        }
        if (!step(u, f, hi, &u->tmp[k + 1], &end)) {
            if (!end) {
                u->n = 0;
                return -1;
            }
            break;
        }
        if (!u->tmp[k + 1].pc) /* a zero return address ends the stack */
            break;
        buf[k] = (void *)u->tmp[k + 1].pc;
        k++;
    }
    keep(u, from, k, end);
    return k;
}

/* ---- remembered walks ------------------------------------------------------
 * The thread's complete walks, as a trie: a walk is a function of its first
 * frame (pc, rsp, rbp) and of the words it reads, so it is remembered as its
 * first frame (a root, hashed by rsp and pc into u->roots) followed by the
 * words it read and depends on, innermost first: for each frame after the
 * first, its return address (at its sp - 8) and, when the walk depended on
 * it (live), the rbp saved for it; the last read marks the walk's end. Walks
 * with the same first frame share the reads they have in common up to the
 * first that differs (the walk being deterministic, usually a return address
 * of the same place). A capture whose first frame is a root's and where
 * every word of one path from it to an end still holds has exactly that
 * walk's frames (its return addresses, in that order): the check is
 * recheck()'s. The search goes depth first: down the first children while
 * they hold; where one does not, its later siblings in turn (one that holds
 * moves to the front), else back up a level. Every word read lies in
 * [rsp, stack top) of the capture: the walk that read it started at the
 * same rsp and read only above the frame it stepped out of (step()), below
 * the stack top. The search gives up after MEMO_BUDGET nodes. Only complete
 * walks (ended at the outermost frame) are remembered; a full trie is
 * emptied (epoch + 1: earlier refs are stale). */

#define MEMO_BUDGET 512
/* Node kinds: a root (its rbp not checked, or checked), a read. */
enum { N_ROOT, N_ROOT_BP, N_RET, N_BP };
_Static_assert((VTI_UW_ROOT_BUCKETS & (VTI_UW_ROOT_BUCKETS - 1)) == 0, "a power of two");
_Static_assert(VTI_UW_LOG < 65536, "depths in 16 bits");

/* The word at a: a place in the thread's live stack, though not always in
 * a frame of this capture's walk (a remembered walk's return address may lie
 * in a local of a frame now): AddressSanitizer must not check it (its
 * redzones around stack variables). */
#ifdef __SANITIZE_ADDRESS__
__attribute__((no_sanitize_address, noinline)) static uintptr_t stack_word(uintptr_t a)
{
    return *(const uintptr_t *)a;
}
#else
static inline uintptr_t stack_word(uintptr_t a)
{
    return *(const uintptr_t *)a;
}
#endif

/* Root x is the first frame f0 of the capture. */
static inline bool root_holds(const vti_uw_node *x, const vti_uw_frame *f0)
{
    return x->at == f0->sp && x->val == f0->pc && (x->kind == N_ROOT || x->bp == f0->bp);
}

/* Read x still holds: the word is there. */
static inline bool read_holds(const vti_uw_node *x)
{
    return stack_word(x->at) == x->val;
}

/* The root bucket of a first frame (rsp, pc). */
static inline vti_uw_node **root_bucket(vti_uw_thread *u, uintptr_t sp, uintptr_t pc)
{
    return &u->roots[pc_hash(pc ^ sp << 16) & (VTI_UW_ROOT_BUCKETS - 1)];
}

/* Below root path[0], which holds: the end node of a path of reads that all
 * hold, or NULL; path[1..*depth) its reads. Depth first: down the first
 * children while they hold; where one does not, its later siblings in turn
 * (one that holds moves to the front), else back up a level. Every node
 * looked at counts against *budget (two siblings that both hold over
 * subtrees that do not would otherwise take turns for ever). */
static vti_uw_node *reads_find(vti_uw_node **path, int *depth, int *budget)
{
    vti_uw_node *x = path[0]->child;
    int d = 1;
    while (x) {
        while (x && read_holds(x)) {
            if (--*budget <= 0)
                return NULL;
            path[d++] = x;
            if (x->end) {
                *depth = d;
                return x;
            }
            x = x->child;
        }
        for (vti_uw_node *prev = x;;) {
            for (x = prev ? prev->next : NULL; x && !read_holds(x); x = x->next) {
                if (--*budget <= 0)
                    return NULL;
                prev = x;
            }
            if (x) { /* to the front */
                vti_uw_node **head = &path[d - 1]->child;
                prev->next = x->next;
                x->next = *head;
                *head = x;
                break;
            }
            if (d == 1)
                return NULL;
            prev = path[--d];
        }
    }
    return NULL;
}

/* The end node of the walk this capture's is (first frame u->tmp[0]), or
 * NULL; path[0..*depth) the nodes from its root: the roots of its bucket
 * that are its first frame in turn, each searched by reads_find. */
static vti_uw_node *memo_find(vti_uw_thread *u, vti_uw_node **path, int *depth)
{
    const vti_uw_frame *f0 = &u->tmp[0];
    int budget = MEMO_BUDGET;
    for (vti_uw_node *r = *root_bucket(u, f0->sp, f0->pc); r; r = r->next) {
        vti_uw_node *end;
        if (--budget <= 0)
            return NULL;
        if (!root_holds(r, f0))
            continue;
        path[0] = r;
        *depth = 1;
        if (r->end)
            return r;
        if ((end = reads_find(path, depth, &budget)) || budget <= 0)
            return end;
    }
    return NULL;
}

static void memo_clear(vti_uw_thread *u)
{
    memset(u->roots, 0, sizeof u->roots);
    u->nnodes = 0;
    u->epoch++;
}

/* The node of kind, at and val under *head (added when absent; never when
 * the trie is full: memo_insert made room). */
static vti_uw_node *memo_node(vti_uw_thread *u, vti_uw_node **head, int kind, uintptr_t at,
                              uintptr_t val, uintptr_t bp, int depth)
{
    vti_uw_node *x = *head;
    while (x &&
           !(x->kind == kind && x->at == at && x->val == val && (kind != N_ROOT_BP || x->bp == bp)))
        x = x->next;
    if (x)
        return x;
    x = &u->nodes[u->nnodes++];
    *x = (vti_uw_node){.at = at, .val = val, .bp = bp, .next = *head, .kind = (uint8_t)kind};
    x->depth = (uint16_t)depth;
    *head = x;
    return x;
}

/* Nodes a walk of n frames can take: its root, each later frame's return
 * address and saved rbp. */
static uint32_t walk_nodes(int n)
{
    return 2 * (uint32_t)n;
}

/* Remember the walk in last[0..n) when it is complete; *ref gets its end
 * (an equal walk's when there is one: its tag stays). */
static void memo_insert(vti_uw_thread *u, vti_uw_ref *ref)
{
    const vti_uw_frame *f = u->last;
    vti_uw_node *x;
    if (!u->complete || u->n < 1 || walk_nodes(u->n) > VTI_UW_NODES)
        return;
    if (u->nnodes + walk_nodes(u->n) > VTI_UW_NODES)
        memo_clear(u);
    x = memo_node(u, root_bucket(u, f[0].sp, f[0].pc), f[0].live ? N_ROOT_BP : N_ROOT, f[0].sp,
                  f[0].pc, f[0].bp, 1);
    for (int i = 1; i < u->n; i++) {
        x = memo_node(u, &x->child, N_RET, f[i].sp - 8, f[i].pc, 0, i + 1);
        if (f[i].bp_at && f[i].live)
            x = memo_node(u, &x->child, N_BP, f[i].bp_at, f[i].bp, 0, i + 1);
    }
    x->end = 1;
    *ref = (vti_uw_ref){(uint32_t)(x - u->nodes) + 1, u->epoch, x->tag};
}

/* A remembered walk equal to this capture's: its return addresses into buf
 * (up to max; not when lazy and its tag is of lazy's kind), its ref; -1 when
 * none. */
static int memo_walk(vti_uw_thread *u, void **buf, int max, vti_uw_ref *ref, uint64_t lazy)
{
    vti_uw_node *path[2 * VTI_UW_LOG], *end;
    int d = 0, k = 0;
    if (u->tmp[0].sp < u->stack_lo || u->tmp[0].sp >= u->stack_hi ||
        !(end = memo_find(u, path, &d)) || end->depth - 1 > max)
        return -1;
    *ref = (vti_uw_ref){(uint32_t)(end - u->nodes) + 1, u->epoch, end->tag};
    if (!lazy || end->tag >> 32 != lazy >> 32)
        for (int i = 1; i < d; i++)
            if (path[i]->kind == N_RET)
                buf[k++] = (void *)path[i]->val;
    return end->depth - 1;
}

/* The capture is the last walk again (its first frame and every word it
 * read): its frame count, else -1. The cheapest check, for a program that
 * captures from one place over and over. */
static int last_again(vti_uw_thread *u, void **buf, int max)
{
    vti_uw_frame *f0 = &u->tmp[0], *l0 = &u->last[0];
    int got;
    if (!u->n || l0->sp != f0->sp || l0->pc != f0->pc || (l0->live && l0->bp != f0->bp))
        return -1;
    got = recheck(u, 0, f0->bp, buf, max);
    if (1 + got != u->n || !(got == max || (got < max && u->complete)))
        return -1;
    l0->bp = f0->bp;
    return got;
}

int vti_unwind_fast(vti_uw_thread *u, void **buf, int max, bool *same, vti_uw_ref *ref,
                    uint64_t lazy)
{
    uintptr_t pc, sp, bp;
    int n;
    __asm__ volatile("lea 0(%%rip), %0\n\t"
                     "mov %%rsp, %1\n\t"
                     "mov %%rbp, %2"
                     : "=r"(pc), "=r"(sp), "=r"(bp));
    *ref = (vti_uw_ref){0, 0, 0};
    if (u->busy || max >= VTI_UW_LOG - 1)
        return -1;
    u->busy = true;
    *same = false;
    atomic_signal_fence(memory_order_seq_cst);
    if (!u->stack_hi)
        bounds_init(u);
    u->tmp[0] = (vti_uw_frame){.pc = pc + 1, .sp = sp, .bp = bp};
    if ((n = last_again(u, buf, max)) >= 0) {
        *same = true;
    } else if ((n = memo_walk(u, buf, max, ref, lazy)) >= 0) {
        u->n = 0; /* last[] is no longer the last walk */
    } else {
        n = walk(u, buf, max, same);
        if (n >= 0 && !*same)
            memo_insert(u, ref);
    }
    atomic_signal_fence(memory_order_seq_cst);
    u->busy = false;
    return n;
}

/* Learn the rules of a walk that missed some (u->missed): libunwind's step
 * loop gives this capture's frames (buf, up to max: the same frames as
 * unw_backtrace) and goes on to the outermost frame; only when it meets no
 * signal frame (so this is no signal handler, where libdw's allocations are
 * not safe) are the rules of the missed pc and of every return address
 * computed. Returns the frame count, -1 when libunwind gave nothing. */
int vti_unwind_learn(vti_uw_thread *u, void **buf, int max)
{
    unw_context_t ctx;
    unw_cursor_t cur;
    unw_word_t ip;
    int n = 0, steps = 0, rc = 1;
    bool in_signal = false;
    if (u->busy || unw_getcontext(&ctx) != 0 || unw_init_local(&cur, &ctx) != 0)
        return -1;
    while (steps++ < LEARN_STEPS && (rc = unw_step(&cur)) > 0) {
        in_signal |= unw_is_signal_frame(&cur) > 0;
        if (n < max && unw_get_reg(&cur, UNW_REG_IP, &ip) == 0)
            buf[n++] = (void *)(uintptr_t)ip;
    }
    if (rc == 0 && !in_signal && u->missed) {
        u->busy = true;
        atomic_signal_fence(memory_order_seq_cst);
        pthread_mutex_lock(&rules_lock);
        rule_global(u->miss_pc, true);
        for (int i = 0; i < n; i++)
            rule_global((uintptr_t)buf[i], true);
        pthread_mutex_unlock(&rules_lock);
        u->missed = false;
        atomic_signal_fence(memory_order_seq_cst);
        u->busy = false;
    }
    return n;
}
#else
int vti_unwind_fast(vti_uw_thread *u, void **buf, int max, bool *same, vti_uw_ref *ref,
                    uint64_t lazy)
{
    *same = false;
    *ref = (vti_uw_ref){0, 0, 0};
    (void)lazy;
    (void)u;
    (void)buf;
    (void)max;
    return -1;
}

int vti_unwind_learn(vti_uw_thread *u, void **buf, int max)
{
    (void)u;
    (void)buf;
    (void)max;
    return -1;
}
#endif

/* Under busy: a signal handler's capture in between leaves the tree alone. */
void vti_unwind_set_tag(vti_uw_thread *u, vti_uw_ref ref, uint64_t tag)
{
    if (u->busy)
        return;
    u->busy = true;
    atomic_signal_fence(memory_order_seq_cst);
    if (ref.node && ref.epoch == u->epoch && ref.node <= u->nnodes)
        u->nodes[ref.node - 1].tag = tag;
    atomic_signal_fence(memory_order_seq_cst);
    u->busy = false;
}

void vti_unwind_fork_reset(void)
{
    modules = NULL; /* the parent's rules are left, not freed: they may be mid-growth */
    rule_pcs = NULL;
    rule_vals = NULL;
    rule_mask = rule_count = 0;
    pthread_mutex_init(&rules_lock, NULL);
}
