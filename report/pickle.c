/* pickle.c: a small streaming writer of Python's pickle protocol 2.
 *
 * Opcodes and their encodings as CPython documents them in Lib/pickletools.py
 * (and implements in Lib/pickle.py):
 *   PROTO 0x80 n        protocol version (2: readable by every Python 3)
 *   EMPTY_DICT '}'      EMPTY_LIST ']'      MARK '('
 *   SETITEMS 'u'        add the key/value pairs above the mark to the dict below it
 *   APPENDS 'e'         add the items above the mark to the list below it
 *   BININT 'J' i32le    LONG1 0x8a n bytes  little-endian two's complement
 *   BINUNICODE 'X' u32le len + UTF-8 bytes
 *   TUPLE2 0x86         LONG_BINPUT 'r' u32le    LONG_BINGET 'j' u32le
 *   STOP '.'
 * Only what the memory snapshot (memviz.c) needs; no framing (protocol 4).
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

static void u32le(FILE *f, uint32_t v)
{
    unsigned char b[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
                          (unsigned char)(v >> 24)};
    fwrite(b, 1, 4, f);
}

void vr_pk_begin(vr_pickle *p, FILE *f)
{
    p->f = f;
    p->memo = 0;
    fputc(0x80, f);
    fputc(2, f);
}

void vr_pk_end(vr_pickle *p)
{
    fputc('.', p->f);
}

void vr_pk_dict(vr_pickle *p)
{
    fputc('}', p->f);
}

void vr_pk_list(vr_pickle *p)
{
    fputc(']', p->f);
}

void vr_pk_mark(vr_pickle *p)
{
    fputc('(', p->f);
}

void vr_pk_setitems(vr_pickle *p)
{
    fputc('u', p->f);
}

void vr_pk_appends(vr_pickle *p)
{
    fputc('e', p->f);
}

void vr_pk_tuple2(vr_pickle *p)
{
    fputc(0x86, p->f);
}

/* LONG1 of the n low bytes of v (two's complement), n <= 9. */
static void long1(FILE *f, uint64_t v, bool negative, int n)
{
    fputc(0x8a, f);
    fputc(n, f);
    for (int i = 0; i < n; i++)
        fputc(i < 8 ? (int)((v >> (8 * i)) & 0xff) : negative ? 0xff : 0, f);
}

void vr_pk_int(vr_pickle *p, int64_t v)
{
    if (v >= INT32_MIN && v <= INT32_MAX) {
        fputc('J', p->f);
        u32le(p->f, (uint32_t)(int32_t)v);
        return;
    }
    long1(p->f, (uint64_t)v, v < 0, 8);
}

void vr_pk_uint(vr_pickle *p, uint64_t v)
{
    if (v <= INT64_MAX) {
        vr_pk_int(p, (int64_t)v);
        return;
    }
    long1(p->f, v, false, 9); /* a 0 high byte keeps it positive */
}

void vr_pk_str(vr_pickle *p, const char *s)
{
    size_t n = strlen(s), len = 0;
    unsigned char *buf = vr_xmalloc(3 * n + 1); /* each bad byte becomes 3 (U+FFFD) */
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        int k = *c < 0x80 ? 1 : vr_utf8_len(c);
        if (!k) {
            memcpy(buf + len, "\xef\xbf\xbd", 3);
            len += 3;
            continue;
        }
        memcpy(buf + len, c, (size_t)k);
        len += (size_t)k;
        c += k - 1;
    }
    fputc('X', p->f);
    u32le(p->f, (uint32_t)len);
    fwrite(buf, 1, len, p->f);
    free(buf);
}

uint32_t vr_pk_put(vr_pickle *p)
{
    fputc('r', p->f);
    u32le(p->f, p->memo);
    return p->memo++;
}

void vr_pk_get(vr_pickle *p, uint32_t memo)
{
    fputc('j', p->f);
    u32le(p->f, memo);
}
