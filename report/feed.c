/* feed.c: the trace's events read ahead for the replay (replay.c) by a
 * thread of their own, so that decompressing and decoding one block of
 * events overlaps with replaying the one before: on the storm benchmark the
 * reader is a third of the work. Blocks of VR_FEED_EVENTS events go round a
 * ring of VR_FEED_BLOCKS; each holds copies of its events' strings (the
 * reader's own last until its next call only). The events come out exactly
 * as vt_reader_read gives them. Calls trace/ and util only. */
#include "state.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define VR_FEED_EVENTS 2048 /* per block: 128 KiB of events */
#define VR_FEED_BLOCKS 4    /* the replay holds one, the reader fills the rest */

typedef struct vr_block {
    vt_event ev[VR_FEED_EVENTS];
    size_t n;
    int rc;          /* after the events: 1 more follow, 0 the end, -1 corruption */
    uint64_t offset; /* vt_reader_offset after the block (compressed bytes) */
    char *pool;      /* the strings, terminated */
    size_t npool, cappool;
    uint32_t *strev; /* events whose strings are in pool */
    size_t nstrev, capstrev;
} vr_block;

struct vr_feed {
    vt_reader *rd;
    vr_block *blocks; /* VR_FEED_BLOCKS */
    /* blocks filled and given back so far: the reader fills
     * blocks[filled % VR_FEED_BLOCKS] while filled - released <
     * VR_FEED_BLOCKS; the replay holds blocks[released % VR_FEED_BLOCKS]
     * between two vr_feed_next calls */
    size_t filled, released;
    bool holding;  /* the replay holds a block */
    int last_rc;   /* the rc of the last block handed out */
    bool threaded; /* else: vr_feed_next fills the block itself */
    bool quit;     /* the replay stopped early: the reader thread ends */
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t more, room; /* a block was filled; a block was given back */
};

/* Appends the len bytes at p and a terminator to b's pool; returns the
 * string's offset + 1 (0 is NULL). */
static uintptr_t pool_put(vr_block *b, const char *p, size_t len)
{
    if (b->npool + len + 1 > b->cappool) {
        b->cappool = (b->npool + len + 1) * 2;
        b->pool = vr_xrealloc(b->pool, b->cappool);
    }
    memcpy(b->pool + b->npool, p, len);
    b->pool[b->npool + len] = '\0';
    uintptr_t at = b->npool + 1;
    b->npool += len + 1;
    return at;
}

/* Copies the strings of b's event i (the reader's, valid until its next
 * call) into the pool; its fields hold pool offsets + 1 until block_done. */
static void keep_strings(vr_block *b, size_t i)
{
    const char **f[2];
    size_t nf = vt_event_string_fields(&b->ev[i], f), kept = 0;
    for (size_t k = 0; k < nf; k++) {
        if (!*f[k])
            continue;
        uintptr_t at = pool_put(b, *f[k], strlen(*f[k]));
        *f[k] = (const char *)at;
        kept++;
    }
    if (!kept)
        return;
    if (b->nstrev == b->capstrev) {
        b->capstrev = b->capstrev ? 2 * b->capstrev : 16;
        b->strev = vr_xrealloc(b->strev, b->capstrev * sizeof *b->strev);
    }
    b->strev[b->nstrev++] = (uint32_t)i;
}

/* The pool no longer moves: string fields become pointers into it. */
static void block_done(vr_block *b)
{
    for (size_t j = 0; j < b->nstrev; j++) {
        const char **f[2];
        size_t nf = vt_event_string_fields(&b->ev[b->strev[j]], f);
        for (size_t k = 0; k < nf; k++)
            if (*f[k])
                *f[k] = b->pool + ((uintptr_t)*f[k] - 1);
    }
}

/* Reads the next events into b: up to VR_FEED_EVENTS of them, then the
 * reader's state after them (rc, offset). */
