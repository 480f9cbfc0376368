/* symbolize.c: stack trie leaf -> frames, with elfutils libdw on the
 * recorded module map (one Dwfl per module, reported lazily with
 * dwfl_report_elf at the recorded load bias; only a file whose GNU build-id
 * is the recorded one, else the module's frames stay offsets, with one note
 * per module). Function names come from the
 * DWARF scopes (every logical frame of an inline chain with its own call
 * line, as eu-addr2line -i gives them) or the ELF symbol table with the
 * offset in the symbol when there is no line (func+0x1c); C++ names are demangled with libstdc++'s
 * __cxa_demangle when it can be loaded. Frames inside vramtrace, the CUDA
 * libraries and NVTX's inlined API lead the raw stack and are folded away.
 * Python frames (recorded as their own nodes) become frames of module
 * "python"; in their stacks the interpreter's own native frames are hidden
 * unless native (report --native). Only stacks asked for
 * are symbolized; results are cached per ip and per stack. */
#include "state.h"

#include <dlfcn.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define VR_MAX_DEPTH 256
/* Logical frames one ip may stand for (its inline chain, innermost first):
 * C++ at -O3 and code built with LTO nest inlined calls 20 deep and more
 * (16 dropped the outer ones, the physical function among them). */
#define VR_MAX_INLINE 64
/* A build-id in hex as a trace records it, with its NUL (bytes). */
#define VR_BUILD_ID_HEX (VT_MAX_ID_LEN + 1)

typedef char *(*demangle_fn)(const char *, char *, size_t *, int *);

/* One address range of a compile unit (DWARF addresses, before the bias). */
typedef struct cu_range {
    Dwarf_Addr lo, hi; /* [lo, hi) */
    Dwarf_Off die;     /* the unit's DIE */
} cu_range;

typedef struct modcache {
    uint64_t key; /* module index + 1 */
    Dwfl *dwfl;
    Dwfl_Module *mod; /* NULL when the file could not be read */
    const char *path; /* arena copy of the module's path */
    /* its units' ranges, sorted by lo; built once, when .debug_aranges
     * does not know an address (cu_of) */
    cu_range *cus;
    size_t ncus;
    bool cus_built;
} modcache;

typedef struct ipcache {
    uint64_t key; /* ip */
    vr_frame *frames;
    size_t n;
} ipcache;

typedef struct stackcache {
    uint64_t key; /* leaf id */
    vr_stack st;
} stackcache;

struct vr_symbolizer {
    vr_state *s;
    bool no_symbols;
    bool trace_only; /* name native frames from the trace's symbol records only */
    bool native;     /* keep the interpreter's frames in stacks with Python frames */
    vr_map mods, ips, stacks;
    void *libstdcxx;
    demangle_fn demangle;
    Dwfl_Callbacks cb;
    char *debuginfo_path; /* NULL: the default search path */
};

vr_symbolizer *vr_symbolizer_new(vr_state *s, bool no_symbols, bool native, bool trace_only)
{
    vr_symbolizer *sy = vr_xcalloc(1, sizeof(*sy));
    sy->s = s;
    sy->no_symbols = no_symbols;
    sy->trace_only = trace_only;
    if (trace_only && !no_symbols && !s->nsyms)
        vr_state_note(s, "--trace-symbols: this trace carries no names (recorded before vramtrace "
                         "symbolize existed, or with --no-symbolize): its native frames are "
                         "offsets");
    sy->native = native;
    vr_map_init(&sy->mods, sizeof(modcache));
    vr_map_init(&sy->ips, sizeof(ipcache));
    vr_map_init(&sy->stacks, sizeof(stackcache));
    sy->cb.find_elf = dwfl_build_id_find_elf;
    sy->cb.find_debuginfo = dwfl_standard_find_debuginfo;
    sy->cb.section_address = dwfl_offline_section_address;
    sy->cb.debuginfo_path = &sy->debuginfo_path;
    sy->libstdcxx = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
    if (sy->libstdcxx)
        sy->demangle = (demangle_fn)dlsym(sy->libstdcxx, "__cxa_demangle");
    return sy;
}

void vr_symbolizer_free(vr_symbolizer *sy)
{
    if (!sy)
        return;
    size_t i = 0;
    for (modcache *m; (m = vr_map_next(&sy->mods, &i));) {
        if (m->dwfl)
            dwfl_end(m->dwfl);
        free(m->cus);
    }
    vr_map_destroy(&sy->mods);
    vr_map_destroy(&sy->ips);
    vr_map_destroy(&sy->stacks);
    if (sy->libstdcxx)
        dlclose(sy->libstdcxx);
    free(sy);
}

static Dwfl_Module *module_dwfl(vr_symbolizer *sy, modcache *m, const vr_module *vm);

/* vramtrace itself, the CUDA runtime/driver and the simulated device. */
static bool internal_module(const char *path)
{
    const char *b = vr_basename(path);
    return !strncmp(b, "libvramtrace", 12) || !strncmp(b, "libcuda", 7) ||
           strstr(path, "/lib/sim/") || strstr(path, "/vramtrace/sim/");
}

/* The newest module containing ip, or -1. */
static long find_module(const vr_state *s, uint64_t ip)
{
    for (size_t i = s->nmodules; i-- > 0;)
        if (ip >= s->modules[i].start && ip < s->modules[i].end)
            return (long)i;
    return -1;
}

