/* linalg.c (autograd): linalg.svd and svdvals with PyTorch's svd_backward, and the matrix norms made of
 * singular values (nuc: their sum, 2: the largest, -2: the smallest), recorded as svdvals and a
 * reduction so their gradients go through the singular vectors. */
#include "../ops/linalg.h"
#include "../ops/reduce.h"
#include "formula.h"
#include "linalg.h"
#include "shape.h"

static const vkt_var *mT(vkt_bw *b, const vkt_var *x) { return transpose(b, x, -2, -1); }

/* ---- svdvals: saved 0 U, 1 Vh, 2 A; the gradient U diag(gS) Vh ---- */

static void svdvals_backward(vkt_bw *b) {
  const vkt_var *u = S(b, 0), *vh = S(b, 1), *a = vkt_grad_enabled() ? S(b, 2) : NULL;
  if (a) { /* recorded (create_graph): U and Vh from A again through svd, so that their dependence on A counts */
    vkt_var outs[3];
    vkt_status st = vkt_ag_svd(a, false, &outs[0], &outs[1], &outs[2]);
    u = keep(b, st, &outs[0]);
    keep(b, st, &outs[1]);
    vh = keep(b, st, &outs[2]);
  }
  SET(b, 0, matmul(b, mul(b, u, lift(b, G(b, 0), true)), vh));
}
static const vkt_fn svdvals_fn = {"LinalgSvdBackward0", svdvals_backward};

vkt_status vkt_ag_svdvals(const vkt_var *a, vkt_var *out) {
  vkt_var u = {0}, vh = {0};
  *out = (vkt_var){0};
  vkt_status st = vkt_svd(&a->t, false, &u.t, &out->t, &vh.t);
  vkt_node *n = st ? NULL : vkt_node_begin(&svdvals_fn, 1, &a, 1);
  if (n) {
    vkt_node_save(n, 0, &u, false, 0);
    vkt_node_save(n, 1, &vh, false, 0);
    vkt_node_save(n, 2, a, false, 0);
    vkt_node_output(n, 0, out);
    vkt_node_decref(n);
  }
  vkt_var_release(&u);
  vkt_var_release(&vh);
  return st;
}

/* ---- svd: saved 0 U, 1 S, 2 Vh (outputs); PyTorch's svd_backward for real matrices. With full_matrices
 * only the first k singular vectors (and their gradients) take part, as in PyTorch. ---- */

/* The k x k identity in s's dtype and device. */
static const vkt_var *eye(vkt_bw *b, const vkt_var *s) {
  vkt_var out = {0};
  if (!s)
    return NULL;
  int64_t k = s->t.shape[s->t.ndim - 1];
  return keep(b, vkt_eye(&out.t, vkt_tensor_device(&s->t), s->t.dtype, k, k), &out);
}

/* gA in the singular bases: (skew(U^T gU) S + S skew(Vh gV)) / E off the diagonal, with E[i][j] =
 * S[j]^2 - S[i]^2, and gS on it. */
static const vkt_var *core(vkt_bw *b, const vkt_var *u, const vkt_var *s, const vkt_var *vh, const vkt_var *gu,
                           const vkt_var *gs, const vkt_var *gvh) {
  const vkt_var *i = eye(b, s), *uhgu = matmul(b, mT(b, u), gu), *vhgv = matmul(b, vh, mT(b, gvh));
  const vkt_var *s2 = mul(b, s, s);
  const vkt_var *e = add(b, sub(b, lift(b, s2, true), lift(b, s2, false)), i);
  const vkt_var *left = mul(b, sub(b, uhgu, mT(b, uhgu)), lift(b, s, true));
  const vkt_var *right = mul(b, lift(b, s, false), sub(b, vhgv, mT(b, vhgv)));
  return add(b, dvd(b, add(b, left, right), e), mul(b, i, lift(b, gs, true)));
}

static void svd_backward(vkt_bw *b) {
  const vkt_shape_info *a = IN(b, 0);
  int64_t m = a->shape[a->ndim - 2], n = a->shape[a->ndim - 1], k = m < n ? m : n;
  const vkt_var *u = narrow(b, S(b, 0), -1, 0, k), *s = S(b, 1), *vh = narrow(b, S(b, 2), -2, 0, k);
  const vkt_var *gu = narrow(b, G(b, 0), -1, 0, k), *gvh = narrow(b, G(b, 2), -2, 0, k);
  const vkt_var *g = core(b, u, s, vh, gu, G(b, 1), gvh);
  if (m > n) { /* the part of gU outside U's span: (I - U U^T) gU S^-1 */
    const vkt_var *gus = dvd(b, gu, lift(b, s, true));
    g = add(b, matmul(b, u, g), sub(b, gus, matmul(b, u, matmul(b, mT(b, u), gus))));
    g = matmul(b, g, vh);
  } else if (m < n) { /* the same for gV */
    const vkt_var *gvs = dvd(b, mT(b, gvh), lift(b, s, true));
    g = matmul(b, g, vh);
    g = add(b, g, sub(b, mT(b, gvs), matmul(b, matmul(b, mT(b, gvs), mT(b, vh)), vh)));
    g = matmul(b, u, g);
  } else {
    g = matmul(b, u, matmul(b, g, vh));
  }
  SET(b, 0, g);
}
static const vkt_fn svd_fn = {"LinalgSvdBackward0", svd_backward};

