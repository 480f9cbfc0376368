/* recover.c: vt_recover, the reader of the spill file (spill.h). After a
 * process died without closing its trace (SIGKILL, _exit), its spill file
 * still holds the chunks it had recorded but not yet written. They are
 * appended to the trace as one more batch, after its last complete frame
 * (an incomplete one, cut by the kill in the middle of a write, is dropped:
 * its chunks are still in the spill file). */
#define _GNU_SOURCE
#include "spill.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct salvaged {
    uint64_t seq;
    uint32_t thread_id;
    uint64_t base_ts;
    uint8_t *data;
    size_t len;
} salvaged;

typedef struct recovery {
    const char *trace;
    int fd;  /* the trace, read-write */
    int sfd; /* the spill file, read-only */
    char spill[128];
    vt_spill_head head;
    uint32_t pid;      /* the trace header's */
    uint64_t good_end; /* end of the last complete frame */
    bool has_summary;  /* the file ends with its summary: it was closed */
    bool unfinished;   /* the spill file's head was never completed: it holds nothing */
    salvaged *chunks;
    size_t n, cap;
    char *err;
    size_t errlen;
} recovery;

static int fail(recovery *rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(rc->err, rc->errlen, fmt, ap);
    va_end(ap);
    return -1;
}

/* The trace's header pid, where its frames start and end, its summary. */
static int read_layout(recovery *rc)
{
    vt_trace_layout lay;
    if (vt_trace_layout_read(rc->trace, rc->fd, &lay, rc->err, rc->errlen) < 0)
        return -1;
    rc->pid = lay.pid;
    rc->good_end = lay.good_end;
    rc->has_summary = lay.has_summary;
    return 0;
}

/* The spill file's head, checked against the trace (dev, ino, pid). A file
 * of at most one head whose magic is not there (0, or short of it) is one
 * its process was killed while making: the writer stores the magic last
 * and maps no slot before, so it holds nothing (rc->unfinished). */
static int read_head(recovery *rc, const struct stat *tst, const struct stat *sst)
{
    vt_spill_head *h = &rc->head;
    ssize_t got = pread(rc->sfd, h, sizeof *h, 0);
    bool no_magic = got < (ssize_t)sizeof h->magic || h->magic == 0;
    if (no_magic && sst->st_size <= (off_t)VT_SPILL_HEAD_BYTES) {
        rc->unfinished = true;
        return 0;
    }
    if (got != (ssize_t)sizeof *h || h->magic != VT_SPILL_MAGIC)
        return fail(rc, "%s: not a vramtrace spill file", rc->spill);
    if (h->trace_dev != (uint64_t)tst->st_dev || h->trace_ino != (uint64_t)tst->st_ino ||
        h->pid != rc->pid)
        return fail(rc, "%s belongs to another trace than %s", rc->spill, rc->trace);
    if (h->slot_bytes < sizeof(vt_chunk) + VT_REC_MAX || h->slot_bytes > (64u << 20))
        return fail(rc, "%s: implausible slot size %u", rc->spill, h->slot_bytes);
    return 0;
}

static int keep(recovery *rc, const vt_chunk *c, uint64_t off)
{
    if (rc->n == rc->cap) {
        size_t cap = rc->cap ? 2 * rc->cap : 16;
        salvaged *p = realloc(rc->chunks, cap * sizeof *p);
        if (!p)
            return fail(rc, "out of memory");
        rc->chunks = p;
        rc->cap = cap;
    }
    salvaged *s = &rc->chunks[rc->n];
    *s = (salvaged){c->seq, c->thread_id, c->d.base_ts, malloc(c->len ? c->len : 1), c->len};
    if (!s->data)
        return fail(rc, "out of memory");
    rc->n++;
    if (pread(rc->sfd, s->data, c->len, (off_t)(off + offsetof(vt_chunk, data))) != (ssize_t)c->len)
        return fail(rc, "%s: cannot read a chunk: %s", rc->spill, strerror(errno));
    return 0;
}

/* The length of the longest prefix of s's bytes that decodes as whole
 * records (as the reader will decode them): all of it unless the spill file
 * was damaged, which must not make the trace unreadable. */
static size_t valid_prefix(const salvaged *s)
{
    vt_delta d = {.prev_ts = s->base_ts, .version = VT_FORMAT_VERSION};
    const uint8_t *p = s->data, *end = s->data + s->len;
    vt_event ev;
    vt_span str[VT_SPANS];
    char why[128];
    while (p < end && vt_rec_decode(&p, end, &d, &ev, str, why, sizeof why) == 0)
        ;
    return (size_t)(p - s->data);
}

