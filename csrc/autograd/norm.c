/* norm.c (autograd): layer_norm and rms_norm, whose backward runs norm.comp's two backward kernels, or,
 * when the backward is itself recorded (create_graph), the same math composed of differentiable ops with
 * the row statistics recomputed from x; and embedding, a row gather whose backward adds the gradient's
 * rows into zeros at the index. */
#include <float.h>

#include "../ops/norm.h"
#include "../ops/reduce.h"
#include "../ops/shape.h"
#include "formula.h"
#include "norm.h"

/* ---- layer_norm, rms_norm: saved 0 x, 1 weight (if any), 2 the [rows, 2] mean and rstd ---- */

#define ND ((int)b->n->iv[0])
#define HAS_W (b->n->iv[1] != 0)
#define RMS (b->n->flag)
#define EPS (b->n->s[0].f)

/* The mask of x's last nd dims and the other ones. */
static uint32_t last_dims(int ndim, int nd) { return ((1u << ndim) - 1u) & ~((1u << (ndim - nd)) - 1u); }

static const vkt_var *mean_last(vkt_bw *b, const vkt_var *v) {
  const vkt_shape_info *x = IN(b, 0);
  int64_t n = 1;
  for (int d = x->ndim - ND; d < x->ndim; d++)
    n *= x->shape[d];
  return muls(b, sum_dims(b, v, last_dims(x->ndim, ND), true), 1.0 / (double)n);
}

/* The backward recorded: xhat and rstd from x again, so that their dependence on x is differentiated. */
static void norm_backward_composed(vkt_bw *b) {
  const vkt_var *x = S(b, 0), *g = G(b, 0), *xc = RMS ? x : sub(b, x, mean_last(b, x));
  const vkt_var *rstd = un(b, VKT_OP_RSQRT, bins(b, VKT_OP_ADD, mean_last(b, mul(b, xc, xc)), EPS));
  const vkt_var *xhat = mul(b, xc, rstd), *gw = HAS_W ? mul(b, g, S(b, 1)) : g;
  const vkt_var *inner = sub(b, gw, mul(b, xhat, mean_last(b, mul(b, gw, xhat))));
  uint32_t lead = ((1u << IN(b, 0)->ndim) - 1u) & ~last_dims(IN(b, 0)->ndim, ND);
  if (NEED(b, 0))
    SET(b, 0, mul(b, rstd, RMS ? inner : sub(b, inner, mean_last(b, gw))));
  if (NEED(b, 1))
    SET(b, 1, sum_dims(b, mul(b, g, xhat), lead, false));
  if (!RMS && NEED(b, 2))
    SET(b, 2, sum_dims(b, g, lead, false));
}

/* Keeps a tensor a kernel made as the var of gradient i. */
static void set_tensor(vkt_bw *b, int i, vkt_status st, vkt_tensor *t) {
  vkt_var v = {.t = *t};
  const vkt_var *kept = keep(b, st, &v);
  if (kept)
    SET(b, i, kept);
}

static void norm_backward(vkt_bw *b) {
  if (vkt_grad_enabled()) {
    norm_backward_composed(b);
    return;
  }
  const vkt_var *x = S(b, 0), *w = HAS_W ? S(b, 1) : NULL, *stats = S(b, 2), *g = G(b, 0);
  vkt_tensor gx = {0}, gw = {0}, gb = {0}, gd = {0};
  if (!x || !stats || !g || (HAS_W && !w))
    return;
  /* the kernels read a row-major gradient: made once for both of them (an expanded seed, say) */
  if ((b->st = vkt_contiguous(&gd, &g->t)))
    return;
  if (NEED(b, 0))
    set_tensor(b, 0, vkt_norm_backward_input(RMS, &gd, &x->t, &stats->t, ND, w ? &w->t : NULL, &gx), &gx);
  bool need_b = !RMS && NEED(b, 2);
  if (NEED(b, 1) || need_b) {
    vkt_dtype dtype = NEED(b, 1) ? IN(b, 1)->dtype : IN(b, 2)->dtype;
    vkt_status st = vkt_norm_backward_weight(RMS, &gd, &x->t, &stats->t, ND, dtype, &gw, need_b ? &gb : NULL);
    set_tensor(b, 1, st, &gw);
    if (need_b)
      set_tensor(b, 2, st, &gb);
  }
  vkt_tensor_release(&gd);
}

