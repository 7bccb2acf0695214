/* cpu/matmul.c: VKT_OP_MATMUL on host views, the cpu device's matmul and the shader's fallback:
 * out = alpha * (a @ b) + beta * bias, then relu, per matrix of the batch. Each matrix is gathered
 * from its strides into float64 (int64 for integer dtypes, wrapping like PyTorch's CPU) and summed there. */
#include <stdlib.h>
#include <string.h>

#include "../matmul.h"
#include "../table.h"
#include "iter.h"

typedef union {
  double f;
  int64_t i;
} mm_num;

static mm_num num(vkt_scalar s, bool fl) {
  return fl ? (mm_num){.f = s.is_float ? s.f : (double)s.i} : (mm_num){.i = s.is_float ? (int64_t)s.f : s.i};
}

/* Gathers a rows x cols matrix at p (byte strides rs, cs) into dst, row-major. */
static void gather(vkt_dtype d, const char *p, int64_t rows, int64_t cols, int64_t rs, int64_t cs, bool fl,
                   mm_num *dst) {
  for (int64_t r = 0; r < rows; r++)
    for (int64_t c = 0; c < cols; c++)
      *dst++ = num(vkt_scalar_load(d, p + r * rs + c * cs), fl);
}

/* c[m x n] = a[m x k] @ b[k x n], row by row so the inner loop runs along rows of b and c. */
static void gemm(const mm_num *a, const mm_num *b, mm_num *c, int64_t m, int64_t n, int64_t k, bool fl) {
  for (int64_t i = 0; i < m; i++) {
    mm_num *row = c + i * n;
    memset(row, 0, sizeof *row * (size_t)n);
    for (int64_t l = 0; l < k; l++) {
      mm_num x = a[i * k + l];
      const mm_num *y = b + l * n;
      if (fl)
        for (int64_t j = 0; j < n; j++)
          row[j].f += x.f * y[j].f;
      else
        for (int64_t j = 0; j < n; j++)
          row[j].i = (int64_t)((uint64_t)row[j].i + (uint64_t)x.i * (uint64_t)y[j].i);
    }
  }
}

/* One element of the epilogue: alpha * v + beta * bias (bias NULL: none), then relu. */
static vkt_scalar finish_one(const vkt_op_args *a, mm_num v, const char *bias, bool fl) {
  mm_num alpha = num(a->param[1], fl), beta = num(a->param[0], fl);
  mm_num c = bias ? num(vkt_scalar_load(a->in[2]->dtype, bias), fl) : (mm_num){0};
  bool relu = a->flags & VKT_MATMUL_RELU;
  if (fl) {
    double r = alpha.f * v.f + (bias ? beta.f * c.f : 0);
    return (vkt_scalar){true, relu && r < 0 ? 0 : r, 0};
  }
  int64_t r = (int64_t)((uint64_t)alpha.i * (uint64_t)v.i + (bias ? (uint64_t)beta.i * (uint64_t)c.i : 0));
  return (vkt_scalar){false, 0, relu && r < 0 ? 0 : r};
}

/* One matrix of the batch: ptr[] are the byte addresses of out, a, b and bias. */
static void matrix(const vkt_op_args *a, char *const *ptr, mm_num *buf, bool fl) {
  const vkt_tensor *out = a->out, *x = a->in[0], *y = a->in[1], *c = a->in[2];
  int nd = out->ndim;
  int64_t m = out->shape[nd - 2], n = out->shape[nd - 1], k = x->shape[nd - 1];
  int sx = vkt_dtype_size(x->dtype), sy = vkt_dtype_size(y->dtype), so = vkt_dtype_size(out->dtype);
  int sc = c ? vkt_dtype_size(c->dtype) : 0;
  mm_num *ax = buf, *by = ax + m * k, *cz = by + k * n;
  gather(x->dtype, ptr[1], m, k, x->strides[nd - 2] * sx, x->strides[nd - 1] * sx, fl, ax);
  gather(y->dtype, ptr[2], k, n, y->strides[nd - 2] * sy, y->strides[nd - 1] * sy, fl, by);
  gemm(ax, by, cz, m, n, k, fl);
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      const char *bias = c ? ptr[3] + (i * c->strides[nd - 2] + j * c->strides[nd - 1]) * sc : NULL;
      char *o = ptr[0] + (i * out->strides[nd - 2] + j * out->strides[nd - 1]) * so;
      vkt_scalar_store(out->dtype, finish_one(a, cz[i * n + j], bias, fl), o);
    }
}

vkt_status vkt_cpu_matmul(const vkt_op *op, const vkt_op_args *a) {
  const vkt_tensor *t[4] = {a->out, a->in[0], a->in[1], a->in[2]};
  vkt_tensor bt[4];
  const vkt_tensor *views[4];
  int n = a->in[2] ? 4 : 3, nd = a->out->ndim;
  int64_t m = a->out->shape[nd - 2], cols = a->out->shape[nd - 1], k = a->in[0]->shape[nd - 1];
  (void)op;
  mm_num *buf = malloc(sizeof *buf * (size_t)(m * k + k * cols + m * cols + 1));
  if (!buf)
    return vkt_fail(VKT_ERR_NOMEM, "out of host memory for a %lldx%lldx%lld matmul", (long long)m, (long long)k,
                    (long long)cols);
  for (int i = 0; i < n; i++) { /* the batch dims alone, to walk */
    bt[i] = *t[i];
    bt[i].ndim = nd - 2;
    views[i] = &bt[i];
  }
  vkt_iter it;
  vkt_iter_init(&it, n, views);
  int64_t count = 1;
  for (int d = 0; d < nd - 2; d++)
    count *= a->out->shape[d];
  for (int64_t e = 0; e < count; e++, vkt_iter_next(&it))
    matrix(a, it.ptr, buf, vkt_dtypes[a->compute].is_float);
  free(buf);
  return VKT_OK;
}
