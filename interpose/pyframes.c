/* pyframes.c: the Python frames of the allocating thread, merged into its
 * native stack.
 *
 * When the process runs CPython (found at run time with dlsym: libpython is
 * never linked), each captured stack gets the thread's Python frames (code
 * object's file, qualified name, current line) inserted where their
 * _PyEval_EvalFrameDefault call is in the native stack, as memray's native
 * mode and py-spy --native merge them (anchors: memray's
 * src/memray/_memray/native_resolver + hybrid stack, py-spy's
 * src/native_stack_trace.rs): walking the native frames from the innermost,
 * each eval-loop frame takes the next group of Python frames, a group being
 * one "entry" frame and the frames the same C-level eval call runs inline
 * (CPython 3.11 runs Python-to-Python calls without a new C call).
 *
 * How the frames are read: the thread's own PyThreadState
 * (PyGILState_GetThisThreadState, a thread-local read) -> its current frame
 * -> f_back / previous ..., with one layout table per CPython minor version
 * 3.8-3.13 (LAYOUTS below; checked at start against the running version and
 * PyCode_Type's basic size). No call into the interpreter allocates or takes
 * a lock: only PyCode_Addr2Line (a pure read of the code object's line
 * table) on a cache miss. A thread's own frames cannot change while it is
 * inside this hook, so they are read the same whether it holds the GIL or
 * released it around the call (ctypes, numba and most extensions release it
 * before calling CUDA). A thread without a Python thread state or without
 * frames (a C++ worker, a thread started by an extension) and every thread of
 * an unsupported Python gets one marker node instead ("Python frames
 * unknown"): nothing is guessed.
 *
 * Frames are deduplicated twice: (code object, instruction offset) -> frame
 * id in a cache, and (file, function, line) -> frame id, so the trace holds
 * one VT_REC_PY_FRAME per distinct frame, written before its id is used. */
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vti_internal.h"

#define TP_BASICSIZE 32 /* PyTypeObject.tp_basicsize */
#define OB_TYPE 8       /* PyObject.ob_type */
#define STR_LENGTH 16   /* PyASCIIObject.length */
#define STR_STATE 32    /* PyASCIIObject.state: interned:2 kind:3 compact:1 ascii:1 */
#define NONE ((uint16_t)-1)

#define MAX_PY 128             /* Python frames read per capture */
#define MAX_ENTRIES (1u << 20) /* cache entries before frames become unknown */
#define NAME_MAX_LEN 1024

enum { MODE_UNCHECKED = 0, MODE_NONE, MODE_READ, MODE_UNSUPPORTED };

/* How a frame's position is stored: a pointer to its code unit (3.11+), or
 * f_lasti as a byte offset (3.8, 3.9) or in 2-byte code units (3.10). */
enum { POS_PTR, POS_LASTI_BYTES, POS_LASTI_UNITS };
/* Which frames start a C-level eval call: all (3.8-3.10: one eval call per
 * frame), those with is_entry set (3.11), those below a shim frame owned by
 * the C stack (3.12+, owner == FRAME_OWNED_BY_CSTACK). */
enum { ENTRY_ALL, ENTRY_FLAG, ENTRY_SHIM };

/* One CPython minor version's layout on LP64: offsetof() from that version's
 * headers (cpython/pystate.h, internal/pycore_frame.h or frameobject.h,
 * cpython/code.h, cpython/unicodeobject.h), read with -DPy_BUILD_CORE. */
typedef struct py_layout {
    unsigned minor;      /* 3.minor */
    uint16_t ts_frame;   /* PyThreadState: frame (<3.11), cframe (3.11, 3.12), current_frame */
    uint16_t cf_current; /* _PyCFrame.current_frame, NONE without a cframe */
    uint16_t fr_back;    /* f_back / previous */
    uint16_t fr_code;    /* f_code / f_executable */
    uint16_t fr_pos;     /* f_lasti / prev_instr / instr_ptr */
    uint8_t pos_kind;    /* POS_* */
    uint8_t entry_kind;  /* ENTRY_* */
    uint16_t fr_entry;   /* is_entry (3.11) or owner (3.12+) */
    uint16_t co_file, co_name, co_firstlineno; /* co_name: co_qualname from 3.11 */
    uint16_t co_code;                          /* co_code_adaptive (3.11+), NONE before */
    uint16_t co_size;                          /* PyCode_Type.tp_basicsize: checked at start */
    uint16_t str_ascii;                        /* sizeof(PyASCIIObject): compact ASCII data */
    uint16_t str_compact;                      /* sizeof(PyCompactUnicodeObject): compact data */
} py_layout;

