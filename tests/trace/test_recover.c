/* test_recover.c: the spill file (trace/spill.h) and vt_recover. A child
 * process records into a writer and is killed by SIGKILL; the parent
 * recovers its trace and reads it back: every event exactly once, in
 * order. The states a kill can leave are made by editing the spill file:
 * a frame written but its chunks not yet marked (no duplicate), a frame cut
 * in the middle (cut off, its chunks recovered). */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "spill.h"
#include "vt_test_util.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static void write_n(vt_tbuf *tb, uint64_t first, int n)
{
    for (int i = 0; i < n; i++) {
        vt_event e = {.type = VT_REC_ALLOC, .ts_ns = vtt_mono_ns()};
        e.u.alloc.addr = first + (uint64_t)i;
        e.u.alloc.size = 1;
        if (vt_write(tb, &e) != 0)
            _exit(3);
    }
}

/* In a forked child: the writer of path, its header naming this process;
 * the child leaves with status 2 when it cannot be opened. */
static vt_writer *child_writer(const char *path, const vt_writer_opts *o)
{
    char err[256];
    vt_header h = vtt_header();
    h.pid = (uint32_t)getpid();
    vt_writer *w = vt_writer_open(path, &h, o, err, sizeof err);
    if (!w)
        _exit(2);
    return w;
}

/* In a child: open path, write `flushed` allocations and flush, write
 * `pending` more, and die by SIGKILL. The parent waits for it. */
static void record_and_die(const char *path, int flushed, int pending)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        vt_writer *w = child_writer(path, &(vt_writer_opts){.no_thread = true});
        vt_tbuf *tb = vt_writer_attach(w, 7);
        write_n(tb, 0, flushed);
        if (vt_writer_flush(w) != 0)
            _exit(4);
        write_n(tb, (uint64_t)flushed, pending);
        raise(SIGKILL);
        _exit(5);
    }
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFSIGNALED(st));
    assert_int_equal(WTERMSIG(st), SIGKILL);
}

/* Read path back: the allocations must be 0..n-1, each once and in order;
 * the END record, if any, into *end_signal (-1 without one). */
static void expect_allocs(const char *path, uint64_t n, int *end_signal)
{
    char err[256];
    vt_reader *r = vt_reader_open(path, err, sizeof err);
    assert_non_null(r);
    vt_event ev;
    uint64_t next = 0;
    int rc;
    *end_signal = -1;
    while ((rc = vt_reader_next(r, &ev)) == 1) {
        if (ev.type == VT_REC_ALLOC) {
            assert_int_equal(ev.u.alloc.addr, next);
            next++;
        } else if (ev.type == VT_REC_END) {
            *end_signal = ev.u.end.signal;
        }
    }
    assert_int_equal(rc, 0);
    assert_false(vt_reader_truncated(r));
    vt_reader_close(r);
    assert_int_equal(next, n);
}

static void spill_of(const char *path, char *out, size_t len)
{
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    vt_spill_path(st.st_dev, st.st_ino, out, len);
}

/* Set every used slot of the spill file to state and head->pending to
 * pending: the state a kill at another moment of a frame's write leaves. */
static void edit_spill(const char *spill, uint32_t state, uint64_t pending)
{
    int fd = open(spill, O_RDWR);
    assert_true(fd >= 0);
    vt_spill_head h;
    assert_int_equal(pread(fd, &h, sizeof h, 0), sizeof h);
    atomic_store(&h.pending, pending);
    assert_int_equal(pwrite(fd, &h, sizeof h, 0), sizeof h);
    struct stat st;
    assert_int_equal(fstat(fd, &st), 0);
    for (off_t off = VT_SPILL_HEAD_BYTES; off + h.slot_bytes <= st.st_size; off += h.slot_bytes) {
        vt_chunk c;
        assert_int_equal(pread(fd, &c, sizeof c, off), sizeof c);
        if (c.len)
            atomic_store(&c.state, state);
        assert_int_equal(pwrite(fd, &c, sizeof c, off), sizeof c);
    }
    close(fd);
}