static modcache *module_get(vr_symbolizer *sy, long idx)
{
    bool created;
    modcache *m = vr_map_put(&sy->mods, (uint64_t)idx + 1, &created);
    if (!created)
        return m;
    const vr_module *vm = &sy->s->modules[idx];
    m->path = vr_strdup(sy->s->arena, vm->path);
    if (!sy->no_symbols && !sy->trace_only)
        m->mod = module_dwfl(sy, m, vm);
    return m;
}

/* The file at vm's recorded path, reported in a new m->dwfl at the recorded
 * load bias; NULL when it cannot be read, with why (len bytes). Only a
 * regular file is opened: a trace may name a FIFO or a device (a damaged or
 * crafted one), whose open or read would block the report. */
static Dwfl_Module *report_file(vr_symbolizer *sy, modcache *m, const vr_module *vm, char *why,
                                size_t len)
{
    struct stat st;
    if (stat(vm->path, &st) != 0) {
        snprintf(why, len, "%s", strerror(errno));
        return NULL;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(why, len, "not a regular file");
        return NULL;
    }
    m->dwfl = dwfl_begin(&sy->cb);
    if (!m->dwfl) {
        snprintf(why, len, "%s", dwfl_errmsg(-1));
        return NULL;
    }
    dwfl_report_begin(m->dwfl);
    Dwfl_Module *mod =
        dwfl_report_elf(m->dwfl, vr_basename(vm->path), vm->path, -1, vm->bias, false);
    dwfl_report_end(m->dwfl, NULL, NULL);
    if (!mod)
        snprintf(why, len, "%s", dwfl_errmsg(-1));
    return mod;
}

/* mod's GNU build-id as lowercase hex in out (VR_BUILD_ID_HEX bytes); ""
 * when it has none or a longer one than a trace can record. */
static void file_build_id(Dwfl_Module *mod, char out[VR_BUILD_ID_HEX])
{
    const unsigned char *bits = NULL;
    GElf_Addr vaddr;
    int n = dwfl_module_build_id(mod, &bits, &vaddr);
    vt_build_id_hex(bits, n > 0 ? (size_t)n : 0, out);
}

/* A module whose naming is worth a note: a file (not the vDSO), and not
 * vramtrace's nor CUDA's own (their frames are folded away). */
static bool noteworthy(const vr_module *vm)
{
    return vm->path[0] == '/' && !internal_module(vm->path);
}

/* Says once per module why its frames are offsets: its file here is another
 * object (here: that file's build-id) or, here NULL, cannot be read (why).
 * Only for noteworthy modules. */
static void note_unusable(vr_symbolizer *sy, const vr_module *vm, const char *here, const char *why)
{
    if (!noteworthy(vm))
        return;
    const char *then = sy->s->nsyms
                           ? "its frames are named from the symbols the trace carries (vramtrace "
                             "symbolize on the recording machine)"
                           : "its frames are shown as offsets (`vramtrace symbolize` on the "
                             "machine that recorded it makes a trace carry its names)";
    if (!here)
        vr_state_note_once(sy->s, "%s cannot be read here (%s): %s", vm->path, why, then);
    else if (*why) /* no build-id to compare: file_is_recorded says why */
        vr_state_note_once(sy->s, "%s here differs from the recorded one (%s): %s",
                           vr_basename(vm->path), why, then);
    else
        vr_state_note_once(sy->s,
                           "%s here differs from the recorded one (build-id %s recorded, %s "
                           "here): %s",
                           vr_basename(vm->path), *vm->build_id ? vm->build_id : "none",
                           *here ? here : "none", then);
}

/* The recorded object found by its build-id where elfutils looks for one
 * (find_elf dwfl_build_id_find_elf: the .build-id trees of the debug path,
 * then debuginfod when DEBUGINFOD_URLS is set), reported in a new m->dwfl
 * over the recorded address range. Used only when its build-id is the
 * recorded one and its load bias comes out as recorded; else NULL. */
static Dwfl_Module *report_by_build_id(vr_symbolizer *sy, modcache *m, const vr_module *vm)
{
    unsigned char bits[VT_MAX_ID_LEN / 2];
    size_t n = vm->build_id ? vt_build_id_bits(vm->build_id, bits) : 0;
    m->dwfl = n ? dwfl_begin(&sy->cb) : NULL;
    if (!m->dwfl)
        return NULL;
    dwfl_report_begin(m->dwfl);
    Dwfl_Module *mod = dwfl_report_module(m->dwfl, vr_basename(vm->path), vm->start, vm->end);
    if (mod && dwfl_module_report_build_id(mod, bits, n, 0) != 0)
        mod = NULL;
    dwfl_report_end(m->dwfl, NULL, NULL);
    GElf_Addr bias = 0;
    char here[VR_BUILD_ID_HEX] = "";
    if (mod && dwfl_module_getelf(mod, &bias) && bias == vm->bias)
        file_build_id(mod, here);
    return strcmp(here, vm->build_id) ? NULL : mod;
}

/* Says once that vm's frames are named from file, found by its build-id
 * because the file at the recorded path is another object or missing. */
static void note_found(vr_symbolizer *sy, const vr_module *vm, Dwfl_Module *mod)
{
    const char *file = NULL;
    dwfl_module_info(mod, NULL, NULL, NULL, NULL, NULL, &file, NULL);
    if (noteworthy(vm))
        vr_state_note_once(sy->s,
                           "%s here is not the recorded one: its frames are named from %s, "
                           "found by the recorded build-id %s",
                           vm->path, file ? file : "the file elfutils found (debuginfod)",
                           vm->build_id);
}

static void end_dwfl(modcache *m)
{
    if (m->dwfl)
        dwfl_end(m->dwfl);
    m->dwfl = NULL;
}