static const py_layout LAYOUTS[] = {
    {8, 24, NONE, 24, 32, 104, POS_LASTI_BYTES, ENTRY_ALL, NONE, 104, 112, 40, NONE, 176, 48, 72},
    {9, 24, NONE, 24, 32, 104, POS_LASTI_BYTES, ENTRY_ALL, NONE, 104, 112, 40, NONE, 176, 48, 72},
    {10, 24, NONE, 24, 32, 96, POS_LASTI_UNITS, ENTRY_ALL, NONE, 104, 112, 40, NONE, 176, 48, 72},
    {11, 56, 8, 48, 32, 56, POS_PTR, ENTRY_FLAG, 68, 112, 128, 72, 184, 184, 48, 72},
    {12, 56, 0, 8, 0, 56, POS_PTR, ENTRY_SHIM, 70, 112, 128, 68, 192, 192, 40, 56},
    {13, 72, NONE, 8, 0, 56, POS_PTR, ENTRY_SHIM, 70, 112, 128, 68, 200, 200, 40, 56},
};
#define FRAME_OWNED_BY_CSTACK 3 /* 3.12, 3.13 */

typedef struct py_api {
    int (*is_initialized)(void);
    void *(*this_tstate)(void);
    int (*addr2line)(void *code, int byte_offset);
    const void *code_type, *str_type;
    const py_layout *l;
    uintptr_t eval_start, eval_end; /* _PyEval_EvalFrameDefault's code */
} py_api;

/* One Python frame as read: the code object and the byte offset of its
 * current instruction; entry = the first frame of its C-level eval call. */
typedef struct py_raw {
    const char *code;
    int offset;
    bool entry;
} py_raw;

typedef struct py_entry {
    const void *code, *file, *name; /* code object and its two strings */
    int offset;
    uint32_t id;
} py_entry;

typedef struct py_text {
    uint32_t file, name, line; /* string ids and the line */
    uint32_t id;
} py_text;

static pthread_once_t py_once = PTHREAD_ONCE_INIT;
static _Atomic int py_mode;
static py_api api;
static pthread_mutex_t py_lock = PTHREAD_MUTEX_INITIALIZER;
static py_entry *entries; /* open addressing, guarded by py_lock */
static py_text *texts;
static size_t cap, used; /* both tables have cap slots */
static uint32_t next_id;
static char **labels; /* frame id - 1 -> "function (file:line)", for the OOM diagnosis */
static bool *own;     /* frame id - 1 -> the program's own code (vt_py_library_file) */
static uint32_t cap_labels;

static void *sym(const char *name)
{
    return vti_real_dlsym(RTLD_DEFAULT, name);
}

static bool eval_range(py_api *a)
{
    void *f = sym("_PyEval_EvalFrameDefault");
    Dl_info info;
    const ElfW(Sym) *s = NULL;
    if (!f || !dladdr1(f, &info, (void **)&s, RTLD_DL_SYMENT) || !s || !s->st_size)
        return false;
    a->eval_start = (uintptr_t)f;
    a->eval_end = (uintptr_t)f + s->st_size;
    return true;
}

/* 3.minor of the running interpreter: Py_Version (3.11+), else the
 * "3.10.13 (main, ...)" of Py_GetVersion(). 0 when unknown. */
static unsigned running_minor(void)
{
    const unsigned long *version = sym("Py_Version");
    const char *(*get)(void) = (const char *(*)(void))sym("Py_GetVersion");
    unsigned major = 0, minor = 0;
    if (version)
        return (*version >> 24) == 3 ? (unsigned)(*version >> 16 & 0xFF) : 0;
    if (get && sscanf(get(), "%u.%u", &major, &minor) == 2 && major == 3)
        return minor;
    return 0;
}

static const py_layout *layout_for(unsigned minor, const void *code_type)
{
    for (size_t i = 0; i < sizeof LAYOUTS / sizeof *LAYOUTS; i++) {
        const py_layout *l = &LAYOUTS[i];
        ssize_t size;
        memcpy(&size, (const char *)code_type + TP_BASICSIZE, sizeof size);
        if (l->minor == minor && size == l->co_size)
            return l;
    }
    return NULL;
}

