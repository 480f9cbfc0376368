/* Element-wise ops of the CPU backend, which run the same OPS_HD functions as the CUDA kernels
 * (elementwise.h): activations and BCE against finite differences, one Adam step against
 * numbers derived by hand, binary16 conversions (edge cases, rounding, round trips), the
 * utilities, and the context's error paths. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "elementwise.h"
#include "test_util.h"

static ops_ctx *cpu(void)
{
    ops_ctx *ctx = ops_ctx_create(OPS_CPU, NULL, 0);
    assert_non_null(ctx);
    return ctx;
}

/* ---- activations ---------------------------------------------------------------------------- */

typedef int (*fwd_fn)(ops_ctx *, const float *, float *, size_t);
typedef int (*bwd_fn)(ops_ctx *, const float *, const float *, float *, size_t);

static int leaky_fwd(ops_ctx *c, const float *x, float *y, size_t n)
{
    return ops_leaky_relu_forward(c, x, y, n, 0.2f);
}

static int leaky_bwd(ops_ctx *c, const float *y, const float *dy, float *dx, size_t n)
{
    return ops_leaky_relu_backward(c, y, dy, dx, n, 0.2f);
}

static float eval1(ops_ctx *ctx, fwd_fn f, float x)
{
    float y;
    assert_int_equal(f(ctx, &x, &y, 1), 0);
    return y;
}

/* backward(y = f(x), dy) vs dy * (f(x+h) - f(x-h)) / 2h at points away from the kink at 0. */
static void check_activation(fwd_fn f, bwd_fn b)
{
    ops_ctx *ctx = cpu();
    const float xs[] = {-3.0f, -1.2f, -0.3f, 0.25f, 0.7f, 2.5f};
    enum { N = sizeof xs / sizeof xs[0] };
    float y[N], dy[N], dx[N];
    uint64_t seed = 5;
    for (int i = 0; i < N; i++)
        dy[i] = tu_uniform(&seed, 0.5f, 2.0f);
    assert_int_equal(f(ctx, xs, y, N), 0);
    assert_int_equal(b(ctx, y, dy, dx, N), 0);
    for (int i = 0; i < N; i++) {
        const float h = 1e-2f;
        double slope = ((double)eval1(ctx, f, xs[i] + h) - eval1(ctx, f, xs[i] - h)) / (2.0 * h);
        if (!tu_close(dx[i], dy[i] * slope, 1e-4, 2e-3))
            fail_msg("x = %g: gradient %g, finite difference %g", xs[i], dx[i], dy[i] * slope);
    }
    ops_ctx_destroy(ctx);
}

static void activation_gradients(void **state)
{
    (void)state;
    check_activation(ops_relu_forward, ops_relu_backward);
    check_activation(leaky_fwd, leaky_bwd);
    check_activation(ops_tanh_forward, ops_tanh_backward);
    check_activation(ops_sigmoid_forward, ops_sigmoid_backward);
}

static void activation_values(void **state)
{
    (void)state;
    ops_ctx *ctx = cpu();
    assert_true(eval1(ctx, ops_relu_forward, -2.0f) == 0.0f);
    assert_true(eval1(ctx, ops_relu_forward, 1.5f) == 1.5f);
    assert_true(eval1(ctx, leaky_fwd, -2.0f) == -0.4f);
    assert_true(tu_close(eval1(ctx, ops_tanh_forward, 0.5f), tanh(0.5), 1e-7, 1e-6));
    assert_true(
        tu_close(eval1(ctx, ops_sigmoid_forward, 1.0f), 1.0 / (1.0 + exp(-1.0)), 1e-7, 1e-6));
    /* saturation without NaN */
    assert_true(eval1(ctx, ops_sigmoid_forward, -200.0f) == 0.0f);
    assert_true(eval1(ctx, ops_sigmoid_forward, 200.0f) == 1.0f);
    /* in place */
    float v[2] = {-1.0f, 2.0f};
    assert_int_equal(ops_relu_forward(ctx, v, v, 2), 0);
    assert_true(v[0] == 0.0f && v[1] == 2.0f);
    ops_ctx_destroy(ctx);
}

/* ---- BCE ------------------------------------------------------------------------------------ */

static float bce(ops_ctx *ctx, const float *p, const float *t, size_t n)
{
    float loss = -1.0f;
    assert_int_equal(ops_bce_loss_forward(ctx, p, t, n, &loss), 0);
    return loss;
}

