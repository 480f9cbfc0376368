/* ops_cuda.cu — the CUDA backend: element-wise kernels over the shared OPS_HD functions
 * (elementwise.h), one-block-per-channel batch norm kernels, cuDNN convolutions (the transposed
 * convolution is cuDNN's backward-data and vice versa), cuBLAS for axpy/scal. Every call is
 * asynchronous on the context's stream; workspaces come from the caller. */
#include "ops_internal.h"
#include "elementwise.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <limits.h>
#include <stdlib.h>

struct ops_cuda_state {
    cudnnHandle_t dnn;
    cublasHandle_t blas;
    cudaStream_t stream;
};

enum { OPS_THREADS = 256, OPS_MAX_BLOCKS = 4096, OPS_BN_THREADS = 512 };

/* ---- errors, launch geometry ---------------------------------------------------------------- */

static int cu_check(ops_ctx *ctx, cudaError_t e, const char *what)
{
    return e == cudaSuccess ? 0 : ops_fail(ctx, "%s: %s", what, cudaGetErrorString(e));
}

static int dnn_check(ops_ctx *ctx, cudnnStatus_t s, const char *what)
{
    return s == CUDNN_STATUS_SUCCESS ? 0 : ops_fail(ctx, "%s: %s", what, cudnnGetErrorString(s));
}

static int blas_check(ops_ctx *ctx, cublasStatus_t s, const char *what)
{
    return s == CUBLAS_STATUS_SUCCESS ? 0 : ops_fail(ctx, "%s: %s", what, cublasGetStatusString(s));
}

static unsigned blocks_for(size_t count)
{
    size_t b = (count + OPS_THREADS - 1) / OPS_THREADS, cap = OPS_MAX_BLOCKS;
    return (unsigned)(b < cap ? (b ? b : 1) : cap);
}

static int launched(ops_ctx *ctx, const char *what)
{
    return cu_check(ctx, cudaGetLastError(), what);
}

#define GRID_STRIDE(i, n)                                                                          \
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n);                        \
         i += (size_t)blockDim.x * gridDim.x)

/* ---- state ---------------------------------------------------------------------------------- */

struct ops_cuda_state *opscu_state_create(char *err, size_t err_size)
{
    struct ops_cuda_state *s = (struct ops_cuda_state *)calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, err_size, "ops: out of host memory");
        return NULL;
    }
    cudnnStatus_t ds = cudnnCreate(&s->dnn);
    if (ds != CUDNN_STATUS_SUCCESS) {
        snprintf(err, err_size, "ops: cudnnCreate: %s", cudnnGetErrorString(ds));
        free(s);
        return NULL;
    }
    cublasStatus_t bs = cublasCreate(&s->blas);
    if (bs != CUBLAS_STATUS_SUCCESS) {
        snprintf(err, err_size, "ops: cublasCreate: %s", cublasGetStatusString(bs));
        cudnnDestroy(s->dnn);
        free(s);
        return NULL;
    }
    return s;
}

void opscu_state_destroy(struct ops_cuda_state *s)
{
    cublasDestroy(s->blas);
    cudnnDestroy(s->dnn);
    free(s);
}

int opscu_set_stream(ops_ctx *ctx, void *stream)
{
    struct ops_cuda_state *s = ctx->cuda;
    s->stream = (cudaStream_t)stream;
    if (dnn_check(ctx, cudnnSetStream(s->dnn, s->stream), "cudnnSetStream"))
        return -1;
    return blas_check(ctx, cublasSetStream(s->blas, s->stream), "cublasSetStream");
}

int opscu_synchronize(ops_ctx *ctx)
{
    return cu_check(ctx, cudaStreamSynchronize(ctx->cuda->stream), "cudaStreamSynchronize");
}

static cudaStream_t stream_of(ops_ctx *ctx)
{
    return ctx->cuda->stream;
}

/* ---- cuDNN convolution descriptors ---------------------------------------------------------- */

/* The cuDNN view of one convolution: x (input), y (output), w (K=out, C=in, kH, kW). */
typedef struct {
    cudnnTensorDescriptor_t x, y;
    cudnnFilterDescriptor_t w;
    cudnnConvolutionDescriptor_t conv;
} conv_view;