/* The pid in the trace's header (the recording process). */
static uint32_t header_pid(const char *path)
{
    char err[256];
    vt_reader *r = vt_reader_open(path, err, sizeof err);
    assert_non_null(r);
    uint32_t pid = vt_reader_header(r)->pid;
    vt_reader_close(r);
    return pid;
}

/* Where the trace's frames start. */
static uint64_t frames_at(const char *path)
{
    char err[256];
    vt_reader *r = vt_reader_open(path, err, sizeof err);
    assert_non_null(r);
    uint64_t at = vt_reader_offset(r);
    vt_reader_close(r);
    return at;
}

/* The writer keeps no spill file where VT_SPILL_DIR cannot be written (it
 * falls back to ordinary memory): nothing to recover, the test is skipped. */
static void skip_without_spill_dir(void)
{
    if (access(VT_SPILL_DIR, W_OK) != 0)
        skip();
}

/* One test's trace in a fresh directory, and its spill file's name. */
typedef struct killed {
    char *dir;
    const char *name;
    char path[1024], spill[256], err[256];
} killed;

/* A trace `name` whose child wrote `flushed` + `pending` allocations (the
 * first flushed) and died by SIGKILL (record_and_die). */
static void killed_open(killed *k, const char *name, int flushed, int pending)
{
    skip_without_spill_dir();
    k->dir = vtt_tmpdir();
    k->name = name;
    vtt_path(k->path, sizeof k->path, k->dir, name);
    record_and_die(k->path, flushed, pending);
    spill_of(k->path, k->spill, sizeof k->spill);
}

/* vt_recover on k's trace (a spill file was there), which then holds the
 * allocations 0..n-1 and no end of process. */
static vt_recover_result recovered(killed *k, uint64_t n)
{
    vt_recover_result res;
    assert_int_equal(vt_recover(k->path, NULL, &res, k->err, sizeof k->err), 1);
    int sig;
    expect_allocs(k->path, n, &sig);
    assert_int_equal(sig, -1);
    return res;
}

static void killed_close(killed *k)
{
    const char *names[] = {k->name};
    vtt_rmdir(k->dir, names, 1);
}

/* Killed with 150 allocations, 100 of them written: recover appends the
 * other 50, removes the spill file, and a second recover does nothing. */
static void test_killed(void **state)
{
    (void)state;
    killed k;
    killed_open(&k, "k.vtrace", 100, 50);
    assert_int_equal(access(k.spill, F_OK), 0);
    int sig;
    expect_allocs(k.path, 100, &sig); /* as left: the 50 are lost without recovery */
    vt_recover_result res;
    assert_int_equal(vt_recover(k.path, NULL, &res, k.err, sizeof k.err), 1);
    assert_true(res.chunks >= 1);
    assert_false(res.end_added);
    assert_int_equal(access(k.spill, F_OK), -1);
    expect_allocs(k.path, 150, &sig);
    assert_int_equal(sig, -1);
    assert_int_equal(vt_recover(k.path, NULL, &res, k.err, sizeof k.err), 0);
    expect_allocs(k.path, 150, &sig);
    killed_close(&k);
}

/* With an end of process: appended once, after the recovered events. */
static void test_end_added(void **state)
{
    (void)state;
    killed k;
    killed_open(&k, "e.vtrace", 10, 20);
    vt_recover_end end = {
        .pid = header_pid(k.path), .signal = SIGKILL, .reason = "killed", .ts_ns = 1};
    vt_recover_result res;
    assert_int_equal(vt_recover(k.path, &end, &res, k.err, sizeof k.err), 1);
    assert_true(res.end_added);
    int sig;
    expect_allocs(k.path, 30, &sig);
    assert_int_equal(sig, SIGKILL);
    killed_close(&k);
}

/* Killed after a frame was written, before its chunks were marked free:
 * the frame at pending is complete, so its chunks are not appended again
 * (test_killed: FILLING chunks are). */
static void test_written_frame_not_repeated(void **state)
{
    (void)state;
    killed k;
    killed_open(&k, "w.vtrace", 100, 0);
    edit_spill(k.spill, VT_SPILL_FRAMING, frames_at(k.path));
    assert_int_equal(recovered(&k, 100).chunks, 0);
    killed_close(&k);
}

