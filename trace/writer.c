/* writer.c: per-thread buffers, the writer thread and zstd frames.
 *
 * Each attached thread encodes records straight into its current chunk. Its
 * common case takes no lock and no atomic read-modify-write: the owner marks
 * itself busy (a plain store), checks that no flush has frozen its buffer,
 * writes, and clears busy (a release store). A flush takes the buffer's lock,
 * sets frozen, runs the asymmetric barrier (Linux membarrier, private
 * expedited: every thread of the process passes a full barrier, so an owner
 * either sees frozen or its busy is seen) and waits for busy to clear. Every
 * other case (a full chunk, a frozen buffer, no membarrier) writes under the
 * tbuf's lock, as before.
 * A full chunk goes to the full queue and the thread takes a fresh one from a
 * bounded pool (2 per attached thread + POOL_SPARE); a queue holding half of
 * that budget wakes the writer thread for a flush before its interval is
 * up, and when the pool is exhausted all the same the thread flushes itself
 * (back-pressure, never unbounded memory).
 *
 * Epoch rule: a flush takes every tbuf lock, swaps every current chunk out
 * (and takes the full queue, which holds older chunks), releases the locks,
 * then compresses the whole epoch as one batch = one zstd frame.
 *
 * Lock order: flush_lock -> list_lock -> tbuf locks -> q_lock. */
#define _GNU_SOURCE
#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_initStaticCCtx: no malloc in a signal handler */
#include "spill.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sched.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#define DEFAULT_TBUF_BYTES (64u << 10)
#define MIN_TBUF_BYTES (2u * VT_REC_MAX)
#define MAX_TBUF_BYTES (16u << 20)
#define POOL_SPARE 8u
/* zstd level when opts say 0. Level 1 rather than 3: on the GAN training's
 * trace (bench/perf.py gan, 191 KB of records) it compresses for about 2.5 M
 * fewer instructions (of some 9.7 M) at a ratio of 2.04 instead of 2.14; on
 * the pairs trace (d20) its bytes per event are level 3's within the run to
 * run noise. Negative levels cost more size than they save (-1: GAN ratio
 * 1.78, d20 about 1.4 times the bytes; -3: 1.57 and 2 to 4 times). */
#define DEFAULT_ZSTD_LEVEL 1
/* The trace's descriptor is moved at or above this number (or just below
 * RLIMIT_NOFILE when that is lower), away from the program's own. */
#define FD_FLOOR 1000
/* The most a spill file takes (bytes): past it, chunks are malloc'd (a
 * SIGKILL then loses what they hold). 16 MiB: 2 chunks of 64 KiB for each
 * of some 120 threads. */
#define SPILL_MAX (16u << 20)

struct vt_tbuf {
    pthread_mutex_t lock;
    vt_writer *w;
    vt_tbuf *next;      /* in w->tbufs, under list_lock */
    vt_chunk *cur;      /* under lock; NULL until the next write */
    atomic_bool dead;   /* the writer was closed: vt_write returns -1 */
    atomic_int busy;    /* the owner is in a lock-free write (owner stores only) */
    atomic_int frozen;  /* a flush holds lock and owns cur: owners take the lock */
    bool signal_locked; /* vt_writer_flush_from_signal holds lock */
    uint32_t thread_id;
};

struct vt_writer {
    int fd;    /* under flush_lock once the writer thread runs */
    dev_t dev; /* identity of the file created, checked before each write */
    ino_t ino;
    char path[4096]; /* absolute, to reopen the same file (fd_reclaim) */
    size_t tbuf_bytes;
    uint64_t flush_ns;
    bool has_thread;
    bool asym; /* membarrier registered: lock-free writes (see the top) */
    pthread_t thread;

    pthread_mutex_t flush_lock; /* one flush at a time; owns cctx and out */
    ZSTD_CCtx *cctx;            /* static: never allocates after open */
    void *cctx_mem;
    uint8_t *out;
    size_t out_cap;

    pthread_mutex_t list_lock; /* tbufs */
    vt_tbuf *tbufs;
    atomic_uint nattached;

    pthread_mutex_t q_lock; /* full queue, pool, nchunks, stop, flush_req */
    pthread_cond_t q_cond;
    vt_chunk *full_head, **full_tail;
    vt_chunk *pool;
    unsigned nchunks;
    unsigned nqueued; /* chunks in the full queue */
    bool stop;
    bool flush_req; /* the full queue asks the writer thread for a flush */

    _Atomic uint64_t ts_floor; /* CLOCK_MONOTONIC at the last swap; set while all are frozen */
    atomic_bool failed;
    atomic_flag err_claimed;
    atomic_uint_least64_t bytes;
    char err[256];
    bool has_summary; /* summary: written by vt_writer_close */
    vt_summary summary;

    /* The spill file (spill.h); spill NULL when chunks are malloc'd. */
    vt_spill_head *spill;
    char spill_path[128];
    uint64_t spill_size;    /* bytes of the file in use; under q_lock */
    vt_chunk *spill_chunks; /* every spilled chunk, newest first; under q_lock */
    atomic_uint_least64_t chunk_seq;
};

/* ---- Small helpers -------------------------------------------------------- */

/* Record the first error and stop the writer. */
static void set_error(vt_writer *w, const char *fmt, ...)
{
    if (!atomic_flag_test_and_set(&w->err_claimed)) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(w->err, sizeof w->err, fmt, ap);
        va_end(ap);
    }
    atomic_store(&w->failed, true);
}

