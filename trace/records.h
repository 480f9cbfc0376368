/* records.h: internal to trace/. The byte-level encoding of the .vtrace
 * format (varints, header block, chunk headers, records), shared by the
 * writer (writer.c) and the reader (reader.c). docs/trace.md describes the
 * same bytes in prose; records.c is the one definition. */
#ifndef VRAMTRACE_TRACE_RECORDS_H
#define VRAMTRACE_TRACE_RECORDS_H

#include "vtrace.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Longest LEB128 encoding of a 64-bit value (bytes). */
#define VT_VARINT_MAX 10
/* Upper bound of a record's encoding without its strings (bytes). */
#define VT_REC_FIXED_MAX 96
/* Upper bound of one record (bytes): what a thread buffer must always hold.
 * A record has at most one string (str) and one identifier (id). */
#define VT_REC_MAX                                                                                 \
    (VT_REC_FIXED_MAX + VT_VARINT_MAX + VT_MAX_STRING_LEN + VT_VARINT_MAX + VT_MAX_ID_LEN)
/* Upper bound of a chunk header (thread id, base ts, payload length). */
#define VT_CHUNK_HDR_MAX (3 * VT_VARINT_MAX)
/* Fixed file prefix: magic, u32 version, u32 header_len. */
#define VT_FILE_PREFIX_LEN (VT_MAGIC_LEN + 8)
/* Largest header block a reader accepts (bytes). */
#define VT_MAX_HEADER_LEN (2u << 20)
/* Largest decompressed batch a reader accepts; larger is corruption. */
#define VT_MAX_BATCH_BYTES (256u << 20)
/* Most chunks in one batch a reader accepts. */
#define VT_MAX_CHUNKS 65536u
/* Most bytes a writer puts in one frame (chunk headers and records): half
 * the reader's batch cap; a larger batch is split (writer.c, recover.c). */
#define VT_FRAME_CONTENT_MAX (VT_MAX_BATCH_BYTES / 2)

/* Delta state of one chunk: timestamps and addresses are zigzag deltas from
 * the previous record of the same chunk. */
typedef struct vt_delta {
    uint64_t prev_ts;   /* starts at the chunk's base_ts */
    uint64_t prev_addr; /* starts at 0 */
    uint64_t base_ts;   /* writer: ts of the chunk's first timestamped record */
    int has_ts;         /* writer: base_ts is set */
    uint32_t version;   /* decoder: the file's format version, whose records lack
                         * the fields added later; 0 = VT_FORMAT_VERSION */
    bool pext;          /* decoder: vt_rec_decode_many reads varints with PEXT
                         * (set only where vt_cpu_fast_pext() is true) */
} vt_delta;

/* A string inside a decoded record: points into the batch, not terminated;
 * off: the offset of its field in vt_event (0: the record has none). */
typedef struct vt_span {
    const uint8_t *p;
    size_t len;
    size_t off;
} vt_span;

/* The spans of a decoded record, indexed by field kind: its string (str) and
 * its identifier (id); the decoders take an array of VT_SPANS. */
enum { VT_SPAN_STR = 0, VT_SPAN_ID = 1, VT_SPANS = 2 };

/* ---- LEB128 varints and zigzag (protobuf's encodings) -------------------- */

