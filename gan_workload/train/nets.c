/* nets.c — forward and backward of the DCGAN blocks on gan_ops, with PyTorch's lifetimes:
 * what autograd saves stays alive until the backward node that uses it has run. */
#include "train.h"

#include <nvtx3/nvToolsExt.h>
#include <stdlib.h>
#include <string.h>

static const char *const tag_names[TR_TAG_COUNT] = {
    "weight",      "gamma",         "beta",        "running_mean", "running_var", "weight.grad",
    "gamma.grad",  "beta.grad",     "exp_avg",     "exp_avg_sq",   "conv_out",    "bn_out",
    "act_out",     "save_mean",     "save_invstd", "packed16",     "unpacked32",  "ws_fwd",
    "ws_bwd_data", "ws_bwd_filter", "grad_act",    "grad_bn",      "grad_in",
};

static const char *tag(tr_layer *L, int which)
{
    return L->tag[which];
}

static ops_conv_desc conv_desc(const tr_layer_spec *s, int batch)
{
    ops_conv_desc d = {batch, s->c_in, s->hw_in, s->hw_in, s->c_out, s->k, s->k, s->stride, s->pad};
    return d;
}

static const int ws_tag[] = {
    [OPS_PASS_FORWARD] = TR_TAG_WS_FWD,
    [OPS_PASS_BACKWARD_DATA] = TR_TAG_WS_BWD_DATA,
    [OPS_PASS_BACKWARD_FILTER] = TR_TAG_WS_BWD_FILTER,
};

/* One pass of L's convolution over `batch` samples, with its workspace allocated for the call
 * and freed after it. Operands in the order the ops call takes them: forward (x, w, y),
 * backward data (dy, w, dx), backward filter (x, dy, dw). */
static void conv_pass(tr_runtime *rt, tr_layer *L, int batch, ops_conv_pass pass, const float *a,
                      const float *b, float *out)
{
    ops_conv_desc d = conv_desc(&L->s, batch);
    bool tr = L->s.kind == TR_CONVT;
    size_t bytes = tr ? ops_conv_transpose2d_workspace_bytes(rt->ops, &d, pass)
                      : ops_conv2d_workspace_bytes(rt->ops, &d, pass);
    tr_tensor *ws = tr_scratch(rt, bytes, tag(L, ws_tag[pass]));
    void *wp = ws ? ws->p : NULL;
    size_t wb = ws ? ws->bytes : 0;
    switch (pass) {
    case OPS_PASS_FORWARD:
        if (tr)
            TR_OP(rt, ops_conv_transpose2d_forward(rt->ops, &d, a, b, out, wp, wb));
        else
            TR_OP(rt, ops_conv2d_forward(rt->ops, &d, a, b, out, wp, wb));
        break;
    case OPS_PASS_BACKWARD_DATA:
        if (tr)
            TR_OP(rt, ops_conv_transpose2d_backward_data(rt->ops, &d, a, b, out, wp, wb));
        else
            TR_OP(rt, ops_conv2d_backward_data(rt->ops, &d, a, b, out, wp, wb));
        break;
    case OPS_PASS_BACKWARD_FILTER:
        if (tr)
            TR_OP(rt, ops_conv_transpose2d_backward_filter(rt->ops, &d, a, b, out, wp, wb));
        else
            TR_OP(rt, ops_conv2d_backward_filter(rt->ops, &d, a, b, out, wp, wb));
        break;
    }
    tr_unref(rt, &ws);
}

static tr_tensor *new_param(tr_runtime *rt, size_t count, const char *t)
{
    return tr_new(rt, 1, (int)count, 1, 1, TR_F32, t);
}

