/* solve.c (autograd): linalg.solve, inv, det, slogdet, cholesky, solve_triangular and lu_factor over the
 * factorisations of ops/solve.c, with PyTorch's checks and its derivatives.yaml formulas written with these
 * same entry points (so create_graph records them): solve and inv: gB = A^-H g, gA = -gB X^H; det:
 * g det A^-H; slogdet: g_logabsdet A^-H; cholesky: PyTorch's cholesky_backward; solve_triangular: its
 * linalg_solve_triangular_backward; lu_factor (square): its lu_factor_ex_backward. */
#include <math.h>

#include "../ops/linalg.h"
#include "../ops/ops.h"
#include "../ops/reduce.h"
#include "../ops/shape.h"
#include "formula.h"
#include "linalg.h"
#include "shape.h"

/* ---- on tensors ---- */

static int64_t rows(const vkt_tensor *t) { return t->shape[t->ndim - 2]; }
static int64_t cols(const vkt_tensor *t) { return t->shape[t->ndim - 1]; }

/* The batch dims of a and b (all but their last two) broadcast: nd dims into shape. PyTorch's error names B's
 * dims first (its "tensor a"). */
static vkt_status batch_shape(const vkt_tensor *a, const vkt_tensor *b, int *nd, int64_t *shape) {
  int na = a->ndim - 2, nb = b->ndim - 2;
  *nd = na > nb ? na : nb;
  for (int d = 0; d < *nd; d++) {
    int da = d - (*nd - na), db = d - (*nd - nb);
    int64_t x = da >= 0 ? a->shape[da] : 1, y = db >= 0 ? b->shape[db] : 1;
    if (x != y && x != 1 && y != 1)
      return vkt_fail(VKT_ERR_RUNTIME, "The size of tensor a (%lld) must match the size of tensor b (%lld) at "
                      "non-singleton dimension %d", (long long)y, (long long)x, d);
    shape[d] = x == 1 ? y : x;
  }
  return VKT_OK;
}

/* x expanded to batch + its last two dims (transposed when t), contiguous, as [prod(batch), r, c]. */
static vkt_status flat(const vkt_tensor *x, int nd, const int64_t *batch, bool t, vkt_tensor *out) {
  vkt_tensor tr = {0}, e = {0}, dense = {0};
  int64_t shape[VKT_MAX_DIMS], f[3] = {1, 0, 0};
  for (int d = 0; d < nd; d++)
    shape[d] = batch[d], f[0] *= batch[d];
  vkt_status st = t ? vkt_transpose(&tr, x, -2, -1) : (vkt_tensor_share(&tr, x), VKT_OK);
  shape[nd] = f[1] = rows(&tr), shape[nd + 1] = f[2] = cols(&tr);
  if (!st && !(st = vkt_expand(&e, &tr, nd + 2, shape)) && !(st = vkt_contiguous(&dense, &e)))
    st = vkt_view(out, &dense, 3, f);
  vkt_tensor_release(&tr);
  vkt_tensor_release(&e);
  vkt_tensor_release(&dense);
  return st;
}

/* x [prod(batch), r, c] viewed as batch + [r, c], transposed back when t. */
static vkt_status unflat(const vkt_tensor *x, int nd, const int64_t *batch, bool t, vkt_tensor *out) {
  vkt_tensor v = {0};
  int64_t shape[VKT_MAX_DIMS];
  for (int d = 0; d < nd; d++)
    shape[d] = batch[d];
  shape[nd] = x->shape[1], shape[nd + 1] = x->shape[2];
  vkt_status st = vkt_view(t ? &v : out, x, nd + 2, shape);
  if (!st && t)
    st = vkt_transpose(out, &v, -2, -1);
  vkt_tensor_release(&v);
  return st;
}

static vkt_status same_dtype(const vkt_tensor *a, const vkt_tensor *b, const char *name) {
  if (a->dtype == b->dtype)
    return VKT_OK;
  return vkt_fail(VKT_ERR_RUNTIME, "%s: Expected A and B to have the same dtype, but found A of type %s and B of "
                  "type %s instead", name, vkt_dtypes[a->dtype].torch_name, vkt_dtypes[b->dtype].torch_name);
}

