/* cpu/matmul.c: VKT_OP_MATMUL on host views, the cpu device's matmul and the shader's fallback:
 * out = alpha * (a @ b) + beta * bias, then relu, per matrix of the batch. float32 and float64 call BLAS's
 * gemm on the operands in place (its leading dimensions and transposes express any view whose rows or columns
 * are dense); other views and dtypes are gathered into the accumulator type (float32 for float16, int64
 * wrapping like PyTorch's CPU for integers) and multiplied by a blocked C kernel on the pool's threads. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../matmul.h"
#include "../table.h"
#include "blas.h"
#include "iter.h"
#include "threads.h"

/* ---- the BLAS library ---- */

enum { ROW_MAJOR = 101, NO_TRANS = 111, TRANS = 112 }; /* cblas.h's enum values */
typedef void sgemm_fn(int, int, int, int, int, int, float, const float *, int, const float *, int, float, float *, int);
typedef void dgemm_fn(int, int, int, int, int, int, double, const double *, int, const double *, int, double, double *,
                      int);

static struct {
  char *path;
  pthread_once_t once;
  sgemm_fn *sgemm;
  dgemm_fn *dgemm;
  void (*set_threads)(int);
  char *(*config)(void);
  int threads; /* the count last given to set_threads */
} blas = {.once = PTHREAD_ONCE_INIT};

void vkt_cpu_blas_set_library(const char *path) {
  free(blas.path);
  blas.path = path ? strdup(path) : NULL;
}

/* scipy-openblas prefixes its symbols with scipy_; a plain OpenBLAS has the names bare. */
static void *symbol(void *lib, const char *name) {
  char prefixed[64];
  snprintf(prefixed, sizeof prefixed, "scipy_%s", name);
  void *p = dlsym(lib, prefixed);
  return p ? p : dlsym(lib, name);
}

static void blas_open(void) {
  void *lib = blas.path ? dlopen(blas.path, RTLD_NOW | RTLD_LOCAL) : NULL;
  if (!lib)
    return;
  blas.set_threads = (void (*)(int))symbol(lib, "openblas_set_num_threads");
  blas.config = (char *(*)(void))symbol(lib, "openblas_get_config");
  sgemm_fn *s = (sgemm_fn *)symbol(lib, "cblas_sgemm");
  dgemm_fn *d = (dgemm_fn *)symbol(lib, "cblas_dgemm");
  if (s && d)
    blas.sgemm = s, blas.dgemm = d;
}

static bool blas_ready(void) {
  pthread_once(&blas.once, blas_open);
  int n = vkt_get_num_threads();
  if (blas.sgemm && blas.set_threads && blas.threads != n)
    blas.set_threads(n), blas.threads = n;
  return blas.sgemm != NULL;
}

const char *vkt_cpu_blas_config(void) { return blas_ready() && blas.config ? blas.config() : NULL; }

/* ---- one product through gemm ---- */

/* How gemm reads a rows x cols matrix with element strides rs, cs: transposed or not, and its leading
 * dimension; false where neither its rows nor its columns are dense. */
static bool gemm_layout(int64_t rows, int64_t cols, int64_t rs, int64_t cs, int *trans, int64_t *ld) {
  if (rows * cols == 0) /* nothing is read */
    return *trans = NO_TRANS, *ld = cols > 1 ? cols : 1, true;
  if (rows == 1)
    rs = cols; /* a single row's stride is never stepped */
  if (cols == 1)
    cs = rows;
  if (cs == 1 && rs >= (cols > 1 ? cols : 1))
    return *trans = NO_TRANS, *ld = rs, true;
  if (rs == 1 && cs >= (rows > 1 ? rows : 1))
    return *trans = TRANS, *ld = cs, true;
  return false;
}

typedef struct {
  const char *p;
  int trans;
  int64_t ld;
  void *copy; /* a dense copy where the view has no gemm layout */
} gemm_operand;

