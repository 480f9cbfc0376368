/* Unit tests of nets.c on the simulated device (host-accessible memory, cpu backend):
 * backward matches finite differences of the forward for D (BCE loss) and G (a linear loss),
 * checkpointed backward gives the same gradients, fp16 close ones, and backward leaves no
 * tensor behind. Runs with LD_LIBRARY_PATH=<build>/lib/sim. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "train.h"

enum { B = 4 };

typedef struct {
    tr_runtime rt;
    tr_net net;
    tr_tensor *x, *target;
    bool is_d;
} fixture;

static int setup(void **state, bool is_d)
{
    fixture *f = calloc(1, sizeof *f);
    f->rt.ops = ops_ctx_create(OPS_CPU, NULL, 0);
    f->rt.ga = ga_create(GA_DIRECT, NULL, 0);
    if (!f->rt.ops || !f->rt.ga)
        return -1;
    tr_plan p;
    tr_rng rng;
    tr_rng_seed(&rng, 3);
    if (is_d)
        tr_plan_discriminator(&p, 32, 1, 4);
    else
        tr_plan_generator(&p, 32, 8, 4, 1);
    tr_net_init(&f->rt, &f->net, is_d ? "D" : "G", &p, &rng);
    /* larger weights than N(0, 0.02) so that the gradients are well above float noise */
    for (int i = 0; i < f->net.n; i++) {
        tr_tensor *w = f->net.l[i].param[0];
        for (size_t k = 0; k < w->numel; k++)
            ((float *)w->p)[k] = (float)(0.3 * tr_rng_normal(&rng));
    }
    f->is_d = is_d;
    const tr_layer_spec *s0 = &p.l[0], *sl = &p.l[p.n - 1];
    f->x = tr_new(&f->rt, B, s0->c_in, s0->hw_in, s0->hw_in, TR_F32, "x");
    for (size_t k = 0; k < f->x->numel; k++)
        ((float *)f->x->p)[k] = (float)(2 * tr_rng_uniform(&rng) - 1);
    f->target = tr_new(&f->rt, B, sl->c_out, sl->hw_out, sl->hw_out, TR_F32, "target");
    for (size_t k = 0; k < f->target->numel; k++)
        ((float *)f->target->p)[k] = is_d ? (float)(k % 2) : (float)tr_rng_normal(&rng);
    *state = f;
    return 0;
}

static int setup_d(void **state)
{
    return setup(state, true);
}

static int setup_g(void **state)
{
    return setup(state, false);
}

static int teardown(void **state)
{
    fixture *f = *state;
    tr_unref(&f->rt, &f->x);
    tr_unref(&f->rt, &f->target);
    tr_net_free(&f->rt, &f->net);
    ga_destroy(f->rt.ga);
    ops_ctx_destroy(f->rt.ops);
    free(f);
    return 0;
}

/* D: BCE(out, target); G: sum(out * target). */
static double loss_of(fixture *f, const tr_tensor *out)
{
    const float *o = out->p, *t = f->target->p;
    if (f->is_d) {
        float l;
        ops_bce_loss_forward(f->rt.ops, o, t, out->numel, &l);
        return l;
    }
    double s = 0;
    for (size_t k = 0; k < out->numel; k++)
        s += (double)o[k] * t[k];
    return s;
}

static double forward_loss(fixture *f)
{
    tr_graph g;
    tr_tensor *out = tr_net_forward(&f->rt, &f->net, f->x, TR_NO_GRAD, &g);
    double l = loss_of(f, out);
    tr_unref(&f->rt, &out);
    return l;
}

/* Forward + backward in `mode`; returns dx (D only, else NULL). Gradients land in .grad. */
static tr_tensor *backward(fixture *f, tr_grad_mode mode)
{
    tr_graph g;
    tr_net_zero_grad(&f->rt, &f->net);
    tr_tensor *out = tr_net_forward(&f->rt, &f->net, f->x, mode, &g);
    tr_tensor *d = tr_new(&f->rt, out->n, out->c, out->h, out->w, TR_F32, "dout");
    if (f->is_d)
        ops_bce_loss_backward(f->rt.ops, out->p, f->target->p, out->numel, 1.0f, d->p);
    else
        memcpy(d->p, f->target->p, out->bytes);
    tr_unref(&f->rt, &out);
    return tr_net_backward(&f->rt, &g, d, f->is_d);
}