/* B's rows (left) or columns must be A's size. */
static vkt_status shapes_fit(const vkt_tensor *a, const vkt_tensor *b, bool left, const char *name) {
  if ((left ? rows(b) : cols(b)) == rows(a))
    return VKT_OK;
  return vkt_fail(VKT_ERR_RUNTIME, "%s: Incompatible shapes of A and B for the equation %s = B (%lldx%lld and "
                  "%lldx%lld)", name, left ? "AX" : "XA", (long long)rows(a), (long long)cols(a), (long long)rows(b),
                  (long long)cols(b));
}

/* X with A X = B (left) or X A = B, A triangular, batch dims broadcast; X A = B is solved as A^T X^T = B^T. */
static vkt_status tri_solve(const vkt_tensor *a, const vkt_tensor *b, bool upper, bool left, bool unit,
                            vkt_tensor *x) {
  vkt_tensor fa = {0}, fb = {0}, fx = {0};
  int nd;
  int64_t batch[VKT_MAX_DIMS];
  vkt_status st = batch_shape(a, b, &nd, batch);
  if (!st && !(st = flat(a, nd, batch, !left, &fa)) && !(st = flat(b, nd, batch, !left, &fb))) {
    unsigned mode = ((upper == left) ? VKT_TRSM_UPPER : 0) | (unit ? VKT_TRSM_UNIT : 0);
    if (!(st = vkt_trsm(&fa, rows(&fa) * cols(&fa), &fb, NULL, mode, &fx)))
      st = unflat(&fx, nd, batch, !left, x);
  }
  vkt_tensor_release(&fa);
  vkt_tensor_release(&fb);
  vkt_tensor_release(&fx);
  return st;
}

/* X with A X = B (left) or X A = B through A's LU, batch dims broadcast; check >= 0: PyTorch's error of that
 * vkt_linalg_check for a singular A (batched: A had batch dims), else inf or NaN as the solves give; info, when
 * given: LU's info (int32, the broadcast batch shape), new. */
static vkt_status lu_solve(const vkt_tensor *a, const vkt_tensor *b, bool left, int check, bool batched,
                           vkt_tensor *x, vkt_tensor *info_out) {
  vkt_tensor fa = {0}, fb = {0}, fx = {0}, block = {0}, piv = {0}, info = {0};
  int nd;
  int64_t batch[VKT_MAX_DIMS], n = rows(a);
  if (info_out) /* released below where this fails */
    *info_out = (vkt_tensor){0};
  vkt_status st = batch_shape(a, b, &nd, batch);
  if (st || (st = flat(a, nd, batch, !left, &fa)) || (st = flat(b, nd, batch, !left, &fb)) ||
      (st = vkt_lu_blocks(&fa, "linalg.solve", &block, &piv)))
    goto finish;
  if ((check >= 0 || info_out) && (st = vkt_slice(&info, &piv, 1, n, n + 1, 1)))
    goto finish;
  if (check >= 0 && fa.shape[0] > 0 && (st = vkt_linalg_info_check(&info, check, batched)))
    goto finish;
  if (info_out) {
    vkt_tensor dense = {0};
    if (!(st = vkt_clone(&dense, &info)))
      st = vkt_view(info_out, &dense, nd, batch);
    vkt_tensor_release(&dense);
    if (st)
      goto finish;
  }
  if (!(st = vkt_trsm(&block, n * n + VKT_LU_EXTRA, &fb, &piv, VKT_TRSM_LU, &fx)))
    st = unflat(&fx, nd, batch, !left, x);
finish:
  if (st && info_out)
    vkt_tensor_release(info_out);
  vkt_tensor_release(&fa);
  vkt_tensor_release(&fb);
  vkt_tensor_release(&fx);
  vkt_tensor_release(&block);
  vkt_tensor_release(&piv);
  vkt_tensor_release(&info);
  return st;
}

/* ---- solve_triangular: saved 0 A, 1 X; iv: upper, left, unitriangular ---- */

static const vkt_var *mH(vkt_bw *b, const vkt_var *x) { return transpose(b, x, -2, -1); }

static const vkt_var *tri(vkt_bw *b, const vkt_var *x, bool upper, int64_t diagonal) {
  vkt_var out = {0};
  return x ? keep(b, vkt_ag_tri(x, upper, diagonal, &out), &out) : NULL;
}

