/* reduce.c (autograd): reductions, norms, median() of a whole tensor, softmax, cumsum and cumprod, and the
 * engine's sum back to a shape, with their backward formulas. x is saved in slot 0, the result y in slot 1. */
#include <math.h>
#include <string.h>

#include "../ops/reduce.h"
#include "../ops/scan.h"
#include "formula.h"
#include "shape.h"

#define X S(b, 0)
#define Y S(b, 1)
#define g G(b, 0)
#define DIMS (b->n->dims)
#define KEEP (b->n->flag)

static const vkt_var *cast(vkt_bw *b, const vkt_var *x, vkt_dtype dtype) {
  vkt_var out = {0};
  return x ? keep(b, vkt_ag_cast(x, vkt_tensor_device(&x->t), dtype, VKT_PRESERVE_FORMAT, false, &out), &out) : NULL;
}

static const vkt_var *reduce(vkt_bw *b, int id, const vkt_var *x, uint32_t dims) {
  vkt_var out = {0};
  return x ? keep(b, vkt_ag_reduce(id, x, dims, true, -1, 0, false, "sum", false, &out), &out) : NULL;
}

/* g and y (reduced without keepdim) given back their reduced dims, broadcast to x's shape. */
static const vkt_var *spread(vkt_bw *b, const vkt_var *v) {
  return unreduce(b, v, DIMS, KEEP, IN(b, 0)->ndim, IN(b, 0)->shape);
}

static int64_t reduced_count(vkt_bw *b) {
  int64_t n = 1;
  for (int d = 0; d < IN(b, 0)->ndim; d++)
    if (DIMS >> d & 1)
      n *= IN(b, 0)->shape[d];
  return n;
}

/* gs (g spread to x's shape) shared evenly among the elements where hit holds, over dims: amax, amin, median(). */
static const vkt_var *evenly(vkt_bw *b, const vkt_var *hit, uint32_t dims, const vkt_var *gs) {
  const vkt_var *count = reduce(b, VKT_OP_SUM, cast(b, hit, IN(b, 0)->dtype), dims);
  return keep_where(b, hit, dvd(b, gs, count));
}

/* The product of x's entries along dim but each one's own, exact and differentiable with zeros in x (cumprod
 * section). */
static const vkt_var *exclusive_products(vkt_bw *b, const vkt_var *x, int64_t dim);

/* prod's gradient with create_graph: g times the product of the others, which a second derivative sees through
 * (the masks of the form below are constants to it, and its y / x is 0 / 0 at a zero). */
static const vkt_var *prod_grad_exact(vkt_bw *b) {
  const vkt_shape_info *in = IN(b, 0);
  if (DIMS && !(DIMS & (DIMS - 1))) /* one dim */
    return mul(b, spread(b, g), exclusive_products(b, X, __builtin_ctz(DIMS)));
  int64_t n = 1; /* every dim: along x's flattened entries */
  for (int d = 0; d < in->ndim; d++)
    n *= in->shape[d];
  const vkt_var *others = exclusive_products(b, reshape(b, X, 1, &n), 0);
  return mul(b, spread(b, g), reshape(b, others, in->ndim, in->shape));
}

