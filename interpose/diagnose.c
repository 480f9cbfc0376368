/* diagnose.c: the OOM diagnosis on stderr, at most DIAG_LINES lines, once
 * per fatal failure (interpose/README.md, "The OOM diagnosis").
 *
 * A caching allocator answers a failure by freeing its cache and retrying
 * (PyTorch, the workload's ga_malloc), so a failure is only known to be
 * fatal later. The rule: a failed allocation is kept pending with a snapshot
 * of the live sites; it is dropped when the same thread's next allocation is
 * the same size on the same device and succeeds (recovered: the report's
 * rule, report.h vr_oom.recovered); a failed retry of the same request
 * replaces it (one diagnosis per request); any other next allocation of that
 * thread, another failure of another thread, or the end of the process
 * prints it. Sites are named by function and file:line with elfutils libdw,
 * dlopened only then (the preload never links it), else dladdr's symbol+off. */
#include <dlfcn.h>
#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vsize.h"
#include "vti_internal.h"

#define MAX_DIAGNOSES 10
#define DIAG_SITES 5

typedef struct pending {
    bool set;
    pthread_t thread;
    vti_failure f;     /* the failed request */
    uint64_t attempts; /* failed attempts of this request (retries included) */
    vti_counters c;
    vti_site sites[DIAG_SITES];
    int nsites;
} pending;

static pthread_mutex_t diag_lock = PTHREAD_MUTEX_INITIALIZER;
static pending pend;
static _Atomic int pend_set; /* pend.set, read without the lock */
static int diagnoses;        /* printed, under diag_lock */
static uint64_t earlier;     /* failed attempts already printed or recovered */

/* The one byte format (size/vsize.h), as the report prints sizes. */
void vti_fmt_bytes(uint64_t b, char *out, size_t len)
{
    vsize_format(b, out, len);
}

/* ---- naming frames: libdw when it can be loaded, else dladdr ------------- */

typedef struct dw_api {
    Dwfl *(*begin)(const Dwfl_Callbacks *);
    int (*proc_report)(Dwfl *, pid_t);
    int (*report_end)(Dwfl *, int (*)(Dwfl_Module *, void *, const char *, Dwarf_Addr, void *),
                      void *);
    Dwfl_Module *(*addrmodule)(Dwfl *, Dwarf_Addr);
    const char *(*addrname)(Dwfl_Module *, GElf_Addr);
    const char *(*addrsym)(Dwfl_Module *, GElf_Addr, GElf_Sym *, GElf_Word *);
    void (*end)(Dwfl *);
    Dwarf_Die *(*addrdie)(Dwfl_Module *, Dwarf_Addr, Dwarf_Addr *);
    Dwarf_Die *(*nextcu)(Dwfl_Module *, Dwarf_Die *, Dwarf_Addr *);
    int (*haspc)(Dwarf_Die *, Dwarf_Addr);
    Dwarf_Line *(*getsrc_die)(Dwarf_Die *, Dwarf_Addr);
    const char *(*linesrc)(Dwarf_Line *, Dwarf_Word *, Dwarf_Word *);
    int (*lineno)(Dwarf_Line *, int *);
    int (*getscopes)(Dwarf_Die *, Dwarf_Addr, Dwarf_Die **); /* optional: inlined names */
    int (*tag)(Dwarf_Die *);
    const char *(*diename)(Dwarf_Die *);
    Dwfl_Callbacks cb;
    char *debuginfo_path;
} dw_api;

