/* cpu/loss.c: cross_entropy and nll_loss, forward and backward, on contiguous host tensors, a row at a time
 * in double: the cpu device's kernels and the reference of shaders/loss.comp, whose per-row math this
 * follows (loss.h says what a row is and what the forward leaves for the backward). Each row is read into
 * doubles once, so that the loops over its classes are plain and vectorise (vkt_exp included); rows are
 * shared among the pool's threads, after the targets are checked in order (the first bad one names the error). */
#include <math.h>
#include <stdlib.h>

#include "../loss.h"
#include "math.h"
#include "threads.h"

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

/* n elements of t from element at on, step apart, into out (and back). */
static void gather(const vkt_tensor *t, int64_t at, int64_t step, int64_t n, double *out) {
  const char *p = vkt_tensor_host(t);
  if (t->dtype == VKT_FLOAT32)
    for (int64_t k = 0; k < n; k++)
      out[k] = ((const float *)p)[at + k * step];
  else if (t->dtype == VKT_FLOAT64)
    for (int64_t k = 0; k < n; k++)
      out[k] = ((const double *)p)[at + k * step];
  else
    for (int64_t k = 0; k < n; k++)
      out[k] = load(t, at + k * step);
}

static void scatter(const vkt_tensor *t, int64_t at, int64_t step, int64_t n, const double *in) {
  char *p = vkt_tensor_host(t);
  if (t->dtype == VKT_FLOAT32)
    for (int64_t k = 0; k < n; k++)
      ((float *)p)[at + k * step] = (float)in[k];
  else if (t->dtype == VKT_FLOAT64)
    for (int64_t k = 0; k < n; k++)
      ((double *)p)[at + k * step] = in[k];
  else
    for (int64_t k = 0; k < n; k++)
      store(t, at + k * step, in[k]);
}

/* A kernel's view of its arguments, and its scratch rows: one row's values (x), its target probabilities (q),
 * the class weights (w, NULL where there are none), C doubles each. */
typedef struct {
  const vkt_op_args *a;
  vkt_loss_shape g;
  double ls; /* label_smoothing */
  bool prob;
  double *x, *q, *w;
} ctx;

static vkt_status ctx_new(ctx *c, const vkt_op_args *a, const vkt_tensor *weight, int64_t weight_at) {
  *c = (ctx){a, vkt_loss_shape_of(a->in[0]), a->param[0].f, (a->flags & VKT_LOSS_PROB) != 0, NULL, NULL, NULL};
  c->x = malloc(3 * (size_t)(c->g.c ? c->g.c : 1) * sizeof *c->x);
  if (!c->x)
    return vkt_fail(VKT_ERR_NOMEM, "out of host memory");
  c->q = c->x + c->g.c;
  if (weight)
    gather(weight, weight_at, 1, c->g.c, c->w = c->q + c->g.c);
  return VKT_OK;
}

/* Reads row r into c->x (and its probabilities into c->q); returns where its class 0 lies. */
static int64_t read_row(ctx *c, int64_t r) {
  int64_t base = r / c->g.s * c->g.c * c->g.s + r % c->g.s;
  gather(c->a->in[0], base, c->g.s, c->g.c, c->x);
  if (c->prob)
    gather(c->a->in[1], base, c->g.s, c->g.c, c->q);
  return base;
}

/* What class k weighs in the smoothed target, besides the target class's own (1 - ls) w_t: its weight times
 * its smoothed probability, or ls / C of its weight. */
static double coef(const ctx *c, int64_t k) {
  double w = c->w ? c->w[k] : 1, share = c->ls / (double)c->g.c;
  return c->prob ? w * (c->q[k] * (1 - c->ls) + share) : w * share;
}

/* log(sum(exp(x))) of n values: their max m, then m + log(sum(exp(x - m))), each in 8 lanes so that the loops
 * vectorise; an infinite m is the answer itself (no inf - inf), a NaN anywhere gives NaN. */
