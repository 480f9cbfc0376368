/* Batch norm 2d (training mode) of the CPU backend against a double-precision reference of
 * torch.nn.BatchNorm2d (forward, running statistics) and against central finite differences
 * of L = sum(r * y) through that reference (backward to input, gamma and beta). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "test_util.h"

#define EPS 1e-5f

typedef struct {
    int n, c, h, w;
} shape4;

static size_t count_of(shape4 s)
{
    return (size_t)s.n * s.c * s.h * s.w;
}

static size_t at(shape4 s, int n, int c, size_t j)
{
    return ((size_t)n * s.c + c) * s.h * s.w + j;
}

/* Per-channel mean and biased variance in double. */
static void ref_moments(shape4 s, const double *x, int c, double *mean, double *var)
{
    size_t plane = (size_t)s.h * s.w;
    double m = (double)s.n * plane, sum = 0.0, sq = 0.0;
    for (int n = 0; n < s.n; n++)
        for (size_t j = 0; j < plane; j++)
            sum += x[at(s, n, c, j)];
    *mean = sum / m;
    for (int n = 0; n < s.n; n++)
        for (size_t j = 0; j < plane; j++)
            sq += (x[at(s, n, c, j)] - *mean) * (x[at(s, n, c, j)] - *mean);
    *var = sq / m;
}

static void ref_forward(shape4 s, const double *x, const double *g, const double *b, double *y)
{
    size_t plane = (size_t)s.h * s.w;
    for (int c = 0; c < s.c; c++) {
        double mean = 0.0, var = 0.0;
        ref_moments(s, x, c, &mean, &var);
        for (int n = 0; n < s.n; n++)
            for (size_t j = 0; j < plane; j++)
                y[at(s, n, c, j)] = (x[at(s, n, c, j)] - mean) / sqrt(var + EPS) * g[c] + b[c];
    }
}

/* The inputs of the reference in double, so finite differences can perturb any of them. */
typedef struct {
    shape4 s;
    double *x, *g, *b, *r, *y;
} ref_state;

static double ref_loss(ref_state *st)
{
    double l = 0.0;
    ref_forward(st->s, st->x, st->g, st->b, st->y);
    for (size_t i = 0; i < count_of(st->s); i++)
        l += st->r[i] * st->y[i];
    return l;
}

static double fd(ref_state *st, double *v, size_t i)
{
    const double h = 1e-4;
    double keep = v[i];
    v[i] = keep + h;
    double up = ref_loss(st);
    v[i] = keep - h;
    double down = ref_loss(st);
    v[i] = keep;
    return (up - down) / (2.0 * h);
}

static double *to_double(const float *f, size_t count)
{
    double *d = malloc(count * sizeof *d);
    for (size_t i = 0; i < count; i++)
        d[i] = f[i];
    return d;
}

typedef struct {
    shape4 s;
    float *x, *g, *b, *r, *y, *rm, *rv, *sm, *si;
} bn_case;