static inline size_t vt_put_varint(uint8_t *out, uint64_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        out[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    out[n++] = (uint8_t)v;
    return n;
}

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define VT_VARINT_WORD 1
/* A varint of at most 8 bytes at q, with 8 bytes readable there, read as one
 * little-endian word: its end is the first byte without the continuation
 * bit (the lowest bit of stops; stops ^ (stops - 1) masks the bytes through
 * it), its 7-bit groups are packed pairwise in three mask-and-shift steps
 * (no branch on the length). Its length (1..8), 0 when it is longer. */
static inline size_t vt_varint_word(const uint8_t *q, uint64_t *v)
{
    uint64_t w;
    memcpy(&w, q, sizeof w);
    uint64_t stops = ~w & 0x8080808080808080ull;
    if (!stops)
        return 0;
    unsigned bits = (unsigned)__builtin_ctzll(stops) + 1; /* through the last byte */
    w &= (stops ^ (stops - 1)) & 0x7f7f7f7f7f7f7f7full;
    w = (w & 0x007f007f007f007full) | (w & 0x7f007f007f007f00ull) >> 1;
    w = (w & 0x00003fff00003fffull) | (w & 0x3fff00003fff0000ull) >> 2;
    w = (w & 0x000000000fffffffull) | (w & 0x0fffffff00000000ull) >> 4;
    *v = w;
    return bits / 8;
}
#endif

#if defined(VT_VARINT_WORD) && defined(__x86_64__)
#define VT_VARINT_PEXT 1
/* vt_varint_word with the 7-bit groups gathered by one BMI2 PEXT (parallel
 * bits extract) instead of three mask-and-shift steps: about 19
 * instructions less per varint of two bytes or more. Inline assembly, so
 * that it compiles without -mbmi2; run it only where vt_cpu_fast_pext()
 * is true (an illegal instruction elsewhere). */
static inline size_t vt_varint_word_pext(const uint8_t *q, uint64_t *v)
{
    uint64_t w, r;
    memcpy(&w, q, sizeof w);
    uint64_t stops = ~w & 0x8080808080808080ull;
    if (!stops)
        return 0;
    uint64_t groups = (stops ^ (stops - 1)) & 0x7f7f7f7f7f7f7f7full;
    __asm__("pextq %2, %1, %0" : "=r"(r) : "r"(w), "r"(groups));
    *v = r;
    return ((unsigned)__builtin_ctzll(stops) + 1) / 8;
}
#endif

/* True where PEXT exists and is fast: Intel with BMI2, AMD from Zen 3
 * (family 19h) on. Before Zen 3 AMD ran it in microcode, up to about 300
 * cycles against 3 (the rule dynarmic's x64 backend dispatches BMI2 code
 * by), far slower than the mask-and-shift steps; other vendors (Hygon's
 * Zen 1) get the steps too. Asks the CPU (cpuid: a trap to the hypervisor
 * in a virtual machine) on every call: call it once, when a reader opens.
 * False on other architectures. */
bool vt_cpu_fast_pext(void);

/* Decode one varint from [*p, end). 0 on success, -1 if it runs past end or
 * is longer than 10 bytes or overflows 64 bits. With 10 bytes left (all but
 * a chunk's last few records), one of up to 8 bytes is read as one word
 * (vt_varint_word). */
static inline int vt_get_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
    uint64_t r = 0;
    const uint8_t *q = *p;
#ifdef VT_VARINT_WORD
    if (end - q >= VT_VARINT_MAX) {
        size_t n = vt_varint_word(q, v);
        if (n) {
            *p = q + n;
            return 0;
        }
    }
#endif
    for (unsigned shift = 0; shift < 64; shift += 7) {
        if (q >= end)
            return -1;
        uint8_t b = *q++;
        if (shift == 63 && b > 1)
            return -1;
        r |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *p = q;
            *v = r;
            return 0;
        }
    }
    return -1;
}