static void reduce_backward(vkt_bw *b) {
  const vkt_var *gx = NULL;
  switch (b->n->id) {
  case VKT_OP_SUM: gx = spread(b, g); break;
  case VKT_OP_MEAN: gx = muls(b, spread(b, g), 1.0 / (double)reduced_count(b)); break;
  case VKT_OP_AMAX:
  case VKT_OP_AMIN: /* shared evenly among the elements equal to the extreme */
    gx = evenly(b, bin(b, VKT_OP_EQ, X, spread(b, Y)), DIMS, spread(b, g));
    break;
  case VKT_OP_PROD: { /* y / x, and where x is 0 the product of the others (0 with a second 0) */
    if (vkt_grad_enabled()) { /* create_graph */
      gx = prod_grad_exact(b);
      break;
    }
    const vkt_var *zero = bins(b, VKT_OP_EQ, X, 0);
    const vkt_var *others = reduce(b, VKT_OP_PROD, bin(b, VKT_OP_ADD, X, cast(b, zero, IN(b, 0)->dtype)), DIMS);
    const vkt_var *zeros = reduce(b, VKT_OP_SUM, cast(b, zero, IN(b, 0)->dtype), DIMS);
    const vkt_var *at_zero = keep_where(b, bins(b, VKT_OP_EQ, zeros, 1), others);
    const vkt_var *gs = spread(b, g);
    const vkt_var *plain = mul(b, gs, dvd(b, spread(b, Y), X));
    vkt_var out = {0};
    gx = zero && plain ? keep(b,
                              vkt_ag_where(&zero->t, mul(b, gs, expand(b, at_zero, IN(b, 0)->ndim, IN(b, 0)->shape)),
                                           (vkt_scalar){0}, plain, (vkt_scalar){0}, &out),
                              &out)
                       : NULL;
    break;
  }
  case VKT_OP_VAR: { /* 2 (x - mean) / (n - correction); std: g / y (0 where y is 0, as PyTorch) (x - mean) / n' */
    double c = b->n->s[0].f, n = (double)reduced_count(b) - c;
    const vkt_var *centered = sub(b, X, reduce(b, VKT_OP_MEAN, X, DIMS));
    if (b->n->s[1].i) {
      const vkt_var *y = spread(b, Y);
      gx = mul(b, zero_where(b, bins(b, VKT_OP_EQ, y, 0), dvd(b, spread(b, g), y)), muls(b, centered, 1 / n));
    } else
      gx = mul(b, spread(b, g), muls(b, centered, 2 / n));
    break;
  }
  case VKT_OP_LOGSUMEXP: gx = mul(b, spread(b, g), un(b, VKT_OP_EXP, sub(b, X, spread(b, Y)))); break;
  }
  SET(b, 0, gx);
}

static const vkt_fn reduce_fns[] = {
    [VKT_OP_SUM - VKT_OP_SUM] = {"SumBackward1", reduce_backward},
    [VKT_OP_MEAN - VKT_OP_SUM] = {"MeanBackward1", reduce_backward},
    [VKT_OP_PROD - VKT_OP_SUM] = {"ProdBackward1", reduce_backward},
    [VKT_OP_AMAX - VKT_OP_SUM] = {"AmaxBackward0", reduce_backward},
    [VKT_OP_AMIN - VKT_OP_SUM] = {"AminBackward0", reduce_backward},
    [VKT_OP_VAR - VKT_OP_SUM] = {"VarBackward0", reduce_backward},
    [VKT_OP_LOGSUMEXP - VKT_OP_SUM] = {"LogsumexpBackward0", reduce_backward},
};
static const vkt_fn std_fn = {"StdBackward0", reduce_backward}, sum_all_fn = {"SumBackward0", reduce_backward},
                    mean_all_fn = {"MeanBackward0", reduce_backward}, max_all_fn = {"MaxBackward1", reduce_backward},
                    min_all_fn = {"MinBackward1", reduce_backward};

vkt_status vkt_ag_reduce(int id, const vkt_var *x, uint32_t dims, bool keepdim, int dtype, double correction, bool std,
                         const char *name, bool all_dims, vkt_var *out) {
  *out = (vkt_var){0};
  vkt_reduce_opts o = {.name = name, .dims = dims, .keepdim = keepdim, .dtype = dtype,
                       .correction = correction, .std = std, .all_dims = all_dims};
  vkt_status st = vkt_reduce(id, &x->t, &o, &out->t, NULL);
  if (st || id - VKT_OP_SUM >= (int)(sizeof reduce_fns / sizeof *reduce_fns) || !reduce_fns[id - VKT_OP_SUM].name ||
      !vkt_dtypes[out->t.dtype].is_float)
    return st;
  const vkt_fn *fn = std ? &std_fn : &reduce_fns[id - VKT_OP_SUM];
  if (all_dims) /* PyTorch's names of the whole-tensor forms */
    fn = id == VKT_OP_SUM                            ? &sum_all_fn
         : id == VKT_OP_MEAN                         ? &mean_all_fn
         : id == VKT_OP_AMAX && !strcmp(name, "max") ? &max_all_fn
         : id == VKT_OP_AMIN && !strcmp(name, "min") ? &min_all_fn
                                                     : fn;
  vkt_node *n = vkt_node_begin(fn, 1, &x, 1);
  if (!n)
    return VKT_OK;
  n->id = id;
  for (int d = 0; d < x->t.ndim; d++) /* a 0-d input "reduces" nothing */
    n->dims |= dims & (1u << d);
  n->flag = keepdim;
  n->s[0] = (vkt_scalar){true, correction, 0};
  n->s[1] = (vkt_scalar){false, 0, std};
  if (id != VKT_OP_SUM && id != VKT_OP_MEAN)
    vkt_node_save(n, 0, x, false, 0);
  if (id == VKT_OP_AMAX || id == VKT_OP_AMIN || id == VKT_OP_PROD || id == VKT_OP_LOGSUMEXP || std)
    vkt_node_save(n, 1, out, true, 0);
  vkt_node_output(n, 0, out);
  vkt_node_decref(n);
  return VKT_OK;
}