static void view_destroy(conv_view *v)
{
    if (v->x)
        cudnnDestroyTensorDescriptor(v->x);
    if (v->y)
        cudnnDestroyTensorDescriptor(v->y);
    if (v->w)
        cudnnDestroyFilterDescriptor(v->w);
    if (v->conv)
        cudnnDestroyConvolutionDescriptor(v->conv);
}

static cudnnStatus_t view_alloc(conv_view *v)
{
    cudnnStatus_t s = cudnnCreateTensorDescriptor(&v->x);
    if (s == CUDNN_STATUS_SUCCESS)
        s = cudnnCreateTensorDescriptor(&v->y);
    if (s == CUDNN_STATUS_SUCCESS)
        s = cudnnCreateFilterDescriptor(&v->w);
    if (s == CUDNN_STATUS_SUCCESS)
        s = cudnnCreateConvolutionDescriptor(&v->conv);
    return s;
}

/* conv2d (transposed = 0): x = d's input, y = its output, w = (c_out, c_in, kH, kW).
 * conv_transpose2d (transposed = 1): the adjoint conv whose x is the transposed conv's output
 * (n, c_out, H_out, W_out), y its input (n, c_in, h_in, w_in), w = (c_in, c_out, kH, kW). */
static int view_create(ops_ctx *ctx, const ops_conv_desc *d, int transposed, conv_view *v)
{
    memset(v, 0, sizeof *v);
    int oh = ops_out_h(d, transposed), ow = ops_out_w(d, transposed);
    int xc = transposed ? d->c_out : d->c_in, yc = transposed ? d->c_in : d->c_out;
    int xh = transposed ? oh : d->h_in, xw = transposed ? ow : d->w_in;
    int yh = transposed ? d->h_in : oh, yw = transposed ? d->w_in : ow;
    cudnnStatus_t s = view_alloc(v);
    if (s == CUDNN_STATUS_SUCCESS)
        s = cudnnSetTensor4dDescriptor(v->x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, d->n, xc, xh, xw);
    if (s == CUDNN_STATUS_SUCCESS)
        s = cudnnSetTensor4dDescriptor(v->y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, d->n, yc, yh, yw);
    if (s == CUDNN_STATUS_SUCCESS)
        s = cudnnSetFilter4dDescriptor(v->w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, yc, xc, d->k_h,
                                       d->k_w);
    if (s == CUDNN_STATUS_SUCCESS)
        s = cudnnSetConvolution2dDescriptor(v->conv, d->pad, d->pad, d->stride, d->stride, 1, 1,
                                            CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT);
    if (s != CUDNN_STATUS_SUCCESS) {
        view_destroy(v);
        return dnn_check(ctx, s, "cudnn convolution descriptors");
    }
    return 0;
}

/* Algorithm choice: the first successful entry of cuDNN's heuristic list (_v7), so the
 * workspace query and the call agree for a given shape. */
static int pick_fwd(ops_ctx *ctx, const conv_view *v, cudnnConvolutionFwdAlgo_t *algo, size_t *ws)
{
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int got = 0;
    cudnnStatus_t s = cudnnGetConvolutionForwardAlgorithm_v7(
        ctx->cuda->dnn, v->x, v->w, v->conv, v->y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &got, perf);
    if (dnn_check(ctx, s, "cudnnGetConvolutionForwardAlgorithm_v7"))
        return -1;
    for (int i = 0; i < got; i++)
        if (perf[i].status == CUDNN_STATUS_SUCCESS) {
            *algo = perf[i].algo;
            s = cudnnGetConvolutionForwardWorkspaceSize(ctx->cuda->dnn, v->x, v->w, v->conv, v->y,
                                                        *algo, ws);
            return dnn_check(ctx, s, "cudnnGetConvolutionForwardWorkspaceSize");
        }
    return ops_fail(ctx, "cudnn: no forward convolution algorithm");
}