static void py_init(void)
{
    py_api a = {0};
    int mode = MODE_NONE;
    if (!vti_settings_get()->python_frames) { /* native stacks only (comparison) */
        atomic_store(&py_mode, MODE_NONE);
        return;
    }
    a.is_initialized = (int (*)(void))sym("Py_IsInitialized");
    a.this_tstate = (void *(*)(void))sym("PyGILState_GetThisThreadState");
    a.addr2line = (int (*)(void *, int))sym("PyCode_Addr2Line");
    a.code_type = sym("PyCode_Type");
    a.str_type = sym("PyUnicode_Type");
    if (a.is_initialized && a.this_tstate && a.addr2line && a.code_type && a.str_type) {
        mode = MODE_UNSUPPORTED;
        a.l = layout_for(running_minor(), a.code_type);
        if (a.l && eval_range(&a))
            mode = MODE_READ;
    }
    api = a;
    atomic_store(&py_mode, mode);
}

static int mode_get(void)
{
    int m = atomic_load_explicit(&py_mode, memory_order_acquire);
    if (m != MODE_UNCHECKED)
        return m;
    pthread_once(&py_once, py_init);
    return atomic_load(&py_mode);
}

/* ---- reading the thread's frames ----------------------------------------- */

static const void *ptr_at(const void *base, size_t off)
{
    const void *p;
    memcpy(&p, (const char *)base + off, sizeof p);
    return p;
}

/* Byte offset of the frame's current instruction in its code, -1 when it
 * has not started (a frame just pushed). */
static int frame_offset(const py_layout *l, const char *fr, const char *code)
{
    int lasti;
    if (l->pos_kind == POS_PTR) {
        const char *pos = ptr_at(fr, l->fr_pos);
        return pos < code + l->co_code ? -1 : (int)(pos - (code + l->co_code));
    }
    memcpy(&lasti, fr + l->fr_pos, sizeof lasti);
    if (lasti < 0)
        return -1;
    return l->pos_kind == POS_LASTI_UNITS ? lasti * 2 : lasti;
}

/* The calling thread's frames, innermost first; -1 when it has no Python
 * thread state (or the interpreter is not running). */
static int walk(py_raw *out, int max)
{
    const py_layout *l = api.l;
    const char *ts, *fr;
    int n = 0;
    if (!api.is_initialized() || !(ts = api.this_tstate()))
        return -1;
    fr = ptr_at(ts, l->ts_frame);
    if (fr && l->cf_current != NONE)
        fr = ptr_at(fr, l->cf_current);
    for (; fr && n < max; fr = ptr_at(fr, l->fr_back)) {
        const char *code = ptr_at(fr, l->fr_code);
        int offset;
        if (l->entry_kind == ENTRY_SHIM && fr[l->fr_entry] == FRAME_OWNED_BY_CSTACK) {
            if (n)
                out[n - 1].entry = true; /* the first frame of that eval call */
            continue;
        }
        if (!code || ptr_at(code, OB_TYPE) != api.code_type ||
            (offset = frame_offset(l, fr, code)) < 0)
            continue; /* not code (3.13 executables), or not started */
        out[n].code = code;
        out[n].offset = offset;
        out[n].entry =
            l->entry_kind == ENTRY_ALL || (l->entry_kind == ENTRY_FLAG && fr[l->fr_entry]);
        n++;
    }
    return n;
}

/* ---- strings ------------------------------------------------------------ */

