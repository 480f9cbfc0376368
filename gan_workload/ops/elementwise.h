/* elementwise.h — per-element arithmetic written once, used by the CPU loops (ops_cpu.c) and the
 * CUDA kernels (ops_cuda.cu), so the CPU tests check the arithmetic the GPU runs.
 * Internal to gan_workload/ops (tests include it too); the public interface is ops.h.
 * Formulas follow PyTorch (aten/src/ATen/native: Activation, Loss, Normalization;
 * torch.optim.Adam).
 */
#ifndef VRAMTRACE_GAN_OPS_ELEMENTWISE_H
#define VRAMTRACE_GAN_OPS_ELEMENTWISE_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#define OPS_HD __host__ __device__
#else
#define OPS_HD
#endif

/* ---- activations: forward f(x); gradient from the forward output y and upstream dy ---------- */

static inline OPS_HD float ops_ew_relu(float x)
{
    return x > 0.0f ? x : 0.0f;
}

static inline OPS_HD float ops_ew_relu_grad(float y, float dy)
{
    return y > 0.0f ? dy : 0.0f;
}

/* torch.nn.LeakyReLU(negative_slope); slope > 0 keeps sign(y) == sign(x). */
static inline OPS_HD float ops_ew_leaky_relu(float x, float slope)
{
    return x > 0.0f ? x : x * slope;
}

static inline OPS_HD float ops_ew_leaky_relu_grad(float y, float dy, float slope)
{
    return y > 0.0f ? dy : dy * slope;
}

static inline OPS_HD float ops_ew_tanh(float x)
{
    return tanhf(x);
}

static inline OPS_HD float ops_ew_tanh_grad(float y, float dy)
{
    return dy * (1.0f - y * y);
}

static inline OPS_HD float ops_ew_sigmoid(float x)
{
    return 1.0f / (1.0f + expf(-x));
}

static inline OPS_HD float ops_ew_sigmoid_grad(float y, float dy)
{
    return dy * (1.0f - y) * y;
}

/* ---- binary cross entropy (torch.nn.BCELoss; logs clamped at -100) --------------------------- */

/* One element's loss, before the mean: (t - 1) max(log(1-p), -100) - t max(log p, -100). */
static inline OPS_HD float ops_ew_bce(float p, float t)
{
    float log_p = fmaxf(logf(p), -100.0f);
    float log_1mp = fmaxf(log1pf(-p), -100.0f);
    return (t - 1.0f) * log_1mp - t * log_p;
}

/* d(mean loss)/dp times grad_scale, inv_count = 1/count:
 * grad_scale (p - t) / max((1 - p) p, 1e-12) * inv_count (binary_cross_entropy_backward). */
static inline OPS_HD float ops_ew_bce_grad(float p, float t, float grad_scale, float inv_count)
{
    return grad_scale * (p - t) / fmaxf((1.0f - p) * p, 1e-12f) * inv_count;
}

/* ---- batch norm ------------------------------------------------------------------------------ */

/* y = (x - mean) invstd gamma + beta */
static inline OPS_HD float ops_ew_bn_normalize(float x, float mean, float invstd, float gamma,
                                               float beta)
{
    return (x - mean) * invstd * gamma + beta;
}

/* Training-mode input gradient of one element, with per-channel reductions over m elements
 * mean_dy = sum(dy)/m and mean_dy_xhat = sum(dy * xhat)/m, xhat = (x - mean) invstd:
 * dx = gamma invstd (dy - mean_dy - xhat mean_dy_xhat) (PyTorch batch_norm_backward). */
static inline OPS_HD float ops_ew_bn_backward(float x, float dy, float mean, float invstd,
                                              float gamma, float mean_dy, float mean_dy_xhat)
{
    float xhat = (x - mean) * invstd;
    return gamma * invstd * (dy - mean_dy - xhat * mean_dy_xhat);
}

/* ---- Adam (torch.optim.Adam, single-tensor path, weight_decay 0) ----------------------------- */

/* One parameter. step_size = lr / (1 - beta1^step); bc2_sqrt = sqrt(1 - beta2^step), both
 * computed by the caller in double as Python does.
 * m.lerp_(g, 1-b1); v = v b2 + (1-b2) g g; p -= step_size m / (sqrt(v)/bc2_sqrt + eps). */
static inline OPS_HD void ops_ew_adam(float *p, float *m, float *v, float g, float beta1,
                                      float beta2, float eps, float step_size, float bc2_sqrt)
{
    float mm = *m + (1.0f - beta1) * (g - *m);
    float vv = *v * beta2 + (1.0f - beta2) * g * g;
    float denom = sqrtf(vv) / bc2_sqrt + eps;
    *m = mm;
    *v = vv;
    *p = *p - step_size * (mm / denom);
}

/* ---- IEEE binary16 <-> binary32, round to nearest even -------------------------------------- */

static inline OPS_HD uint32_t ops_ew_f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline OPS_HD float ops_ew_bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Round-to-nearest-even right shift of a positive integer mantissa. */
static inline OPS_HD uint32_t ops_ew_shift_rne(uint32_t m, uint32_t shift)
{
    uint32_t r = m >> shift;
    uint32_t rem = m & ((1u << shift) - 1u);
    uint32_t half = 1u << (shift - 1u);
    if (rem > half || (rem == half && (r & 1u)))
        r++;
    return r;
}

/* float -> binary16 bits. |f| >= 65520 gives inf; NaN stays a (quiet) NaN with its sign;
 * results below 2^-14 are subnormal; below or at 2^-25 round to zero (ties to even). */
static inline OPS_HD uint16_t ops_ew_f32_to_f16(float f)
{
    uint32_t x = ops_ew_f32_bits(f);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u) /* NaN: keep the top payload bits, force quiet */
        return (uint16_t)(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));
    if (ax >= 0x477ff000u) /* 65520 and above (inf included) */
        return (uint16_t)(sign | 0x7c00u);
    if (ax >= 0x38800000u) /* normal: rebias exponent 127 -> 15 (112 << 23) */
        return (uint16_t)(sign | ops_ew_shift_rne(ax - 0x38000000u, 13));
    if (ax <= 0x33000000u) /* <= 2^-25: zero (2^-25 is a tie, rounds to even 0) */
        return (uint16_t)sign;
    /* subnormal: value / 2^-24 = mant * 2^(e - 126) with e = biased exponent */
    uint32_t e = ax >> 23;
    uint32_t mant = (ax & 0x7fffffu) | 0x800000u;
    return (uint16_t)(sign | ops_ew_shift_rne(mant, 126u - e));
}

/* binary16 bits -> float (exact). */
static inline OPS_HD float ops_ew_f16_to_f32(uint16_t h)
{
    uint32_t sign = ((uint32_t)h & 0x8000u) << 16;
    uint32_t e = ((uint32_t)h >> 10) & 0x1fu;
    uint32_t m = (uint32_t)h & 0x3ffu;
    if (e == 0) {
        float f = (float)m * 5.9604644775390625e-8f; /* m * 2^-24, exact */
        return sign ? -f : f;
    }
    if (e == 31)
        return ops_ew_bits_f32(sign | 0x7f800000u | (m << 13));
    return ops_ew_bits_f32(sign | ((e + 112u) << 23) | (m << 13));
}

#endif /* VRAMTRACE_GAN_OPS_ELEMENTWISE_H */