static int pick_bwd_data(ops_ctx *ctx, const conv_view *v, cudnnConvolutionBwdDataAlgo_t *algo,
                         size_t *ws)
{
    cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    int got = 0;
    cudnnStatus_t s = cudnnGetConvolutionBackwardDataAlgorithm_v7(
        ctx->cuda->dnn, v->w, v->y, v->conv, v->x, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &got,
        perf);
    if (dnn_check(ctx, s, "cudnnGetConvolutionBackwardDataAlgorithm_v7"))
        return -1;
    for (int i = 0; i < got; i++)
        if (perf[i].status == CUDNN_STATUS_SUCCESS) {
            *algo = perf[i].algo;
            s = cudnnGetConvolutionBackwardDataWorkspaceSize(ctx->cuda->dnn, v->w, v->y, v->conv,
                                                             v->x, *algo, ws);
            return dnn_check(ctx, s, "cudnnGetConvolutionBackwardDataWorkspaceSize");
        }
    return ops_fail(ctx, "cudnn: no backward-data convolution algorithm");
}

static int pick_bwd_filter(ops_ctx *ctx, const conv_view *v, cudnnConvolutionBwdFilterAlgo_t *algo,
                           size_t *ws)
{
    cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    int got = 0;
    cudnnStatus_t s = cudnnGetConvolutionBackwardFilterAlgorithm_v7(
        ctx->cuda->dnn, v->x, v->y, v->conv, v->w, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &got,
        perf);
    if (dnn_check(ctx, s, "cudnnGetConvolutionBackwardFilterAlgorithm_v7"))
        return -1;
    for (int i = 0; i < got; i++)
        if (perf[i].status == CUDNN_STATUS_SUCCESS) {
            *algo = perf[i].algo;
            s = cudnnGetConvolutionBackwardFilterWorkspaceSize(ctx->cuda->dnn, v->x, v->y, v->conv,
                                                               v->w, *algo, ws);
            return dnn_check(ctx, s, "cudnnGetConvolutionBackwardFilterWorkspaceSize");
        }
    return ops_fail(ctx, "cudnn: no backward-filter convolution algorithm");
}

/* The cuDNN primitive a pass of a (transposed) convolution maps to. */
typedef enum { PRIM_FWD, PRIM_BWD_DATA, PRIM_BWD_FILTER } conv_prim;

static conv_prim prim_of(int transposed, ops_conv_pass pass)
{
    if (pass == OPS_PASS_BACKWARD_FILTER)
        return PRIM_BWD_FILTER;
    if (pass == OPS_PASS_FORWARD)
        return transposed ? PRIM_BWD_DATA : PRIM_FWD;
    return transposed ? PRIM_FWD : PRIM_BWD_DATA;
}

static size_t workspace_bytes(ops_ctx *ctx, const ops_conv_desc *d, int transposed,
                              ops_conv_pass pass)
{
    conv_view v;
    size_t ws = 0;
    if (view_create(ctx, d, transposed, &v))
        return 0;
    cudnnConvolutionFwdAlgo_t fa;
    cudnnConvolutionBwdDataAlgo_t da;
    cudnnConvolutionBwdFilterAlgo_t wa;
    switch (prim_of(transposed, pass)) {
    case PRIM_FWD:
        pick_fwd(ctx, &v, &fa, &ws);
        break;
    case PRIM_BWD_DATA:
        pick_bwd_data(ctx, &v, &da, &ws);
        break;
    default:
        pick_bwd_filter(ctx, &v, &wa, &ws);
        break;
    }
    view_destroy(&v);
    return ws;
}

size_t opscu_conv2d_workspace_bytes(ops_ctx *ctx, const ops_conv_desc *d, ops_conv_pass pass)
{
    return workspace_bytes(ctx, d, 0, pass);
}

size_t opscu_conv_transpose2d_workspace_bytes(ops_ctx *ctx, const ops_conv_desc *d,
                                              ops_conv_pass pass)
{
    return workspace_bytes(ctx, d, 1, pass);
}

/* y_view = conv(x_view, w) */
static int run_fwd(ops_ctx *ctx, const ops_conv_desc *d, int transposed, const float *x,
                   const float *w, float *y, void *ws, size_t ws_bytes, const char *what)
{
    conv_view v;
    cudnnConvolutionFwdAlgo_t algo;
    size_t need = 0;
    const float one = 1.0f, zero = 0.0f;
    if (view_create(ctx, d, transposed, &v))
        return -1;
    int rc = pick_fwd(ctx, &v, &algo, &need);
    if (!rc)
        rc = ops_check_workspace(ctx, need, ws, ws_bytes, what);
    if (!rc)
        rc = dnn_check(ctx,
                       cudnnConvolutionForward(ctx->cuda->dnn, &one, v.x, x, v.w, w, v.conv, algo,
                                               ws, ws_bytes, &zero, v.y, y),
                       "cudnnConvolutionForward");
    view_destroy(&v);
    return rc;
}