static const float EPS = 3e-4f; /* central-difference step */

static double numeric(fixture *f, float *p)
{
    float keep = *p;
    *p = keep + EPS;
    double up = forward_loss(f);
    *p = keep - EPS;
    double down = forward_loss(f);
    *p = keep;
    return (up - down) / (2.0 * EPS);
}

/* The rounding noise of one float32 evaluation of the loss, measured at *p: the loss at
 * 9 points spaced EPS/8 apart is a straight line up to rounding (curvature is negligible
 * over that span), so the RMS residual of the least-squares line through them is the
 * noise. Its size depends on the summation order of the BLAS kernel OpenBLAS picks for
 * the CPU (OPENBLAS_CORETYPE=Zen, Haswell and SkylakeX give different values), which is
 * why a fixed absolute tolerance passed on one machine and failed on another. */
static double loss_noise(fixture *f, float *p)
{
    enum { N = 9 };
    float keep = *p;
    double y[N], sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (int j = 0; j < N; j++) {
        double x = j - (N - 1) / 2.0;
        *p = keep + (float)x * (EPS / 8);
        y[j] = forward_loss(f);
        sx += x, sy += y[j], sxx += x * x, sxy += x * y[j];
    }
    *p = keep;
    double slope = (N * sxy - sx * sy) / (N * sxx - sx * sx), icpt = (sy - slope * sx) / N;
    double ss = 0;
    for (int j = 0; j < N; j++) {
        double r = y[j] - (icpt + slope * (j - (N - 1) / 2.0));
        ss += r * r;
    }
    return sqrt(ss / (N - 2));
}

/* Tolerance of a central difference with step EPS over a loss of rounding noise `noise`:
 * 6 standard deviations of (up - down) / 2 EPS, plus 5 % for truncation (LeakyReLU kinks
 * and curvature within +-EPS), plus a floor of 2e-3. */
static double tolerance(double noise, double num)
{
    return 2e-3 + 6.0 * sqrt(2.0) * noise / (2.0 * EPS) + 0.05 * fabs(num);
}

/* Compares sampled entries (every `step`-th of `n`) of the analytic gradient `grad` of the
 * tensor at `param` with central differences; prints each mismatch; returns their count. */
static int grad_mismatches(fixture *f, const float *grad, float *param, size_t n, size_t step,
                           const char *what)
{
    double noise = loss_noise(f, param);
    int bad = 0;
    for (size_t k = 0; k < n; k += step) {
        double num = numeric(f, param + k);
        if (fabs(grad[k] - num) > tolerance(noise, num)) {
            print_message("%s[%zu]: analytic %.6g vs numeric %.6g (loss noise %.3g)\n", what, k,
                          (double)grad[k], num, noise);
            bad++;
        }
    }
    return bad;
}

static int layer_grad_mismatches(fixture *f)
{
    int bad = 0;
    for (int i = 0; i < f->net.n; i++) {
        tr_layer *L = &f->net.l[i];
        for (int j = 0; j < 3; j++) {
            if (!L->param[j])
                continue;
            assert_non_null(L->grad[j]);
            size_t n = L->param[j]->numel;
            bad += grad_mismatches(f, L->grad[j]->p, L->param[j]->p, n, n / 5 + 1, L->tag[j]);
        }
    }
    return bad;
}

static void d_gradients(void **state)
{
    fixture *f = *state;
    tr_tensor *dx = backward(f, TR_GRAD);
    assert_non_null(dx);
    assert_int_equal(layer_grad_mismatches(f), 0);
    assert_int_equal(grad_mismatches(f, dx->p, f->x->p, f->x->numel, 97, "dx"), 0);
    tr_unref(&f->rt, &dx);
}

/* The check still catches a wrong gradient: 10 % off in one layer's weight gradient (D and
 * G), or the largest sampled entry of dx with its sign flipped (D), each gives mismatches. */
static void check_catches_wrong_gradients(void **state)
{
    fixture *f = *state;
    tr_tensor *dx = backward(f, TR_GRAD);
    tr_tensor *gw = f->net.l[1].grad[0];
    for (size_t k = 0; k < gw->numel; k++)
        ((float *)gw->p)[k] *= 1.1f;
    assert_true(layer_grad_mismatches(f) > 0);
    if (!f->is_d)
        return;
    float *d = dx->p;
    size_t worst = 0;
    for (size_t k = 0; k < dx->numel; k += 97)
        worst = fabsf(d[k]) > fabsf(d[worst]) ? k : worst;
    d[worst] = -d[worst];
    assert_int_equal(grad_mismatches(f, d, f->x->p, f->x->numel, 97, "dx (sign-flipped)"), 1);
    tr_unref(&f->rt, &dx);
}