/* Killed in the middle of a frame's write: the file ends inside that frame.
 * It is cut off and its chunks (FRAMING, pending at its start) appended. */
static void test_cut_frame_replaced(void **state)
{
    (void)state;
    killed k;
    killed_open(&k, "c.vtrace", 100, 0);
    uint64_t at = frames_at(k.path);
    struct stat st;
    assert_int_equal(stat(k.path, &st), 0);
    uint64_t cut = at + ((uint64_t)st.st_size - at) / 2;
    assert_int_equal(truncate(k.path, (off_t)cut), 0);
    edit_spill(k.spill, VT_SPILL_FRAMING, at);
    vt_recover_result res = recovered(&k, 100);
    assert_int_equal(res.dropped_bytes, cut - at);
    assert_true(res.chunks >= 1);
    killed_close(&k);
}

/* A damaged spill file (a chunk's bytes overwritten in the middle) must not
 * make the trace unreadable: the whole records before the damage are
 * appended, the rest left out and counted. */
static void test_damaged_chunk_cut(void **state)
{
    (void)state;
    killed k;
    killed_open(&k, "d.vtrace", 10, 40);
    int fd = open(k.spill, O_RDWR);
    assert_true(fd >= 0);
    off_t slot = VT_SPILL_HEAD_BYTES, data = slot + (off_t)offsetof(vt_chunk, data);
    vt_chunk c;
    assert_int_equal(pread(fd, &c, sizeof c, slot), sizeof c);
    assert_true(c.len > 100);
    uint8_t junk[16];
    memset(junk, 0xff, sizeof junk); /* 0xff: an unknown record token */
    assert_int_equal(pwrite(fd, junk, sizeof junk, data + (off_t)c.len / 2), sizeof junk);
    close(fd);
    vt_recover_result res;
    assert_int_equal(vt_recover(k.path, NULL, &res, k.err, sizeof k.err), 1);
    assert_true(res.invalid_bytes > 0 && res.invalid_bytes <= c.len / 2 + sizeof junk);
    char err[256];
    vt_reader *r = vt_reader_open(k.path, err, sizeof err);
    assert_non_null(r);
    vt_event ev;
    int rc;
    long n = 0;
    while ((rc = vt_reader_next(r, &ev)) == 1)
        n += ev.type == VT_REC_ALLOC;
    assert_int_equal(rc, 0); /* readable to its end */
    vt_reader_close(r);
    assert_true(n >= 10 && n < 50);
    killed_close(&k);
}

/* A spill file that names another process is refused and left in place. */
static void test_foreign_spill_refused(void **state)
{
    (void)state;
    killed k;
    killed_open(&k, "f.vtrace", 5, 5);
    int fd = open(k.spill, O_RDWR);
    assert_true(fd >= 0);
    vt_spill_head h;
    assert_int_equal(pread(fd, &h, sizeof h, 0), sizeof h);
    h.pid++;
    assert_int_equal(pwrite(fd, &h, sizeof h, 0), sizeof h);
    assert_int_equal(vt_recover(k.path, NULL, NULL, k.err, sizeof k.err), -1);
    assert_non_null(strstr(k.err, "another trace"));
    assert_int_equal(access(k.spill, F_OK), 0);
    h.pid--;
    assert_int_equal(pwrite(fd, &h, sizeof h, 0), sizeof h);
    close(fd);
    assert_int_equal(vt_recover(k.path, NULL, NULL, k.err, sizeof k.err), 1);
    int sig;
    expect_allocs(k.path, 10, &sig);
    killed_close(&k);
}

/* A spill file its process was killed while making (a SIGKILL between its
 * creation and the head's magic, which the writer stores last): a head of
 * zeros, or an empty file, holds nothing, so recover takes the trace as it
 * is and removes it (test_kill_at_random_moments once met one: "not a
 * vramtrace spill file"). Past one head's size, a missing magic is still
 * refused. */
