/* ops.c — contexts, argument checks and dispatch to the CPU or CUDA backend. */
#include "ops_internal.h"
#include "elementwise.h"

#include <math.h>
#include <stdlib.h>

#ifdef OPS_HAVE_CUDA
#define OPS_CALL(ctx, fn, ...)                                                                     \
    ((ctx)->backend == OPS_CUDA ? opscu_##fn(ctx, __VA_ARGS__) : opscpu_##fn(ctx, __VA_ARGS__))
#else
#define OPS_CALL(ctx, fn, ...) opscpu_##fn(ctx, __VA_ARGS__)
#endif

static void set_err(char *err, size_t err_size, const char *msg)
{
    if (err && err_size)
        snprintf(err, err_size, "%s", msg);
}

ops_ctx *ops_ctx_create(ops_backend backend, char *err, size_t err_size)
{
    if (backend != OPS_CPU && backend != OPS_CUDA) {
        set_err(err, err_size, "ops: unknown backend");
        return NULL;
    }
#ifndef OPS_HAVE_CUDA
    if (backend == OPS_CUDA) {
        set_err(err, err_size, "ops: this build has no CUDA backend (nvcc or cuDNN not found)");
        return NULL;
    }
#endif
    ops_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx) {
        set_err(err, err_size, "ops: out of host memory");
        return NULL;
    }
    ctx->backend = backend;
#ifdef OPS_HAVE_CUDA
    if (backend == OPS_CUDA) {
        ctx->cuda = opscu_state_create(err, err_size);
        if (!ctx->cuda) {
            free(ctx);
            return NULL;
        }
    }
#endif
    return ctx;
}

void ops_ctx_destroy(ops_ctx *ctx)
{
    if (!ctx)
        return;
#ifdef OPS_HAVE_CUDA
    if (ctx->cuda)
        opscu_state_destroy(ctx->cuda);
#endif
    free(ctx);
}

ops_backend ops_ctx_backend(const ops_ctx *ctx)
{
    return ctx->backend;
}

const char *ops_ctx_error(const ops_ctx *ctx)
{
    return ctx->err;
}

int ops_ctx_set_stream(ops_ctx *ctx, void *cuda_stream)
{
#ifdef OPS_HAVE_CUDA
    if (ctx->backend == OPS_CUDA)
        return opscu_set_stream(ctx, cuda_stream);
#endif
    (void)ctx;
    (void)cuda_stream;
    return 0;
}

int ops_ctx_synchronize(ops_ctx *ctx)
{
#ifdef OPS_HAVE_CUDA
    if (ctx->backend == OPS_CUDA)
        return opscu_synchronize(ctx);
#endif
    (void)ctx;
    return 0;
}

int ops_have_cuda(void)
{
#ifdef OPS_HAVE_CUDA
    return 1;
#else
    return 0;
#endif
}

/* ---- shapes --------------------------------------------------------------------------------- */

int ops_conv2d_out_h(const ops_conv_desc *d)
{
    return ops_out_h(d, 0);
}

int ops_conv2d_out_w(const ops_conv_desc *d)
{
    return ops_out_w(d, 0);
}

int ops_conv_transpose2d_out_h(const ops_conv_desc *d)
{
    return ops_out_h(d, 1);
}

int ops_conv_transpose2d_out_w(const ops_conv_desc *d)
{
    return ops_out_w(d, 1);
}

static int desc_ok(const ops_conv_desc *d, int transposed)
{
    if (!d || d->n <= 0 || d->c_in <= 0 || d->c_out <= 0)
        return 0;
    return ops_out_h(d, transposed) > 0 && ops_out_w(d, transposed) > 0;
}

static int check_conv(ops_ctx *ctx, const ops_conv_desc *d, int transposed, const void *a,
                      const void *b, const void *c, const char *what)
{
    if (!desc_ok(d, transposed))
        return ops_fail(ctx, "%s: invalid convolution shape", what);
    if (!a || !b || !c)
        return ops_fail(ctx, "%s: NULL tensor", what);
    return 0;
}

size_t ops_conv2d_workspace_bytes(ops_ctx *ctx, const ops_conv_desc *d, ops_conv_pass pass)
{
    if (!desc_ok(d, 0))
        return 0;
    return OPS_CALL(ctx, conv2d_workspace_bytes, d, pass);
}

