/* cpu/solve.c: the LU factorisation with partial pivoting (LAPACK's getf2), the Cholesky factorisation
 * (potf2) and triangular and LU solves of each matrix of a batch, in double whatever the dtype: the cpu
 * device's kernels and the references of shaders/lu.comp, cholesky.comp and trsm.comp, which run the same
 * steps. Layouts are linalg.h's. */
#include <math.h>

#include "../linalg.h"
#include "floats.h"
#include "threads.h"

/* Matrix b of LU's out and out2; float32 results round each step to float32, as the shader does. */
static void lu_one(const vkt_op_args *a, int64_t b) {
  const vkt_tensor *in = a->in[0];
  int64_t m = in->shape[1], n = in->shape[2], k = m < n ? m : n, o = b * (m * n + VKT_LU_EXTRA);
  int32_t *piv = (int32_t *)vkt_tensor_host(a->out2) + b * (k + 1);
  const vkt_tensor *out = a->out;
  for (int64_t i = 0; i < m * n; i++)
    vkt_float_store(out, o + i, vkt_float_load(in, b * m * n + i));
  int32_t info = 0;
  double sign = 1, logabs = 0;
  for (int64_t j = 0; j < k; j++) {
    int64_t top = j;
    for (int64_t i = j + 1; i < m; i++)
      top = fabs(vkt_float_load(out, o + i * n + j)) > fabs(vkt_float_load(out, o + top * n + j)) ? i : top;
    piv[j] = (int32_t)top + 1;
    double d = vkt_float_load(out, o + top * n + j);
    if (d == 0) { /* nothing to eliminate below a zero column: LAPACK records it and goes on */
      info = info ? info : (int32_t)j + 1;
      sign = 0;
      continue;
    }
    if (top != j) {
      sign = -sign;
      for (int64_t c = 0; c < n; c++) {
        double t = vkt_float_load(out, o + j * n + c);
        vkt_float_store(out, o + j * n + c, vkt_float_load(out, o + top * n + c));
        vkt_float_store(out, o + top * n + c, t);
      }
    }
    sign *= d < 0 ? -1 : 1;
    logabs += log(fabs(d));
    double r = 1 / d; /* LAPACK's getf2 scales the column by the reciprocal too */
    for (int64_t i = j + 1; i < m; i++) {
      vkt_float_store(out, o + i * n + j, vkt_float_load(out, o + i * n + j) * r);
      double l = vkt_float_load(out, o + i * n + j);
      for (int64_t c = j + 1; c < n; c++)
        vkt_float_store(out, o + i * n + c,
                        vkt_float_load(out, o + i * n + c) - l * vkt_float_load(out, o + j * n + c));
    }
  }
  piv[k] = info;
  double det = sign;
  for (int64_t j = 0; j < k; j++)
    det *= fabs(vkt_float_load(out, o + j * n + j));
  vkt_float_store(out, o + m * n, det);
  vkt_float_store(out, o + m * n + 1, sign);
  vkt_float_store(out, o + m * n + 2, sign == 0 ? -INFINITY : logabs);
}

static void cholesky_one(const vkt_op_args *a, int64_t b) {
  const vkt_tensor *in = a->in[0], *out = a->out;
  int64_t n = in->shape[1], o = b * n * n;
  int32_t info = 0;
  for (int64_t i = 0; i < n * n; i++)
    vkt_float_store(out, o + i, 0);
  for (int64_t j = 0; j < n && !info; j++) {
    double d = vkt_float_load(in, o + j * n + j);
    for (int64_t c = 0; c < j; c++)
      d -= vkt_float_load(out, o + j * n + c) * vkt_float_load(out, o + j * n + c);
    if (!(d > 0)) { /* LAPACK stops at the first minor that is not positive (NaN included) */
      info = (int32_t)j + 1;
      break;
    }
    vkt_float_store(out, o + j * n + j, sqrt(d));
    d = vkt_float_load(out, o + j * n + j);
    for (int64_t i = j + 1; i < n; i++) {
      double s = vkt_float_load(in, o + i * n + j);
      for (int64_t c = 0; c < j; c++)
        s -= vkt_float_load(out, o + i * n + c) * vkt_float_load(out, o + j * n + c);
      vkt_float_store(out, o + i * n + j, s / d);
    }
  }
  ((int32_t *)vkt_tensor_host(a->out2))[b] = info;
}

