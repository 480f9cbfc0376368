/* ops_cpu.c — the host backend: im2col/col2im + OpenBLAS sgemm for convolutions, loops over the
 * shared element-wise functions (elementwise.h) for everything else. Samples are lowered a few
 * at a time (enough for ~1024 GEMM columns); the scratch is that chunk's column buffer. */
#include "ops_internal.h"
#include "elementwise.h"

#include <cblas.h>
#include <string.h>

/* ---- im2col / col2im (Caffe's lowering, cross-correlation, zero padding) -------------------- */

typedef struct {
    int c, h, w;      /* image: channels, height, width */
    int k_h, k_w;     /* kernel */
    int stride, pad;  /* geometry */
    int out_h, out_w; /* column positions */
} lowering;

static size_t lowering_rows(const lowering *l)
{
    return (size_t)l->c * (size_t)l->k_h * (size_t)l->k_w;
}

static size_t lowering_cols(const lowering *l)
{
    return (size_t)l->out_h * (size_t)l->out_w;
}

/* One column row (fixed channel, ki, kj) from the image channel im_c. */
static void im2col_row(const lowering *l, const float *im_c, int ki, int kj, float *row)
{
    for (int oy = 0; oy < l->out_h; oy++) {
        int iy = oy * l->stride - l->pad + ki;
        float *dst = row + (size_t)oy * l->out_w;
        if (iy < 0 || iy >= l->h) {
            memset(dst, 0, sizeof(float) * (size_t)l->out_w);
            continue;
        }
        const float *src = im_c + (size_t)iy * l->w;
        for (int ox = 0; ox < l->out_w; ox++) {
            int ix = ox * l->stride - l->pad + kj;
            dst[ox] = (ix >= 0 && ix < l->w) ? src[ix] : 0.0f;
        }
    }
}

/* col rows are ld floats apart (several samples side by side). */
static void im2col(const lowering *l, const float *im, float *col, size_t ld)
{
    size_t plane = (size_t)l->h * l->w, row = 0;
    for (int ch = 0; ch < l->c; ch++)
        for (int ki = 0; ki < l->k_h; ki++)
            for (int kj = 0; kj < l->k_w; kj++, row++)
                im2col_row(l, im + ch * plane, ki, kj, col + row * ld);
}

/* Adds one column row back into the image channel im_c. */
static void col2im_row(const lowering *l, const float *row, int ki, int kj, float *im_c)
{
    for (int oy = 0; oy < l->out_h; oy++) {
        int iy = oy * l->stride - l->pad + ki;
        if (iy < 0 || iy >= l->h)
            continue;
        const float *src = row + (size_t)oy * l->out_w;
        float *dst = im_c + (size_t)iy * l->w;
        for (int ox = 0; ox < l->out_w; ox++) {
            int ix = ox * l->stride - l->pad + kj;
            if (ix >= 0 && ix < l->w)
                dst[ix] += src[ox];
        }
    }
}

/* im = sum of the column entries that map to each pixel (im overwritten). */
static void col2im(const lowering *l, const float *col, size_t ld, float *im)
{
    size_t plane = (size_t)l->h * l->w, row = 0;
    memset(im, 0, sizeof(float) * plane * (size_t)l->c);
    for (int ch = 0; ch < l->c; ch++)
        for (int ki = 0; ki < l->k_h; ki++)
            for (int kj = 0; kj < l->k_w; kj++, row++)
                col2im_row(l, col + row * ld, ki, kj, im + ch * plane);
}

/* Row-major C(m,n) = op(A) op(B) + beta C. */
static void gemm(int ta, int tb, size_t m, size_t n, size_t k, const float *a, const float *b,
                 float beta, float *c)
{
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                (blasint)m, (blasint)n, (blasint)k, 1.0f, a, ta ? (blasint)m : (blasint)k, b,
                tb ? (blasint)k : (blasint)n, beta, c, (blasint)n);
}

/* ---- one convolution as GEMMs over chunks of samples ---------------------------------------- */