VKT_SIMD static double lse_of(const double *x, int64_t n) {
  double lane[8], acc[8] = {0}, m = -INFINITY, s = 0;
  int nans = 0;
  int64_t k = 0;
  for (int j = 0; j < 8; j++)
    lane[j] = -INFINITY;
  for (; k + 8 <= n; k += 8)
    for (int j = 0; j < 8; j++) {
      nans += x[k + j] != x[k + j];
      lane[j] = x[k + j] > lane[j] ? x[k + j] : lane[j];
    }
  for (; k < n; k++) {
    nans += x[k] != x[k];
    m = x[k] > m ? x[k] : m;
  }
  for (int j = 0; j < 8; j++)
    m = lane[j] > m ? lane[j] : m;
  if (nans || isinf(m))
    return nans ? NAN : m;
  for (k = 0; k + 8 <= n; k += 8)
    for (int j = 0; j < 8; j++)
      acc[j] += vkt_exp(x[k + j] - m);
  for (; k < n; k++)
    s += vkt_exp(x[k] - m);
  return m + log(s + ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7])));
}

/* The row's log-sum-exp, and the sums of coef * x and of coef where smoothing or probabilities make every class
 * weigh in (else no class but the target does, and a -inf logit elsewhere must not make a NaN). */
static double row_lse(const ctx *c, double *ux, double *u) {
  *ux = *u = 0;
  for (int64_t k = 0; k < c->g.c && (c->prob || c->ls > 0); k++) {
    double w = coef(c, k);
    *ux += w * c->x[k], *u += w;
  }
  return lse_of(c->x, c->g.c);
}

/* Row r's loss, target weight, log-sum-exp and target mass (loss.h's rows); its target was checked. */
static void forward_row(ctx *c, bool nll, int64_t r, double v[VKT_LOSS_ROWS]) {
  read_row(c, r);
  double ux = 0, u = 0, lse = nll ? 0 : row_lse(c, &ux, &u);
  v[VKT_LOSS_LSE] = lse;
  if (c->prob) {
    v[VKT_LOSS_LOSS] = lse * u - ux, v[VKT_LOSS_WEIGHT] = 1, v[VKT_LOSS_MASS] = u;
    return;
  }
  int64_t t = load_index(c->a->in[1], r);
  bool ignored = t == c->a->iparam[0];
  double wt = ignored ? 0 : c->w ? c->w[t] : 1, xt = ignored ? 0 : c->x[t], keep = 1 - c->ls;
  v[VKT_LOSS_WEIGHT] = wt;
  if (nll) {
    v[VKT_LOSS_LOSS] = -wt * xt, v[VKT_LOSS_MASS] = wt;
  } else { /* (1 - ls) of the target's loss, ls / C of every class's (u, ux carry the ls / C) */
    v[VKT_LOSS_LOSS] = ignored ? 0 : keep * wt * (lse - xt) + lse * u - ux;
    v[VKT_LOSS_MASS] = ignored ? 0 : keep * wt + u;
  }
}

static void forward_part(ctx *c, bool nll, int64_t r0, int64_t r1) {
  int64_t stride = c->a->out->shape[1];
  for (int64_t r = r0; r < r1; r++) {
    double v[VKT_LOSS_ROWS];
    forward_row(c, nll, r, v);
    for (int k = 0; k < VKT_LOSS_ROWS; k++)
      store(c->a->out, k * stride + r, v[k]);
  }
}

/* x := scale * exp(x - lse) * mass, over n values (a loop that vectorises). */
VKT_SIMD static void softmax_part(double *x, int64_t n, double lse, double mass, double scale) {
  for (int64_t k = 0; k < n; k++)
    x[k] = scale * vkt_exp(x[k] - lse) * mass;
}

/* The backward's pack (in[2]) holds per row lse, mass and the loss's gradient, then the class weights. Row r's
 * gradient replaces its values in c->x: scale (softmax * mass - coefs - the target's own), zeros where ignored. */