/* The operand as gemm reads it; copies the view (row-major) when it must. */
static vkt_status operand(const vkt_tensor *t, const char *p, int64_t rows, int64_t cols, gemm_operand *o) {
  int nd = t->ndim, size = vkt_dtype_size(t->dtype);
  int64_t rs = t->strides[nd - 2], cs = t->strides[nd - 1];
  o->p = p;
  if (gemm_layout(rows, cols, rs, cs, &o->trans, &o->ld))
    return VKT_OK;
  if (!o->copy && !(o->copy = malloc((size_t)(rows * cols * size))))
    return vkt_fail(VKT_ERR_NOMEM, "out of host memory for a %lldx%lld matmul operand", (long long)rows,
                    (long long)cols);
  char *dst = o->copy;
  for (int64_t r = 0; r < rows; r++)
    for (int64_t c = 0; c < cols; c++, dst += size)
      memcpy(dst, p + (r * rs + c * cs) * size, (size_t)size);
  o->p = o->copy, o->trans = NO_TRANS, o->ld = cols;
  return VKT_OK;
}

static double param_f(vkt_scalar s) { return s.is_float ? s.f : (double)s.i; }

/* out (contiguous) = alpha * x @ y + beta * bias: the bias is copied into out first, which gemm's beta then
 * scales (gemm reads no C when beta is 0, so a NaN there does not leak into the result). */
static vkt_status blas_matrix(const vkt_op_args *a, char *const *ptr, gemm_operand *ox, gemm_operand *oy) {
  const vkt_tensor *out = a->out, *x = a->in[0], *y = a->in[1], *c = a->in[2];
  int nd = out->ndim, size = vkt_dtype_size(out->dtype);
  int64_t m = out->shape[nd - 2], n = out->shape[nd - 1], k = x->shape[nd - 1];
  vkt_status st;
  if ((st = operand(x, ptr[1], m, k, ox)) || (st = operand(y, ptr[2], k, n, oy)))
    return st;
  double alpha = param_f(a->param[1]), beta = c ? param_f(a->param[0]) : 0;
  if (c)
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++)
        memcpy(ptr[0] + (i * n + j) * size, ptr[3] + (i * c->strides[nd - 2] + j * c->strides[nd - 1]) * size,
               (size_t)size);
  if (out->dtype == VKT_FLOAT32)
    blas.sgemm(ROW_MAJOR, ox->trans, oy->trans, (int)m, (int)n, (int)k, (float)alpha, (const float *)ox->p, (int)ox->ld,
               (const float *)oy->p, (int)oy->ld, (float)beta, (float *)ptr[0], (int)n);
  else
    blas.dgemm(ROW_MAJOR, ox->trans, oy->trans, (int)m, (int)n, (int)k, alpha, (const double *)ox->p, (int)ox->ld,
               (const double *)oy->p, (int)oy->ld, beta, (double *)ptr[0], (int)n);
  if (a->flags & VKT_MATMUL_RELU)
    for (int64_t i = 0; i < m * n; i++) {
      char *e = ptr[0] + i * size;
      if (out->dtype == VKT_FLOAT32 ? *(float *)e < 0 : *(double *)e < 0)
        memset(e, 0, (size_t)size);
    }
  return VKT_OK;
}

/* gemm takes int sizes and leading dimensions. */
static bool blas_fits(const vkt_op_args *a) {
  const vkt_tensor *t[3] = {a->out, a->in[0], a->in[1]};
  for (int i = 0; i < 3; i++)
    for (int d = 0; d < t[i]->ndim; d++)
      if (t[i]->shape[d] > INT32_MAX || t[i]->strides[d] > INT32_MAX)
        return false;
  return (a->out->dtype == VKT_FLOAT32 || a->out->dtype == VKT_FLOAT64) && blas_ready();
}

/* ---- the blocked C kernel ---- */

typedef struct {
  const void *a, *b; /* m x k and k x n, row-major, in the accumulator type */
  void *c;           /* m x n */
  int64_t m, n, k;
  vkt_dtype acc;
} gemm_job;

#define BLOCK_K 128 /* a block of b: BLOCK_K x BLOCK_N accumulators, 128 KiB of float64, stays in L2 */
#define BLOCK_N 128

