/* loss.c (autograd): cross_entropy and nll_loss, each recorded as one node whose backward is ops/loss.c's single
 * kernel for the input, reading the log-sum-exp the forward saved; under create_graph the same math in ops, which
 * have backwards of their own. A probability target's gradient, -(1 - ls) * weight * (x - lse) * grad, is a line
 * of elementwise ops. x is saved in slot 0, the target in 1; the options, the class weights and the forward's
 * per-row values live in the node's extra. */
#include <stdlib.h>
#include <string.h>

#include "formula.h"
#include "loss.h"

typedef struct {
  vkt_loss_opts o; /* o.weight points at weight below */
  vkt_tensor weight;
  vkt_loss_saved s;
  bool prob; /* the target holds class probabilities */
} loss_state;

static void state_free(void *p) {
  loss_state *ls = p;
  vkt_tensor_release(&ls->weight);
  vkt_loss_saved_release(&ls->s);
  free(ls);
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

/* A tensor the node holds (not in the graph) as a temporary var. */
static const vkt_var *held(vkt_bw *b, const vkt_tensor *t) {
  vkt_var v = {0};
  vkt_tensor_share(&v.t, t);
  return keep(b, VKT_OK, &v);
}

/* Row k of the forward's per-row values, shaped along x's rows. */
static const vkt_var *saved_row(vkt_bw *b, int k) {
  loss_state *ls = b->n->extra;
  vkt_var v = {0};
  vkt_status st = vkt_as_strided(&v.t, &ls->s.rows, 1, &ls->s.r, (const int64_t[]){1}, k * ls->s.rows.shape[1]);
  return along(b, keep(b, st, &v), false);
}

/* The loss's gradient per row, shaped along x's rows: g itself (none), or g for every row (sum), or g over the
 * weights' total (mean). */
static const vkt_var *row_grad(vkt_bw *b, const vkt_var *g) {
  loss_state *ls = b->n->extra;
  switch (ls->o.reduction) {
  case VKT_REDUCTION_NONE: return along(b, g, false);
  case VKT_REDUCTION_MEAN: return dvd(b, g, held(b, &ls->s.total));
  default: return g;
  }
}

static const vkt_var *cast(vkt_bw *b, const vkt_var *x, vkt_dtype dtype) {
  vkt_var out = {0};
  return x ? keep(b, vkt_ag_cast(x, vkt_tensor_device(&x->t), dtype, VKT_PRESERVE_FORMAT, false, &out), &out) : NULL;
}

/* What each class weighs in the smoothed, weighted target (what softmax * its sum is reduced by): for class
 * indices (1 - ls) w_t at the target class plus ls / C of each class's weight, in rows not ignored; for
 * probabilities w_c ((1 - ls) t_c + ls / C). */
static const vkt_var *coefs(vkt_bw *b, const vkt_var *t) {
  loss_state *ls = b->n->extra;
  int64_t c = IN(b, 0)->shape[IN(b, 0)->ndim == 1 ? 0 : 1];
  double k = ls->o.label_smoothing / (double)c;
  const vkt_var *w = ls->o.weight ? along(b, held(b, &ls->weight), true) : NULL;
  if (ls->prob) {
    const vkt_var *q = bins(b, VKT_OP_ADD, muls(b, t, 1 - ls->o.label_smoothing), k);
    return w ? mul(b, q, w) : q;
  }
  vkt_var classes = {0};
  vkt_status st = vkt_arange(&classes.t, IN(b, 0)->device, VKT_INT64, (vkt_scalar){false, 0, 0},
                             (vkt_scalar){false, 0, c}, (vkt_scalar){false, 0, 1});
  const vkt_var *tb = along(b, t, false), *hit = bin(b, VKT_OP_EQ, tb, along(b, keep(b, st, &classes), true));
  const vkt_var *own = keep_where(b, hit, muls(b, saved_row(b, VKT_LOSS_WEIGHT), 1 - ls->o.label_smoothing));
  if (ls->o.nll || k == 0)
    return own;
  const vkt_var *counted = cast(b, bins(b, VKT_OP_NE, tb, (double)ls->o.ignore_index), ls->s.rows.dtype);
  return add(b, own, w ? mul(b, counted, muls(b, w, k)) : muls(b, counted, k));
}

/* grad_input: the kernel; under create_graph the same math in differentiable ops,
 * g (softmax(x) sum(coefs) - coefs) (nll_loss: -g coefs), so that it has a backward too. */
static const vkt_var *input_grad(vkt_bw *b, const vkt_var *g, const vkt_var *x, const vkt_var *t) {
  loss_state *ls = b->n->extra;
  vkt_var out = {0};
  if (!g || !x || !t)
    return NULL;
  if (!vkt_grad_enabled())
    return keep(b, vkt_cross_entropy_backward(&g->t, &x->t, &t->t, &ls->o, &ls->s, &out.t), &out);
  int class_dim = x->t.ndim == 1 ? 0 : 1;
  const vkt_var *k = coefs(b, t), *gx;
  if (ls->o.nll) {
    gx = muls(b, k, -1);
  } else {
    const vkt_var *p = k ? keep(b, vkt_ag_softmax(VKT_OP_SOFTMAX, x, class_dim, -1, &out), &out) : NULL;
    gx = sub(b, mul(b, p, sum_dims(b, k, 1u << class_dim, true)), k);
  }
  return cast(b, mul(b, row_grad(b, g), gx), x->t.dtype);
}

/* d loss / d target for class probabilities: -(1 - ls) * weight * log_softmax(x) * the row's gradient, with
 * log_softmax(x) = x - lse from the forward's lse (recomputed in ops under create_graph, where it needs a
 * backward). */
static const vkt_var *target_grad(vkt_bw *b, const vkt_var *g, const vkt_var *x) {
  loss_state *ls = b->n->extra;
  vkt_var out = {0};
  if (!g || !x)
    return NULL;
  const vkt_var *logp = vkt_grad_enabled()
                            ? keep(b, vkt_ag_softmax(VKT_OP_LOG_SOFTMAX, x, x->t.ndim == 1 ? 0 : 1, -1, &out), &out)
                            : sub(b, x, saved_row(b, VKT_LOSS_LSE));
  const vkt_var *gx = mul(b, logp, row_grad(b, g));
  if (ls->o.weight)
    gx = mul(b, gx, along(b, held(b, &ls->weight), true));
  return cast(b, muls(b, gx, ls->o.label_smoothing - 1), IN(b, 1)->dtype);
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
  ls->prob = vkt_dtypes[target->t.dtype].is_float;
  n->id = o->nll ? VKT_OP_NLL_LOSS : VKT_OP_CROSS_ENTROPY;
  n->extra = ls;
  n->extra_free = state_free;
  vkt_node_save(n, 0, x, false, 0);
  vkt_node_save(n, 1, target, false, 0);
  vkt_node_output(n, 0, out);
  vkt_node_decref(n);
  return VKT_OK;
}

/* Probability targets: PyTorch's loss is then ops in the promoted dtype of input and target, so the lower of the
 * two is cast (recorded) first. *xp and *tp are new references to x and t, or to the cast one. */
static vkt_status promote(const vkt_var *x, const vkt_var *t, const vkt_loss_opts *o, vkt_var *xp, vkt_var *tp) {
  static const int rank[VKT_DTYPE_COUNT] = {[VKT_FLOAT16] = 1, [VKT_FLOAT32] = 2, [VKT_FLOAT64] = 3};
  vkt_var_share(xp, x);
  vkt_var_share(tp, t);
  bool prob = !o->nll && x->t.ndim == t->t.ndim && !memcmp(x->t.shape, t->t.shape, sizeof(int64_t) * (size_t)x->t.ndim);
  if (!prob || !rank[x->t.dtype] || !rank[t->t.dtype] || x->t.dtype == t->t.dtype)
    return VKT_OK;
  vkt_var *low = rank[x->t.dtype] < rank[t->t.dtype] ? xp : tp, cast = {0};
  vkt_dtype to = rank[x->t.dtype] < rank[t->t.dtype] ? t->t.dtype : x->t.dtype;
  vkt_status st = vkt_ag_cast(low, vkt_tensor_device(&low->t), to, VKT_PRESERVE_FORMAT, false, &cast);
  vkt_var_release(low);
  *low = cast;
  return st;
}

vkt_status vkt_ag_cross_entropy(const vkt_var *x, const vkt_var *target, const vkt_var *weight, const vkt_loss_opts *o,
                                vkt_var *out) {
  vkt_loss_opts opts = *o;
  vkt_loss_saved s = {0};
  vkt_var xp = {0}, tp = {0};
  *out = (vkt_var){0};
  if (vkt_grad_enabled() && vkt_requires_grad(weight))
    return vkt_fail(VKT_ERR_RUNTIME,
                    "The function '%s' is not differentiable with respect to argument 'weight'. This "
                    "input cannot have requires_grad True.",
                    o->nll ? "nll_loss_forward" : "cross_entropy_loss");
  opts.weight = weight ? &weight->t : NULL;
  bool records = vkt_grad_enabled() && (vkt_requires_grad(x) || vkt_requires_grad(target));
  vkt_status st = promote(x, target, o, &xp, &tp);
  if (!st)
    st = vkt_cross_entropy(&xp.t, &tp.t, &opts, &out->t, records ? &s : NULL);
  if (!st && records && (st = record(&xp, &tp, weight, &opts, &s, out)))
    vkt_var_release(out);
  vkt_loss_saved_release(&s);
  vkt_var_release(&xp);
  vkt_var_release(&tp);
  return st;
}
