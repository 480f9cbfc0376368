/* util.c: arena, checked allocation, hash map, sizes, escaping. */
#include "internal.h"
#include "vsize.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- checked allocation ------------------------------------------------- */

static void *oom_check(void *p, size_t bytes)
{
    if (!p && bytes) {
        fprintf(stderr, "vramtrace: out of memory (%zu bytes)\n", bytes);
        abort();
    }
    return p;
}

void *vr_xmalloc(size_t bytes)
{
    return oom_check(malloc(bytes ? bytes : 1), bytes);
}

void *vr_xcalloc(size_t n, size_t size)
{
    return oom_check(calloc(n ? n : 1, size ? size : 1), n * size);
}

void *vr_xrealloc(void *p, size_t bytes)
{
    return oom_check(realloc(p, bytes ? bytes : 1), bytes);
}

/* ---- arena -------------------------------------------------------------- */

struct vr_arena {
    struct chunk {
        struct chunk *next;
        size_t used, cap;
        _Alignas(16) unsigned char data[];
    } * head;
};

vr_arena *vr_arena_new(void)
{
    return vr_xcalloc(1, sizeof(vr_arena));
}

void vr_arena_free(vr_arena *a)
{
    if (!a)
        return;
    for (struct chunk *c = a->head, *n; c; c = n) {
        n = c->next;
        free(c);
    }
    free(a);
}

void *vr_alloc(vr_arena *a, size_t bytes)
{
    bytes = (bytes + 15) & ~(size_t)15;
    if (!a->head || a->head->cap - a->head->used < bytes) {
        size_t cap = bytes > 65536 ? bytes : 65536;
        struct chunk *c = vr_xmalloc(sizeof(*c) + cap);
        c->used = 0;
        c->cap = cap;
        c->next = a->head;
        a->head = c;
    }
    void *p = a->head->data + a->head->used;
    a->head->used += bytes;
    memset(p, 0, bytes);
    return p;
}

char *vr_strdup(vr_arena *a, const char *s)
{
    if (!s)
        s = "";
    size_t n = strlen(s) + 1;
    char *d = vr_alloc(a, n);
    memcpy(d, s, n);
    return d;
}

char *vr_sprintf(vr_arena *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *d = vr_alloc(a, (size_t)(n < 0 ? 0 : n) + 1);
    va_start(ap, fmt);
    vsnprintf(d, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return d;
}

/* ---- hash map ----------------------------------------------------------- */

static size_t hash64(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    k *= 0xc4ceb9fe1a85ec53ull;
    k ^= k >> 33;
    return (size_t)k;
}

void vr_map_init(vr_map *m, size_t esize)
{
    memset(m, 0, sizeof(*m));
    m->esize = esize;
}

void vr_map_destroy(vr_map *m)
{
    free(m->slots);
    free(m->used);
    memset(m, 0, sizeof(*m));
}

static inline void *slot(const vr_map *m, size_t i)
{
    return m->slots + i * m->esize;
}

static inline uint64_t slot_key(const vr_map *m, size_t i)
{
    uint64_t k;
    memcpy(&k, slot(m, i), sizeof(k));
    return k;
}

void *vr_map_get(const vr_map *m, uint64_t key)
{
    if (!m->cap)
        return NULL;
    size_t mask = m->cap - 1;
    for (size_t i = hash64(key) & mask; m->used[i]; i = (i + 1) & mask)
        if (slot_key(m, i) == key)
            return slot(m, i);
    return NULL;
}

static void map_grow(vr_map *m)
{
    vr_map old = *m;
    m->cap = old.cap ? old.cap * 2 : 64;
    m->slots = vr_xmalloc(m->cap * m->esize);
    m->used = vr_xcalloc(m->cap, 1);
    m->len = 0;
    for (size_t i = 0; i < old.cap; i++) {
        if (!old.used[i])
            continue;
        size_t mask = m->cap - 1, j = hash64(slot_key(&old, i)) & mask;
        while (m->used[j])
            j = (j + 1) & mask;
        memcpy(slot(m, j), slot(&old, i), m->esize);
        m->used[j] = 1;
        m->len++;
    }
    free(old.slots);
    free(old.used);
}

void *vr_map_put(vr_map *m, uint64_t key, bool *created)
{
    void *e = vr_map_get(m, key);
    if (created)
        *created = !e;
    if (e)
        return e;
    if ((m->len + 1) * 4 > m->cap * 3)
        map_grow(m);
    size_t mask = m->cap - 1, i = hash64(key) & mask;
    while (m->used[i])
        i = (i + 1) & mask;
    memset(slot(m, i), 0, m->esize);
    memcpy(slot(m, i), &key, sizeof(key));
    m->used[i] = 1;
    m->len++;
    return slot(m, i);
}

bool vr_map_del(vr_map *m, uint64_t key)
{
    uint8_t *e = vr_map_get(m, key);
    if (!e)
        return false;
    size_t mask = m->cap - 1, i = (size_t)(e - m->slots) / m->esize;
    m->used[i] = 0;
    m->len--;
    /* backward-shift: move later entries of the cluster into the hole */
    for (size_t j = (i + 1) & mask; m->used[j]; j = (j + 1) & mask) {
        size_t home = hash64(slot_key(m, j)) & mask;
        bool movable = (j > i) ? (home <= i || home > j) : (home <= i && home > j);
        if (!movable)
            continue;
        memcpy(slot(m, i), slot(m, j), m->esize);
        m->used[i] = 1;
        m->used[j] = 0;
        i = j;
    }
    return true;
}

void *vr_map_next(const vr_map *m, size_t *i)
{
    for (; *i < m->cap; (*i)++)
        if (m->used[*i])
            return slot(m, (*i)++);
    return NULL;
}

/* ---- sizes -------------------------------------------------------------- */

const char *vr_format_size(uint64_t bytes, char *buf, size_t len)
{
    return vsize_format(bytes, buf, len);
}

const char *vr_format_time(uint64_t ns, char *buf, size_t len)
{
    if (ns < 1000)
        snprintf(buf, len, "%llu ns", (unsigned long long)ns);
    else if (ns < 1000000)
        snprintf(buf, len, "%.2f us", (double)ns / 1e3);
    else if (ns < 1000000000)
        snprintf(buf, len, "%.2f ms", (double)ns / 1e6);
    else
        snprintf(buf, len, "%.3f s", (double)ns / 1e9);
    return buf;
}

/* ---- escaping ------------------------------------------------------------ */

/* Length (2..4) of the well-formed UTF-8 sequence starting with the byte
 * >= 0x80 at p, or 0 when it is not one (RFC 3629 section 4: no overlongs,
 * no surrogates, nothing above U+10FFFF). */
static int utf8_seq_len(const unsigned char *p)
{
    unsigned char c = p[0], lo = 0x80, hi = 0xbf;
    int n = c >= 0xc2 && c <= 0xdf   ? 2
            : c >= 0xe0 && c <= 0xef ? 3
            : c >= 0xf0 && c <= 0xf4 ? 4
                                     : 0;
    if (c == 0xe0)
        lo = 0xa0;
    else if (c == 0xed)
        hi = 0x9f;
    else if (c == 0xf0)
        lo = 0x90;
    else if (c == 0xf4)
        hi = 0x8f;
    for (int i = 1; i < n; i++, lo = 0x80, hi = 0xbf)
        if (p[i] < lo || p[i] > hi)
            return 0;
    return n;
}

int vr_utf8_len(const unsigned char *p)
{
    return utf8_seq_len(p);
}

/* Copy the UTF-8 sequence at *p to f, or write bad for a byte that does not
 * start one; advances *p to the last byte consumed. */
static void put_utf8(FILE *f, const unsigned char **p, const char *bad)
{
    int n = utf8_seq_len(*p);
    if (!n) {
        fputs(bad, f);
        return;
    }
    fwrite(*p, 1, (size_t)n, f);
    *p += n - 1;
}

void vr_json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        switch (*p) {
        case '"':
            fputs("\\\"", f);
            break;
        case '\\':
            fputs("\\\\", f);
            break;
        case '\n':
            fputs("\\n", f);
            break;
        case '\r':
            fputs("\\r", f);
            break;
        case '\t':
            fputs("\\t", f);
            break;
        case '<': /* safe to embed in HTML <script> blocks */
            fputs("\\u003c", f);
            break;
        default:
            if (*p < 0x20 || *p == 0x7f)
                fprintf(f, "\\u%04x", *p);
            else if (*p >= 0x80)
                put_utf8(f, &p, "\\ufffd");
            else
                fputc(*p, f);
        }
    }
    fputc('"', f);
}