/* The bytes from the lowest PT_LOAD segment's p_vaddr to the highest
 * segment's p_vaddr + p_memsz of mod's file: what the recorder writes as a
 * module's end - start (interpose/stacks.c, module_cb). 0 when unknown. */
static uint64_t load_span(Dwfl_Module *mod)
{
    GElf_Addr bias;
    Elf *elf = dwfl_module_getelf(mod, &bias);
    size_t n = 0;
    if (!elf || elf_getphdrnum(elf, &n) != 0)
        return 0;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (size_t i = 0; i < n; i++) {
        GElf_Phdr ph;
        if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
            continue;
        lo = ph.p_vaddr < lo ? ph.p_vaddr : lo;
        hi = ph.p_vaddr + ph.p_memsz > hi ? ph.p_vaddr + ph.p_memsz : hi;
    }
    return hi > lo ? hi - lo : 0;
}

/* Without a build-id to compare, whether mod's file here is loaded over as
 * many bytes as the recorded module was: another version of a library
 * (a trace of another machine's libc) almost always is not. When not, says
 * so in why (len bytes). */
static bool same_span(const vr_module *vm, Dwfl_Module *mod, char *why, size_t len)
{
    uint64_t here = load_span(mod), then = vm->end > vm->start ? vm->end - vm->start : 0;
    if (!here || !then || here == then)
        return true;
    snprintf(why, len,
             "no build-id to compare, and its segments span %" PRIu64 " bytes here, %" PRIu64
             " recorded",
             here, then);
    return false;
}

/* Whether mod, vm's file here, is the recorded object: its build-id (left
 * in here) is the recorded one. Also when the trace (before version 4)
 * records none, or the object has none, recorded and here: then noted once
 * as unchecked, unless its segments span another size than recorded
 * (same_span; why says so). */
static bool file_is_recorded(vr_symbolizer *sy, const vr_module *vm, Dwfl_Module *mod,
                             char here[VR_BUILD_ID_HEX], char *why, size_t len)
{
    if (!vm->build_id && !same_span(vm, mod, why, len))
        return false;
    if (!vm->build_id) {
        vr_state_note_once(sy->s,
                           "module identity could not be checked: this trace (format "
                           "version %u) records no build-ids, so frames are named from "
                           "the files at the recorded paths here, which may differ",
                           sy->s->hdr ? sy->s->hdr->format_version : 0);
        return true;
    }
    file_build_id(mod, here);
    if (strcmp(here, vm->build_id) || (!*here && !same_span(vm, mod, why, len)))
        return false;
    if (!*here && noteworthy(vm))
        vr_state_note_once(sy->s,
                           "%s has no build-id, so the file here could not be checked "
                           "against the recorded one: its frames are named from it",
                           vr_basename(vm->path));
    return true;
}

/* The Dwfl module that names vm's frames: its file here when that is the
 * recorded object (file_is_recorded), else the recorded object found by
 * its build-id (report_by_build_id); NULL when neither, with a note
 * (note_unusable). */
static Dwfl_Module *module_dwfl(vr_symbolizer *sy, modcache *m, const vr_module *vm)
{
    if (!vm->path[0] || vm->path[0] == '[')
        return NULL;
    char here[VR_BUILD_ID_HEX] = "", why[256] = "";
    Dwfl_Module *mod = report_file(sy, m, vm, why, sizeof why);
    if (mod && file_is_recorded(sy, vm, mod, here, why, sizeof why))
        return mod;
    bool readable = mod != NULL;
    end_dwfl(m);
    mod = report_by_build_id(sy, m, vm);
    if (mod) {
        note_found(sy, vm, mod);
        return mod;
    }
    end_dwfl(m);
    note_unusable(sy, vm, readable ? here : NULL, why);
    return NULL;
}

static const char *demangled(vr_symbolizer *sy, const char *name)
{
    if (!name)
        return NULL;
    if (sy->demangle && name[0] == '_' && name[1] == 'Z') {
        int status = -1;
        char *d = sy->demangle(name, NULL, NULL, &status);
        if (d && status == 0) {
            char *r = vr_strdup(sy->s->arena, d);
            free(d);
            return r;
        }
        free(d);
    }
    return vr_strdup(sy->s->arena, name);
}

/* The declaration of a function DIE: its DW_AT_abstract_origin and
 * DW_AT_specification followed (an inlined or out-of-line instance names
 * the declaration inside its class). */
static Dwarf_Die declaration_of(Dwarf_Die *die)
{
    Dwarf_Die d = *die, next;
    Dwarf_Attribute a;
    for (int i = 0; i < 8; i++) {
        if (!(dwarf_attr(&d, DW_AT_abstract_origin, &a) ||
              dwarf_attr(&d, DW_AT_specification, &a)) ||
            !dwarf_formref_die(&a, &next))
            break;
        d = next;
    }
    return d;
}

/* name prefixed with the scopes its declaration sits in, outermost first
 * ("ns::Class::name", "train(int)::{lambda}::operator()"): what the
 * linkage name would have said; name alone when it sits in none. */