static const vkt_fn layer_norm_fn = {"NativeLayerNormBackward0", norm_backward},
                    rms_norm_fn = {"FusedRmsNormBackward0", norm_backward};

static vkt_status norm(bool rms, const vkt_var *x, int nd, const int64_t *nshape, const vkt_var *w, const vkt_var *bias,
                       double eps, vkt_var *out) {
  vkt_var stats = {0};
  *out = (vkt_var){0};
  const vkt_tensor *wt = w ? &w->t : NULL, *bt = bias ? &bias->t : NULL;
  vkt_status st = vkt_norm_check(rms ? "rms_norm" : "layer_norm", &x->t, nd, nshape, wt, bt);
  if (st || (st = vkt_norm_forward(rms, &x->t, nd, wt, bt, eps, &out->t, &stats.t)))
    return st;
  vkt_node *n = vkt_node_begin(rms ? &rms_norm_fn : &layer_norm_fn, rms ? 2 : 3, (const vkt_var *[]){x, w, bias}, 1);
  if (n) {
    n->iv[0] = nd, n->iv[1] = w != NULL, n->flag = rms;
    n->s[0] = (vkt_scalar){true, eps, 0};
    vkt_node_save(n, 0, x, false, 0);
    if (w)
      vkt_node_save(n, 1, w, false, 0);
    vkt_node_save(n, 2, &stats, false, 0);
    vkt_node_output(n, 0, out);
    vkt_node_decref(n);
  }
  vkt_var_release(&stats);
  return VKT_OK;
}

vkt_status vkt_ag_layer_norm(const vkt_var *x, int nd, const int64_t *nshape, const vkt_var *w, const vkt_var *b,
                             double eps, vkt_var *out) {
  return norm(false, x, nd, nshape, w, b, eps, out);
}

vkt_status vkt_ag_rms_norm(const vkt_var *x, int nd, const int64_t *nshape, const vkt_var *w, bool has_eps, double eps,
                           vkt_var *out) {
  if (!has_eps) /* the machine epsilon of the type PyTorch computes in: float32's for float16 */
    eps = x->t.dtype == VKT_FLOAT64 ? DBL_EPSILON : FLT_EPSILON;
  return norm(true, x, nd, nshape, w, NULL, eps, out);
}

/* ---- embedding: saved 0 the flattened index; iv[0] padding_idx, iv[1] the weight's rows ---- */

/* The gradient's rows, zero at padding_idx and divided by their index's count where scale_grad_by_freq. */
static const vkt_var *scaled_rows(vkt_bw *b, const vkt_var *idx, const vkt_var *rows) {
  vkt_var keep_row = {0}, count = {0};
  vkt_tensor zeros = {0}, ones = {0}, col = {0};
  int64_t nidx = idx->t.shape[0], num = b->n->iv[1], colshape[2] = {nidx, 1};
  const vkt_var *r = rows;
  vkt_status st = VKT_OK;
  if (b->n->iv[0] >= 0) { /* a negative index is refused by the forward: no row is at a negative padding_idx */
    st = vkt_binary(VKT_OP_NE, (vkt_operand){.t = &idx->t}, (vkt_operand){.s = {false, 0, b->n->iv[0]}},
                    (vkt_scalar){false, 0, 1}, NULL, &col);
    if (!st)
      st = vkt_view(&keep_row.t, &col, 2, colshape);
    r = keep_where(b, keep(b, st, &keep_row), rows);
    vkt_tensor_release(&col);
  }
  if (!b->n->flag || !r)
    return r;
  /* counts of each index value (a scatter of ones), read back at each index */
  int device = IN(b, 0)->device;
  vkt_dtype dtype = IN(b, 0)->dtype;
  if (!(st = vkt_tensor_empty(&zeros, device, dtype, 1, &num)) && !(st = vkt_fill_(&zeros, (vkt_scalar){0})) &&
      !(st = vkt_tensor_empty(&ones, device, dtype, 1, &nidx)) && !(st = vkt_fill_(&ones, (vkt_scalar){false, 0, 1})) &&
      !(st = vkt_scatter_add(&zeros, 0, &idx->t, &ones)) && !(st = vkt_index_select(&zeros, 0, &idx->t, &col)))
    st = vkt_view(&count.t, &col, 2, colshape);
  vkt_tensor_release(&zeros);
  vkt_tensor_release(&ones);
  vkt_tensor_release(&col);
  return dvd(b, r, keep(b, st, &count));
}

