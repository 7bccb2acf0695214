/* cpu/copy.c: the host kernels for copies with casts and fills, and scalar conversion.
 * Casts follow PyTorch: floats truncate toward zero into integers, anything nonzero is true. */
#include <math.h>
#include <string.h>

#include "../table.h"
#include "threads.h"

vkt_scalar vkt_scalar_load(vkt_dtype dtype, const void *in) {
  switch (dtype) {
  case VKT_FLOAT32: return (vkt_scalar){true, *(const float *)in, 0};
  case VKT_FLOAT64: return (vkt_scalar){true, *(const double *)in, 0};
  case VKT_FLOAT16: return (vkt_scalar){true, (double)*(const _Float16 *)in, 0};
  case VKT_INT32: return (vkt_scalar){false, 0, *(const int32_t *)in};
  case VKT_INT64: return (vkt_scalar){false, 0, *(const int64_t *)in};
  case VKT_UINT8: return (vkt_scalar){false, 0, *(const uint8_t *)in};
  case VKT_BOOL: return (vkt_scalar){false, 0, *(const uint8_t *)in != 0};
  default: return (vkt_scalar){0};
  }
}

/* NaN, inf and out-of-range floats have no integer value; like x86 (and PyTorch there), they become
 * the most negative int64 instead of undefined behaviour. */
static int64_t to_int(vkt_scalar v) {
  if (!v.is_float)
    return v.i;
  if (!(v.f > -9223372036854775808.0 && v.f < 9223372036854775808.0))
    return INT64_MIN;
  return (int64_t)v.f;
}

/* The same for int32, whose most negative value uint8 then truncates to 0, as on x86. */
static int32_t to_int32(vkt_scalar v) {
  if (v.is_float && !(v.f >= -2147483648.0 && v.f < 2147483648.0))
    return INT32_MIN;
  return (int32_t)to_int(v);
}

static double to_float(vkt_scalar v) { return v.is_float ? v.f : (double)v.i; }

void vkt_scalar_store(vkt_dtype dtype, vkt_scalar v, void *out) {
  switch (dtype) {
  case VKT_FLOAT32: *(float *)out = (float)to_float(v); break;
  case VKT_FLOAT64: *(double *)out = to_float(v); break;
  case VKT_FLOAT16: *(_Float16 *)out = (_Float16)to_float(v); break;
  case VKT_INT32: *(int32_t *)out = to_int32(v); break;
  case VKT_INT64: *(int64_t *)out = to_int(v); break;
  case VKT_UINT8: *(uint8_t *)out = (uint8_t)to_int32(v); break;
  case VKT_BOOL: *(uint8_t *)out = v.is_float ? v.f != 0 : v.i != 0; break;
  default: break;
  }
}

/* ---- strided copies on the pool's threads ---- */

typedef void copy_row_fn(char *d, const char *s, int64_t n, int64_t ds, int64_t ss); /* strides: bytes */

/* Bit-exact copies (NaN payloads included) by element size, and the casts between floats and from integers
 * to floats, which C's conversions do as PyTorch does; the other casts go through vkt_scalar. */
#define COPY_ROW(NAME, D, S)                                                                                           \
  VKT_SIMD static void NAME(char *d, const char *s, int64_t n, int64_t ds, int64_t ss) {                               \
    if (ds == sizeof(D) && ss == sizeof(S))                                                                            \
      for (int64_t i = 0; i < n; i++)                                                                                  \
        ((D *)d)[i] = (D)((const S *)s)[i];                                                                            \
    else if (ds == sizeof(D) && ss == 0) /* a fill */                                                                  \
      for (int64_t i = 0; i < n; i++)                                                                                  \
        ((D *)d)[i] = (D) * (const S *)s;                                                                              \
    else                                                                                                               \
      for (int64_t i = 0; i < n; i++)                                                                                  \
        *(D *)(d + i * ds) = (D) * (const S *)(s + i * ss);                                                            \
  }
COPY_ROW(copy_1, uint8_t, uint8_t)
COPY_ROW(copy_2, uint16_t, uint16_t)
COPY_ROW(copy_4, uint32_t, uint32_t)
COPY_ROW(copy_8, uint64_t, uint64_t)
COPY_ROW(f32_f64, double, float)
COPY_ROW(f64_f32, float, double)
COPY_ROW(i32_f32, float, int32_t)
COPY_ROW(i64_f32, float, int64_t)
COPY_ROW(i32_f64, double, int32_t)
COPY_ROW(i64_f64, double, int64_t)
COPY_ROW(i32_i64, int64_t, int32_t)

