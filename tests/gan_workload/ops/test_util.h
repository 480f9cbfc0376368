/* test_util.h — helpers shared by the gan_ops unit tests: deterministic random numbers, a CPU
 * context, buffers with workspace, relative-error comparison. */
#ifndef VRAMTRACE_TEST_GAN_OPS_UTIL_H
#define VRAMTRACE_TEST_GAN_OPS_UTIL_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "ops.h"

/* xorshift64*: uniform in [lo, hi). */
static inline float tu_uniform(uint64_t *state, float lo, float hi)
{
    uint64_t x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    double u = (double)((x * 2685821657736338717ull) >> 11) / 9007199254740992.0;
    return lo + (float)u * (hi - lo);
}

static inline float *tu_random(uint64_t *state, size_t count, float lo, float hi)
{
    float *p = malloc(count * sizeof *p + 1);
    for (size_t i = 0; i < count; i++)
        p[i] = tu_uniform(state, lo, hi);
    return p;
}

static inline float *tu_zeros(size_t count)
{
    return calloc(count + 1, sizeof(float));
}

/* |a - b| <= atol + rtol |b| */
static inline int tu_close(double a, double b, double atol, double rtol)
{
    return fabs(a - b) <= atol + rtol * fabs(b);
}

#endif