static const char *scoped_name(vr_symbolizer *sy, Dwarf_Die *die, const char *name)
{
    Dwarf_Die decl = declaration_of(die), *scopes = NULL, cu;
    int lang = dwarf_diecu(&decl, &cu, NULL, NULL) ? dwarf_srclang(&cu) : -1;
    if (lang == DW_LANG_C89 || lang == DW_LANG_C || lang == DW_LANG_C99 || lang == DW_LANG_C11)
        return name; /* no scopes to name, and C names no linkage: spare the walk */
    int n = dwarf_getscopes_die(&decl, &scopes);
    char buf[1024];
    size_t len = 0;
    for (int i = n - 2; i >= 1 && len < sizeof buf; i--) { /* [0] the DIE, [n - 1] its unit */
        int tag = dwarf_tag(&scopes[i]);
        const char *part = dwarf_diename(&scopes[i]);
        if (tag == DW_TAG_namespace)
            part = part ? part : "(anonymous namespace)";
        else if (tag == DW_TAG_class_type || tag == DW_TAG_structure_type ||
                 tag == DW_TAG_union_type)
            part = part ? part : "{lambda}"; /* an unnamed class: a closure, as GCC writes it */
        else if (tag != DW_TAG_subprogram || !part)
            continue;
        len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%s", part,
                                tag == DW_TAG_subprogram ? "(...)::" : "::");
    }
    free(scopes);
    if (!len || len >= sizeof buf)
        return name;
    return vr_sprintf(sy->s->arena, "%s%s", buf, name);
}

/* A function DIE's name: its linkage name demangled (*qualified true), else
 * its DW_AT_name with the scopes it is declared in (scoped_name): GCC gives
 * no linkage name to a lambda's operator() nor to a function of internal
 * linkage. */
static const char *die_name(vr_symbolizer *sy, Dwarf_Die *die, bool *qualified)
{
    Dwarf_Attribute a;
    const char *n = NULL;
    if (dwarf_attr_integrate(die, DW_AT_linkage_name, &a) ||
        dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &a))
        n = dwarf_formstring(&a);
    *qualified = n != NULL;
    if (n)
        return demangled(sy, n);
    if (!dwarf_attr_integrate(die, DW_AT_name, &a) || !(n = dwarf_formstring(&a)))
        return NULL;
    n = scoped_name(sy, die, vr_strdup(sy->s->arena, n));
    *qualified = strstr(n, "::") != NULL;
    return n;
}

static bool is_function_scope(Dwarf_Die *d)
{
    int tag = dwarf_tag(d);
    return tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine ||
           tag == DW_TAG_entry_point;
}

/* The source file of a DW_AT_call_file index in the CU's file table. */
static const char *call_file(vr_symbolizer *sy, Dwarf_Die *cu, Dwarf_Die *inl)
{
    Dwarf_Files *files = NULL;
    size_t nfiles = 0;
    Dwarf_Attribute a;
    Dwarf_Word cf = 0;
    if (!dwarf_attr(inl, DW_AT_call_file, &a) || dwarf_formudata(&a, &cf) != 0 ||
        dwarf_getsrcfiles(cu, &files, &nfiles) != 0 || cf >= nfiles)
        return "";
    const char *fn = dwarf_filesrc(files, cf, NULL, NULL);
    return fn ? vr_strdup(sy->s->arena, fn) : "";
}

static uint32_t call_line(Dwarf_Die *inl)
{
    Dwarf_Attribute a;
    Dwarf_Word cl = 0;
    if (!dwarf_attr(inl, DW_AT_call_line, &a) || dwarf_formudata(&a, &cl) != 0)
        return 0;
    return (uint32_t)cl;
}

static int cu_range_cmp(const void *a, const void *b)
{
    const cu_range *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static void cus_add(modcache *m, size_t *cap, Dwarf_Addr lo, Dwarf_Addr hi, Dwarf_Off die)
{
    if (m->ncus == *cap) {
        *cap = *cap ? *cap * 2 : 64;
        m->cus = vr_xrealloc(m->cus, *cap * sizeof *m->cus);
    }
    m->cus[m->ncus++] = (cu_range){lo, hi, die};
}

/* The address ranges of every compile unit of m's DWARF (DW_AT_low_pc and
 * DW_AT_high_pc or DW_AT_ranges), sorted: what .debug_aranges would list.
 * Clang writes no .debug_aranges unless -gdwarf-aranges, and elfutils
 * before 0.192 finds units only through it ("dwarf_getaranges: build
 * aranges list from CUs", elfutils NEWS 0.192). */
static void cus_build(modcache *m)
{
    Dwarf_Addr bias;
    Dwarf *dw = dwfl_module_getdwarf(m->mod, &bias);
    Dwarf_CU *cu = NULL, *next;
    Dwarf_Die die;
    uint8_t type;
    size_t cap = 0;
    m->cus_built = true;
    while (dw && dwarf_get_units(dw, cu, &next, NULL, &type, &die, NULL) == 0) {
        Dwarf_Addr base, lo, hi;
        cu = next;
        if (type != DW_UT_compile && type != DW_UT_skeleton && type != DW_UT_partial)
            continue;
        for (ptrdiff_t o = 0; (o = dwarf_ranges(&die, o, &base, &lo, &hi)) > 0;)
            if (hi > lo)
                cus_add(m, &cap, lo, hi, dwarf_dieoffset(&die));
    }
    if (m->ncus)
        qsort(m->cus, m->ncus, sizeof *m->cus, cu_range_cmp);
}

/* The compile unit holding ip (an address of the recorded process) into
 * *out, and the module's DWARF bias: by .debug_aranges
 * (dwfl_module_addrdie) when that unit's ranges hold ip, else by the units'
 * own ranges (cus_build). false when no unit holds it (no DWARF there). */
static bool cu_of(modcache *m, uint64_t ip, Dwarf_Die *out, Dwarf_Addr *bias)
{
    Dwarf_Die *cu = dwfl_module_addrdie(m->mod, ip, bias);
    if (cu) {
        /* libdwfl gives an address in a gap between a unit's ranges to that
         * unit (code without DWARF linked after it: crt1.o's _start, a
         * static library built without -g) */
        bool spans = dwarf_hasattr(cu, DW_AT_ranges) || dwarf_hasattr(cu, DW_AT_high_pc);
        if (!spans || dwarf_haspc(cu, ip - *bias) == 1) {
            *out = *cu;
            return true;
        }
    }
    if (!m->cus_built)
        cus_build(m);
    Dwarf *dw = m->ncus ? dwfl_module_getdwarf(m->mod, bias) : NULL;
    if (!dw)
        return false;
    Dwarf_Addr a = ip - *bias;
    size_t lo = 0, hi = m->ncus; /* the first range with lo > a */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->cus[mid].lo <= a)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t i = lo; i-- > 0;) /* ranges may nest (a unit inside another's span) */
        if (a < m->cus[i].hi)
            return dwarf_offdie(dw, m->cus[i].die, out) != NULL;
    return false;
}

