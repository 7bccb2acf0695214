/* matmul.c (autograd): the matrix products and the fused matmul_add_relu, with the seed's backward:
 * grad_lhs = grad @ rhs^T and grad_rhs = lhs^T @ grad through transposed views (the strided matmul reads
 * them without copies), each summed back over broadcast batch dims by the engine. */
#include "../ops/matmul.h"
#include "formula.h"

#define g G(b, 0)

/* Input k (0: lhs, 1: rhs) as a matrix operand: a vector gets the dim matmul gave it. */
static const vkt_var *as_matrix(vkt_bw *b, const vkt_var *v, int k) {
  if (!v || v->t.ndim != 1)
    return v;
  int64_t shape[2] = {1, v->t.shape[0]};
  if (k)
    shape[0] = v->t.shape[0], shape[1] = 1;
  return reshape(b, v, 2, shape);
}

/* Whether t's last two dims are stored column by column, as a transposed matrix is (linear's weight, read
 * as w.T): an operand's gradient is then made in that layout too, as PyTorch's mm backward does, so that the
 * leaf's .grad keeps it as it is instead of copying it into the parameter's layout. The node keeps this for
 * lhs in bit 0 of its dims, for rhs in bit 1 (an operand is saved only where the other's gradient needs it). */
static bool column_major(const vkt_tensor *t) {
  int nd = t->ndim;
  return nd >= 2 && t->shape[nd - 2] > 1 && t->shape[nd - 1] > 1 && t->strides[nd - 2] == 1 &&
         t->strides[nd - 1] == t->shape[nd - 2];
}

/* x @ y, laid out column by column when `columns`: (y^T @ x^T)^T, the same sums of the same products. */
static const vkt_var *product_in(vkt_bw *b, const vkt_var *x, const vkt_var *y, bool columns) {
  if (!columns)
    return matmul(b, x, y);
  return transpose(b, matmul(b, transpose(b, y, -1, -2), transpose(b, x, -1, -2)), -1, -2);
}

/* The gradients of lhs @ rhs for an incoming gradient gz of the product's shape. */
static void product_grads(vkt_bw *b, const vkt_var *gz, const vkt_var *lhs, const vkt_var *rhs) {
  const vkt_shape_info *li = IN(b, 0), *ri = IN(b, 1);
  const vkt_var *a = as_matrix(b, lhs, 0), *c = as_matrix(b, rhs, 1);
  if (!gz || (NEED(b, 0) && !c) || (NEED(b, 1) && !a) || b->st)
    return;
  /* gz as [batch..., M, N]: a vector operand's lost dim comes back as 1. */
  int nd = gz->t.ndim, batch = nd - (li->ndim > 1) - (ri->ndim > 1);
  int64_t shape[VKT_MAX_DIMS];
  for (int d = 0; d < batch; d++)
    shape[d] = gz->t.shape[d];
  shape[batch] = li->ndim > 1 ? gz->t.shape[batch] : 1;
  shape[batch + 1] = ri->ndim > 1 ? gz->t.shape[nd - 1] : 1;
  const vkt_var *g2 = reshape(b, gz, batch + 2, shape);
  /* batch * M, the rows of a folded product, spelled out: a -1 in its place is ambiguous when N or K is 0 */
  int64_t rows_n = shape[batch];
  for (int d = 0; d < batch; d++)
    rows_n *= shape[d];
  if (NEED(b, 0)) {
    const vkt_var *ga;
    if (c->t.ndim == 2 && batch > 0 && vkt_tensor_is_contiguous(&g2->t)) {
      /* One rhs shared by the batch: fold the batch into the rows, one product of batch * M rows. */
      int64_t n = shape[batch + 1];
      const vkt_var *rows = matmul(b, reshape(b, g2, 2, (int64_t[]){rows_n, n}), transpose(b, c, 0, 1));
      int64_t gshape[VKT_MAX_DIMS];
      for (int d = 0; d <= batch; d++)
        gshape[d] = shape[d];
      gshape[batch + 1] = c->t.shape[0];
      ga = reshape(b, rows, batch + 2, gshape);
    } else {
      ga = product_in(b, g2, transpose(b, c, -1, -2), b->n->dims & 1u);
    }
    SET(b, 0, li->ndim == 1 ? reshape(b, sum_to(b, ga, 2, (int64_t[]){1, li->shape[0]}), 1, li->shape) : ga);
  }
  if (NEED(b, 1)) {
    const vkt_var *gc;
    bool columns = b->n->dims & 2u;
    if (ri->ndim <= 2 && a->t.ndim > 2 && vkt_tensor_is_contiguous(&a->t)) {
      /* One rhs shared by the batch: fold the batch into the rows, one product with K = batch * M. */
      int64_t k = a->t.shape[a->t.ndim - 1], n = shape[batch + 1];
      const vkt_var *a2 = reshape(b, a, 2, (int64_t[]){rows_n, k});
      gc = product_in(b, transpose(b, a2, 0, 1), reshape(b, g2, 2, (int64_t[]){rows_n, n}), columns);
    } else {
      gc = product_in(b, transpose(b, a, -1, -2), g2, columns);
    }
    SET(b, 1, ri->ndim == 1 ? reshape(b, sum_to(b, gc, 2, (int64_t[]){ri->shape[0], 1}), 1, ri->shape) : gc);
  }
}