/* The process's modules in libdw (dwfl_linux_proc_report), or NULL. */
static Dwfl *dw_open(dw_api *a)
{
    void *h = dlopen("libdw.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return NULL;
    *(void **)&a->begin = vti_real_dlsym(h, "dwfl_begin");
    *(void **)&a->proc_report = vti_real_dlsym(h, "dwfl_linux_proc_report");
    *(void **)&a->report_end = vti_real_dlsym(h, "dwfl_report_end");
    *(void **)&a->addrmodule = vti_real_dlsym(h, "dwfl_addrmodule");
    *(void **)&a->addrname = vti_real_dlsym(h, "dwfl_module_addrname");
    *(void **)&a->addrsym = vti_real_dlsym(h, "dwfl_module_addrsym"); /* optional */
    *(void **)&a->end = vti_real_dlsym(h, "dwfl_end");
    *(void **)&a->addrdie = vti_real_dlsym(h, "dwfl_module_addrdie");
    *(void **)&a->nextcu = vti_real_dlsym(h, "dwfl_module_nextcu");
    *(void **)&a->haspc = vti_real_dlsym(h, "dwarf_haspc");
    *(void **)&a->getsrc_die = vti_real_dlsym(h, "dwarf_getsrc_die");
    *(void **)&a->linesrc = vti_real_dlsym(h, "dwarf_linesrc");
    *(void **)&a->lineno = vti_real_dlsym(h, "dwarf_lineno");
    *(void **)&a->getscopes = vti_real_dlsym(h, "dwarf_getscopes");
    *(void **)&a->tag = vti_real_dlsym(h, "dwarf_tag");
    *(void **)&a->diename = vti_real_dlsym(h, "dwarf_diename");
    *(void **)&a->cb.find_elf = vti_real_dlsym(h, "dwfl_linux_proc_find_elf");
    *(void **)&a->cb.find_debuginfo = vti_real_dlsym(h, "dwfl_standard_find_debuginfo");
    a->cb.debuginfo_path = &a->debuginfo_path;
    if (!a->begin || !a->proc_report || !a->report_end || !a->addrmodule || !a->addrname ||
        !a->end || !a->addrdie || !a->nextcu || !a->haspc || !a->getsrc_die || !a->linesrc ||
        !a->lineno || !a->cb.find_elf || !a->cb.find_debuginfo)
        return NULL; /* the handle stays: a later dlopen is cheap */
    Dwfl *d = a->begin(&a->cb);
    if (d && (a->proc_report(d, getpid()) != 0 || a->report_end(d, NULL, NULL) != 0)) {
        a->end(d);
        d = NULL;
    }
    return d;
}

static bool skipped(const char *path)
{
    const char *base = path ? strrchr(path, '/') : NULL;
    base = base ? base + 1 : path;
    return !base || !strncmp(base, "libcuda", 7) || !strncmp(base, "libvramtrace", 12) ||
           !strncmp(base, "libcupti", 8) || !strncmp(base, "libffi", 6) ||
           !strncmp(base, "_ctypes.", 8) || !strncmp(base, "libpython", 9);
}

/* "symbol+0xoff (module)" from the module's symbol table (libdw reads
 * .symtab, which dladdr does not: an executable's functions are not in its
 * dynamic symbols), the C++ name demangled when the process has libstdc++.
 * false when no symbol covers ip. */
static bool symtab_name(const dw_api *a, Dwfl_Module *m, uint64_t ip, char *out, size_t len)
{
    GElf_Sym sym;
    const char *name = a->addrsym && m ? a->addrsym(m, ip, &sym, NULL) : NULL;
    if (!name)
        return false;
    typedef char *(*demangle_fn)(const char *, char *, size_t *, int *);
    demangle_fn dm = (demangle_fn)vti_real_dlsym(RTLD_DEFAULT, "__cxa_demangle");
    int status = -1;
    char *d = dm && name[0] == '_' && name[1] == 'Z' ? dm(name, NULL, NULL, &status) : NULL;
    Dl_info info = {0};
    const char *mod = dladdr((void *)(uintptr_t)ip, &info) && info.dli_fname ? info.dli_fname : "";
    const char *b = strrchr(mod, '/');
    snprintf(out, len, "%s+0x%" PRIx64 " (%s)", d && status == 0 ? d : name,
             ip + 1 - (uint64_t)sym.st_value, b ? b + 1 : mod);
    free(d);
    return true;
}

/* The unit of module m whose own ranges hold ip (bias: m's), by a walk of
 * its units; NULL when none does. */
static Dwarf_Die *unit_of(const dw_api *a, Dwfl_Module *m, uint64_t ip, Dwarf_Addr *bias)
{
    for (Dwarf_Die *cu = NULL; (cu = a->nextcu(m, cu, bias));)
        if (a->haspc(cu, ip - *bias) > 0)
            return cu;
    return NULL;
}

/* The function inlined at DWARF address pc of unit cu whose body holds pc's
 * line: the innermost inlined instance's name (its abstract origin's:
 * dwarf_diename follows DW_AT_abstract_origin), NULL when pc is in no
 * inlined instance or libdw cannot say. Without it the line of the inlined
 * function was named with the function it was inlined into (the report's
 * frame there: "bn_block_forward (nets.c:167) [inlined]";
 * report/symbolize.c builds the whole inline chain). */
static const char *inlined_name(const dw_api *a, Dwarf_Die *cu, Dwarf_Addr pc)
{
    Dwarf_Die *scopes = NULL;
    const char *name = NULL;
    int n = a->getscopes && a->tag && a->diename ? a->getscopes(cu, pc, &scopes) : -1;
    for (int i = 0; i < n; i++) {
        int tag = a->tag(&scopes[i]);
        if (tag == DW_TAG_inlined_subroutine)
            name = a->diename(&scopes[i]);
        if (tag == DW_TAG_inlined_subroutine || tag == DW_TAG_subprogram)
            break;
    }
    free(scopes);
    return name;
}

/* The source file and line of ip in module m: libdwfl's answer when the
 * unit it finds holds ip in its own ranges, else the unit that does. libdwfl
 * (elfutils 0.188, Debian 12) finds units only by .debug_aranges, which
 * clang does not write, and gives an address in a gap between a unit's
 * ranges to that unit (report/symbolize.c, cu_of: the same rule). NULL when
 * no unit holds ip. */
static const char *source_line(const dw_api *a, Dwfl_Module *m, uint64_t ip, int *line,
                               const char **inlined)
{
    Dwarf_Addr bias = 0;
    Dwarf_Die *cu = a->addrdie(m, ip, &bias);
    *line = 0;
    if (!cu || a->haspc(cu, ip - bias) <= 0)
        cu = unit_of(a, m, ip, &bias);
    Dwarf_Line *dl = cu ? a->getsrc_die(cu, ip - bias) : NULL;
    if (!dl || a->lineno(dl, line) != 0)
        return NULL;
    *inlined = inlined_name(a, cu, ip - bias);
    return a->linesrc(dl, NULL, NULL);
}

/* "function (file:line)" or "symbol+0xoff (module)" for one ip. */
static void frame_name(const dw_api *a, Dwfl *d, uint64_t ip, char *out, size_t len)
{
    Dl_info info = {0};
    if (vti_py_label(ip, out, len))
        return;
    Dwfl_Module *m = d ? a->addrmodule(d, ip) : NULL;
    const char *fn = m ? a->addrname(m, ip) : NULL;
    int line = 0;
    const char *inlined = NULL;
    const char *file = m ? source_line(a, m, ip, &line, &inlined) : NULL;
    fn = inlined ? inlined : fn;
    if (fn && file && line > 0) {
        const char *b = strrchr(file, '/');
        snprintf(out, len, "%s (%s:%d)", fn, b ? b + 1 : file, line);
    } else if (symtab_name(a, m, ip, out, len)) {
        return;
    } else if (dladdr((void *)(uintptr_t)ip, &info) && info.dli_sname) {
        snprintf(out, len, "%s+0x%" PRIxPTR, info.dli_sname,
                 (uintptr_t)ip + 1 - (uintptr_t)info.dli_saddr);
    } else {
        const char *b = info.dli_fname ? strrchr(info.dli_fname, '/') : NULL;
        snprintf(out, len, "%s+0x%" PRIxPTR, b ? b + 1 : "?",
                 (uintptr_t)ip + 1 - (uintptr_t)info.dli_fbase);
    }
}

typedef struct site_ips {
    uint64_t ips[VTI_MAX_STACK_DEPTH];
    uint64_t fn[VTI_MAX_STACK_DEPTH]; /* the function's start (dladdr), else the ip */
    int n;
} site_ips;

/* FNV-1a of a function's name: frames of one function compare equal. */
static uint64_t name_hash(const char *n)
{
    uint64_t h = 1469598103934665603ull;
    for (; *n; n++)
        h = (h ^ (unsigned char)*n) * 1099511628211ull;
    return h;
}

/* The stack's ips outside vramtrace and the CUDA libraries, innermost first;
 * fn identifies each frame's function (libdw's symbol, dladdr's, the ip). */
static void user_ips(const dw_api *a, Dwfl *d, uint32_t stack, site_ips *s)
{
    uint64_t ips[VTI_MAX_STACK_DEPTH];
    int n = vti_stack_ips(stack, ips, VTI_MAX_STACK_DEPTH);
    s->n = 0;
    for (int i = 0; i < n; i++) {
        Dl_info info;
        bool py = ips[i] & VTI_PY_NODE;
        bool named = !py && dladdr((void *)(uintptr_t)ips[i], &info);
        if (named && skipped(info.dli_fname) && s->n == 0)
            continue;
        Dwfl_Module *m = d && !py ? a->addrmodule(d, ips[i]) : NULL;
        const char *fn = m ? a->addrname(m, ips[i]) : NULL;
        s->ips[s->n] = ips[i];
        s->fn[s->n++] = fn                        ? name_hash(fn)
                        : named && info.dli_saddr ? (uint64_t)(uintptr_t)info.dli_saddr
                                                  : ips[i];
    }
}

/* How many innermost frames the n stacks share: frames of the same function
 * (by_ip false: a wrapper that calls the allocator from two lines is still
 * one wrapper) or at the same address (by_ip true). */
static int common_frames(const site_ips *s, int n, bool by_ip)
{
    int p = s[0].n;
    for (int i = 1; i < n; i++) {
        int k = 0;
        while (k < p && k < s[i].n &&
               (by_ip ? s[i].ips[k] == s[0].ips[k] : s[i].fn[k] == s[0].fn[k]))
            k++;
        p = k;
    }
    return p;
}

/* Whether sharing p frames leaves a stack without a frame of its own. */
static bool uses_up(const site_ips *s, int n, int p)
{
    for (int i = 0; i < n; i++)
        if (s[i].n && p >= s[i].n)
            return true;
    return false;
}

/* Innermost frames that the failing stack and every top site share (the
 * allocation wrappers), kept below one frame of each; none without a top
 * site (until session 26 the failing stack alone was all "shared", and a
 * failure with nothing live was "requested at _start"). When the functions
 * they share are all of some stack (every allocation made in one function,
 * from different lines, and its callers), the shared frames are those at the
 * same address: the lines differ, and the function is named at each
 * (comparing functions alone named the thread's start, __clone3). */
static int shared_prefix(const site_ips *s, int n)
{
    if (n < 2) /* no live site to compare with: no wrapper is known, none is skipped */
        return 0;
    int p = common_frames(s, n, false);
    if (uses_up(s, n, p))
        p = common_frames(s, n, true);
    for (int i = 0; i < n; i++)
        if (s[i].n && p >= s[i].n)
            p = s[i].n - 1;
    return p < 0 ? 0 : p;
}

/* The frame that names a stack with Python frames: its innermost Python
 * frame of the program's own code (vti_py_own), else its innermost Python
 * frame; -1 without Python frames. The report's rule (vr_stack.lead). */
static int py_lead(const site_ips *s)
{
    int first = -1;
    for (int i = 0; i < s->n; i++) {
        if (!(s->ips[i] & VTI_PY_NODE) || !(uint32_t)s->ips[i])
            continue;
        if (vti_py_own(s->ips[i]))
            return i;
        if (first < 0)
            first = i;
    }
    return first;
}

/* The frame after frame i that a site's text names next: the next one, or
 * in a stack with Python frames (py) the next Python frame (the
 * interpreter's own are not named). */
static int next_named(const site_ips *s, int i, bool py)
{
    for (i++; py && i < s->n && !(s->ips[i] & VTI_PY_NODE); i++)
        ;
    return i;
}

/* Frames a site's text may name (its culprit, caller and those that tell it
 * from another site), and the length of one frame's name. */
#define NAMED_MAX 12
#define NAME_LEN 256

/* The names of the frames of s that a site's text may name, from frame p
 * on, or from the stack's Python lead frame (py_lead) on through the Python
 * frames that called it: at most NAMED_MAX; their count. */
static int named_frames(const dw_api *a, Dwfl *d, const site_ips *s, int p, char (*names)[NAME_LEN])
{
    int lead = py_lead(s), k = 0;
    for (int i = lead >= 0 ? lead : p; k < NAMED_MAX && i < s->n; i = next_named(s, i, lead >= 0))
        frame_name(a, d, s->ips[i], names[k++], NAME_LEN);
    return k;
}

/* The named frames of a site where show[] is set, " <- " between them and
 * " <- ..." where frames are left out, into out. */
static void join_names(char (*names)[NAME_LEN], int n, const bool *show, char *out, size_t len)
{
    size_t at = 0;
    out[0] = '\0';
    for (int k = 0, last = -1; k < n && at < len; k++) {
        if (!show[k])
            continue;
        int w = snprintf(out + at, len - at, "%s%s%s", last >= 0 ? " <- " : "",
                         last >= 0 && k > last + 1 ? "... <- " : "", names[k]);
        at += w > 0 ? (size_t)w : 0;
        last = k;
    }
    if (!n)
        snprintf(out, len, "<no stack>");
}

/* "culprit (file:line) <- caller (file:line)" of s from frame p on. */
static void site_text(const dw_api *a, Dwfl *d, const site_ips *s, int p, char *out, size_t len)
{
    char names[NAMED_MAX][NAME_LEN];
    bool show[NAMED_MAX] = {true, true};
    join_names(names, named_frames(a, d, s, p, names), show, out, len);
}

/* ---- printing ------------------------------------------------------------ */

/* Each of the n sites' texts: its culprit and caller and, where another
 * site has the same two, the frame at which the two stacks part, past
 * those they share ("tr_scratch (tensor.c:75) <- conv_pass (nets.c:43) <-
 * ... <- d_micro_batch (loop.c:257)"): the DCGAN's block listed
 * "tr_scratch <- conv_pass" for four sites. */
static void site_texts(const dw_api *a, Dwfl *d, const site_ips *s, int n, int prefix,
                       char (*where)[1024])
{
    static char names[DIAG_SITES][NAMED_MAX][NAME_LEN]; /* under diag_lock */
    int cnt[DIAG_SITES];
    for (int i = 0; i < n; i++)
        cnt[i] = named_frames(a, d, &s[i], prefix, names[i]);
    for (int i = 0; i < n; i++) {
        bool show[NAMED_MAX] = {true, true};
        for (int j = 0, k; j < n; j++) {
            if (j == i)
                continue;
            for (k = 0; k < cnt[i] && k < cnt[j] && !strcmp(names[i][k], names[j][k]); k++)
                ;
            if (k >= 2 && k < cnt[i]) /* the same culprit and caller: where they part */
                show[k] = true;
        }
        join_names(names[i], cnt[i], show, where[i], sizeof where[i]);
    }
}

static void print_sites(const pending *p, const dw_api *a, Dwfl *d, site_ips *s, int prefix)
{
    char b[32], where[DIAG_SITES][1024];
    if (p->nsites)
        vti_msg("vramtrace:   largest live call sites (allocation wrappers they share "
                "skipped):\n");
    site_texts(a, d, s + 1, p->nsites, prefix, where);
    for (int i = 0; i < p->nsites; i++) {
        vti_fmt_bytes(p->sites[i].bytes, b, sizeof b);
        vti_msg("vramtrace:   %d. %s in %" PRIu64 " allocation%s at %s\n", i + 1, b,
                p->sites[i].count, vsize_plural(p->sites[i].count), where[i]);
    }
}

/* At most 10 lines: the failure, where, live, the graph memory pool when it
 * holds memory, up to 5 sites, the pointer. */
static void print_pending(const pending *p)
{
    char req[32], fb[32], tb[32], lb[32], where[600];
    dw_api a = {0};
    Dwfl *d = dw_open(&a);
    site_ips s[DIAG_SITES + 1];
    user_ips(&a, d, p->f.stack, &s[0]);
    for (int i = 0; i < p->nsites; i++)
        user_ips(&a, d, p->sites[i].stack, &s[i + 1]);
    int prefix = shared_prefix(s, p->nsites + 1);
    vti_fmt_bytes(p->f.size, req, sizeof req);
    vti_fmt_bytes(p->f.fr, fb, sizeof fb);
    vti_fmt_bytes(p->f.to, tb, sizeof tb);
    vti_fmt_bytes(p->c.live_bytes, lb, sizeof lb);
    if (p->f.device < 0) /* pinned host memory: the device's free bytes say nothing of it */
        vti_msg("vramtrace: OUT OF MEMORY: %s of %s of pinned host memory failed with error "
                "%d%s\n",
                vt_api_name(p->f.api), req, p->f.error, p->attempts > 1 ? " (also its retry)" : "");
    else
        vti_msg("vramtrace: OUT OF MEMORY: %s of %s failed with error %d on device %d%s%s%s%s%s\n",
                vt_api_name(p->f.api), req, p->f.error, p->f.device,
                p->f.have_info ? ", free " : "", p->f.have_info ? fb : "",
                p->f.have_info ? " of " : "", p->f.have_info ? tb : "",
                p->attempts > 1 ? " (also its retry)" : "");
    site_text(&a, d, &s[0], prefix, where, sizeof where);
    vti_msg("vramtrace:   requested at %s\n", where);
    vti_msg("vramtrace:   live: %s in %" PRIu64 " allocation%s%s\n", lb, p->c.live_count,
            vsize_plural(p->c.live_count),
            earlier ? "; earlier failures were recovered by retries" : "");
    if (p->f.graph_pool) { /* cuDeviceGetGraphMemAttribute's reserved bytes */
        char gb[32];
        vti_fmt_bytes(p->f.graph_pool, gb, sizeof gb);
        vti_msg("vramtrace:   CUDA graph memory pool reserved: %s (its live graph allocations "
                "and the freed graph memory the driver keeps)\n",
                gb);
    }
    print_sites(p, &a, d, s, prefix);
    vti_msg("vramtrace:   cause and remedy: vramtrace report on this trace\n");
    if (d)
        a.end(d);
}

/* Print and clear the pending failure (under diag_lock). */
static void flush_locked(void)
{
    if (!pend.set)
        return;
    pending p = pend;
    pend.set = false;
    atomic_store(&pend_set, 0);
    if (vti_settings_get()->quiet || diagnoses > MAX_DIAGNOSES)
        return;
    if (diagnoses++ == MAX_DIAGNOSES) {
        vti_msg("vramtrace: further failed allocations are only in the trace\n");
        return;
    }
    print_pending(&p);
}

void vti_diag_failed(const vti_failure *f)
{
    pthread_t self = pthread_self();
    pthread_mutex_lock(&diag_lock);
    uint64_t attempts = 1;
    if (pend.set && pthread_equal(pend.thread, self) && pend.f.size == f->size &&
        pend.f.device == f->device && pend.f.api == f->api)
        attempts += pend.attempts; /* a failed retry of the same request (same call) */
    else
        flush_locked();
    pend = (pending){.set = true, .thread = self, .f = *f, .attempts = attempts};
    vti_counters_get(f->device, &pend.c);
    pend.nsites = vti_live_top_sites(f->device, pend.sites, DIAG_SITES);
    atomic_store(&pend_set, 1);
    pthread_mutex_unlock(&diag_lock);
}

void vti_diag_alloc(uint64_t size, int device)
{
    if (!atomic_load(&pend_set))
        return;
    pthread_t self = pthread_self();
    pthread_mutex_lock(&diag_lock);
    if (pend.set && pthread_equal(pend.thread, self)) {
        if (pend.f.size == size && pend.f.device == device) { /* recovered by a retry */
            earlier += pend.attempts;
            pend.set = false;
            atomic_store(&pend_set, 0);
        } else {
            flush_locked();
        }
    }
    pthread_mutex_unlock(&diag_lock);
}

void vti_diag_flush(void)
{
    if (!atomic_load(&pend_set))
        return;
    pthread_mutex_lock(&diag_lock);
    flush_locked();
    pthread_mutex_unlock(&diag_lock);
}

void vti_diag_fork_reset(void)
{
    memset(&pend, 0, sizeof pend);
    atomic_store(&pend_set, 0);
    diagnoses = 0;
    earlier = 0;
    pthread_mutex_init(&diag_lock, NULL);
}