/* The source line at DWARF address a of unit cu (cu_of: the unit that
 * holds it); NULL when its line table has none. */
static const char *line_of(Dwarf_Die *cu, Dwarf_Addr a, int *lineno)
{
    Dwarf_Line *l = dwarf_getsrc_die(cu, a);
    if (!l || dwarf_lineno(l, lineno) != 0)
        return NULL;
    return dwarf_linesrc(l, NULL, NULL);
}

/* DIEs that hold functions without being a scope of code themselves. */
static bool holds_functions(Dwarf_Die *d)
{
    int tag = dwarf_tag(d);
    return tag == DW_TAG_namespace || tag == DW_TAG_module || tag == DW_TAG_class_type ||
           tag == DW_TAG_structure_type || tag == DW_TAG_union_type;
}

/* The innermost DIE under parent whose ranges hold a (a subprogram, lexical
 * block or inlined instance), depth first through namespaces and classes,
 * and with deep also through functions and blocks that do not hold a: a
 * class local to a function (a C++ lambda's closure) has its member
 * functions' code outside the function's own; false when none. What
 * dwarf_getscopes finds, for the units where it finds nothing: elfutils
 * 0.188 gives up on an inlined instance whose abstract origin is in another
 * unit (GCC's link-time optimisation keeps the early debug information in
 * the source's unit) or on a lambda's operator() that holds one. */
static bool innermost_scope(Dwarf_Die *parent, Dwarf_Addr a, Dwarf_Die *out, bool deep, int depth)
{
    Dwarf_Die child;
    if (depth > 64 || dwarf_child(parent, &child) != 0)
        return false;
    do {
        if (dwarf_haspc(&child, a) == 1) {
            if (!innermost_scope(&child, a, out, deep, depth + 1))
                *out = child;
            return true;
        }
        int tag = dwarf_tag(&child);
        bool container = holds_functions(&child) ||
                         (deep && (tag == DW_TAG_subprogram || tag == DW_TAG_lexical_block));
        if (container && innermost_scope(&child, a, out, deep, depth + 1))
            return true;
    } while (dwarf_siblingof(&child, &child) == 0);
    return false;
}

/* The logical frames at DWARF address a of unit cu (cu_of), innermost
 * first, as eu-addr2line -i finds them:
 * dwarf_getscopes gives the innermost scope at the address (its list also
 * holds the inlined function's abstract origin scopes, not its callers), and
 * dwarf_getscopes_die on that DIE gives the physical nesting: each
 * DW_TAG_inlined_subroutine, then the DW_TAG_subprogram it was inlined into.
 * The innermost frame is at base's line (the line table's); each caller is at
 * the DW_AT_call_file/DW_AT_call_line of the inlined instance below it.
 * Returns the count (0: no scope, use base alone). */
static size_t inline_frames(vr_symbolizer *sy, Dwarf_Die *cu, Dwarf_Addr a, vr_frame *out,
                            size_t max, const vr_frame *base)
{
    Dwarf_Die *scopes = NULL, *chain = NULL, inner, split, unit = *cu;
    uint8_t type;
    cu = &unit; /* the caller's unit stays as it was */
    /* -gsplit-dwarf: the scopes are in the split unit (the .dwo file) */
    if (dwarf_cu_info(cu->cu, NULL, &type, NULL, &split, NULL, NULL, NULL) == 0 &&
        type == DW_UT_skeleton && split.addr)
        *cu = split;
    if (dwarf_getscopes(cu, a, &scopes) > 0)
        inner = scopes[0];
    else if (!innermost_scope(cu, a, &inner, false, 0) && !innermost_scope(cu, a, &inner, true, 0))
        inner = *cu;
    free(scopes);
    if (dwarf_dieoffset(&inner) == dwarf_dieoffset(cu))
        return 0;
    int ns = dwarf_getscopes_die(&inner, &chain);
    size_t n = 0;
    const char *file = base->file;
    uint32_t line = base->line;
    for (int i = 0; i < ns && n < max; i++) {
        if (!is_function_scope(&chain[i]))
            continue;
        vr_frame *f = &out[n++];
        *f = *base;
        bool qualified;
        const char *name = die_name(sy, &chain[i], &qualified);
        f->inlined = dwarf_tag(&chain[i]) == DW_TAG_inlined_subroutine;
        /* the concrete function keeps the symbol table's demangled C++ name
         * (base's, qualified) when DWARF has only the unqualified one; a C
         * function keeps DWARF's (the symbol may be a clone, foo.part.0) */
        if (name && (qualified || f->inlined || !strstr(base->function, "::")))
            f->function = name;
        f->file = file;
        f->line = line;
        if (!f->inlined)
            break;
        /* the caller's position is the inlined instance's call site */
        file = call_file(sy, cu, &chain[i]);
        line = call_line(&chain[i]);
    }
    free(chain);
    return n;
}