static bool failed(const vt_writer *w)
{
    return atomic_load_explicit(&w->failed, memory_order_acquire);
}

/* write() all of [p, p+n); 0 or an errno value. Async-signal-safe. */
static int write_all(int fd, const uint8_t *p, size_t n)
{
    while (n > 0) {
        ssize_t k = write(fd, p, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return errno;
        if (k == 0)
            return EIO;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

/* ---- The trace's own descriptor ------------------------------------------- */

/* Move fd to a close-on-exec number at FD_FLOOR or above; returns the new
 * descriptor (the old one is closed) or fd itself when that fails. */
static int fd_move_high(int fd)
{
    struct rlimit rl;
    int floor = FD_FLOOR;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
        rl.rlim_cur < (rlim_t)FD_FLOOR + 32)
        floor = rl.rlim_cur > 64 ? (int)rl.rlim_cur - 32 : 3;
    int hi = fcntl(fd, F_DUPFD_CLOEXEC, floor);
    if (hi < 0)
        return fd;
    close(fd);
    return hi;
}

/* Is w->fd still the file the writer created (device and inode)? The
 * program may have closed it and opened its own file on the same number,
 * or dup2()ed over it. Async-signal-safe. */
static bool fd_is_ours(const vt_writer *w)
{
    struct stat st;
    return w->fd >= 0 && fstat(w->fd, &st) == 0 && st.st_dev == w->dev && st.st_ino == w->ino;
}

/* The descriptor is no longer the trace's: reopen the same file (append,
 * never created or truncated, never through a link) on a new descriptor; the
 * old number is left alone, it is the program's now. 0, or ESTALE when the
 * file is gone (w->fd = -1). Async-signal-safe. */
static int fd_reclaim(vt_writer *w)
{
    struct stat st;
    int fd = open(w->path, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0 && (fstat(fd, &st) != 0 || st.st_dev != w->dev || st.st_ino != w->ino)) {
        close(fd);
        fd = -1;
    }
    w->fd = fd >= 0 ? fd_move_high(fd) : -1;
    return fd >= 0 ? 0 : ESTALE;
}

/* Block SIGXFSZ (old mask into *old); true when one was already pending. */
static bool xfsz_block(sigset_t *old)
{
    sigset_t xfsz, pending;
    sigemptyset(&xfsz);
    sigaddset(&xfsz, SIGXFSZ);
    pthread_sigmask(SIG_BLOCK, &xfsz, old);
    return sigpending(&pending) == 0 && sigismember(&pending, SIGXFSZ);
}

/* Consume the SIGXFSZ that an EFBIG (e) raised, unless one was pending
 * before, and restore the mask. */
static void xfsz_unblock(const sigset_t *old, bool was_pending, int e)
{
    sigset_t xfsz;
    sigemptyset(&xfsz);
    sigaddset(&xfsz, SIGXFSZ);
    if (e == EFBIG && !was_pending)
        sigtimedwait(&xfsz, NULL, &(struct timespec){0, 0});
    pthread_sigmask(SIG_SETMASK, old, NULL);
}

/* Write to the trace's own file only, with SIGXFSZ blocked: at the file size
 * limit (RLIMIT_FSIZE) write() fails with EFBIG and the signal it raised is
 * consumed, so the program is not killed for the trace's size. 0 or an errno
 * value (ESTALE: the file could not be reopened). flush_lock held. */
static int write_guarded(vt_writer *w, const uint8_t *p, size_t n)
{
    if (!fd_is_ours(w) && fd_reclaim(w) != 0)
        return ESTALE;
    sigset_t old;
    bool was_pending = xfsz_block(&old);
    int e = write_all(w->fd, p, n);
    xfsz_unblock(&old, was_pending, e);
    return e;
}

/* c starts empty for thread_id: the next in the writer's order, holding
 * records not yet written (spill.h). Async-signal-safe. */
static void chunk_init(vt_writer *w, vt_chunk *c, uint32_t thread_id)
{
    c->next = NULL;
    c->thread_id = thread_id;
    c->len = 0;
    memset(&c->d, 0, sizeof c->d);
    c->seq = atomic_fetch_add(&w->chunk_seq, 1) + 1;
    atomic_store_explicit(&c->state, VT_SPILL_FILLING, memory_order_release);
}

/* ---- The spill file (spill.h) ---------------------------------------------- */

void vt_spill_path(dev_t dev, ino_t ino, char *buf, size_t len)
{
    snprintf(buf, len, VT_SPILL_DIR "/vramtrace-%llu-%llu.spill", (unsigned long long)dev,
             (unsigned long long)ino);
}

static size_t slot_bytes(const vt_writer *w)
{
    size_t page = VT_SPILL_HEAD_BYTES;
    return (sizeof(vt_chunk) + w->tbuf_bytes + page - 1) / page * page;
}

/* Map len bytes of the spill file at off (allocated first, so that a full
 * tmpfs fails here and never with SIGBUS on a later store). NULL on any
 * failure. The descriptor is closed again: the program sees none. */
static void *spill_map(const vt_writer *w, int flags, uint64_t off, size_t len)
{
    int fd = open(w->spill_path, flags | O_RDWR | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return NULL;
    sigset_t old;
    bool was_pending = xfsz_block(&old); /* RLIMIT_FSIZE counts this file too */
    int e = posix_fallocate(fd, (off_t)off, (off_t)len);
    xfsz_unblock(&old, was_pending, e);
    void *p =
        e == 0 ? mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)off) : MAP_FAILED;
    close(fd);
    return p == MAP_FAILED ? NULL : p;
}

/* Create the spill file of the trace just created (dev, ino, pid). On any
 * failure the writer keeps its chunks in malloc'd memory, as before: a
 * SIGKILL then loses what was not yet written. */
static void spill_open(vt_writer *w, uint32_t pid)
{
    vt_spill_path(w->dev, w->ino, w->spill_path, sizeof w->spill_path);
    unlink(w->spill_path); /* a stale one: its trace (this inode) is gone */
    vt_spill_head *h = spill_map(w, O_CREAT | O_EXCL, 0, VT_SPILL_HEAD_BYTES);
    if (!h)
        return;
    h->slot_bytes = (uint32_t)slot_bytes(w);
    h->pid = pid;
    h->trace_dev = (uint64_t)w->dev;
    h->trace_ino = (uint64_t)w->ino;
    atomic_store(&h->pending, 0);
    atomic_store_explicit((_Atomic uint64_t *)&h->magic, VT_SPILL_MAGIC, memory_order_release);
    w->spill = h;
    w->spill_size = VT_SPILL_HEAD_BYTES;
}

/* A new chunk in the next slot of the spill file; NULL when there is no
 * spill file, it holds SPILL_MAX bytes already (/dev/shm is shared with the
 * program: PyTorch's DataLoader passes batches through it) or cannot grow.
 * q_lock held. */
static vt_chunk *spill_chunk_locked(vt_writer *w)
{
    size_t n = slot_bytes(w);
    bool room = w->spill && w->spill_size + n <= SPILL_MAX;
    vt_chunk *c = room ? spill_map(w, 0, w->spill_size, n) : NULL;
    if (!c)
        return NULL;
    w->spill_size += n;
    c->spilled = true;
    c->spill_next = w->spill_chunks;
    w->spill_chunks = c;
    return c;
}

/* Give every spill mapping back: munmap (close) or, in a forked child,
 * private zero pages at the same addresses, so that no store of the child
 * reaches the parent's file and no stale pointer faults. */
static void spill_release(vt_writer *w, bool in_child)
{
    size_t n = slot_bytes(w);
    for (vt_chunk *c = w->spill_chunks, *next; c; c = next) {
        next = c->spill_next;
        if (in_child)
            mmap(c, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
        else
            munmap(c, n);
    }
    if (w->spill && in_child)
        mmap(w->spill, VT_SPILL_HEAD_BYTES, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    else if (w->spill)
        munmap(w->spill, VT_SPILL_HEAD_BYTES);
    if (in_child)
        return;
    w->spill_chunks = NULL;
    w->spill = NULL;
}

/* Mark the chunks [first, last) with data as state (spill.h's order). */
static void mark_chunks(vt_chunk *first, vt_chunk *last, uint32_t state)
{
    for (vt_chunk *c = first; c != last; c = c->next)
        if (c->len)
            atomic_store_explicit(&c->state, state, memory_order_release);
}

static void set_pending(vt_writer *w, uint64_t off)
{
    if (w->spill)
        atomic_store_explicit(&w->spill->pending, off, memory_order_release);
}

/* ---- Pool and full queue (q_lock held) -------------------------------------- */

static unsigned chunk_limit(vt_writer *w)
{
    return 2 * atomic_load(&w->nattached) + POOL_SPARE;
}

static vt_chunk *pool_get_locked(vt_writer *w)
{
    vt_chunk *c = w->pool;
    if (c) {
        w->pool = c->next;
        return c;
    }
    if (w->nchunks >= chunk_limit(w))
        return NULL;
    c = spill_chunk_locked(w);
    if (!c && (c = malloc(sizeof *c + w->tbuf_bytes)) != NULL)
        c->spilled = false;
    if (!c) {
        set_error(w, "out of memory for a %zu-byte trace buffer", w->tbuf_bytes);
        return NULL;
    }
    w->nchunks++;
    c->cap = w->tbuf_bytes;
    c->len = 0;
    atomic_init(&c->state, VT_SPILL_FREE);
    return c;
}

/* A chunk no longer needed goes back to the pool; a malloc'd one over the
 * budget is freed (a spilled one stays pooled: its slot is the file's). */
static void pool_put_locked(vt_writer *w, vt_chunk *c)
{
    if (w->nchunks > chunk_limit(w) && !c->spilled) {
        w->nchunks--;
        free(c);
        return;
    }
    c->next = w->pool;
    w->pool = c;
}

/* Queue a full chunk; once half of the chunk budget waits, wake the
 * writer thread for a flush, so that at a high event rate the compression
 * runs there instead of in the recording thread that finds the pool empty
 * (refill's back-pressure) before the flush interval is up. */
static void queue_push_locked(vt_writer *w, vt_chunk *c)
{
    c->next = NULL;
    *w->full_tail = c;
    w->full_tail = &c->next;
    if (++w->nqueued >= chunk_limit(w) / 2 && !w->flush_req) {
        w->flush_req = true;
        pthread_cond_broadcast(&w->q_cond);
    }
}

/* Take the whole full queue (oldest first). */
static vt_chunk *queue_take_locked(vt_writer *w, vt_chunk ***tail)
{
    vt_chunk *head = w->full_head;
    *tail = head ? w->full_tail : NULL;
    w->full_head = NULL;
    w->full_tail = &w->full_head;
    w->nqueued = 0;
    return head;
}

/* Give a thread's chunk back: to the queue if it holds data, else the pool. */
static void retire_chunk(vt_writer *w, vt_chunk *c)
{
    pthread_mutex_lock(&w->q_lock);
    if (c->len)
        queue_push_locked(w, c);
    else
        pool_put_locked(w, c);
    pthread_mutex_unlock(&w->q_lock);
}

/* ---- Compression ---------------------------------------------------------- */

/* Feed [p, p+n) to the frame being built (mode continue or end), writing
 * compressed output as it fills. 0, or -1 with *errnum set (0 = zstd). */
static int compress_piece(vt_writer *w, const void *p, size_t n, ZSTD_EndDirective mode,
                          int *errnum)
{
    ZSTD_inBuffer in = {p, n, 0};
    for (;;) {
        ZSTD_outBuffer out = {w->out, w->out_cap, 0};
        size_t left = ZSTD_compressStream2(w->cctx, &out, &in, mode);
        if (ZSTD_isError(left)) {
            *errnum = 0;
            return -1;
        }
        if (out.pos && (*errnum = write_guarded(w, w->out, out.pos)) != 0)
            return -1;
        atomic_fetch_add(&w->bytes, out.pos);
        bool done = mode == ZSTD_e_end ? left == 0 : in.pos == in.size;
        if (done)
            return 0;
    }
}

static size_t chunk_frame_bytes(const vt_chunk *c, uint8_t *hdr)
{
    return vt_chunk_hdr_encode(hdr, c->thread_id, c->d.base_ts, c->len) + c->len;
}

/* Write the chunks from *cp on as one frame, stopping at the frame caps;
 * advances *cp. 0 or -1 (*errnum as compress_piece). */
static int write_frame(vt_writer *w, vt_chunk **cp, int *errnum)
{
    uint8_t hdr[VT_CHUNK_HDR_MAX];
    size_t total = 0, nchunks = 0;
    vt_chunk *first = *cp, *last = *cp;
    for (vt_chunk *c = *cp; c; c = c->next) {
        size_t n = c->len ? chunk_frame_bytes(c, hdr) : 0;
        if (nchunks && (total + n > VT_FRAME_CONTENT_MAX || nchunks == VT_MAX_CHUNKS))
            break;
        total += n;
        nchunks += n > 0;
        last = c->next;
    }
    *cp = last;
    if (!nchunks)
        return 0;
    set_pending(w, atomic_load(&w->bytes));
    mark_chunks(first, last, VT_SPILL_FRAMING);
    ZSTD_CCtx_reset(w->cctx, ZSTD_reset_session_only);
    ZSTD_CCtx_setPledgedSrcSize(w->cctx, total);
    for (vt_chunk *c = first; c != last; c = c->next) {
        if (!c->len)
            continue;
        size_t hn = vt_chunk_hdr_encode(hdr, c->thread_id, c->d.base_ts, c->len);
        if (compress_piece(w, hdr, hn, ZSTD_e_continue, errnum) < 0 ||
            compress_piece(w, c->data, c->len, ZSTD_e_continue, errnum) < 0)
            return -1;
    }
    if (compress_piece(w, NULL, 0, ZSTD_e_end, errnum) < 0)
        return -1;
    set_pending(w, 0);
    mark_chunks(first, last, VT_SPILL_FREE);
    return 0;
}

/* Write a batch (usually one frame). 0, or -1 with *errnum as above. */
static int write_batch(vt_writer *w, vt_chunk *batch, int *errnum)
{
    while (batch)
        if (write_frame(w, &batch, errnum) < 0)
            return -1;
    return 0;
}

/* ---- Flush ------------------------------------------------------------------ */

/* list_lock and every tbuf lock held: owners stop writing without the lock;
 * returns when none is inside such a write. */
static void freeze_all(vt_writer *w)
{
    if (!w->asym)
        return;
    for (vt_tbuf *tb = w->tbufs; tb; tb = tb->next)
        atomic_store_explicit(&tb->frozen, 1, memory_order_relaxed);
    vt_barrier_all();
    for (vt_tbuf *tb = w->tbufs; tb; tb = tb->next)
        while (atomic_load_explicit(&tb->busy, memory_order_acquire))
            sched_yield();
}

static void thaw(vt_tbuf *tb)
{
    atomic_store_explicit(&tb->frozen, 0, memory_order_release);
}

/* The epoch swap: lock every tbuf, take the full queue and every current
 * chunk holding data, raise the timestamp floor, unlock. With kill, also
 * mark every tbuf dead (vt_writer_close). Returns the batch, oldest first. */
static vt_chunk *swap_all(vt_writer *w, bool kill)
{
    vt_chunk *head, **tail;
    pthread_mutex_lock(&w->list_lock);
    for (vt_tbuf *tb = w->tbufs; tb; tb = tb->next)
        pthread_mutex_lock(&tb->lock);
    freeze_all(w);
    uint64_t now = vt_clock_ns();
    if (now > atomic_load_explicit(&w->ts_floor, memory_order_relaxed))
        atomic_store_explicit(&w->ts_floor, now, memory_order_relaxed);
    pthread_mutex_lock(&w->q_lock);
    head = queue_take_locked(w, &tail);
    pthread_mutex_unlock(&w->q_lock);
    if (!head)
        tail = &head;
    for (vt_tbuf *tb = w->tbufs; tb; tb = tb->next) {
        /* With kill, empty chunks go too (written as nothing, then pooled). */
        if (tb->cur && (tb->cur->len || kill)) {
            *tail = tb->cur;
            tail = &tb->cur->next;
            tb->cur->next = NULL;
            tb->cur = NULL;
        }
        if (kill)
            atomic_store(&tb->dead, true);
    }
    for (vt_tbuf *tb = w->tbufs; tb; tb = tb->next) {
        thaw(tb);
        pthread_mutex_unlock(&tb->lock);
    }
    pthread_mutex_unlock(&w->list_lock);
    return head;
}

static void recycle(vt_writer *w, vt_chunk *batch)
{
    pthread_mutex_lock(&w->q_lock);
    while (batch) {
        vt_chunk *next = batch->next;
        pool_put_locked(w, batch);
        batch = next;
    }
    pthread_cond_broadcast(&w->q_cond);
    pthread_mutex_unlock(&w->q_lock);
}

/* flush_lock held. */
static int flush_locked(vt_writer *w, bool kill)
{
    if (failed(w) && !kill)
        return -1;
    vt_chunk *batch = swap_all(w, kill);
    int errnum = 0, rc = failed(w) ? -1 : write_batch(w, batch, &errnum);
    if (rc < 0 && !failed(w)) {
        if (errnum == EFBIG)
            set_error(w, "the file size limit (RLIMIT_FSIZE, ulimit -f) was reached: %s",
                      strerror(EFBIG));
        else if (errnum == ESTALE)
            set_error(w,
                      "the trace's descriptor was closed or replaced by the program and "
                      "%s could not be reopened",
                      w->path);
        else if (errnum)
            set_error(w, "writing the trace failed: %s", strerror(errnum));
        else
            set_error(w, "zstd compression failed");
    }
    recycle(w, batch);
    return rc;
}

static int flush_now(vt_writer *w, bool kill)
{
    pthread_mutex_lock(&w->flush_lock);
    int rc = flush_locked(w, kill);
    pthread_mutex_unlock(&w->flush_lock);
    return rc;
}

int vt_writer_flush(vt_writer *w)
{
    return flush_now(w, false);
}

/* ---- Hot path --------------------------------------------------------------- */

/* tb->lock held: retire the current chunk and install a fresh one. When the
 * pool is exhausted, flush from this thread (lock released meanwhile). */
static int refill(vt_tbuf *tb)
{
    vt_writer *w = tb->w;
    vt_chunk *c = NULL;
    if (tb->cur)
        retire_chunk(w, tb->cur);
    tb->cur = NULL;
    for (;;) {
        pthread_mutex_lock(&w->q_lock);
        c = pool_get_locked(w);
        pthread_mutex_unlock(&w->q_lock);
        if (c || failed(w))
            break;
        pthread_mutex_unlock(&tb->lock);
        int rc = flush_now(w, false);
        pthread_mutex_lock(&tb->lock);
        if (rc < 0 || atomic_load(&tb->dead))
            break;
    }
    if (!c)
        return -1;
    if (atomic_load(&tb->dead)) {
        retire_chunk(w, c);
        return -1;
    }
    chunk_init(w, c, tb->thread_id);
    tb->cur = c;
    return 0;
}

/* Encode ev into tb's current chunk (room checked), its timestamp raised to
 * the last swap's floor. Inlined into the lock-free path. */
static inline __attribute__((always_inline)) int encode(vt_tbuf *tb, const vt_event *ev)
{
    uint64_t floor = atomic_load_explicit(&tb->w->ts_floor, memory_order_relaxed);
    vt_event clamped;
    if (ev->ts_ns < floor && !vt_rec_is_definition(ev->type)) {
        clamped = *ev;
        clamped.ts_ns = floor;
        ev = &clamped;
    }
    size_t n = vt_rec_encode(tb->cur->data + tb->cur->len, &tb->cur->d, ev);
    /* The record's bytes before its length: a SIGKILL leaves whole records
     * in a spilled chunk (spill.h). A compiler barrier only. */
    atomic_signal_fence(memory_order_release);
    tb->cur->len += n;
    return n ? 0 : -1;
}

static int write_locked(vt_tbuf *tb, const vt_event *ev, size_t need)
{
    vt_writer *w = tb->w;
    if (atomic_load(&tb->dead) || failed(w))
        return -1;
    if ((!tb->cur || tb->cur->cap - tb->cur->len < need) && refill(tb) < 0)
        return -1;
    return encode(tb, ev);
}

/* The common case without the lock (see the top): 0 or -1 when written,
 * 1 when the locked path must do it. */
/* The room a record needs (bytes): its fixed part and its string. */
static size_t record_need(const vt_event *ev)
{
    return VT_REC_FIXED_MAX + VT_VARINT_MAX + vt_rec_string_len(ev);
}

/* Is there room for ev in c? Room for the largest record answers without
 * measuring ev's string (the same answer as record_need's). */
static bool has_room(const vt_chunk *c, const vt_event *ev)
{
    size_t room = c->cap - c->len;
    return room >= VT_REC_MAX || room >= record_need(ev);
}

static int write_lock_free(vt_tbuf *tb, const vt_event *ev)
{
    int rc = 1;
    atomic_store_explicit(&tb->busy, 1, memory_order_relaxed);
    atomic_signal_fence(memory_order_seq_cst); /* the barrier is vt_barrier_all's */
    if (!atomic_load_explicit(&tb->frozen, memory_order_acquire) &&
        !atomic_load_explicit(&tb->dead, memory_order_relaxed) && tb->cur && has_room(tb->cur, ev))
        rc = encode(tb, ev);
    atomic_store_explicit(&tb->busy, 0, memory_order_release);
    return rc;
}

/* Every other case: under tb's lock (a full chunk, a frozen buffer, no
 * membarrier), or -1 when the buffer is dead or the writer failed. */
static __attribute__((noinline)) int write_slow(vt_tbuf *tb, const vt_event *ev)
{
    if (atomic_load_explicit(&tb->dead, memory_order_relaxed) || failed(tb->w))
        return -1;
    pthread_mutex_lock(&tb->lock);
    int rc = write_locked(tb, ev, record_need(ev));
    pthread_mutex_unlock(&tb->lock);
    return rc;
}

int vt_write(vt_tbuf *tb, const vt_event *ev)
{
    if (!tb)
        return -1;
    if (tb->w->asym && !failed(tb->w)) { /* the common case: no lock, no call */
        int rc = write_lock_free(tb, ev);
        if (rc <= 0)
            return rc;
    }
    return write_slow(tb, ev);
}

/* ---- Threads ---------------------------------------------------------------- */

vt_tbuf *vt_writer_attach(vt_writer *w, uint32_t thread_id)
{
    if (!w || failed(w))
        return NULL;
    vt_tbuf *tb = calloc(1, sizeof *tb);
    if (!tb)
        return NULL;
    pthread_mutex_init(&tb->lock, NULL);
    atomic_init(&tb->busy, 0);
    atomic_init(&tb->frozen, 0);
    tb->w = w;
    tb->thread_id = thread_id;
    atomic_init(&tb->dead, false);
    pthread_mutex_lock(&w->list_lock);
    tb->next = w->tbufs;
    w->tbufs = tb;
    atomic_fetch_add(&w->nattached, 1);
    pthread_mutex_unlock(&w->list_lock);
    return tb;
}

void vt_writer_detach(vt_writer *w, vt_tbuf *tb)
{
    if (!w || !tb)
        return;
    pthread_mutex_lock(&w->list_lock);
    for (vt_tbuf **pp = &w->tbufs; *pp; pp = &(*pp)->next) {
        if (*pp == tb) {
            *pp = tb->next;
            break;
        }
    }
    pthread_mutex_lock(&tb->lock);
    if (tb->cur)
        retire_chunk(w, tb->cur);
    tb->cur = NULL;
    pthread_mutex_unlock(&tb->lock);
    atomic_fetch_sub(&w->nattached, 1);
    pthread_mutex_unlock(&w->list_lock);
    pthread_mutex_destroy(&tb->lock);
    free(tb);
}

static void *writer_main(void *arg)
{
    vt_writer *w = arg;
    uint64_t next = vt_clock_ns() + w->flush_ns;
    pthread_mutex_lock(&w->q_lock);
    while (!w->stop) {
        uint64_t now = vt_clock_ns();
        if (now < next && !w->flush_req) {
            struct timespec ts = {(time_t)(next / 1000000000u), (long)(next % 1000000000u)};
            pthread_cond_timedwait(&w->q_cond, &w->q_lock, &ts);
            continue;
        }
        w->flush_req = false;
        pthread_mutex_unlock(&w->q_lock);
        int rc = flush_now(w, false);
        pthread_mutex_lock(&w->q_lock);
        next = now + w->flush_ns;
        if (rc < 0)
            break;
    }
    pthread_mutex_unlock(&w->q_lock);
    return NULL;
}

/* Start the writer thread with every signal blocked, so the application's
 * signal handling is unchanged (signals go to its own threads). */
static int start_thread(vt_writer *w)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&w->thread, NULL, writer_main, w);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    w->has_thread = rc == 0;
    return rc;
}

/* ---- Open and close ----------------------------------------------------------- */

static void writer_free(vt_writer *w)
{
    vt_chunk *lists[2] = {w->pool, w->full_head};
    for (int i = 0; i < 2; i++) {
        while (lists[i]) {
            vt_chunk *next = lists[i]->next;
            if (!lists[i]->spilled)
                free(lists[i]);
            lists[i] = next;
        }
    }
    spill_release(w, false);
    pthread_mutex_destroy(&w->flush_lock);
    pthread_mutex_destroy(&w->list_lock);
    pthread_mutex_destroy(&w->q_lock);
    pthread_cond_destroy(&w->q_cond);
    free(w->cctx_mem);
    free(w->out);
    free(w);
}

static size_t clamp_size(size_t v, size_t lo, size_t hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

/* Allocate w and its compressor for opts; NULL on out of memory. */
static vt_writer *writer_alloc(const vt_writer_opts *o)
{
    vt_writer *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    w->fd = -1;
    w->tbuf_bytes = clamp_size(o->tbuf_bytes ? o->tbuf_bytes : DEFAULT_TBUF_BYTES, MIN_TBUF_BYTES,
                               MAX_TBUF_BYTES);
    w->flush_ns = o->flush_ns ? o->flush_ns : VT_FLUSH_INTERVAL_NS;
    int level = o->zstd_level ? o->zstd_level : DEFAULT_ZSTD_LEVEL;
    level = level < -7 ? -7 : level > 19 ? 19 : level; /* windows the reader accepts */
    pthread_mutex_init(&w->flush_lock, NULL);
    pthread_mutex_init(&w->list_lock, NULL);
    pthread_mutex_init(&w->q_lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&w->q_cond, &ca);
    pthread_condattr_destroy(&ca);
    w->full_tail = &w->full_head;
    atomic_flag_clear(&w->err_claimed);
    size_t cmem = ZSTD_estimateCStreamSize(level);
    w->cctx_mem = malloc(cmem);
    w->out_cap = ZSTD_CStreamOutSize();
    w->out = malloc(w->out_cap);
    w->cctx = w->cctx_mem ? ZSTD_initStaticCCtx(w->cctx_mem, cmem) : NULL;
    if (!w->cctx || !w->out) {
        writer_free(w);
        return NULL;
    }
    ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_compressionLevel, level);
    ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_checksumFlag, 1);
    /* Unmatched bytes (literals) are stored raw, not Huffman-coded: the
     * report decompresses them at copying speed (the storm report about 5 %
     * faster) and compressing costs less, for traces 4-13 % larger
     * (bench/README.md, "The storm report (session 13)"). */
    ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_literalCompressionMode, ZSTD_ps_disable);
    return w;
}