/* Both convolutions pair a large "image" tensor (conv2d: its input; conv_transpose2d: its output)
 * with a small one (conv2d: output; conv_transpose2d: input) of c_small channels at the
 * lowering's column positions, through a weight that is (c_small, rows) row-major in both cases.
 * Samples are lowered `chunk` at a time so each sgemm has at least ~OPS_CPU_GEMM_COLS columns. */
enum { OPS_CPU_GEMM_COLS = 1024 };

typedef struct {
    lowering l;
    int n, c_small, chunk;
    size_t image_block, small_block; /* floats per sample */
} conv_job;

static conv_job make_job(const ops_conv_desc *d, int transposed)
{
    conv_job j;
    int oh = ops_out_h(d, transposed), ow = ops_out_w(d, transposed);
    lowering conv = {d->c_in, d->h_in, d->w_in, d->k_h, d->k_w, d->stride, d->pad, oh, ow};
    lowering convt = {d->c_out, oh, ow, d->k_h, d->k_w, d->stride, d->pad, d->h_in, d->w_in};
    j.l = transposed ? convt : conv;
    j.n = d->n;
    j.c_small = transposed ? d->c_in : d->c_out;
    j.image_block = (size_t)j.l.c * j.l.h * j.l.w;
    j.small_block = (size_t)j.c_small * lowering_cols(&j.l);
    size_t p = lowering_cols(&j.l), chunk = (OPS_CPU_GEMM_COLS + p - 1) / p;
    j.chunk = chunk < (size_t)d->n ? (int)chunk : d->n;
    return j;
}

/* Scratch: the chunk's columns, plus the chunk's small tensor regrouped as (c_small, chunk*P). */
static size_t job_ws_floats(const conv_job *j)
{
    size_t cols = (size_t)j->chunk * lowering_cols(&j->l);
    return cols * lowering_rows(&j->l) + (j->chunk > 1 ? cols * (size_t)j->c_small : 0);
}

/* Between (chunk, c_small, P) in the tensor and (c_small, chunk*P) in tmp. */
static void regroup(const conv_job *j, int samples, float *tensor, float *tmp, int to_tmp)
{
    size_t p = lowering_cols(&j->l), ld = (size_t)samples * p;
    for (int s = 0; s < samples; s++)
        for (int c = 0; c < j->c_small; c++) {
            float *t = tensor + s * j->small_block + c * p, *g = tmp + c * ld + s * p;
            memcpy(to_tmp ? g : t, to_tmp ? t : g, p * sizeof(float));
        }
}

/* The small tensor of samples [n0, n0+samples) as (c_small, samples*P): in place if one sample. */
static float *small_view(const conv_job *j, int samples, const float *small, float *tmp)
{
    if (samples == 1)
        return (float *)small;
    regroup(j, samples, (float *)small, tmp, 1);
    return tmp;
}

static void lower_chunk(const conv_job *j, int samples, const float *image, float *cols)
{
    size_t p = lowering_cols(&j->l), ld = (size_t)samples * p;
    for (int s = 0; s < samples; s++)
        im2col(&j->l, image + s * j->image_block, cols + s * p, ld);
}

/* small = W (c_small, rows) x cols(image): conv2d forward, conv_transpose2d backward data. */
static void job_lower_gemm(const conv_job *j, const float *w, const float *image, float *small,
                           float *ws)
{
    size_t p = lowering_cols(&j->l);
    for (int n0 = 0; n0 < j->n; n0 += j->chunk) {
        int b = j->n - n0 < j->chunk ? j->n - n0 : j->chunk;
        float *cols = ws, *tmp = ws + lowering_rows(&j->l) * b * p;
        float *out = b == 1 ? small + n0 * j->small_block : tmp;
        lower_chunk(j, b, image + n0 * j->image_block, cols);
        gemm(0, 0, j->c_small, b * p, lowering_rows(&j->l), w, cols, 0.0f, out);
        if (b > 1)
            regroup(j, b, small + n0 * j->small_block, tmp, 0);
    }
}

