/* math.h: the per-element math of the elementwise ops on the host, in float64 (f_) and int64 (i_).
 * The op table points at these; vkt_cpu_elementwise applies them over strided views. */
#ifndef VKT_CPU_MATH_H
#define VKT_CPU_MATH_H

#include <string.h>

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
  X(isclose) X(isclose_nan) X(threshold_backward) X(lgamma) X(digamma) X(polygamma) X(logit) X(sinc) X(entr)         \
  X(ndtr) X(ndtri) X(log_ndtr) X(i0) X(i0e) X(i1) X(i1e) X(xlogy) X(xlog1py) X(erfcx) X(angle) X(nextafter) X(zeta)        \
  X(igamma) X(igammac)
// clang-format on

#define VKT_DECLARE_MATH(name)                                                                                         \
  double vkt_f_##name(double x, double y, const vkt_op_args *a);                                                       \
  int64_t vkt_i_##name(int64_t x, int64_t y, const vkt_op_args *a);
VKT_MATH_FUNCS(VKT_DECLARE_MATH)
#undef VKT_DECLARE_MATH

/* exp(x) in straight-line code that the typed loops and softmax vectorise, where libm's exp is a call per
 * element: 2^n * e^r with n = round(x / ln 2), |r| <= ln 2 / 2, e^r by its Taylor series to degree 13 (truncation
 * below 1e-17), 2^n as 2^(n - n/2) * 2^(n/2), two normal powers, so that overflow gives inf and the subnormals
 * round once. Within a few ulp of libm's exp; NaN stays NaN (through the polynomial). */
static inline double vkt_exp(double x) {
  const double shifter = 0x1.8p52; /* adding it rounds to an integer, kept in the low bits */
  double xc = x < -746.0 ? -746.0 : x > 710.0 ? 710.0 : x, k = xc * 0x1.71547652b82fep0 + shifter, n = k - shifter;
  double r = (xc - n * 0x1.62e42feep-1) - n * 0x1.a39ef35793c76p-33; /* ln 2's high part ends in zeros: exact */
  double p = 1.0 / 6227020800.0; /* Horner's rule from 1/13!, written out so that loops around it vectorise */
  p = p * r + 1.0 / 479001600.0;
  p = p * r + 1.0 / 39916800.0;
  p = p * r + 1.0 / 3628800.0;
  p = p * r + 1.0 / 362880.0;
  p = p * r + 1.0 / 40320.0;
  p = p * r + 1.0 / 5040.0;
  p = p * r + 1.0 / 720.0;
  p = p * r + 1.0 / 120.0;
  p = p * r + 1.0 / 24.0;
  p = p * r + 1.0 / 6.0;
  p = p * r + 0.5;
  p = p * r + 1.0;
  p = p * r + 1.0;
  int64_t kb, shifter_bits;
  memcpy(&kb, &k, sizeof kb);
  memcpy(&shifter_bits, &shifter, sizeof shifter_bits);
  int64_t n1 = (kb - shifter_bits) >> 1, n2 = (kb - shifter_bits) - n1, e1 = (n1 + 1023) << 52, e2 = (n2 + 1023) << 52;
  double s1, s2;
  memcpy(&s1, &e1, sizeof s1);
  memcpy(&s2, &e2, sizeof s2);
  return p * s1 * s2;
}

/* exp(x) of a float32 in float32 arithmetic, as vkt_exp computes it in float64: softmax's float32 rows take it,
 * where the float64 exp's degree-13 polynomial on half the lanes cost it half of NumPy's speed. e^r by its Taylor
 * series to degree 7 (|r| <= ln 2 / 2: truncation below 6e-9); within 2 ulp of the float32 of libm's exp. */
static inline float vkt_expf(float x) {
  const float shifter = 0x1.8p23f;
  float xc = x < -104.0f ? -104.0f : x > 89.0f ? 89.0f : x, k = xc * 0x1.715476p0f + shifter, n = k - shifter;
  float r = (xc - n * 0.693359375f) + n * 2.12194440e-4f; /* Cephes' split of ln 2: n times the high part is exact */
  float p = 1.0f / 5040.0f;
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  int32_t kb, shifter_bits;
  memcpy(&kb, &k, sizeof kb);
  memcpy(&shifter_bits, &shifter, sizeof shifter_bits);
  int32_t n1 = (kb - shifter_bits) >> 1, n2 = (kb - shifter_bits) - n1, e1 = (n1 + 127) << 23, e2 = (n2 + 127) << 23;
  float s1, s2;
  memcpy(&s1, &e1, sizeof s1);
  memcpy(&s2, &e2, sizeof s2);
  return p * s1 * s2;
}

#endif
