/* cpu/compact.c: compact.comp's modes on contiguous host tensors (compact.c makes them so): the
 * coordinates, positions or values of the elements where the prefix count steps up, and the scatter of
 * unique's inverse. The cpu device's kernel and the shader's reference. */
#include <string.h>

#include "../scan.h"

vkt_status vkt_cpu_compact(const vkt_op *op, const vkt_op_args *a) {
  (void)op;
  const vkt_tensor *in = a->in[0], *src = a->in[1];
  const int64_t *c = (const int64_t *)vkt_tensor_host(in);
  char *out = vkt_tensor_host(a->out);
  int size = src ? vkt_dtype_size(src->dtype) : 8;
  int64_t n = vkt_tensor_numel(in);
  for (int64_t i = 0; i < n; i++) {
    if (a->iparam[0] == VKT_COMPACT_SCATTER) {
      memcpy(out + c[i] * size, vkt_tensor_host(src) + i * size, (size_t)size);
      continue;
    }
    if (c[i] == (i > 0 ? c[i - 1] : 0))
      continue;
    int64_t at = c[i] - 1;
    if (a->iparam[0] == VKT_COMPACT_COORDS) {
      int64_t r = i;
      for (int d = in->ndim - 1; d >= 0; d--) {
        ((int64_t *)out)[at * in->ndim + d] = r % in->shape[d];
        r /= in->shape[d];
      }
    } else if (a->iparam[0] == VKT_COMPACT_INDEX) {
      ((int64_t *)out)[at] = i;
    } else {
      memcpy(out + at * size, vkt_tensor_host(src) + i * size, (size_t)size);
    }
  }
  return VKT_OK;
}