static inline uint64_t vt_zigzag(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t vt_unzigzag(uint64_t v)
{
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/* ---- Records -------------------------------------------------------------- */

/* Merge rank at equal timestamps: 0 for releases (free, unregister, reset),
 * 1 for everything else. */
static inline int vt_rec_rank(enum vt_rec rec)
{
    switch (rec) {
    case VT_REC_FREE:
    case VT_REC_HEAP_UNREGISTER:
    case VT_REC_HEAP_RESET:
    case VT_REC_REGION_UNREGISTER:
    case VT_REC_VMM_UNMAP:
        return 0;
    default:
        return 1;
    }
}
/* Bytes ev's strings take beyond VT_REC_FIXED_MAX + VT_VARINT_MAX: the
 * length its string will be written with (clamped to VT_MAX_STRING_LEN),
 * plus VT_VARINT_MAX and the length of its identifier (clamped to
 * VT_MAX_ID_LEN) when it has one; 0 when the record has neither. */
size_t vt_rec_string_len(const vt_event *ev);
/* Encode ev at out (room for VT_REC_FIXED_MAX + VT_VARINT_MAX +
 * vt_rec_string_len(ev) bytes), updating the chunk's delta state. Returns the
 * bytes written, 0 if ev->type is not a valid token. */
size_t vt_rec_encode(uint8_t *out, vt_delta *d, const vt_event *ev);
/* vt_rec_encode through the FIELDS table's generic loop for every type (no
 * specialised encoder): the same bytes and delta state, by the test that
 * compares the two (tests/trace/test_format.c). */
size_t vt_rec_encode_generic(uint8_t *out, vt_delta *d, const vt_event *ev);
/* Decode one record from [*p, end) into ev (zeroed first; its string and
 * identifier fields, if any, are left NULL and returned in str[VT_SPAN_STR]
 * and str[VT_SPAN_ID], an array of VT_SPANS; str[VT_SPAN_ID] is meaningful
 * only when str[VT_SPAN_STR].off is set). Fields newer than d->version
 * are absent (left 0). Advances *p. 0 on success, -1 with a message in err
 * on a bad token, malformed varint, field out of range or string past the
 * end. */
int vt_rec_decode(const uint8_t **p, const uint8_t *end, vt_delta *d, vt_event *ev, vt_span *str,
                  char *err, size_t errlen);
/* Decode the records of [*p, end) into evs, each as vt_rec_decode does with
 * thread_id set to tid, up to n of them, stopping after one with a string
 * (its spans in str[VT_SPANS]; str[VT_SPAN_STR].off is 0 when the last
 * record decoded has none).
 * Returns how many. On a bad record *bad is set, the message is in err and
 * *p is left at the record's start. One call for a run of records: the
 * reader's loop over a lone chunk. */
size_t vt_rec_decode_many(const uint8_t **p, const uint8_t *end, vt_delta *d, uint32_t tid,
                          vt_event *evs, size_t n, vt_span *str, bool *bad, char *err,
                          size_t errlen);
/* Point the string field of ev (if its type has one) at s. */
void vt_rec_set_string(vt_event *ev, const char *s);

/* ---- Chunk header ---------------------------------------------------------- */

/* varint thread_id, varint base_ts_ns, varint payload_len. Returns bytes
 * written at out (at most VT_CHUNK_HDR_MAX). */
size_t vt_chunk_hdr_encode(uint8_t *out, uint32_t thread_id, uint64_t base_ts, size_t len);
/* Decode a chunk header; -1 with a message if malformed or the payload runs
 * past end. */
int vt_chunk_hdr_decode(const uint8_t **p, const uint8_t *end, uint32_t *thread_id,
                        uint64_t *base_ts, size_t *len, char *err, size_t errlen);

/* ---- Frames ---------------------------------------------------------------- */

/* Compress src (n bytes, whole chunks) as one zstd frame with a checksum at
 * level 1 and write it at offset off of fd. Returns the frame's length, or
 * 0 with a message in err (errlen bytes) naming what (for a message about
 * path). Used where a finished trace grows (recover.c, append.c); the
 * recorder's writer streams its own (writer.c). */
size_t vt_frame_write(int fd, uint64_t off, const uint8_t *src, size_t n, const char *path,
                      char *err, size_t errlen);

/* A trace's layout as the paths that add to it need it (frame.c). */
typedef struct vt_trace_layout {
    uint32_t pid;       /* the header's */
    uint64_t frames_at; /* offset of the first frame (after the header) */
    uint64_t good_end;  /* end of the last complete frame (the summary is one) */
    uint64_t size;      /* the file's length */
    bool has_summary;   /* it ends with its summary: it was closed */
    vt_summary summary;
} vt_trace_layout;
/* The layout of the trace at path, open as fd: its header read, its frames
 * walked from the first until one is incomplete or not a frame. 0, or -1
 * with a message in err (errlen bytes) naming path. */
int vt_trace_layout_read(const char *path, int fd, vt_trace_layout *out, char *err, size_t errlen);

/* ---- Summary frame --------------------------------------------------------- */

/* The summary (vt_summary) is a zstd skippable frame (RFC 8878, 3.1.2: a
 * u32le magic 0x184D2A50..0x184D2A5F, a u32le payload size, the payload),
 * which zstd and readers that predate it skip as an empty batch. Payload:
 * the 8-byte tag VT_SUMMARY_TAG, then u64le peak_live. Always the last
 * VT_SUMMARY_FRAME_LEN bytes of the file, where the reader looks for it. */
#define VT_SUMMARY_MAGIC 0x184D2A5Eu
#define VT_SUMMARY_TAG "VTSUMARY"
#define VT_SUMMARY_FRAME_LEN 24u
/* Encode s as the summary frame's VT_SUMMARY_FRAME_LEN bytes at out. */
void vt_summary_encode(uint8_t *out, const vt_summary *s);
/* Decode the summary frame at p (VT_SUMMARY_FRAME_LEN bytes): 0, or -1 when
 * those bytes are not one (wrong magic, size or tag). */
int vt_summary_decode(const uint8_t *p, vt_summary *s);

/* ---- File header ----------------------------------------------------------- */

/* Encode the file prefix and header block into a malloc'd buffer; returns
 * its length in *len, NULL on out of memory. */
uint8_t *vt_header_encode(const vt_header *h, size_t *len);
/* Parse the 16-byte file prefix: magic, version (must be 1..VT_FORMAT_VERSION)
 * and header_len (at most VT_MAX_HEADER_LEN). -1 with a message otherwise. */
int vt_prefix_decode(const uint8_t *p, uint32_t *version, uint32_t *header_len, char *err,
                     size_t errlen);
/* Decoded header: owns its strings. */
/* strings[]: host, program, version, argv..., then the run id. */
#define VT_HDR_RUN_ID_SLOT (3 + VT_MAX_ARGV)
typedef struct vt_header_store {
    vt_header h;
    char *strings[4 + VT_MAX_ARGV];
    const char *argv[VT_MAX_ARGV];
} vt_header_store;
/* Decode a header block of len bytes into hs (strings malloc'd and
 * terminated). -1 with a message on malformed input. */
int vt_header_decode(const uint8_t *p, size_t len, vt_header_store *hs, char *err, size_t errlen);
void vt_header_store_free(vt_header_store *hs);

#endif
