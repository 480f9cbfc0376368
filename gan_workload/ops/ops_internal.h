/* ops_internal.h — shared between ops.c (dispatch), ops_cpu.c and ops_cuda.cu. Not public. */
#ifndef VRAMTRACE_GAN_OPS_INTERNAL_H
#define VRAMTRACE_GAN_OPS_INTERNAL_H

#include "ops.h"

#include <stdarg.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ops_cuda_state; /* handles and stream, defined in ops_cuda.cu */

struct ops_ctx {
    ops_backend backend;
    char err[256];
    struct ops_cuda_state *cuda;
};

/* Records a printf-style message in ctx and returns -1. Header-only so that the CUDA library
 * needs nothing from gan_ops at link time. */
static inline int ops_fail(ops_ctx *ctx, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx->err, sizeof ctx->err, fmt, ap);
    va_end(ap);
    return -1;
}

/* Fails (-1, message naming `what`) when the caller's workspace (ws, ws_bytes) is smaller than
 * the `need` bytes of the pass. Header-only for the same reason as ops_fail. */
static inline int ops_check_workspace(ops_ctx *ctx, size_t need, const void *ws, size_t ws_bytes,
                                      const char *what)
{
    if (ws_bytes < need || (need && !ws))
        return ops_fail(ctx, "%s: workspace of %zu bytes given, %zu needed", what, ws_bytes, need);
    return 0;
}

/* Output length of a convolution (conv2d: transposed 0) or transposed convolution along one
 * axis; -1 if invalid (torch.nn.Conv2d / ConvTranspose2d formulas, dilation 1, no output_padding).
 * Header-only for the same reason as ops_fail. */
static inline int ops_out_len(int in, int k, int stride, int pad, int transposed)
{
    if (in <= 0 || k <= 0 || stride <= 0 || pad < 0)
        return -1;
    int out = transposed ? (in - 1) * stride - 2 * pad + k
                         : (in + 2 * pad < k ? -1 : (in + 2 * pad - k) / stride + 1);
    return out > 0 ? out : -1;
}

static inline int ops_out_h(const ops_conv_desc *d, int transposed)
{
    return ops_out_len(d->h_in, d->k_h, d->stride, d->pad, transposed);
}

static inline int ops_out_w(const ops_conv_desc *d, int transposed)
{
    return ops_out_len(d->w_in, d->k_w, d->stride, d->pad, transposed);
}

/* Column-buffer floats of the im2col lowering of one sample, for the convolution whose "image"
 * has c channels and whose columns cover out_h * out_w positions. */
static inline size_t ops_col_floats(int c, int k_h, int k_w, int out_h, int out_w)
{
    return (size_t)c * (size_t)k_h * (size_t)k_w * (size_t)out_h * (size_t)out_w;
}

/* The backend entry points have the public signatures with a prefix: opscpu_ / opscu_.
 * Arguments are validated by ops.c before they are called. */
#define OPS_BACKEND_DECLS(P)                                                                       \
    size_t P##conv2d_workspace_bytes(ops_ctx *ctx, const ops_conv_desc *d, ops_conv_pass pass);    \
    size_t P##conv_transpose2d_workspace_bytes(ops_ctx *ctx, const ops_conv_desc *d,               \
                                               ops_conv_pass pass);                                \
    int P##conv2d_forward(ops_ctx *ctx, const ops_conv_desc *d, const float *x, const float *w,    \
                          float *y, void *ws, size_t ws_bytes);                                    \
    int P##conv2d_backward_data(ops_ctx *ctx, const ops_conv_desc *d, const float *dy,             \
                                const float *w, float *dx, void *ws, size_t ws_bytes);             \
    int P##conv2d_backward_filter(ops_ctx *ctx, const ops_conv_desc *d, const float *x,            \
                                  const float *dy, float *dw, void *ws, size_t ws_bytes);          \
    int P##conv_transpose2d_forward(ops_ctx *ctx, const ops_conv_desc *d, const float *x,          \
                                    const float *w, float *y, void *ws, size_t ws_bytes);          \
    int P##conv_transpose2d_backward_data(ops_ctx *ctx, const ops_conv_desc *d, const float *dy,   \
                                          const float *w, float *dx, void *ws, size_t ws_bytes);   \
    int P##conv_transpose2d_backward_filter(ops_ctx *ctx, const ops_conv_desc *d, const float *x,  \
                                            const float *dy, float *dw, void *ws,                  \
                                            size_t ws_bytes);                                      \
    int P##batchnorm2d_forward_train(ops_ctx *ctx, const float *x, float *y, int n, int c, int h,  \
                                     int w, const float *gamma, const float *beta, float *rmean,   \
                                     float *rvar, float momentum, float eps, float *smean,         \
                                     float *sinvstd);                                              \
    int P##batchnorm2d_forward_eval(ops_ctx *ctx, const float *x, float *y, int n, int c, int h,   \
                                    int w, const float *gamma, const float *beta,                  \
                                    const float *rmean, const float *rvar, float eps);             \
    int P##batchnorm2d_backward(ops_ctx *ctx, const float *x, const float *dy, int n, int c,       \
                                int h, int w, const float *gamma, const float *smean,              \
                                const float *sinvstd, float *dx, float *dgamma, float *dbeta);     \
    int P##activation_forward(ops_ctx *ctx, int kind, const float *x, float *y, size_t count,      \
                              float slope);                                                        \
    int P##activation_backward(ops_ctx *ctx, int kind, const float *y, const float *dy, float *dx, \
                               size_t count, float slope);                                         \
    int P##bce_loss_forward(ops_ctx *ctx, const float *p, const float *t, size_t count,            \
                            float *loss);                                                          \
    int P##bce_loss_backward(ops_ctx *ctx, const float *p, const float *t, size_t count,           \
                             float grad_scale, float *dp);                                         \
    int P##adam_step(ops_ctx *ctx, float *param, const float *grad, float *m, float *v,            \
                     size_t count, float beta1, float beta2, float eps, float step_size,           \
                     float bc2_sqrt);                                                              \
    int P##fill(ops_ctx *ctx, float *x, size_t count, float value);                                \
    int P##copy(ops_ctx *ctx, const float *src, float *y, size_t count);                           \
    int P##add(ops_ctx *ctx, const float *x, float *y, size_t count, float alpha);                 \
    int P##scale(ops_ctx *ctx, float *x, size_t count, float alpha);                               \
    int P##float_to_half(ops_ctx *ctx, const float *x, uint16_t *h, size_t count);                 \
    int P##half_to_float(ops_ctx *ctx, const uint16_t *h, float *x, size_t count);

/* Activation kinds for the shared activation entry points. */
enum { OPS_ACT_RELU, OPS_ACT_LEAKY_RELU, OPS_ACT_TANH, OPS_ACT_SIGMOID };

OPS_BACKEND_DECLS(opscpu_)

#ifdef OPS_HAVE_CUDA
OPS_BACKEND_DECLS(opscu_)
/* Creates the CUDA state (cuBLAS + cuDNN handles); NULL with a message in err on failure. */
struct ops_cuda_state *opscu_state_create(char *err, size_t err_size);
void opscu_state_destroy(struct ops_cuda_state *s);
int opscu_set_stream(ops_ctx *ctx, void *stream);
int opscu_synchronize(ops_ctx *ctx);
#endif

#ifdef __cplusplus
}
#endif

#endif /* VRAMTRACE_GAN_OPS_INTERNAL_H */
