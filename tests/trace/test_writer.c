/* test_writer.c: the writer's behaviour. Many threads (every event back
 * exactly once, per-thread order, global time order), back-pressure with a
 * tiny pool, O_EXCL/O_NOFOLLOW and mode 0600, the periodic flush (read while
 * the writer is open), failure on a full file, fork and fatal-signal flush. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "vt_test_util.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <sys/wait.h>

#define NTHREADS 8
#define PER_THREAD 100000

typedef struct mt_arg {
    vt_writer *w;
    uint32_t tid;
    pthread_barrier_t *start;
} mt_arg;

/* Thread tid writes PER_THREAD allocations: addr = tid << 32 | seq. */
static void *mt_main(void *p)
{
    mt_arg *a = p;
    vt_tbuf *tb = vt_writer_attach(a->w, a->tid);
    pthread_barrier_wait(a->start);
    if (!tb)
        return (void *)1;
    vt_event name = {.type = VT_REC_THREAD, .u.thread = {a->tid, "worker", 1}};
    intptr_t bad = vt_write(tb, &name) != 0;
    for (uint32_t seq = 0; seq < PER_THREAD && !bad; seq++) {
        vt_event e = {.type = VT_REC_ALLOC, .ts_ns = vtt_mono_ns()};
        e.u.alloc.addr = (uint64_t)a->tid << 32 | seq;
        e.u.alloc.size = seq;
        e.u.alloc.device = (int32_t)a->tid;
        bad = vt_write(tb, &e) != 0;
    }
    vt_writer_detach(a->w, tb);
    return (void *)bad;
}

/* Read back and check: every (tid, seq) once, per-thread order, global ts
 * order non-decreasing. */
static void check_mt(const char *path)
{
    char err[256];
    vt_reader *r = vt_reader_open(path, err, sizeof err);
    assert_non_null(r);
    uint32_t next[NTHREADS + 1] = {0};
    uint64_t last_ts = 0, nalloc = 0, nthread = 0;
    vt_event ev;
    int rc;
    while ((rc = vt_reader_next(r, &ev)) == 1) {
        if (ev.type == VT_REC_THREAD) {
            assert_string_equal(ev.u.thread.name, "worker");
            nthread++;
            continue;
        }
        assert_int_equal(ev.type, VT_REC_ALLOC);
        uint32_t tid = (uint32_t)(ev.u.alloc.addr >> 32), seq = (uint32_t)ev.u.alloc.addr;
        assert_true(tid >= 1 && tid <= NTHREADS);
        assert_int_equal(ev.thread_id, tid);
        assert_int_equal(seq, next[tid]); /* exactly once, in order */
        assert_int_equal(ev.u.alloc.size, seq);
        next[tid]++;
        assert_true(ev.ts_ns >= last_ts);
        last_ts = ev.ts_ns;
        nalloc++;
    }
    if (rc < 0)
        fail_msg("reader: %s", vt_reader_error(r));
    assert_int_equal(nalloc, (uint64_t)NTHREADS * PER_THREAD);
    assert_int_equal(nthread, NTHREADS);
    vt_reader_close(r);
}

static void run_mt(const vt_writer_opts *o)
{
    char *dir = vtt_tmpdir(), path[1024], err[256];
    vtt_path(path, sizeof path, dir, "mt.vtrace");
    vt_header h = vtt_header();
    vt_writer *w = vt_writer_open(path, &h, o, err, sizeof err);
    assert_non_null(w);
    pthread_t th[NTHREADS];
    mt_arg args[NTHREADS];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, NTHREADS);
    for (int i = 0; i < NTHREADS; i++) {
        args[i] = (mt_arg){w, (uint32_t)i + 1, &start};
        assert_int_equal(pthread_create(&th[i], NULL, mt_main, &args[i]), 0);
    }
    for (int i = 0; i < NTHREADS; i++) {
        void *bad;
        pthread_join(th[i], &bad);
        assert_null(bad);
    }
    pthread_barrier_destroy(&start);
    assert_int_equal(vt_writer_close(w), 0);
    check_mt(path);
    const char *names[] = {"mt.vtrace"};
    vtt_rmdir(dir, names, 1);
}

static void test_threads_with_writer_thread(void **state)
{
    (void)state;
    vt_writer_opts o = {.flush_ns = 5000000}; /* 5 ms: many epochs */
    run_mt(&o);
}

