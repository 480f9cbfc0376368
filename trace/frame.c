/* frame.c: what the paths that add to a finished trace share (append.c,
 * recover.c; records.h): vt_frame_write, their one frame compressor, and
 * vt_trace_layout_read, where a trace's frames start and end. */
#include "records.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

size_t vt_frame_write(int fd, uint64_t off, const uint8_t *src, size_t n, const char *path,
                      char *err, size_t errlen)
{
    size_t cap = ZSTD_compressBound(n);
    uint8_t *out = malloc(cap);
    ZSTD_CCtx *cctx = ZSTD_createCCtx();
    size_t z = 0;
    if (!out || !cctx) {
        snprintf(err, errlen, "out of memory");
        goto done;
    }
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, 1);
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1);
    z = ZSTD_compress2(cctx, out, cap, src, n);
    if (ZSTD_isError(z)) {
        snprintf(err, errlen, "compressing records for %s failed: %s", path, ZSTD_getErrorName(z));
        z = 0;
    } else if (pwrite(fd, out, z, (off_t)off) != (ssize_t)z) {
        snprintf(err, errlen, "%s: cannot write: %s", path,
                 errno ? strerror(errno) : "short write");
        z = 0;
    }
done:
    ZSTD_freeCCtx(cctx);
    free(out);
    return z;
}

/* The end of the last complete frame from at on, in fd's first size bytes. */
static int frames_end(int fd, uint64_t size, uint64_t *at, const char *path, char *err,
                      size_t errlen)
{
    if (size <= *at)
        return 0;
    uint8_t *img = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (img == MAP_FAILED) {
        snprintf(err, errlen, "%s: cannot map it: %s", path, strerror(errno));
        return -1;
    }
    while (*at < size) {
        size_t n = ZSTD_findFrameCompressedSize(img + *at, size - *at);
        if (ZSTD_isError(n) || n > size - *at)
            break;
        *at += n;
    }
    munmap(img, size);
    return 0;
}

int vt_trace_layout_read(const char *path, int fd, vt_trace_layout *out, char *err, size_t errlen)
{
    char why[256];
    memset(out, 0, sizeof *out);
    vt_reader *r = vt_reader_open(path, why, sizeof why);
    if (!r) {
        snprintf(err, errlen, "%s: %s", path, why);
        return -1;
    }
    out->pid = vt_reader_header(r)->pid;
    out->frames_at = vt_reader_offset(r);
    out->has_summary = vt_reader_summary(r, &out->summary);
    vt_reader_close(r);
    struct stat st;
    if (fstat(fd, &st) < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    out->size = (uint64_t)st.st_size;
    out->good_end = out->frames_at;
    return frames_end(fd, out->size, &out->good_end, path, err, errlen);
}
