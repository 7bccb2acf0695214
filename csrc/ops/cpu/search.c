/* cpu/search.c: searchsorted on contiguous host tensors (search.c makes them so), with search.comp's
 * comparisons in double or int64. The cpu device's kernel and the shader's reference. */
#include "../scan.h"

vkt_status vkt_cpu_search(const vkt_op *op, const vkt_op_args *a) {
  (void)op;
  const vkt_tensor *seq = a->in[0], *val = a->in[1], *sorter = a->in[2];
  int64_t slen, rows, vlast, n = vkt_tensor_numel(a->out);
  vkt_search_layout(a, &slen, &rows, &vlast);
  int size = vkt_dtype_size(seq->dtype);
  bool fl = vkt_dtypes[seq->dtype].is_float, right = a->flags & VKT_SEARCH_RIGHT;
  for (int64_t i = 0; i < n; i++) {
    int64_t base = rows > 1 ? (i / vlast) * slen : 0, lo = 0, hi = slen;
    vkt_scalar v = vkt_scalar_load(val->dtype, vkt_tensor_host(val) + i * size);
    while (lo < hi) {
      int64_t mid = lo + (hi - lo) / 2, at = sorter ? ((const int64_t *)vkt_tensor_host(sorter))[base + mid] : mid;
      vkt_scalar m = vkt_scalar_load(seq->dtype, vkt_tensor_host(seq) + (base + at) * size);
      bool past = fl ? !(right ? m.f > v.f : m.f >= v.f) : !(right ? m.i > v.i : m.i >= v.i);
      if (past)
        lo = mid + 1;
      else
        hi = mid;
    }
    vkt_scalar_store(a->out->dtype, (vkt_scalar){false, 0, lo},
                     vkt_tensor_host(a->out) + i * vkt_dtype_size(a->out->dtype));
  }
  return VKT_OK;
}