void vr_html_str(FILE *f, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        switch (*p) {
        case '<':
            fputs("&lt;", f);
            break;
        case '>':
            fputs("&gt;", f);
            break;
        case '&':
            fputs("&amp;", f);
            break;
        case '"':
            fputs("&quot;", f);
            break;
        case '\'':
            fputs("&#39;", f);
            break;
        default:
            if (*p < 0x20 && *p != '\n' && *p != '\t')
                fputc('?', f);
            else if (*p >= 0x80)
                put_utf8(f, &p, "&#xfffd;");
            else
                fputc(*p, f);
        }
    }
}

const char *vr_basename(const char *path)
{
    if (!path)
        return "";
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

const char *vr_frame_label(const vr_frame *fr, char *buf, size_t len)
{
    if (strcmp(fr->function, "??") != 0)
        return fr->function;
    if (fr->module[0])
        snprintf(buf, len, "%s+0x%llx", vr_basename(fr->module), (unsigned long long)fr->ip);
    else
        snprintf(buf, len, "0x%llx", (unsigned long long)fr->ip);
    return buf;
}

bool vr_same_frame(const vr_frame *a, const vr_frame *b)
{
    return a->line == b->line && !strcmp(a->function, b->function) && !strcmp(a->file, b->file);
}

size_t vr_shared_frames(const vr_stack *a, const vr_stack *b, size_t limit,
                        bool (*same)(const vr_frame *, const vr_frame *))
{
    size_t k = 0;
    while (k < limit && k < a->n && k < b->n && same(&a->frames[k], &b->frames[k]))
        k++;
    return k;
}

size_t vr_top(const vr_options *opt)
{
    return opt && opt->top ? opt->top : 10;
}

size_t vr_fatal_oom(const vr_report *r)
{
    for (size_t i = r->nooms; i-- > 0;)
        if (!r->ooms[i].recovered)
            return i;
    return SIZE_MAX;
}

size_t vr_oom_shown(const vr_report *r, size_t fatal, size_t k, size_t top)
{
    if (fatal != SIZE_MAX) {
        if (k == 0)
            return fatal;
        if (k >= top)
            return SIZE_MAX;
        k = k - 1 < fatal ? k - 1 : k; /* the k-th failure after the fatal one, skipping it */
    } else if (k >= top) {
        return SIZE_MAX;
    }
    return k < r->nooms ? k : SIZE_MAX;
}

const char *vr_verdict_name(enum vr_verdict v)
{
    switch (v) {
    case VR_VERDICT_CAPACITY:
        return "capacity";
    case VR_VERDICT_LEAK:
        return "leak";
    case VR_VERDICT_FRAGMENTATION:
        return "fragmentation";
    case VR_VERDICT_EXTERNAL:
        return "external";
    }
    return "unknown";
}
