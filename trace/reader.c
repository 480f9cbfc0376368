/* reader.c: streaming reader. Reads the file through a fixed input window,
 * decompresses one frame (batch) at a time with the zstd streaming API into a
 * buffer capped at VT_MAX_BATCH_BYTES, splits it into chunks (cursors) and
 * merges them: definitions as soon as a cursor reaches them, events by
 * (timestamp, release-before-allocation, chunk order), chunks of one thread
 * strictly in order. Memory: one batch plus its cursors, never the file. */
#define _GNU_SOURCE
#include "records.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_getFrameHeader: a frame's window size */
#include <zstd.h>

/* Largest zstd window accepted: the writer's levels (<= 19) need <= 2^23. */
#define WINDOW_LOG_MAX 24
#define FIRST_BATCH_CAP (64u << 10)
/* Largest input window (bytes): a compressed frame up to this size is read
 * whole and decompressed in one pass; a larger one is streamed. */
#define WHOLE_FRAME_MAX (32u << 20)

typedef struct cursor {
    const uint8_t *p, *end;
    uint32_t tid;
    int next_same; /* next chunk of the same thread in this batch, -1 if none */
    bool head;     /* first chunk of its thread in this batch */
    vt_delta d;
    vt_event ev; /* the record at the front, once decoded */
    vt_span str[VT_SPANS];
} cursor;

typedef struct tid_idx {
    uint32_t tid;
    int idx;
} tid_idx;

struct vt_reader {
    int fd; /* -1 for an in-memory image */
    const uint8_t *in;
    size_t in_len, in_pos;
    uint8_t *inbuf;
    size_t inbuf_cap;
    uint64_t in_base; /* file offset of in[0] */
    uint64_t file_size;
    bool eof;

    ZSTD_DCtx *dctx;
    uint8_t *batch;
    size_t batch_len, batch_cap;
    uint64_t frame_off;

    cursor *cur;
    int *heap, *todo;
    tid_idx *order;
    size_t ncur, cur_cap, nheap, ntodo;

    vt_header_store hs;
    uint64_t frames_at; /* file offset of the first frame (after the header) */
    bool has_summary;   /* the file ends with a summary frame (records.h) */
    vt_summary summary;
    bool truncated, failed, done;
    bool pext;       /* decode varints with PEXT (vt_cpu_fast_pext, asked once) */
    bool string_out; /* the last event given holds a string (strbuf, idbuf) */
    char err[512];
    char strbuf[VT_MAX_STRING_LEN + 1];
    char idbuf[VT_MAX_ID_LEN + 1];
};

static int fail(vt_reader *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->err, sizeof r->err, fmt, ap);
    va_end(ap);
    r->failed = true;
    return -1;
}

static uint64_t offset_now(const vt_reader *r)
{
    return r->in_base + r->in_pos;
}

/* ---- Input window ------------------------------------------------------------ */

/* Refill an exhausted window from the file; sets eof at the end. */
static int fill(vt_reader *r)
{
    if (r->eof || r->in_pos < r->in_len)
        return 0;
    ssize_t n;
    do
        n = read(r->fd, r->inbuf, r->inbuf_cap);
    while (n < 0 && errno == EINTR);
    if (n < 0)
        return fail(r, "read error: %s", strerror(errno));
    r->in_base += r->in_len;
    r->in = r->inbuf;
    r->in_len = (size_t)n;
    r->in_pos = 0;
    r->eof = n == 0;
    return 0;
}

/* Read more of the file after the unread part of the window (moved to its
 * front), doubling the window when it is full, up to WHOLE_FRAME_MAX. 1: more
 * bytes came; 0: none (end of file, an in-memory image, or the window is at
 * its limit); -1: read error. */
static int fill_more(vt_reader *r)
{
    if (r->fd < 0 || r->eof)
        return 0;
    size_t left = r->in_len - r->in_pos;
    if (left == r->inbuf_cap) {
        if (r->inbuf_cap >= WHOLE_FRAME_MAX)
            return 0;
        uint8_t *b = malloc(2 * r->inbuf_cap);
        if (!b)
            return 0;
        memcpy(b, r->in + r->in_pos, left);
        free(r->inbuf);
        r->inbuf = b;
        r->inbuf_cap *= 2;
    } else {
        memmove(r->inbuf, r->in + r->in_pos, left);
    }
    r->in_base += r->in_pos;
    r->in = r->inbuf;
    r->in_len = left;
    r->in_pos = 0;
    ssize_t n;
    do
        n = read(r->fd, r->inbuf + left, r->inbuf_cap - left);
    while (n < 0 && errno == EINTR);
    if (n < 0)
        return fail(r, "read error: %s", strerror(errno));
    r->in_len += (size_t)n;
    r->eof = n == 0;
    return n > 0;
}