size_t ops_conv_transpose2d_workspace_bytes(ops_ctx *ctx, const ops_conv_desc *d,
                                            ops_conv_pass pass)
{
    if (!desc_ok(d, 1))
        return 0;
    return OPS_CALL(ctx, conv_transpose2d_workspace_bytes, d, pass);
}

/* Validates shape, pointers and workspace size of one conv pass; 0 if the call may proceed.
 * The CUDA backend checks the workspace itself against the algorithm it picks for the call:
 * asking here too would run cuDNN's algorithm search twice per convolution. */
static int conv_prologue(ops_ctx *ctx, const ops_conv_desc *d, int transposed, ops_conv_pass pass,
                         const void *a, const void *b, const void *c, const void *ws,
                         size_t ws_bytes, const char *what)
{
    if (check_conv(ctx, d, transposed, a, b, c, what))
        return -1;
    if (ctx->backend == OPS_CUDA)
        return 0;
    size_t need = transposed ? ops_conv_transpose2d_workspace_bytes(ctx, d, pass)
                             : ops_conv2d_workspace_bytes(ctx, d, pass);
    return ops_check_workspace(ctx, need, ws, ws_bytes, what);
}

int ops_conv2d_forward(ops_ctx *ctx, const ops_conv_desc *d, const float *x, const float *w,
                       float *y, void *workspace, size_t workspace_bytes)
{
    if (conv_prologue(ctx, d, 0, OPS_PASS_FORWARD, x, w, y, workspace, workspace_bytes,
                      "conv2d_forward"))
        return -1;
    return OPS_CALL(ctx, conv2d_forward, d, x, w, y, workspace, workspace_bytes);
}

int ops_conv2d_backward_data(ops_ctx *ctx, const ops_conv_desc *d, const float *dy, const float *w,
                             float *dx, void *workspace, size_t workspace_bytes)
{
    if (conv_prologue(ctx, d, 0, OPS_PASS_BACKWARD_DATA, dy, w, dx, workspace, workspace_bytes,
                      "conv2d_backward_data"))
        return -1;
    return OPS_CALL(ctx, conv2d_backward_data, d, dy, w, dx, workspace, workspace_bytes);
}

int ops_conv2d_backward_filter(ops_ctx *ctx, const ops_conv_desc *d, const float *x,
                               const float *dy, float *dw, void *workspace, size_t workspace_bytes)
{
    if (conv_prologue(ctx, d, 0, OPS_PASS_BACKWARD_FILTER, x, dy, dw, workspace, workspace_bytes,
                      "conv2d_backward_filter"))
        return -1;
    return OPS_CALL(ctx, conv2d_backward_filter, d, x, dy, dw, workspace, workspace_bytes);
}

int ops_conv_transpose2d_forward(ops_ctx *ctx, const ops_conv_desc *d, const float *x,
                                 const float *w, float *y, void *workspace, size_t workspace_bytes)
{
    if (conv_prologue(ctx, d, 1, OPS_PASS_FORWARD, x, w, y, workspace, workspace_bytes,
                      "conv_transpose2d_forward"))
        return -1;
    return OPS_CALL(ctx, conv_transpose2d_forward, d, x, w, y, workspace, workspace_bytes);
}

int ops_conv_transpose2d_backward_data(ops_ctx *ctx, const ops_conv_desc *d, const float *dy,
                                       const float *w, float *dx, void *workspace,
                                       size_t workspace_bytes)
{
    if (conv_prologue(ctx, d, 1, OPS_PASS_BACKWARD_DATA, dy, w, dx, workspace, workspace_bytes,
                      "conv_transpose2d_backward_data"))
        return -1;
    return OPS_CALL(ctx, conv_transpose2d_backward_data, d, dy, w, dx, workspace, workspace_bytes);
}

int ops_conv_transpose2d_backward_filter(ops_ctx *ctx, const ops_conv_desc *d, const float *x,
                                         const float *dy, float *dw, void *workspace,
                                         size_t workspace_bytes)
{
    if (conv_prologue(ctx, d, 1, OPS_PASS_BACKWARD_FILTER, x, dy, dw, workspace, workspace_bytes,
                      "conv_transpose2d_backward_filter"))
        return -1;
    return OPS_CALL(ctx, conv_transpose2d_backward_filter, d, x, dy, dw, workspace,
                    workspace_bytes);
}

/* ---- batch norm ----------------------------------------------------------------------------- */

static int check_nchw(ops_ctx *ctx, int n, int c, int h, int w, const char *what)
{
    if (n <= 0 || c <= 0 || h <= 0 || w <= 0)
        return ops_fail(ctx, "%s: invalid shape (%d,%d,%d,%d)", what, n, c, h, w);
    return 0;
}

