/* cpu/logsumexp.c: logsumexp on strided host views, a row at a time in double: the row's max m, then
 * m + log(sum exp(x - m)); an infinite m is the answer itself (no inf - inf), a NaN anywhere gives NaN.
 * The cpu device's kernel and the shader's reference. */
#include <math.h>

#include "../reduce.h"

static double load(const vkt_tensor *in, int64_t at) {
  vkt_scalar v = vkt_scalar_load(in->dtype, vkt_tensor_host(in) + at * vkt_dtype_size(in->dtype));
  return v.is_float ? v.f : (double)v.i;
}

vkt_status vkt_cpu_logsumexp(const vkt_op *op, const vkt_op_args *a) {
  (void)op;
  vkt_reduce_layout l;
  vkt_reduce_layout_of(a, &l);
  const vkt_tensor *in = a->in[0];
  for (int64_t o = 0; o < l.nout; o++) {
    int64_t base[2], at[2];
    vkt_reduce_locate(l.krank, l.kshape, l.kstride, o, base);
    double m = -INFINITY, s = 0;
    bool nan = false;
    for (int64_t r = 0; r < l.nred; r++) {
      vkt_reduce_locate(l.rrank, l.rshape, l.rstride, r, at);
      double x = load(in, base[0] + at[0]);
      nan = nan || isnan(x);
      m = x > m ? x : m;
    }
    for (int64_t r = 0; r < l.nred && !isinf(m); r++) {
      vkt_reduce_locate(l.rrank, l.rshape, l.rstride, r, at);
      s += exp(load(in, base[0] + at[0]) - m);
    }
    double v = nan ? NAN : isinf(m) ? m : m + log(s);
    vkt_scalar_store(a->out->dtype, (vkt_scalar){true, v, 0},
                     vkt_tensor_host(a->out) + base[1] * vkt_dtype_size(a->out->dtype));
  }
  return VKT_OK;
}
