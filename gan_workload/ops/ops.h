/* ops.h — neural-network arithmetic of the DCGAN workload (the one public header of ops/).
 *
 * Raw pointers plus shapes; no tensor struct and no allocation inside an op: every buffer,
 * scratch included (im2col columns, cuDNN workspaces), comes from the caller, so the caller's
 * caching allocator sees every byte. Ask ops_conv*_workspace_bytes() how much scratch a call needs.
 *
 * Layouts (row-major, float32 unless stated):
 *   activations            NCHW
 *   conv2d weight          (Cout, Cin, kH, kW)            as torch.nn.Conv2d
 *   conv_transpose2d weight (Cin, Cout, kH, kW)           as torch.nn.ConvTranspose2d
 *   batch norm parameters  (C)
 *
 * Backends: OPS_CPU computes on the host (pointers must be host-accessible: host memory or the
 * simulated device's memory); OPS_CUDA launches kernels / cuDNN on the context's stream (pointers
 * are device pointers; calls are asynchronous; the scalar results, e.g. the BCE loss, are written
 * to device memory).
 *
 * Gradient convention (PyTorch's .grad): gradients of parameters (conv weights, gamma, beta) are
 * ACCUMULATED (+=) — the caller zeroes them (zero_grad); gradients of inputs (dx) are
 * OVERWRITTEN — the caller sums them with ops_add() where a tensor feeds several consumers.
 *
 * Errors: functions returning int return 0 on success and -1 on error (bad shape, NULL pointer,
 * workspace too small, CUDA/cuDNN/cuBLAS failure); ops_ctx_error() then holds a message.
 */
#ifndef VRAMTRACE_GAN_OPS_H
#define VRAMTRACE_GAN_OPS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { OPS_CPU, OPS_CUDA } ops_backend;

typedef struct ops_ctx ops_ctx;

/* Creates a context. OPS_CPU holds nothing; OPS_CUDA creates cuBLAS and cuDNN handles on the
 * current device (this allocates device memory). Returns NULL and writes a message to err
 * (err_size bytes, may be 0) on failure, e.g. OPS_CUDA in a build without CUDA (OPS_HAVE_CUDA). */
ops_ctx *ops_ctx_create(ops_backend backend, char *err, size_t err_size);
/* Destroys the context and its handles; NULL is allowed. */
void ops_ctx_destroy(ops_ctx *ctx);
ops_backend ops_ctx_backend(const ops_ctx *ctx);
/* Message of the last failed call on this context ("" if none). */
const char *ops_ctx_error(const ops_ctx *ctx);
/* OPS_CUDA: sets the cudaStream_t all later ops run on (NULL = default stream). OPS_CPU: no-op.
 * Returns -1 on a cuDNN/cuBLAS error. */
int ops_ctx_set_stream(ops_ctx *ctx, void *cuda_stream);
/* OPS_CUDA: waits for the context's stream and reports asynchronous errors. OPS_CPU: returns 0. */
int ops_ctx_synchronize(ops_ctx *ctx);
/* 1 if this build contains the CUDA backend, else 0. */
int ops_have_cuda(void);

/* ---- convolutions -------------------------------------------------------------------------- */

/* Shape of one convolution, no bias, dilation 1, groups 1, output_padding 0.
 * For conv2d:          input x (n, c_in, h_in, w_in), weight (c_out, c_in, k_h, k_w),
 *                      output y (n, c_out, h_out, w_out), h_out = (h_in + 2 pad - k_h)/stride + 1.
 * For conv_transpose2d: input x (n, c_in, h_in, w_in), weight (c_in, c_out, k_h, k_w),
 *                      output y (n, c_out, h_out, w_out), h_out = (h_in - 1) stride - 2 pad + k_h.
 * (torch.nn.Conv2d / torch.nn.ConvTranspose2d shape formulas; same for widths.) */
typedef struct {
    int n, c_in, h_in, w_in;
    int c_out, k_h, k_w;
    int stride, pad;
} ops_conv_desc;

/* Output height/width of conv2d / conv_transpose2d for d (formulas above); -1 if invalid. */
int ops_conv2d_out_h(const ops_conv_desc *d);
int ops_conv2d_out_w(const ops_conv_desc *d);
int ops_conv_transpose2d_out_h(const ops_conv_desc *d);
int ops_conv_transpose2d_out_w(const ops_conv_desc *d);