static void embedding_backward(vkt_bw *b) {
  const vkt_var *idx = S(b, 0), *g = G(b, 0);
  vkt_var out = {0}, spread = {0};
  if (!idx || !g)
    return;
  int64_t dim = IN(b, 0)->shape[1], rows[2] = {idx->t.shape[0], dim}, col[2] = {idx->t.shape[0], 1};
  const vkt_var *gr = scaled_rows(b, idx, reshape(b, g, 2, rows));
  vkt_tensor c = {0};
  vkt_status st = vkt_view(&c, &idx->t, 2, col);
  if (!st)
    st = vkt_expand(&spread.t, &c, 2, rows);
  vkt_tensor_release(&c);
  const vkt_var *at = keep(b, st, &spread);
  if (gr && at)
    SET(b, 0, keep(b, vkt_ag_scatter_add_zeros(gr, 0, &at->t, 2, IN(b, 0)->shape, &out), &out));
}

static const vkt_fn embedding_fn = {"EmbeddingBackward0", embedding_backward};

static vkt_status embedding_check(const vkt_var *w, const vkt_tensor *idx, bool sparse) {
  if (sparse)
    return vkt_fail(VKT_ERR_RUNTIME, "embedding(): sparse=True makes a sparse gradient, and vkt has no sparse tensors");
  if (idx->dtype != VKT_INT32 && idx->dtype != VKT_INT64)
    return vkt_fail(VKT_ERR_RUNTIME,
                    "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; "
                    "but got torch.%sTensor instead (while checking arguments for embedding)",
                    vkt_dtypes[idx->dtype].torch_name);
  if (w->t.ndim != 2)
    return vkt_fail(VKT_ERR_RUNTIME, "'weight' must be 2-D");
  if (idx->ndim >= VKT_MAX_DIMS) /* the result has a dim more */
    return vkt_fail(VKT_ERR_RUNTIME, "tensors have at most %d dimensions, got %d", VKT_MAX_DIMS, idx->ndim + 1);
  return vkt_same_device(2, (const vkt_tensor *[]){&w->t, idx}, NULL);
}

vkt_status vkt_ag_embedding(const vkt_var *w, const vkt_tensor *idx, int64_t padding_idx, bool scale_grad_by_freq,
                            bool sparse, vkt_var *out) {
  vkt_var flat = {0};
  vkt_tensor dense = {0}, rows = {0};
  int64_t n = vkt_tensor_numel(idx), shape[VKT_MAX_DIMS];
  *out = (vkt_var){0};
  vkt_status st = embedding_check(w, idx, sparse);
  if (st || (st = vkt_contiguous(&dense, idx)) || (st = vkt_view(&flat.t, &dense, 1, &n)) ||
      (st = vkt_index_select(&w->t, 0, &flat.t, &rows)))
    goto finish;
  for (int d = 0; d < idx->ndim; d++)
    shape[d] = idx->shape[d];
  shape[idx->ndim] = w->t.shape[1];
  if ((st = vkt_view(&out->t, &rows, idx->ndim + 1, shape)))
    goto finish;
  vkt_node *node = vkt_node_begin(&embedding_fn, 1, &w, 1);
  if (node) {
    node->iv[0] = padding_idx, node->iv[1] = w->t.shape[0], node->flag = scale_grad_by_freq;
    vkt_node_save(node, 0, &flat, false, 0);
    vkt_node_output(node, 0, out);
    vkt_node_decref(node);
  }
finish:
  vkt_var_release(&flat);
  vkt_tensor_release(&dense);
  vkt_tensor_release(&rows);
  return st;
}