/* Rows [r0, r1) of c, one BLOCK_K x BLOCK_N block of b at a time; the inner loop runs along a row of b and
 * of c, which the compiler vectorises. Integers multiply as uint64 so that overflow wraps. */
#define GEMM_ROWS(NAME, T, MUL)                                                                                        \
  static void NAME(const gemm_job *g, int64_t r0, int64_t r1) {                                                        \
    const T *a = g->a, *b = g->b;                                                                                      \
    T *c = g->c;                                                                                                       \
    memset(c + r0 * g->n, 0, sizeof(T) * (size_t)((r1 - r0) * g->n));                                                  \
    for (int64_t l0 = 0; l0 < g->k; l0 += BLOCK_K)                                                                     \
      for (int64_t j0 = 0; j0 < g->n; j0 += BLOCK_N) {                                                                 \
        int64_t l1 = l0 + BLOCK_K < g->k ? l0 + BLOCK_K : g->k, j1 = j0 + BLOCK_N < g->n ? j0 + BLOCK_N : g->n;        \
        for (int64_t i = r0; i < r1; i++) {                                                                            \
          T *restrict row = c + i * g->n;                                                                              \
          for (int64_t l = l0; l < l1; l++) {                                                                          \
            T x = a[i * g->k + l];                                                                                     \
            const T *restrict y = b + l * g->n;                                                                        \
            for (int64_t j = j0; j < j1; j++)                                                                          \
              row[j] = MUL(row[j], x, y[j]);                                                                           \
          }                                                                                                            \
        }                                                                                                              \
      }                                                                                                                \
  }
#define FMUL(acc, x, y) ((acc) + (x) * (y))
#define IMUL(acc, x, y) (int64_t)((uint64_t)(acc) + (uint64_t)(x) * (uint64_t)(y))
GEMM_ROWS(rows_f32, float, FMUL)
GEMM_ROWS(rows_f64, double, FMUL)
GEMM_ROWS(rows_i64, int64_t, IMUL)

static void gemm_part(void *ctx, int64_t r0, int64_t r1) {
  const gemm_job *g = ctx;
  if (g->acc == VKT_FLOAT32)
    rows_f32(g, r0, r1);
  else if (g->acc == VKT_FLOAT64)
    rows_f64(g, r0, r1);
  else
    rows_i64(g, r0, r1);
}

static void put(vkt_dtype acc, void *dst, int64_t i, vkt_scalar v) {
  if (acc == VKT_FLOAT32)
    ((float *)dst)[i] = (float)(v.is_float ? v.f : (double)v.i);
  else if (acc == VKT_FLOAT64)
    ((double *)dst)[i] = v.is_float ? v.f : (double)v.i;
  else
    ((int64_t *)dst)[i] = v.is_float ? (int64_t)v.f : v.i;
}

static vkt_scalar get(vkt_dtype acc, const void *src, int64_t i) {
  if (acc == VKT_FLOAT32)
    return (vkt_scalar){true, ((const float *)src)[i], 0};
  if (acc == VKT_FLOAT64)
    return (vkt_scalar){true, ((const double *)src)[i], 0};
  return (vkt_scalar){false, 0, ((const int64_t *)src)[i]};
}

/* Gathers a rows x cols matrix at p (element strides rs, cs) into dst, row-major, in the accumulator type. */
static void gather(vkt_dtype d, vkt_dtype acc, const char *p, int64_t rows, int64_t cols, int64_t rs, int64_t cs,
                   void *dst) {
  int size = vkt_dtype_size(d);
  for (int64_t r = 0; r < rows; r++)
    for (int64_t c = 0; c < cols; c++)
      put(acc, dst, r * cols + c, vkt_scalar_load(d, p + (r * rs + c * cs) * size));
}

