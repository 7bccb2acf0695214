/* elementwise_more.c: elementwise ops PyTorch composes from others (as its CompositeImplicit ops are):
 * clamp with tensor bounds, lerp, addcmul/addcdiv, nan_to_num, round(decimals=), isclose, allclose and
 * equal. Each runs the op table's rows through vkt_unary, vkt_binary and vkt_where, so both devices
 * and every dtype follow from those. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "reduce.h"
#include "table.h"

static const vkt_scalar one = {false, 0, 1}, none = {false, 0, 0};

static vkt_operand T(const vkt_tensor *t) { return (vkt_operand){.t = t}; }
static vkt_operand S(vkt_scalar s) { return (vkt_operand){.s = s}; }

/* The float types' dtype for PyTorch's opmath: float16's numbers are converted to float, as its kernels compute. */
static vkt_dtype opmath(vkt_dtype dtype) { return dtype == VKT_FLOAT16 ? VKT_FLOAT32 : dtype; }

vkt_status vkt_clamp_scalar_type(const vkt_tensor *x, const vkt_operand *lo, const vkt_operand *hi, bool inplace,
                                 vkt_dtype *dtype) {
  vkt_operand ops[3] = {T(x)};
  int n = 1;
  if (lo)
    ops[n++] = *lo;
  if (hi)
    ops[n++] = *hi;
  *dtype = vkt_result_type(n, ops);
  if (*dtype == VKT_BOOL)
    return vkt_fail(VKT_ERR_NOTIMPL, "\"%s\" not implemented for 'Bool'",
                    !hi ? "clamp_min_scalar_cpu" : !lo ? "clamp_max_scalar_cpu" : "clamp_scalar_cpu");
  if (inplace && *dtype != x->dtype)
    return vkt_fail(VKT_ERR_RUNTIME, "result type %s can't be cast to the desired output type %s",
                    vkt_dtypes[*dtype].torch_name, vkt_dtypes[x->dtype].c10_name);
  vkt_status st = VKT_OK;
  for (int k = 1; k < n && !st; k++)
    st = vkt_scalar_check(*dtype, ops[k].s);
  return st;
}

vkt_status vkt_clamp_tensors(const vkt_tensor *x, const vkt_tensor *lo, const vkt_tensor *hi, const vkt_tensor *into,
                             vkt_tensor *result) {
  vkt_tensor low = {0};
  vkt_status st = VKT_OK;
  const vkt_tensor *cur = x;
  if (lo && hi && x->dtype == VKT_BOOL && lo->dtype == VKT_BOOL && hi->dtype == VKT_BOOL) /* maximum takes bool */
    return vkt_fail(VKT_ERR_NOTIMPL, "\"clamp_cpu\" not implemented for 'Bool'");
  if (lo && hi) { /* the maximum goes to a temporary: into may have a smaller shape than x and lo */
    st = vkt_binary(VKT_OP_MAXIMUM, T(x), T(lo), one, NULL, &low);
    cur = &low;
  } else if (lo) {
    return vkt_binary(VKT_OP_MAXIMUM, T(x), T(lo), one, into, result);
  }
  if (!st)
    st = vkt_binary(VKT_OP_MINIMUM, T(cur), T(hi), one, into, result);
  vkt_tensor_release(&low);
  return st;
}

/* PyTorch's two-sided form: start + w * (end - start) for |w| < 0.5, else end - (end - start) * (1 - w),
 * so that lerp(a, b, 1) is b exactly. */
