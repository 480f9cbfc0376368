/* frame.c: vt_frame_write, the one frame compressor of the paths that add
 * to a finished trace (append.c, recover.c; records.h). */
#include "records.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
