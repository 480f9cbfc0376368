/* storm_shape.h: the shape of the report benchmark's alloc/free storm (issue
 * 18), one definition for its two writers: the synthetic trace `vramtrace
 * report` replays (gen.c, vtg_big) and the malloc program heaptrack records
 * for heaptrack_print, its anchor in the same run (bench/preload_overhead.c,
 * mode storm; bench/perf.py).
 *
 * A training-like loop: VT_STORM_LIVE slots of live allocations; each
 * iteration picks a slot (vt_storm_next), frees what it holds and allocates
 * anew there from one of VT_STORM_SITES call sites; after every
 * VT_STORM_BLOCK iterations one allocation that is never freed (a slow
 * leak). The pseudo-random sequence is Knuth's MMIX linear congruential
 * generator (TAOCP vol. 2, 3.3.4), upper bits. */
#ifndef VRAMTRACE_TESTS_REPORT_STORM_SHAPE_H
#define VRAMTRACE_TESTS_REPORT_STORM_SHAPE_H

#include <stdint.h>

#define VT_STORM_SITES 200
#define VT_STORM_LIVE 10000
#define VT_STORM_BLOCK 1000
#define VT_STORM_SEED 42u

/* The next value of the sequence in *s (31 bits). */
static inline uint64_t vt_storm_next(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 33;
}

#endif
