/* test_append.c: vt_append_definitions, how `vramtrace symbolize` adds its
 * symbol records to a finished trace. The old bytes must stay exactly as
 * they were (the new file starts with them), every old event must read
 * back, then the appended definitions, in order; the summary must still
 * be the last bytes. A trace cut short, one with a spill file, one still
 * open by its process and a timed event are refused with the file left
 * byte for byte as it was. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "spill.h"
#include "vt_test_util.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define NALLOCS 300

/* A finished trace at path: NALLOCS allocations; closed with a summary
 * (peak_live 77) when summary, else left by a child that wrote a frame
 * and exited without closing (no summary, no spill: dropped). */
static void make_trace(const char *path, bool summary)
{
    char err[256];
    vt_header h = vtt_header();
    h.pid = 1; /* never a process holding the file */
    vt_writer *w = vt_writer_open(path, &h, &(vt_writer_opts){.no_thread = true}, err, sizeof err);
    assert_non_null(w);
    vt_tbuf *tb = vt_writer_attach(w, 3);
    for (int i = 0; i < NALLOCS; i++) {
        vt_event e = {.type = VT_REC_ALLOC, .ts_ns = 1000 + (uint64_t)i};
        e.u.alloc = (__typeof__(e.u.alloc)){.addr = 0x1000 + 16u * (uint64_t)i, .size = 16};
        assert_int_equal(vt_write(tb, &e), 0);
    }
    if (summary)
        vt_writer_set_summary(w, &(vt_summary){.peak_live = 77});
    else
        assert_int_equal(vt_writer_flush(w), 0);
    vt_writer_detach(w, tb);
    if (summary) {
        assert_int_equal(vt_writer_close(w), 0);
        return;
    }
    /* no summary: the bytes flushed so far, without the closing summary */
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    off_t len = st.st_size;
    assert_int_equal(vt_writer_close(w), 0);
    assert_int_equal(truncate(path, len), 0);
}

static uint8_t *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    rewind(f);
    uint8_t *b = malloc(*n ? *n : 1);
    assert_int_equal(fread(b, 1, *n, f), *n);
    fclose(f);
    return b;
}

/* Strings 900.. and, per ip, an inline chain of two symbols. */
static size_t symbol_events(vt_event *ev)
{
    static const char *const names[] = {"make_batch", "train.c", "inlined_helper"};
    size_t n = 0;
    for (uint32_t k = 0; k < 3; k++)
        ev[n++] = (vt_event){.type = VT_REC_STRING, .u.string = {900 + k, names[k]}};
    for (uint64_t ip = 0x401000; ip < 0x401000 + 40; ip += 4) {
        ev[n++] =
            (vt_event){.type = VT_REC_SYMBOL, .u.symbol = {ip, 0, 902, 901, 7, VT_SYMBOL_INLINED}};
        ev[n++] = (vt_event){.type = VT_REC_SYMBOL,
                             .u.symbol = {ip, 1, 900, 901, (uint32_t)(ip & 0xff), 0}};
    }
    return n;
}

/* path reads back as NALLOCS allocations, then exactly evs[0..n). */
static void expect_events(const char *path, const vt_event *evs, size_t n)
{
    char err[256];
    vt_reader *r = vt_reader_open(path, err, sizeof err);
    assert_non_null(r);
    vt_event ev;
    size_t allocs = 0, defs = 0;
    while (vt_reader_next(r, &ev) > 0) {
        if (ev.type == VT_REC_ALLOC) {
            assert_int_equal(defs, 0);
            assert_int_equal(ev.u.alloc.addr, 0x1000 + 16u * allocs++);
            continue;
        }
        assert_true(defs < n);
        const vt_event *want = &evs[defs++];
        assert_int_equal(ev.type, want->type);
        if (ev.type == VT_REC_STRING) {
            assert_int_equal(ev.u.string.id, want->u.string.id);
            assert_string_equal(ev.u.string.text, want->u.string.text);
        } else {
            assert_memory_equal(&ev.u.symbol, &want->u.symbol, sizeof ev.u.symbol);
        }
    }
    assert_null(vt_reader_error(r));
    assert_false(vt_reader_truncated(r));
    assert_int_equal(allocs, NALLOCS);
    assert_int_equal(defs, n);
    vt_reader_close(r);
}