static void matmul_backward(vkt_bw *b) {
  product_grads(b, g, NEED(b, 1) ? S(b, 0) : NULL, NEED(b, 0) ? S(b, 1) : NULL);
}

/* The bias's gradient is summed before the products read relu's backward, so that under fusion its reduction
 * computes that backward in its load and writes it for them (fuse.c, reduction_reading). */
static void matmul_add_relu_backward(vkt_bw *b) {
  const vkt_var *gz = bin(b, VKT_OP_THRESHOLD_BACKWARD, g, S(b, 2)); /* relu backward of the saved output */
  if (NEED(b, 2))
    SET(b, 2, sum_to(b, gz, IN(b, 2)->ndim, IN(b, 2)->shape));
  product_grads(b, gz, NEED(b, 1) ? S(b, 0) : NULL, NEED(b, 0) ? S(b, 1) : NULL);
}

static const vkt_fn mm_fn = {"MmBackward0", matmul_backward}, bmm_fn = {"BmmBackward0", matmul_backward},
                    dot_fn = {"DotBackward0", matmul_backward},
                    vdot_fn = {"VdotBackward0", matmul_backward}, mv_fn = {"MvBackward0", matmul_backward},
                    squeezed_fn = {"SqueezeBackward4", matmul_backward},
                    unsafe_view_fn = {"UnsafeViewBackward0", matmul_backward},
                    transposed_fn = {"TransposeBackward0", matmul_backward},
                    clone_fn = {"CloneBackward0", matmul_backward},
                    mar_fn = {"MatmulAddReluBackward0", matmul_add_relu_backward};

/* matmul's node, named as the last node of PyTorch's composite (_matmul_impl) is: dot, mv and mm for ranks up to 2
 * (a vector times a matrix is mm's result squeezed in place); past that, a view of a folded mm, mv or bmm, but for
 * a matrix that requires grad times a batch (a 1-batch that requires grad counts as a matrix there), whose folded
 * product PyTorch transposes back and copies where the transpose is not contiguous. vkt's one node does the whole
 * product's backward under that name. */