/* The frames at ip that the trace's symbol records name (vramtrace
 * symbolize on the recording machine), innermost first, each with base's
 * module and ip; 0 when it has none. */
static size_t recorded_frames(vr_symbolizer *sy, uint64_t ip, vr_frame *out, size_t max,
                              const vr_frame *base)
{
    const vr_ipsyms *e = vr_map_get(&sy->s->ipsyms, ip);
    size_t n = 0;
    for (; e && n < e->n && n < max; n++) {
        const vr_symbol *y = &sy->s->syms[e->first + n];
        out[n] = *base;
        out[n].function = vr_strdup(sy->s->arena, vr_state_string(sy->s, y->function));
        out[n].file = vr_strdup(sy->s->arena, y->file ? vr_state_string(sy->s, y->file) : "");
        out[n].line = y->line;
        out[n].inlined = y->inlined;
    }
    return n;
}

static ipcache *symbolize_ip(vr_symbolizer *sy, uint64_t ip)
{
    bool created;
    ipcache *c = vr_map_put(&sy->ips, ip, &created);
    if (!created)
        return c;
    vr_frame base = {.function = "??", .file = "", .module = "", .ip = ip};
    long idx = find_module(sy->s, ip);
    Dwfl_Module *mod = NULL;
    modcache *mc = NULL;
    if (idx >= 0) {
        mc = module_get(sy, idx);
        base.module = mc->path;
        base.ip = ip - sy->s->modules[idx].bias;
        mod = mc->mod;
    }
    vr_frame tmp[VR_MAX_INLINE];
    size_t n = 0;
    if (mod) {
        GElf_Off off = 0;
        GElf_Sym esym;
        const char *sym = dwfl_module_addrinfo(mod, ip, &off, &esym, NULL, NULL, NULL);
        if (sym)
            base.function = demangled(sy, sym);
        int lineno = 0;
        Dwarf_Die cu;
        Dwarf_Addr bias = 0;
        const char *src = cu_of(mc, ip, &cu, &bias) ? line_of(&cu, ip - bias, &lineno) : NULL;
        if (src) {
            base.file = vr_strdup(sy->s->arena, src);
            base.line = (uint32_t)(lineno > 0 ? lineno : 0);
            n = inline_frames(sy, &cu, ip - bias, tmp, VR_MAX_INLINE, &base);
        } else if (sym) {
            /* no line to tell call sites of one function apart: the offset does */
            base.function =
                vr_sprintf(sy->s->arena, "%s+0x%llx", base.function, (unsigned long long)off);
        }
    }
    if (!mod && !sy->no_symbols)
        n = recorded_frames(sy, ip, tmp, VR_MAX_INLINE, &base);
    if (!n)
        tmp[n++] = base;
    c = vr_map_get(&sy->ips, ip); /* unchanged: no insertion since */
    c->frames = vr_alloc(sy->s->arena, n * sizeof(vr_frame));
    memcpy(c->frames, tmp, n * sizeof(vr_frame));
    c->n = n;
    return c;
}

/* NVTX's header-only API, inlined into the program (nvtx3/ headers). */
static bool nvtx_frame(const vr_frame *f)
{
    return !strncmp(f->function, "nvtx", 4) || strstr(f->file, "/nvtx3/");
}

/* The C library's start-up frames below main and below a thread's start
 * function (glibc: csu/libc-start.c, sysdeps/nptl/libc_start_call_main.h,
 * nptl/pthread_create.c start_thread, sysdeps/unix/sysv/linux/x86_64/
 * clone3.S; crt1.o's _start): in every stack, they name nothing of the
 * program's. Hidden from the outer end of stacks, as Valgrind hides the
 * frames below main (its --show-below-main=no, the default). */
static bool startup_frame(const vr_frame *f)
{
    static const char *const names[] = {"_start", "start_thread", "clone",
                                        "clone3", "__clone",      "__clone3"};
    const char *fn = f->function;
    size_t len = strcspn(fn, "+"); /* a symbol-table name carries its offset: "_start+0x20" */
    if (!strncmp(fn, "__libc_start_", 13) || !strncmp(fn, "__GI___clone", 12))
        return true;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strlen(names[i]) == len && !strncmp(fn, names[i], len))
            return true;
    return false;
}

/* The trie nodes from leaf to the root (innermost first). */
static size_t collect_nodes(const vr_state *s, uint32_t leaf, const vr_stacknode **out)
{
    size_t n = 0;
    for (uint32_t id = leaf; id && n < VR_MAX_DEPTH;) {
        const vr_stacknode *node = vr_map_get(&s->stacknodes, id);
        if (!node)
            break;
        out[n++] = node;
        if (node->parent == id)
            break;
        id = node->parent;
    }
    return n;
}

/* A Python frame node: its recorded file, qualified name and line, module
 * VR_PYTHON_MODULE. Frame 0 marks a thread whose Python frames the
 * recorder could not know (no Python thread state there). */
static vr_frame python_frame(const vr_state *s, const vr_stacknode *node)
{
    vr_frame f = {.function = VR_PYTHON_UNKNOWN, .file = "", .module = VR_PYTHON_MODULE};
    const vr_pyframe *pf = node->pyframe ? vr_map_get(&s->pyframes, node->pyframe) : NULL;
    if (node->pyframe) {
        f.function = pf ? vr_strdup(s->arena, vr_state_string(s, pf->function)) : "??";
        f.file = pf ? vr_strdup(s->arena, vr_state_string(s, pf->file)) : "";
        f.line = pf ? pf->line : 0;
    }
    return f;
}

