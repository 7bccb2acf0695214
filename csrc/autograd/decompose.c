/* decompose.c (autograd): linalg.qr and linalg.eigh / eigvalsh over ops/decompose.c, with PyTorch's gradients
 * written with the differentiable entry points (so create_graph records them): linalg_qr_backward (as
 * TensorFlow's QrGrad states it, the same matrix) and linalg_eig_backward's symmetric case. */
#include "../ops/linalg.h"
#include "formula.h"
#include "linalg.h"
#include "shape.h"

static const vkt_var *mT(vkt_bw *b, const vkt_var *x) { return transpose(b, x, -2, -1); }


static const vkt_var *tri(vkt_bw *b, const vkt_var *x, bool upper, int64_t diagonal) {
  vkt_var out = {0};
  return x ? keep(b, vkt_ag_tri(x, upper, diagonal, &out), &out) : NULL;
}

/* x R^-T, R upper triangular. */
static const vkt_var *right_rinv_t(vkt_bw *b, const vkt_var *x, const vkt_var *r) {
  vkt_var out = {0};
  const vkt_var *rt = mT(b, r);
  return x && rt ? keep(b, vkt_ag_solve_triangular(rt, x, false, false, false, &out), &out) : NULL;
}

/* ---- qr: saved 0 Q, 1 R (outputs); iv[0]: the mode (0 reduced, 1 complete, 2 r). ---- */

/* gA of A = Q R with R square (m >= n, reduced): Q (gR + tril(skew(Q^T gQ) + skew(R gR^T)) R^-T) +
 * (gQ - Q Q^T gQ) R^-T, skew(X) = X - X^T. */
static const vkt_var *qr_deep(vkt_bw *b, const vkt_var *q, const vkt_var *r, const vkt_var *gq, const vkt_var *gr) {
  const vkt_var *qdq = matmul(b, mT(b, q), gq), *rdr = matmul(b, r, mT(b, gr));
  const vkt_var *low = tri(b, add(b, sub(b, qdq, mT(b, qdq)), sub(b, rdr, mT(b, rdr))), false, 0);
  const vkt_var *ga = matmul(b, q, add(b, gr, right_rinv_t(b, low, r)));
  return add(b, ga, right_rinv_t(b, sub(b, gq, matmul(b, q, qdq)), r));
}

static void qr_backward(vkt_bw *b) {
  const vkt_shape_info *a = IN(b, 0);
  int64_t m = a->shape[a->ndim - 2], n = a->shape[a->ndim - 1];
  int mode = (int)b->n->iv[0];
  if (mode == 2) {
    b->st = vkt_fail(VKT_ERR_RUNTIME, "The derivative of linalg.qr depends on Q, which is not computed when "
                     "mode='r'. Please use linalg.qr(A, mode='reduced') if you are going to differentiate through "
                     "linalg.qr.");
    return;
  }
  if (mode == 1 && m > n) {
    b->st = vkt_fail(VKT_ERR_RUNTIME, "The QR decomposition is not differentiable when mode='complete' and "
                     "nrows > ncols.");
    return;
  }
  const vkt_var *q = S(b, 0), *r = S(b, 1), *gq = G(b, 0), *gr = G(b, 1);
  if (m >= n) {
    SET(b, 0, qr_deep(b, q, r, gq, gr));
    return;
  }
  /* wide: A = [X | Y], R = [U | V] with X = Q U, Y = Q V */
  const vkt_var *u = narrow(b, r, -1, 0, m), *v = narrow(b, r, -1, m, n - m);
  const vkt_var *gu = narrow(b, gr, -1, 0, m), *gv = narrow(b, gr, -1, m, n - m);
  const vkt_var *gx = qr_deep(b, q, u, add(b, gq, matmul(b, matmul(b, q, v), mT(b, gv))), gu);
  const vkt_var *gy = matmul(b, q, gv);
  vkt_var out = {0};
  const vkt_var *both[2] = {gx, gy};
  SET(b, 0, gx && gy ? keep(b, vkt_ag_cat(2, both, -1, &out), &out) : NULL);
}
static const vkt_fn qr_fn = {"LinalgQrBackward0", qr_backward};

vkt_status vkt_ag_qr(const vkt_var *a, int mode, vkt_var *q, vkt_var *r) {
  *q = *r = (vkt_var){0};
  vkt_status st = vkt_qr(&a->t, mode, &q->t, &r->t);
  vkt_node *node = st ? NULL : vkt_node_begin(&qr_fn, 1, &a, 2);
  if (node) {
    node->iv[0] = mode;
    if (mode != 2) {
      vkt_node_save(node, 0, q, true, 0);
      vkt_node_output(node, 0, q);
    }
    vkt_node_save(node, 1, r, true, 1);
    vkt_node_output(node, 1, r);
    vkt_node_decref(node);
  }
  return st;
}

/* ---- eigh: saved 0 w, 1 V (outputs); gA = V (diag(gw) + skew(V^T gV) / 2 / E) V^T, E[i][j] = w[j] - w[i]
 * off the diagonal (PyTorch's linalg_eig_backward for a Hermitian A). ---- */

static void eigh_backward(vkt_bw *b) {
  const vkt_var *w = S(b, 0), *v = S(b, 1);
  vkt_var eye = {0};
  int64_t n = w ? w->t.shape[w->t.ndim - 1] : 0;
  const vkt_var *i = w ? keep(b, vkt_eye(&eye.t, vkt_tensor_device(&w->t), w->t.dtype, n, n), &eye) : NULL;
  const vkt_var *vgv = matmul(b, mT(b, v), G(b, 1));
  const vkt_var *e = add(b, sub(b, lift(b, w, true), lift(b, w, false)), i);
  const vkt_var *core = dvd(b, muls(b, sub(b, vgv, mT(b, vgv)), 0.5), e);
  core = add(b, core, mul(b, i, lift(b, G(b, 0), true)));
  SET(b, 0, matmul(b, v, matmul(b, core, mT(b, v))));
}
static const vkt_fn eigh_fn = {"LinalgEighBackward0", eigh_backward};

vkt_status vkt_ag_eigh(const vkt_var *a, bool upper, const char *name, vkt_var *w, vkt_var *v) {
  *w = *v = (vkt_var){0};
  vkt_status st = vkt_eigh(&a->t, upper, name, &w->t, &v->t);
  vkt_node *node = st ? NULL : vkt_node_begin(&eigh_fn, 1, &a, 2);
  vkt_var *outs[2] = {w, v};
  for (int k = 0; node && k < 2; k++) {
    vkt_node_save(node, k, outs[k], true, k);
    vkt_node_output(node, k, outs[k]);
  }
  if (node)
    vkt_node_decref(node);
  return st;
}
