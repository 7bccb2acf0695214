/* cpu/decompose.c: the Householder QR (LAPACK's geqr2 and org2r) and the cyclic Jacobi eigendecomposition of
 * a symmetric matrix, of each matrix of a batch, in double whatever the dtype: the cpu device's kernels and the
 * references of shaders/qr.comp and eigh.comp, which run the same steps. Layouts are linalg.h's. */
#include <float.h>
#include <math.h>
#include <stdlib.h>

#include "../linalg.h"
#include "floats.h"
#include "threads.h"

/* x := (I - tau v v^T) x for x the column c of an [.., ld] matrix from row j down, v = (1, w[j + 1:, j]). */
static void reflect(const double *w, int64_t ldw, double tau, double *x, int64_t ld, int64_t rows, int64_t j,
                    int64_t c) {
  double s = x[j * ld + c];
  for (int64_t i = j + 1; i < rows; i++)
    s += w[i * ldw + j] * x[i * ld + c];
  s *= tau;
  x[j * ld + c] -= s;
  for (int64_t i = j + 1; i < rows; i++)
    x[i * ld + c] -= s * w[i * ldw + j];
}

/* W ([m, n], in place) := its geqrf form, tau[k]; then q ([m, cq]) := H_0 ... H_{k-1} I[:, :cq]. */
static void qr_work(double *w, double *tau, double *q, int64_t m, int64_t n, int64_t cq) {
  int64_t k = m < n ? m : n;
  for (int64_t j = 0; j < k; j++) {
    double alpha = w[j * n + j], xnorm = 0;
    for (int64_t i = j + 1; i < m; i++)
      xnorm = hypot(xnorm, w[i * n + j]);
    tau[j] = 0;
    if (xnorm == 0) /* nothing below the diagonal: H = I, R's entry keeps its sign (dlarfg) */
      continue;
    double beta = -copysign(hypot(alpha, xnorm), alpha), scale = 1 / (alpha - beta);
    tau[j] = (beta - alpha) / beta;
    for (int64_t i = j + 1; i < m; i++)
      w[i * n + j] *= scale;
    w[j * n + j] = beta;
    for (int64_t c = j + 1; c < n; c++)
      reflect(w, n, tau[j], w, n, m, j, c);
  }
  for (int64_t i = 0; i < m * cq; i++)
    q[i] = i / cq == i % cq;
  for (int64_t j = k - 1; j >= 0 && cq > 0; j--)
    for (int64_t c = j; c < cq && tau[j] != 0; c++) /* columns left of j are still the identity's */
      reflect(w, n, tau[j], q, cq, m, j, c);
}

/* Rotates rows and columns p, q of the symmetric s ([n, n]) so that s[p][q] = 0, and the columns of v. */
static void jacobi_rotate(double *s, double *v, int64_t n, int64_t p, int64_t q) {
  double apq = s[p * n + q], theta = (s[q * n + q] - s[p * n + p]) / (2 * apq);
  double t = copysign(1.0, theta) / (fabs(theta) + hypot(1.0, theta)); /* the smaller angle */
  double c = 1 / sqrt(1 + t * t), sn = t * c;
  for (int64_t r = 0; r < n; r++) {
    if (r != p && r != q) {
      double rp = s[r * n + p], rq = s[r * n + q];
      s[r * n + p] = s[p * n + r] = c * rp - sn * rq;
      s[r * n + q] = s[q * n + r] = sn * rp + c * rq;
    }
    double vp = v[r * n + p], vq = v[r * n + q];
    v[r * n + p] = c * vp - sn * vq;
    v[r * n + q] = sn * vp + c * vq;
  }
  s[p * n + p] -= t * apq;
  s[q * n + q] += t * apq;
  s[p * n + q] = s[q * n + p] = 0;
}

/* s ([n, n], symmetric) diagonalised by sweeps until no pair rotates: w its eigenvalues ascending, v ([n, n])
 * the eigenvectors in its columns, each with its largest entry positive. A pair rotates while its entry
 * passes eps sqrt(|s_pp s_qq|) (the relative test that keeps small eigenvalues accurate), or eps^2 |S|_F. */