static const vkt_fn *matmul_kind(const vkt_var *a, const vkt_var *b) {
  int d1 = a->t.ndim, d2 = b->t.ndim;
  bool a_grad = vkt_requires_grad(a), b_grad = vkt_requires_grad(b);
  if (d1 <= 2 && d2 <= 2)
    return d2 == 1 ? (d1 == 1 ? &dot_fn : &mv_fn) : d1 == 1 ? &squeezed_fn : &mm_fn;
  if (d1 == 3 && d2 == 3 && a->t.shape[0] != b->t.shape[0] && a->t.shape[0] == 1 && a_grad)
    d1 = 2; /* PyTorch squeezes the 1-batch away */
  else if (d1 == 3 && d2 == 3 && a->t.shape[0] != b->t.shape[0] && b->t.shape[0] == 1 && b_grad)
    d2 = 2;
  if (d1 != 2 || d2 < 3 || !a_grad)
    return &unsafe_view_fn;
  int64_t n = a->t.shape[a->t.ndim - 2], p = b->t.shape[d2 - 1], batch = 1;
  for (int d = 0; d < d2 - 2; d++)
    batch *= b->t.shape[d];
  return n == 1 || p == 1 || batch == 0 ? &transposed_fn : &clone_fn; /* contiguous() copies the others */
}

vkt_status vkt_ag_product(vkt_product_fn fn, const vkt_var *a, const vkt_var *b, vkt_var *out) {
  *out = (vkt_var){0};
  vkt_status st = fn(&a->t, &b->t, &out->t);
  if (st || !vkt_dtypes[out->t.dtype].is_float)
    return st;
  const vkt_var *in[2] = {a, b};
  const vkt_fn *kind = fn == vkt_bmm    ? &bmm_fn
                       : fn == vkt_dot  ? &dot_fn
                       : fn == vkt_vdot ? &vdot_fn
                       : fn == vkt_mv   ? &mv_fn
                       : fn == vkt_mm   ? &mm_fn
                                        : matmul_kind(a, b);
  vkt_node *n = vkt_node_begin(kind, 2, in, 1);
  if (n) {
    if (vkt_requires_grad(b))
      vkt_node_save(n, 0, a, false, 0);
    if (vkt_requires_grad(a))
      vkt_node_save(n, 1, b, false, 0);
    n->dims = (column_major(&a->t) ? 1u : 0) | (column_major(&b->t) ? 2u : 0);
    vkt_node_output(n, 0, out);
    vkt_node_decref(n);
  }
  return VKT_OK;
}

vkt_status vkt_ag_matmul_add_relu(const vkt_var *lhs, const vkt_var *rhs, const vkt_var *bias, vkt_var *out) {
  *out = (vkt_var){0};
  vkt_status st = vkt_matmul_add_relu(&lhs->t, &rhs->t, &bias->t, &out->t);
  if (st)
    return st;
  const vkt_var *in[3] = {lhs, rhs, bias};
  vkt_node *n = vkt_node_begin(&mar_fn, 3, in, 1);
  if (n) {
    vkt_node_save(n, 0, lhs, false, 0);
    vkt_node_save(n, 1, rhs, false, 0);
    vkt_node_save(n, 2, out, true, 0); /* the output, not the pre-activation, as the seed does */
    n->dims = (column_major(&lhs->t) ? 1u : 0) | (column_major(&rhs->t) ? 2u : 0);
    vkt_node_output(n, 0, out);
    vkt_node_decref(n);
  }
  return VKT_OK;
}

vkt_status vkt_ag_matmul(const vkt_var *a, const vkt_var *b, vkt_var *out) {
  return vkt_ag_product(vkt_matmul, a, b, out);
}

/* ---- composites: recorded as the ops they are made of ---- */

/* out = x + s * y (s == 1: a plain add), consuming y. */
static vkt_status add_scaled(const vkt_var *x, vkt_var *y, vkt_scalar s, vkt_var *out) {
  vkt_status st = vkt_ag_binary(VKT_OP_ADD, x, (vkt_scalar){0}, y, (vkt_scalar){0}, s, out);
  vkt_var_release(y);
  return st;
}