static void appends(bool summary)
{
    char *dir = vtt_tmpdir(), path[1024];
    vtt_path(path, sizeof path, dir, "t.vtrace");
    make_trace(path, summary);
    size_t n0, n1;
    uint8_t *before = slurp(path, &n0);
    vt_event evs[64];
    size_t n = symbol_events(evs);
    char err[512];
    assert_int_equal(vt_append_definitions(path, evs, n, err, sizeof err), 0);
    uint8_t *after = slurp(path, &n1);
    assert_true(n1 > n0);
    assert_memory_equal(before, after, n0); /* nothing written is changed */
    expect_events(path, evs, n);
    vt_reader *r = vt_reader_open(path, err, sizeof err);
    vt_summary s = {0};
    assert_int_equal(vt_reader_summary(r, &s), summary);
    if (summary)
        assert_int_equal(s.peak_live, 77);
    vt_reader_close(r);
    /* a second append goes after the first */
    assert_int_equal(vt_append_definitions(path, evs, 3, err, sizeof err), 0);
    free(before);
    free(after);
    const char *names[] = {"t.vtrace"};
    vtt_rmdir(dir, names, 1);
}

static void appends_after_summary(void **state)
{
    (void)state;
    appends(true);
}

static void appends_without_summary(void **state)
{
    (void)state;
    appends(false);
}

/* vt_append_definitions must fail on path and leave it byte for byte. */
static void refused(const char *path, const vt_event *evs, size_t n, const char *why)
{
    size_t n0, n1;
    uint8_t *before = slurp(path, &n0);
    char err[512] = "";
    assert_int_equal(vt_append_definitions(path, evs, n, err, sizeof err), -1);
    print_message("refused as expected: %s\n", err);
    assert_non_null(strstr(err, why));
    uint8_t *after = slurp(path, &n1);
    assert_int_equal(n0, n1);
    assert_memory_equal(before, after, n0);
    free(before);
    free(after);
}

static void refuses_unfinished(void **state)
{
    (void)state;
    char *dir = vtt_tmpdir(), path[1024];
    vtt_path(path, sizeof path, dir, "t.vtrace");
    make_trace(path, true);
    vt_event evs[64];
    size_t n = symbol_events(evs);
    /* a timed event */
    vt_event timed = {.type = VT_REC_ALLOC, .ts_ns = 5};
    vt_event mixed[3] = {evs[0], timed, evs[1]};
    refused(path, mixed, 3, "not a definition");
    /* cut inside its last frame (the summary removed, then 5 bytes more) */
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(truncate(path, st.st_size - VT_SUMMARY_FRAME_LEN - 5), 0);
    refused(path, evs, n, "ends inside a frame");
    /* not a trace */
    FILE *f = fopen(path, "wb");
    fputs("not a trace at all", f);
    fclose(f);
    refused(path, evs, n, path);
    const char *names[] = {"t.vtrace"};
    vtt_rmdir(dir, names, 1);
}

static void refuses_spill_and_open(void **state)
{
    (void)state;
    char *dir = vtt_tmpdir(), path[1024], spill[128];
    vtt_path(path, sizeof path, dir, "t.vtrace");
    make_trace(path, true);
    vt_event evs[64];
    size_t n = symbol_events(evs);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    vt_spill_path(st.st_dev, st.st_ino, spill, sizeof spill);
    int fd = open(spill, O_CREAT | O_EXCL | O_WRONLY, 0600);
    assert_true(fd >= 0);
    close(fd);
    refused(path, evs, n, "spill file");
    unlink(spill);
    /* a live process (a child) named by the header, holding the trace open */
    char path2[1024], err[256];
    vtt_path(path2, sizeof path2, dir, "u.vtrace");
    int go[2], ready[2];
    assert_int_equal(pipe(go), 0);
    assert_int_equal(pipe(ready), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        char c;
        if (read(go[0], &c, 1) != 1)
            _exit(1);
        int keep = open(path2, O_RDONLY);
        (void)!write(ready[1], "r", 1);
        (void)!read(go[0], &c, 1); /* until the parent's second byte */
        close(keep);
        _exit(0);
    }
    vt_header h = vtt_header();
    h.pid = (uint32_t)pid;
    vt_writer *w = vt_writer_open(path2, &h, &(vt_writer_opts){.no_thread = true}, err, sizeof err);
    assert_non_null(w);
    assert_int_equal(vt_writer_close(w), 0);
    char c;
    assert_int_equal(write(go[1], "g", 1), 1);
    assert_int_equal(read(ready[0], &c, 1), 1);
    refused(path2, evs, n, "still has it open");
    assert_int_equal(write(go[1], "x", 1), 1);
    assert_int_equal(waitpid(pid, NULL, 0), pid);
    /* once it has ended, the same append is taken */
    assert_int_equal(vt_append_definitions(path2, evs, n, err, sizeof err), 0);
    const char *names[] = {"t.vtrace", "u.vtrace"};
    vtt_rmdir(dir, names, 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(appends_after_summary),
        cmocka_unit_test(appends_without_summary),
        cmocka_unit_test(refuses_unfinished),
        cmocka_unit_test(refuses_spill_and_open),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
