/* Convolutions of the CPU backend (im2col + sgemm) against a naive double-precision direct
 * implementation (forward) and against central finite differences of L = sum(r * y) computed
 * with that reference (backward to input and to weight). Shapes include DCGAN's k4 s2 p1. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "test_util.h"

/* ---- naive references in double --------------------------------------------------------- */

static double w_at(const float *w, int a, int b, int kh, int kw, int i, int j, int nb)
{
    return w[(((size_t)a * nb + b) * kh + i) * kw + j];
}

/* conv2d: y[n,o,oy,ox] = sum_c,i,j x[n,c,oy*s-p+i, ox*s-p+j] w[o,c,i,j] */
static void ref_conv2d(const ops_conv_desc *d, const float *x, const float *w, double *y)
{
    int oh = ops_conv2d_out_h(d), ow = ops_conv2d_out_w(d);
    for (int n = 0; n < d->n; n++)
        for (int o = 0; o < d->c_out; o++)
            for (int oy = 0; oy < oh; oy++)
                for (int ox = 0; ox < ow; ox++) {
                    double s = 0.0;
                    for (int c = 0; c < d->c_in; c++)
                        for (int i = 0; i < d->k_h; i++)
                            for (int j = 0; j < d->k_w; j++) {
                                int iy = oy * d->stride - d->pad + i;
                                int ix = ox * d->stride - d->pad + j;
                                if (iy < 0 || iy >= d->h_in || ix < 0 || ix >= d->w_in)
                                    continue;
                                s += x[(((size_t)n * d->c_in + c) * d->h_in + iy) * d->w_in + ix] *
                                     w_at(w, o, c, d->k_h, d->k_w, i, j, d->c_in);
                            }
                    y[(((size_t)n * d->c_out + o) * oh + oy) * ow + ox] = s;
                }
}

/* conv_transpose2d: y[n,o,iy*s-p+i, ix*s-p+j] += x[n,c,iy,ix] w[c,o,i,j] */
static void ref_convt(const ops_conv_desc *d, const float *x, const float *w, double *y)
{
    int oh = ops_conv_transpose2d_out_h(d), ow = ops_conv_transpose2d_out_w(d);
    for (size_t k = 0; k < (size_t)d->n * d->c_out * oh * ow; k++)
        y[k] = 0.0;
    for (int n = 0; n < d->n; n++)
        for (int c = 0; c < d->c_in; c++)
            for (int iy = 0; iy < d->h_in; iy++)
                for (int ix = 0; ix < d->w_in; ix++) {
                    double xv = x[(((size_t)n * d->c_in + c) * d->h_in + iy) * d->w_in + ix];
                    for (int o = 0; o < d->c_out; o++)
                        for (int i = 0; i < d->k_h; i++)
                            for (int j = 0; j < d->k_w; j++) {
                                int oy = iy * d->stride - d->pad + i;
                                int ox = ix * d->stride - d->pad + j;
                                if (oy < 0 || oy >= oh || ox < 0 || ox >= ow)
                                    continue;
                                y[(((size_t)n * d->c_out + o) * oh + oy) * ow + ox] +=
                                    xv * w_at(w, c, o, d->k_h, d->k_w, i, j, d->c_out);
                            }
                }
}

/* ---- a convolution under test: sizes and the six entry points ---------------------------- */

typedef struct {
    int transposed;
    size_t nx, nw, ny;
} conv_case;

static conv_case make_case(const ops_conv_desc *d, int transposed)
{
    int oh = transposed ? ops_conv_transpose2d_out_h(d) : ops_conv2d_out_h(d);
    int ow = transposed ? ops_conv_transpose2d_out_w(d) : ops_conv2d_out_w(d);
    assert_true(oh > 0 && ow > 0);
    conv_case c = {transposed, (size_t)d->n * d->c_in * d->h_in * d->w_in,
                   (size_t)d->c_out * d->c_in * d->k_h * d->k_w, (size_t)d->n * d->c_out * oh * ow};
    return c;
}

static void ref_forward(const conv_case *c, const ops_conv_desc *d, const float *x, const float *w,
                        double *y)
{
    if (c->transposed)
        ref_convt(d, x, w, y);
    else
        ref_conv2d(d, x, w, y);
}

static size_t ws_bytes(ops_ctx *ctx, const conv_case *c, const ops_conv_desc *d, ops_conv_pass pass)
{
    return c->transposed ? ops_conv_transpose2d_workspace_bytes(ctx, d, pass)
                         : ops_conv2d_workspace_bytes(ctx, d, pass);
}