static bn_case make_case(shape4 s, uint64_t seed)
{
    bn_case k = {s, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
    k.x = tu_random(&seed, count_of(s), -2.0f, 3.0f);
    k.g = tu_random(&seed, s.c, 0.5f, 1.5f);
    k.b = tu_random(&seed, s.c, -0.5f, 0.5f);
    k.r = tu_random(&seed, count_of(s), -1.0f, 1.0f);
    k.y = tu_zeros(count_of(s));
    k.rm = tu_zeros(s.c);
    k.rv = tu_zeros(s.c);
    for (int c = 0; c < s.c; c++)
        k.rv[c] = 1.0f; /* PyTorch's initial running_var */
    k.sm = tu_zeros(s.c);
    k.si = tu_zeros(s.c);
    return k;
}

static void free_case(bn_case *k)
{
    float *all[] = {k->x, k->g, k->b, k->r, k->y, k->rm, k->rv, k->sm, k->si};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        free(all[i]);
}

static void forward(ops_ctx *ctx, bn_case *k, float *out)
{
    assert_int_equal(ops_batchnorm2d_forward_train(ctx, k->x, out, k->s.n, k->s.c, k->s.h, k->s.w,
                                                   k->g, k->b, k->rm, k->rv, 0.1f, EPS, k->sm,
                                                   k->si),
                     0);
}

static void check_forward_case(shape4 s, uint64_t seed)
{
    ops_ctx *ctx = ops_ctx_create(OPS_CPU, NULL, 0);
    bn_case k = make_case(s, seed);
    forward(ctx, &k, k.y);
    double *x = to_double(k.x, count_of(s)), *g = to_double(k.g, s.c), *b = to_double(k.b, s.c);
    double *ref = malloc(count_of(s) * sizeof *ref);
    ref_forward(s, x, g, b, ref);
    for (size_t i = 0; i < count_of(s); i++)
        if (!tu_close(k.y[i], ref[i], 1e-5, 1e-5))
            fail_msg("y[%zu] = %g, reference %g", i, k.y[i], ref[i]);
    double m = (double)s.n * s.h * s.w;
    for (int c = 0; c < s.c; c++) {
        double mean = 0.0, var = 0.0;
        ref_moments(s, x, c, &mean, &var);
        assert_true(tu_close(k.sm[c], mean, 1e-6, 1e-5));
        assert_true(tu_close(k.si[c], 1.0 / sqrt(var + EPS), 1e-6, 1e-5));
        /* running stats from (0, 1), momentum 0.1, unbiased variance */
        assert_true(tu_close(k.rm[c], 0.1 * mean, 1e-6, 1e-5));
        assert_true(tu_close(k.rv[c], 0.9 + 0.1 * var * m / (m - 1.0), 1e-6, 1e-5));
    }
    free(x);
    free(g);
    free(b);
    free(ref);
    free_case(&k);
    ops_ctx_destroy(ctx);
}

static void forward_matches_reference(void **state)
{
    (void)state;
    check_forward_case((shape4){4, 3, 5, 5}, 11);
    check_forward_case((shape4){2, 5, 1, 1}, 12); /* 1x1 maps: statistics over the batch only */
}

/* Gradients for dy = r, compared with finite differences; dgamma/dbeta accumulate onto 0.5. */
static void check_backward_case(shape4 s, uint64_t seed)
{
    ops_ctx *ctx = ops_ctx_create(OPS_CPU, NULL, 0);
    bn_case k = make_case(s, seed);
    forward(ctx, &k, k.y);
    float *dx = tu_zeros(count_of(s)), *dg = tu_zeros(s.c), *db = tu_zeros(s.c);
    for (int c = 0; c < s.c; c++)
        dg[c] = db[c] = 0.5f;
    assert_int_equal(
        ops_batchnorm2d_backward(ctx, k.x, k.r, s.n, s.c, s.h, s.w, k.g, k.sm, k.si, dx, dg, db),
        0);
    ref_state st = {s,
                    to_double(k.x, count_of(s)),
                    to_double(k.g, s.c),
                    to_double(k.b, s.c),
                    to_double(k.r, count_of(s)),
                    malloc(count_of(s) * sizeof(double))};
    for (size_t i = 0; i < count_of(s); i++) {
        double want = fd(&st, st.x, i);
        if (!tu_close(dx[i], want, 2e-4, 1e-3))
            fail_msg("dx[%zu] = %g, finite difference %g", i, dx[i], want);
    }
    for (int c = 0; c < s.c; c++) {
        assert_true(tu_close(dg[c] - 0.5, fd(&st, st.g, c), 2e-4, 1e-3));
        assert_true(tu_close(db[c] - 0.5, fd(&st, st.b, c), 2e-4, 1e-3));
    }
    free(st.x), free(st.g), free(st.b), free(st.r), free(st.y);
    free(dx), free(dg), free(db);
    free_case(&k);
    ops_ctx_destroy(ctx);
}

static void backward_matches_finite_differences(void **state)
{
    (void)state;
    check_backward_case((shape4){3, 2, 4, 3}, 21);
    check_backward_case((shape4){4, 3, 1, 1}, 22);
}

/* y may alias x in the forward, dx may alias dy in the backward. */
static void in_place_gives_same_results(void **state)
{
    (void)state;
    shape4 s = {2, 3, 4, 4};
    ops_ctx *ctx = ops_ctx_create(OPS_CPU, NULL, 0);
    bn_case k = make_case(s, 31);
    float *x0 = malloc(count_of(s) * sizeof(float)), *dx = tu_zeros(count_of(s));
    float dg[3] = {0}, db[3] = {0};
    memcpy(x0, k.x, count_of(s) * sizeof(float));
    forward(ctx, &k, k.y);
    assert_int_equal(
        ops_batchnorm2d_backward(ctx, x0, k.r, 2, 3, 4, 4, k.g, k.sm, k.si, dx, dg, db), 0);
    forward(ctx, &k, k.x); /* in place */
    assert_memory_equal(k.x, k.y, count_of(s) * sizeof(float));
    assert_int_equal(
        ops_batchnorm2d_backward(ctx, x0, k.r, 2, 3, 4, 4, k.g, k.sm, k.si, k.r, dg, db), 0);
    assert_memory_equal(k.r, dx, count_of(s) * sizeof(float));
    free(x0);
    free(dx);
    free_case(&k);
    ops_ctx_destroy(ctx);
}

static void eval_uses_running_stats(void **state)
{
    (void)state;
    ops_ctx *ctx = ops_ctx_create(OPS_CPU, NULL, 0);
    float x[4] = {1.0f, 2.0f, 3.0f, 4.0f}, y[4];
    float g[2] = {2.0f, 1.0f}, b[2] = {0.5f, -1.0f}, rm[2] = {1.0f, 3.0f}, rv[2] = {4.0f, 0.25f};
    /* shape (1, 2, 1, 2): channel 0 = {1, 2}, channel 1 = {3, 4} */
    assert_int_equal(ops_batchnorm2d_forward_eval(ctx, x, y, 1, 2, 1, 2, g, b, rm, rv, 0.0f), 0);
    /* (1-1)/2*2+0.5 = 0.5; (2-1)/2*2+0.5 = 1.5; (3-3)/0.5-1 = -1; (4-3)/0.5-1 = 1 */
    float want[4] = {0.5f, 1.5f, -1.0f, 1.0f};
    for (int i = 0; i < 4; i++)
        assert_true(tu_close(y[i], want[i], 1e-6, 1e-6));
    ops_ctx_destroy(ctx);
}

static void training_needs_two_values_per_channel(void **state)
{
    (void)state;
    ops_ctx *ctx = ops_ctx_create(OPS_CPU, NULL, 0);
    float x[2] = {1, 2}, y[2], g[2] = {1, 1}, b[2] = {0, 0}, sm[2], si[2];
    assert_int_equal(
        ops_batchnorm2d_forward_train(ctx, x, y, 1, 2, 1, 1, g, b, NULL, NULL, 0.1f, EPS, sm, si),
        -1);
    assert_non_null(strstr(ops_ctx_error(ctx), "more than 1 value"));
    ops_ctx_destroy(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(forward_matches_reference),
        cmocka_unit_test(backward_matches_finite_differences),
        cmocka_unit_test(in_place_gives_same_results),
        cmocka_unit_test(eval_uses_running_stats),
        cmocka_unit_test(training_needs_two_values_per_channel),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