/* Fills a new parameter on the host (mean, std) and copies it to the device. */
static tr_tensor *init_param(tr_runtime *rt, size_t count, double mean, double std, tr_rng *rng,
                             const char *t)
{
    tr_tensor *p = new_param(rt, count, t);
    if (rt->memory_only)
        return p;
    float *h = malloc(count * sizeof *h);
    if (!h) {
        fprintf(stderr, "train: out of host memory\n");
        exit(1);
    }
    for (size_t i = 0; i < count; i++)
        h[i] = (float)(std > 0 ? mean + std * tr_rng_normal(rng) : mean);
    tr_h2d(rt, p->p, h, count * sizeof *h);
    free(h);
    return p;
}

static void init_layer(tr_runtime *rt, tr_layer *L, const char *name, int index, tr_rng *rng)
{
    for (int k = 0; k < TR_TAG_COUNT; k++)
        snprintf(L->tag[k], sizeof L->tag[k], "%s.%d.%s", name, index, tag_names[k]);
    L->param[0] = init_param(rt, tr_layer_weight_count(&L->s), 0.0, 0.02, rng, tag(L, TR_TAG_W));
    if (!L->s.bn)
        return;
    L->param[1] = init_param(rt, (size_t)L->s.c_out, 1.0, 0.02, rng, tag(L, TR_TAG_GAMMA));
    L->param[2] = init_param(rt, (size_t)L->s.c_out, 0.0, 0.0, rng, tag(L, TR_TAG_BETA));
    L->running_mean = init_param(rt, (size_t)L->s.c_out, 0.0, 0.0, rng, tag(L, TR_TAG_RMEAN));
    L->running_var = init_param(rt, (size_t)L->s.c_out, 1.0, 0.0, rng, tag(L, TR_TAG_RVAR));
}

void tr_net_init(tr_runtime *rt, tr_net *net, const char *name, const tr_plan *p, tr_rng *rng)
{
    memset(net, 0, sizeof *net);
    snprintf(net->name, sizeof net->name, "%s", name);
    net->n = p->n;
    for (int i = 0; i < p->n; i++) {
        net->l[i].s = p->l[i];
        init_layer(rt, &net->l[i], name, i, rng);
    }
}

void tr_net_free(tr_runtime *rt, tr_net *net)
{
    for (int i = 0; i < net->n; i++) {
        tr_layer *L = &net->l[i];
        for (int j = 0; j < 3; j++) {
            tr_unref(rt, &L->param[j]);
            tr_unref(rt, &L->grad[j]);
            tr_unref(rt, &L->exp_avg[j]);
            tr_unref(rt, &L->exp_avg_sq[j]);
        }
        tr_unref(rt, &L->running_mean);
        tr_unref(rt, &L->running_var);
    }
}

/* ---- forward -------------------------------------------------------------------------------- */

static tr_tensor *conv_forward(tr_runtime *rt, tr_layer *L, tr_tensor *x)
{
    const tr_layer_spec *s = &L->s;
    tr_tensor *y =
        tr_new(rt, x->n, s->c_out, s->hw_out, s->hw_out, TR_F32, tag(L, TR_TAG_CONV_OUT));
    conv_pass(rt, L, x->n, OPS_PASS_FORWARD, x->p, L->param[0]->p, y->p);
    return y;
}

static void act_forward(tr_runtime *rt, tr_act a, const tr_tensor *x, tr_tensor *y)
{
    switch (a) {
    case TR_ACT_RELU:
        TR_OP(rt, ops_relu_forward(rt->ops, x->p, y->p, x->numel));
        break;
    case TR_ACT_LRELU:
        TR_OP(rt, ops_leaky_relu_forward(rt->ops, x->p, y->p, x->numel, 0.2f));
        break;
    case TR_ACT_TANH:
        TR_OP(rt, ops_tanh_forward(rt->ops, x->p, y->p, x->numel));
        break;
    case TR_ACT_SIGMOID:
        TR_OP(rt, ops_sigmoid_forward(rt->ops, x->p, y->p, x->numel));
        break;
    }
}

/* Conv + BatchNorm2d (training mode) + in-place ReLU/LeakyReLU. Keeps y/mean/invstd in sv when
 * keep (y packed when pack), else frees them at once. Returns the block output. */
