/* cpu/scan.c: cumsum, cumprod, cummax and cummin on strided host views, a row at a time: float math in
 * double (as PyTorch's CPU kernels accumulate), integer math in int64 with wrap-around. The cpu device's
 * kernel and the shader's reference. */
#include <math.h>

#include "../reduce.h"

/* Element x as the compute type: a double for floats, an int64 otherwise (in .i). */
static vkt_scalar as_compute(vkt_scalar x, bool fl) {
  if (fl)
    return (vkt_scalar){true, x.is_float ? x.f : (double)x.i, 0};
  return x.is_float ? (vkt_scalar){false, 0, (int64_t)x.f} : x;
}

/* Whether x, later in the row, takes the place of the running extreme a (PyTorch's rule: NaN always
 * does, and of equal values the later one). */
static bool takes_over(vkt_scalar a, vkt_scalar x, bool largest) {
  if (x.is_float)
    return isnan(x.f) || (!isnan(a.f) && (largest ? x.f >= a.f : x.f <= a.f));
  return largest ? x.i >= a.i : x.i <= a.i;
}

static void scan_row(int id, const vkt_op_args *a, const vkt_reduce_layout *l, int64_t in_base, int64_t out_base) {
  bool fl = vkt_dtypes[a->compute].is_float;
  const vkt_tensor *in = a->in[0], *out = a->out;
  int isize = vkt_dtype_size(in->dtype), osize = vkt_dtype_size(out->dtype);
  vkt_scalar acc = {fl, id == VKT_OP_CUMPROD, id == VKT_OP_CUMPROD};
  int64_t best = 0;
  for (int64_t r = 0; r < l->nred; r++) {
    int64_t at[2];
    vkt_reduce_locate(l->rrank, l->rshape, l->rstride, r, at);
    vkt_scalar x = as_compute(vkt_scalar_load(in->dtype, vkt_tensor_host(in) + (in_base + at[0]) * isize), fl);
    if (id == VKT_OP_CUMSUM)
      acc =
          fl ? (vkt_scalar){true, acc.f + x.f, 0} : (vkt_scalar){false, 0, (int64_t)((uint64_t)acc.i + (uint64_t)x.i)};
    else if (id == VKT_OP_CUMPROD)
      acc =
          fl ? (vkt_scalar){true, acc.f * x.f, 0} : (vkt_scalar){false, 0, (int64_t)((uint64_t)acc.i * (uint64_t)x.i)};
    else if (r == 0 || takes_over(acc, x, id == VKT_OP_CUMMAX))
      acc = x, best = r;
    vkt_scalar_store(out->dtype, acc, vkt_tensor_host(out) + (out_base + at[1]) * osize);
    if (a->out2) /* the indices have the output's shape and strides */
      vkt_scalar_store(VKT_INT64, (vkt_scalar){false, 0, best}, vkt_tensor_host(a->out2) + (out_base + at[1]) * 8);
  }
}

vkt_status vkt_cpu_scan(const vkt_op *op, const vkt_op_args *a) {
  vkt_reduce_layout l;
  vkt_reduce_layout_of(a, &l);
  for (int64_t o = 0; o < l.nout; o++) {
    int64_t at[2];
    vkt_reduce_locate(l.krank, l.kshape, l.kstride, o, at);
    scan_row((int)(op - vkt_ops), a, &l, at[0], at[1]);
  }
  return VKT_OK;
}