static void bce_value_and_clamp(void **state)
{
    (void)state;
    ops_ctx *ctx = cpu();
    float p[2] = {0.8f, 0.25f}, t[2] = {1.0f, 0.0f};
    /* (-log 0.8 - log 0.75) / 2 */
    assert_true(tu_close(bce(ctx, p, t, 2), (-log(0.8) - log(0.75)) / 2.0, 1e-7, 1e-6));
    /* log clamped at -100 (torch.nn.BCELoss): p = 0 with target 1 costs 100, not inf */
    float p0[3] = {0.0f, 1.0f, 0.0f}, t0[3] = {1.0f, 0.0f, 0.0f};
    assert_true(tu_close(bce(ctx, p0, t0, 3), 200.0 / 3.0, 1e-5, 1e-6));
    /* the gradient at p = 0, t = 1 is finite: (0 - 1) / 1e-12 / 3 */
    float dp[3];
    assert_int_equal(ops_bce_loss_backward(ctx, p0, t0, 3, 1.0f, dp), 0);
    assert_true(tu_close(dp[0], -1e12 / 3.0, 0.0, 1e-5));
    assert_true(dp[2] == 0.0f);
    ops_ctx_destroy(ctx);
}

static void bce_gradient(void **state)
{
    (void)state;
    ops_ctx *ctx = cpu();
    enum { N = 6 };
    float p[N], t[N] = {1, 0, 1, 0, 0.3f, 0.9f}, dp[N];
    uint64_t seed = 9;
    for (int i = 0; i < N; i++)
        p[i] = tu_uniform(&seed, 0.1f, 0.9f);
    const float scale = 0.5f; /* e.g. a loss halved for accumulation over two micro-batches */
    assert_int_equal(ops_bce_loss_backward(ctx, p, t, N, scale, dp), 0);
    for (int i = 0; i < N; i++) {
        const float h = 1e-3f;
        float keep = p[i];
        p[i] = keep + h;
        double up = bce(ctx, p, t, N);
        p[i] = keep - h;
        double down = bce(ctx, p, t, N);
        p[i] = keep;
        double want = scale * (up - down) / (2.0 * h);
        if (!tu_close(dp[i], want, 1e-4, 2e-3))
            fail_msg("dp[%d] = %g, finite difference %g", i, dp[i], want);
    }
    ops_ctx_destroy(ctx);
}

/* ---- Adam ----------------------------------------------------------------------------------- */

/* lr 0.1, betas (0.9, 0.999), eps 1e-8, params {1, 1}, constant gradients {0.5, -2}.
 * Step 1: m = 0.1 g = {0.05, -0.2}; v = 0.001 g^2 = {0.00025, 0.004};
 *         step_size = 0.1 / (1 - 0.9) = 1; sqrt(1 - 0.999) = 0.0316228;
 *         denom = sqrt(v)/0.0316228 + 1e-8 = {0.5, 2} (+1e-8);
 *         p = 1 - m/denom = {1 - 0.1, 1 + 0.1} = {0.9, 1.1}.
 * Step 2: m = 0.9 m + 0.1 g = {0.095, -0.38}; v = 0.999 v + 0.001 g^2 = {0.00049975, 0.007996};
 *         step_size = 0.1 / (1 - 0.81) = 0.526316; sqrt(1 - 0.998001) = sqrt(0.001999);
 *         v / 0.001999 = {0.25, 4} exactly, so denom = {0.5, 2};
 *         m / denom = {0.19, -0.19}; p = {0.9 - 0.526316 * 0.19, 1.1 + 0.1} = {0.8, 1.2}.
 * (A constant gradient moves each parameter by lr per step, against its sign.)
 * v is checked to 1e-4 relative: 1 - 0.999f in float arithmetic is 9.99987e-4. */
static void adam_two_steps_by_hand(void **state)
{
    (void)state;
    ops_ctx *ctx = cpu();
    float p[2] = {1.0f, 1.0f}, g[2] = {0.5f, -2.0f}, m[2] = {0}, v[2] = {0};
    assert_int_equal(ops_adam_step(ctx, p, g, m, v, 2, 0.1f, 0.9f, 0.999f, 1e-8f, 1), 0);
    assert_true(tu_close(m[0], 0.05, 1e-8, 1e-6) && tu_close(m[1], -0.2, 1e-8, 1e-6));
    assert_true(tu_close(v[0], 0.00025, 1e-10, 1e-4) && tu_close(v[1], 0.004, 1e-10, 1e-4));
    assert_true(tu_close(p[0], 0.9, 1e-6, 1e-6) && tu_close(p[1], 1.1, 1e-6, 1e-6));
    assert_int_equal(ops_adam_step(ctx, p, g, m, v, 2, 0.1f, 0.9f, 0.999f, 1e-8f, 2), 0);
    assert_true(tu_close(m[0], 0.095, 1e-8, 1e-6) && tu_close(m[1], -0.38, 1e-8, 1e-6));
    assert_true(tu_close(v[0], 0.00049975, 1e-10, 1e-4) && tu_close(v[1], 0.007996, 1e-9, 1e-4));
    assert_true(tu_close(p[0], 0.8, 1e-6, 1e-6) && tu_close(p[1], 1.2, 1e-6, 1e-6));
    assert_int_equal(ops_adam_step(ctx, p, g, m, v, 2, 0.1f, 0.9f, 0.999f, 1e-8f, 0), -1);
    ops_ctx_destroy(ctx);
}