static const vkt_var *solve_tri(vkt_bw *b, const vkt_var *a, const vkt_var *y, bool upper, bool left, bool unit) {
  vkt_var out = {0};
  return a && y ? keep(b, vkt_ag_solve_triangular(a, y, upper, left, unit, &out), &out) : NULL;
}

static void solve_triangular_backward(vkt_bw *b) {
  const vkt_var *a = S(b, 0), *x = S(b, 1);
  bool upper = b->n->iv[0], left = b->n->iv[1], unit = b->n->iv[2];
  const vkt_var *gb = solve_tri(b, mH(b, a), G(b, 0), !upper, left, unit);
  if (NEED(b, 0)) {
    const vkt_var *ga = muls(b, left ? matmul(b, gb, mH(b, x)) : matmul(b, mH(b, x), gb), -1);
    SET(b, 0, tri(b, ga, upper, upper ? unit : -(int64_t)unit));
  }
  SET(b, 1, gb);
}
static const vkt_fn solve_triangular_fn = {"LinalgSolveTriangularBackward0", solve_triangular_backward};

vkt_status vkt_ag_solve_triangular(const vkt_var *a, const vkt_var *b, bool upper, bool left, bool unit,
                                   vkt_var *out) {
  const char *name = "linalg.solve_triangular";
  *out = (vkt_var){0};
  vkt_status st = vkt_linalg_square_check(&a->t, name);
  if (!st && b->t.ndim < 2)
    st = vkt_fail(VKT_ERR_RUNTIME, "%s: The input tensor B must have at least 2 dimensions.", name);
  if (st || (st = same_dtype(&a->t, &b->t, name)) || (st = shapes_fit(&a->t, &b->t, left, name)) ||
      (st = tri_solve(&a->t, &b->t, upper, left, unit, &out->t)))
    return st;
  const vkt_var *in[2] = {a, b};
  vkt_node *n = vkt_node_begin(&solve_triangular_fn, 2, in, 1);
  if (n) {
    n->iv[0] = upper, n->iv[1] = left, n->iv[2] = unit;
    vkt_node_save(n, 0, a, false, 0);
    vkt_node_save(n, 1, out, true, 0);
    vkt_node_output(n, 0, out);
    vkt_node_decref(n);
  }
  return VKT_OK;
}

/* ---- solve: saved 0 A, 1 X; iv: left, vector (B was a vector, X is one) ---- */

static const vkt_var *solve_var(vkt_bw *b, const vkt_var *a, const vkt_var *y, bool left) {
  vkt_var out = {0};
  return a && y ? keep(b, vkt_ag_linalg_solve(a, y, left, -1, NULL, &out), &out) : NULL;
}

static const vkt_var *unsqueeze_last(vkt_bw *b, const vkt_var *x) {
  int64_t shape[VKT_MAX_DIMS];
  if (!x)
    return NULL;
  for (int d = 0; d < x->t.ndim; d++)
    shape[d] = x->t.shape[d];
  shape[x->t.ndim] = 1;
  return reshape(b, x, x->t.ndim + 1, shape);
}

static void solve_backward(vkt_bw *b) {
  const vkt_var *a = S(b, 0), *x = S(b, 1);
  bool left = b->n->iv[0], vector = b->n->iv[1];
  const vkt_var *gb = solve_var(b, mH(b, a), G(b, 0), left);
  if (NEED(b, 0)) {
    const vkt_var *x_ = vector ? unsqueeze_last(b, x) : x, *gb_ = vector ? unsqueeze_last(b, gb) : gb;
    SET(b, 0, muls(b, left ? matmul(b, gb_, mH(b, x_)) : matmul(b, mH(b, x_), gb_), -1));
  }
  SET(b, 1, gb);
}
static const vkt_fn solve_fn = {"LinalgSolveExBackward0", solve_backward};

/* B is a vector (PyTorch's linalg_solve_is_vector_rhs). */
static bool vector_rhs(const vkt_tensor *a, const vkt_tensor *b) {
  if (b->ndim == 1)
    return true;
  if (b->ndim != a->ndim - 1)
    return false;
  for (int d = 0; d < b->ndim; d++)
    if (b->shape[d] != a->shape[d])
      return false;
  return true;
}