static tr_tensor *bn_block_forward(tr_runtime *rt, tr_layer *L, tr_tensor *y, bool keep, bool pack,
                                   bool update_running, tr_saved *sv)
{
    int c = L->s.c_out, hw = L->s.hw_out;
    tr_tensor *z = tr_new(rt, y->n, c, hw, hw, TR_F32, tag(L, TR_TAG_BN_OUT));
    tr_tensor *mean = tr_new(rt, 1, c, 1, 1, TR_F32, tag(L, TR_TAG_MEAN));
    tr_tensor *invstd = tr_new(rt, 1, c, 1, 1, TR_F32, tag(L, TR_TAG_INVSTD));
    TR_OP(rt, ops_batchnorm2d_forward_train(
                  rt->ops, y->p, z->p, y->n, c, hw, hw, L->param[1]->p, L->param[2]->p,
                  update_running ? L->running_mean->p : NULL,
                  update_running ? L->running_var->p : NULL, 0.1f, 1e-5f, mean->p, invstd->p));
    act_forward(rt, L->s.act, z, z);
    if (keep) {
        sv->y = pack ? tr_pack(rt, y, tag(L, TR_TAG_PACKED)) : tr_ref(y);
        sv->mean = mean;
        sv->invstd = invstd;
    } else {
        tr_unref(rt, &mean);
        tr_unref(rt, &invstd);
    }
    tr_unref(rt, &y);
    return z;
}

/* One block's forward from x (f32, borrowed). Returns the block output (f32, new reference). */
static tr_tensor *block_forward(tr_runtime *rt, tr_layer *L, tr_tensor *x, bool keep, bool pack,
                                bool update_running, tr_saved *sv)
{
    tr_tensor *y = conv_forward(rt, L, x);
    if (L->s.bn)
        return bn_block_forward(rt, L, y, keep, pack, update_running, sv);
    if (L->s.act == TR_ACT_LRELU || L->s.act == TR_ACT_RELU) { /* inplace=True */
        act_forward(rt, L->s.act, y, y);
        return y;
    }
    tr_tensor *z = tr_new(rt, y->n, y->c, y->h, y->w, TR_F32, tag(L, TR_TAG_ACT_OUT));
    act_forward(rt, L->s.act, y, z);
    tr_unref(rt, &y);
    return z;
}

tr_tensor *tr_net_forward(tr_runtime *rt, tr_net *net, tr_tensor *x, tr_grad_mode mode, tr_graph *g)
{
    memset(g, 0, sizeof *g);
    g->net = net;
    g->mode = mode;
    if (mode != TR_NO_GRAD)
        g->input = tr_ref(x);
    tr_tensor *cur = tr_ref(x);
    for (int i = 0; i < net->n; i++) {
        bool last = i == net->n - 1;
        tr_tensor *z = block_forward(rt, &net->l[i], cur, mode == TR_GRAD, true, true, &g->b[i]);
        if (mode == TR_GRAD)
            g->b[i].out = last ? tr_ref(z) : tr_pack(rt, z, tag(&net->l[i], TR_TAG_PACKED));
        else if (mode == TR_GRAD_CHECKPOINT && !last)
            g->b[i].out = tr_pack(rt, z, tag(&net->l[i], TR_TAG_PACKED));
        tr_unref(rt, &cur);
        cur = z;
    }
    return cur;
}

/* ---- backward ------------------------------------------------------------------------------- */

static void act_backward(tr_runtime *rt, tr_act a, const tr_tensor *y, const tr_tensor *dy,
                         tr_tensor *dx)
{
    switch (a) {
    case TR_ACT_RELU:
        TR_OP(rt, ops_relu_backward(rt->ops, y->p, dy->p, dx->p, y->numel));
        break;
    case TR_ACT_LRELU:
        TR_OP(rt, ops_leaky_relu_backward(rt->ops, y->p, dy->p, dx->p, y->numel, 0.2f));
        break;
    case TR_ACT_TANH:
        TR_OP(rt, ops_tanh_backward(rt->ops, y->p, dy->p, dx->p, y->numel));
        break;
    case TR_ACT_SIGMOID:
        TR_OP(rt, ops_sigmoid_backward(rt->ops, y->p, dy->p, dx->p, y->numel));
        break;
    }
}