/* dx_view = conv^T(dy_view, w) */
static int run_bwd_data(ops_ctx *ctx, const ops_conv_desc *d, int transposed, const float *dy,
                        const float *w, float *dx, void *ws, size_t ws_bytes, const char *what)
{
    conv_view v;
    cudnnConvolutionBwdDataAlgo_t algo;
    size_t need = 0;
    const float one = 1.0f, zero = 0.0f;
    if (view_create(ctx, d, transposed, &v))
        return -1;
    int rc = pick_bwd_data(ctx, &v, &algo, &need);
    if (!rc)
        rc = ops_check_workspace(ctx, need, ws, ws_bytes, what);
    if (!rc)
        rc = dnn_check(ctx,
                       cudnnConvolutionBackwardData(ctx->cuda->dnn, &one, v.w, w, v.y, dy, v.conv,
                                                    algo, ws, ws_bytes, &zero, v.x, dx),
                       "cudnnConvolutionBackwardData");
    view_destroy(&v);
    return rc;
}

/* dw += grad of conv(x_view, w) wrt w given dy_view */
static int run_bwd_filter(ops_ctx *ctx, const ops_conv_desc *d, int transposed, const float *x,
                          const float *dy, float *dw, void *ws, size_t ws_bytes, const char *what)
{
    conv_view v;
    cudnnConvolutionBwdFilterAlgo_t algo;
    size_t need = 0;
    const float one = 1.0f;
    if (view_create(ctx, d, transposed, &v))
        return -1;
    int rc = pick_bwd_filter(ctx, &v, &algo, &need);
    if (!rc)
        rc = ops_check_workspace(ctx, need, ws, ws_bytes, what);
    if (!rc)
        rc = dnn_check(ctx,
                       cudnnConvolutionBackwardFilter(ctx->cuda->dnn, &one, v.x, x, v.y, dy, v.conv,
                                                      algo, ws, ws_bytes, &one, v.w, dw),
                       "cudnnConvolutionBackwardFilter");
    view_destroy(&v);
    return rc;
}

int opscu_conv2d_forward(ops_ctx *ctx, const ops_conv_desc *d, const float *x, const float *w,
                         float *y, void *ws, size_t ws_bytes)
{
    return run_fwd(ctx, d, 0, x, w, y, ws, ws_bytes, "conv2d_forward");
}

int opscu_conv2d_backward_data(ops_ctx *ctx, const ops_conv_desc *d, const float *dy,
                               const float *w, float *dx, void *ws, size_t ws_bytes)
{
    return run_bwd_data(ctx, d, 0, dy, w, dx, ws, ws_bytes, "conv2d_backward_data");
}

int opscu_conv2d_backward_filter(ops_ctx *ctx, const ops_conv_desc *d, const float *x,
                                 const float *dy, float *dw, void *ws, size_t ws_bytes)
{
    return run_bwd_filter(ctx, d, 0, x, dy, dw, ws, ws_bytes, "conv2d_backward_filter");
}

/* Transposed conv forward: its input x is the adjoint conv's "dy", its output the adjoint's "dx".
 */
int opscu_conv_transpose2d_forward(ops_ctx *ctx, const ops_conv_desc *d, const float *x,
                                   const float *w, float *y, void *ws, size_t ws_bytes)
{
    return run_bwd_data(ctx, d, 1, x, w, y, ws, ws_bytes, "conv_transpose2d_forward");
}

int opscu_conv_transpose2d_backward_data(ops_ctx *ctx, const ops_conv_desc *d, const float *dy,
                                         const float *w, float *dx, void *ws, size_t ws_bytes)
{
    return run_fwd(ctx, d, 1, dy, w, dx, ws, ws_bytes, "conv_transpose2d_backward_data");
}

int opscu_conv_transpose2d_backward_filter(ops_ctx *ctx, const ops_conv_desc *d, const float *x,
                                           const float *dy, float *dw, void *ws, size_t ws_bytes)
{
    /* adjoint conv: its input is our dy (output-shaped), its output gradient our x */
    return run_bwd_filter(ctx, d, 1, dy, x, dw, ws, ws_bytes, "conv_transpose2d_backward_filter");
}