vkt_status vkt_ag_linalg_solve(const vkt_var *a, const vkt_var *b, bool left, int check, vkt_tensor *info,
                               vkt_var *out) {
  const char *name = check >= 0 && (check & ~VKT_LINALG_EX) == VKT_LINALG_INV ? "linalg.inv" : "linalg.solve";
  vkt_tensor b2 = {0}, x2 = {0};
  *out = (vkt_var){0};
  vkt_status st = vkt_linalg_square_check(&a->t, name);
  if (st || (st = same_dtype(&a->t, &b->t, name)))
    return st;
  bool vector = vector_rhs(&a->t, &b->t);
  int64_t shape[VKT_MAX_DIMS];
  for (int d = 0; d < b->t.ndim; d++)
    shape[d] = b->t.shape[d];
  shape[b->t.ndim] = 1;
  if (vector ? (st = vkt_view(&b2, &b->t, b->t.ndim + 1, shape)) : (vkt_tensor_share(&b2, &b->t), VKT_OK))
    goto finish;
  if ((st = shapes_fit(&a->t, &b2, left, name)) || (st = lu_solve(&a->t, &b2, left, check, a->t.ndim > 2, &x2, info)))
    goto finish;
  if (vector) {
    if ((st = vkt_contiguous(&out->t, &x2)) || (st = vkt_view(&b2, &out->t, x2.ndim - 1, x2.shape)))
      goto finish;
    vkt_tensor_release(&out->t);
    vkt_tensor_share(&out->t, &b2);
  } else {
    vkt_tensor_share(&out->t, &x2);
  }
  const vkt_var *in[2] = {a, b};
  vkt_node *n = vkt_node_begin(&solve_fn, 2, in, 1);
  if (n) {
    n->iv[0] = left, n->iv[1] = vector;
    vkt_node_save(n, 0, a, false, 0);
    vkt_node_save(n, 1, out, true, 0);
    vkt_node_output(n, 0, out);
    vkt_node_decref(n);
  }
finish:
  vkt_tensor_release(&b2);
  vkt_tensor_release(&x2);
  if (st) {
    vkt_var_release(out);
    if (info)
      vkt_tensor_release(info);
  }
  return st;
}

/* A^-1 as the solve of A X = I (I expanded to A's shape, so that a batch [n] is never taken for a vector right
 * side); check and info as lu_solve's. */
static vkt_status inverse(const vkt_var *a, int check, vkt_tensor *info, vkt_var *out) {
  vkt_tensor e = {0};
  vkt_var eye = {0};
  *out = (vkt_var){0};
  vkt_status st = vkt_linalg_square_check(&a->t, "linalg.inv");
  if (!st && !(st = vkt_eye(&e, vkt_tensor_device(&a->t), a->t.dtype, rows(&a->t), rows(&a->t))) &&
      !(st = vkt_expand(&eye.t, &e, a->t.ndim, a->t.shape)))
    st = vkt_ag_linalg_solve(a, &eye, true, check, info, out);
  vkt_tensor_release(&e);
  vkt_var_release(&eye);
  return st;
}

vkt_status vkt_ag_inv_ex(const vkt_var *a, int check, vkt_tensor *info, vkt_var *out) {
  vkt_status st = inverse(a, check, info, out);
  if (!st)
    vkt_ag_rename(out, "LinalgInvExBackward0");
  return st;
}

vkt_status vkt_ag_inv(const vkt_var *a, vkt_var *out) {
  vkt_status st = inverse(a, VKT_LINALG_INV, NULL, out);
  if (!st)
    vkt_ag_rename(out, "LinalgInvExBackward0");
  return st;
}

/* ---- det and slogdet: saved 0 A, 1 det; iv[0]: slogdet (its gradient is g_logabsdet A^-H) ---- */

/* A^-H, or inf and NaN for a singular A (PyTorch's det backward goes through an SVD there instead). */
static const vkt_var *inv_h(vkt_bw *b, const vkt_var *a) {
  vkt_var out = {0};
  return a ? mH(b, keep(b, inverse(a, -1, NULL, &out), &out)) : NULL;
}

/* x [...] as [..., 1, 1]. */
static const vkt_var *lift2(vkt_bw *b, const vkt_var *x) { return unsqueeze_last(b, unsqueeze_last(b, x)); }

