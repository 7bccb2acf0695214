/* cpu/loss.c: cross_entropy and nll_loss, forward and backward, on contiguous host tensors, a row at a time
 * in double: the cpu device's kernels and the reference of shaders/loss.comp, whose per-row math this
 * follows (loss.h says what a row is and what the forward leaves for the backward). */
#include <math.h>

#include "../loss.h"

static double load(const vkt_tensor *t, int64_t i) {
  vkt_scalar v = vkt_scalar_load(t->dtype, vkt_tensor_host(t) + i * vkt_dtype_size(t->dtype));
  return v.is_float ? v.f : (double)v.i;
}

static void store(const vkt_tensor *t, int64_t i, double v) {
  vkt_scalar_store(t->dtype, (vkt_scalar){true, v, 0}, vkt_tensor_host(t) + i * vkt_dtype_size(t->dtype));
}

static int64_t load_index(const vkt_tensor *t, int64_t i) {
  return vkt_scalar_load(t->dtype, vkt_tensor_host(t) + i * vkt_dtype_size(t->dtype)).i;
}

/* One row's view: where its class c lies in the input, and what the op's arguments say of it. */
typedef struct {
  const vkt_op_args *a;
  vkt_loss_shape g;
  int64_t base; /* elements: the row's class 0 in the input; class c is at base + c * g.s */
  double ls;    /* label_smoothing */
  bool prob;
} row;

static row row_at(const vkt_op_args *a, int64_t r) {
  vkt_loss_shape g = vkt_loss_shape_of(a->in[0]);
  return (row){a, g, r / g.s * g.c * g.s + r % g.s, a->param[0].f, (a->flags & VKT_LOSS_PROB) != 0};
}

/* What class c's value weighs in the smoothed target: its weight, times its smoothed probability. */
static double coef(const row *w, const vkt_tensor *weight, int64_t weight_at, int64_t c) {
  double u = weight ? load(weight, weight_at + c) : 1;
  if (w->prob)
    u *= load(w->a->in[1], w->base + c * w->g.s) * (1 - w->ls) + w->ls / (double)w->g.c;
  return u;
}

/* The row's log-sum-exp (its max m, then the shifted sum), and sums of coef * x and of coef. */
static double row_lse(const row *w, double *ux, double *u) {
  const vkt_tensor *x = w->a->in[0], *weight = w->a->in[2];
  double m = -INFINITY, s = 0;
  bool nan = false, coefs = w->prob || w->ls > 0;
  *ux = *u = 0;
  for (int64_t c = 0; c < w->g.c; c++) {
    double v = load(x, w->base + c * w->g.s), k = coefs ? coef(w, weight, 0, c) : 0;
    nan = nan || isnan(v);
    m = v > m ? v : m;
    if (coefs) /* else no class but the target weighs in: a -inf logit elsewhere must not make a NaN */
      *ux += k * v, *u += k;
  }
  for (int64_t c = 0; c < w->g.c && !isinf(m); c++)
    s += exp(load(x, w->base + c * w->g.s) - m);
  return nan ? NAN : isinf(m) ? m : m + log(s);
}

static vkt_status forward_row(const vkt_op_args *a, bool nll, int64_t r) {
  row w = row_at(a, r);
  const vkt_tensor *x = a->in[0], *weight = a->in[2];
  double loss, wt = 1, lse = 0, mass, ux = 0, u = 0;
  if (!nll)
    lse = row_lse(&w, &ux, &u);
  if (w.prob) {
    loss = lse * u - ux, mass = u;
  } else {
    int64_t t = load_index(a->in[1], r);
    if (t != a->iparam[0] && (t < 0 || t >= w.g.c))
      return vkt_fail(VKT_ERR_INDEX, "Target %lld is out of bounds.", (long long)t);
    bool ignored = t == a->iparam[0];
    wt = ignored ? 0 : weight ? load(weight, t) : 1;
    double xt = ignored ? 0 : load(x, w.base + t * w.g.s);
    if (nll) {
      loss = -wt * xt, mass = wt;
    } else { /* (1 - ls) of the target's loss, ls / C of every class's */
      double k = w.ls / (double)w.g.c;
      loss = ignored ? 0 : (1 - w.ls) * wt * (lse - xt) + k * (lse * u - ux);
      mass = ignored ? 0 : (1 - w.ls) * wt + k * u;
    }
  }
  double v[VKT_LOSS_ROWS] = {
      [VKT_LOSS_LOSS] = loss, [VKT_LOSS_WEIGHT] = wt, [VKT_LOSS_LSE] = lse, [VKT_LOSS_MASS] = mass};
  for (int k = 0; k < VKT_LOSS_ROWS; k++)
    store(a->out, k * a->out->shape[1] + r, v[k]);
  return VKT_OK;
}

vkt_status vkt_cpu_loss(const vkt_op *op, const vkt_op_args *a) {
  bool nll = op == &vkt_ops[VKT_OP_NLL_LOSS];
  vkt_loss_shape g = vkt_loss_shape_of(a->in[0]);
  vkt_status st = VKT_OK;
  for (int64_t r = 0; r < g.r && !st; r++)
    st = forward_row(a, nll, r);
  for (int64_t r = g.r; r < a->out->shape[1]; r++) /* the padding: zeros, for the sums over rows */
    for (int k = 0; k < VKT_LOSS_ROWS; k++)
      store(a->out, k * a->out->shape[1] + r, 0);
  return st;
}

/* The backward's pack (in[2]) holds per row lse, mass and the loss's gradient, then the class weights. */
static void backward_row(const vkt_op_args *a, bool nll, int64_t r) {
  row w = row_at(a, r);
  const vkt_tensor *x = a->in[0], *pack = a->in[2];
  int64_t R = w.g.r;
  bool weighted = vkt_tensor_numel(pack) > 3 * R;
  double lse = load(pack, r), mass = load(pack, R + r), scale = load(pack, 2 * R + r);
  int64_t t = w.prob ? -1 : load_index(a->in[1], r);
  bool ignored = !w.prob && (t == a->iparam[0] || t < 0 || t >= w.g.c);
  double wt = ignored ? 0 : weighted ? load(pack, 3 * R + t) : 1;
  for (int64_t c = 0; c < w.g.c; c++) {
    int64_t i = w.base + c * w.g.s;
    double gx;
    if (nll) {
      gx = c == t && !ignored ? -scale * wt : 0;
    } else if (ignored) {
      gx = 0;
    } else {
      double k = w.prob
                     ? coef(&w, weighted ? pack : NULL, 3 * R, c)
                     : (c == t ? (1 - w.ls) * wt : 0) + w.ls / (double)w.g.c * (weighted ? load(pack, 3 * R + c) : 1);
      gx = scale * (exp(load(x, i) - lse) * mass - k);
    }
    store(a->out, i, gx);
  }
}

vkt_status vkt_cpu_loss_backward(const vkt_op *op, const vkt_op_args *a) {
  bool nll = op == &vkt_ops[VKT_OP_NLL_LOSS_BACKWARD];
  vkt_loss_shape g = vkt_loss_shape_of(a->in[0]);
  for (int64_t r = 0; r < g.r; r++)
    backward_row(a, nll, r);
  return VKT_OK;
}