/* image = col2im(W^T small): conv2d backward data, conv_transpose2d forward. */
static void job_gemm_raise(const conv_job *j, const float *w, const float *small, float *image,
                           float *ws)
{
    size_t p = lowering_cols(&j->l);
    for (int n0 = 0; n0 < j->n; n0 += j->chunk) {
        int b = j->n - n0 < j->chunk ? j->n - n0 : j->chunk;
        float *cols = ws, *tmp = ws + lowering_rows(&j->l) * b * p;
        const float *in = small_view(j, b, small + n0 * j->small_block, tmp);
        gemm(1, 0, lowering_rows(&j->l), b * p, j->c_small, w, in, 0.0f, cols);
        for (int s = 0; s < b; s++)
            col2im(&j->l, cols + s * p, b * p, image + (n0 + s) * j->image_block);
    }
}

/* dW (c_small, rows) += small x cols(image)^T: both backward-filter passes. */
static void job_weight_grad(const conv_job *j, const float *small, const float *image, float *dw,
                            float *ws)
{
    size_t p = lowering_cols(&j->l);
    for (int n0 = 0; n0 < j->n; n0 += j->chunk) {
        int b = j->n - n0 < j->chunk ? j->n - n0 : j->chunk;
        float *cols = ws, *tmp = ws + lowering_rows(&j->l) * b * p;
        lower_chunk(j, b, image + n0 * j->image_block, cols);
        const float *g = small_view(j, b, small + n0 * j->small_block, tmp);
        gemm(0, 1, j->c_small, lowering_rows(&j->l), b * p, g, cols, 1.0f, dw);
    }
}

/* ---- convolutions --------------------------------------------------------------------------- */

size_t opscpu_conv2d_workspace_bytes(ops_ctx *ctx, const ops_conv_desc *d, ops_conv_pass pass)
{
    (void)ctx;
    (void)pass;
    conv_job j = make_job(d, 0);
    return sizeof(float) * job_ws_floats(&j);
}

size_t opscpu_conv_transpose2d_workspace_bytes(ops_ctx *ctx, const ops_conv_desc *d,
                                               ops_conv_pass pass)
{
    (void)ctx;
    (void)pass;
    conv_job j = make_job(d, 1);
    return sizeof(float) * job_ws_floats(&j);
}

int opscpu_conv2d_forward(ops_ctx *ctx, const ops_conv_desc *d, const float *x, const float *w,
                          float *y, void *ws, size_t ws_bytes)
{
    (void)ctx;
    (void)ws_bytes;
    conv_job j = make_job(d, 0);
    job_lower_gemm(&j, w, x, y, ws);
    return 0;
}

int opscpu_conv2d_backward_data(ops_ctx *ctx, const ops_conv_desc *d, const float *dy,
                                const float *w, float *dx, void *ws, size_t ws_bytes)
{
    (void)ctx;
    (void)ws_bytes;
    conv_job j = make_job(d, 0);
    job_gemm_raise(&j, w, dy, dx, ws);
    return 0;
}

int opscpu_conv2d_backward_filter(ops_ctx *ctx, const ops_conv_desc *d, const float *x,
                                  const float *dy, float *dw, void *ws, size_t ws_bytes)
{
    (void)ctx;
    (void)ws_bytes;
    conv_job j = make_job(d, 0);
    job_weight_grad(&j, dy, x, dw, ws);
    return 0;
}

int opscpu_conv_transpose2d_forward(ops_ctx *ctx, const ops_conv_desc *d, const float *x,
                                    const float *w, float *y, void *ws, size_t ws_bytes)
{
    (void)ctx;
    (void)ws_bytes;
    conv_job j = make_job(d, 1);
    job_gemm_raise(&j, w, x, y, ws);
    return 0;
}

int opscpu_conv_transpose2d_backward_data(ops_ctx *ctx, const ops_conv_desc *d, const float *dy,
                                          const float *w, float *dx, void *ws, size_t ws_bytes)
{
    (void)ctx;
    (void)ws_bytes;
    conv_job j = make_job(d, 1);
    job_lower_gemm(&j, w, dy, dx, ws);
    return 0;
}

int opscpu_conv_transpose2d_backward_filter(ops_ctx *ctx, const ops_conv_desc *d, const float *x,
                                            const float *dy, float *dw, void *ws, size_t ws_bytes)
{
    (void)ctx;
    (void)ws_bytes;
    conv_job j = make_job(d, 1);
    job_weight_grad(&j, x, dy, dw, ws);
    return 0;
}