static void det_backward(vkt_bw *b) {
  const vkt_var *a = S(b, 0);
  const vkt_var *g = b->n->iv[0] ? G(b, 1) : mul(b, G(b, 0), S(b, 1));
  SET(b, 0, mul(b, lift2(b, g), inv_h(b, a)));
}
static const vkt_fn det_fn = {"LinalgDetBackward0", det_backward};
static const vkt_fn slogdet_fn = {"LinalgSlogdetBackward0", det_backward};

/* Entry `at` (0: det, 1: sign, 2: log|det|) of each LU block, as a new tensor of A's batch shape. */
static vkt_status lu_entry(const vkt_tensor *a, const vkt_tensor *block, int at, vkt_tensor *out) {
  vkt_tensor v = {0}, dense = {0};
  int64_t n = rows(a), shape[1] = {block->shape[0]}, stride[1] = {block->shape[1]};
  vkt_status st = vkt_as_strided(&v, block, 1, shape, stride, block->offset + n * n + at);
  if (!st && !(st = vkt_clone(&dense, &v)))
    st = vkt_view(out, &dense, a->ndim - 2, a->shape);
  vkt_tensor_release(&v);
  vkt_tensor_release(&dense);
  return st;
}

/* det (slog false) or (sign, logabsdet). */
static vkt_status determinant(const vkt_var *a, bool slog, vkt_var *first, vkt_var *second) {
  vkt_tensor block = {0}, piv = {0};
  const char *name = slog ? "linalg.slogdet" : "linalg.det";
  vkt_status st = vkt_linalg_square_check(&a->t, name);
  *first = (vkt_var){0};
  if (slog)
    *second = (vkt_var){0};
  if (st || (st = vkt_lu_blocks(&a->t, name, &block, &piv)))
    return st;
  if (rows(&a->t) == 0) /* the empty product: det 1, sign 1, log|det| 0 */
    for (int k = 0; k < VKT_LU_EXTRA && !st; k++) {
      int64_t shape[2] = {block.shape[0], 1}, stride[2] = {block.shape[1], 1};
      vkt_tensor v = {0};
      if (!(st = vkt_as_strided(&v, &block, 2, shape, stride, block.offset + k)))
        st = vkt_fill_(&v, num(k < 2 ? 1 : 0));
      vkt_tensor_release(&v);
    }
  if (!st && !(st = lu_entry(&a->t, &block, slog ? 1 : 0, &first->t)) && slog)
    st = lu_entry(&a->t, &block, 2, &second->t);
  vkt_node *n = st ? NULL : vkt_node_begin(slog ? &slogdet_fn : &det_fn, 1, &a, slog ? 2 : 1);
  if (n) {
    n->iv[0] = slog;
    vkt_node_save(n, 0, a, false, 0);
    if (!slog)
      vkt_node_save(n, 1, first, true, 0);
    vkt_node_output(n, 0, first);
    if (slog)
      vkt_node_output(n, 1, second);
    vkt_node_decref(n);
  }
  vkt_tensor_release(&block);
  vkt_tensor_release(&piv);
  return st;
}

vkt_status vkt_ag_det(const vkt_var *a, vkt_var *out) { return determinant(a, false, out, NULL); }

vkt_status vkt_ag_slogdet(const vkt_var *a, vkt_var *sign, vkt_var *logabsdet) {
  return determinant(a, true, sign, logabsdet);
}

/* ---- cholesky: saved 0 L (or U); iv[0]: upper ---- */

static void cholesky_backward(vkt_bw *b) {
  bool upper = b->n->iv[0];
  const vkt_var *l = upper ? mH(b, S(b, 0)) : S(b, 0), *gl = upper ? mH(b, G(b, 0)) : G(b, 0);
  const vkt_var *ga = tri(b, matmul(b, mH(b, l), gl), false, 0);
  ga = muls(b, add(b, ga, mH(b, tri(b, ga, false, -1))), 0.5);
  ga = solve_tri(b, mH(b, l), ga, true, true, false);
  SET(b, 0, solve_tri(b, l, ga, false, false, false));
}
static const vkt_fn cholesky_fn = {"LinalgCholeskyExBackward0", cholesky_backward};

