/* fuzz_reader.c: libFuzzer target for the .vtrace reader.
 *
 * The input is a whole file or one batch (fuzz_image.h). Either way the
 * reader must return an error or a clean end: never crash, hang or allocate
 * without bound. */
#include "fuzz_image.h"
#include "records.h"
#include "vtrace.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Touch everything the reader hands out, so ASan checks it. */
static size_t consume(vt_reader *r)
{
    const vt_header *h = vt_reader_header(r);
    size_t sum = strlen(h->host) + strlen(h->program) + strlen(h->vramtrace_version);
    for (uint32_t i = 0; i < h->argc; i++)
        sum += strlen(h->argv[i]);
    vt_event ev;
    while (vt_reader_next(r, &ev) == 1) {
        sum += ev.type + vt_rec_name(ev.type)[0];
        if (ev.type == VT_REC_NOTE)
            sum += strlen(ev.u.note.text);
        else if (ev.type == VT_REC_MODULE)
            sum += strlen(ev.u.module.path) +
                   (ev.u.module.build_id ? strlen(ev.u.module.build_id) : 0);
        else if (ev.type == VT_REC_ALLOC)
            sum += vt_api_name(ev.u.alloc.api)[0];
    }
    const char *e = vt_reader_error(r);
    return sum + (e ? strlen(e) : 0) + vt_reader_truncated(r);
}

/* Two events are the same: thread, and the bytes the format writes for them
 * (every field of their type, strings by content). */
static bool same_event(const vt_event *a, const vt_event *b)
{
    static uint8_t x[VT_REC_MAX], y[VT_REC_MAX];
    vt_delta dx = {0}, dy = {0};
    size_t nx = vt_rec_encode(x, &dx, a), ny = vt_rec_encode(y, &dy, b);
    return a->thread_id == b->thread_id && nx == ny && memcmp(x, y, nx) == 0;
}

/* The two ways of reading give the same events and the same end: r1 event
 * by event (vt_reader_next), r2 by batches of 7 (vt_reader_read). Aborts
 * (a finding) when they differ. */
static void same_both_ways(vt_reader *r1, vt_reader *r2)
{
    vt_event a, b[7];
    for (;;) {
        long n = vt_reader_read(r2, b, 7);
        for (long i = 0; i < n; i++)
            if (vt_reader_next(r1, &a) != 1 || !same_event(&a, &b[i]))
                abort();
        if (n <= 0) {
            if (vt_reader_next(r1, &a) != (int)n)
                abort();
            return;
        }
    }
}

static void read_image(const uint8_t *img, size_t len)
{
    char err[256];
    vt_reader *r = vt_reader_open_mem(img, len, err, sizeof err);
    if (!r)
        return;
    volatile size_t sink = consume(r);
    (void)sink;
    vt_reader_close(r);
    vt_reader *r1 = vt_reader_open_mem(img, len, err, sizeof err);
    vt_reader *r2 = vt_reader_open_mem(img, len, err, sizeof err);
    if (r1 && r2)
        same_both_ways(r1, r2);
    vt_reader_close(r1);
    vt_reader_close(r2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t len;
    uint8_t *owned;
    const uint8_t *img = vtf_image(data, size, &len, &owned);
    if (img)
        read_image(img, len);
    free(owned);
    return 0;
}