/* ---- batch norm ----------------------------------------------------------------------------- */

/* Sum and sum of squared deviations of channel ch over (n, h, w), in double. */
static void channel_moments(const float *x, int n, int c, size_t plane, int ch, double *mean,
                            double *var)
{
    double s = 0.0, q = 0.0, m = (double)n * (double)plane;
    for (int i = 0; i < n; i++) {
        const float *p = x + ((size_t)i * c + ch) * plane;
        for (size_t j = 0; j < plane; j++)
            s += p[j];
    }
    double mu = s / m;
    for (int i = 0; i < n; i++) {
        const float *p = x + ((size_t)i * c + ch) * plane;
        for (size_t j = 0; j < plane; j++)
            q += (p[j] - mu) * (p[j] - mu);
    }
    *mean = mu;
    *var = q / m;
}

static void bn_apply(const float *x, float *y, int n, int c, size_t plane, int ch, float mean,
                     float invstd, float gamma, float beta)
{
    for (int i = 0; i < n; i++) {
        size_t off = ((size_t)i * c + ch) * plane;
        for (size_t j = 0; j < plane; j++)
            y[off + j] = ops_ew_bn_normalize(x[off + j], mean, invstd, gamma, beta);
    }
}

int opscpu_batchnorm2d_forward_train(ops_ctx *ctx, const float *x, float *y, int n, int c, int h,
                                     int w, const float *gamma, const float *beta, float *rmean,
                                     float *rvar, float momentum, float eps, float *smean,
                                     float *sinvstd)
{
    size_t plane = (size_t)h * w;
    double m = (double)n * (double)plane;
    if (m < 2.0)
        return ops_fail(ctx, "batchnorm2d: expected more than 1 value per channel when training");
    for (int ch = 0; ch < c; ch++) {
        double mean, var;
        channel_moments(x, n, c, plane, ch, &mean, &var);
        smean[ch] = (float)mean;
        sinvstd[ch] = (float)(1.0 / sqrt(var + (double)eps));
        if (rmean) {
            rmean[ch] = (1.0f - momentum) * rmean[ch] + momentum * (float)mean;
            rvar[ch] = (1.0f - momentum) * rvar[ch] + momentum * (float)(var * m / (m - 1.0));
        }
        bn_apply(x, y, n, c, plane, ch, smean[ch], sinvstd[ch], gamma[ch], beta[ch]);
    }
    return 0;
}

int opscpu_batchnorm2d_forward_eval(ops_ctx *ctx, const float *x, float *y, int n, int c, int h,
                                    int w, const float *gamma, const float *beta,
                                    const float *rmean, const float *rvar, float eps)
{
    (void)ctx;
    for (int ch = 0; ch < c; ch++) {
        float invstd = 1.0f / sqrtf(rvar[ch] + eps);
        bn_apply(x, y, n, c, (size_t)h * w, ch, rmean[ch], invstd, gamma[ch], beta[ch]);
    }
    return 0;
}

int opscpu_batchnorm2d_backward(ops_ctx *ctx, const float *x, const float *dy, int n, int c, int h,
                                int w, const float *gamma, const float *smean, const float *sinvstd,
                                float *dx, float *dgamma, float *dbeta)
{
    (void)ctx;
    size_t plane = (size_t)h * w;
    double m = (double)n * (double)plane;
    for (int ch = 0; ch < c; ch++) {
        double sdy = 0.0, sdyx = 0.0;
        for (int i = 0; i < n; i++) {
            size_t off = ((size_t)i * c + ch) * plane;
            for (size_t j = 0; j < plane; j++) {
                sdy += dy[off + j];
                sdyx += dy[off + j] * ((x[off + j] - smean[ch]) * sinvstd[ch]);
            }
        }
        dgamma[ch] += (float)sdyx;
        dbeta[ch] += (float)sdy;
        float mdy = (float)(sdy / m), mdyx = (float)(sdyx / m);
        for (int i = 0; i < n; i++) {
            size_t off = ((size_t)i * c + ch) * plane;
            for (size_t j = 0; j < plane; j++)
                dx[off + j] = ops_ew_bn_backward(x[off + j], dy[off + j], smean[ch], sinvstd[ch],
                                                 gamma[ch], mdy, mdyx);
        }
    }
    return 0;
}