static void test_unfinished_spill(void **state)
{
    (void)state;
    static const off_t sizes[] = {0, 4, VT_SPILL_HEAD_BYTES};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        killed k;
        killed_open(&k, "u.vtrace", 5, 5);
        int fd = open(k.spill, O_RDWR | O_TRUNC);
        assert_true(fd >= 0);
        assert_int_equal(ftruncate(fd, sizes[i]), 0);
        close(fd);
        int sig;
        assert_int_equal(vt_recover(k.path, NULL, NULL, k.err, sizeof k.err), 1);
        assert_int_equal(access(k.spill, F_OK), -1);
        expect_allocs(k.path, 5, &sig); /* the written ones; the spill held none */
        killed_close(&k);
    }
    killed k;
    killed_open(&k, "v.vtrace", 5, 5);
    int fd = open(k.spill, O_RDWR);
    assert_true(fd >= 0);
    assert_int_equal(pwrite(fd, &(uint64_t){0}, sizeof(uint64_t), 0), sizeof(uint64_t));
    close(fd);
    assert_int_equal(vt_recover(k.path, NULL, NULL, k.err, sizeof k.err), -1);
    assert_non_null(strstr(k.err, "not a vramtrace spill file"));
    assert_int_equal(access(k.spill, F_OK), 0);
    killed_close(&k);
}

/* The process still runs and records: recover refuses (its writer would
 * append to the same file) and leaves everything as it is; once it is
 * killed, recover works. */
static void test_live_process_refused(void **state)
{
    (void)state;
    skip_without_spill_dir();
    char *dir = vtt_tmpdir(), path[1024], spill[256], err[256];
    vtt_path(path, sizeof path, dir, "l.vtrace");
    int ready[2];
    assert_int_equal(pipe(ready), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        vt_writer *w = child_writer(path, &(vt_writer_opts){.no_thread = true});
        write_n(vt_writer_attach(w, 7), 0, 20);
        if (write(ready[1], "r", 1) != 1)
            _exit(4);
        pause();
        _exit(3);
    }
    char c;
    assert_int_equal(read(ready[0], &c, 1), 1);
    spill_of(path, spill, sizeof spill);
    struct stat before, after;
    assert_int_equal(stat(path, &before), 0);
    assert_int_equal(vt_recover(path, NULL, NULL, err, sizeof err), -1);
    assert_non_null(strstr(err, "still running"));
    assert_int_equal(access(spill, F_OK), 0);
    assert_int_equal(stat(path, &after), 0);
    assert_int_equal(before.st_size, after.st_size);
    kill(pid, SIGKILL);
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_int_equal(vt_recover(path, NULL, NULL, err, sizeof err), 1);
    int sig;
    expect_allocs(path, 20, &sig);
    close(ready[0]);
    close(ready[1]);
    const char *names[] = {"l.vtrace"};
    vtt_rmdir(dir, names, 1);
}

/* A trace closed normally has no spill file: nothing to do, unchanged. */
static void test_closed_untouched(void **state)
{
    (void)state;
    skip_without_spill_dir();
    char *dir = vtt_tmpdir(), path[1024], spill[256], err[256];
    vtt_path(path, sizeof path, dir, "n.vtrace");
    vt_header h = vtt_header();
    vt_writer *w = vt_writer_open(path, &h, &(vt_writer_opts){.no_thread = true}, err, sizeof err);
    assert_non_null(w);
    spill_of(path, spill, sizeof spill);
    assert_int_equal(access(spill, F_OK), 0); /* while it is open */
    vt_tbuf *tb = vt_writer_attach(w, 1);
    write_n(tb, 0, 40);
    vt_writer_detach(w, tb);
    assert_int_equal(vt_writer_close(w), 0);
    assert_int_equal(access(spill, F_OK), -1);
    struct stat before, after;
    assert_int_equal(stat(path, &before), 0);
    assert_int_equal(vt_recover(path, NULL, NULL, err, sizeof err), 0);
    assert_int_equal(stat(path, &after), 0);
    assert_int_equal(before.st_size, after.st_size);
    const char *names[] = {"n.vtrace"};
    vtt_rmdir(dir, names, 1);
}