int ops_batchnorm2d_forward_train(ops_ctx *ctx, const float *x, float *y, int n, int c, int h,
                                  int w, const float *gamma, const float *beta, float *running_mean,
                                  float *running_var, float momentum, float eps, float *save_mean,
                                  float *save_invstd)
{
    if (check_nchw(ctx, n, c, h, w, "batchnorm2d_forward_train"))
        return -1;
    if (!x || !y || !gamma || !beta || !save_mean || !save_invstd ||
        (!running_mean != !running_var))
        return ops_fail(ctx, "batchnorm2d_forward_train: NULL tensor");
    return OPS_CALL(ctx, batchnorm2d_forward_train, x, y, n, c, h, w, gamma, beta, running_mean,
                    running_var, momentum, eps, save_mean, save_invstd);
}

int ops_batchnorm2d_forward_eval(ops_ctx *ctx, const float *x, float *y, int n, int c, int h, int w,
                                 const float *gamma, const float *beta, const float *running_mean,
                                 const float *running_var, float eps)
{
    if (check_nchw(ctx, n, c, h, w, "batchnorm2d_forward_eval"))
        return -1;
    if (!x || !y || !gamma || !beta || !running_mean || !running_var)
        return ops_fail(ctx, "batchnorm2d_forward_eval: NULL tensor");
    return OPS_CALL(ctx, batchnorm2d_forward_eval, x, y, n, c, h, w, gamma, beta, running_mean,
                    running_var, eps);
}

int ops_batchnorm2d_backward(ops_ctx *ctx, const float *x, const float *dy, int n, int c, int h,
                             int w, const float *gamma, const float *save_mean,
                             const float *save_invstd, float *dx, float *dgamma, float *dbeta)
{
    if (check_nchw(ctx, n, c, h, w, "batchnorm2d_backward"))
        return -1;
    if (!x || !dy || !gamma || !save_mean || !save_invstd || !dx || !dgamma || !dbeta)
        return ops_fail(ctx, "batchnorm2d_backward: NULL tensor");
    return OPS_CALL(ctx, batchnorm2d_backward, x, dy, n, c, h, w, gamma, save_mean, save_invstd, dx,
                    dgamma, dbeta);
}

/* ---- activations ---------------------------------------------------------------------------- */

static int act_fwd(ops_ctx *ctx, int kind, const float *x, float *y, size_t count, float slope)
{
    if (count && (!x || !y))
        return ops_fail(ctx, "activation forward: NULL tensor");
    return count ? OPS_CALL(ctx, activation_forward, kind, x, y, count, slope) : 0;
}

static int act_bwd(ops_ctx *ctx, int kind, const float *y, const float *dy, float *dx, size_t count,
                   float slope)
{
    if (count && (!y || !dy || !dx))
        return ops_fail(ctx, "activation backward: NULL tensor");
    return count ? OPS_CALL(ctx, activation_backward, kind, y, dy, dx, count, slope) : 0;
}

int ops_relu_forward(ops_ctx *ctx, const float *x, float *y, size_t count)
{
    return act_fwd(ctx, OPS_ACT_RELU, x, y, count, 0.0f);
}

int ops_relu_backward(ops_ctx *ctx, const float *y, const float *dy, float *dx, size_t count)
{
    return act_bwd(ctx, OPS_ACT_RELU, y, dy, dx, count, 0.0f);
}

int ops_leaky_relu_forward(ops_ctx *ctx, const float *x, float *y, size_t count, float slope)
{
    if (!(slope > 0.0f))
        return ops_fail(ctx, "leaky_relu: slope must be > 0");
    return act_fwd(ctx, OPS_ACT_LEAKY_RELU, x, y, count, slope);
}

int ops_leaky_relu_backward(ops_ctx *ctx, const float *y, const float *dy, float *dx, size_t count,
                            float slope)
{
    if (!(slope > 0.0f))
        return ops_fail(ctx, "leaky_relu: slope must be > 0");
    return act_bwd(ctx, OPS_ACT_LEAKY_RELU, y, dy, dx, count, slope);
}

int ops_tanh_forward(ops_ctx *ctx, const float *x, float *y, size_t count)
{
    return act_fwd(ctx, OPS_ACT_TANH, x, y, count, 0.0f);
}

