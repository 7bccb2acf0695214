/* cpu/svd.c: the one-sided Jacobi SVD of each matrix of a batch, in double whatever the dtype (float32
 * results are then exact to rounding): the cpu device's kernel and the reference of shaders/svd.comp, which
 * runs the same steps. Rotations orthogonalise the columns of L (A, or A^T when A is wide), accumulated in
 * J; the column norms are the singular values, the normalised columns one set of singular vectors and J
 * the other. */
#include <float.h>
#include <math.h>
#include <stdlib.h>

#include "../linalg.h"
#include "floats.h"
#include "threads.h"

/* One matrix in scratch memory: L is r x cl (row-major; its first c columns are the data), J is c x c. */
typedef struct {
  int64_t r, c, cl;
  double *l, *j, *s;
} svd_work;

/* Rotates columns p and q of an nrows-row matrix (row length ld) by (cs, sn). */
static void rotate(double *x, int64_t nrows, int64_t ld, int64_t p, int64_t q, double cs, double sn) {
  for (int64_t i = 0; i < nrows; i++) {
    double a = x[i * ld + p], b = x[i * ld + q];
    x[i * ld + p] = cs * a - sn * b;
    x[i * ld + q] = sn * a + cs * b;
  }
}

/* Zeroes the inner product of columns p and q of L; false where they are already orthogonal to rounding. */
static bool orthogonalise(svd_work *w, int64_t p, int64_t q) {
  double alpha = 0, beta = 0, gamma = 0;
  for (int64_t i = 0; i < w->r; i++) {
    double a = w->l[i * w->cl + p], b = w->l[i * w->cl + q];
    alpha += a * a, beta += b * b, gamma += a * b;
  }
  if (!(fabs(gamma) > DBL_EPSILON * sqrt(alpha) * sqrt(beta)))
    return false;
  double zeta = (beta - alpha) / (2 * gamma);
  double t = copysign(1.0, zeta) / (fabs(zeta) + hypot(1.0, zeta)); /* the smaller root: the rotation stays small */
  double cs = 1 / sqrt(1 + t * t), sn = cs * t;
  rotate(w->l, w->r, w->cl, p, q, cs, sn);
  rotate(w->j, w->c, w->c, p, q, cs, sn);
  return true;
}

static void swap_columns(double *x, int64_t nrows, int64_t ld, int64_t p, int64_t q) {
  for (int64_t i = 0; i < nrows; i++) {
    double t = x[i * ld + p];
    x[i * ld + p] = x[i * ld + q];
    x[i * ld + q] = t;
  }
}

/* Column col of L := a unit vector orthogonal to columns [0, col): the standard basis vector with the
 * largest part outside their span, projected out twice (once is not enough in floating point). */
static void complete(svd_work *w, int64_t col) {
  int64_t best = 0;
  double best_rest = -1;
  for (int64_t e = 0; e < w->r; e++) {
    double rest = 1;
    for (int64_t k = 0; k < col; k++)
      rest -= w->l[e * w->cl + k] * w->l[e * w->cl + k];
    if (rest > best_rest)
      best = e, best_rest = rest;
  }
  for (int64_t i = 0; i < w->r; i++)
    w->l[i * w->cl + col] = i == best;
  for (int pass = 0; pass < 2; pass++)
    for (int64_t k = 0; k < col; k++) {
      double d = 0;
      for (int64_t i = 0; i < w->r; i++)
        d += w->l[i * w->cl + k] * w->l[i * w->cl + col];
      for (int64_t i = 0; i < w->r; i++)
        w->l[i * w->cl + col] -= d * w->l[i * w->cl + k];
    }
  double norm = 0;
  for (int64_t i = 0; i < w->r; i++)
    norm += w->l[i * w->cl + col] * w->l[i * w->cl + col];
  for (int64_t i = 0; i < w->r; i++)
    w->l[i * w->cl + col] /= sqrt(norm);
}