/* ---- max/min along a dim: the gradient goes to the index each value came from ---- */

vkt_status vkt_ag_reduce_indices(int id, const vkt_var *x, int dim, bool keepdim, const char *name, vkt_var *values,
                                 vkt_tensor *indices) {
  *values = (vkt_var){0};
  vkt_reduce_opts o = {.name = name, .dims = x->t.ndim ? 1u << dim : 0, .keepdim = keepdim, .dtype = -1};
  vkt_tensor v = {0};
  vkt_status st = vkt_reduce(id, &x->t, &o, &v, indices);
  if (st)
    return st;
  return vkt_ag_selected(x, dim, !keepdim, &v, indices, id == VKT_OP_AMAX ? "MaxBackward0" : "MinBackward0", values);
}

/* ---- softmax, log_softmax ---- */

static void softmax_backward(vkt_bw *b) {
  int64_t dim = b->n->iv[0];
  uint32_t d = IN(b, 0)->ndim ? 1u << dim : 0;
  if (b->n->id == VKT_OP_SOFTMAX) /* y (g - sum(g y)) */
    SET(b, 0, mul(b, Y, sub(b, g, reduce(b, VKT_OP_SUM, mul(b, g, Y), d))));
  else /* g - exp(y) sum(g) */
    SET(b, 0, sub(b, g, mul(b, un(b, VKT_OP_EXP, Y), reduce(b, VKT_OP_SUM, g, d))));
}

static const vkt_fn softmax_fn = {"SoftmaxBackward0", softmax_backward},
                    log_softmax_fn = {"LogSoftmaxBackward0", softmax_backward};

vkt_status vkt_ag_softmax(int id, const vkt_var *x, int64_t dim, int dtype, vkt_var *out) {
  *out = (vkt_var){0};
  vkt_status st = vkt_softmax(id, &x->t, dim, dtype, &out->t);
  int d;
  if (st || vkt_dim_wrap(dim, x->t.ndim ? x->t.ndim : 1, &d))
    return st;
  vkt_node *n = vkt_node_begin(id == VKT_OP_SOFTMAX ? &softmax_fn : &log_softmax_fn, 1, &x, 1);
  if (n) {
    n->id = id;
    n->iv[0] = d;
    vkt_node_save(n, 1, out, true, 0);
    vkt_node_output(n, 0, out);
    vkt_node_decref(n);
  }
  return VKT_OK;
}

/* ---- cumsum and cumprod ---- */

static const vkt_var *flip(vkt_bw *b, const vkt_var *x, int64_t dim) {
  vkt_var out = {0};
  return x ? keep(b, vkt_ag_flip(x, IN(b, 0)->ndim ? 1u << dim : 0, &out), &out) : NULL;
}

static const vkt_var *scan(vkt_bw *b, int id, const vkt_var *x, int64_t dim) {
  vkt_var out = {0};
  return x ? keep(b, (id == VKT_OP_CUMSUM ? vkt_ag_cumsum : vkt_ag_cumprod)(x, dim, -1, &out), &out) : NULL;
}

/* The sums of x from each position to the end of dim (PyTorch's reversed_cumsum). */
static const vkt_var *reversed_cumsum(vkt_bw *b, const vkt_var *x, int64_t dim) {
  return flip(b, scan(b, VKT_OP_CUMSUM, flip(b, x, dim), dim), dim);
}

static void cumsum_backward(vkt_bw *b) { SET(b, 0, reversed_cumsum(b, g, b->n->iv[0])); }

/* A constant made by an op of the tensor layer, as a temporary of the backward. */
static const vkt_var *constant(vkt_bw *b, vkt_status st, vkt_tensor *t) {
  vkt_var v = {*t, NULL};
  return keep(b, st, &v);
}

/* 1, then the cumulative products of x's entries but the last along dim: each position's product of the entries
 * before it. */