/* The file's absolute name (the program may chdir before a reopen). */
static void remember_path(vt_writer *w, const char *path)
{
    char link[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", w->fd);
    ssize_t n = readlink(link, w->path, sizeof w->path - 1);
    if (n > 0 && w->path[0] == '/')
        w->path[n] = '\0';
    else
        snprintf(w->path, sizeof w->path, "%s", path);
}

/* Create the file and write the header; -1 with a message in err. */
static int create_file(vt_writer *w, const char *path, const vt_header *hdr, char *err,
                       size_t errlen)
{
    struct stat st;
    w->fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (w->fd < 0) {
        snprintf(err, errlen, "cannot create %s: %s", path, strerror(errno));
        return -1;
    }
    w->fd = fd_move_high(w->fd);
    if (fstat(w->fd, &st) == 0) {
        w->dev = st.st_dev;
        w->ino = st.st_ino;
    }
    remember_path(w, path);
    size_t len;
    uint8_t *buf = vt_header_encode(hdr, &len);
    int e = buf ? write_guarded(w, buf, len) : ENOMEM;
    free(buf);
    if (e) {
        snprintf(err, errlen, "cannot write the header of %s: %s", path, strerror(e));
        return -1;
    }
    atomic_store(&w->bytes, len);
    return 0;
}

vt_writer *vt_writer_open(const char *path, const vt_header *hdr, const vt_writer_opts *opts,
                          char *err, size_t errlen)
{
    vt_writer_opts o = opts ? *opts : (vt_writer_opts){0};
    vt_writer *w = writer_alloc(&o);
    if (!w) {
        snprintf(err, errlen, "out of memory opening %s", path);
        return NULL;
    }
    if (create_file(w, path, hdr, err, errlen) < 0)
        goto fail;
    spill_open(w, hdr->pid);
    w->asym = vt_barrier_register();
    if (!o.no_thread) {
        int rc = start_thread(w);
        if (rc) {
            snprintf(err, errlen, "cannot start the writer thread of %s: %s", path, strerror(rc));
            goto fail;
        }
    }
    return w;
fail:
    if (w->fd >= 0)
        close(w->fd);
    writer_free(w);
    return NULL;
}

static void stop_thread(vt_writer *w)
{
    if (!w->has_thread)
        return;
    pthread_mutex_lock(&w->q_lock);
    w->stop = true;
    pthread_cond_broadcast(&w->q_cond);
    pthread_mutex_unlock(&w->q_lock);
    pthread_join(w->thread, NULL);
    w->has_thread = false;
}

void vt_writer_set_summary(vt_writer *w, const vt_summary *s)
{
    if (!w || !s)
        return;
    w->summary = *s;
    w->has_summary = true;
}

/* Append the summary frame (records.h) after the last batch; the writer
 * thread stopped. 0 or -1 (error set). */
static int write_summary(vt_writer *w)
{
    uint8_t frame[VT_SUMMARY_FRAME_LEN];
    vt_summary_encode(frame, &w->summary);
    pthread_mutex_lock(&w->flush_lock);
    int e = write_guarded(w, frame, sizeof frame);
    pthread_mutex_unlock(&w->flush_lock);
    if (e) {
        set_error(w, "writing the trace summary failed: %s", strerror(e));
        return -1;
    }
    atomic_fetch_add(&w->bytes, sizeof frame);
    return 0;
}

int vt_writer_close(vt_writer *w)
{
    if (!w)
        return -1;
    stop_thread(w);
    int rc = flush_now(w, true);
    if (rc == 0 && w->has_summary && !failed(w))
        rc = write_summary(w);
    if (fd_is_ours(w) && close(w->fd) < 0 && rc == 0) {
        set_error(w, "closing the trace failed: %s", strerror(errno));
        rc = -1;
    }
    if (w->spill && rc == 0) /* else it keeps what could not be written */
        unlink(w->spill_path);
    writer_free(w);
    return rc;
}

const char *vt_writer_error(const vt_writer *w)
{
    return w && failed(w) ? w->err : NULL;
}

uint64_t vt_writer_bytes(const vt_writer *w)
{
    return w ? atomic_load(&((vt_writer *)w)->bytes) : 0;
}

void vt_writer_abandon_after_fork(vt_writer *w)
{
    if (!w)
        return;
    /* Locks may be held by threads that do not exist here: touch none. The
     * memory is left allocated so stale tbuf pointers keep returning -1. */
    set_error(w, "trace writer abandoned in a forked child");
    if (fd_is_ours(w))
        close(w->fd);
    w->fd = -1;
    spill_release(w, true); /* the parent's spill file is the parent's */
}

/* ---- Fatal-signal flush ------------------------------------------------------ */

/* flush_lock, list_lock and q_lock held. Chain the full queue (oldest first)
 * then every current chunk whose tbuf lock can be taken without blocking. */
static vt_chunk *signal_collect(vt_writer *w)
{
    vt_chunk *head = w->full_head, **tail = head ? w->full_tail : &head;
    w->full_head = NULL; /* rebuilt empty by signal_release */
    for (vt_tbuf *tb = w->tbufs; tb; tb = tb->next) {
        tb->signal_locked = pthread_mutex_trylock(&tb->lock) == 0;
        if (tb->signal_locked && w->asym)
            atomic_store_explicit(&tb->frozen, 1, memory_order_relaxed);
    }
    if (w->asym)
        vt_barrier_all();
    for (vt_tbuf *tb = w->tbufs; tb; tb = tb->next) {
        if (tb->signal_locked && atomic_load_explicit(&tb->busy, memory_order_acquire)) {
            thaw(tb); /* its owner is inside a write (maybe the interrupted thread) */
            pthread_mutex_unlock(&tb->lock);
            tb->signal_locked = false;
        }
        if (tb->signal_locked && tb->cur && tb->cur->len) {
            *tail = tb->cur;
            tail = &tb->cur->next;
            tb->cur->next = NULL;
        }
    }
    return head;
}

/* Is c the current chunk of a buffer this flush locked? Buffers it could
 * not lock are being written by their thread (refill may change their cur)
 * and gave nothing to the batch, so they are not looked at. */
static bool chunk_is_current(const vt_writer *w, const vt_chunk *c)
{
    for (const vt_tbuf *tb = w->tbufs; tb; tb = tb->next)
        if (tb->signal_locked && tb->cur == c)
            return true;
    return false;
}

/* Mark everything written as consumed and release the tbuf locks taken. The
 * batch's chunks that came from the queue go back to the pool (walked before
 * the current chunks are reset, which clears their links); the current
 * chunks restart empty with a fresh delta state. */
static void signal_release(vt_writer *w, vt_chunk *batch)
{
    while (batch) {
        vt_chunk *next = batch->next;
        if (!chunk_is_current(w, batch))
            pool_put_locked(w, batch);
        batch = next;
    }
    w->full_tail = &w->full_head;
    w->nqueued = 0;
    for (vt_tbuf *tb = w->tbufs; tb; tb = tb->next) {
        if (!tb->signal_locked)
            continue;
        if (tb->cur && tb->cur->len)
            chunk_init(w, tb->cur, tb->thread_id);
        tb->signal_locked = false;
        thaw(tb);
        pthread_mutex_unlock(&tb->lock);
    }
}

/* Take flush_lock, list_lock and q_lock without blocking; false (nothing
 * held) if any is busy. */
static bool signal_trylock_all(vt_writer *w)
{
    if (pthread_mutex_trylock(&w->flush_lock) != 0)
        return false;
    if (pthread_mutex_trylock(&w->list_lock) == 0) {
        if (pthread_mutex_trylock(&w->q_lock) == 0)
            return true;
        pthread_mutex_unlock(&w->list_lock);
    }
    pthread_mutex_unlock(&w->flush_lock);
    return false;
}

void vt_writer_flush_from_signal(vt_writer *w)
{
    if (!w || failed(w) || !signal_trylock_all(w))
        return;
    vt_chunk *batch = signal_collect(w);
    int errnum = 0;
    if (batch && write_batch(w, batch, &errnum) < 0) {
        static const char msg[] = "writing the trace from a signal handler failed";
        if (!atomic_flag_test_and_set(&w->err_claimed))
            memcpy(w->err, msg, sizeof msg); /* no formatting in a signal handler */
        atomic_store(&w->failed, true);
    }
    signal_release(w, batch);
    pthread_mutex_unlock(&w->q_lock);
    pthread_mutex_unlock(&w->list_lock);
    pthread_mutex_unlock(&w->flush_lock);
}

void vt_writer_drop_spill_from_signal(vt_writer *w)
{
    if (!w || !w->spill || failed(w))
        return;
    for (const vt_chunk *c = w->spill_chunks; c; c = c->spill_next)
        if (c->len && atomic_load(&c->state) != VT_SPILL_FREE)
            return; /* a buffer the flush could not take: vt_recover's */
    unlink(w->spill_path);
}