static void test_threads_backpressure(void **state)
{
    (void)state;
    /* Smallest buffers, no writer thread: the pool runs dry and the writing
     * threads flush themselves. */
    vt_writer_opts o = {.tbuf_bytes = 1, .no_thread = true};
    run_mt(&o);
}

static void test_excl_nofollow_mode(void **state)
{
    (void)state;
    char *dir = vtt_tmpdir(), path[1024], link[1024], target[1024], err[256];
    vtt_path(path, sizeof path, dir, "new.vtrace");
    vtt_path(link, sizeof link, dir, "link.vtrace");
    vtt_path(target, sizeof target, dir, "target");
    vt_header h = vtt_header();
    mode_t old = umask(022);
    vt_writer *w = vt_writer_open(path, &h, NULL, err, sizeof err);
    umask(old);
    assert_non_null(w);
    assert_int_equal(vt_writer_close(w), 0);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    off_t size = st.st_size;
    /* An existing file is refused and left as it was. */
    assert_null(vt_writer_open(path, &h, NULL, err, sizeof err));
    assert_non_null(strstr(err, strerror(EEXIST)));
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_size, size);
    /* A dangling symlink is not followed: the target is not created. */
    assert_int_equal(symlink(target, link), 0);
    assert_null(vt_writer_open(link, &h, NULL, err, sizeof err));
    assert_int_equal(access(target, F_OK), -1);
    /* A symlink to an existing file: refused, the file untouched. */
    unlink(link);
    assert_int_equal(symlink(path, link), 0);
    assert_null(vt_writer_open(link, &h, NULL, err, sizeof err));
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_size, size);
    const char *names[] = {"new.vtrace", "link.vtrace", "target"};
    vtt_rmdir(dir, names, 3);
}