static int run_pass(ops_ctx *ctx, const conv_case *c, const ops_conv_desc *d, ops_conv_pass pass,
                    const float *a, const float *b, float *out)
{
    size_t bytes = ws_bytes(ctx, c, d, pass);
    void *ws = malloc(bytes + 1);
    int rc;
    if (pass == OPS_PASS_FORWARD)
        rc = c->transposed ? ops_conv_transpose2d_forward(ctx, d, a, b, out, ws, bytes)
                           : ops_conv2d_forward(ctx, d, a, b, out, ws, bytes);
    else if (pass == OPS_PASS_BACKWARD_DATA)
        rc = c->transposed ? ops_conv_transpose2d_backward_data(ctx, d, a, b, out, ws, bytes)
                           : ops_conv2d_backward_data(ctx, d, a, b, out, ws, bytes);
    else
        rc = c->transposed ? ops_conv_transpose2d_backward_filter(ctx, d, a, b, out, ws, bytes)
                           : ops_conv2d_backward_filter(ctx, d, a, b, out, ws, bytes);
    free(ws);
    return rc;
}

/* L = sum r * ref_forward(x, w), in double. */
static double ref_loss(const conv_case *c, const ops_conv_desc *d, const float *x, const float *w,
                       const float *r)
{
    double *y = malloc(c->ny * sizeof *y);
    double s = 0.0;
    ref_forward(c, d, x, w, y);
    for (size_t i = 0; i < c->ny; i++)
        s += r[i] * y[i];
    free(y);
    return s;
}

/* Central difference of ref_loss along element i of v (v is x or w). */
static double fd(const conv_case *c, const ops_conv_desc *d, float *x, float *w, const float *r,
                 float *v, size_t i)
{
    const float h = 0.0625f; /* exact in binary: L is linear in v, so no truncation error */
    float keep = v[i];
    v[i] = keep + h;
    double up = ref_loss(c, d, x, w, r);
    v[i] = keep - h;
    double down = ref_loss(c, d, x, w, r);
    v[i] = keep;
    return (up - down) / (2.0 * h);
}

static void check_forward(ops_ctx *ctx, const conv_case *c, const ops_conv_desc *d, const float *x,
                          const float *w)
{
    float *y = tu_zeros(c->ny);
    double *ref = malloc(c->ny * sizeof *ref);
    assert_int_equal(run_pass(ctx, c, d, OPS_PASS_FORWARD, x, w, y), 0);
    ref_forward(c, d, x, w, ref);
    for (size_t i = 0; i < c->ny; i++)
        if (!tu_close(y[i], ref[i], 1e-5, 1e-4))
            fail_msg("forward[%zu] = %g, reference %g", i, y[i], ref[i]);
    free(y);
    free(ref);
}

static void check_backward_data(ops_ctx *ctx, const conv_case *c, const ops_conv_desc *d, float *x,
                                float *w, const float *r)
{
    float *dx = tu_zeros(c->nx);
    assert_int_equal(run_pass(ctx, c, d, OPS_PASS_BACKWARD_DATA, r, w, dx), 0);
    for (size_t i = 0; i < c->nx; i++) {
        double want = fd(c, d, x, w, r, x, i);
        if (!tu_close(dx[i], want, 1e-4, 1e-4))
            fail_msg("dx[%zu] = %g, finite difference %g", i, dx[i], want);
    }
    free(dx);
}

/* Also checks accumulation: a second call adds the same gradient again. */
static void check_backward_filter(ops_ctx *ctx, const conv_case *c, const ops_conv_desc *d,
                                  float *x, float *w, const float *r)
{
    float *dw = tu_zeros(c->nw);
    assert_int_equal(run_pass(ctx, c, d, OPS_PASS_BACKWARD_FILTER, x, r, dw), 0);
    for (size_t i = 0; i < c->nw; i++) {
        double want = fd(c, d, x, w, r, w, i);
        if (!tu_close(dw[i], want, 1e-4, 1e-4))
            fail_msg("dw[%zu] = %g, finite difference %g", i, dw[i], want);
    }
    float first = dw[0];
    assert_int_equal(run_pass(ctx, c, d, OPS_PASS_BACKWARD_FILTER, x, r, dw), 0);
    assert_true(tu_close(dw[0], 2.0 * first, 1e-6, 1e-5));
    free(dw);
}

static void check_conv(const ops_conv_desc *d, int transposed, uint64_t seed)
{
    ops_ctx *ctx = ops_ctx_create(OPS_CPU, NULL, 0);
    assert_non_null(ctx);
    conv_case c = make_case(d, transposed);
    float *x = tu_random(&seed, c.nx, -1.0f, 1.0f);
    float *w = tu_random(&seed, c.nw, -1.0f, 1.0f);
    float *r = tu_random(&seed, c.ny, -1.0f, 1.0f);
    check_forward(ctx, &c, d, x, w);
    check_backward_data(ctx, &c, d, x, w, r);
    check_backward_filter(ctx, &c, d, x, w, r);
    free(x);
    free(w);
    free(r);
    ops_ctx_destroy(ctx);
}

/* ---- cases ---------------------------------------------------------------------------------- */

static void conv2d_same_padding(void **state)
{
    (void)state;
    ops_conv_desc d = {2, 3, 7, 6, 4, 3, 3, 1, 1};
    check_conv(&d, 0, 1);
}