/* Copy up to n bytes to dst; returns how many (fewer at the end), -1 on error. */
static ssize_t read_bytes(vt_reader *r, uint8_t *dst, size_t n)
{
    size_t got = 0;
    while (got < n) {
        if (fill(r) < 0)
            return -1;
        size_t k = r->in_len - r->in_pos;
        if (k == 0)
            break;
        k = k < n - got ? k : n - got;
        memcpy(dst + got, r->in + r->in_pos, k);
        r->in_pos += k;
        got += k;
    }
    return (ssize_t)got;
}

/* ---- Open -------------------------------------------------------------------- */

static int read_prefix(vt_reader *r, uint32_t *version, uint32_t *hlen)
{
    uint8_t pre[VT_FILE_PREFIX_LEN];
    ssize_t n = read_bytes(r, pre, sizeof pre);
    if (n < 0)
        return -1;
    size_t m = (size_t)n < VT_MAGIC_LEN ? (size_t)n : VT_MAGIC_LEN;
    if (memcmp(pre, VT_MAGIC, m) != 0)
        return fail(r, "not a .vtrace file (bad magic)");
    if ((size_t)n < sizeof pre)
        return fail(r, "truncated: the file ends inside its header (%zd bytes)", n);
    char why[256];
    if (vt_prefix_decode(pre, version, hlen, why, sizeof why) < 0)
        return fail(r, "%s", why);
    return 0;
}

static int read_header(vt_reader *r)
{
    uint32_t version, hlen;
    if (read_prefix(r, &version, &hlen) < 0)
        return -1;
    uint8_t *buf = malloc(hlen ? hlen : 1);
    if (!buf)
        return fail(r, "out of memory");
    ssize_t n = read_bytes(r, buf, hlen);
    char why[256];
    int rc = n < 0 ? -1 : 0;
    if (n >= 0 && (size_t)n < hlen)
        rc = fail(r, "truncated: the file ends inside its header");
    else if (n >= 0 && vt_header_decode(buf, hlen, &r->hs, why, sizeof why) < 0)
        rc = fail(r, "%s", why);
    free(buf);
    r->hs.h.format_version = version;
    r->frames_at = VT_FILE_PREFIX_LEN + (uint64_t)hlen;
    return rc;
}

static vt_reader *reader_new(void)
{
    vt_reader *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->fd = -1;
    r->dctx = ZSTD_createDCtx();
    if (!r->dctx) {
        free(r);
        return NULL;
    }
    ZSTD_DCtx_setParameter(r->dctx, ZSTD_d_windowLogMax, WINDOW_LOG_MAX);
    r->pext = vt_cpu_fast_pext();
    return r;
}

/* The summary frame, if the last VT_SUMMARY_FRAME_LEN bytes of the file
 * (or image) after its header are one; read with pread, so the stream's
 * own position does not move. */
static void read_summary(vt_reader *r, const uint8_t *image)
{
    uint8_t frame[VT_SUMMARY_FRAME_LEN];
    if (r->file_size < r->frames_at + sizeof frame)
        return;
    uint64_t at = r->file_size - sizeof frame;
    if (image)
        memcpy(frame, image + at, sizeof frame);
    else if (pread(r->fd, frame, sizeof frame, (off_t)at) != (ssize_t)sizeof frame)
        return;
    r->has_summary = vt_summary_decode(frame, &r->summary) == 0;
}

/* Read the header and the summary; on failure copy the message to err and
 * free r. image: the in-memory image, NULL for a file. */
static vt_reader *finish_open(vt_reader *r, const uint8_t *image, char *err, size_t errlen)
{
    if (read_header(r) == 0) {
        read_summary(r, image);
        return r;
    }
    snprintf(err, errlen, "%s", r->err);
    vt_reader_close(r);
    return NULL;
}

