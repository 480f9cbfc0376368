/* spill.h: internal to trace/. The writer's thread buffers (chunks) live in
 * a shared file mapping, the spill file, so that what a process recorded
 * but had not yet written to its trace survives a SIGKILL (the kernel's
 * out-of-memory killer, a notebook's restart): the page cache keeps the
 * mapping's pages after the process is gone. vt_recover (recover.c) appends
 * those chunks to the trace. writer.c is the only writer of this layout,
 * recover.c its only reader; both are compiled from this definition.
 *
 * File: one page of vt_spill_head, then slots of head->slot_bytes each, a
 * vt_chunk at the start of each. A chunk's state says whether its bytes are
 * in the trace yet:
 *   VT_SPILL_FREE     written to the trace (or never used): nothing to recover
 *   VT_SPILL_FILLING  records not yet written (a thread's current chunk, the
 *                     full queue, a batch not yet compressed)
 *   VT_SPILL_FRAMING  in the frame being written at head->pending
 * A frame is written as: head->pending = its file offset; its chunks
 * FRAMING; compress and write; head->pending = 0; its chunks FREE. So a
 * FRAMING chunk is in the trace exactly when pending is 0 or the frame at
 * pending is complete. Stores are atomic and in that order (release). */
#ifndef VRAMTRACE_TRACE_SPILL_H
#define VRAMTRACE_TRACE_SPILL_H

#include "records.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define VT_SPILL_MAGIC 0x314c4c4950535456ull /* "VTSPILL1", little-endian */
#define VT_SPILL_HEAD_BYTES 4096u
/* The directory of spill files: memory (tmpfs), never written to a disk. */
#define VT_SPILL_DIR "/dev/shm"

enum { VT_SPILL_FREE = 0, VT_SPILL_FILLING = 1, VT_SPILL_FRAMING = 2 };

typedef struct vt_spill_head {
    uint64_t magic;
    uint32_t slot_bytes; /* a slot: the vt_chunk and its data, page-aligned */
    uint32_t pid;        /* the recording process (the trace header's pid) */
    uint64_t trace_dev, trace_ino;
    _Atomic uint64_t pending; /* file offset of the frame being written; 0 = none */
} vt_spill_head;

/* A thread buffer: records of one thread, encoded. In a spill slot when
 * spilled, else malloc'd. */
typedef struct vt_chunk {
    struct vt_chunk *next;
    struct vt_chunk *spill_next; /* every spilled chunk, for unmapping */
    uint32_t thread_id;
    _Atomic uint32_t state; /* VT_SPILL_*; kept for malloc'd chunks too */
    uint64_t seq;           /* order handed out: a thread's chunks in order */
    bool spilled;
    vt_delta d;
    size_t len, cap;
    uint8_t data[];
} vt_chunk;

/* The spill file of the trace file (dev, ino) into buf: VT_SPILL_DIR
 * "/vramtrace-DEV-INO.spill". Named from the trace's identity, not its
 * path, so that a moved trace still finds it. */
void vt_spill_path(dev_t dev, ino_t ino, char *buf, size_t len);

#endif