/* AccumulateGrad: the first gradient becomes .grad (stolen), later ones are added and freed. */
static void accumulate_grad(tr_runtime *rt, tr_tensor **slot, tr_tensor **g)
{
    if (!*slot) {
        *slot = *g;
        *g = NULL;
        return;
    }
    TR_OP(rt, ops_add(rt->ops, (*g)->p, (*slot)->p, (*g)->numel, 1.0f));
    tr_unref(rt, g);
}

static void drop(tr_runtime *rt, tr_tensor **t, bool saved)
{
    if (saved)
        tr_release_saved(rt, t);
    else
        tr_unref(rt, t);
}

/* BatchNorm2d backward from da (consumed); returns the gradient of the conv output. */
static tr_tensor *bn_backward(tr_runtime *rt, tr_layer *L, tr_saved *sv, tr_tensor *da, bool saved)
{
    int c = L->s.c_out, hw = L->s.hw_out;
    tr_tensor *ys = tr_unpack(rt, sv->y, tag(L, TR_TAG_UNPACKED));
    tr_tensor *dy = tr_new(rt, da->n, c, hw, hw, TR_F32, tag(L, TR_TAG_D_BN));
    tr_tensor *dg = new_param(rt, (size_t)c, tag(L, TR_TAG_GRAD_GAMMA));
    tr_tensor *db = new_param(rt, (size_t)c, tag(L, TR_TAG_GRAD_BETA));
    TR_OP(rt, ops_zero(rt->ops, dg->p, (size_t)c));
    TR_OP(rt, ops_zero(rt->ops, db->p, (size_t)c));
    TR_OP(rt, ops_batchnorm2d_backward(rt->ops, ys->p, da->p, da->n, c, hw, hw, L->param[1]->p,
                                       sv->mean->p, sv->invstd->p, dy->p, dg->p, db->p));
    tr_unref(rt, &ys);
    tr_unref(rt, &da);
    drop(rt, &sv->y, saved);
    drop(rt, &sv->mean, saved);
    drop(rt, &sv->invstd, saved);
    accumulate_grad(rt, &L->grad[1], &dg);
    accumulate_grad(rt, &L->grad[2], &db);
    return dy;
}

static tr_tensor *conv_backward_data(tr_runtime *rt, tr_layer *L, const tr_tensor *dy)
{
    const tr_layer_spec *s = &L->s;
    tr_tensor *dx = tr_new(rt, dy->n, s->c_in, s->hw_in, s->hw_in, TR_F32, tag(L, TR_TAG_D_IN));
    conv_pass(rt, L, dy->n, OPS_PASS_BACKWARD_DATA, dy->p, L->param[0]->p, dx->p);
    return dx;
}

static void conv_backward_filter(tr_runtime *rt, tr_layer *L, const tr_tensor *x,
                                 const tr_tensor *dy)
{
    size_t count = tr_layer_weight_count(&L->s);
    tr_tensor *dw = new_param(rt, count, tag(L, TR_TAG_GRAD_W));
    TR_OP(rt, ops_zero(rt->ops, dw->p, count));
    conv_pass(rt, L, dy->n, OPS_PASS_BACKWARD_FILTER, x->p, dy->p, dw->p);
    accumulate_grad(rt, &L->grad[0], &dw);
}

/* One block's backward from dz (consumed). in_saved is the block input as saved. Releases
 * sv's tensors (graph-saved when `saved`, else local). Returns dx or NULL. */