vt_reader *vt_reader_open(const char *path, char *err, size_t errlen)
{
    vt_reader *r = reader_new();
    if (!r) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    r->fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (r->fd < 0 || fstat(r->fd, &st) < 0) {
        snprintf(err, errlen, "cannot open: %s", strerror(errno));
        vt_reader_close(r);
        return NULL;
    }
    r->file_size = (uint64_t)st.st_size;
    r->inbuf_cap = ZSTD_DStreamInSize();
    r->inbuf = malloc(r->inbuf_cap);
    if (!r->inbuf) {
        snprintf(err, errlen, "out of memory");
        vt_reader_close(r);
        return NULL;
    }
    return finish_open(r, NULL, err, errlen);
}

vt_reader *vt_reader_open_mem(const void *data, size_t len, char *err, size_t errlen)
{
    vt_reader *r = reader_new();
    if (!r) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    r->in = data;
    r->in_len = len;
    r->eof = true;
    r->file_size = len;
    return finish_open(r, data, err, errlen);
}

bool vt_reader_summary(const vt_reader *r, vt_summary *out)
{
    if (!r || !r->has_summary)
        return false;
    *out = r->summary;
    return true;
}

void vt_reader_close(vt_reader *r)
{
    if (!r)
        return;
    if (r->fd >= 0)
        close(r->fd);
    ZSTD_freeDCtx(r->dctx);
    vt_header_store_free(&r->hs);
    free(r->inbuf);
    free(r->batch);
    free(r->cur);
    free(r->heap);
    free(r->todo);
    free(r->order);
    free(r);
}

/* ---- Frames ------------------------------------------------------------------ */

static int grow_batch(vt_reader *r)
{
    if (r->batch_cap >= VT_MAX_BATCH_BYTES)
        return fail(r, "corrupt trace: the batch at byte %llu decompresses to more than %u MiB",
                    (unsigned long long)r->frame_off, VT_MAX_BATCH_BYTES >> 20);
    size_t cap = r->batch_cap ? 2 * r->batch_cap : FIRST_BATCH_CAP;
    cap = cap > VT_MAX_BATCH_BYTES ? VT_MAX_BATCH_BYTES : cap;
    uint8_t *b = realloc(r->batch, cap);
    if (!b)
        return fail(r, "out of memory for a %zu-byte batch", cap);
    r->batch = b;
    r->batch_cap = cap;
    return 0;
}

/* The compressed size of the frame at the window's front once the window
 * holds all of it (read in as needed), 0 when it cannot (the file ends
 * inside it, it is malformed, larger than WHOLE_FRAME_MAX), -1 on a read
 * error. */
static long long whole_frame(vt_reader *r)
{
    for (;;) {
        size_t cs = ZSTD_findFrameCompressedSize(r->in + r->in_pos, r->in_len - r->in_pos);
        if (!ZSTD_isError(cs))
            return (long long)cs;
        int more = fill_more(r);
        if (more <= 0)
            return more;
    }
}

/* The frame at the window's front decompressed in one pass straight into
 * r->batch (no copy through zstd's stream buffer; room for its worst case,
 * ZSTD_decompressBound) when it is all in the window (read in as needed) and
 * well-formed: 1. 0 when it is not, the window unread (the streaming path then
 * reads it, and says what is wrong with it); -1 on a read error. */
static int one_pass(vt_reader *r)
{
    ZSTD_frameHeader fh;
    if (ZSTD_getFrameHeader(&fh, r->in + r->in_pos, r->in_len - r->in_pos) != 0 ||
        fh.windowSize > (1ull << WINDOW_LOG_MAX)) /* what streaming refuses, it reports */
        return 0;
    long long cs = whole_frame(r);
    if (cs <= 0)
        return cs < 0 ? -1 : 0;
    unsigned long long bound = ZSTD_decompressBound(r->in + r->in_pos, (size_t)cs);
    if (bound == ZSTD_CONTENTSIZE_ERROR || bound > VT_MAX_BATCH_BYTES)
        return 0;
    while (r->batch_cap < bound || !r->batch)
        if (grow_batch(r) < 0)
            return -1;
    size_t n = ZSTD_decompressDCtx(r->dctx, r->batch, r->batch_cap, r->in + r->in_pos, (size_t)cs);
    if (ZSTD_isError(n) ||
        (fh.frameContentSize != ZSTD_CONTENTSIZE_UNKNOWN && n != fh.frameContentSize))
        return 0;
    r->in_pos += (size_t)cs;
    r->batch_len = n;
    return 1;
}

/* Decompress the next frame into r->batch. 1: done; 0: end of file (clean,
 * or truncated inside the frame); -1: corruption. */