/* Count the events in path; -1 on a read error. */
static long count_events(const char *path, bool *truncated)
{
    char err[256];
    vt_reader *r = vt_reader_open(path, err, sizeof err);
    if (!r)
        return -1;
    vt_event ev;
    long n = 0;
    int rc;
    while ((rc = vt_reader_next(r, &ev)) == 1)
        n++;
    *truncated = vt_reader_truncated(r);
    vt_reader_close(r);
    return rc < 0 ? -1 : n;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

static void test_periodic_flush(void **state)
{
    (void)state;
    char *dir = vtt_tmpdir(), path[1024], err[256];
    vtt_path(path, sizeof path, dir, "live.vtrace");
    vt_header h = vtt_header();
    vt_writer *w = vt_writer_open(path, &h, NULL, err, sizeof err); /* default 100 ms */
    assert_non_null(w);
    vt_tbuf *tb = vt_writer_attach(w, 1);
    for (int i = 0; i < 50; i++) {
        vt_event e = {.type = VT_REC_ALLOC, .ts_ns = vtt_mono_ns()};
        e.u.alloc.addr = 0x1000 + (uint64_t)i;
        assert_int_equal(vt_write(tb, &e), 0);
    }
    /* Nothing calls flush or close: only the writer thread can put these on
     * disk. Wait past the interval; on a loaded machine, poll a while. */
    bool truncated = true;
    long n = 0;
    for (int tries = 0; tries < 100 && n != 50; tries++) {
        sleep_ms(150);
        n = count_events(path, &truncated);
    }
    assert_int_equal(n, 50);
    assert_false(truncated);
    vt_writer_detach(w, tb);
    assert_int_equal(vt_writer_close(w), 0);
    const char *names[] = {"live.vtrace"};
    vtt_rmdir(dir, names, 1);
}

/* The trace's summary: in path's reader (and in an image of the file) as
 * written; *events: how many the reader gives. */
static bool read_summary(const char *path, vt_summary *out, long *events)
{
    char err[256];
    bool truncated;
    vt_reader *r = vt_reader_open(path, err, sizeof err);
    assert_non_null(r);
    bool has = vt_reader_summary(r, out);
    vt_reader_close(r);
    *events = count_events(path, &truncated);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    static uint8_t image[1 << 16];
    size_t n = fread(image, 1, sizeof image, f);
    fclose(f);
    vt_summary mem = {0};
    r = vt_reader_open_mem(image, n, err, sizeof err);
    assert_non_null(r);
    assert_int_equal(vt_reader_summary(r, &mem), has);
    if (has)
        assert_int_equal(mem.peak_live, out->peak_live);
    vt_reader_close(r);
    return has;
}

static void write_n(vt_tbuf *tb, uint64_t first, int n)
{
    for (int i = 0; i < n; i++) {
        vt_event e = {.type = VT_REC_ALLOC, .ts_ns = vtt_mono_ns()};
        e.u.alloc.addr = first + (uint64_t)i;
        assert_int_equal(vt_write(tb, &e), 0);
    }
}

/* Write a trace of 50 allocations, with a summary of peak_live unless 0. */
static void write_summarized(const char *path, uint64_t peak_live)
{
    char err[256];
    vt_header h = vtt_header();
    vt_writer *w = vt_writer_open(path, &h, &(vt_writer_opts){.no_thread = true}, err, sizeof err);
    assert_non_null(w);
    vt_tbuf *tb = vt_writer_attach(w, 1);
    write_n(tb, 0x1000, 50);
    vt_writer_detach(w, tb);
    if (peak_live)
        vt_writer_set_summary(w, &(vt_summary){.peak_live = peak_live});
    assert_int_equal(vt_writer_close(w), 0);
}

/* The summary ends a closed trace and is read back, and the events read are
 * the same with it; without one (never set, the file cut inside it, its tag
 * damaged) the reader has none and still gives every event. */
static void test_summary(void **state)
{
    (void)state;
    char *dir = vtt_tmpdir(), path[1024], bare[1024];
    vtt_path(path, sizeof path, dir, "sum.vtrace");
    vtt_path(bare, sizeof bare, dir, "bare.vtrace");
    write_summarized(path, 12345678901ull);
    write_summarized(bare, 0);
    vt_summary sum = {0};
    long events = 0;
    assert_true(read_summary(path, &sum, &events));
    assert_int_equal(sum.peak_live, 12345678901ull);
    assert_int_equal(events, 50);
    assert_false(read_summary(bare, &sum, &events));
    assert_int_equal(events, 50);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    FILE *f = fopen(path, "r+b"); /* damage the tag: VTSUMARY -> VTSUMARX */
    assert_non_null(f);
    assert_int_equal(fseek(f, -9, SEEK_END), 0);
    assert_int_equal(fputc('X', f), 'X');
    fclose(f);
    assert_false(read_summary(path, &sum, &events));
    assert_int_equal(events, 50);
    assert_int_equal(truncate(path, st.st_size - 1), 0); /* cut inside the frame */
    assert_false(read_summary(path, &sum, &events));
    assert_int_equal(events, 50);
    const char *names[] = {"sum.vtrace", "bare.vtrace"};
    vtt_rmdir(dir, names, 2);
}

/* In a child (its own file-size limit): write until the writer fails. */
static int full_disk_child(const char *path)
{
    struct rlimit rl = {8192, 8192};
    /* SIGXFSZ keeps its default action (kill): the writer must block it. */
    if (setrlimit(RLIMIT_FSIZE, &rl) < 0)
        return 10;
    char err[256];
    vt_header h = vtt_header();
    vt_writer_opts o = {.no_thread = true, .zstd_level = -7};
    vt_writer *w = vt_writer_open(path, &h, &o, err, sizeof err);
    if (!w)
        return 11;
    vt_tbuf *tb = vt_writer_attach(w, 1);
    int rc = 0;
    for (uint64_t i = 0; i < 200000 && rc == 0; i++) {
        vt_event e = {.type = VT_REC_ALLOC, .ts_ns = i * 7919};
        e.u.alloc.addr = i * 0x9e3779b97f4a7c15ull; /* incompressible */
        rc = vt_write(tb, &e);
        if (rc == 0 && i % 1000 == 999)
            rc = vt_writer_flush(w);
    }
    const char *msg = vt_writer_error(w);
    if (rc == 0 || !msg || !strstr(msg, strerror(EFBIG)))
        return 12;
    vt_event e = {.type = VT_REC_FREE};
    if (vt_write(tb, &e) != -1 || vt_writer_flush(w) != -1)
        return 13;
    vt_writer_detach(w, tb);
    return vt_writer_close(w) == -1 ? 0 : 14;
}

static void test_write_failure(void **state)
{
    (void)state;
    char *dir = vtt_tmpdir(), path[1024];
    vtt_path(path, sizeof path, dir, "full.vtrace");
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        _exit(full_disk_child(path));
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    /* What was written before the failure still reads back without error. */
    bool truncated;
    assert_true(count_events(path, &truncated) >= 0);
    const char *names[] = {"full.vtrace"};
    vtt_rmdir(dir, names, 1);
}

static void test_fork_abandon(void **state)
{
    (void)state;
    char *dir = vtt_tmpdir(), path[1024], err[256];
    vtt_path(path, sizeof path, dir, "fork.vtrace");
    vt_header h = vtt_header();
    vt_writer *w = vt_writer_open(path, &h, NULL, err, sizeof err);
    assert_non_null(w);
    vt_tbuf *tb = vt_writer_attach(w, 1);
    write_n(tb, 0, 100);
    assert_int_equal(vt_writer_flush(w), 0);
    write_n(tb, 100, 100); /* pending in the buffer at fork time */
    struct stat before, after;
    assert_int_equal(stat(path, &before), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        vt_writer_abandon_after_fork(w);
        vt_event e = {.type = VT_REC_ALLOC};
        int ok = vt_write(tb, &e) == -1 && vt_writer_error(w) != NULL;
        _exit(ok ? 0 : 1);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    assert_int_equal(stat(path, &after), 0);
    assert_true(after.st_size >= before.st_size); /* never truncated by the child */
    write_n(tb, 200, 100);
    vt_writer_detach(w, tb);
    assert_int_equal(vt_writer_close(w), 0);
    bool truncated;
    assert_int_equal(count_events(path, &truncated), 300); /* the child added nothing */
    const char *names[] = {"fork.vtrace"};
    vtt_rmdir(dir, names, 1);
}

/* The descriptor the writer holds for path (found in /proc/self/fd), or -1. */
static int trace_fd(const char *path)
{
    for (int fd = 0; fd < 4096; fd++) {
        char link[64], target[1024];
        snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
        ssize_t n = readlink(link, target, sizeof target - 1);
        if (n > 0 && (target[n] = '\0', strstr(target, path) || strstr(path, target)))
            return fd;
    }
    return -1;
}

/* The program closes the trace's descriptor and opens its own file on that
 * number, then dup2()s another file over the new one: the writer never
 * writes into either, reopens the trace and keeps every event. */
static void test_descriptor_taken(void **state)
{
    (void)state;
    char *dir = vtt_tmpdir(), path[1024], data[1024], err[256];
    vtt_path(path, sizeof path, dir, "own.vtrace");
    vtt_path(data, sizeof data, dir, "data");
    vt_header h = vtt_header();
    vt_writer_opts o = {.no_thread = true};
    vt_writer *w = vt_writer_open(path, &h, &o, err, sizeof err);
    assert_non_null(w);
    int fd = trace_fd(path);
    assert_true(fd >= 64); /* away from the program's low descriptors */
    assert_int_equal(fcntl(fd, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
    vt_tbuf *tb = vt_writer_attach(w, 1);
    write_n(tb, 0, 100);
    assert_int_equal(vt_writer_flush(w), 0);
    close(fd);
    int dfd = open(data, O_RDWR | O_CREAT | O_TRUNC, 0600);
    assert_true(dfd >= 0);
    assert_int_equal(write(dfd, "17 bytes of data\n", 17), 17);
    assert_int_equal(dup2(dfd, fd), fd);
    write_n(tb, 100, 100);
    assert_int_equal(vt_writer_flush(w), 0);
    int nfd = trace_fd(path);
    assert_true(nfd >= 0 && nfd != fd);
    assert_int_equal(dup2(dfd, nfd), nfd); /* and again */
    write_n(tb, 200, 100);
    vt_writer_detach(w, tb);
    assert_int_equal(vt_writer_close(w), 0);
    struct stat st;
    assert_int_equal(fstat(dfd, &st), 0);
    assert_int_equal(st.st_size, 17);             /* the program's file is untouched */
    assert_int_equal(fcntl(fd, F_GETFD) >= 0, 1); /* its descriptors stay open */
    assert_int_equal(fcntl(nfd, F_GETFD) >= 0, 1);
    close(fd);
    close(nfd);
    close(dfd);
    bool truncated;
    assert_int_equal(count_events(path, &truncated), 300);
    assert_false(truncated);
    const char *names[] = {"own.vtrace", "data"};
    vtt_rmdir(dir, names, 2);
}

/* ---- Fatal-signal flush ------------------------------------------------------- */

static vt_writer *sig_writer; /* what the handler flushes (tests only) */

static void on_sigusr1(int sig)
{
    (void)sig;
    vt_writer_flush_from_signal(sig_writer);
}

static void test_signal_flush(void **state)
{
    (void)state;
    char *dir = vtt_tmpdir(), path[1024], err[256];
    vtt_path(path, sizeof path, dir, "sig.vtrace");
    vt_header h = vtt_header();
    vt_writer_opts o = {.no_thread = true};
    sig_writer = vt_writer_open(path, &h, &o, err, sizeof err);
    assert_non_null(sig_writer);
    vt_tbuf *tb = vt_writer_attach(sig_writer, 1);
    write_n(tb, 0, 40);
    struct sigaction sa = {.sa_handler = on_sigusr1}, old;
    sigaction(SIGUSR1, &sa, &old);
    raise(SIGUSR1);
    bool truncated;
    assert_int_equal(count_events(path, &truncated), 40); /* on disk without close */
    write_n(tb, 40, 10);
    vt_writer_detach(sig_writer, tb);
    assert_int_equal(vt_writer_close(sig_writer), 0);
    sigaction(SIGUSR1, &old, NULL);
    assert_int_equal(count_events(path, &truncated), 50); /* nothing twice */
    const char *names[] = {"sig.vtrace"};
    vtt_rmdir(dir, names, 1);
}

typedef struct sig_arg {
    vt_writer *w;
    atomic_int *stop;
    long written;
} sig_arg;

static void *sig_writer_main(void *p)
{
    sig_arg *a = p;
    vt_tbuf *tb = vt_writer_attach(a->w, 2);
    while (!atomic_load(a->stop)) {
        vt_event e = {.type = VT_REC_ALLOC, .ts_ns = vtt_mono_ns()};
        e.u.alloc.addr = (uint64_t)a->written;
        if (vt_write(tb, &e) != 0)
            break;
        a->written++;
    }
    vt_writer_detach(a->w, tb);
    return NULL;
}

/* Signals land on a thread in the middle of vt_write (its buffer locked) and
 * while the writer thread flushes: no deadlock, every event once. */
static void test_signal_flush_under_load(void **state)
{
    (void)state;
    char *dir = vtt_tmpdir(), path[1024], err[256];
    vtt_path(path, sizeof path, dir, "sigload.vtrace");
    vt_header h = vtt_header();
    vt_writer_opts o = {.flush_ns = 2000000, .tbuf_bytes = 1};
    sig_writer = vt_writer_open(path, &h, &o, err, sizeof err);
    assert_non_null(sig_writer);
    struct sigaction sa = {.sa_handler = on_sigusr1, .sa_flags = SA_RESTART}, old;
    sigaction(SIGUSR1, &sa, &old);
    atomic_int stop = 0;
    sig_arg a = {sig_writer, &stop, 0};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, sig_writer_main, &a), 0);
    for (int i = 0; i < 2000; i++) {
        pthread_kill(th, SIGUSR1);
        if (i % 64 == 0)
            sched_yield();
    }
    atomic_store(&stop, 1);
    pthread_join(th, NULL);
    assert_int_equal(vt_writer_close(sig_writer), 0);
    sigaction(SIGUSR1, &old, NULL);
    vt_reader *r = vt_reader_open(path, err, sizeof err);
    assert_non_null(r);
    vt_event ev;
    long n = 0;
    while (vt_reader_next(r, &ev) == 1) {
        assert_int_equal(ev.u.alloc.addr, (uint64_t)n); /* once, in order */
        n++;
    }
    assert_null(vt_reader_error(r));
    assert_int_equal(n, a.written);
    vt_reader_close(r);
    const char *names[] = {"sigload.vtrace"};
    vtt_rmdir(dir, names, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_threads_with_writer_thread),
        cmocka_unit_test(test_threads_backpressure),
        cmocka_unit_test(test_excl_nofollow_mode),
        cmocka_unit_test(test_periodic_flush),
        cmocka_unit_test(test_summary),
        cmocka_unit_test(test_write_failure),
        cmocka_unit_test(test_fork_abandon),
        cmocka_unit_test(test_descriptor_taken),
        cmocka_unit_test(test_signal_flush),
        cmocka_unit_test(test_signal_flush_under_load),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