/* Jacobi sweeps until no pair rotates, then S (descending) and the unit columns of L. */
static void decompose(svd_work *w) {
  for (int64_t i = 0; i < w->c * w->c; i++)
    w->j[i] = i % (w->c + 1) == 0;
  bool rotated = true;
  for (int sweep = 0; sweep < VKT_SVD_MAX_SWEEPS && rotated; sweep++) {
    rotated = false;
    for (int64_t p = 0; p + 1 < w->c; p++)
      for (int64_t q = p + 1; q < w->c; q++)
        rotated |= orthogonalise(w, p, q);
  }
  for (int64_t p = 0; p < w->c; p++) {
    double s = 0;
    for (int64_t i = 0; i < w->r; i++)
      s += w->l[i * w->cl + p] * w->l[i * w->cl + p];
    w->s[p] = sqrt(s);
  }
  for (int64_t p = 0; p < w->c; p++) { /* selection sort: c is small next to the sweeps' cost */
    int64_t top = p;
    for (int64_t q = p + 1; q < w->c; q++)
      top = w->s[q] > w->s[top] ? q : top;
    if (top == p)
      continue;
    double t = w->s[p];
    w->s[p] = w->s[top], w->s[top] = t;
    swap_columns(w->l, w->r, w->cl, p, top);
    swap_columns(w->j, w->c, w->c, p, top);
  }
  for (int64_t p = 0; p < w->cl; p++) {
    if (p >= w->c || w->s[p] == 0) { /* a null direction (or full_matrices' extra columns): any orthogonal one */
      complete(w, p);
      continue;
    }
    for (int64_t i = 0; i < w->r; i++)
      w->l[i * w->cl + p] /= w->s[p];
  }
}

typedef struct {
  const vkt_op_args *a;
  vkt_svd_layout l;
  int64_t r, cl;   /* L's rows and row length */
  double *scratch; /* [batch][r * cl + k * k + k]: every matrix's L, J and S */
} svd_ctx;

/* Matrix b: A (or A^T when wide) into L, decomposed, written out as U, S, V. */
static void svd_one(const svd_ctx *x, int64_t b) {
  const vkt_svd_layout *l = &x->l;
  bool tall = l->m >= l->n;
  svd_work w = {.r = x->r, .c = l->k, .cl = x->cl};
  w.l = x->scratch + b * (w.r * w.cl + w.c * w.c + w.c), w.j = w.l + w.r * w.cl, w.s = w.j + w.c * w.c;
  int64_t a0 = b * l->m * l->n, o = b * l->size;
  for (int64_t i = 0; i < w.r; i++)
    for (int64_t j = 0; j < w.c; j++)
      w.l[i * w.cl + j] = vkt_float_load(x->a->in[0], a0 + (tall ? i * l->n + j : j * l->n + i));
  decompose(&w);
  int64_t l_at = o + (tall ? 0 : l->v_at), j_at = o + (tall ? l->v_at : 0);
  for (int64_t i = 0; i < w.r * w.cl; i++)
    vkt_float_store(x->a->out, l_at + i, w.l[i]);
  for (int64_t i = 0; i < w.c * w.c; i++)
    vkt_float_store(x->a->out, j_at + i, w.j[i]);
  for (int64_t p = 0; p < l->k; p++)
    vkt_float_store(x->a->out, o + l->s_at + p, w.s[p]);
}

static void svd_range(void *ctx, int64_t begin, int64_t end) {
  for (int64_t b = begin; b < end; b++)
    svd_one(ctx, b);
}

vkt_status vkt_cpu_svd(const vkt_op *op, const vkt_op_args *a) {
  (void)op;
  const vkt_tensor *in = a->in[0];
  svd_ctx x = {.a = a};
  vkt_svd_layout_of(in->shape[1], in->shape[2], a->iparam[0] != 0, &x.l);
  bool tall = x.l.m >= x.l.n;
  x.r = tall ? x.l.m : x.l.n, x.cl = tall ? x.l.cu : x.l.cv;
  size_t per = (size_t)(x.r * x.cl + x.l.k * x.l.k + x.l.k);
  if (!(x.scratch = malloc(sizeof(double) * per * (size_t)in->shape[0] + 1)))
    return vkt_fail(VKT_ERR_NOMEM, "out of host memory for the SVD of %lld matrices", (long long)in->shape[0]);
  int64_t cost = x.l.m * x.l.n * x.l.k + 1; /* about one sweep's multiply-adds */
  vkt_parallel_for(in->shape[0], cost >= VKT_GRAIN ? 1 : VKT_GRAIN / cost, svd_range, &x);
  free(x.scratch);
  return VKT_OK;
}