/* One element of the epilogue: alpha * v + beta * bias (bias NULL: none), then relu. */
static vkt_scalar finish_one(const vkt_op_args *a, vkt_scalar v, const char *bias) {
  bool relu = a->flags & VKT_MATMUL_RELU;
  vkt_scalar c = bias ? vkt_scalar_load(a->in[2]->dtype, bias) : (vkt_scalar){0};
  if (v.is_float) {
    double r = param_f(a->param[1]) * v.f + (bias ? param_f(a->param[0]) * param_f(c) : 0);
    return (vkt_scalar){true, relu && r < 0 ? 0 : r, 0};
  }
#define I(s) (uint64_t)((s).is_float ? (int64_t)(s).f : (s).i)
  int64_t r = (int64_t)(I(a->param[1]) * (uint64_t)v.i + (bias ? I(a->param[0]) * I(c) : 0));
#undef I
  return (vkt_scalar){false, 0, relu && r < 0 ? 0 : r};
}

/* One matrix of the batch through the C kernel: ptr[] are the byte addresses of out, a, b and bias. */
static void c_matrix(const vkt_op_args *a, char *const *ptr, gemm_job *g) {
  const vkt_tensor *out = a->out, *x = a->in[0], *y = a->in[1], *c = a->in[2];
  int nd = out->ndim, so = vkt_dtype_size(out->dtype), sc = c ? vkt_dtype_size(c->dtype) : 0;
  gather(x->dtype, g->acc, ptr[1], g->m, g->k, x->strides[nd - 2], x->strides[nd - 1], (void *)g->a);
  gather(y->dtype, g->acc, ptr[2], g->k, g->n, y->strides[nd - 2], y->strides[nd - 1], (void *)g->b);
  int64_t rows_per_grain = VKT_GRAIN / (g->n * g->k + 1) + 1;
  vkt_parallel_for(g->m, rows_per_grain, gemm_part, g);
  for (int64_t i = 0; i < g->m; i++)
    for (int64_t j = 0; j < g->n; j++) {
      const char *bias = c ? ptr[3] + (i * c->strides[nd - 2] + j * c->strides[nd - 1]) * sc : NULL;
      vkt_scalar_store(out->dtype, finish_one(a, get(g->acc, g->c, i * g->n + j), bias), ptr[0] + (i * g->n + j) * so);
    }
}

static vkt_dtype accumulator(vkt_dtype d) {
  return d == VKT_FLOAT16 ? VKT_FLOAT32 : vkt_dtypes[d].is_float ? d : VKT_INT64;
}

vkt_status vkt_cpu_matmul(const vkt_op *op, const vkt_op_args *a) {
  const vkt_tensor *t[4] = {a->out, a->in[0], a->in[1], a->in[2]};
  vkt_tensor bt[4];
  const vkt_tensor *views[4];
  int n = a->in[2] ? 4 : 3, nd = a->out->ndim;
  int64_t m = a->out->shape[nd - 2], cols = a->out->shape[nd - 1], k = a->in[0]->shape[nd - 1];
  bool use_blas = blas_fits(a);
  gemm_operand ox = {0}, oy = {0};
  gemm_job g = {.m = m, .n = cols, .k = k, .acc = accumulator(a->out->dtype)};
  void *buf = NULL;
  vkt_status st = VKT_OK;
  (void)op;
  if (vkt_tensor_numel(a->out) == 0)
    return VKT_OK;
  if (!use_blas) {
    size_t acc = (size_t)vkt_dtype_size(g.acc);
    if (!(buf = malloc(acc * (size_t)(m * k + k * cols + m * cols))))
      return vkt_fail(VKT_ERR_NOMEM, "out of host memory for a %lldx%lldx%lld matmul", (long long)m, (long long)k,
                      (long long)cols);
    g.a = buf, g.b = (char *)buf + acc * (size_t)(m * k), g.c = (char *)buf + acc * (size_t)(m * k + k * cols);
  }
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
  for (int64_t e = 0; e < count && !st; e++, vkt_iter_next(&it))
    if (use_blas)
      st = blas_matrix(a, it.ptr, &ox, &oy);
    else
      c_matrix(a, it.ptr, &g);
  free(ox.copy);
  free(oy.copy);
  free(buf);
  return st;
}