vkt_status vkt_lerp(const vkt_tensor *start, const vkt_tensor *end, vkt_operand w, const vkt_tensor *into,
                    vkt_tensor *result) {
  vkt_tensor t[7] = {{0}}; /* diff, w * diff, low, 1 - w, diff * (1 - w), high, |w| */
  vkt_tensor cond = {0}, out = {0};
  vkt_status st;
  if (start->dtype != end->dtype)
    return vkt_fail(VKT_ERR_RUNTIME, "expected dtype %s for `end` but got dtype %s", vkt_dtypes[start->dtype].name,
                    vkt_dtypes[end->dtype].name);
  if ((st = vkt_elementwise_device(3, (const vkt_tensor *[]){start, end, w.t}, into, 1, NULL)))
    return st;
  if (!vkt_dtypes[start->dtype].is_float)
    return vkt_fail(VKT_ERR_NOTIMPL, "\"lerp_kernel_scalar\" not implemented for '%s'", vkt_dtypes[start->dtype].name);
  if (!w.t && (st = vkt_scalar_check(opmath(start->dtype), w.s)))
    return st;
  if ((st = vkt_binary(VKT_OP_SUB, T(end), T(start), one, NULL, &t[0])))
    return st;
  if (!w.t) {
    double v = w.s.is_float ? w.s.f : (double)w.s.i;
    st = fabs(v) < 0.5 ? vkt_binary(VKT_OP_ADD, T(start), T(&t[0]), (vkt_scalar){true, v, 0}, into, result)
                       : vkt_binary(VKT_OP_SUB, T(end), T(&t[0]), (vkt_scalar){true, 1 - v, 0}, into, result);
  } else if (!(st = vkt_binary(VKT_OP_MUL, w, T(&t[0]), one, NULL, &t[1])) &&
             !(st = vkt_binary(VKT_OP_ADD, T(start), T(&t[1]), one, NULL, &t[2])) &&
             !(st = vkt_binary(VKT_OP_SUB, S(one), w, one, NULL, &t[3])) &&
             !(st = vkt_binary(VKT_OP_MUL, T(&t[0]), T(&t[3]), one, NULL, &t[4])) &&
             !(st = vkt_binary(VKT_OP_SUB, T(end), T(&t[4]), one, NULL, &t[5])) &&
             !(st = vkt_unary(VKT_OP_ABS, w.t, none, none, NULL, &t[6])) &&
             !(st = vkt_binary(VKT_OP_LT, T(&t[6]), S((vkt_scalar){true, 0.5, 0}), one, NULL, &cond)) &&
             !(st = vkt_where(&cond, T(&t[2]), T(&t[5]), into ? &out : result)) && into) {
    st = vkt_copy_(into, &out);
  }
  for (int k = 0; k < 7; k++)
    vkt_tensor_release(&t[k]);
  vkt_tensor_release(&cond);
  vkt_tensor_release(&out);
  return st;
}

vkt_status vkt_addcmul(const vkt_tensor *x, const vkt_tensor *t1, const vkt_tensor *t2, vkt_scalar value, bool div,
                       const vkt_tensor *into, vkt_tensor *result) {
  vkt_tensor prod = {0};
  if (div && !vkt_dtypes[t1->dtype].is_float && !vkt_dtypes[t2->dtype].is_float)
    return vkt_fail(VKT_ERR_RUNTIME,
                    "Integer division with addcdiv is no longer supported, and in a future release addcdiv will "
                    "perform a true division of tensor1 and tensor2. The historic addcdiv behavior can be "
                    "implemented as (input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer "
                    "inputs and as (input + value * tensor1 / tensor2) for float inputs. The future addcdiv behavior "
                    "is just the latter implementation: (input + value * tensor1 / tensor2), for all dtypes.");
  /* PyTorch's addcmul takes a 0-d cpu operand on another device's op, its addcdiv none */
  vkt_status st = vkt_elementwise_device(3, (const vkt_tensor *[]){x, t1, t2}, into, div ? 0 : 1, NULL);
  if (st)
    return st;
  vkt_dtype dtype = vkt_result_type(3, (vkt_operand[]){T(x), T(t1), T(t2)});
  if (!div && dtype == VKT_BOOL)
    return vkt_fail(VKT_ERR_NOTIMPL, "\"addcmul_cpu_out\" not implemented for 'Bool'");
  if ((st = vkt_scalar_check(opmath(dtype), value)))
    return st;
  if (!vkt_dtypes[dtype].is_float && value.is_float) /* PyTorch converts value to the integer type: 1.5 is 1 */
    value = (vkt_scalar){false, 0, (int64_t)value.f};
  st = vkt_binary(div ? VKT_OP_DIV : VKT_OP_MUL, T(t1), T(t2), one, NULL, &prod);
  if (!st)
    st = vkt_binary(VKT_OP_ADD, T(x), T(&prod), value, into, result);
  vkt_tensor_release(&prod);
  return st;
}