/* The CPython interpreter and its call machinery (ctypes, libffi): hidden
 * from stacks that have Python frames unless --native. */
static bool interpreter_module(const char *path)
{
    const char *b = vr_basename(path);
    return !strncmp(b, "python", 6) || !strncmp(b, "libpython", 9) || !strncmp(b, "libffi", 6) ||
           !strncmp(b, "_ctypes.", 8);
}

static void push_frame(vr_arena *a, vr_frame **frames, size_t *nf, size_t *cap, const vr_frame *f)
{
    if (*nf == *cap) {
        vr_frame *bigger = vr_alloc(a, *cap * 2 * sizeof(vr_frame));
        memcpy(bigger, *frames, *nf * sizeof(vr_frame));
        *frames = bigger;
        *cap *= 2;
    }
    (*frames)[(*nf)++] = *f;
}

static bool has_python(const vr_stacknode *const *nodes, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (nodes[i]->python && nodes[i]->pyframe)
            return true;
    return false;
}

/* vr_stack.lead of frames[0..n): the program's innermost Python frame,
 * else the innermost Python frame, else 0. */
static size_t lead_frame(const vr_frame *frames, size_t n)
{
    size_t first = SIZE_MAX;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(frames[i].module, VR_PYTHON_MODULE) || !frames[i].file[0])
            continue;
        if (!vt_py_library_file(frames[i].file))
            return i;
        if (first == SIZE_MAX)
            first = i;
    }
    return first == SIZE_MAX ? 0 : first;
}

vr_stack vr_symbolize(vr_symbolizer *sy, uint32_t leaf)
{
    vr_stack st = {.id = leaf};
    if (!leaf)
        return st;
    stackcache *sc = vr_map_get(&sy->stacks, leaf);
    if (sc)
        return sc->st;
    const vr_stacknode *nodes[VR_MAX_DEPTH];
    size_t nn = collect_nodes(sy->s, leaf, nodes), nf = 0, cap = 0;
    bool hide = !sy->native && has_python(nodes, nn);
    for (size_t i = 0; i < nn; i++) /* the frames' number, so that they take no more */
        cap += nodes[i]->python ? 1 : symbolize_ip(sy, nodes[i]->ip)->n;
    cap = cap ? cap : 1;
    vr_frame *frames = vr_alloc(sy->s->arena, cap * sizeof(vr_frame));
    for (size_t i = 0; i < nn; i++) {
        if (nodes[i]->python) {
            vr_frame f = python_frame(sy->s, nodes[i]);
            push_frame(sy->s->arena, &frames, &nf, &cap, &f);
            continue;
        }
        ipcache *c = symbolize_ip(sy, nodes[i]->ip);
        for (size_t k = 0; k < c->n; k++)
            if (!hide || !interpreter_module(c->frames[k].module))
                push_frame(sy->s->arena, &frames, &nf, &cap, &c->frames[k]);
    }
    while (nf > 1 && startup_frame(&frames[nf - 1]))
        nf--;
    size_t skip = 0;
    while (skip < nf && (internal_module(frames[skip].module) || nvtx_frame(&frames[skip])))
        skip++;
    if (skip == nf)
        skip = 0; /* nothing but internal frames: show them */
    st.frames = frames + skip;
    st.n = nf - skip;
    st.lead = lead_frame(st.frames, st.n);
    sc = vr_map_put(&sy->stacks, leaf, NULL);
    sc->st = st;
    return st;
}

/* One frame's part of vr_stack_key into out (len bytes; NULL, 0 to measure):
 * its length, as snprintf's. */
static int key_part(char *out, size_t len, const vr_frame *f)
{
    return snprintf(out, len, "%s\x1f%s\x1f%u\x1f%s\x1f%llx\x1e", f->function, f->file, f->line,
                    f->module, strcmp(f->function, "??") ? 0ull : (unsigned long long)f->ip);
}

const char *vr_stack_key(vr_arena *a, const vr_stack *st)
{
    size_t len = 1;
    for (size_t i = 0; i < st->n; i++)
        len += (size_t)key_part(NULL, 0, &st->frames[i]);
    char *k = vr_alloc(a, len), *p = k;
    for (size_t i = 0; i < st->n; i++)
        p += key_part(p, len - (size_t)(p - k), &st->frames[i]);
    *p = 0;
    return k;
}

/* The text of field k (0 to 4) of frame f in vr_stack_key: its function,
 * file, line, module and ip (0 unless the function is "??"), numbers
 * written into num. */
static const char *key_field(const vr_frame *f, int k, char num[24])
{
    switch (k) {
    case 0:
        return f->function;
    case 1:
        return f->file;
    case 2:
        snprintf(num, 24, "%u", f->line);
        return num;
    case 3:
        return f->module;
    default:
        snprintf(num, 24, "%llx", strcmp(f->function, "??") ? 0ull : (unsigned long long)f->ip);
        return num;
    }
}

/* Reads the bytes of a stack's vr_stack_key without making the string. */
typedef struct key_reader {
    const vr_stack *st;
    size_t frame;
    int field;     /* 0 to 4 */
    const char *p; /* in the field's text; NULL at its start */
    char num[24];
} key_reader;

/* The key's next byte, 0 at its end. */
static int key_byte(key_reader *r)
{
    if (r->frame == r->st->n)
        return 0;
    if (!r->p)
        r->p = key_field(&r->st->frames[r->frame], r->field, r->num);
    if (*r->p)
        return (unsigned char)*r->p++;
    int sep = r->field == 4 ? 0x1e : 0x1f;
    r->p = NULL;
    if (++r->field == 5) {
        r->field = 0;
        r->frame++;
    }
    return sep;
}