/* ---- batch norm: one block per channel ------------------------------------------------------ */

/* Block-wide sum of v (blockDim.x == OPS_BN_THREADS); every thread gets the result. */
static __device__ float block_sum(float v, float *sh)
{
    sh[threadIdx.x] = v;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s)
            sh[threadIdx.x] += sh[threadIdx.x + s];
        __syncthreads();
    }
    float r = sh[0];
    __syncthreads();
    return r;
}

/* Element j (0 <= j < n*plane) of channel ch. */
static __device__ size_t bn_index(size_t j, size_t plane, int c, int ch)
{
    return ((j / plane) * (size_t)c + (size_t)ch) * plane + j % plane;
}

static __global__ void k_bn_forward_train(const float *x, float *y, int n, int c, size_t plane,
                                          const float *gamma, const float *beta, float *rmean,
                                          float *rvar, float momentum, float eps, float *smean,
                                          float *sinvstd)
{
    __shared__ float sh[OPS_BN_THREADS];
    int ch = blockIdx.x;
    size_t m = (size_t)n * plane;
    float s = 0.0f;
    for (size_t j = threadIdx.x; j < m; j += blockDim.x)
        s += x[bn_index(j, plane, c, ch)];
    float mean = block_sum(s, sh) / (float)m;
    float q = 0.0f;
    for (size_t j = threadIdx.x; j < m; j += blockDim.x) {
        float dv = x[bn_index(j, plane, c, ch)] - mean;
        q += dv * dv;
    }
    float var = block_sum(q, sh) / (float)m;
    float invstd = rsqrtf(var + eps);
    if (threadIdx.x == 0) {
        smean[ch] = mean;
        sinvstd[ch] = invstd;
        if (rmean) {
            rmean[ch] = (1.0f - momentum) * rmean[ch] + momentum * mean;
            rvar[ch] = (1.0f - momentum) * rvar[ch] + momentum * var * (float)m / (float)(m - 1);
        }
    }
    for (size_t j = threadIdx.x; j < m; j += blockDim.x) {
        size_t i = bn_index(j, plane, c, ch);
        y[i] = ops_ew_bn_normalize(x[i], mean, invstd, gamma[ch], beta[ch]);
    }
}

static __global__ void k_bn_forward_eval(const float *x, float *y, int c, size_t plane,
                                         size_t total, const float *gamma, const float *beta,
                                         const float *rmean, const float *rvar, float eps)
{
    GRID_STRIDE(i, total)
    {
        int ch = (int)((i / plane) % (size_t)c);
        y[i] = ops_ew_bn_normalize(x[i], rmean[ch], rsqrtf(rvar[ch] + eps), gamma[ch], beta[ch]);
    }
}

static __global__ void k_bn_backward(const float *x, const float *dy, int n, int c, size_t plane,
                                     const float *gamma, const float *smean, const float *sinvstd,
                                     float *dx, float *dgamma, float *dbeta)
{
    __shared__ float sh[OPS_BN_THREADS];
    int ch = blockIdx.x;
    size_t m = (size_t)n * plane;
    float mean = smean[ch], invstd = sinvstd[ch];
    float sdy = 0.0f, sdyx = 0.0f;
    for (size_t j = threadIdx.x; j < m; j += blockDim.x) {
        size_t i = bn_index(j, plane, c, ch);
        sdy += dy[i];
        sdyx += dy[i] * (x[i] - mean) * invstd;
    }
    sdy = block_sum(sdy, sh);
    sdyx = block_sum(sdyx, sh);
    if (threadIdx.x == 0) {
        dgamma[ch] += sdyx;
        dbeta[ch] += sdy;
    }
    float mdy = sdy / (float)m, mdyx = sdyx / (float)m;
    for (size_t j = threadIdx.x; j < m; j += blockDim.x) {
        size_t i = bn_index(j, plane, c, ch);
        dx[i] = ops_ew_bn_backward(x[i], dy[i], mean, invstd, gamma[ch], mdy, mdyx);
    }
}

