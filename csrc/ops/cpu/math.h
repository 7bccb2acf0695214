/* math.h: the per-element math of the elementwise ops on the host, in float64 (f_) and int64 (i_).
 * The op table points at these; vkt_cpu_elementwise applies them over strided views. */
#ifndef VKT_CPU_MATH_H
#define VKT_CPU_MATH_H

#include "../table.h"

/* Set by integer division or remainder by zero; the CPU kernel turns it into an error. */
extern _Thread_local bool vkt_cpu_zero_division;

/* One entry point per X(), kept in rows. */
// clang-format off
#define VKT_MATH_FUNCS(X)                                                                                              \
  X(relu) X(gelu) X(gelu_tanh) X(silu) X(sigmoid) X(tanh) X(leaky_relu) X(elu) X(softplus) X(neg) X(abs) X(exp)        \
  X(log) X(sqrt) X(rsqrt) X(sin) X(cos) X(square) X(reciprocal) X(clamp) X(sign) X(floor) X(ceil) X(round)             \
  X(logical_not) X(identity) X(add) X(sub) X(mul) X(div) X(div_trunc) X(div_floor) X(pow) X(maximum) X(minimum)        \
  X(remainder) X(eq) X(ne) X(lt) X(le) X(gt) X(ge) X(logical_and) X(logical_or)                                       \
  X(log1p) X(expm1) X(log2) X(log10) X(exp2) X(erf) X(erfc) X(erfinv) X(tan) X(asin) X(acos) X(atan) X(sinh)          \
  X(cosh) X(asinh) X(acosh) X(atanh) X(trunc) X(frac) X(deg2rad) X(rad2deg) X(isnan) X(isinf) X(isfinite)             \
  X(isneginf) X(isposinf) X(nan_to_num) X(neginf_to_num) X(round_decimals) X(bitwise_not) X(hardsigmoid)               \
  X(hardswish) X(mish) X(logsigmoid) X(selu) X(celu) X(softsign) X(tanhshrink) X(threshold) X(atan2) X(fmod)          \
  X(hypot) X(copysign) X(logaddexp) X(bitwise_and) X(bitwise_or) X(bitwise_xor) X(lshift) X(rshift) X(logical_xor)   \
  X(isclose) X(isclose_nan)
// clang-format on

#define VKT_DECLARE_MATH(name)                                                                                         \
  double vkt_f_##name(double x, double y, const vkt_op_args *a);                                                       \
  int64_t vkt_i_##name(int64_t x, int64_t y, const vkt_op_args *a);
VKT_MATH_FUNCS(VKT_DECLARE_MATH)
#undef VKT_DECLARE_MATH

#endif
