/* cpu/shape.c: the host kernels of the shape family: flip (a copy from a view with negative strides),
 * tril/triu, gather (index_select arrives as gather with a broadcast index view), the checked wrap of
 * an index, and scatter (plain or adding). */
#include <string.h>

#include "../shape.h"
#include "../table.h"
#include "iter.h"

/* Keeps elements whose column minus row is on the kept side of the diagonal; zeroes the rest. */
static void cpu_tri(const vkt_tensor *out, const vkt_tensor *in, bool upper, int64_t diagonal) {
  int64_t n = vkt_tensor_numel(out);
  size_t size = (size_t)vkt_dtype_size(out->dtype);
  int row = out->ndim - 2;
  vkt_iter it;
  vkt_iter_init(&it, 2, (const vkt_tensor *[]){out, in});
  for (int64_t e = 0; e < n; e++, vkt_iter_next(&it)) {
    int64_t k = it.index[row + 1] - it.index[row];
    if (upper ? k >= diagonal : k <= diagonal)
      memcpy(it.ptr[0], it.ptr[1], size);
    else
      memset(it.ptr[0], 0, size);
  }
}

static int64_t index_at(const vkt_tensor *index, const char *p) {
  return index->dtype == VKT_INT64 ? *(const int64_t *)p : *(const int32_t *)p;
}

/* out[c] = x[c with c[d] = index[c]]; the iterator walks x at c, so the read moves by index - c[d]. */
static vkt_status cpu_gather(vkt_op_id id, const vkt_tensor *out, const vkt_tensor *x, const vkt_tensor *index, int d) {
  int64_t n = vkt_tensor_numel(out), limit = x->shape[d];
  int size = vkt_dtype_size(out->dtype);
  int64_t step = x->strides[d] * size; /* bytes */
  vkt_iter it;
  vkt_iter_init(&it, 3, (const vkt_tensor *[]){out, x, index});
  for (int64_t e = 0; e < n; e++, vkt_iter_next(&it)) {
    int64_t k = index_at(index, it.ptr[2]);
    if (k < 0 || k >= limit)
      return vkt_index_error(id == VKT_OP_INDEX_SELECT ? VKT_INDEX_ERR_SELF : VKT_INDEX_ERR_BOUNDS, k, d, limit);
    memcpy(it.ptr[0], it.ptr[1] + (k - it.index[d]) * step, (size_t)size);
  }
  return VKT_OK;
}

/* out = index + size where index < 0, as int64; d names the index in the error. */
static vkt_status cpu_index_wrap(const vkt_tensor *out, const vkt_tensor *index, int64_t size, int d,
                                 vkt_index_err style) {
  int64_t n = vkt_tensor_numel(out);
  vkt_iter it;
  vkt_iter_init(&it, 2, (const vkt_tensor *[]){out, index});
  for (int64_t e = 0; e < n; e++, vkt_iter_next(&it)) {
    int64_t k = index_at(index, it.ptr[1]);
    if (k < -size || k >= size)
      return vkt_index_error(style, k, d, size);
    *(int64_t *)it.ptr[0] = k < 0 ? k + size : k;
  }
  return VKT_OK;
}

/* *dst = *dst op *src for a scatter's combining op, in the dtype's own arithmetic. */
static void combine_into(vkt_op_id id, vkt_dtype dtype, char *dst, const char *src) {
  vkt_scalar a = vkt_scalar_load(dtype, dst), b = vkt_scalar_load(dtype, src);
  if (a.is_float) {
    bool nan = a.f != a.f;
    a.f = id == VKT_OP_SCATTER_ADD    ? a.f + b.f
          : id == VKT_OP_SCATTER_PROD ? a.f * b.f
          : nan                       ? a.f
          : id == VKT_OP_SCATTER_AMAX ? (a.f >= b.f ? a.f : b.f)
                                      : (a.f <= b.f ? a.f : b.f);
  } else if (dtype == VKT_BOOL) {
    a.i = id == VKT_OP_SCATTER_ADD || id == VKT_OP_SCATTER_AMAX ? a.i || b.i : a.i && b.i;
  } else { /* products and sums wrap, as the GPU's integers do */
    a.i = id == VKT_OP_SCATTER_ADD    ? (int64_t)((uint64_t)a.i + (uint64_t)b.i)
          : id == VKT_OP_SCATTER_PROD ? (int64_t)((uint64_t)a.i * (uint64_t)b.i)
          : id == VKT_OP_SCATTER_AMAX ? (a.i >= b.i ? a.i : b.i)
                                      : (a.i <= b.i ? a.i : b.i);
  }
  vkt_scalar_store(dtype, a, dst);
}

/* out[c with c[d] = index[c]] = src[c] (or combined with it, id not VKT_OP_SCATTER) over index's shape.
 * out starts as dst's values: the same tensor on the cpu device, a host copy of it in a fallback. */
static vkt_status cpu_scatter(vkt_op_id id, const vkt_op_args *a) {
  const vkt_tensor *out = a->out, *dst = a->in[0], *index = a->in[1], *src = a->in[2];
  int d = (int)a->iparam[0];
  if (out->storage != dst->storage || out->offset != dst->offset)
    vkt_cpu_copy(out, dst);
  int64_t n = vkt_tensor_numel(index), limit = out->shape[d];
  int size = vkt_dtype_size(out->dtype);
  int64_t step = out->strides[d] * size; /* bytes */
  vkt_iter it;
  vkt_iter_init(&it, 3, (const vkt_tensor *[]){index, out, src});
  for (int64_t e = 0; e < n; e++, vkt_iter_next(&it)) {
    int64_t k = index_at(index, it.ptr[0]);
    if (k < 0 || k >= limit)
      return vkt_index_error((vkt_index_err)a->flags, k, d, limit);
    char *at = it.ptr[1] + (k - it.index[d]) * step;
    if (id == VKT_OP_SCATTER)
      memcpy(at, it.ptr[2], (size_t)size);
    else
      combine_into(id, out->dtype, at, it.ptr[2]);
  }
  return VKT_OK;
}

vkt_status vkt_cpu_shape(const vkt_op *op, const vkt_op_args *a) {
  vkt_op_id id = (vkt_op_id)(op - vkt_ops);
  if (a->out2) /* the error word: the host kernels raise instead */
    memset(vkt_tensor_host(a->out2), 0, sizeof(int32_t));
  if (id >= VKT_OP_SCATTER && id <= VKT_OP_SCATTER_AMIN)
    return cpu_scatter(id, a);
  if (vkt_tensor_numel(a->out) == 0)
    return VKT_OK;
  switch (id) {
  case VKT_OP_FLIP: vkt_cpu_copy(a->out, a->in[0]); return VKT_OK;
  case VKT_OP_TRIL: cpu_tri(a->out, a->in[0], false, a->iparam[0]); return VKT_OK;
  case VKT_OP_TRIU: cpu_tri(a->out, a->in[0], true, a->iparam[0]); return VKT_OK;
  case VKT_OP_INDEX_WRAP:
    return cpu_index_wrap(a->out, a->in[0], a->iparam[0], (int)a->iparam[1], (vkt_index_err)a->flags);
  default: return cpu_gather(id, a->out, a->in[0], a->in[1], (int)a->iparam[0]);
  }
}