static tr_tensor *block_backward(tr_runtime *rt, tr_layer *L, tr_saved *sv, tr_tensor *in_saved,
                                 tr_tensor *dz, bool need_dx, bool saved)
{
    tr_tensor *zs = tr_unpack(rt, sv->out, tag(L, TR_TAG_UNPACKED));
    tr_tensor *da = tr_new(rt, dz->n, dz->c, dz->h, dz->w, TR_F32, tag(L, TR_TAG_D_ACT));
    act_backward(rt, L->s.act, zs, dz, da);
    tr_unref(rt, &zs);
    tr_unref(rt, &dz);
    drop(rt, &sv->out, saved);
    tr_tensor *dy = L->s.bn ? bn_backward(rt, L, sv, da, saved) : da;
    tr_tensor *dx = need_dx ? conv_backward_data(rt, L, dy) : NULL;
    tr_tensor *x = tr_unpack(rt, in_saved, tag(L, TR_TAG_UNPACKED));
    conv_backward_filter(rt, L, x, dy);
    tr_unref(rt, &x);
    tr_unref(rt, &dy);
    return dx;
}

/* Checkpointed block: recompute the block from its saved input, then backward through it. */
static tr_tensor *recompute_backward(tr_runtime *rt, tr_layer *L, tr_tensor *in_saved,
                                     tr_tensor *dz, bool need_dx)
{
    tr_saved local = {0};
    tr_tensor *x;
    nvtxRangePushA("recompute"); /* what checkpointing costs, visible in profiles */
    x = tr_unpack(rt, in_saved, tag(L, TR_TAG_UNPACKED));
    local.out = block_forward(rt, L, x, true, false, false, &local);
    tr_unref(rt, &x);
    nvtxRangePop();
    return block_backward(rt, L, &local, in_saved, dz, need_dx, false);
}

tr_tensor *tr_net_backward(tr_runtime *rt, tr_graph *g, tr_tensor *dout, bool need_dx)
{
    tr_net *net = g->net;
    tr_tensor *d = dout;
    for (int i = net->n - 1; i >= 0; i--) {
        tr_tensor *in_saved = i == 0 ? g->input : g->b[i - 1].out;
        bool dx = i > 0 || need_dx;
        if (g->mode == TR_GRAD_CHECKPOINT) {
            tr_release_saved(rt, &g->b[i].out);
            d = recompute_backward(rt, &net->l[i], in_saved, d, dx);
        } else {
            d = block_backward(rt, &net->l[i], &g->b[i], in_saved, d, dx, true);
        }
    }
    tr_release_saved(rt, &g->input);
    return d;
}

/* ---- optimizer ------------------------------------------------------------------------------ */

void tr_net_zero_grad(tr_runtime *rt, tr_net *net)
{
    for (int i = 0; i < net->n; i++)
        for (int j = 0; j < 3; j++)
            tr_unref(rt, &net->l[i].grad[j]);
}

void tr_net_adam_step(tr_runtime *rt, tr_net *net, float lr, float beta1, float beta2)
{
    net->adam_step++;
    for (int i = 0; i < net->n; i++) {
        tr_layer *L = &net->l[i];
        for (int j = 0; j < 3; j++) {
            if (!L->param[j] || !L->grad[j])
                continue;
            size_t n = L->param[j]->numel;
            if (!L->exp_avg[j]) {
                L->exp_avg[j] = new_param(rt, n, tag(L, TR_TAG_ADAM_M));
                TR_OP(rt, ops_zero(rt->ops, L->exp_avg[j]->p, n));
                L->exp_avg_sq[j] = new_param(rt, n, tag(L, TR_TAG_ADAM_V));
                TR_OP(rt, ops_zero(rt->ops, L->exp_avg_sq[j]->p, n));
            }
            TR_OP(rt,
                  ops_adam_step(rt->ops, L->param[j]->p, L->grad[j]->p, L->exp_avg[j]->p,
                                L->exp_avg_sq[j]->p, n, lr, beta1, beta2, 1e-8f, net->adam_step));
        }
    }
}