vkt_status vkt_ag_linear(const vkt_var *x, const vkt_var *w, const vkt_var *bias, vkt_var *out) {
  vkt_var wt = {0}, prod = {0};
  *out = (vkt_var){0};
  if (w->t.ndim != 2 && w->t.ndim != 1)
    return vkt_linear(&x->t, &w->t, bias ? &bias->t : NULL, &out->t); /* its error */
  vkt_status st = bias && w->t.ndim == 2 ? vkt_addmm_dtypes(&bias->t, &x->t, &w->t) : VKT_OK;
  if (!st)
    st = w->t.ndim == 2 ? vkt_ag_transpose(w, 0, 1, &wt) : (vkt_var_share(&wt, w), VKT_OK);
  if (!st)
    st = vkt_ag_matmul(x, &wt, bias ? &prod : out);
  vkt_var_release(&wt);
  if (!st && bias)
    st = vkt_ag_binary(VKT_OP_ADD, &prod, (vkt_scalar){0}, bias, (vkt_scalar){0}, (vkt_scalar){false, 0, 1}, out);
  vkt_var_release(&prod);
  return st;
}

vkt_status vkt_ag_add_product(vkt_add_product_fn fn, vkt_product_fn product, bool sum_batch, const vkt_var *input,
                              const vkt_var *m1, const vkt_var *m2, vkt_scalar beta, vkt_scalar alpha, vkt_var *out) {
  vkt_var p = {0}, scaled = {0}, summed = {0};
  *out = (vkt_var){0};
  /* The fused op first checks the arguments and gives PyTorch's errors; its value is what we return when
   * nothing records. */
  vkt_status st = fn(&input->t, &m1->t, &m2->t, beta, alpha, &out->t);
  const vkt_var *in[3] = {input, m1, m2};
  bool records =
      vkt_grad_enabled() && (vkt_requires_grad(in[0]) || vkt_requires_grad(in[1]) || vkt_requires_grad(in[2]));
  if (st || !records)
    return st;
  vkt_var_release(out);
  if ((st = vkt_ag_product(product, m1, m2, &p)))
    return st;
  if (sum_batch) { /* addbmm: the batch of products summed */
    st = vkt_ag_reduce(VKT_OP_SUM, &p, 1u, false, -1, 0, false, "sum", false, &summed);
    vkt_var_release(&p);
    if (st)
      return st;
    p = summed;
  }
  bool beta_zero = beta.is_float ? beta.f == 0 : beta.i == 0;
  if (beta_zero) { /* input is not read, as PyTorch's: its gradient is zero, not NaN */
    st = vkt_ag_binary(VKT_OP_MUL, &p, (vkt_scalar){0}, NULL, alpha, (vkt_scalar){false, 0, 1}, out);
    vkt_var_release(&p);
    return st;
  }
  if ((st = vkt_ag_binary(VKT_OP_MUL, input, (vkt_scalar){0}, NULL, beta, (vkt_scalar){false, 0, 1}, &scaled))) {
    vkt_var_release(&p);
    return st;
  }
  st = add_scaled(&scaled, &p, alpha, out);
  vkt_var_release(&scaled);
  return st;
}

vkt_status vkt_ag_matmul_add_relu_reference(const vkt_var *lhs, const vkt_var *rhs, const vkt_var *bias, vkt_var *out) {
  vkt_var p = {0}, sum = {0};
  *out = (vkt_var){0};
  vkt_status st = vkt_ag_matmul(lhs, rhs, &p);
  if (!st)
    st = vkt_ag_binary(VKT_OP_ADD, &p, (vkt_scalar){0}, bias, (vkt_scalar){0}, (vkt_scalar){false, 0, 1}, &sum);
  if (!st)
    st = vkt_ag_unary(VKT_OP_RELU, &sum, (vkt_scalar){0}, (vkt_scalar){0}, out);
  vkt_var_release(&p);
  vkt_var_release(&sum);
  return st;
}