vkt_status vkt_ag_cholesky(const vkt_var *a, bool upper, int check, vkt_tensor *info_out, vkt_var *out) {
  vkt_tensor at = {0}, l = {0}, info = {0}, lt = {0};
  *out = (vkt_var){0};
  if (info_out) /* released below where this fails */
    *info_out = (vkt_tensor){0};
  vkt_status st = vkt_linalg_square_check(&a->t, "linalg.cholesky");
  /* the upper factor is from A's upper triangle: the lower one of A^T, transposed back */
  if (st || (st = upper ? vkt_transpose(&at, &a->t, -2, -1) : (vkt_tensor_share(&at, &a->t), VKT_OK)) ||
      (st = vkt_cholesky_blocks(&at, &l, &info)) ||
      (check >= 0 && (st = vkt_linalg_info_check(&info, check, a->t.ndim > 2))))
    goto finish;
  if (info_out && (st = vkt_view(info_out, &info, a->t.ndim - 2, a->t.shape)))
    goto finish;
  if ((st = vkt_view(&lt, &l, a->t.ndim, a->t.shape)))
    goto finish;
  if (upper) {
    vkt_tensor_release(&l);
    if ((st = vkt_transpose(&l, &lt, -2, -1)) || (st = vkt_contiguous(&out->t, &l)))
      goto finish;
  } else {
    vkt_tensor_share(&out->t, &lt);
  }
  vkt_node *n = vkt_node_begin(&cholesky_fn, 1, &a, 1);
  if (n) {
    n->iv[0] = upper;
    vkt_node_save(n, 0, out, true, 0);
    vkt_node_output(n, 0, out);
    vkt_node_decref(n);
  }
finish:
  if (st && info_out)
    vkt_tensor_release(info_out);
  vkt_tensor_release(&at);
  vkt_tensor_release(&l);
  vkt_tensor_release(&info);
  vkt_tensor_release(&lt);
  return st;
}

/* ---- lu and lu_factor: PyTorch's linalg_lu_backward for A = P L U, L [m, k] unit lower, U [k, n] upper:
 * square: gA = P L^-H (tril(L^H gL, -1) + triu(gU U^H)) U^-H; wide (m < n, U = [U1 | U2]): gA = P L^-H
 * ([tril(L^H gL - triu(gU) U^H, -1) U1^-H | 0] + triu(gU)); tall (L = [L1; L2]): gA = P ([L1^-H triu(gU U^H -
 * L^H tril(gL, -1)); 0] + tril(gL, -1)) U^-H. Only the structural parts of gL and gU take part. ---- */

static const vkt_var *eye_nm(vkt_bw *b, const vkt_var *like, int64_t n, int64_t m) {
  vkt_var out = {0};
  return like ? keep(b, vkt_eye(&out.t, vkt_tensor_device(&like->t), like->t.dtype, n, m), &out) : NULL;
}

/* x's entries [0, len) along dim (a differentiable slice). */
static const vkt_var *head(vkt_bw *b, const vkt_var *x, int64_t dim, int64_t len) {
  vkt_tensor view = {0};
  vkt_var out = {0};
  if (!x)
    return NULL;
  vkt_status st = vkt_slice(&view, &x->t, dim, 0, len, 1);
  if (!st)
    st = vkt_ag_view(x, &view, VKT_VIEW_STRIDED, NULL, "SliceBackward0", &out);
  return keep(b, st, &out);
}

static const vkt_var *lu_grad(vkt_bw *b, const vkt_var *p, const vkt_var *l, const vkt_var *u, const vkt_var *gl,
                              const vkt_var *gu) {
  if (!l || !u)
    return NULL;
  int64_t m = rows(&l->t), n = cols(&u->t), k = cols(&l->t);
  const vkt_var *ga;
  if (m == n) {
    ga = add(b, tri(b, matmul(b, mH(b, l), gl), false, -1), tri(b, matmul(b, gu, mH(b, u)), true, 0));
    ga = solve_tri(b, mH(b, u), ga, false, false, false);
    ga = solve_tri(b, mH(b, l), ga, true, true, true);
  } else if (m < n) {
    ga = sub(b, matmul(b, mH(b, l), gl), matmul(b, tri(b, gu, true, 0), mH(b, u)));
    ga = solve_tri(b, mH(b, head(b, u, -1, k)), tri(b, ga, false, -1), false, false, false);
    ga = add(b, matmul(b, ga, eye_nm(b, u, k, n)), tri(b, gu, true, 0));
    ga = solve_tri(b, mH(b, l), ga, true, true, true);
  } else {
    ga = tri(b, sub(b, matmul(b, gu, mH(b, u)), matmul(b, mH(b, l), tri(b, gl, false, -1))), true, 0);
    ga = solve_tri(b, mH(b, head(b, l, -2, k)), ga, true, true, true);
    ga = add(b, matmul(b, eye_nm(b, l, m, k), ga), tri(b, gl, false, -1));
    ga = solve_tri(b, mH(b, u), ga, false, false, false);
  }
  return matmul(b, p, ga);
}

