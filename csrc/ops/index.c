/* index.c: advanced indexing, t[bool_mask] and t[int_tensor], built on index_select (gather.comp).
 * A mask's result size depends on its values, so the mask is read to the host (a wait) once. */
#include <stdlib.h>
#include <string.h>

#include "shape.h"
#include "table.h"

/* x with its first k dims merged into one (a view, or a view of a contiguous copy). */
static vkt_status merge_leading(const vkt_tensor *x, int k, vkt_tensor *out) {
  int64_t shape[VKT_MAX_DIMS] = {1};
  for (int i = 0; i < k; i++)
    shape[0] *= x->shape[i];
  memcpy(shape + 1, x->shape + k, sizeof *shape * (size_t)(x->ndim - k));
  vkt_tensor c = {0};
  vkt_status st = vkt_contiguous(&c, x);
  if (!st)
    st = vkt_view(out, &c, x->ndim - k + 1, shape);
  vkt_tensor_release(&c);
  return st;
}

static vkt_status check_mask(const vkt_tensor *x, const vkt_tensor *mask) {
  char a[256], b[256];
  for (int i = 0; i < mask->ndim; i++)
    if (i >= x->ndim || mask->shape[i] != x->shape[i]) {
      vkt_shape_str(mask->ndim, mask->shape, a, sizeof a);
      vkt_shape_str(x->ndim, x->shape, b, sizeof b);
      return vkt_fail(VKT_ERR_INDEX,
                      "The shape of the mask %s at index %d does not match the shape of the indexed "
                      "tensor %s at index %d",
                      a, i, b, i);
    }
  return VKT_OK;
}

/* The flat positions of the true elements of a host bool array, as an int64 tensor on device. */
static vkt_status true_positions(const uint8_t *m, int64_t n, int device, vkt_tensor *out) {
  int64_t count = 0;
  for (int64_t i = 0; i < n; i++)
    count += m[i] != 0;
  int64_t *pos = malloc(sizeof *pos * (size_t)(count + 1));
  if (!pos)
    return vkt_fail(VKT_ERR_NOMEM, "out of host memory");
  for (int64_t i = 0, j = 0; i < n; i++)
    if (m[i])
      pos[j++] = i;
  vkt_status st = vkt_tensor_empty(out, device, VKT_INT64, 1, &count);
  if (!st && count && (st = vkt_write(out, pos)))
    vkt_tensor_release(out);
  free(pos);
  return st;
}

vkt_status vkt_index_mask(const vkt_tensor *x, const vkt_tensor *mask, vkt_tensor *out) {
  vkt_tensor x0 = *x, flat = {0}, pos = {0};
  uint8_t *m = NULL;
  vkt_status st;
  if (x->ndim == 0) /* x[mask] of a 0-d x indexes a new leading dim of size 1 */
    x0.ndim = 1, x0.shape[0] = 1, x0.strides[0] = 1;
  int64_t n = vkt_tensor_numel(mask);
  if ((st = check_mask(&x0, mask)) || (st = merge_leading(&x0, mask->ndim ? mask->ndim : 1, &flat)))
    return st;
  if (!(m = malloc((size_t)n + 1)))
    st = vkt_fail(VKT_ERR_NOMEM, "out of host memory");
  else if (!(st = n ? vkt_read(mask, m) : VKT_OK) && !(st = true_positions(m, n, vkt_tensor_device(x), &pos)))
    st = vkt_index_select(&flat, 0, &pos, out);
  free(m);
  vkt_tensor_release(&flat);
  vkt_tensor_release(&pos);
  return st;
}

vkt_status vkt_index_mask_fill(const vkt_tensor *x, const vkt_tensor *mask, const vkt_tensor *value, vkt_scalar v) {
  vkt_tensor m; /* on x's device, as PyTorch moves index tensors */
  vkt_status st = x->ndim ? check_mask(x, mask) : VKT_OK;
  if (st || (st = vkt_to(&m, mask, vkt_tensor_device(x), VKT_BOOL)))
    return st;
  for (; m.ndim < x->ndim; m.ndim++) /* x's trailing dims as size 1, to broadcast */
    m.shape[m.ndim] = 1, m.strides[m.ndim] = 1;
  st = vkt_masked_fill(x, &m, value, v, true, NULL);
  vkt_tensor_release(&m);
  return st;
}

/* index + size where index < 0, so x[-1] reads the last row as in Python. */
static vkt_status wrap_negative(const vkt_tensor *index, int64_t size, vkt_tensor *out) {
  vkt_tensor neg = {0}, shifted = {0};
  vkt_scalar zero = {false, 0, 0}, one = {false, 0, 1};
  vkt_operand i = {.t = index};
  vkt_status st = vkt_binary(VKT_OP_LT, i, (vkt_operand){.s = zero}, one, NULL, &neg);
  if (!st && !(st = vkt_binary(VKT_OP_ADD, i, (vkt_operand){.s = {false, 0, size}}, one, NULL, &shifted)))
    st = vkt_where(&neg, (vkt_operand){.t = &shifted}, i, out);
  vkt_tensor_release(&neg);
  vkt_tensor_release(&shifted);
  return st;
}

vkt_status vkt_index_tensor(const vkt_tensor *x, const vkt_tensor *index, vkt_tensor *out) {
  vkt_tensor moved = {0}, wrapped = {0}, flat = {0}, picked = {0};
  int64_t shape[VKT_MAX_DIMS];
  vkt_status st;
  if (x->ndim == 0)
    return vkt_fail(VKT_ERR_INDEX, "too many indices for tensor of dimension 0");
  if (index->ndim + x->ndim - 1 > VKT_MAX_DIMS)
    return vkt_fail(VKT_ERR_RUNTIME, "tensors have at most %d dimensions", VKT_MAX_DIMS);
  memcpy(shape, index->shape, sizeof *shape * (size_t)index->ndim);
  memcpy(shape + index->ndim, x->shape + 1, sizeof *shape * (size_t)(x->ndim - 1));
  if (!(st = vkt_to(&moved, index, vkt_tensor_device(x), index->dtype)) &&
      !(st = wrap_negative(&moved, x->shape[0], &wrapped)) && !(st = merge_leading(&wrapped, index->ndim, &flat)) &&
      !(st = vkt_index_select(x, 0, &flat, &picked)))
    st = vkt_view(out, &picked, index->ndim + x->ndim - 1, shape);
  vkt_tensor_release(&moved);
  vkt_tensor_release(&wrapped);
  vkt_tensor_release(&flat);
  vkt_tensor_release(&picked);
  return st;
}