static void backward_row(ctx *c, bool nll, int64_t r) {
  const vkt_tensor *pack = c->a->in[2];
  int64_t R = c->g.r, n = c->g.c;
  double lse = load(pack, r), mass = load(pack, R + r), scale = load(pack, 2 * R + r);
  int64_t t = c->prob ? -1 : load_index(c->a->in[1], r);
  bool ignored = !c->prob && (t == c->a->iparam[0] || t < 0 || t >= n);
  if (ignored || nll) {
    for (int64_t k = 0; k < n; k++)
      c->x[k] = 0;
  } else {
    softmax_part(c->x, n, lse, mass, scale);
  }
  for (int64_t k = 0; k < n && !ignored && !nll && (c->prob || c->ls > 0); k++)
    c->x[k] -= scale * coef(c, k);
  if (t >= 0 && !ignored)
    c->x[t] -= scale * (nll ? 1 : 1 - c->ls) * (c->w ? c->w[t] : 1);
}

static void backward_part(ctx *c, bool nll, int64_t r0, int64_t r1) {
  for (int64_t r = r0; r < r1; r++) {
    int64_t base = read_row(c, r);
    backward_row(c, nll, r);
    scatter(c->a->out, base, c->g.s, c->g.c, c->x);
  }
}

/* A kernel run over the pool's threads: each range of rows takes its own scratch. */
typedef struct {
  const vkt_op_args *a;
  bool nll, backward;
  bool failed; /* a range found no memory for its scratch */
} job;

/* The first target outside [0, C) that is not ignore_index, in row order: PyTorch's IndexError. */
static vkt_status check_targets(const vkt_op_args *a, const vkt_loss_shape *g) {
  for (int64_t r = 0; r < g->r && !(a->flags & VKT_LOSS_PROB); r++) {
    int64_t t = load_index(a->in[1], r);
    if (t != a->iparam[0] && (t < 0 || t >= g->c))
      return vkt_fail(VKT_ERR_INDEX, "Target %lld is out of bounds.", (long long)t);
  }
  return VKT_OK;
}

static void run_part(void *p, int64_t r0, int64_t r1) {
  job *j = p;
  const vkt_op_args *a = j->a;
  int64_t r = vkt_loss_shape_of(a->in[0]).r;
  bool weighted = j->backward ? vkt_tensor_numel(a->in[2]) > 3 * r : a->in[2] != NULL;
  ctx c;
  if (ctx_new(&c, a, weighted ? a->in[2] : NULL, j->backward ? 3 * r : 0)) {
    __atomic_store_n(&j->failed, true, __ATOMIC_RELAXED);
    return;
  }
  if (j->backward)
    backward_part(&c, j->nll, r0, r1);
  else
    forward_part(&c, j->nll, r0, r1);
  free(c.x);
}

/* Runs the kernel's rows over the pool. */
static vkt_status run_rows(const vkt_op_args *a, bool nll, bool backward) {
  vkt_loss_shape g = vkt_loss_shape_of(a->in[0]);
  job j = {a, nll, backward, false};
  vkt_parallel_for(g.r, VKT_GRAIN / (g.c + 1) + 1, run_part, &j);
  return j.failed ? vkt_fail(VKT_ERR_NOMEM, "out of host memory") : VKT_OK;
}

vkt_status vkt_cpu_loss(const vkt_op *op, const vkt_op_args *a) {
  vkt_loss_shape g = vkt_loss_shape_of(a->in[0]);
  int64_t stride = a->out->shape[1];
  vkt_status st = check_targets(a, &g);
  if (!st)
    st = run_rows(a, op == &vkt_ops[VKT_OP_NLL_LOSS], false);
  for (int64_t r = g.r; r < stride && !st; r++) /* the padding: zeros, for the sums over rows */
    for (int k = 0; k < VKT_LOSS_ROWS; k++)
      store(a->out, k * stride + r, 0);
  return st;
}

vkt_status vkt_cpu_loss_backward(const vkt_op *op, const vkt_op_args *a) {
  return run_rows(a, op == &vkt_ops[VKT_OP_NLL_LOSS_BACKWARD], true);
}