static const vkt_var *products_before(vkt_bw *b, const vkt_var *x, int64_t dim) {
  if (!x)
    return NULL;
  int64_t shape[VKT_MAX_DIMS], n = x->t.shape[dim];
  memcpy(shape, x->t.shape, sizeof shape);
  shape[dim] = 1;
  vkt_tensor t = {0};
  vkt_status st = vkt_tensor_empty(&t, vkt_tensor_device(&x->t), x->t.dtype, x->t.ndim, shape);
  const vkt_var *one = constant(b, st ? st : vkt_fill_(&t, num(1)), &t);
  const vkt_var *scanned = scan(b, VKT_OP_CUMPROD, narrow(b, x, dim, 0, n - 1), dim);
  vkt_var out = {0};
  return one && scanned ? keep(b, vkt_ag_cat(2, (const vkt_var *[]){one, scanned}, dim, &out), &out) : NULL;
}

static const vkt_var *flip_dim(vkt_bw *b, const vkt_var *x, int64_t dim) {
  vkt_var out = {0};
  return x ? keep(b, vkt_ag_flip(x, 1u << dim, &out), &out) : NULL;
}

/* Those before each entry times those after it, from two cumulative products (PyTorch's prod_safe_zeros_backward):
 * no division, so a zero in x is no special case. */
static const vkt_var *exclusive_products(vkt_bw *b, const vkt_var *x, int64_t dim) {
  if (!x || x->t.shape[dim] == 0)
    return x;
  bool broadcast = false; /* its slices are recorded as views, which a broadcast tensor cannot have: a copy */
  for (int d = 0; d < x->t.ndim; d++)
    broadcast |= x->t.strides[d] == 0 && x->t.shape[d] > 1;
  vkt_var copy = {0};
  if (broadcast)
    x = keep(b, vkt_ag_clone(x, VKT_CONTIGUOUS_FORMAT, &copy), &copy);
  const vkt_var *after = flip_dim(b, products_before(b, flip_dim(b, x, dim), dim), dim);
  return mul(b, products_before(b, x, dim), after);
}

/* With create_graph: the gradient of x_k is the sum over j >= k of g_j times the product of x_0..x_j but x_k,
 * taken from the cumulative products of an n x n square whose row k is the line with x_k as 1. O(n^2), as
 * PyTorch's own form for this case, but exact and differentiable with zeros in x, where the masks of the form
 * below are constants that a second derivative does not see. */
static const vkt_var *cumprod_grad_square(vkt_bw *b, int64_t dim) {
  const vkt_shape_info *in = IN(b, 0);
  int nd = in->ndim, last = nd - 1;
  int64_t n = in->shape[dim], shape[VKT_MAX_DIMS + 1], square[VKT_MAX_DIMS + 1];
  const vkt_var *xt = transpose(b, X, dim, last), *gt = transpose(b, g, dim, last);
  if (!xt)
    return NULL;
  for (int d = 0; d < nd; d++)
    shape[d] = square[d] = xt->t.shape[d];
  shape[last] = 1, shape[nd] = square[nd] = n; /* [..., 1, n] and [..., n, n] */
  vkt_tensor e = {0}, r = {0};
  const vkt_var *eye = bins(b, VKT_OP_NE, constant(b, vkt_eye(&e, in->device, in->dtype, n, n), &e), 0);
  const vkt_var *rows = add(b, zero_where(b, eye, expand(b, reshape(b, xt, nd + 1, shape), nd + 1, square)),
                            cast(b, eye, in->dtype));
  vkt_scalar from = {false, 0, 0}, to = {false, 0, n}, step = {false, 0, 1};
  const vkt_var *k = constant(b, vkt_arange(&r, in->device, VKT_INT64, from, to, step), &r);
  const vkt_var *later = bin(b, VKT_OP_GE, reshape(b, k, 2, (int64_t[]){1, n}), reshape(b, k, 2, (int64_t[]){n, 1}));
  const vkt_var *terms = keep_where(b, later, mul(b, scan(b, VKT_OP_CUMPROD, rows, nd), reshape(b, gt, nd + 1, shape)));
  return transpose(b, sum_dims(b, terms, 1u << nd, false), dim, last);
}

/* Before the first zero of a line, reversed_cumsum(g y) / x; at that zero, reversed_cumsum(g y') where y' is
 * the cumulative product with the zero taken as 1; after it 0 (every product there holds the zero). PyTorch's
 * formula, with masks instead of its test for zeros on the host. */