/* Column col of matrix b: X := A^-1 B, in double. */
static void trsm_one(const vkt_op_args *a, int64_t b, int64_t col) {
  const vkt_tensor *out = a->out;
  int64_t n = out->shape[1], k = out->shape[2], a0 = b * a->iparam[1], x0 = b * n * k + col;
  unsigned mode = (unsigned)a->iparam[0];
  double x[n > 0 ? n : 1];
  for (int64_t i = 0; i < n; i++)
    x[i] = vkt_float_load(a->in[1], x0 + i * k);
  if (mode & VKT_TRSM_LU) {
    const int32_t *piv = (const int32_t *)vkt_tensor_host(a->in[2]) + b * (n + 1);
    for (int64_t i = 0; i < n; i++) {
      double t = x[i];
      x[i] = x[piv[i] - 1], x[piv[i] - 1] = t;
    }
  }
  if (mode & VKT_TRSM_PERMUTE) { /* P B: the swaps undone, last first */
    const int32_t *piv = (const int32_t *)vkt_tensor_host(a->in[2]) + b * n;
    for (int64_t i = n - 1; i >= 0; i--) {
      double t = x[i];
      x[i] = x[piv[i] - 1], x[piv[i] - 1] = t;
    }
  }
  bool lu = mode & VKT_TRSM_LU, unit = mode & VKT_TRSM_UNIT;
  bool solve = !(mode & VKT_TRSM_PERMUTE);
  if (solve && (lu || !(mode & VKT_TRSM_UPPER)))
    for (int64_t i = 0; i < n; i++) {
      for (int64_t c = 0; c < i; c++)
        x[i] -= vkt_float_load(a->in[0], a0 + i * n + c) * x[c];
      x[i] = lu || unit ? x[i] : x[i] / vkt_float_load(a->in[0], a0 + i * n + i);
    }
  if (solve && (lu || (mode & VKT_TRSM_UPPER)))
    for (int64_t i = n - 1; i >= 0; i--) {
      for (int64_t c = i + 1; c < n; c++)
        x[i] -= vkt_float_load(a->in[0], a0 + i * n + c) * x[c];
      x[i] = !lu && unit ? x[i] : x[i] / vkt_float_load(a->in[0], a0 + i * n + i);
    }
  for (int64_t i = 0; i < n; i++)
    vkt_float_store(out, x0 + i * k, x[i]);
}

static void lu_range(void *ctx, int64_t begin, int64_t end) {
  for (int64_t b = begin; b < end; b++)
    lu_one(ctx, b);
}

static void cholesky_range(void *ctx, int64_t begin, int64_t end) {
  for (int64_t b = begin; b < end; b++)
    cholesky_one(ctx, b);
}

static void trsm_range(void *ctx, int64_t begin, int64_t end) {
  const vkt_op_args *a = ctx;
  for (int64_t id = begin; id < end; id++)
    trsm_one(a, id / a->out->shape[2], id % a->out->shape[2]);
}

vkt_status vkt_cpu_solve(const vkt_op *op, const vkt_op_args *a) {
  vkt_op_id id = (vkt_op_id)(op - vkt_ops);
  int64_t n = a->out->shape[1], cost = n * n * (id == VKT_OP_TRSM ? 1 : n) + 1; /* multiply-adds a task */
  int64_t grain = cost >= VKT_GRAIN ? 1 : VKT_GRAIN / cost;
  if (id == VKT_OP_LU)
    vkt_parallel_for(a->in[0]->shape[0], grain, lu_range, (void *)a);
  else if (id == VKT_OP_CHOLESKY)
    vkt_parallel_for(a->in[0]->shape[0], grain, cholesky_range, (void *)a);
  else
    vkt_parallel_for(a->out->shape[0] * a->out->shape[2], grain, trsm_range, (void *)a);
  return VKT_OK;
}