/* P of pivots [..., k] for m rows, in like's dtype. */
static const vkt_var *permutation(vkt_bw *b, const vkt_var *piv, const vkt_var *like, int64_t m) {
  vkt_var out = {0};
  return piv && like ? keep(b, vkt_lu_permutation(&piv->t, m, like->t.dtype, &out.t), &out) : NULL;
}

/* lu_factor: saved 0 LU (output), 1 pivots. */
static void lu_factor_backward(vkt_bw *b) {
  const vkt_var *lu = S(b, 0), *g = G(b, 0);
  if (!lu)
    return;
  int64_t m = rows(&lu->t), n = cols(&lu->t), k = m < n ? m : n;
  const vkt_var *l = add(b, tri(b, head(b, lu, -1, k), false, -1), eye_nm(b, lu, m, k));
  const vkt_var *u = tri(b, head(b, lu, -2, k), true, 0);
  SET(b, 0, lu_grad(b, permutation(b, S(b, 1), lu, m), l, u, head(b, g, -1, k), head(b, g, -2, k)));
}
static const vkt_fn lu_factor_fn = {"LinalgLuFactorExBackward0", lu_factor_backward};

/* lu: saved 0 P, 1 L, 2 U (outputs 1 and 2; P has no gradient). */
static void lu_backward(vkt_bw *b) { SET(b, 0, lu_grad(b, S(b, 0), S(b, 1), S(b, 2), G(b, 1), G(b, 2))); }
static const vkt_fn lu_fn = {"LinalgLuBackward0", lu_backward};

/* A's LU blocks, and from them LU ([..., m, n], new), pivots ([..., k] int32, new) and info ([...] int32, new;
 * checked first when check >= 0, a vkt_linalg_check). */
static vkt_status lu_parts(const vkt_tensor *a, const char *name, int check, vkt_tensor *lu, vkt_tensor *pivots,
                           vkt_tensor *info) {
  vkt_tensor block = {0}, piv = {0}, v = {0}, dense = {0};
  vkt_status st = vkt_lu_blocks(a, name, &block, &piv);
  if (st)
    return st;
  int nd = a->ndim;
  int64_t m = rows(a), n = cols(a), k = m < n ? m : n, shape[2] = {block.shape[0], m * n},
          stride[2] = {block.shape[1], 1}, pshape[VKT_MAX_DIMS];
  for (int d = 0; d < nd - 1; d++)
    pshape[d] = a->shape[d];
  pshape[nd - 2] = k;
  if ((st = vkt_slice(&v, &piv, 1, k, k + 1, 1)) || (st = vkt_clone(&dense, &v)) ||
      (st = vkt_view(info, &dense, nd - 2, a->shape)))
    goto finish;
  if (check >= 0 && block.shape[0] > 0 && k > 0 && (st = vkt_linalg_info_check(info, check, nd > 2)))
    goto finish;
  vkt_tensor_release(&v);
  vkt_tensor_release(&dense);
  if ((st = vkt_as_strided(&v, &block, 2, shape, stride, block.offset)) || (st = vkt_clone(&dense, &v)) ||
      (st = vkt_view(lu, &dense, nd, a->shape)))
    goto finish;
  vkt_tensor_release(&v);
  vkt_tensor_release(&dense);
  if ((st = vkt_slice(&v, &piv, 1, 0, k, 1)) || (st = vkt_clone(&dense, &v)))
    goto finish;
  st = vkt_view(pivots, &dense, nd - 1, pshape);
finish:
  if (st) {
    vkt_tensor_release(lu);
    vkt_tensor_release(pivots);
    vkt_tensor_release(info);
  }
  vkt_tensor_release(&block);
  vkt_tensor_release(&piv);
  vkt_tensor_release(&v);
  vkt_tensor_release(&dense);
  return st;
}