static void cumprod_backward(vkt_bw *b) {
  int64_t dim = b->n->iv[0];
  vkt_dtype dtype = IN(b, 0)->dtype;
  if (vkt_grad_enabled() && IN(b, 0)->ndim) { /* create_graph */
    SET(b, 0, cumprod_grad_square(b, dim));
    return;
  }
  const vkt_var *is_zero = bins(b, VKT_OP_EQ, X, 0), *zero = cast(b, is_zero, dtype);
  const vkt_var *zeros_so_far = scan(b, VKT_OP_CUMSUM, zero, dim);
  const vkt_var *before = bins(b, VKT_OP_EQ, zeros_so_far, 0);
  const vkt_var *first = bin(b, VKT_OP_LOGICAL_AND, is_zero, bins(b, VKT_OP_EQ, zeros_so_far, 1));
  const vkt_var *no_zero = add(b, X, zero); /* x with its zeros as 1 */
  const vkt_var *plain = dvd(b, reversed_cumsum(b, mul(b, g, Y), dim), no_zero);
  const vkt_var *zero_as_one = scan(b, VKT_OP_CUMPROD, add(b, X, cast(b, first, dtype)), dim);
  const vkt_var *at_zero = reversed_cumsum(b, mul(b, g, zero_as_one), dim);
  SET(b, 0, add(b, keep_where(b, before, plain), keep_where(b, first, at_zero)));
}

static const vkt_fn cumsum_fn = {"CumsumBackward0", cumsum_backward},
                    cumprod_fn = {"CumprodBackward0", cumprod_backward};

/* cumsum or cumprod (id), recorded: cumprod's backward reads x and y. */
static vkt_status scan_recorded(int id, const vkt_var *x, int64_t dim, int dtype, vkt_var *out) {
  *out = (vkt_var){0};
  vkt_status st = vkt_scan(id, &x->t, dim, dtype, &out->t, NULL);
  int d;
  if (st || !vkt_dtypes[out->t.dtype].is_float || vkt_dim_wrap(dim, x->t.ndim ? x->t.ndim : 1, &d))
    return st;
  vkt_node *n = vkt_node_begin(id == VKT_OP_CUMSUM ? &cumsum_fn : &cumprod_fn, 1, &x, 1);
  if (n) {
    n->iv[0] = d;
    if (id == VKT_OP_CUMPROD) {
      vkt_node_save(n, 0, x, false, 0);
      vkt_node_save(n, 1, out, true, 0);
    }
    vkt_node_output(n, 0, out);
    vkt_node_decref(n);
  }
  return VKT_OK;
}

vkt_status vkt_ag_cumsum(const vkt_var *x, int64_t dim, int dtype, vkt_var *out) {
  return scan_recorded(VKT_OP_CUMSUM, x, dim, dtype, out);
}

vkt_status vkt_ag_cumprod(const vkt_var *x, int64_t dim, int dtype, vkt_var *out) {
  return scan_recorded(VKT_OP_CUMPROD, x, dim, dtype, out);
}

/* ---- the engine's reduction of a broadcast gradient ---- */

vkt_status vkt_ag_sum_to(const vkt_var *x, int ndim, const int64_t *shape, vkt_var *out) {
  int lead = x->t.ndim - ndim;
  uint32_t dims = 0;
  for (int d = 0; d < x->t.ndim; d++)
    if (d < lead || (shape[d - lead] == 1 && x->t.shape[d] != 1))
      dims |= 1u << d;
  if (!dims)
    return vkt_ag_reshape(x, ndim, shape, false, out);
  vkt_var summed = {0};
  vkt_status st = vkt_ag_reduce(VKT_OP_SUM, x, dims, true, -1, 0, false, "sum", false, &summed);
  if (!st)
    st = vkt_ag_reshape(&summed, ndim, shape, false, out);
  vkt_var_release(&summed);
  return st;
}

/* ---- vector norms: ||x||_p over dims ---- */