typedef enum { OPS_PASS_FORWARD, OPS_PASS_BACKWARD_DATA, OPS_PASS_BACKWARD_FILTER } ops_conv_pass;

/* Scratch bytes the given pass needs for shape d on this context's backend (CPU: a few samples'
 * im2col columns; CUDA: the cuDNN workspace of the algorithm the op will pick). May be 0, in which
 * case workspace may be NULL. Returns 0 for an invalid shape too (the op then fails). */
size_t ops_conv2d_workspace_bytes(ops_ctx *ctx, const ops_conv_desc *d, ops_conv_pass pass);
size_t ops_conv_transpose2d_workspace_bytes(ops_ctx *ctx, const ops_conv_desc *d,
                                            ops_conv_pass pass);

/* conv2d forward: y = x ⋆ w (cross-correlation, torch.nn.functional.conv2d). y overwritten. */
int ops_conv2d_forward(ops_ctx *ctx, const ops_conv_desc *d, const float *x, const float *w,
                       float *y, void *workspace, size_t workspace_bytes);
/* conv2d backward to input: dx (n,c_in,h_in,w_in) = grad wrt x given dy (n,c_out,h_out,w_out).
 * dx overwritten. */
int ops_conv2d_backward_data(ops_ctx *ctx, const ops_conv_desc *d, const float *dy, const float *w,
                             float *dx, void *workspace, size_t workspace_bytes);
/* conv2d backward to weight: dw (c_out,c_in,k_h,k_w) += grad wrt w given x and dy. */
int ops_conv2d_backward_filter(ops_ctx *ctx, const ops_conv_desc *d, const float *x,
                               const float *dy, float *dw, void *workspace, size_t workspace_bytes);

/* conv_transpose2d forward (torch.nn.functional.conv_transpose2d): y (n,c_out,h_out,w_out) from
 * x (n,c_in,h_in,w_in) and w (c_in,c_out,k_h,k_w). y overwritten. */
int ops_conv_transpose2d_forward(ops_ctx *ctx, const ops_conv_desc *d, const float *x,
                                 const float *w, float *y, void *workspace, size_t workspace_bytes);
/* conv_transpose2d backward to input: dx (n,c_in,h_in,w_in) overwritten, from dy (output shape). */
int ops_conv_transpose2d_backward_data(ops_ctx *ctx, const ops_conv_desc *d, const float *dy,
                                       const float *w, float *dx, void *workspace,
                                       size_t workspace_bytes);
/* conv_transpose2d backward to weight: dw (c_in,c_out,k_h,k_w) += grad wrt w given x and dy. */
int ops_conv_transpose2d_backward_filter(ops_ctx *ctx, const ops_conv_desc *d, const float *x,
                                         const float *dy, float *dw, void *workspace,
                                         size_t workspace_bytes);

/* ---- batch norm 2d (torch.nn.BatchNorm2d, affine, track_running_stats) ---------------------- */

/* Training-mode forward over x (n,c,h,w): per channel mean and biased variance over (n,h,w);
 * y = (x - mean) * invstd * gamma + beta, invstd = 1/sqrt(var + eps). Writes save_mean and
 * save_invstd (c) for the backward. If running_mean/running_var (c) are non-NULL they are updated
 * as PyTorch does: r = (1 - momentum) r + momentum * s, with the UNBIASED variance (m/(m-1),
 * m = n*h*w) for running_var. DCGAN: eps 1e-5, momentum 0.1. y may equal x (in place). */
int ops_batchnorm2d_forward_train(ops_ctx *ctx, const float *x, float *y, int n, int c, int h,
                                  int w, const float *gamma, const float *beta, float *running_mean,
                                  float *running_var, float momentum, float eps, float *save_mean,
                                  float *save_invstd);
/* Eval-mode forward: normalizes with running_mean/running_var. y may equal x. */
int ops_batchnorm2d_forward_eval(ops_ctx *ctx, const float *x, float *y, int n, int c, int h, int w,
                                 const float *gamma, const float *beta, const float *running_mean,
                                 const float *running_var, float eps);
/* Training-mode backward. x is the forward INPUT (not overwritten by an in-place forward: keep
 * it), dy (n,c,h,w). dx overwritten (dx may equal dy); dgamma, dbeta (c) accumulated (+=). */
int ops_batchnorm2d_backward(ops_ctx *ctx, const float *x, const float *dy, int n, int c, int h,
                             int w, const float *gamma, const float *save_mean,
                             const float *save_invstd, float *dx, float *dgamma, float *dbeta);