static void eigh_work(double *s, double *w, double *v, int64_t n) {
  double fro = 0;
  for (int64_t i = 0; i < n * n; i++)
    v[i] = i % (n + 1) == 0, fro = hypot(fro, s[i]);
  bool rotated = true;
  for (int sweep = 0; sweep < VKT_EIGH_MAX_SWEEPS && rotated; sweep++) {
    rotated = false;
    for (int64_t p = 0; p + 1 < n; p++)
      for (int64_t q = p + 1; q < n; q++) {
        double floor = sqrt(fabs(s[p * n + p])) * sqrt(fabs(s[q * n + q]));
        if (!(fabs(s[p * n + q]) > DBL_EPSILON * fmax(floor, DBL_EPSILON * fro)))
          continue;
        jacobi_rotate(s, v, n, p, q);
        rotated = true;
      }
  }
  for (int64_t p = 0; p < n; p++)
    w[p] = s[p * n + p];
  for (int64_t p = 0; p < n; p++) { /* selection sort, ascending, the columns of v with the values */
    int64_t low = p;
    for (int64_t q = p + 1; q < n; q++)
      low = w[q] < w[low] ? q : low;
    if (low == p)
      continue;
    double t = w[p];
    w[p] = w[low], w[low] = t;
    for (int64_t r = 0; r < n; r++)
      t = v[r * n + p], v[r * n + p] = v[r * n + low], v[r * n + low] = t;
  }
  for (int64_t p = 0; p < n; p++) {
    int64_t top = 0;
    for (int64_t r = 1; r < n; r++)
      top = fabs(v[r * n + p]) > fabs(v[top * n + p]) ? r : top;
    double sign = v[top * n + p] < 0 ? -1 : 1;
    for (int64_t r = 0; r < n; r++)
      v[r * n + p] *= sign;
  }
}

typedef struct {
  const vkt_op_args *a;
  int64_t m, n, cq, size; /* size: one matrix's output block (elements) */
  bool qr;
  double *scratch; /* [batch][size] */
} decompose_ctx;

static void decompose_one(const decompose_ctx *x, int64_t b) {
  const vkt_tensor *in = x->a->in[0], *out = x->a->out;
  int64_t m = x->m, n = x->n, k = m < n ? m : n;
  double *blk = x->scratch + b * x->size;
  bool upper = !x->qr && x->a->iparam[0];
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) /* eigh: the symmetric matrix of the one triangle */
      blk[i * n + j] = vkt_float_load(in, b * m * n + (x->qr || (i >= j) != upper ? i * n + j : j * n + i));
  if (x->qr)
    qr_work(blk, blk + m * n, blk + m * n + k, m, n, x->cq);
  else
    eigh_work(blk, blk + n * n, blk + n * n + n, n);
  for (int64_t i = 0; i < x->size; i++)
    vkt_float_store(out, b * x->size + i, blk[i]);
}

static void decompose_range(void *ctx, int64_t begin, int64_t end) {
  for (int64_t b = begin; b < end; b++)
    decompose_one(ctx, b);
}

vkt_status vkt_cpu_decompose(const vkt_op *op, const vkt_op_args *a) {
  const vkt_tensor *in = a->in[0];
  decompose_ctx x = {.a = a, .m = in->shape[1], .n = in->shape[2], .qr = op == &vkt_ops[VKT_OP_QR]};
  x.cq = x.qr ? a->iparam[0] : 0;
  x.size = x.qr ? vkt_qr_size(x.m, x.n, x.cq) : vkt_eigh_size(x.n);
  if (!(x.scratch = malloc(sizeof(double) * (size_t)(x.size * in->shape[0]) + 1)))
    return vkt_fail(VKT_ERR_NOMEM, "out of host memory for the %s of %lld matrices", op->name,
                    (long long)in->shape[0]);
  int64_t cost = x.m * x.n * (x.qr ? x.n : 8 * x.n) + 1; /* multiply-adds a matrix, about */
  vkt_parallel_for(in->shape[0], cost >= VKT_GRAIN ? 1 : VKT_GRAIN / cost, decompose_range, &x);
  free(x.scratch);
  return VKT_OK;
}