static void g_gradients(void **state)
{
    fixture *f = *state;
    assert_null(backward(f, TR_GRAD));
    assert_int_equal(layer_grad_mismatches(f), 0);
}

/* Copies every .grad of the net into one host array. */
static float *grads(fixture *f, size_t *count)
{
    size_t n = 0;
    for (int i = 0; i < f->net.n; i++)
        for (int j = 0; j < 3; j++)
            n += f->net.l[i].grad[j] ? f->net.l[i].grad[j]->numel : 0;
    float *out = malloc(n * sizeof *out), *at = out;
    for (int i = 0; i < f->net.n; i++)
        for (int j = 0; j < 3; j++)
            if (f->net.l[i].grad[j]) {
                memcpy(at, f->net.l[i].grad[j]->p, f->net.l[i].grad[j]->bytes);
                at += f->net.l[i].grad[j]->numel;
            }
    *count = n;
    return out;
}

static void checkpoint_and_fp16(void **state)
{
    fixture *f = *state;
    size_t n_ref, n_ck, n_16;
    tr_tensor *dx = backward(f, TR_GRAD);
    tr_unref(&f->rt, &dx);
    float *ref = grads(f, &n_ref);
    dx = backward(f, TR_GRAD_CHECKPOINT);
    tr_unref(&f->rt, &dx);
    float *ck = grads(f, &n_ck);
    f->rt.fp16 = true;
    dx = backward(f, TR_GRAD);
    tr_unref(&f->rt, &dx);
    f->rt.fp16 = false;
    float *h = grads(f, &n_16);
    assert_int_equal(n_ref, n_ck);
    assert_int_equal(n_ref, n_16);
    double max_ref = 0;
    for (size_t k = 0; k < n_ref; k++)
        max_ref = fmax(max_ref, fabs(ref[k]));
    for (size_t k = 0; k < n_ref; k++) {
        assert_float_equal(ref[k], ck[k], 1e-5 * max_ref);
        assert_float_equal(ref[k], h[k], 2e-2 * max_ref);
    }
    free(ref);
    free(ck);
    free(h);
}

/* After a backward only parameters, buffers, gradients and the test's tensors are live. */
static void backward_frees_the_graph(void **state)
{
    fixture *f = *state;
    tr_tensor *dx = backward(f, TR_GRAD);
    tr_unref(&f->rt, &dx);
    uint64_t live = ga_get_stats(f->rt.ga).active_blocks;
    dx = backward(f, TR_GRAD);
    tr_unref(&f->rt, &dx);
    assert_int_equal(ga_get_stats(f->rt.ga).active_blocks, live);
    dx = backward(f, TR_GRAD_CHECKPOINT);
    tr_unref(&f->rt, &dx);
    assert_int_equal(ga_get_stats(f->rt.ga).active_blocks, live);
    /* with retain_history the saved tensors stay */
    f->rt.retain_history = true;
    dx = backward(f, TR_GRAD);
    tr_unref(&f->rt, &dx);
    assert_true(ga_get_stats(f->rt.ga).active_blocks > live);
    assert_true(f->rt.n_history > 0);
    tr_runtime_release_history(&f->rt);
    f->rt.retain_history = false;
    assert_int_equal(ga_get_stats(f->rt.ga).active_blocks, live);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(d_gradients, setup_d, teardown),
        cmocka_unit_test_setup_teardown(g_gradients, setup_g, teardown),
        cmocka_unit_test_setup_teardown(check_catches_wrong_gradients, setup_d, teardown),
        cmocka_unit_test_setup_teardown(check_catches_wrong_gradients, setup_g, teardown),
        cmocka_unit_test_setup_teardown(checkpoint_and_fp16, setup_d, teardown),
        cmocka_unit_test_setup_teardown(checkpoint_and_fp16, setup_g, teardown),
        cmocka_unit_test_setup_teardown(backward_frees_the_graph, setup_d, teardown),
        cmocka_unit_test_setup_teardown(backward_frees_the_graph, setup_g, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