/* ---- binary16 ------------------------------------------------------------------------------- */

static float f32(uint32_t bits)
{
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static void half_edge_cases(void **state)
{
    (void)state;
    assert_int_equal(ops_f32_to_f16bits(1.0f), 0x3c00);
    assert_int_equal(ops_f32_to_f16bits(-2.0f), 0xc000);
    assert_int_equal(ops_f32_to_f16bits(0.0f), 0x0000);
    assert_int_equal(ops_f32_to_f16bits(-0.0f), 0x8000);
    assert_int_equal(ops_f32_to_f16bits(65504.0f), 0x7bff);        /* largest finite */
    assert_int_equal(ops_f32_to_f16bits(65519.99f), 0x7bff);       /* below the midpoint */
    assert_int_equal(ops_f32_to_f16bits(65520.0f), 0x7c00);        /* tie to even: inf */
    assert_int_equal(ops_f32_to_f16bits(1e10f), 0x7c00);           /* overflow */
    assert_int_equal(ops_f32_to_f16bits(f32(0x7f800000)), 0x7c00); /* +inf */
    assert_int_equal(ops_f32_to_f16bits(f32(0xff800000)), 0xfc00); /* -inf */
    uint16_t nan = ops_f32_to_f16bits(f32(0x7fc00000));
    assert_true((nan & 0x7c00) == 0x7c00 && (nan & 0x3ff) != 0);
    assert_true((ops_f32_to_f16bits(f32(0x7f800001)) & 0x3ff) != 0); /* signalling NaN stays NaN */
    /* subnormals: 2^-24 is the smallest, 2^-14 the smallest normal */
    assert_int_equal(ops_f32_to_f16bits(ldexpf(1.0f, -24)), 0x0001);
    assert_int_equal(ops_f32_to_f16bits(ldexpf(1023.0f, -24)), 0x03ff);
    assert_int_equal(ops_f32_to_f16bits(ldexpf(1.0f, -14)), 0x0400);
    assert_int_equal(ops_f32_to_f16bits(ldexpf(1.0f, -25)), 0x0000);    /* tie -> 0 */
    assert_int_equal(ops_f32_to_f16bits(f32(0x33000001)), 0x0001);      /* above tie */
    assert_int_equal(ops_f32_to_f16bits(ldexpf(3.0f, -25)), 0x0002);    /* tie -> even */
    assert_int_equal(ops_f32_to_f16bits(ldexpf(2047.0f, -25)), 0x0400); /* carries */
    assert_int_equal(ops_f32_to_f16bits(-ldexpf(1.0f, -24)), 0x8001);
    /* round to nearest even between 1 and 1 + 2^-10 */
    assert_int_equal(ops_f32_to_f16bits(1.0f + ldexpf(1.0f, -11)), 0x3c00); /* tie -> even */
    assert_int_equal(ops_f32_to_f16bits(1.0f + ldexpf(3.0f, -11)), 0x3c02); /* tie -> even */
    assert_int_equal(ops_f32_to_f16bits(1.0f + ldexpf(1.0f, -11) + ldexpf(1.0f, -20)), 0x3c01);
    assert_int_equal(ops_f32_to_f16bits(2047.5f), 0x6800); /* 2047.5 -> 2048 (tie, odd 2047) */
    /* back to float */
    assert_true(ops_f16bits_to_f32(0x0001) == ldexpf(1.0f, -24));
    assert_true(ops_f16bits_to_f32(0x7bff) == 65504.0f);
    assert_true(ops_f16bits_to_f32(0x8000) == 0.0f && signbit(ops_f16bits_to_f32(0x8000)));
    assert_true(isinf(ops_f16bits_to_f32(0xfc00)) && ops_f16bits_to_f32(0xfc00) < 0);
    assert_true(isnan(ops_f16bits_to_f32(0x7e00)));
}

/* Every binary16 value survives half -> float -> half (NaNs stay NaN). */
static void half_round_trip_all(void **state)
{
    (void)state;
    for (uint32_t h = 0; h <= 0xffff; h++) {
        float f = ops_f16bits_to_f32((uint16_t)h);
        uint16_t back = ops_f32_to_f16bits(f);
        int is_nan = (h & 0x7c00) == 0x7c00 && (h & 0x3ff);
        if (is_nan)
            assert_true(isnan(f) && (back & 0x7c00) == 0x7c00 && (back & 0x3ff));
        else if (back != h)
            fail_msg("0x%04x -> %g -> 0x%04x", h, f, back);
    }
}

/* Against the compiler's own conversion where it has _Float16 (GCC on x86-64 does). */
static void half_matches_compiler(void **state)
{
    (void)state;
#ifdef __FLT16_MAX__
    for (uint64_t b = 0; b <= 0xffffffffu; b += 0x1003) {
        float f = f32((uint32_t)b);
        _Float16 h = (_Float16)f;
        uint16_t want;
        memcpy(&want, &h, sizeof want);
        uint16_t got = ops_f32_to_f16bits(f);
        if (isnan(f))
            assert_true((got & 0x7c00) == 0x7c00 && (got & 0x3ff));
        else if (got != want)
            fail_msg("%a: got 0x%04x, compiler 0x%04x", f, got, want);
    }
#else
    skip();
#endif
}

static void half_arrays(void **state)
{
    (void)state;
    ops_ctx *ctx = cpu();
    float x[4] = {0.1f, -3.5f, 70000.0f, 1e-8f}, back[4];
    uint16_t h[4];
    assert_int_equal(ops_float_to_half(ctx, x, h, 4), 0);
    assert_int_equal(ops_half_to_float(ctx, h, back, 4), 0);
    assert_true(tu_close(back[0], 0.1, 0.0, 1e-3)); /* 11 significant bits */
    assert_true(back[1] == -3.5f);
    assert_true(isinf(back[2]));
    assert_true(back[3] == 0.0f); /* below half of the smallest subnormal */
    ops_ctx_destroy(ctx);
}

/* ---- utilities and errors ------------------------------------------------------------------- */

static void utilities(void **state)
{
    (void)state;
    ops_ctx *ctx = cpu();
    float a[3], b[3] = {1.0f, 2.0f, 3.0f};
    assert_int_equal(ops_fill(ctx, a, 3, 2.5f), 0);
    assert_true(a[0] == 2.5f && a[2] == 2.5f);
    assert_int_equal(ops_add(ctx, b, a, 3, -2.0f), 0); /* a = 2.5 - 2 b */
    assert_true(a[0] == 0.5f && a[1] == -1.5f && a[2] == -3.5f);
    assert_int_equal(ops_scale(ctx, a, 3, 2.0f), 0);
    assert_true(a[0] == 1.0f && a[2] == -7.0f);
    assert_int_equal(ops_copy(ctx, b, a, 3), 0);
    assert_memory_equal(a, b, sizeof a);
    assert_int_equal(ops_zero(ctx, a, 3), 0);
    assert_true(a[0] == 0.0f && a[1] == 0.0f && a[2] == 0.0f);
    assert_int_equal(ops_fill(ctx, NULL, 3, 1.0f), -1);
    assert_int_equal(ops_fill(ctx, NULL, 0, 1.0f), 0); /* nothing to do */
    ops_ctx_destroy(ctx);
}

static void contexts(void **state)
{
    (void)state;
    char err[128] = "";
    float one = 1.0f;
    ops_ctx *ctx = ops_ctx_create(OPS_CPU, err, sizeof err);
    assert_non_null(ctx);
    assert_int_equal(ops_ctx_backend(ctx), OPS_CPU);
    assert_string_equal(ops_ctx_error(ctx), "");
    assert_int_equal(ops_ctx_set_stream(ctx, NULL), 0);
    assert_int_equal(ops_ctx_synchronize(ctx), 0);
    assert_int_equal(ops_leaky_relu_forward(ctx, &one, &one, 1, -1.0f), -1);
    assert_non_null(strstr(ops_ctx_error(ctx), "slope"));
    ops_ctx_destroy(ctx);
    ops_ctx_destroy(NULL);
    assert_null(ops_ctx_create((ops_backend)7, err, sizeof err));
    /* Never create a CUDA context here (no GPU on the build machines); without the CUDA
     * backend compiled in, the request fails cleanly. */
    if (!ops_have_cuda()) {
        assert_null(ops_ctx_create(OPS_CUDA, err, sizeof err));
        assert_non_null(strstr(err, "CUDA"));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(activation_gradients),
        cmocka_unit_test(activation_values),
        cmocka_unit_test(bce_value_and_clamp),
        cmocka_unit_test(bce_gradient),
        cmocka_unit_test(adam_two_steps_by_hand),
        cmocka_unit_test(half_edge_cases),
        cmocka_unit_test(half_round_trip_all),
        cmocka_unit_test(half_matches_compiler),
        cmocka_unit_test(half_arrays),
        cmocka_unit_test(utilities),
        cmocka_unit_test(contexts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