/* ---- activations (element-wise over count floats; y may equal x, dx may equal dy) ------------ */
/* Backward functions take the forward OUTPUT y (enough for all four, so forwards may run in
 * place): ReLU dx = dy*(y>0); LeakyReLU dx = dy*(y>0 ? 1 : slope); Tanh dx = dy*(1-y^2);
 * Sigmoid dx = dy*y*(1-y). */
int ops_relu_forward(ops_ctx *ctx, const float *x, float *y, size_t count);
int ops_relu_backward(ops_ctx *ctx, const float *y, const float *dy, float *dx, size_t count);
/* LeakyReLU with negative_slope (DCGAN: 0.2), slope > 0. */
int ops_leaky_relu_forward(ops_ctx *ctx, const float *x, float *y, size_t count, float slope);
int ops_leaky_relu_backward(ops_ctx *ctx, const float *y, const float *dy, float *dx, size_t count,
                            float slope);
int ops_tanh_forward(ops_ctx *ctx, const float *x, float *y, size_t count);
int ops_tanh_backward(ops_ctx *ctx, const float *y, const float *dy, float *dx, size_t count);
int ops_sigmoid_forward(ops_ctx *ctx, const float *x, float *y, size_t count);
int ops_sigmoid_backward(ops_ctx *ctx, const float *y, const float *dy, float *dx, size_t count);

/* ---- loss ----------------------------------------------------------------------------------- */

/* torch.nn.BCELoss (reduction 'mean'): *loss = -mean(t*log(p) + (1-t)*log(1-p)), each log clamped
 * to >= -100. p, t: count probabilities/targets. loss: ONE float in the backend's memory (device
 * memory for OPS_CUDA), overwritten. */
int ops_bce_loss_forward(ops_ctx *ctx, const float *p, const float *t, size_t count, float *loss);
/* Gradient of the mean BCE wrt p, times grad_scale (1 for a plain backward):
 * dp = grad_scale * (p - t) / max(p (1-p), 1e-12) / count (PyTorch's
 * binary_cross_entropy_backward). dp overwritten. */
int ops_bce_loss_backward(ops_ctx *ctx, const float *p, const float *t, size_t count,
                          float grad_scale, float *dp);

/* ---- optimizer ------------------------------------------------------------------------------ */

/* One torch.optim.Adam step (weight_decay 0, amsgrad off, maximize off) over count parameters:
 *   m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2;
 *   p -= lr/(1-b1^step) * m / (sqrt(v)/sqrt(1-b2^step) + eps)
 * step is the 1-based step count AFTER this step (1 on the first call). exp_avg (m) and
 * exp_avg_sq (v) start zeroed. DCGAN: lr 2e-4, betas (0.5, 0.999), eps 1e-8. */
int ops_adam_step(ops_ctx *ctx, float *param, const float *grad, float *exp_avg, float *exp_avg_sq,
                  size_t count, float lr, float beta1, float beta2, float eps, long step);

/* ---- element-wise utilities ----------------------------------------------------------------- */

int ops_fill(ops_ctx *ctx, float *x, size_t count, float value);
int ops_zero(ops_ctx *ctx, float *x, size_t count);
/* y (count) = src, non-overlapping. */
int ops_copy(ops_ctx *ctx, const float *src, float *y, size_t count);
/* y += alpha * x (gradient accumulation). */
int ops_add(ops_ctx *ctx, const float *x, float *y, size_t count, float alpha);
/* x *= alpha. */
int ops_scale(ops_ctx *ctx, float *x, size_t count, float alpha);

/* ---- half precision storage (IEEE binary16, round-to-nearest-even) -------------------------- */

/* h[i] = half(x[i]) as raw binary16 bits; overflow gives ±inf, NaN stays NaN. */
int ops_float_to_half(ops_ctx *ctx, const float *x, uint16_t *h, size_t count);
/* x[i] = float(h[i]) (exact). */
int ops_half_to_float(ops_ctx *ctx, const uint16_t *h, float *x, size_t count);
/* Scalar host conversions (the same code the kernels run, see elementwise.h). */
uint16_t ops_f32_to_f16bits(float f);
float ops_f16bits_to_f32(uint16_t h);

#ifdef __cplusplus
}
#endif

#endif /* VRAMTRACE_GAN_OPS_H */
