/* loss.c (autograd): cross_entropy and nll_loss, each recorded as one node whose backward is ops/loss.c's single
 * kernel for the input, reading the log-sum-exp the forward saved. A probability target's gradient,
 * -(1 - ls) * weight * (x - lse) * grad, is a line of elementwise ops. x is saved in slot 0, the target in 1;
 * the options, the class weights and the forward's per-row values live in the node's extra. */
#include <stdlib.h>

#include "formula.h"
#include "loss.h"

typedef struct {
  vkt_loss_opts o; /* o.weight points at weight below */
  vkt_tensor weight;
  vkt_loss_saved s;
} loss_state;

static void state_free(void *p) {
  loss_state *ls = p;
  vkt_tensor_release(&ls->weight);
  vkt_loss_saved_release(&ls->s);
  free(ls);
}

/* The backward's own backward: its kernel is not written with differentiable ops. */
static void double_backward(vkt_bw *b) {
  b->st = vkt_fail(VKT_ERR_RUNTIME, "vkt: %s has no double backward: its backward is a single kernel",
                   b->n->id == VKT_OP_NLL_LOSS ? "nll_loss" : "cross_entropy_loss");
}
static const vkt_fn double_fn = {"CrossEntropyLossBackwardBackward0", double_backward};

/* grad_input from the kernel; under create_graph it records a node that refuses a second backward. */
static const vkt_var *input_grad(vkt_bw *b, const vkt_var *g, const vkt_var *x, const vkt_var *t) {
  loss_state *ls = b->n->extra;
  vkt_var out = {0};
  if (!g || !x || !t)
    return NULL;
  vkt_status st = vkt_cross_entropy_backward(&g->t, &x->t, &t->t, &ls->o, &ls->s, &out.t);
  vkt_node *n = st ? NULL : vkt_node_begin(&double_fn, 2, (const vkt_var *[]){g, x}, 1);
  if (n) {
    n->id = b->n->id;
    vkt_node_output(n, 0, &out);
    vkt_node_decref(n);
  }
  return keep(b, st, &out);
}

/* v shaped to broadcast against x: per row (lse, the loss's gradient), its class dim 1; per class (the weights),
 * every other dim 1. */
static const vkt_var *along(vkt_bw *b, const vkt_var *v, bool per_class) {
  int64_t shape[VKT_MAX_DIMS];
  int ndim = IN(b, 0)->ndim, class_dim = ndim == 1 ? 0 : 1;
  for (int d = 0; d < ndim; d++)
    shape[d] = (d == class_dim) == per_class ? IN(b, 0)->shape[d] : 1;
  return reshape(b, v, ndim, shape);
}

/* d loss / d target for class probabilities: -(1 - ls) * weight * (x - lse) * the row's gradient. */
static const vkt_var *target_grad(vkt_bw *b, const vkt_var *g, const vkt_var *x) {
  loss_state *ls = b->n->extra;
  vkt_var lse = {0}, w = {0}, total = {0};
  if (!g || !x ||
      vkt_as_strided(&lse.t, &ls->s.rows, 1, &ls->s.r, (const int64_t[]){1}, VKT_LOSS_LSE * ls->s.rows.shape[1]))
    return NULL;
  const vkt_var *lse_v = keep(b, VKT_OK, &lse), *gr = g;
  if (ls->o.reduction == VKT_REDUCTION_MEAN) {
    vkt_tensor_share(&total.t, &ls->s.total);
    gr = dvd(b, g, keep(b, VKT_OK, &total));
  } else if (ls->o.reduction == VKT_REDUCTION_NONE) {
    gr = along(b, g, false);
  }
  const vkt_var *gx = mul(b, sub(b, x, along(b, lse_v, false)), gr);
  if (ls->o.weight) {
    vkt_tensor_share(&w.t, &ls->weight);
    gx = mul(b, gx, along(b, keep(b, VKT_OK, &w), true));
  }
  return muls(b, gx, ls->o.label_smoothing - 1);
}

static void loss_backward(vkt_bw *b) {
  const vkt_var *x = S(b, 0), *t = S(b, 1), *g = G(b, 0);
  if (NEED(b, 0))
    SET(b, 0, input_grad(b, g, x, t));
  if (NEED(b, 1))
    SET(b, 1, target_grad(b, g, x));
}

static const vkt_fn ce_fn = {"CrossEntropyLossBackward0", loss_backward}, nll_fn = {"NllLossBackward0", loss_backward},
                    nll2d_fn = {"NllLoss2DBackward0", loss_backward};

static vkt_status record(const vkt_var *x, const vkt_var *target, const vkt_var *weight, const vkt_loss_opts *o,
                         vkt_loss_saved *s, vkt_var *out) {
  const vkt_fn *fn = !o->nll ? &ce_fn : x->t.ndim >= 3 ? &nll2d_fn : &nll_fn;
  vkt_node *n = vkt_node_begin(fn, 2, (const vkt_var *[]){x, target}, 1);
  loss_state *ls = n ? calloc(1, sizeof *ls) : NULL;
  if (!ls) {
    vkt_node_decref(n);
    return n ? vkt_fail(VKT_ERR_NOMEM, "out of host memory") : VKT_OK;
  }
  ls->o = *o;
  if (weight) {
    vkt_tensor_share(&ls->weight, &weight->t);
    ls->o.weight = &ls->weight;
  }
  ls->s = *s;
  *s = (vkt_loss_saved){0};
  n->id = o->nll ? VKT_OP_NLL_LOSS : VKT_OP_CROSS_ENTROPY;
  n->extra = ls;
  n->extra_free = state_free;
  vkt_node_save(n, 0, x, false, 0);
  vkt_node_save(n, 1, target, false, 0);
  vkt_node_output(n, 0, out);
  vkt_node_decref(n);
  return VKT_OK;
}

vkt_status vkt_ag_cross_entropy(const vkt_var *x, const vkt_var *target, const vkt_var *weight, const vkt_loss_opts *o,
                                vkt_var *out) {
  vkt_loss_opts opts = *o;
  vkt_loss_saved s = {0};
  *out = (vkt_var){0};
  if (vkt_grad_enabled() && vkt_requires_grad(weight))
    return vkt_fail(VKT_ERR_RUNTIME,
                    "The function '%s' is not differentiable with respect to argument 'weight'. This "
                    "input cannot have requires_grad True.",
                    o->nll ? "nll_loss_forward" : "cross_entropy_loss");
  opts.weight = weight ? &weight->t : NULL;
  bool records = vkt_grad_enabled() && (vkt_requires_grad(x) || vkt_requires_grad(target));
  vkt_status st = vkt_cross_entropy(&x->t, &target->t, &opts, &out->t, records ? &s : NULL);
  if (!st && records && (st = record(x, target, weight, &opts, &s, out)))
    vkt_var_release(out);
  vkt_loss_saved_release(&s);
  return st;
}