vkt_status vkt_nan_to_num(const vkt_tensor *x, vkt_scalar nan, const vkt_scalar *posinf, const vkt_scalar *neginf,
                          const vkt_tensor *into, vkt_tensor *result) {
  double big = x->dtype == VKT_FLOAT64 ? DBL_MAX : x->dtype == VKT_FLOAT16 ? 65504.0 : FLT_MAX;
  vkt_scalar hi = posinf ? *posinf : (vkt_scalar){true, big, 0}, lo = neginf ? *neginf : (vkt_scalar){true, -big, 0};
  vkt_status st = vkt_unary(VKT_OP_NAN_TO_NUM, x, nan, hi, into, result);
  if (st || !vkt_dtypes[x->dtype].is_float)
    return st;
  const vkt_tensor *out = into ? into : result;
  if ((st = vkt_unary(VKT_OP_NEGINF_TO_NUM, out, lo, none, out, NULL)) && !into)
    vkt_tensor_release(result);
  return st;
}

vkt_status vkt_round_decimals(const vkt_tensor *x, int64_t decimals, const vkt_tensor *into, vkt_tensor *result) {
  if (decimals == 0)
    return vkt_unary(VKT_OP_ROUND, x, none, none, into, result);
  vkt_scalar ten_pow = {true, pow(10.0, (double)llabs(decimals)), 0}, negative = {false, 0, decimals < 0};
  return vkt_unary(VKT_OP_ROUND_DECIMALS, x, ten_pow, negative, into, result);
}

vkt_status vkt_isclose(const vkt_tensor *a, const vkt_tensor *b, double rtol, double atol, bool equal_nan,
                       vkt_tensor *result) {
  if (a->dtype != b->dtype)
    return vkt_fail(VKT_ERR_RUNTIME, "%s did not match %s", vkt_dtypes[a->dtype].torch_name,
                    vkt_dtypes[b->dtype].torch_name);
  if (rtol < 0)
    return vkt_fail(VKT_ERR_RUNTIME, "rtol must be greater than or equal to zero, but got %g", rtol);
  if (atol < 0)
    return vkt_fail(VKT_ERR_RUNTIME, "atol must be greater than or equal to zero, but got %g", atol);
  if (a->dtype == VKT_BOOL) /* PyTorch: bool tensors are close where equal */
    return vkt_binary(VKT_OP_EQ, T(a), T(b), one, NULL, result);
  return vkt_binary_params(equal_nan ? VKT_OP_ISCLOSE_NAN : VKT_OP_ISCLOSE, T(a), T(b), (vkt_scalar){true, rtol, 0},
                           (vkt_scalar){true, atol, 0}, NULL, result);
}

/* Whether every element of a bool tensor is true. */
static vkt_status all_true(const vkt_tensor *t, bool *out) {
  vkt_tensor r = {0};
  uint32_t dims = t->ndim ? (uint32_t)((1ull << t->ndim) - 1) : 0;
  vkt_reduce_opts o = {.name = "all", .dims = dims, .dtype = -1, .all_dims = true};
  uint8_t v = 0;
  vkt_status st = vkt_reduce(VKT_OP_ALL, t, &o, &r, NULL);
  if (!st)
    st = vkt_read(&r, &v);
  *out = v != 0;
  vkt_tensor_release(&r);
  return st;
}

vkt_status vkt_allclose(const vkt_tensor *a, const vkt_tensor *b, double rtol, double atol, bool equal_nan, bool *out) {
  vkt_tensor c = {0};
  vkt_status st = vkt_isclose(a, b, rtol, atol, equal_nan, &c);
  if (!st)
    st = all_true(&c, out);
  vkt_tensor_release(&c);
  return st;
}

vkt_status vkt_equal(const vkt_tensor *a, const vkt_tensor *b, bool *out) {
  vkt_tensor c = {0};
  vkt_status st = vkt_same_device(2, (const vkt_tensor *[]){a, b}, NULL);
  *out = false;
  if (st || a->ndim != b->ndim || memcmp(a->shape, b->shape, sizeof *a->shape * (size_t)a->ndim) != 0)
    return st;
  if (!(st = vkt_binary(VKT_OP_EQ, T(a), T(b), one, NULL, &c)))
    st = all_true(&c, out);
  vkt_tensor_release(&c);
  return st;
}