/* ---- activations, loss, optimizer ----------------------------------------------------------- */

int opscpu_activation_forward(ops_ctx *ctx, int kind, const float *x, float *y, size_t count,
                              float slope)
{
    (void)ctx;
    for (size_t i = 0; i < count; i++) {
        switch (kind) {
        case OPS_ACT_RELU:
            y[i] = ops_ew_relu(x[i]);
            break;
        case OPS_ACT_LEAKY_RELU:
            y[i] = ops_ew_leaky_relu(x[i], slope);
            break;
        case OPS_ACT_TANH:
            y[i] = ops_ew_tanh(x[i]);
            break;
        default:
            y[i] = ops_ew_sigmoid(x[i]);
            break;
        }
    }
    return 0;
}

int opscpu_activation_backward(ops_ctx *ctx, int kind, const float *y, const float *dy, float *dx,
                               size_t count, float slope)
{
    (void)ctx;
    for (size_t i = 0; i < count; i++) {
        switch (kind) {
        case OPS_ACT_RELU:
            dx[i] = ops_ew_relu_grad(y[i], dy[i]);
            break;
        case OPS_ACT_LEAKY_RELU:
            dx[i] = ops_ew_leaky_relu_grad(y[i], dy[i], slope);
            break;
        case OPS_ACT_TANH:
            dx[i] = ops_ew_tanh_grad(y[i], dy[i]);
            break;
        default:
            dx[i] = ops_ew_sigmoid_grad(y[i], dy[i]);
            break;
        }
    }
    return 0;
}

int opscpu_bce_loss_forward(ops_ctx *ctx, const float *p, const float *t, size_t count, float *loss)
{
    (void)ctx;
    double s = 0.0;
    for (size_t i = 0; i < count; i++)
        s += ops_ew_bce(p[i], t[i]);
    *loss = (float)(s / (double)count);
    return 0;
}

int opscpu_bce_loss_backward(ops_ctx *ctx, const float *p, const float *t, size_t count,
                             float grad_scale, float *dp)
{
    (void)ctx;
    float inv = 1.0f / (float)count;
    for (size_t i = 0; i < count; i++)
        dp[i] = ops_ew_bce_grad(p[i], t[i], grad_scale, inv);
    return 0;
}

int opscpu_adam_step(ops_ctx *ctx, float *param, const float *grad, float *m, float *v,
                     size_t count, float beta1, float beta2, float eps, float step_size,
                     float bc2_sqrt)
{
    (void)ctx;
    for (size_t i = 0; i < count; i++)
        ops_ew_adam(&param[i], &m[i], &v[i], grad[i], beta1, beta2, eps, step_size, bc2_sqrt);
    return 0;
}

/* ---- utilities ------------------------------------------------------------------------------ */

int opscpu_fill(ops_ctx *ctx, float *x, size_t count, float value)
{
    (void)ctx;
    for (size_t i = 0; i < count; i++)
        x[i] = value;
    return 0;
}

int opscpu_copy(ops_ctx *ctx, const float *src, float *y, size_t count)
{
    (void)ctx;
    memcpy(y, src, count * sizeof(float));
    return 0;
}

int opscpu_add(ops_ctx *ctx, const float *x, float *y, size_t count, float alpha)
{
    (void)ctx;
    for (size_t i = 0; i < count; i++)
        y[i] += alpha * x[i];
    return 0;
}

int opscpu_scale(ops_ctx *ctx, float *x, size_t count, float alpha)
{
    (void)ctx;
    for (size_t i = 0; i < count; i++)
        x[i] *= alpha;
    return 0;
}

int opscpu_float_to_half(ops_ctx *ctx, const float *x, uint16_t *h, size_t count)
{
    (void)ctx;
    for (size_t i = 0; i < count; i++)
        h[i] = ops_ew_f32_to_f16(x[i]);
    return 0;
}

int opscpu_half_to_float(ops_ctx *ctx, const uint16_t *h, float *x, size_t count)
{
    (void)ctx;
    for (size_t i = 0; i < count; i++)
        x[i] = ops_ew_f16_to_f32(h[i]);
    return 0;
}
