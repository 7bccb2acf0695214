/* cpu/reduce.c: the reduce family on strided host views, row by row over the layout the shader uses.
 * Float math runs in double (sums compensated), integer math in int64 with wrap-around; var takes two
 * passes and softmax three, as in the shader. The cpu device's kernel and the shader's reference. */
#include <math.h>
#include <string.h>

#include "../reduce.h"

/* One row of the input: the elements reduced into one output element. */
typedef struct {
  const vkt_reduce_layout *l;
  const char *in; /* host address of the input's element 0 */
  vkt_dtype dtype, compute;
  int64_t base; /* elements: the row's first element */
} row;

/* Offsets (elements) of element i of a merged half in the input (at[0]) and the output (at[1]). */
static void locate(int rank, const int64_t *shape, const int64_t *stride, int64_t i, int64_t at[2]) {
  at[0] = at[1] = 0;
  for (int d = rank - 1; d >= 0; d--) {
    int64_t c = i % shape[d];
    i /= shape[d];
    at[0] += c * stride[d];
    at[1] += c * stride[VKT_MAX_DIMS + d];
  }
}

/* Element r of the row in the compute type, as the shader's LOAD converts it. */
static vkt_scalar load(const row *w, int64_t r) {
  int64_t at[2];
  locate(w->l->rrank, w->l->rshape, w->l->rstride, r, at);
  vkt_scalar v = vkt_scalar_load(w->dtype, w->in + (w->base + at[0]) * vkt_dtype_size(w->dtype));
  if (!vkt_dtypes[w->compute].is_float)
    return v.is_float ? (vkt_scalar){false, 0, (int64_t)v.f} : v;
  double f = v.is_float ? v.f : (double)v.i;
  return (vkt_scalar){true, w->compute == VKT_FLOAT32 ? (double)(float)f : f, 0};
}

/* Sum of (x - shift)^power over the row: Neumaier-compensated in double, or wrapping int64. */
static vkt_scalar sum_row(const row *w, double shift, int power) {
  double s = 0, c = 0;
  uint64_t n = 0;
  for (int64_t r = 0; r < w->l->nred; r++) {
    vkt_scalar v = load(w, r);
    if (!v.is_float) {
      n += (uint64_t)v.i;
      continue;
    }
    double x = power == 2 ? (v.f - shift) * (v.f - shift) : v.f - shift, t = s + x;
    c += fabs(s) >= fabs(x) ? (s - t) + x : (x - t) + s;
    s = t;
  }
  return vkt_dtypes[w->compute].is_float ? (vkt_scalar){true, s + c, 0} : (vkt_scalar){false, 0, (int64_t)n};
}

/* prod, all, any */
static vkt_scalar fold_row(const row *w, int id) {
  bool fl = vkt_dtypes[w->compute].is_float;
  double f = 1;
  uint64_t i = 1;
  for (int64_t r = 0; r < w->l->nred; r++) {
    vkt_scalar v = load(w, r);
    if (id != VKT_OP_PROD) {
      if ((fl ? v.f != 0 : v.i != 0) != (id == VKT_OP_ALL))
        return (vkt_scalar){false, 0, id == VKT_OP_ANY};
    } else if (fl) {
      f *= v.f;
    } else {
      i *= (uint64_t)v.i;
    }
  }
  if (id != VKT_OP_PROD)
    return (vkt_scalar){false, 0, id == VKT_OP_ALL};
  return fl ? (vkt_scalar){true, f, 0} : (vkt_scalar){false, 0, (int64_t)i};
}

/* The row's largest (smallest) element and its position: the first NaN, else the first extreme. */
static int64_t best_row(const row *w, bool largest, vkt_scalar *best) {
  int64_t at = 0;
  *best = load(w, 0);
  for (int64_t r = 1; r < w->l->nred && !(best->is_float && isnan(best->f)); r++) {
    vkt_scalar v = load(w, r);
    bool better = v.is_float ? isnan(v.f) || (largest ? v.f > best->f : v.f < best->f)
                             : (largest ? v.i > best->i : v.i < best->i);
    if (better)
      *best = v, at = r;
  }
  return at;
}

static double var_row(const row *w, const vkt_op_args *a) {
  double n = (double)w->l->nred, mean = sum_row(w, 0, 1).f / n, m2 = sum_row(w, mean, 2).f;
  double d = fmax(n - a->param[0].f, 0), v = d > 0 ? m2 / d : m2 > 0 ? INFINITY : NAN;
  return a->flags & VKT_REDUCE_SQRT ? sqrt(v) : v;
}

/* The output element of a reduction's row; *index gets the position for argmax/argmin and max/min. */
static vkt_scalar reduce_row(int id, const row *w, const vkt_op_args *a, int64_t *index) {
  vkt_scalar v;
  switch (id) {
  case VKT_OP_SUM: return sum_row(w, 0, 1);
  case VKT_OP_MEAN: return (vkt_scalar){true, sum_row(w, 0, 1).f / (double)w->l->nred, 0};
  case VKT_OP_VAR: return (vkt_scalar){true, var_row(w, a), 0};
  case VKT_OP_PROD:
  case VKT_OP_ALL:
  case VKT_OP_ANY: return fold_row(w, id);
  default: /* amax, amin, argmax, argmin */
    *index = best_row(w, id == VKT_OP_AMAX || id == VKT_OP_ARGMAX, &v);
    return id == VKT_OP_ARGMAX || id == VKT_OP_ARGMIN ? (vkt_scalar){false, 0, *index} : v;
  }
}

static void softmax_row(const row *w, const vkt_tensor *out, int64_t out_base, bool log_out) {
  vkt_scalar m;
  best_row(w, true, &m);
  double s = 0;
  for (int64_t r = 0; r < w->l->nred; r++)
    s += exp(load(w, r).f - m.f);
  char *dst = vkt_tensor_host(out);
  int size = vkt_dtype_size(out->dtype);
  for (int64_t r = 0; r < w->l->nred; r++) {
    int64_t at[2];
    double x = load(w, r).f - m.f;
    locate(w->l->rrank, w->l->rshape, w->l->rstride, r, at);
    vkt_scalar_store(out->dtype, (vkt_scalar){true, log_out ? x - log(s) : exp(x) / s, 0},
                     dst + (out_base + at[1]) * size);
  }
}

vkt_status vkt_cpu_reduce(const vkt_op *op, const vkt_op_args *a) {
  int id = (int)(op - vkt_ops);
  vkt_reduce_layout l;
  vkt_reduce_layout_of(a, &l);
  row w = {&l, vkt_tensor_host(a->in[0]), a->in[0]->dtype, a->compute, 0};
  char *dst = vkt_tensor_host(a->out);
  int size = vkt_dtype_size(a->out->dtype);
  for (int64_t o = 0; o < l.nout; o++) {
    int64_t at[2], index = 0;
    locate(l.krank, l.kshape, l.kstride, o, at);
    w.base = at[0];
    if (id == VKT_OP_SOFTMAX || id == VKT_OP_LOG_SOFTMAX) {
      softmax_row(&w, a->out, at[1], id == VKT_OP_LOG_SOFTMAX);
      continue;
    }
    vkt_scalar_store(a->out->dtype, reduce_row(id, &w, a, &index), dst + at[1] * size);
    if (a->out2) /* the indices have the output's shape and strides */
      vkt_scalar_store(VKT_INT64, (vkt_scalar){false, 0, index}, vkt_tensor_host(a->out2) + at[1] * 8);
  }
  return VKT_OK;
}