static void norm_backward(vkt_bw *b) {
  double p = b->n->s[0].f;
  const vkt_var *gx = NULL, *sign = un(b, VKT_OP_SIGN, X);
  if (p == 0) {
    gx = muls(b, X, 0);
  } else if (p == 1) {
    gx = mul(b, spread(b, g), sign);
  } else if (isinf(p)) { /* shared evenly among the elements whose |x| is the norm, with x's sign */
    const vkt_var *hit = bin(b, VKT_OP_EQ, un(b, VKT_OP_ABS, X), spread(b, Y));
    const vkt_var *count = reduce(b, VKT_OP_SUM, cast(b, hit, IN(b, 0)->dtype), DIMS);
    gx = mul(b, keep_where(b, hit, dvd(b, spread(b, g), count)), sign);
  } else { /* sign(x) |x|^(p-1) / norm^(p-1), 0 where the norm is 0, and for p < 1 where x is (0^(p-1) is inf) */
    const vkt_var *y = spread(b, Y);
    const vkt_var *ratio =
        p == 2 ? dvd(b, X, y) : mul(b, sign, bins(b, VKT_OP_POW, dvd(b, un(b, VKT_OP_ABS, X), y), p - 1));
    if (p < 1)
      ratio = zero_where(b, bins(b, VKT_OP_EQ, X, 0), ratio);
    gx = zero_where(b, bins(b, VKT_OP_EQ, y, 0), mul(b, spread(b, g), ratio));
  }
  SET(b, 0, gx);
}

static const vkt_fn norm_fn = {"LinalgVectorNormBackward0", norm_backward};

vkt_status vkt_ag_vector_norm(const vkt_var *x, double ord, uint32_t dims, bool keepdim, int dtype, const char *name,
                              bool all_dims, vkt_var *out) {
  *out = (vkt_var){0};
  vkt_reduce_opts o = {.name = name, .dims = dims, .keepdim = keepdim, .dtype = dtype, .all_dims = all_dims};
  vkt_status st = vkt_vector_norm(&x->t, ord, &o, &out->t);
  if (st || !vkt_dtypes[out->t.dtype].is_float)
    return st;
  vkt_node *n = vkt_node_begin(&norm_fn, 1, &x, 1);
  if (n) {
    for (int d = 0; d < x->t.ndim; d++)
      n->dims |= dims & (1u << d);
    n->flag = keepdim;
    n->s[0] = (vkt_scalar){true, ord, 0};
    vkt_node_save(n, 0, x, false, 0);
    vkt_node_save(n, 1, out, true, 0);
    vkt_node_output(n, 0, out);
    vkt_node_decref(n);
  }
  return VKT_OK;
}

/* ---- linalg.matrix_norm with ord 'fro', ±1 or ±inf: recording, composed as PyTorch composes it (the vector
 * 2-norm; amax or amin of the sums of |A| over rows or columns), so its gradient is theirs ---- */

vkt_status vkt_ag_matrix_norm(const vkt_var *x, bool fro, double ord, int64_t d0, int64_t d1, bool keepdim, int dtype,
                              vkt_var *out) {
  *out = (vkt_var){0};
  int r0, r1;
  if (!vkt_grad_enabled() || !vkt_requires_grad(x) || x->t.ndim < 2 || vkt_dim_wrap(d0, x->t.ndim, &r0) ||
      vkt_dim_wrap(d1, x->t.ndim, &r1) || r0 == r1 || (dtype >= 0 && !vkt_dtypes[dtype].is_float))
    return vkt_matrix_norm(&x->t, fro, ord, d0, d1, keepdim, dtype, &out->t); /* it also raises the errors */
  uint32_t both = 1u << r0 | 1u << r1;
  if (fro)
    return vkt_ag_vector_norm(x, 2, both, keepdim, dtype, "linalg.matrix_norm", false, out);
  const vkt_scalar none = {false, 0, 0};
  vkt_var xf = {0}, a = {0}, sums = {0};
  vkt_status st = VKT_OK;
  if (dtype >= 0)
    st = vkt_ag_cast(x, vkt_tensor_device(&x->t), (vkt_dtype)dtype, VKT_PRESERVE_FORMAT, false, &xf);
  else
    vkt_var_share(&xf, x);
  /* ord ±1: the columns' sums (over the rows, r0), ord ±inf: the rows' (over r1); then their max or min */
  if (!st)
    st = vkt_ag_unary(VKT_OP_ABS, &xf, none, none, &a);
  int summed = isinf(ord) ? r1 : r0, then = isinf(ord) ? r0 : r1;
  if (!st)
    st = vkt_ag_reduce(VKT_OP_SUM, &a, 1u << summed, keepdim, -1, 0, false, "sum", false, &sums);
  if (!st) /* the other dim, one lower without keepdim where the summed one came before it */
    st = vkt_ag_reduce(ord > 0 ? VKT_OP_AMAX : VKT_OP_AMIN, &sums, 1u << (then - (!keepdim && summed < then)), keepdim,
                       -1, 0, false, ord > 0 ? "amax" : "amin", false, out);
  vkt_var_release(&xf);
  vkt_var_release(&a);
  vkt_var_release(&sums);
  return st;
}

