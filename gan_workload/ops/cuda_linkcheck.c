/* cuda_linkcheck.c — built only with the CUDA backend, never run by the tests (there is no GPU on
 * the build machines): it references every op through an OPS_CUDA context so the link proves
 * that gan_ops_cuda resolves against cudart, cuBLAS and cuDNN. Run on a GPU machine with an
 * argument to make it actually call every op once on tiny device buffers (results not checked). */
#include "ops.h"

#include <cuda_runtime.h>
#include <stdio.h>

static int run_convs(ops_ctx *c, float *a, float *b, float *w, void *ws, size_t wsb)
{
    ops_conv_desc d = {2, 3, 8, 8, 4, 4, 4, 2, 1};
    int rc = 0;
    rc |= ops_conv2d_forward(c, &d, a, w, b, ws, wsb);
    rc |= ops_conv2d_backward_data(c, &d, b, w, a, ws, wsb);
    rc |= ops_conv2d_backward_filter(c, &d, a, b, w, ws, wsb);
    rc |= ops_conv_transpose2d_forward(c, &d, a, w, b, ws, wsb);
    rc |= ops_conv_transpose2d_backward_data(c, &d, b, w, a, ws, wsb);
    rc |= ops_conv_transpose2d_backward_filter(c, &d, a, b, w, ws, wsb);
    printf("conv workspace bytes: %zu %zu\n",
           ops_conv2d_workspace_bytes(c, &d, OPS_PASS_BACKWARD_FILTER),
           ops_conv_transpose2d_workspace_bytes(c, &d, OPS_PASS_FORWARD));
    return rc;
}

static int run_elementwise(ops_ctx *c, float *a, float *b, float *s)
{
    int rc = 0;
    rc |= ops_batchnorm2d_forward_train(c, a, b, 2, 3, 4, 4, s, s + 8, s + 16, s + 24, 0.1f, 1e-5f,
                                        s + 32, s + 40);
    rc |= ops_batchnorm2d_forward_eval(c, a, b, 2, 3, 4, 4, s, s + 8, s + 16, s + 24, 1e-5f);
    rc |= ops_batchnorm2d_backward(c, a, b, 2, 3, 4, 4, s, s + 32, s + 40, a, s + 48, s + 56);
    rc |= ops_relu_forward(c, a, b, 96) | ops_relu_backward(c, b, a, a, 96);
    rc |= ops_leaky_relu_forward(c, a, b, 96, 0.2f) | ops_leaky_relu_backward(c, b, a, a, 96, 0.2f);
    rc |= ops_tanh_forward(c, a, b, 96) | ops_tanh_backward(c, b, a, a, 96);
    rc |= ops_sigmoid_forward(c, a, b, 96) | ops_sigmoid_backward(c, b, a, a, 96);
    rc |= ops_bce_loss_forward(c, b, a, 96, s) | ops_bce_loss_backward(c, b, a, 96, 1.0f, a);
    rc |= ops_adam_step(c, a, b, s, s + 64, 64, 2e-4f, 0.5f, 0.999f, 1e-8f, 1);
    rc |= ops_fill(c, a, 96, 1.0f) | ops_zero(c, b, 96) | ops_copy(c, a, b, 96);
    rc |= ops_add(c, a, b, 96, 0.5f) | ops_scale(c, b, 96, 2.0f);
    rc |= ops_float_to_half(c, a, (uint16_t *)b, 96) | ops_half_to_float(c, (uint16_t *)b, a, 96);
    return rc;
}

int main(int argc, char **argv)
{
    (void)argv;
    char err[256];
    if (argc < 2) {
        printf("gan_ops_cuda_linkcheck: linked; pass an argument to run on a GPU\n");
        return 0;
    }
    ops_ctx *c = ops_ctx_create(OPS_CUDA, err, sizeof err);
    if (!c) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    float *a, *b, *w, *s;
    void *ws;
    size_t wsb = 64u << 20;
    if (cudaMalloc((void **)&a, 4096 * 4) || cudaMalloc((void **)&b, 4096 * 4) ||
        cudaMalloc((void **)&w, 4096 * 4) || cudaMalloc((void **)&s, 256 * 4) ||
        cudaMalloc(&ws, wsb))
        return 1;
    cudaMemset(a, 0, 4096 * 4);
    cudaMemset(b, 0, 4096 * 4);
    cudaMemset(w, 0, 4096 * 4);
    cudaMemset(s, 0, 256 * 4);
    int rc = run_convs(c, a, b, w, ws, wsb) | run_elementwise(c, a, b, s) | ops_ctx_synchronize(c);
    printf("%s %s\n", rc ? "FAILED" : "ok", ops_ctx_error(c));
    ops_ctx_destroy(c);
    return rc ? 1 : 0;
}