int ops_tanh_backward(ops_ctx *ctx, const float *y, const float *dy, float *dx, size_t count)
{
    return act_bwd(ctx, OPS_ACT_TANH, y, dy, dx, count, 0.0f);
}

int ops_sigmoid_forward(ops_ctx *ctx, const float *x, float *y, size_t count)
{
    return act_fwd(ctx, OPS_ACT_SIGMOID, x, y, count, 0.0f);
}

int ops_sigmoid_backward(ops_ctx *ctx, const float *y, const float *dy, float *dx, size_t count)
{
    return act_bwd(ctx, OPS_ACT_SIGMOID, y, dy, dx, count, 0.0f);
}

/* ---- loss, optimizer ------------------------------------------------------------------------ */

int ops_bce_loss_forward(ops_ctx *ctx, const float *p, const float *t, size_t count, float *loss)
{
    if (!count || !p || !t || !loss)
        return ops_fail(ctx, "bce_loss_forward: empty or NULL tensor");
    return OPS_CALL(ctx, bce_loss_forward, p, t, count, loss);
}

int ops_bce_loss_backward(ops_ctx *ctx, const float *p, const float *t, size_t count,
                          float grad_scale, float *dp)
{
    if (!count || !p || !t || !dp)
        return ops_fail(ctx, "bce_loss_backward: empty or NULL tensor");
    return OPS_CALL(ctx, bce_loss_backward, p, t, count, grad_scale, dp);
}

int ops_adam_step(ops_ctx *ctx, float *param, const float *grad, float *exp_avg, float *exp_avg_sq,
                  size_t count, float lr, float beta1, float beta2, float eps, long step)
{
    if (step < 1)
        return ops_fail(ctx, "adam_step: step must be >= 1 (got %ld)", step);
    if (count && (!param || !grad || !exp_avg || !exp_avg_sq))
        return ops_fail(ctx, "adam_step: NULL tensor");
    if (!count)
        return 0;
    /* torch.optim.Adam: bias corrections in Python floats (double). */
    double bc1 = 1.0 - pow((double)beta1, (double)step);
    double bc2 = 1.0 - pow((double)beta2, (double)step);
    float step_size = (float)((double)lr / bc1);
    float bc2_sqrt = (float)sqrt(bc2);
    return OPS_CALL(ctx, adam_step, param, grad, exp_avg, exp_avg_sq, count, beta1, beta2, eps,
                    step_size, bc2_sqrt);
}

/* ---- utilities ------------------------------------------------------------------------------ */

int ops_fill(ops_ctx *ctx, float *x, size_t count, float value)
{
    if (count && !x)
        return ops_fail(ctx, "fill: NULL tensor");
    return count ? OPS_CALL(ctx, fill, x, count, value) : 0;
}

int ops_zero(ops_ctx *ctx, float *x, size_t count)
{
    return ops_fill(ctx, x, count, 0.0f);
}

int ops_copy(ops_ctx *ctx, const float *src, float *y, size_t count)
{
    if (count && (!src || !y))
        return ops_fail(ctx, "copy: NULL tensor");
    return count ? OPS_CALL(ctx, copy, src, y, count) : 0;
}

int ops_add(ops_ctx *ctx, const float *x, float *y, size_t count, float alpha)
{
    if (count && (!x || !y))
        return ops_fail(ctx, "add: NULL tensor");
    return count ? OPS_CALL(ctx, add, x, y, count, alpha) : 0;
}

int ops_scale(ops_ctx *ctx, float *x, size_t count, float alpha)
{
    if (count && !x)
        return ops_fail(ctx, "scale: NULL tensor");
    return count ? OPS_CALL(ctx, scale, x, count, alpha) : 0;
}

int ops_float_to_half(ops_ctx *ctx, const float *x, uint16_t *h, size_t count)
{
    if (count && (!x || !h))
        return ops_fail(ctx, "float_to_half: NULL tensor");
    return count ? OPS_CALL(ctx, float_to_half, x, h, count) : 0;
}

int ops_half_to_float(ops_ctx *ctx, const uint16_t *h, float *x, size_t count)
{
    if (count && (!x || !h))
        return ops_fail(ctx, "half_to_float: NULL tensor");
    return count ? OPS_CALL(ctx, half_to_float, h, x, count) : 0;
}

uint16_t ops_f32_to_f16bits(float f)
{
    return ops_ew_f32_to_f16(f);
}

float ops_f16bits_to_f32(uint16_t h)
{
    return ops_ew_f16_to_f32(h);
}