vkt_status vkt_ag_svd(const vkt_var *a, bool full, vkt_var *u, vkt_var *s, vkt_var *vh) {
  *u = *s = *vh = (vkt_var){0};
  vkt_status st = vkt_svd(&a->t, full, &u->t, &s->t, &vh->t);
  vkt_node *n = st ? NULL : vkt_node_begin(&svd_fn, 1, &a, 3);
  vkt_var *outs[3] = {u, s, vh};
  for (int k = 0; n && k < 3; k++) {
    vkt_node_save(n, k, outs[k], true, k);
    vkt_node_output(n, k, outs[k]);
  }
  if (n)
    vkt_node_decref(n);
  return st;
}

/* ---- matrix norms of singular values ---- */

static vkt_status check_norm(const vkt_tensor *a, int64_t d0, int64_t d1, int r[2]) {
  vkt_status st;
  if (a->ndim < 2)
    return vkt_fail(VKT_ERR_RUNTIME, "linalg.matrix_norm: The input tensor A must have at least 2 dimensions.");
  if (!vkt_dtypes[a->dtype].is_float)
    return vkt_fail(VKT_ERR_RUNTIME, "linalg.matrix_norm: Expected a floating point or complex tensor as input. Got %s",
                    vkt_dtypes[a->dtype].torch_name);
  if ((st = vkt_dim_wrap(d0, a->ndim, &r[0])) || (st = vkt_dim_wrap(d1, a->ndim, &r[1])))
    return st;
  if (r[0] == r[1])
    return vkt_fail(VKT_ERR_RUNTIME, "linalg.matrix_norm: dims must be different. Got (%lld, %lld)", (long long)d0,
                    (long long)d1);
  return VKT_OK;
}

/* The singular values of the matrices over dims r (moved last), in dtype (-1: a's). */
static vkt_status singular_values(const vkt_var *a, const int r[2], int dtype, vkt_var *out) {
  vkt_var cast = {0}, moved = {0};
  int64_t src[2] = {r[0], r[1]}, dst[2] = {a->t.ndim - 2, a->t.ndim - 1};
  vkt_status st = vkt_ag_cast(a, vkt_tensor_device(&a->t), dtype >= 0 ? (vkt_dtype)dtype : a->t.dtype,
                              VKT_PRESERVE_FORMAT, false, &cast);
  if (!st && !(st = vkt_ag_movedim(&cast, 2, src, dst, &moved)))
    st = vkt_ag_svdvals(&moved, out);
  vkt_var_release(&cast);
  vkt_var_release(&moved);
  return st;
}

vkt_status vkt_ag_matrix_norm_sv(const vkt_var *a, vkt_sv_norm ord, int64_t d0, int64_t d1, bool keepdim, int dtype,
                                 vkt_var *out) {
  vkt_var sv = {0}, reduced = {0};
  int r[2];
  *out = (vkt_var){0};
  vkt_status st = check_norm(&a->t, d0, d1, r);
  if (st || (st = singular_values(a, r, dtype, &sv)))
    return st;
  int64_t k = sv.t.shape[sv.t.ndim - 1], shape[VKT_MAX_DIMS];
  /* the largest of no singular values is 0 (PyTorch's); the smallest has no identity (PyTorch's amin error) */
  if (ord == VKT_SV_SMALLEST && k == 0) {
    st = vkt_fail(VKT_ERR_INDEX, "amin(): Expected reduction dim -1 to have non-zero size.");
    goto finish;
  }
  int id = ord == VKT_SV_SMALLEST ? VKT_OP_AMIN : ord == VKT_SV_LARGEST && k > 0 ? VKT_OP_AMAX : VKT_OP_SUM;
  const char *name = id == VKT_OP_SUM ? "sum" : id == VKT_OP_AMAX ? "amax" : "amin";
  uint32_t last = 1u << (sv.t.ndim - 1);
  if ((st = vkt_ag_reduce(id, &sv, last, false, -1, 0, false, name, false, keepdim ? &reduced : out)) || !keepdim)
    goto finish;
  for (int d = 0; d < a->t.ndim; d++)
    shape[d] = d == r[0] || d == r[1] ? 1 : a->t.shape[d];
  st = vkt_ag_reshape(&reduced, a->t.ndim, shape, false, out);
finish:
  vkt_var_release(&sv);
  vkt_var_release(&reduced);
  return st;
}
