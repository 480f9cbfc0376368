/* append.c: vt_append_definitions, the way a finished trace takes more
 * definition records (the symbols `vramtrace symbolize` names on the
 * recording machine). */
#define _GNU_SOURCE
#include "spill.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct appender {
    const char *path;
    int fd;
    uint64_t size;    /* the file's length when opened */
    uint64_t at;      /* where the next frame goes */
    bool has_summary; /* the file ends with its summary */
    uint8_t summary[VT_SUMMARY_FRAME_LEN];
    char *err;
    size_t errlen;
} appender;

static int fail(appender *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(a->err, a->errlen, fmt, ap);
    va_end(ap);
    return -1;
}

/* Does process pid hold the file (dev, ino) open? */
static bool held_open(uint32_t pid, const struct stat *st)
{
    char dir[64];
    snprintf(dir, sizeof dir, "/proc/%u/fd", pid);
    DIR *d = opendir(dir);
    bool held = false;
    for (struct dirent *e; d && !held && (e = readdir(d));) {
        struct stat fst;
        held = e->d_name[0] != '.' && fstatat(dirfd(d), e->d_name, &fst, 0) == 0 &&
               fst.st_dev == st->st_dev && fst.st_ino == st->st_ino;
    }
    if (d)
        closedir(d);
    return held;
}

static int open_finished(appender *a)
{
    char spill[128];
    if (vt_recover_pending(a->path, spill, sizeof spill))
        return fail(a,
                    "%s has a spill file (%s): its process is still running or died before "
                    "closing it; after it ended, run `vramtrace recover %s` first",
                    a->path, spill, a->path);
    a->fd = open(a->path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    struct stat st;
    if (a->fd < 0 || fstat(a->fd, &st) < 0)
        return fail(a, "%s: %s", a->path, strerror(errno));
    if (!S_ISREG(st.st_mode))
        return fail(a, "%s: not a regular file", a->path);
    vt_trace_layout lay;
    if (vt_trace_layout_read(a->path, a->fd, &lay, a->err, a->errlen) < 0)
        return -1;
    if (lay.good_end != lay.size)
        return fail(a,
                    "%s ends inside a frame (at byte %llu of %llu): it was cut short; "
                    "nothing appended",
                    a->path, (unsigned long long)lay.good_end, (unsigned long long)lay.size);
    if (lay.pid && lay.pid != (uint32_t)getpid() && held_open(lay.pid, &st))
        return fail(a, "%s: its process (pid %u) still has it open: nothing appended", a->path,
                    lay.pid);
    a->size = a->at = lay.size;
    a->has_summary = lay.has_summary;
    if (lay.has_summary)
        vt_summary_encode(a->summary, &lay.summary);
    return 0;
}

/* One frame of one chunk (thread 0, no time) holding the records of evs
 * from *i on that fit in VT_FRAME_CONTENT_MAX; advances *i. */
static int append_frame(appender *a, const vt_event *evs, size_t n, size_t *i, uint8_t *buf)
{
    size_t len = 0;
    vt_delta d = {0};
    uint8_t *rec = buf + VT_CHUNK_HDR_MAX;
    for (; *i < n; ++*i) {
        if (len + VT_REC_MAX > VT_FRAME_CONTENT_MAX - VT_CHUNK_HDR_MAX)
            break;
        len += vt_rec_encode(rec + len, &d, &evs[*i]);
    }
    uint8_t hdr[VT_CHUNK_HDR_MAX];
    size_t h = vt_chunk_hdr_encode(hdr, 0, 0, len);
    memmove(buf + h, rec, len); /* the header's real length, then the records */
    memcpy(buf, hdr, h);
    size_t z = vt_frame_write(a->fd, a->at, buf, h + len, a->path, a->err, a->errlen);
    a->at += z;
    return z ? 0 : -1;
}

static int append_all(appender *a, const vt_event *evs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!vt_rec_is_definition(evs[i].type))
            return fail(a, "record %zu (%s) is not a definition: nothing appended", i,
                        vt_rec_name(evs[i].type));
    size_t total = VT_CHUNK_HDR_MAX;
    for (size_t i = 0; i < n && total < VT_FRAME_CONTENT_MAX; i++)
        total += VT_REC_FIXED_MAX + VT_VARINT_MAX + vt_rec_string_len(&evs[i]);
    uint8_t *buf = malloc(total < VT_FRAME_CONTENT_MAX ? total : VT_FRAME_CONTENT_MAX);
    if (!buf)
        return fail(a, "out of memory");
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n;)
        rc = append_frame(a, evs, n, &i, buf);
    free(buf);
    if (rc == 0 && a->has_summary) {
        if (pwrite(a->fd, a->summary, sizeof a->summary, (off_t)a->at) !=
            (ssize_t)sizeof a->summary)
            return fail(a, "%s: cannot write its summary: %s", a->path, strerror(errno));
        a->at += sizeof a->summary;
    }
    if (rc == 0 && fsync(a->fd) < 0)
        return fail(a, "%s: %s", a->path, strerror(errno));
    return rc;
}

int vt_append_definitions(const char *path, const vt_event *evs, size_t n, char *err, size_t errlen)
{
    appender a = {.path = path, .fd = -1, .err = err, .errlen = errlen};
    int rc = open_finished(&a);
    if (rc == 0 && n && (rc = append_all(&a, evs, n)) < 0 && ftruncate(a.fd, (off_t)a.size) < 0) {
        char first[256];
        snprintf(first, sizeof first, "%s", err);
        fail(&a, "%s (and cutting %s back to %llu bytes failed: %s)", first, path,
             (unsigned long long)a.size, strerror(errno));
    }
    if (a.fd >= 0)
        close(a.fd);
    return rc;
}