static copy_row_fn *copy_row_for(vkt_dtype d, vkt_dtype s) {
  if (d == s) {
    static copy_row_fn *const by_size[9] = {[1] = copy_1, [2] = copy_2, [4] = copy_4, [8] = copy_8};
    return by_size[vkt_dtype_size(d)];
  }
  static const struct {
    vkt_dtype d, s;
    copy_row_fn *fn;
  } casts[] = {{VKT_FLOAT64, VKT_FLOAT32, f32_f64}, {VKT_FLOAT32, VKT_FLOAT64, f64_f32},
               {VKT_FLOAT32, VKT_INT32, i32_f32},   {VKT_FLOAT32, VKT_INT64, i64_f32},
               {VKT_FLOAT64, VKT_INT32, i32_f64},   {VKT_FLOAT64, VKT_INT64, i64_f64},
               {VKT_INT64, VKT_INT32, i32_i64}};
  for (size_t i = 0; i < sizeof casts / sizeof casts[0]; i++)
    if (casts[i].d == d && casts[i].s == s)
      return casts[i].fn;
  return NULL;
}

typedef struct {
  const vkt_tensor *dst, *src;
  copy_row_fn *row; /* NULL: through vkt_scalar */
  int rank;
  int64_t shape[VKT_MAX_DIMS], strides[2][VKT_MAX_DIMS]; /* bytes */
} copy_job;

/* Elements [begin, end) in row-major order of the merged shape. */
static void copy_part(void *ctx, int64_t begin, int64_t end) {
  const copy_job *j = ctx;
  int last = j->rank - 1;
  int64_t index[VKT_MAX_DIMS], rest = begin;
  char *p[2] = {vkt_tensor_host(j->dst), vkt_tensor_host(j->src)};
  for (int d = last; d >= 0; d--) {
    index[d] = rest % j->shape[d];
    rest /= j->shape[d];
    for (int k = 0; k < 2; k++)
      p[k] += index[d] * j->strides[k][d];
  }
  for (int64_t at = begin; at < end;) {
    int64_t n = j->shape[last] - index[last];
    n = n < end - at ? n : end - at;
    if (j->row)
      j->row(p[0], p[1], n, j->strides[0][last], j->strides[1][last]);
    else
      for (int64_t i = 0; i < n; i++)
        vkt_scalar_store(j->dst->dtype, vkt_scalar_load(j->src->dtype, p[1] + i * j->strides[1][last]),
                         p[0] + i * j->strides[0][last]);
    at += n;
    for (int k = 0; k < 2; k++)
      p[k] += n * j->strides[k][last];
    index[last] += n;
    for (int d = last; d > 0 && index[d] == j->shape[d]; d--) { /* carry into the dims above */
      for (int k = 0; k < 2; k++)
        p[k] += j->strides[k][d - 1] - j->shape[d] * j->strides[k][d];
      index[d] = 0;
      index[d - 1]++;
    }
  }
}

void vkt_cpu_copy(const vkt_tensor *dst, const vkt_tensor *src) {
  int64_t n = vkt_tensor_numel(dst), strides[2 * VKT_MAX_DIMS];
  if (n == 0)
    return;
  if (dst->dtype == src->dtype && vkt_tensor_is_contiguous(dst) && vkt_tensor_is_contiguous(src) &&
      n * vkt_dtype_size(dst->dtype) < VKT_GRAIN * 4) {
    memmove(vkt_tensor_host(dst), vkt_tensor_host(src), (size_t)(n * vkt_dtype_size(dst->dtype)));
    return;
  }
  copy_job j = {dst, src, copy_row_for(dst->dtype, src->dtype), 0, {0}, {{0}}};
  j.rank = vkt_merge_dims(2, (const vkt_tensor *[]){dst, src}, j.shape, strides);
  if (j.rank == 0)
    j.rank = 1, j.shape[0] = 1, strides[0] = strides[VKT_MAX_DIMS] = 0;
  for (int d = 0; d < j.rank; d++) {
    j.strides[0][d] = strides[d] * vkt_dtype_size(dst->dtype);
    j.strides[1][d] = strides[VKT_MAX_DIMS + d] * vkt_dtype_size(src->dtype);
  }
  vkt_parallel_for(n, VKT_GRAIN, copy_part, &j);
}

/* A copy from the value broadcast over t's shape. */
void vkt_cpu_fill(const vkt_tensor *t, vkt_scalar v) {
  char value[8];
  vkt_scalar_store(t->dtype, v, value);
  vkt_storage one = {.refcount = 1, .device = VKT_CPU, .nbytes = sizeof value, .host = value};
  vkt_tensor src = {.storage = &one, .dtype = t->dtype, .ndim = t->ndim};
  for (int d = 0; d < t->ndim; d++)
    src.shape[d] = t->shape[d];
  vkt_cpu_copy(t, &src);
}