/* Every chunk whose records are not in the trace (spill.h's states). */
static int collect(recovery *rc)
{
    uint64_t pending = atomic_load(&rc->head.pending);
    bool framing_written = pending == 0 || pending < rc->good_end;
    size_t max_len = rc->head.slot_bytes - sizeof(vt_chunk);
    struct stat st;
    if (fstat(rc->sfd, &st) < 0)
        return fail(rc, "%s: %s", rc->spill, strerror(errno));
    for (uint64_t off = VT_SPILL_HEAD_BYTES; off + rc->head.slot_bytes <= (uint64_t)st.st_size;
         off += rc->head.slot_bytes) {
        vt_chunk c;
        if (pread(rc->sfd, &c, sizeof c, (off_t)off) != (ssize_t)sizeof c)
            return fail(rc, "%s: cannot read a slot: %s", rc->spill, strerror(errno));
        uint32_t state = atomic_load(&c.state);
        bool todo = state == VT_SPILL_FILLING || (state == VT_SPILL_FRAMING && !framing_written);
        if (todo && c.len > 0 && c.len <= c.cap && c.cap <= max_len && keep(rc, &c, off) < 0)
            return -1;
    }
    return 0;
}

static int by_seq(const void *a, const void *b)
{
    uint64_t x = ((const salvaged *)a)->seq, y = ((const salvaged *)b)->seq;
    return x < y ? -1 : x > y;
}

/* Compress src (n bytes) as one frame and append it at rc->good_end. */
static int append_frame(recovery *rc, const uint8_t *src, size_t n)
{
    size_t z = vt_frame_write(rc->fd, rc->good_end, src, n, rc->trace, rc->err, rc->errlen);
    rc->good_end += z;
    return z ? 0 : -1;
}

/* One or more frames of chunks (header + records each), in seq order. */
static int append_chunks(recovery *rc, salvaged *ch, size_t n)
{
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += VT_CHUNK_HDR_MAX + ch[i].len;
    uint8_t *buf = malloc(total ? total : 1);
    if (!buf)
        return fail(rc, "out of memory");
    size_t i = 0;
    int rcode = 0;
    while (rcode == 0 && i < n) {
        size_t len = 0, k = 0;
        for (; i < n && k < VT_MAX_CHUNKS && (!k || len + ch[i].len <= VT_FRAME_CONTENT_MAX);
             i++, k++) {
            len += vt_chunk_hdr_encode(buf + len, ch[i].thread_id, ch[i].base_ts, ch[i].len);
            memcpy(buf + len, ch[i].data, ch[i].len);
            len += ch[i].len;
        }
        rcode = append_frame(rc, buf, len);
    }
    free(buf);
    return rcode;
}

/* Does the trace hold an end-of-process record? Its last timestamp into
 * *last_ts. -1 when it cannot be read back. */
static int has_end(recovery *rc, uint64_t *last_ts)
{
    char why[256];
    vt_reader *r = vt_reader_open(rc->trace, why, sizeof why);
    if (!r)
        return fail(rc, "%s: %s", rc->trace, why);
    vt_event ev;
    int k, end = 0;
    *last_ts = 0;
    while ((k = vt_reader_next(r, &ev)) > 0) {
        end |= ev.type == VT_REC_END;
        if (ev.ts_ns > *last_ts)
            *last_ts = ev.ts_ns;
    }
    if (k < 0)
        fail(rc, "%s: %s", rc->trace, vt_reader_error(r));
    vt_reader_close(r);
    return k < 0 ? -1 : end;
}

/* Append the end of process e, unless the trace has one. */
static int append_end(recovery *rc, const vt_recover_end *e, bool *added)
{
    uint64_t last = 0;
    int has = has_end(rc, &last);
    if (has != 0)
        return has < 0 ? -1 : 0;
    vt_event ev = {.type = VT_REC_END, .ts_ns = e->ts_ns > last ? e->ts_ns : last};
    ev.u.end.status = e->status;
    ev.u.end.signal = e->signal;
    ev.u.end.reason = e->reason ? e->reason : "";
    uint8_t rec[VT_REC_MAX];
    vt_delta d = {0};
    salvaged s = {0, rc->pid, 0, rec, 0};
    s.len = vt_rec_encode(rec, &d, &ev);
    s.base_ts = d.base_ts;
    if (!s.len)
        return fail(rc, "cannot encode the end of process");
    *added = true;
    return append_chunks(rc, &s, 1);
}