/* ---- median() and nanmedian() of a whole tensor: the gradient is shared evenly among the elements equal to
 * the result, or among the NaNs where it is NaN (PyTorch's evenly_distribute_backward) ---- */

static void evenly_backward(vkt_bw *b) {
  const vkt_var *both_nan = bin(b, VKT_OP_LOGICAL_AND, un(b, VKT_OP_ISNAN, X), un(b, VKT_OP_ISNAN, Y));
  const vkt_var *hit = bin(b, VKT_OP_LOGICAL_OR, bin(b, VKT_OP_EQ, X, Y), both_nan);
  SET(b, 0, evenly(b, hit, IN(b, 0)->ndim ? (1u << IN(b, 0)->ndim) - 1 : 0, g));
}

vkt_status vkt_ag_evenly(const vkt_var *x, const char *name, vkt_tensor *value, vkt_var *out) {
  *out = (vkt_var){{0}, NULL};
  out->t = *value;
  *value = (vkt_tensor){0};
  if (!vkt_dtypes[out->t.dtype].is_float)
    return VKT_OK;
  static const vkt_fn median_fn = {"MedianBackward0", evenly_backward},
                      nanmedian_fn = {"NanmedianBackward0", evenly_backward};
  vkt_node *n = vkt_node_begin(strcmp(name, "nanmedian") ? &median_fn : &nanmedian_fn, 1, &x, 1);
  if (n) {
    vkt_node_save(n, 0, x, false, 0);
    vkt_node_save(n, 1, out, true, 0);
    vkt_node_output(n, 0, out);
    vkt_node_decref(n);
  }
  return VKT_OK;
}

/* ---- nansum, nanmean: the sum (mean) of the elements that are not NaN; NaN positions get no gradient ---- */

vkt_status vkt_ag_nan_reduce(int id, const vkt_var *x, uint32_t dims, bool keepdim, int dtype, const char *name,
                             bool all_dims, vkt_var *out) {
  *out = (vkt_var){0};
  vkt_reduce_opts o = {.name = name, .dims = dims, .keepdim = keepdim, .dtype = dtype, .all_dims = all_dims};
  if (!vkt_grad_enabled() || !vkt_requires_grad(x))
    return vkt_nan_reduce(id, &x->t, &o, &out->t);
  vkt_tensor nan = {0}, kept = {0}, count = {0};
  vkt_var clean = {0}, sum = {0};
  const vkt_scalar none = {false, 0, 0};
  vkt_status st = vkt_unary(VKT_OP_ISNAN, &x->t, none, none, NULL, &nan);
  if (!st) /* where(isnan(x), 0, x): the gradient passes where x is a number */
    st = vkt_ag_where(&nan, NULL, none, x, none, &clean);
  if (!st)
    st = vkt_ag_reduce(VKT_OP_SUM, &clean, dims, keepdim, dtype, 0, false, name, all_dims,
                       id == VKT_OP_MEAN ? &sum : out);
  if (!st && id == VKT_OP_MEAN) { /* divided by how many were numbers */
    vkt_reduce_opts c = {.name = name, .dims = dims, .keepdim = keepdim, .dtype = -1, .all_dims = all_dims};
    if (!(st = vkt_unary(VKT_OP_LOGICAL_NOT, &nan, none, none, NULL, &kept)) &&
        !(st = vkt_reduce(VKT_OP_SUM, &kept, &c, &count, NULL))) {
      vkt_var n = {count, NULL};
      count = (vkt_tensor){0};
      st = vkt_ag_binary(VKT_OP_DIV, &sum, none, &n, none, (vkt_scalar){false, 0, 1}, out);
      vkt_var_release(&n);
    }
  }
  vkt_tensor_release(&nan);
  vkt_tensor_release(&kept);
  vkt_tensor_release(&count);
  vkt_var_release(&clean);
  vkt_var_release(&sum);
  return st;
}
