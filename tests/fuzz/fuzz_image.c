/* fuzz_image.c: see fuzz_image.h. */
#include "fuzz_image.h"

#include "records.h"
#include "vtrace.h"

#include <stdlib.h>
#include <string.h>
#include <zstd.h>

/* Header + one checksummed frame holding batch; NULL on failure. */
static uint8_t *wrap(const uint8_t *batch, size_t n, size_t *len)
{
    vt_header h = {.host = "fuzz", .program = "fuzz", .vramtrace_version = "0"};
    size_t hl;
    uint8_t *hdr = vt_header_encode(&h, &hl);
    size_t cap = hl + ZSTD_compressBound(n);
    uint8_t *img = hdr ? realloc(hdr, cap) : NULL;
    ZSTD_CCtx *cc = ZSTD_createCCtx();
    size_t z = 0;
    if (img && cc) {
        ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, 1);
        ZSTD_CCtx_setParameter(cc, ZSTD_c_compressionLevel, 1);
        z = ZSTD_compress2(cc, img + hl, cap - hl, batch, n);
    }
    ZSTD_freeCCtx(cc);
    if (!img || !cc || ZSTD_isError(z)) {
        free(img ? img : hdr);
        return NULL;
    }
    *len = hl + z;
    return img;
}

const uint8_t *vtf_image(const uint8_t *input, size_t size, size_t *len, uint8_t **owned)
{
    *owned = NULL;
    if (size >= VT_MAGIC_LEN && memcmp(input, VT_MAGIC, VT_MAGIC_LEN) == 0) {
        *len = size;
        return input;
    }
    *owned = wrap(input, size, len);
    return *owned;
}