static int decompress_frame(vt_reader *r)
{
    bool started = false;
    ZSTD_DCtx_reset(r->dctx, ZSTD_reset_session_only);
    r->batch_len = 0;
    r->frame_off = offset_now(r);
    if (fill(r) < 0)
        return -1;
    /* A declared content size over the cap is rejected before allocating. */
    unsigned long long declared =
        ZSTD_getFrameContentSize(r->in + r->in_pos, r->in_len - r->in_pos);
    if (declared != ZSTD_CONTENTSIZE_ERROR && declared != ZSTD_CONTENTSIZE_UNKNOWN &&
        declared > VT_MAX_BATCH_BYTES)
        return fail(r, "corrupt trace: the batch at byte %llu declares %llu bytes (limit %u MiB)",
                    (unsigned long long)r->frame_off, declared, VT_MAX_BATCH_BYTES >> 20);
    int rc = one_pass(r);
    if (rc != 0)
        return rc;
    ZSTD_DCtx_reset(r->dctx, ZSTD_reset_session_only);
    for (;;) {
        if (r->batch_len == r->batch_cap && grow_batch(r) < 0)
            return -1;
        if (fill(r) < 0)
            return -1;
        ZSTD_inBuffer in = {r->in, r->in_len, r->in_pos};
        ZSTD_outBuffer out = {r->batch, r->batch_cap, r->batch_len};
        size_t ret = ZSTD_decompressStream(r->dctx, &out, &in);
        if (ZSTD_isError(ret))
            return fail(r, "corrupt trace: bad frame at byte %llu: %s",
                        (unsigned long long)r->frame_off, ZSTD_getErrorName(ret));
        bool progress = in.pos != r->in_pos || out.pos != r->batch_len;
        r->in_pos = in.pos;
        r->batch_len = out.pos;
        if (ret == 0)
            return 1;
        started |= progress;
        if (!progress && r->eof && r->in_pos == r->in_len) {
            r->truncated = started;
            return 0;
        }
    }
}

/* ---- Chunks and cursors ------------------------------------------------------ */

static int grow_cursors(vt_reader *r)
{
    size_t cap = r->cur_cap ? 2 * r->cur_cap : 16;
    cursor *c = realloc(r->cur, cap * sizeof *c);
    if (c)
        r->cur = c;
    int *h = c ? realloc(r->heap, cap * sizeof *h) : NULL;
    if (h)
        r->heap = h;
    int *t = h ? realloc(r->todo, cap * sizeof *t) : NULL;
    if (t)
        r->todo = t;
    tid_idx *o = t ? realloc(r->order, cap * sizeof *o) : NULL;
    if (!o)
        return fail(r, "out of memory for %zu chunks", cap);
    r->order = o;
    r->cur_cap = cap;
    return 0;
}