static void recovery_free(recovery *rc)
{
    for (size_t i = 0; i < rc->n; i++)
        free(rc->chunks[i].data);
    free(rc->chunks);
    if (rc->fd >= 0)
        close(rc->fd);
    if (rc->sfd >= 0)
        close(rc->sfd);
}

/* Open the trace and its spill file; 0 when there is no spill file. */
static int open_both(recovery *rc)
{
    struct stat st;
    rc->fd = open(rc->trace, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    if (rc->fd < 0 || fstat(rc->fd, &st) < 0)
        return fail(rc, "cannot open %s: %s", rc->trace, strerror(errno));
    if (read_layout(rc) < 0)
        return -1;
    vt_spill_path(st.st_dev, st.st_ino, rc->spill, sizeof rc->spill);
    rc->sfd = open(rc->spill, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (rc->sfd < 0)
        return errno == ENOENT ? 0 : fail(rc, "cannot open %s: %s", rc->spill, strerror(errno));
    struct stat sst;
    if (fstat(rc->sfd, &sst) < 0 || sst.st_uid != st.st_uid)
        return fail(rc, "%s is not owned by the owner of %s: left as it is", rc->spill, rc->trace);
    return read_head(rc, &st, &sst) < 0 ? -1 : 1;
}

/* Does process pid still map the spill file (it is alive and recording:
 * its writer still appends to the trace)? The mapping is gone once it
 * ends, whatever became of the pid since. */
static bool still_recording(const recovery *rc)
{
    char maps[64], line[512];
    snprintf(maps, sizeof maps, "/proc/%u/maps", rc->pid);
    FILE *f = fopen(maps, "re");
    bool found = false;
    while (f && !found && fgets(line, sizeof line, f))
        found = strstr(line, rc->spill) != NULL;
    if (f)
        fclose(f);
    return found;
}

static int recover(recovery *rc, const vt_recover_end *end, vt_recover_result *res)
{
    int found = open_both(rc);
    if (found <= 0)
        return found;
    if (still_recording(rc))
        return fail(rc,
                    "%s: its process (pid %u) is still running and writing it: recover it "
                    "after that process has ended",
                    rc->trace, rc->pid);
    if (!rc->unfinished && collect(rc) < 0)
        return -1;
    if (rc->has_summary && rc->n)
        return fail(rc, "%s was closed, yet %s holds records: left as they are", rc->trace,
                    rc->spill);
    struct stat st;
    if (fstat(rc->fd, &st) == 0 && (uint64_t)st.st_size > rc->good_end) {
        res->dropped_bytes = (uint64_t)st.st_size - rc->good_end;
        if (ftruncate(rc->fd, (off_t)rc->good_end) < 0)
            return fail(rc, "%s: cannot cut its incomplete last frame: %s", rc->trace,
                        strerror(errno));
    }
    qsort(rc->chunks, rc->n, sizeof *rc->chunks, by_seq);
    for (size_t i = 0; i < rc->n; i++) {
        size_t ok = valid_prefix(&rc->chunks[i]);
        res->invalid_bytes += rc->chunks[i].len - ok;
        rc->chunks[i].len = ok;
        res->bytes += ok;
    }
    res->chunks = rc->n;
    if (rc->n && append_chunks(rc, rc->chunks, rc->n) < 0)
        return -1;
    if (end && end->pid == rc->pid && !rc->has_summary && append_end(rc, end, &res->end_added) < 0)
        return -1;
    if (unlink(rc->spill) < 0)
        return fail(rc, "cannot remove %s: %s", rc->spill, strerror(errno));
    return 1;
}

int vt_recover(const char *trace, const vt_recover_end *end, vt_recover_result *res, char *err,
               size_t errlen)
{
    recovery rc = {.trace = trace, .fd = -1, .sfd = -1, .err = err, .errlen = errlen};
    vt_recover_result dummy;
    res = res ? res : &dummy;
    memset(res, 0, sizeof *res);
    int r = recover(&rc, end, res);
    recovery_free(&rc);
    return r;
}

bool vt_recover_pending(const char *path, char *spill, size_t len)
{
    struct stat st;
    char p[128];
    if (stat(path, &st) < 0)
        return false;
    vt_spill_path(st.st_dev, st.st_ino, p, sizeof p);
    if (access(p, F_OK) != 0)
        return false;
    if (spill && len)
        snprintf(spill, len, "%s", p);
    return true;
}