int opscu_batchnorm2d_forward_train(ops_ctx *ctx, const float *x, float *y, int n, int c, int h,
                                    int w, const float *gamma, const float *beta, float *rmean,
                                    float *rvar, float momentum, float eps, float *smean,
                                    float *sinvstd)
{
    size_t plane = (size_t)h * w;
    if ((size_t)n * plane < 2)
        return ops_fail(ctx, "batchnorm2d: expected more than 1 value per channel when training");
    k_bn_forward_train<<<c, OPS_BN_THREADS, 0, stream_of(ctx)>>>(
        x, y, n, c, plane, gamma, beta, rmean, rvar, momentum, eps, smean, sinvstd);
    return launched(ctx, "batchnorm2d_forward_train");
}

int opscu_batchnorm2d_forward_eval(ops_ctx *ctx, const float *x, float *y, int n, int c, int h,
                                   int w, const float *gamma, const float *beta, const float *rmean,
                                   const float *rvar, float eps)
{
    size_t plane = (size_t)h * w, total = (size_t)n * c * plane;
    k_bn_forward_eval<<<blocks_for(total), OPS_THREADS, 0, stream_of(ctx)>>>(
        x, y, c, plane, total, gamma, beta, rmean, rvar, eps);
    return launched(ctx, "batchnorm2d_forward_eval");
}

int opscu_batchnorm2d_backward(ops_ctx *ctx, const float *x, const float *dy, int n, int c, int h,
                               int w, const float *gamma, const float *smean, const float *sinvstd,
                               float *dx, float *dgamma, float *dbeta)
{
    k_bn_backward<<<c, OPS_BN_THREADS, 0, stream_of(ctx)>>>(x, dy, n, c, (size_t)h * w, gamma,
                                                            smean, sinvstd, dx, dgamma, dbeta);
    return launched(ctx, "batchnorm2d_backward");
}

/* ---- activations ---------------------------------------------------------------------------- */

static __device__ float act_fwd1(int kind, float x, float slope)
{
    switch (kind) {
    case OPS_ACT_RELU:
        return ops_ew_relu(x);
    case OPS_ACT_LEAKY_RELU:
        return ops_ew_leaky_relu(x, slope);
    case OPS_ACT_TANH:
        return ops_ew_tanh(x);
    default:
        return ops_ew_sigmoid(x);
    }
}

static __device__ float act_bwd1(int kind, float y, float dy, float slope)
{
    switch (kind) {
    case OPS_ACT_RELU:
        return ops_ew_relu_grad(y, dy);
    case OPS_ACT_LEAKY_RELU:
        return ops_ew_leaky_relu_grad(y, dy, slope);
    case OPS_ACT_TANH:
        return ops_ew_tanh_grad(y, dy);
    default:
        return ops_ew_sigmoid_grad(y, dy);
    }
}

static __global__ void k_act_fwd(int kind, const float *x, float *y, size_t n, float slope)
{
    GRID_STRIDE(i, n) y[i] = act_fwd1(kind, x[i], slope);
}

static __global__ void k_act_bwd(int kind, const float *y, const float *dy, float *dx, size_t n,
                                 float slope)
{
    GRID_STRIDE(i, n) dx[i] = act_bwd1(kind, y[i], dy[i], slope);
}

int opscu_activation_forward(ops_ctx *ctx, int kind, const float *x, float *y, size_t count,
                             float slope)
{
    k_act_fwd<<<blocks_for(count), OPS_THREADS, 0, stream_of(ctx)>>>(kind, x, y, count, slope);
    return launched(ctx, "activation_forward");
}

int opscu_activation_backward(ops_ctx *ctx, int kind, const float *y, const float *dy, float *dx,
                              size_t count, float slope)
{
    k_act_bwd<<<blocks_for(count), OPS_THREADS, 0, stream_of(ctx)>>>(kind, y, dy, dx, count, slope);
    return launched(ctx, "activation_backward");
}

/* ---- loss, optimizer ------------------------------------------------------------------------ */

/* One block: loss = mean of the per-element BCE terms. */
static __global__ void k_bce(const float *p, const float *t, size_t n, float *loss)
{
    __shared__ float sh[OPS_BN_THREADS];
    float s = 0.0f;
    for (size_t i = threadIdx.x; i < n; i += blockDim.x)
        s += ops_ew_bce(p[i], t[i]);
    s = block_sum(s, sh);
    if (threadIdx.x == 0)
        *loss = s / (float)n;
}

