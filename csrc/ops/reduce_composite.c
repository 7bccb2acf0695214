/* reduce_composite.c: reductions PyTorch users reach for that are a few of vkt's ops in sequence (as
 * PyTorch's CompositeImplicit ops are): nansum, nanmean, count_nonzero, vector and matrix norms. Each step runs on the
 * device of its input (shaders on vulkan), so none leaves it. */
#include <math.h>
#include <string.h>

#include "reduce.h"
#include "shape.h"

static const vkt_scalar one = {false, 0, 1};

static vkt_status unary(int id, const vkt_tensor *x, vkt_tensor *out) {
  return vkt_unary(id, x, (vkt_scalar){true, -INFINITY, 0}, (vkt_scalar){true, INFINITY, 0}, NULL, out);
}

static vkt_status binary(int id, const vkt_tensor *a, const vkt_tensor *b, vkt_scalar s, vkt_tensor *out) {
  vkt_operand ao = {.t = a}, bo = {.t = b, .s = s};
  return vkt_binary(id, ao, bo, one, NULL, out);
}

/* x with the dims of mask squeezed (x had them kept as size 1). */
static vkt_status squeeze_mask(const vkt_tensor *x, uint32_t mask, vkt_tensor *out) {
  int64_t dims[VKT_MAX_DIMS];
  int n = 0;
  for (int d = 0; d < x->ndim; d++)
    if (mask >> d & 1)
      dims[n++] = d;
  return n ? vkt_squeeze(out, x, n, dims) : (vkt_tensor_share(out, x), VKT_OK);
}

static int64_t reduced_count(const vkt_tensor *x, uint32_t dims) {
  int64_t n = 1;
  for (int d = 0; d < x->ndim; d++)
    if (dims >> d & 1)
      n *= x->shape[d];
  return n;
}

vkt_status vkt_nan_reduce(int id, const vkt_tensor *x, const vkt_reduce_opts *o, vkt_tensor *out) {
  vkt_tensor nan = {0}, z = {0}, ok = {0}, s = {0}, n = {0};
  vkt_status st;
  if (id == VKT_OP_MEAN && !vkt_dtypes[x->dtype].is_float)
    return vkt_fail(VKT_ERR_RUNTIME, "nanmean(): expected input to have floating point or complex dtype but got %s",
                    vkt_dtypes[x->dtype].torch_name);
  if (!vkt_dtypes[x->dtype].is_float) /* no NaN to leave out */
    return vkt_reduce(VKT_OP_SUM, x, o, out, NULL);
  vkt_reduce_opts count = *o;
  count.dtype = -1;
  if ((st = binary(VKT_OP_NE, x, x, one, &nan)) ||
      (st = vkt_where(&nan, (vkt_operand){.s = {true, 0, 0}}, (vkt_operand){.t = x}, &z)))
    goto finish;
  if (id == VKT_OP_SUM) {
    st = vkt_reduce(VKT_OP_SUM, &z, o, out, NULL);
    goto finish;
  }
  if (!(st = vkt_reduce(VKT_OP_SUM, &z, o, &s, NULL)) && !(st = binary(VKT_OP_EQ, x, x, one, &ok)) &&
      !(st = vkt_reduce(VKT_OP_SUM, &ok, &count, &n, NULL)))
    st = binary(VKT_OP_DIV, &s, &n, one, out);
finish:
  vkt_tensor_release(&nan);
  vkt_tensor_release(&z);
  vkt_tensor_release(&ok);
  vkt_tensor_release(&s);
  vkt_tensor_release(&n);
  return st;
}

vkt_status vkt_any_read(const vkt_tensor *x, bool *out) {
  vkt_reduce_opts o = {.name = "any", .dims = (1u << x->ndim) - 1, .dtype = -1, .all_dims = true};
  vkt_tensor any = {0};
  *out = false;
  vkt_status st = vkt_reduce(VKT_OP_ANY, x, &o, &any, NULL);
  if (!st)
    st = vkt_read(&any, out);
  vkt_tensor_release(&any);
  return st;
}

vkt_status vkt_count_nonzero(const vkt_tensor *x, const vkt_reduce_opts *o, vkt_tensor *out) {
  vkt_tensor nz = {0};
  vkt_status st = binary(VKT_OP_NE, x, NULL, (vkt_scalar){false, 0, 0}, &nz);
  vkt_reduce_opts sum = *o;
  sum.keepdim = false, sum.dtype = -1;
  if (!st)
    st = vkt_reduce(VKT_OP_SUM, &nz, &sum, out, NULL);
  vkt_tensor_release(&nz);
  return st;
}

/* PyTorch's checks of a norm's input and its dtype= (>= 0): both floating, x's converting to dtype without narrowing */
static vkt_status norm_check(const vkt_tensor *x, int dtype, const char *name) {
  if (!vkt_dtypes[x->dtype].is_float)
    return vkt_fail(VKT_ERR_RUNTIME, "%s: Expected a floating point or complex tensor as input. Got %s", name,
                    vkt_dtypes[x->dtype].torch_name);
  if (dtype >= 0 && !vkt_dtypes[dtype].is_float)
    return vkt_fail(VKT_ERR_RUNTIME, "%s: dtype should be floating point or complex, but got %s", name,
                    vkt_dtypes[dtype].torch_name);
  if (dtype >= 0 && vkt_promote_types(x->dtype, (vkt_dtype)dtype) != (vkt_dtype)dtype)
    return vkt_fail(VKT_ERR_RUNTIME,
                    "%s: the dtype of the input (%s) should be convertible without narrowing to the specified dtype "
                    "(%s)",
                    name, vkt_dtypes[x->dtype].torch_name, vkt_dtypes[dtype].torch_name);
  return VKT_OK;
}