#define STRESS_THREADS 4
#define STRESS_RUNS 30

typedef struct stress_arg {
    vt_writer *w;
    uint32_t tid;
} stress_arg;

/* Write allocations addr = tid << 32 | seq, seq = 0, 1, ... until killed. */
static void *stress_main(void *p)
{
    stress_arg *a = p;
    vt_tbuf *tb = vt_writer_attach(a->w, a->tid);
    for (uint64_t seq = 0; tb; seq++) {
        vt_event e = {.type = VT_REC_ALLOC, .ts_ns = vtt_mono_ns()};
        e.u.alloc.addr = (uint64_t)a->tid << 32 | seq;
        e.u.alloc.size = 1;
        if (vt_write(tb, &e) != 0)
            break;
    }
    return NULL;
}

/* A child writing from STRESS_THREADS threads with a writer thread that
 * flushes every millisecond, killed after delay_us: wherever the kill
 * lands (a thread encoding, a flush swapping, a frame half written), the
 * recovered trace reads without error and holds each thread's allocations
 * 0..n-1 with no gap and no repeat. */
static void kill_once(const char *path, unsigned delay_us, uint64_t *events)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        vt_writer *w =
            child_writer(path, &(vt_writer_opts){.flush_ns = 1000000, .tbuf_bytes = 4096});
        pthread_t th[STRESS_THREADS];
        stress_arg args[STRESS_THREADS];
        for (uint32_t i = 0; i < STRESS_THREADS; i++) {
            args[i] = (stress_arg){w, i + 1};
            pthread_create(&th[i], NULL, stress_main, &args[i]);
        }
        pause();
        _exit(3);
    }
    usleep(delay_us);
    kill(pid, SIGKILL);
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    char err[256];
    if (access(path, F_OK) != 0) /* killed before it made the file (a loaded machine) */
        return;
    int rc = vt_recover(path, NULL, NULL, err, sizeof err);
    if (rc < 0)
        fail_msg("recover after %u us: %s", delay_us, err);
    vt_reader *r = vt_reader_open(path, err, sizeof err);
    if (!r) /* killed before the header was written: nothing to hold */
        return;
    uint64_t next[STRESS_THREADS + 1] = {0};
    vt_event ev;
    while ((rc = vt_reader_next(r, &ev)) == 1) {
        if (ev.type != VT_REC_ALLOC)
            continue;
        uint32_t tid = (uint32_t)(ev.u.alloc.addr >> 32);
        uint64_t seq = ev.u.alloc.addr & 0xffffffffu;
        assert_true(tid >= 1 && tid <= STRESS_THREADS);
        if (seq != next[tid])
            fail_msg("after %u us: thread %u: allocation %llu where %llu was due", delay_us, tid,
                     (unsigned long long)seq, (unsigned long long)next[tid]);
        next[tid]++;
        (*events)++;
    }
    assert_int_equal(rc, 0);
    assert_false(vt_reader_truncated(r));
    vt_reader_close(r);
}

static void test_kill_at_random_moments(void **state)
{
    (void)state;
    skip_without_spill_dir();
    char *dir = vtt_tmpdir(), path[1024];
    vtt_path(path, sizeof path, dir, "s.vtrace");
    uint64_t events = 0;
    srand(12345);
    for (int i = 0; i < STRESS_RUNS; i++) {
        unlink(path);
        kill_once(path, 2000 + (unsigned)(rand() % 30000), &events);
    }
    assert_true(events > 0);
    const char *names[] = {"s.vtrace"};
    vtt_rmdir(dir, names, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_killed),
        cmocka_unit_test(test_end_added),
        cmocka_unit_test(test_written_frame_not_repeated),
        cmocka_unit_test(test_cut_frame_replaced),
        cmocka_unit_test(test_damaged_chunk_cut),
        cmocka_unit_test(test_foreign_spill_refused),
        cmocka_unit_test(test_unfinished_spill),
        cmocka_unit_test(test_live_process_refused),
        cmocka_unit_test(test_closed_untouched),
        cmocka_unit_test(test_kill_at_random_moments),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