static void conv2d_dcgan_downsample(void **state)
{
    (void)state;
    ops_conv_desc d = {2, 3, 8, 8, 5, 4, 4, 2, 1}; /* D: k4 s2 p1, 8x8 -> 4x4 */
    assert_int_equal(ops_conv2d_out_h(&d), 4);
    check_conv(&d, 0, 2);
}

static void conv2d_dcgan_final(void **state)
{
    (void)state;
    ops_conv_desc d = {3, 4, 4, 4, 1, 4, 4, 1, 0}; /* D's last layer: 4x4 -> 1x1 */
    assert_int_equal(ops_conv2d_out_h(&d), 1);
    check_conv(&d, 0, 3);
}

static void conv2d_odd_shapes(void **state)
{
    (void)state;
    ops_conv_desc d = {1, 2, 9, 7, 3, 3, 2, 2, 0}; /* non-square kernel, stride 2, no padding */
    check_conv(&d, 0, 4);
}

static void convt_dcgan_project(void **state)
{
    (void)state;
    ops_conv_desc d = {2, 6, 1, 1, 4, 4, 4, 1, 0}; /* G's first layer: z 1x1 -> 4x4 */
    assert_int_equal(ops_conv_transpose2d_out_h(&d), 4);
    check_conv(&d, 1, 5);
}

static void convt_dcgan_upsample(void **state)
{
    (void)state;
    ops_conv_desc d = {2, 3, 4, 4, 4, 4, 4, 2, 1}; /* G: k4 s2 p1, 4x4 -> 8x8 */
    assert_int_equal(ops_conv_transpose2d_out_h(&d), 8);
    check_conv(&d, 1, 6);
}

static void convt_odd_shapes(void **state)
{
    (void)state;
    ops_conv_desc d = {2, 2, 3, 5, 3, 3, 2, 2, 1}; /* (3-1)*2-2+3 = 5, (5-1)*2-2+2 = 8 */
    assert_int_equal(ops_conv_transpose2d_out_h(&d), 5);
    assert_int_equal(ops_conv_transpose2d_out_w(&d), 8);
    check_conv(&d, 1, 7);
}

/* Large maps: the CPU backend lowers ceil(1024 / positions) samples per GEMM, so these shapes
 * exercise several chunks, a last partial chunk and a single-sample chunk. */
static void conv2d_batched_chunks(void **state)
{
    (void)state;
    ops_conv_desc d = {4, 2, 20, 20, 3, 3, 3, 1, 1}; /* 400 positions: chunks of 3, then 1 */
    check_conv(&d, 0, 8);
}

static void convt_batched_chunks(void **state)
{
    (void)state;
    ops_conv_desc d = {13, 2, 10, 10, 2, 4, 4, 2, 1}; /* 100 positions: chunks of 11, then 2 */
    check_conv(&d, 1, 9);
}

/* The op refuses a workspace smaller than it asked for, and bad shapes, with a message. */
static void conv_rejects_bad_arguments(void **state)
{
    (void)state;
    ops_ctx *ctx = ops_ctx_create(OPS_CPU, NULL, 0);
    ops_conv_desc d = {1, 2, 8, 8, 3, 4, 4, 2, 1};
    float x[128] = {0}, w[96] = {0}, y[48] = {0};
    size_t need = ops_conv2d_workspace_bytes(ctx, &d, OPS_PASS_FORWARD);
    assert_int_equal(need, sizeof(float) * 2 * 16 * 16); /* c_in*kh*kw x 4*4 positions */
    float *ws = malloc(need);
    assert_int_equal(ops_conv2d_forward(ctx, &d, x, w, y, ws, need - 4), -1);
    assert_non_null(strstr(ops_ctx_error(ctx), "workspace"));
    assert_int_equal(ops_conv2d_forward(ctx, &d, x, w, y, ws, need), 0);
    ops_conv_desc bad = {1, 2, 3, 3, 3, 5, 5, 1, 0}; /* kernel larger than input */
    assert_int_equal(ops_conv2d_out_h(&bad), -1);
    assert_int_equal(ops_conv2d_forward(ctx, &bad, x, w, y, ws, need), -1);
    assert_non_null(strstr(ops_ctx_error(ctx), "shape"));
    free(ws);
    ops_ctx_destroy(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(conv2d_same_padding),   cmocka_unit_test(conv2d_dcgan_downsample),
        cmocka_unit_test(conv2d_dcgan_final),    cmocka_unit_test(conv2d_odd_shapes),
        cmocka_unit_test(convt_dcgan_project),   cmocka_unit_test(convt_dcgan_upsample),
        cmocka_unit_test(convt_odd_shapes),      cmocka_unit_test(conv_rejects_bad_arguments),
        cmocka_unit_test(conv2d_batched_chunks), cmocka_unit_test(convt_batched_chunks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