/* |x| of a floating x, cast to dtype (>= 0) first */
static vkt_status norm_input(const vkt_tensor *x, int dtype, const char *name, vkt_tensor *xf, vkt_tensor *a) {
  vkt_status st = norm_check(x, dtype, name);
  if (st)
    return st;
  st = vkt_to(xf, x, vkt_tensor_device(x), dtype >= 0 ? (vkt_dtype)dtype : x->dtype);
  if (!st && (st = unary(VKT_OP_ABS, xf, a)))
    vkt_tensor_release(xf);
  return st;
}

/* PyTorch's error where a norm without an identity (ord negative or infinite) reduces no element, naming the first
 * empty dim where dim was given. */
static vkt_status no_norm_identity(const vkt_tensor *x, double ord, const vkt_reduce_opts *o) {
  int d = 0;
  while (d < x->ndim - 1 && !((o->dims >> d & 1) && x->shape[d] == 0))
    d++;
  if (o->all_dims)
    return vkt_fail(VKT_ERR_RUNTIME, "linalg.vector_norm cannot compute the %g norm on an empty tensor because the "
                                     "operation does not have an identity", ord);
  return vkt_fail(VKT_ERR_RUNTIME, "linalg.vector_norm cannot compute the %g norm on the dimension %d because this "
                                   "dimension is empty and the operation does not have an identity", ord, d);
}

vkt_status vkt_vector_norm(const vkt_tensor *x, double ord, const vkt_reduce_opts *o, vkt_tensor *out) {
  vkt_tensor xf = {0}, a = {0}, p = {0}, s = {0};
  vkt_reduce_opts r = *o;
  r.dtype = -1;
  vkt_status st = norm_input(x, o->dtype, "linalg.vector_norm", &xf, &a);
  if (st)
    return st;
  if ((ord < 0 || isinf(ord)) && reduced_count(x, o->dims) == 0) {
    st = no_norm_identity(x, ord, o);
  } else if (isinf(ord)) {
    st = vkt_reduce(ord > 0 ? VKT_OP_AMAX : VKT_OP_AMIN, &a, &r, out, NULL);
  } else if (ord == 0) {
    r.dtype = (int)xf.dtype;
    if (!(st = binary(VKT_OP_NE, &a, NULL, (vkt_scalar){false, 0, 0}, &p)))
      st = vkt_reduce(VKT_OP_SUM, &p, &r, out, NULL);
  } else if (ord == 1) {
    st = vkt_reduce(VKT_OP_SUM, &a, &r, out, NULL);
  } else if (!(st = ord == 2 ? unary(VKT_OP_SQUARE, &a, &p)
                             : binary(VKT_OP_POW, &a, NULL, (vkt_scalar){true, ord, 0}, &p)) &&
             !(st = vkt_reduce(VKT_OP_SUM, &p, &r, &s, NULL))) {
    st = ord == 2 ? unary(VKT_OP_SQRT, &s, out) : binary(VKT_OP_POW, &s, NULL, (vkt_scalar){true, 1 / ord, 0}, out);
  }
  vkt_tensor_release(&xf);
  vkt_tensor_release(&a);
  vkt_tensor_release(&p);
  vkt_tensor_release(&s);
  return st;
}

vkt_status vkt_matrix_norm(const vkt_tensor *x, bool fro, double ord, int64_t d0, int64_t d1, bool keepdim, int dtype,
                           vkt_tensor *out) {
  int r0, r1;
  vkt_status st;
  if (x->ndim < 2)
    return vkt_fail(VKT_ERR_RUNTIME, "linalg.matrix_norm: The input tensor A must have at least 2 dimensions.");
  if ((st = vkt_dim_wrap(d0, x->ndim, &r0)) || (st = vkt_dim_wrap(d1, x->ndim, &r1)))
    return st;
  if (r0 == r1)
    return vkt_fail(VKT_ERR_RUNTIME, "linalg.matrix_norm: dims must be different. Got (%lld, %lld)", (long long)d0,
                    (long long)d1);
  vkt_reduce_opts o = {.name = "linalg.matrix_norm", .dims = 1u << r0 | 1u << r1, .keepdim = keepdim, .dtype = dtype};
  if ((st = norm_check(x, dtype, o.name))) /* in matrix_norm's name, before fro's vector_norm */
    return st;
  if (fro)
    return vkt_vector_norm(x, 2, &o, out);
  vkt_tensor xf = {0}, a = {0}, s = {0}, m = {0};
  if ((st = norm_input(x, dtype, "linalg.matrix_norm", &xf, &a)))
    return st;
  /* ord ±1: the columns' sums (over the rows, r0), ord ±inf: the rows' (over r1); then their max or min */
  vkt_reduce_opts sum = {.name = "sum", .dims = 1u << (isinf(ord) ? r1 : r0), .keepdim = true, .dtype = -1};
  vkt_reduce_opts best = {.name = "amax", .dims = 1u << (isinf(ord) ? r0 : r1), .keepdim = true, .dtype = -1};
  if (!(st = vkt_reduce(VKT_OP_SUM, &a, &sum, &s, NULL)) &&
      !(st = vkt_reduce(ord > 0 ? VKT_OP_AMAX : VKT_OP_AMIN, &s, &best, &m, NULL)))
    st = keepdim ? (vkt_tensor_share(out, &m), VKT_OK) : squeeze_mask(&m, o.dims, out);
  vkt_tensor_release(&xf);
  vkt_tensor_release(&a);
  vkt_tensor_release(&s);
  vkt_tensor_release(&m);
  return st;
}
