/* cpu/copy.c: the host kernels for copies with casts and fills, and scalar conversion.
 * Casts follow PyTorch: floats truncate toward zero into integers, anything nonzero is true. */
#include <math.h>
#include <string.h>

#include "../ops.h"
#include "iter.h"

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

void vkt_cpu_copy(const vkt_tensor *dst, const vkt_tensor *src) {
  int64_t n = vkt_tensor_numel(dst);
  if (n == 0)
    return;
  int size = vkt_dtype_size(dst->dtype);
  if (dst->dtype == src->dtype && vkt_tensor_is_contiguous(dst) && vkt_tensor_is_contiguous(src)) {
    memmove(vkt_tensor_host(dst), vkt_tensor_host(src), (size_t)(n * size));
    return;
  }
  vkt_iter it;
  vkt_iter_init(&it, 2, (const vkt_tensor *[]){dst, src});
  if (dst->dtype == src->dtype) { /* bit-exact, NaN payloads included */
    for (int64_t i = 0; i < n; i++, vkt_iter_next(&it))
      memcpy(it.ptr[0], it.ptr[1], (size_t)size);
    return;
  }
  for (int64_t i = 0; i < n; i++, vkt_iter_next(&it))
    vkt_scalar_store(dst->dtype, vkt_scalar_load(src->dtype, it.ptr[1]), it.ptr[0]);
}

void vkt_cpu_fill(const vkt_tensor *t, vkt_scalar v) {
  int64_t n = vkt_tensor_numel(t);
  int size = vkt_dtype_size(t->dtype);
  char value[8];
  vkt_scalar_store(t->dtype, v, value);
  if (n == 0)
    return;
  vkt_iter it;
  vkt_iter_init(&it, 1, (const vkt_tensor *[]){t});
  for (int64_t i = 0; i < n; i++, vkt_iter_next(&it))
    memcpy(it.ptr[0], value, (size_t)size);
}
