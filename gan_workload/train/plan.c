/* plan.c — the DCGAN layer plan per image size and its parameter counts. */
#include "train.h"

static int log2_size(int image_size)
{
    if (image_size < 32 || image_size > 256 || (image_size & (image_size - 1)) != 0)
        return -1;
    int k = 0;
    while ((1 << k) < image_size)
        k++;
    return k;
}

static tr_layer_spec block(tr_conv_kind kind, int c_in, int c_out, int stride, int pad, int hw_in,
                           int hw_out, bool bn, tr_act act)
{
    tr_layer_spec s = {kind, c_in, c_out, 4, stride, pad, hw_in, hw_out, bn, act};
    return s;
}

int tr_plan_generator(tr_plan *p, int image_size, int nz, int ngf, int nc)
{
    int k = log2_size(image_size);
    if (k < 0 || nz <= 0 || ngf <= 0 || nc <= 0)
        return -1;
    int n = k - 1;
    int mult = 1 << (n - 2);
    p->n = n;
    p->l[0] = block(TR_CONVT, nz, ngf * mult, 1, 0, 1, 4, true, TR_ACT_RELU);
    int hw = 4;
    for (int i = 1; i < n - 1; i++, hw *= 2, mult /= 2)
        p->l[i] = block(TR_CONVT, ngf * mult, ngf * mult / 2, 2, 1, hw, hw * 2, true, TR_ACT_RELU);
    p->l[n - 1] = block(TR_CONVT, ngf, nc, 2, 1, hw, hw * 2, false, TR_ACT_TANH);
    return 0;
}

int tr_plan_discriminator(tr_plan *p, int image_size, int nc, int ndf)
{
    int k = log2_size(image_size);
    if (k < 0 || ndf <= 0 || nc <= 0)
        return -1;
    int n = k - 1;
    p->n = n;
    p->l[0] = block(TR_CONV, nc, ndf, 2, 1, image_size, image_size / 2, false, TR_ACT_LRELU);
    int hw = image_size / 2, mult = 1;
    for (int i = 1; i < n - 1; i++, hw /= 2, mult *= 2)
        p->l[i] = block(TR_CONV, ndf * mult, ndf * mult * 2, 2, 1, hw, hw / 2, true, TR_ACT_LRELU);
    p->l[n - 1] = block(TR_CONV, ndf * mult, 1, 1, 0, hw, 1, false, TR_ACT_SIGMOID);
    return 0;
}

size_t tr_layer_weight_count(const tr_layer_spec *s)
{
    return (size_t)s->c_in * (size_t)s->c_out * (size_t)s->k * (size_t)s->k;
}

long long tr_plan_param_count(const tr_plan *p)
{
    long long total = 0;
    for (int i = 0; i < p->n; i++) {
        total += (long long)tr_layer_weight_count(&p->l[i]);
        if (p->l[i].bn)
            total += 2LL * p->l[i].c_out;
    }
    return total;
}

static const char *act_name(tr_act a)
{
    switch (a) {
    case TR_ACT_RELU:
        return "ReLU";
    case TR_ACT_LRELU:
        return "LeakyReLU(0.2)";
    case TR_ACT_TANH:
        return "Tanh";
    case TR_ACT_SIGMOID:
        return "Sigmoid";
    }
    return "?";
}

void tr_plan_print(FILE *f, const char *name, const tr_plan *p)
{
    for (int i = 0; i < p->n; i++) {
        const tr_layer_spec *s = &p->l[i];
        fprintf(f, "  %s.%d %s(%d, %d, 4, %d, %d)%s %s  %dx%d -> %dx%d\n", name, i,
                s->kind == TR_CONVT ? "ConvTranspose2d" : "Conv2d", s->c_in, s->c_out, s->stride,
                s->pad, s->bn ? " BatchNorm2d" : "", act_name(s->act), s->hw_in, s->hw_in,
                s->hw_out, s->hw_out);
    }
}
