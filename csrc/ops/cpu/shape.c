/* cpu/shape.c: the host kernels of the shape family: flip (a copy from a view with negative strides),
 * tril/triu, and gather (index_select arrives as gather with a broadcast index view). */
#include <string.h>

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

/* out[c] = x[c with c[d] = index[c]]; the iterator walks x at c, so the read moves by index - c[d]. */
static vkt_status cpu_gather(const vkt_tensor *out, const vkt_tensor *x, const vkt_tensor *index, int d) {
  int64_t n = vkt_tensor_numel(out), limit = x->shape[d];
  int size = vkt_dtype_size(out->dtype);
  int64_t step = x->strides[d] * size; /* bytes */
  vkt_iter it;
  vkt_iter_init(&it, 3, (const vkt_tensor *[]){out, x, index});
  for (int64_t e = 0; e < n; e++, vkt_iter_next(&it)) {
    int64_t k = index->dtype == VKT_INT64 ? *(const int64_t *)it.ptr[2] : *(const int32_t *)it.ptr[2];
    if (k < 0 || k >= limit)
      return vkt_fail(VKT_ERR_INDEX, "index %lld is out of bounds for dimension %d with size %lld", (long long)k, d,
                      (long long)limit);
    memcpy(it.ptr[0], it.ptr[1] + (k - it.index[d]) * step, (size_t)size);
  }
  return VKT_OK;
}

vkt_status vkt_cpu_shape(const vkt_op *op, const vkt_op_args *a) {
  if (vkt_tensor_numel(a->out) == 0)
    return VKT_OK;
  switch ((vkt_op_id)(op - vkt_ops)) {
  case VKT_OP_FLIP: vkt_cpu_copy(a->out, a->in[0]); return VKT_OK;
  case VKT_OP_TRIL: cpu_tri(a->out, a->in[0], false, a->iparam[0]); return VKT_OK;
  case VKT_OP_TRIU: cpu_tri(a->out, a->in[0], true, a->iparam[0]); return VKT_OK;
  default: return cpu_gather(a->out, a->in[0], a->in[1], (int)a->iparam[0]);
  }
}