static size_t put_utf8(char *o, uint32_t c)
{
    if (c < 0x80) {
        o[0] = (char)c;
        return 1;
    }
    if (c < 0x800) {
        o[0] = (char)(0xC0 | c >> 6);
        o[1] = (char)(0x80 | (c & 0x3F));
        return 2;
    }
    if (c < 0x10000) {
        o[0] = (char)(0xE0 | c >> 12);
        o[1] = (char)(0x80 | (c >> 6 & 0x3F));
        o[2] = (char)(0x80 | (c & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | c >> 18);
    o[1] = (char)(0x80 | (c >> 12 & 0x3F));
    o[2] = (char)(0x80 | (c >> 6 & 0x3F));
    o[3] = (char)(0x80 | (c & 0x3F));
    return 4;
}

/* Text of a compact str object (PEP 393 layout) as UTF-8 into buf
 * (len bytes, cut at a character boundary); "?" for anything else. Reads
 * only: never calls PyUnicode_AsUTF8, which may allocate. */
static void str_text(const char *o, char *buf, size_t len)
{
    uint32_t state;
    ssize_t n;
    size_t k = 0;
    snprintf(buf, len, "?");
    if (!o || ptr_at(o, OB_TYPE) != api.str_type)
        return;
    memcpy(&state, o + STR_STATE, sizeof state);
    memcpy(&n, o + STR_LENGTH, sizeof n);
    if (!(state >> 5 & 1) || n < 0) /* not compact */
        return;
    unsigned kind = state >> 2 & 7, ascii = state >> 6 & 1;
    const char *data = o + (ascii ? api.l->str_ascii : api.l->str_compact);
    if (ascii)
        kind = 1;
    for (ssize_t i = 0; i < n && k + 5 < len; i++) {
        uint32_t c = kind == 1   ? (uint8_t)data[i]
                     : kind == 2 ? ((const uint16_t *)data)[i]
                                 : ((const uint32_t *)data)[i];
        k += put_utf8(buf + k, c);
    }
    buf[k] = '\0';
}

/* ---- the frame cache ---------------------------------------------------- */

static size_t mix(uint64_t a, uint64_t b)
{
    uint64_t h = (a ^ (b << 32 | b >> 32)) * 0x9E3779B97F4A7C15ull;
    return (size_t)(h ^ (h >> 29));
}

static int tables_grow(void)
{
    size_t ncap = cap ? cap * 2 : 1024;
    py_entry *e = calloc(ncap, sizeof *e);
    py_text *x = calloc(ncap, sizeof *x);
    if (!e || !x) {
        free(e);
        free(x);
        return -1;
    }
    for (size_t i = 0; i < cap; i++) {
        if (entries[i].id) {
            size_t j = mix((uintptr_t)entries[i].code, (uint64_t)entries[i].offset) & (ncap - 1);
            while (e[j].id)
                j = (j + 1) & (ncap - 1);
            e[j] = entries[i];
        }
        if (texts[i].id) {
            size_t j =
                mix((uint64_t)texts[i].file << 32 | texts[i].name, texts[i].line) & (ncap - 1);
            while (x[j].id)
                j = (j + 1) & (ncap - 1);
            x[j] = texts[i];
        }
    }
    free(entries);
    free(texts);
    entries = e;
    texts = x;
    cap = ncap;
    return 0;
}

/* Keep "name (file:line)" of frame id (best effort: no label on OOM). */
static void label_keep(uint32_t id, const char *file, const char *name, uint32_t line)
{
    const char *base = strrchr(file, '/');
    if (id > cap_labels) {
        uint32_t n = cap_labels ? cap_labels * 2 : 256;
        char **l = realloc(labels, n * sizeof *l);
        if (l)
            labels = l;
        bool *o = l ? realloc(own, n * sizeof *o) : NULL;
        if (!o)
            return;
        own = o;
        memset(l + cap_labels, 0, (n - cap_labels) * sizeof *l);
        memset(o + cap_labels, 0, (n - cap_labels) * sizeof *o);
        cap_labels = n;
    }
    own[id - 1] = !vt_py_library_file(file);
    if (asprintf(&labels[id - 1], "%s (%s:%u)", name, base ? base + 1 : file, line) < 0)
        labels[id - 1] = NULL;
}

/* The frame id of (file, name, line), emitting VT_REC_PY_FRAME when new. */
static uint32_t text_id(vti_thread *t, uint32_t file, uint32_t name, uint32_t line)
{
    size_t i = mix((uint64_t)file << 32 | name, line) & (cap - 1);
    vt_event ev = {.type = VT_REC_PY_FRAME};
    for (; texts[i].id; i = (i + 1) & (cap - 1))
        if (texts[i].file == file && texts[i].name == name && texts[i].line == line)
            return texts[i].id;
    texts[i] = (py_text){file, name, line, ++next_id};
    ev.u.py_frame.id = next_id;
    ev.u.py_frame.function = name;
    ev.u.py_frame.file = file;
    ev.u.py_frame.line = line;
    vti_write(t, &ev);
    return next_id;
}

/* A cache miss: name the frame (strings interned, line from the code
 * object's line table). */
static uint32_t frame_resolve(vti_thread *t, const py_raw *r)
{
    char file[NAME_MAX_LEN], name[NAME_MAX_LEN];
    int line = api.addr2line((void *)r->code, r->offset);
    if (line < 0)
        memcpy(&line, r->code + api.l->co_firstlineno, sizeof line);
    str_text(ptr_at(r->code, api.l->co_file), file, sizeof file);
    str_text(ptr_at(r->code, api.l->co_name), name, sizeof name);
    uint32_t before = next_id, l = (uint32_t)(line > 0 ? line : 0);
    uint32_t id = text_id(t, vti_intern(t, file), vti_intern(t, name), l);
    if (id > before)
        label_keep(id, file, name, l);
    return id;
}

/* Frame id of r under py_lock; 0 when the cache is full. A code object
 * freed and another allocated at its address is told apart by its file and
 * name objects. */
static uint32_t frame_id(vti_thread *t, const py_raw *r)
{
    const void *file = ptr_at(r->code, api.l->co_file), *name = ptr_at(r->code, api.l->co_name);
    size_t i;
    if ((!cap || (used + 1) * 2 > cap) && (used >= MAX_ENTRIES || tables_grow() != 0))
        return 0;
    for (i = mix((uintptr_t)r->code, (uint64_t)r->offset) & (cap - 1); entries[i].id;
         i = (i + 1) & (cap - 1)) {
        const py_entry *e = &entries[i];
        if (e->code == r->code && e->offset == r->offset && e->file == file && e->name == name)
            return e->id;
    }
    entries[i] = (py_entry){r->code, file, name, r->offset, 0};
    entries[i].id = frame_resolve(t, r);
    used++;
    return entries[i].id;
}

/* ---- merging ------------------------------------------------------------ */

/* The markers put where a stack's outer frames were not recorded
 * (trace/vtrace.h, VT_CUT_FRAME_PREFIX): more than VTI_MAX_STACK_DEPTH
 * frames in all (a merged stack), more than MAX_PY Python frames, more than
 * VRAMTRACE_STACK_DEPTH native frames (a stack without Python; in a stack
 * with Python, between the native frames kept and the Python frames whose
 * eval frames were cut). */
enum cut_kind { CUT_ALL, CUT_PYTHON, CUT_NATIVE, CUT_NATIVE_PY };
static uint32_t cut_ids[4]; /* the markers' frame ids once made, under py_lock */

/* The frame id (under py_lock) of marker kind, the tables made if none
 * were; 0 when they cannot be. */
static uint32_t cut_marker(vti_thread *t, enum cut_kind kind)
{
    static const int limit[] = {VTI_MAX_STACK_DEPTH, MAX_PY, 0, 0};
    static const char *const what[] = {"", "Python ", "", "native "};
    char why[80];
    if (!cap && tables_grow() != 0)
        return 0;
    if (!cut_ids[kind]) {
        int n = limit[kind] ? limit[kind] : vti_settings_get()->stack_depth;
        snprintf(why, sizeof why, "%s%sframes not recorded: more than %d]", VT_CUT_FRAME_PREFIX,
                 what[kind], n);
        cut_ids[kind] = text_id(t, vti_intern(t, ""), vti_intern(t, why), 0);
        label_keep(cut_ids[kind], "", why, 0);
    }
    return cut_ids[kind];
}

static bool is_eval(uintptr_t ret)
{
    return ret - 1 >= api.eval_start && ret - 1 < api.eval_end;
}

/* Python frames p.. of the next eval call (up to its entry frame, or all
 * that remain for the outermost eval call) into out; returns the new p. */
static int take_group(const uint64_t *ids, const py_raw *raw, int np, int p, bool all,
                      uint64_t *out, int *k, int max)
{
    while (p < np) {
        bool entry = raw[p].entry;
        if (*k < max)
            out[(*k)++] = ids[p];
        p++;
        if (entry && !all)
            break;
    }
    return p;
}

bool vti_py_none(void)
{
    return mode_get() == MODE_NONE;
}

/* The k merged frames (innermost first) cut to max, with the marker
 * inserted at index at (py_cut: where the Python frames read end) or, for a
 * cut by max, as the outermost frame kept; returns the new count. */
static int mark_cut(vti_thread *t, uint64_t *tmp, int k, int at, bool py_cut, int max)
{
    uint32_t py, all;
    pthread_mutex_lock(&py_lock);
    if (py_cut && (py = cut_marker(t, CUT_PYTHON)) != 0) {
        memmove(tmp + at + 1, tmp + at, (size_t)(k - at) * sizeof *tmp);
        tmp[at] = VTI_PY_NODE | py;
        k++;
    }
    if (k > max) {
        k = max;
        if ((all = cut_marker(t, CUT_ALL)) != 0)
            tmp[k - 1] = VTI_PY_NODE | all;
    }
    pthread_mutex_unlock(&py_lock);
    return k;
}

/* cut_marker taken under py_lock. */
static uint32_t cut_marker_locked(vti_thread *t, enum cut_kind kind)
{
    pthread_mutex_lock(&py_lock);
    uint32_t id = cut_marker(t, kind);
    pthread_mutex_unlock(&py_lock);
    return id;
}

int vti_py_merge(vti_thread *t, void *const *native, int n, bool native_cut, uint64_t *out, int max)
{
    py_raw raw[MAX_PY + 1];
    uint64_t ids[MAX_PY], tmp[VTI_MAX_STACK_DEPTH + MAX_PY + 2];
    int mode = mode_get(), np = -1, k = 0, p = 0, evals = 0, seen = 0, at = -1;
    if (mode == MODE_NONE)
        return -1;
    if (mode == MODE_READ)
        np = walk(raw, MAX_PY + 1);
    bool py_cut = np > MAX_PY;
    np = py_cut ? MAX_PY : np;
    if (np > 0) {
        pthread_mutex_lock(&py_lock);
        for (int i = 0; i < np; i++)
            ids[i] = VTI_PY_NODE | frame_id(t, &raw[i]);
        pthread_mutex_unlock(&py_lock);
    }
    for (int i = 0; i < n; i++)
        evals += is_eval((uintptr_t)native[i]);
    for (int i = 0; i < n; i++) {
        if (np > 0 && is_eval((uintptr_t)native[i]))
            p = take_group(ids, raw, np, p, ++seen == evals, tmp, &k, (int)(sizeof tmp / 8));
        if (at < 0 && p == np)
            at = k; /* just outside the outermost Python frame read */
        tmp[k++] = (uint64_t)(uintptr_t)native[i] - 1;
    }
    uint32_t cut = native_cut ? cut_marker_locked(t, CUT_NATIVE_PY) : 0;
    if (cut) /* the native frames between those kept and the Python frames left */
        tmp[k++] = VTI_PY_NODE | cut;
    if (np > 0) /* no eval frame kept (cut by the depth): at the root */
        p = take_group(ids, raw, np, p, true, tmp, &k, (int)(sizeof tmp / 8));
    else
        tmp[k++] = VTI_PY_NODE; /* frame 0: unknown */
    if (py_cut || k > max)
        k = mark_cut(t, tmp, k, py_cut && at >= 0 ? at : k, py_cut, max);
    for (int i = 0; i < k; i++)
        out[i] = tmp[k - 1 - i];
    return k;
}

int vti_native_cut(vti_thread *t, void *const *native, int n, uint64_t *out)
{
    uint32_t marker = n > 0 ? cut_marker_locked(t, CUT_NATIVE) : 0;
    if (!marker)
        return -1;
    out[0] = VTI_PY_NODE | marker;
    for (int i = 1; i < n; i++)
        out[i] = (uint64_t)(uintptr_t)native[n - 1 - i] - 1;
    return n;
}

bool vti_py_own(uint64_t node)
{
    uint32_t id = (uint32_t)node;
    bool yes;
    if (!(node & VTI_PY_NODE))
        return false;
    pthread_mutex_lock(&py_lock);
    yes = id && id <= cap_labels && labels[id - 1] && own[id - 1];
    pthread_mutex_unlock(&py_lock);
    return yes;
}

bool vti_py_label(uint64_t node, char *out, size_t len)
{
    uint32_t id = (uint32_t)node;
    bool ok;
    if (!(node & VTI_PY_NODE))
        return false;
    pthread_mutex_lock(&py_lock);
    ok = id && id <= cap_labels && labels[id - 1];
    snprintf(out, len, "%s", ok ? labels[id - 1] : "[Python frames unknown]");
    pthread_mutex_unlock(&py_lock);
    return id == 0 || ok;
}

void vti_py_fork_reset(void)
{
    entries = NULL; /* the parent's tables are left, not freed */
    texts = NULL;
    cap = used = 0;
    next_id = 0;
    labels = NULL;
    own = NULL;
    cap_labels = 0;
    memset(cut_ids, 0, sizeof cut_ids);
    pthread_mutex_init(&py_lock, NULL);
}