static int cmp_tid_idx(const void *a, const void *b)
{
    const tid_idx *x = a, *y = b;
    if (x->tid != y->tid)
        return x->tid < y->tid ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* Chain the chunks of each thread in batch order and queue the heads (first
 * chunk first) for their first record. */
static void link_threads(vt_reader *r)
{
    for (size_t i = 0; i < r->ncur; i++)
        r->order[i] = (tid_idx){r->cur[i].tid, (int)i};
    if (r->ncur > 1)
        qsort(r->order, r->ncur, sizeof *r->order, cmp_tid_idx);
    for (size_t i = 0; i < r->ncur; i++) {
        cursor *c = &r->cur[r->order[i].idx];
        c->head = i == 0 || r->order[i - 1].tid != c->tid;
        bool more = i + 1 < r->ncur && r->order[i + 1].tid == c->tid;
        c->next_same = more ? r->order[i + 1].idx : -1;
    }
    r->ntodo = r->nheap = 0;
    for (size_t i = r->ncur; i-- > 0;)
        if (r->cur[i].head)
            r->todo[r->ntodo++] = (int)i;
}

static int parse_batch(vt_reader *r)
{
    const uint8_t *p = r->batch, *end = r->batch + r->batch_len;
    char why[256];
    r->ncur = 0;
    while (p < end) {
        if (r->ncur == VT_MAX_CHUNKS)
            return fail(r, "corrupt trace: more than %u chunks in the batch at byte %llu",
                        VT_MAX_CHUNKS, (unsigned long long)r->frame_off);
        if (r->ncur == r->cur_cap && grow_cursors(r) < 0)
            return -1;
        cursor *c = &r->cur[r->ncur];
        uint64_t base;
        size_t len;
        if (vt_chunk_hdr_decode(&p, end, &c->tid, &base, &len, why, sizeof why) < 0)
            return fail(r, "corrupt trace: batch at byte %llu, chunk %zu: %s",
                        (unsigned long long)r->frame_off, r->ncur, why);
        memset(&c->d, 0, sizeof c->d);
        c->d.prev_ts = base;
        c->d.version = r->hs.h.format_version;
        c->d.pext = r->pext;
        c->p = p;
        c->end = p + len;
        p += len;
        r->ncur++;
    }
    link_threads(r);
    return 0;
}

/* Decompress and parse the next batch: 1, 0 at the end, -1 on corruption. */
static int load_batch(vt_reader *r)
{
    for (;;) {
        int rc = decompress_frame(r);
        if (rc <= 0)
            return rc;
        if (parse_batch(r) < 0)
            return -1;
        if (r->ntodo)
            return 1;
    }
}

/* Decode the record at cursor i's front into ev and its spans str[VT_SPANS];
 * -1 on corruption. */
static int cursor_decode(vt_reader *r, int i, vt_event *ev, vt_span *str)
{
    cursor *c = &r->cur[i];
    char why[256];
    size_t at = (size_t)(c->p - r->batch);
    if (vt_rec_decode(&c->p, c->end, &c->d, ev, str, why, sizeof why) < 0)
        return fail(r, "corrupt trace: batch at byte %llu, offset %zu (thread %u): %s",
                    (unsigned long long)r->frame_off, at, c->tid, why);
    ev->thread_id = c->tid;
    return 0;
}

/* Decode the record at cursor i's front; *exhausted when it has none. */
static int cursor_advance(vt_reader *r, int i, bool *exhausted)
{
    cursor *c = &r->cur[i];
    *exhausted = c->p == c->end;
    return *exhausted ? 0 : cursor_decode(r, i, &c->ev, c->str);
}

/* ---- Merge -------------------------------------------------------------------- */

static bool before(const vt_reader *r, int a, int b)
{
    const vt_event *x = &r->cur[a].ev, *y = &r->cur[b].ev;
    if (x->ts_ns != y->ts_ns)
        return x->ts_ns < y->ts_ns;
    int rx = vt_rec_rank(x->type), ry = vt_rec_rank(y->type);
    if (rx != ry)
        return rx < ry;
    return a < b;
}

static void heap_push(vt_reader *r, int c)
{
    size_t i = r->nheap++;
    while (i > 0 && before(r, c, r->heap[(i - 1) / 2])) {
        r->heap[i] = r->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    r->heap[i] = c;
}

static int heap_pop(vt_reader *r)
{
    int top = r->heap[0], last = r->heap[--r->nheap];
    size_t i = 0, n = r->nheap;
    for (;;) {
        size_t k = 2 * i + 1;
        if (k >= n)
            break;
        if (k + 1 < n && before(r, r->heap[k + 1], r->heap[k]))
            k++;
        if (!before(r, r->heap[k], last))
            break;
        r->heap[i] = r->heap[k];
        i = k;
    }
    if (n)
        r->heap[i] = last;
    return top;
}

/* Point ev's field at span sp (when its record has it: sp->off) at a
 * terminated copy of it in buf. */
static void put_span(const vt_span *sp, char *buf, vt_event *ev)
{
    memcpy(buf, sp->p, sp->len);
    buf[sp->len] = '\0';
    const char *s = buf;
    memcpy((char *)ev + sp->off, &s, sizeof s);
}

/* Point ev's string and identifier fields (those its record has: off != 0
 * in str[VT_SPANS]) at terminated copies in strbuf and idbuf. */
static void put_string(vt_reader *r, const vt_span *str, vt_event *ev)
{
    r->string_out = str[VT_SPAN_STR].off != 0; /* a record with an id has a string */
    if (!r->string_out)
        return;
    put_span(&str[VT_SPAN_STR], r->strbuf, ev);
    if (str[VT_SPAN_ID].off)
        put_span(&str[VT_SPAN_ID], r->idbuf, ev);
}

static void emit(vt_reader *r, int i, vt_event *ev)
{
    const cursor *c = &r->cur[i];
    *ev = c->ev;
    put_string(r, c->str, ev);
}

/* One chunk in play (one cursor on todo, none in the heap): its records are
 * the next events in order, whatever their type, so they are decoded straight
 * into ev, with no merge. 1: ev is the next event; 0: the chunk is done (its
 * thread's next chunk, if any, is queued); -1 on corruption. */
static int step_alone(vt_reader *r, vt_event *ev)
{
    int i = r->todo[0];
    cursor *c = &r->cur[i];
    if (c->p == c->end) {
        r->ntodo = 0;
        if (c->next_same >= 0)
            r->todo[r->ntodo++] = c->next_same;
        return 0;
    }
    vt_span str[VT_SPANS];
    if (cursor_decode(r, i, ev, str) < 0)
        return -1;
    put_string(r, str, ev);
    return 1;
}

/* Advance the cursor on top of todo: 1 when it reached a definition (emitted),
 * 0 when it moved on (into the heap, or to its thread's next chunk), -1 on
 * corruption. */
static int step_todo(vt_reader *r, vt_event *ev)
{
    int i = r->todo[r->ntodo - 1];
    bool exhausted;
    if (cursor_advance(r, i, &exhausted) < 0)
        return -1;
    if (exhausted) {
        r->ntodo--;
        if (r->cur[i].next_same >= 0)
            r->todo[r->ntodo++] = r->cur[i].next_same;
        return 0;
    }
    if (vt_rec_is_definition(r->cur[i].ev.type)) {
        emit(r, i, ev); /* stays on todo: advanced again next call */
        return 1;
    }
    r->ntodo--;
    heap_push(r, i);
    return 0;
}

int vt_reader_next(vt_reader *r, vt_event *ev)
{
    if (r->failed)
        return -1;
    for (;;) {
        if (r->ntodo == 1 && !r->nheap) {
            int rc = step_alone(r, ev);
            if (rc != 0)
                return rc;
            continue;
        }
        if (r->ntodo) {
            int rc = step_todo(r, ev);
            if (rc != 0)
                return rc;
            continue;
        }
        if (r->nheap) {
            int i = heap_pop(r);
            emit(r, i, ev);
            r->todo[r->ntodo++] = i;
            return 1;
        }
        if (r->done)
            return 0;
        int rc = load_batch(r);
        if (rc < 0)
            return -1;
        r->done = rc == 0;
    }
}

/* Records of the one chunk in play (step_alone's case) decoded straight into
 * evs, up to n, stopping after one with a string: how many, -1 on corruption
 * before the first (after it: how many came before, r->failed set). */
static long read_alone(vt_reader *r, vt_event *evs, size_t n)
{
    cursor *c = &r->cur[r->todo[0]];
    vt_span str[VT_SPANS];
    bool bad;
    char why[256];
    size_t k = vt_rec_decode_many(&c->p, c->end, &c->d, c->tid, evs, n, str, &bad, why, sizeof why);
    r->string_out = false;
    if (k)
        put_string(r, str, &evs[k - 1]);
    if (bad) {
        fail(r, "corrupt trace: batch at byte %llu, offset %zu (thread %u): %s",
             (unsigned long long)r->frame_off, (size_t)(c->p - r->batch), c->tid, why);
        return k ? (long)k : -1;
    }
    return (long)k;
}

long vt_reader_read(vt_reader *r, vt_event *evs, size_t n)
{
    size_t k = 0;
    while (k < n) {
        long got = 0;
        if (r->ntodo == 1 && !r->nheap && !r->failed) {
            got = read_alone(r, evs + k, n - k);
            if (got > 0) {
                k += (size_t)got;
                if (r->string_out)
                    break;
                continue;
            }
        }
        if (got < 0)
            return k ? (long)k : -1;
        int rc = vt_reader_next(r, &evs[k]);
        if (rc < 0)
            return k ? (long)k : -1;
        if (rc == 0)
            break;
        k++;
        if (r->string_out)
            break;
    }
    return (long)k;
}

/* ---- Accessors ------------------------------------------------------------------ */

const vt_header *vt_reader_header(const vt_reader *r)
{
    return &r->hs.h;
}

bool vt_reader_truncated(const vt_reader *r)
{
    return r->truncated;
}

const char *vt_reader_error(const vt_reader *r)
{
    return r->failed ? r->err : NULL;
}

uint64_t vt_reader_offset(const vt_reader *r)
{
    return offset_now(r);
}

uint64_t vt_reader_file_size(const vt_reader *r)
{
    return r->file_size;
}