static void block_fill(vt_reader *rd, vr_block *b)
{
    b->n = b->npool = b->nstrev = 0;
    b->rc = 1;
    while (b->n < VR_FEED_EVENTS) {
        long got = vt_reader_read(rd, b->ev + b->n, VR_FEED_EVENTS - b->n);
        if (got <= 0) {
            b->rc = got < 0 ? -1 : 0;
            break;
        }
        b->n += (size_t)got;
        keep_strings(b, b->n - 1); /* only the last of a read can hold one */
    }
    b->offset = vt_reader_offset(rd);
    block_done(b);
}

static void *reader_thread(void *arg)
{
    vr_feed *f = arg;
    for (int rc = 1; rc == 1;) {
        pthread_mutex_lock(&f->mu);
        while (!f->quit && f->filled - f->released == VR_FEED_BLOCKS)
            pthread_cond_wait(&f->room, &f->mu);
        bool quit = f->quit;
        vr_block *b = &f->blocks[f->filled % VR_FEED_BLOCKS];
        pthread_mutex_unlock(&f->mu);
        if (quit)
            break;
        block_fill(f->rd, b);
        rc = b->rc;
        pthread_mutex_lock(&f->mu);
        f->filled++;
        pthread_cond_signal(&f->more);
        pthread_mutex_unlock(&f->mu);
    }
    return NULL;
}

vr_feed *vr_feed_start(vt_reader *rd)
{
    vr_feed *f = vr_xcalloc(1, sizeof *f);
    f->rd = rd;
    f->last_rc = 1;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    f->blocks = vr_xcalloc(cpus > 1 ? VR_FEED_BLOCKS : 1, sizeof *f->blocks);
    if (cpus <= 1)
        return f; /* one processor: a thread would only take turns with the replay */
    pthread_mutex_init(&f->mu, NULL);
    pthread_cond_init(&f->more, NULL);
    pthread_cond_init(&f->room, NULL);
    f->threaded = pthread_create(&f->thread, NULL, reader_thread, f) == 0;
    if (!f->threaded) {
        pthread_mutex_destroy(&f->mu);
        pthread_cond_destroy(&f->more);
        pthread_cond_destroy(&f->room);
    }
    return f;
}

/* The next filled block, waiting for the reader thread; NULL for none. */
static vr_block *take_threaded(vr_feed *f)
{
    pthread_mutex_lock(&f->mu);
    if (f->holding) {
        f->released++;
        f->holding = false;
        pthread_cond_signal(&f->room);
    }
    while (f->filled == f->released)
        pthread_cond_wait(&f->more, &f->mu);
    f->holding = true;
    vr_block *b = &f->blocks[f->released % VR_FEED_BLOCKS];
    pthread_mutex_unlock(&f->mu);
    return b;
}

long vr_feed_next(vr_feed *f, const vt_event **evs, uint64_t *offset)
{
    if (f->last_rc != 1)
        return f->last_rc;
    vr_block *b;
    if (f->threaded) {
        b = take_threaded(f);
    } else {
        b = &f->blocks[0];
        block_fill(f->rd, b);
    }
    f->last_rc = b->rc;
    *evs = b->ev;
    *offset = b->offset;
    return b->n ? (long)b->n : b->rc;
}

void vr_feed_free(vr_feed *f)
{
    if (!f)
        return;
    size_t nblocks = f->threaded ? VR_FEED_BLOCKS : 1;
    if (f->threaded) {
        pthread_mutex_lock(&f->mu);
        f->quit = true;
        pthread_cond_signal(&f->room);
        pthread_mutex_unlock(&f->mu);
        pthread_join(f->thread, NULL);
        pthread_mutex_destroy(&f->mu);
        pthread_cond_destroy(&f->more);
        pthread_cond_destroy(&f->room);
    }
    for (size_t i = 0; i < nblocks; i++) {
        free(f->blocks[i].pool);
        free(f->blocks[i].strev);
    }
    free(f->blocks);
    free(f);
}