vkt_status vkt_ag_lu_factor(const vkt_var *a, int check, vkt_var *lu, vkt_var *pivots, vkt_tensor *info) {
  vkt_tensor own = {0};
  *lu = *pivots = (vkt_var){0};
  const char *name = check >= 0 && (check & VKT_LINALG_EX) ? "torch.linalg.lu_factor_ex" : "torch.linalg.lu_factor";
  vkt_status st = lu_parts(&a->t, name, check, &lu->t, &pivots->t, info ? info : &own);
  vkt_tensor_release(&own);
  vkt_node *node = st ? NULL : vkt_node_begin(&lu_factor_fn, 1, &a, 1);
  if (node) {
    vkt_node_save(node, 0, lu, true, 0);
    vkt_node_save(node, 1, pivots, false, 0);
    vkt_node_output(node, 0, lu);
    vkt_node_decref(node);
  }
  return st;
}

vkt_status vkt_ag_lu(const vkt_var *a, vkt_var *p, vkt_var *l, vkt_var *u) {
  vkt_tensor lu = {0}, piv = {0}, info = {0}, v = {0}, t = {0}, e = {0};
  *p = *l = *u = (vkt_var){0};
  if (a->t.ndim < 2) {
    char got[160];
    vkt_shape_str(a->t.ndim, a->t.shape, got, sizeof got);
    return vkt_fail(VKT_ERR_RUNTIME, "linalg.lu: Expected tensor with 2 or more dimensions. Got size: %s instead",
                    got);
  }
  int64_t m = rows(&a->t), n = cols(&a->t), k = m < n ? m : n;
  vkt_status st = lu_parts(&a->t, "linalg.lu", -1, &lu, &piv, &info);
  if (st || (st = vkt_lu_permutation(&piv, m, a->t.dtype, &p->t)) || (st = vkt_slice(&v, &lu, -1, 0, k, 1)) ||
      (st = vkt_tri(&v, false, -1, &t)) || (st = vkt_eye(&e, vkt_tensor_device(&lu), lu.dtype, m, k)) ||
      (st = vkt_binary(VKT_OP_ADD, (vkt_operand){.t = &t}, (vkt_operand){.t = &e}, num(1), NULL, &l->t)))
    goto finish;
  vkt_tensor_release(&v);
  if ((st = vkt_slice(&v, &lu, -2, 0, k, 1)) || (st = vkt_tri(&v, true, 0, &u->t)))
    goto finish;
  vkt_node *node = vkt_node_begin(&lu_fn, 1, &a, 3);
  if (node) {
    vkt_node_save(node, 0, p, false, 0);
    vkt_node_save(node, 1, l, true, 1);
    vkt_node_save(node, 2, u, true, 2);
    vkt_node_output(node, 1, l);
    vkt_node_output(node, 2, u);
    vkt_node_decref(node);
  }
finish:
  if (st) {
    vkt_var_release(p);
    vkt_var_release(l);
    vkt_var_release(u);
  }
  vkt_tensor_release(&lu);
  vkt_tensor_release(&piv);
  vkt_tensor_release(&info);
  vkt_tensor_release(&v);
  vkt_tensor_release(&t);
  vkt_tensor_release(&e);
  return st;
}

/* logdet: log|det| where det > 0, NaN where it is negative (and -inf where 0), as PyTorch's. */
vkt_status vkt_ag_logdet(const vkt_var *a, vkt_var *out) {
  vkt_var sign = {0}, logabs = {0};
  vkt_tensor negative = {0};
  *out = (vkt_var){0};
  vkt_status st = determinant(a, true, &sign, &logabs);
  if (!st && !(st = vkt_binary(VKT_OP_LT, (vkt_operand){.t = &sign.t}, (vkt_operand){.s = num(0)}, num(1), NULL,
                               &negative)))
    st = vkt_ag_where(&negative, NULL, num(NAN), &logabs, num(0), out);
  vkt_var_release(&sign);
  vkt_var_release(&logabs);
  vkt_tensor_release(&negative);
  return st;
}