static bool same_field(const vr_frame *x, const vr_frame *y, int k)
{
    switch (k) {
    case 0:
        return x->function == y->function || !strcmp(x->function, y->function);
    case 1:
        return x->file == y->file || !strcmp(x->file, y->file);
    case 2:
        return x->line == y->line;
    case 3:
        return x->module == y->module || !strcmp(x->module, y->module);
    default:
        return (strcmp(x->function, "??") ? 0 : x->ip) == (strcmp(y->function, "??") ? 0 : y->ip);
    }
}

bool vr_frame_same_key(const vr_frame *x, const vr_frame *y)
{
    for (int k = 0; k < 5; k++)
        if (!same_field(x, y, k))
            return false;
    return true;
}

/* Both readers at the start of the same field with the same text: steps both
 * past it and its separator (the bytes they would give are the same). */
static bool skip_same_field(key_reader *a, key_reader *b)
{
    if (a->p || b->p || a->field != b->field || a->frame == a->st->n || b->frame == b->st->n ||
        !same_field(&a->st->frames[a->frame], &b->st->frames[b->frame], a->field))
        return false;
    key_reader *r[2] = {a, b};
    for (int i = 0; i < 2; i++)
        if (++r[i]->field == 5) {
            r[i]->field = 0;
            r[i]->frame++;
        }
    return true;
}

int vr_stack_order(const vr_stack *a, const vr_stack *b)
{
    key_reader x = {.st = a}, y = {.st = b};
    for (;;) {
        while (skip_same_field(&x, &y))
            ;
        int p = key_byte(&x), q = key_byte(&y);
        if (p != q)
            return p < q ? -1 : 1;
        if (!p)
            return 0;
    }
}

/* The records vr_symbols_records builds: an arena array that grows, and the
 * strings it has given ids (keyed by a hash of their text). */
typedef struct exporter {
    vr_symbolizer *sy;
    vt_event *ev;
    size_t n, cap;
    vr_map strings; /* strid: hash of the text -> id */
    uint32_t next_id;
    vr_embed_result *res;
} exporter;

typedef struct strid {
    uint64_t key;
    const char *text;
    uint32_t id;
} strid;

static vt_event *export_push(exporter *x)
{
    if (x->n == x->cap) {
        size_t cap = x->cap ? 2 * x->cap : 1024;
        vt_event *ev = vr_alloc(x->sy->s->arena, cap * sizeof *ev);
        if (x->n)
            memcpy(ev, x->ev, x->n * sizeof *ev);
        x->ev = ev;
        x->cap = cap;
    }
    vt_event *e = &x->ev[x->n++];
    memset(e, 0, sizeof *e);
    return e;
}

/* The string id of text, written as a string record the first time. */
static uint32_t export_string(exporter *x, const char *text)
{
    if (!text || !*text)
        return 0;
    bool created;
    strid *e = vr_map_put(&x->strings, vr_text_hash(text, strlen(text)), &created);
    if (!created && !strcmp(e->text, text))
        return e->id;
    uint32_t id = x->next_id++;
    if (created) { /* a hash shared by two texts: the second gets ids of its own */
        e->text = text;
        e->id = id;
    }
    vt_event *r = export_push(x);
    r->type = VT_REC_STRING;
    r->u.string.id = id;
    r->u.string.text = text;
    x->res->strings++;
    return id;
}

static uint32_t max_string_id(const vr_state *s)
{
    uint64_t max = 0;
    size_t i = 0;
    for (const vr_string *e; (e = vr_map_next(&s->strings, &i));)
        max = e->key > max ? e->key : max;
    return (uint32_t)max;
}

/* The symbols of ip, when a file here names it: frames that say more than
 * "??" at an offset. */
static void export_ip(exporter *x, uint64_t ip)
{
    const ipcache *c = symbolize_ip(x->sy, ip);
    if (c->n == 1 && !strcmp(c->frames[0].function, "??"))
        return;
    x->res->named++;
    for (size_t k = 0; k < c->n; k++) {
        const vr_frame *f = &c->frames[k];
        uint32_t fn = export_string(x, f->function), file = export_string(x, f->file);
        vt_event *r = export_push(x);
        r->type = VT_REC_SYMBOL;
        r->u.symbol.ip = ip;
        r->u.symbol.index = (uint32_t)k;
        r->u.symbol.function = fn;
        r->u.symbol.file = file;
        r->u.symbol.line = f->line;
        r->u.symbol.flags = f->inlined ? VT_SYMBOL_INLINED : 0;
        x->res->frames++;
    }
}

size_t vr_symbols_records(vr_symbolizer *sy, vt_event **out, vr_embed_result *res)
{
    exporter x = {.sy = sy, .res = res, .next_id = max_string_id(sy->s) + 1};
    vr_map_init(&x.strings, sizeof(strid));
    vr_map seen;
    vr_map_init(&seen, sizeof(uint64_t));
    size_t i = 0;
    for (const vr_stacknode *n; (n = vr_map_next(&sy->s->stacknodes, &i));) {
        bool created;
        if (n->python || !n->ip)
            continue;
        vr_map_put(&seen, n->ip, &created);
        if (!created)
            continue;
        res->ips++;
        export_ip(&x, n->ip);
    }
    vr_map_destroy(&seen);
    vr_map_destroy(&x.strings);
    *out = x.ev;
    return x.n;
}