static __global__ void k_bce_grad(const float *p, const float *t, size_t n, float scale, float inv,
                                  float *dp)
{
    GRID_STRIDE(i, n) dp[i] = ops_ew_bce_grad(p[i], t[i], scale, inv);
}

int opscu_bce_loss_forward(ops_ctx *ctx, const float *p, const float *t, size_t count, float *loss)
{
    k_bce<<<1, OPS_BN_THREADS, 0, stream_of(ctx)>>>(p, t, count, loss);
    return launched(ctx, "bce_loss_forward");
}

int opscu_bce_loss_backward(ops_ctx *ctx, const float *p, const float *t, size_t count,
                            float grad_scale, float *dp)
{
    k_bce_grad<<<blocks_for(count), OPS_THREADS, 0, stream_of(ctx)>>>(p, t, count, grad_scale,
                                                                      1.0f / (float)count, dp);
    return launched(ctx, "bce_loss_backward");
}

static __global__ void k_adam(float *p, const float *g, float *m, float *v, size_t n, float b1,
                              float b2, float eps, float step_size, float bc2_sqrt)
{
    GRID_STRIDE(i, n) ops_ew_adam(&p[i], &m[i], &v[i], g[i], b1, b2, eps, step_size, bc2_sqrt);
}

int opscu_adam_step(ops_ctx *ctx, float *param, const float *grad, float *m, float *v, size_t count,
                    float beta1, float beta2, float eps, float step_size, float bc2_sqrt)
{
    k_adam<<<blocks_for(count), OPS_THREADS, 0, stream_of(ctx)>>>(param, grad, m, v, count, beta1,
                                                                  beta2, eps, step_size, bc2_sqrt);
    return launched(ctx, "adam_step");
}

/* ---- utilities ------------------------------------------------------------------------------ */

static __global__ void k_fill(float *x, size_t n, float value)
{
    GRID_STRIDE(i, n) x[i] = value;
}

static __global__ void k_f2h(const float *x, uint16_t *h, size_t n)
{
    GRID_STRIDE(i, n) h[i] = ops_ew_f32_to_f16(x[i]);
}

static __global__ void k_h2f(const uint16_t *h, float *x, size_t n)
{
    GRID_STRIDE(i, n) x[i] = ops_ew_f16_to_f32(h[i]);
}

int opscu_fill(ops_ctx *ctx, float *x, size_t count, float value)
{
    k_fill<<<blocks_for(count), OPS_THREADS, 0, stream_of(ctx)>>>(x, count, value);
    return launched(ctx, "fill");
}

int opscu_copy(ops_ctx *ctx, const float *src, float *y, size_t count)
{
    return cu_check(
        ctx,
        cudaMemcpyAsync(y, src, count * sizeof(float), cudaMemcpyDeviceToDevice, stream_of(ctx)),
        "copy");
}

/* cuBLAS takes int counts: chunks of at most INT_MAX elements. */
int opscu_add(ops_ctx *ctx, const float *x, float *y, size_t count, float alpha)
{
    for (size_t off = 0; off < count; off += INT_MAX) {
        int len = (int)(count - off < (size_t)INT_MAX ? count - off : (size_t)INT_MAX);
        if (blas_check(ctx, cublasSaxpy(ctx->cuda->blas, len, &alpha, x + off, 1, y + off, 1),
                       "cublasSaxpy"))
            return -1;
    }
    return 0;
}

int opscu_scale(ops_ctx *ctx, float *x, size_t count, float alpha)
{
    for (size_t off = 0; off < count; off += INT_MAX) {
        int len = (int)(count - off < (size_t)INT_MAX ? count - off : (size_t)INT_MAX);
        if (blas_check(ctx, cublasSscal(ctx->cuda->blas, len, &alpha, x + off, 1), "cublasSscal"))
            return -1;
    }
    return 0;
}

int opscu_float_to_half(ops_ctx *ctx, const float *x, uint16_t *h, size_t count)
{
    k_f2h<<<blocks_for(count), OPS_THREADS, 0, stream_of(ctx)>>>(x, h, count);
    return launched(ctx, "float_to_half");
}

int opscu_half_to_float(ops_ctx *ctx, const uint16_t *h, float *x, size_t count)
{
    k_h2f<<<blocks_for(count), OPS_THREADS, 0, stream_of(ctx)>>>(h, x, count);
    return launched(ctx, "half_to_float");
}
