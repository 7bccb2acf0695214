/* cpu/math.c: per-element math of the elementwise ops, mirroring shaders/math.glsl and the GLSL in
 * the op table. float64 throughout, so float32 results round once (float16 add, sub, mul and div in float32, which
 * rounds them as exactly: half_loops). */
#include <math.h>

#include "loops.h"
#include "math.h"

_Thread_local bool vkt_cpu_zero_division;

#define P0F (a->param[0].is_float ? a->param[0].f : (double)a->param[0].i)
#define P1F (a->param[1].is_float ? a->param[1].f : (double)a->param[1].i)
#define P0I (a->param[0].is_float ? (int64_t)a->param[0].f : a->param[0].i)
#define P1I (a->param[1].is_float ? (int64_t)a->param[1].f : a->param[1].i)

/* F(name, float expression, int expression): x, y and a are in scope. */
#define F(name, fexpr, iexpr)                                                                                          \
  double vkt_f_##name(double x, double y, const vkt_op_args *a) {                                                      \
    (void)x, (void)y, (void)a;                                                                                         \
    return fexpr;                                                                                                      \
  }                                                                                                                    \
  int64_t vkt_i_##name(int64_t x, int64_t y, const vkt_op_args *a) {                                                   \
    (void)x, (void)y, (void)a;                                                                                         \
    return iexpr;                                                                                                      \
  }

static double sigmoid(double x) { return 1.0 / (1.0 + vkt_exp(-x)); }

/* Negative exponents truncate 1 / x ** -y toward zero, as PyTorch does: 0 unless |x| is 1. */
static int64_t ipow(int64_t x, int64_t y) {
  if (y < 0)
    return x == 1 ? 1 : x == -1 ? (y & 1 ? -1 : 1) : 0;
  int64_t r = 1;
  for (; y > 0; y >>= 1, x *= x)
    if (y & 1)
      r *= x;
  return r;
}

static double fsign(double x) { return x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0; } /* NaN and -0.0 give 0, as in PyTorch */

static int64_t idiv_floor(int64_t x, int64_t y) {
  if (y == 0)
    return vkt_cpu_zero_division = true, 0;
  int64_t q = x / y;
  return (q * y != x && ((x < 0) != (y < 0))) ? q - 1 : q;
}

static int64_t iremainder(int64_t x, int64_t y) {
  if (y == 0)
    return vkt_cpu_zero_division = true, 0;
  int64_t r = x % y;
  return (r != 0 && ((r < 0) != (y < 0))) ? r + y : r;
}

static double fremainder(double x, double y) {
  double r = fmod(x, y);
  return (r != 0 && ((r < 0) != (y < 0))) ? r + y : r;
}

/* A NaN bound gives NaN, as in PyTorch (fmin and fmax would ignore it). */
/* PyTorch's floor division of floats, as shaders/math.glsl computes it. */
static double fdiv_floor(double x, double y) {
  if (y == 0)
    return x / y;
  double m = fmod(x, y), d = (x - m) / y;
  if (m != 0 && (y < 0) != (m < 0))
    d -= 1;
  if (d == 0)
    return copysign(0, x / y);
  double f = floor(d);
  return d - f > 0.5 ? f + 1 : f;
}

static double fclamp(double x, const vkt_op_args *a) {
  return isnan(x) ? x : isnan(P0F) || isnan(P1F) ? P0F + P1F : fmin(fmax(x, P0F), P1F);
}
static double nan_max(double x, double y) { return isnan(x) || isnan(y) ? x + y : fmax(x, y); }
static double nan_min(double x, double y) { return isnan(x) || isnan(y) ? x + y : fmin(x, y); }

F(relu, x > 0 ? x : (isnan(x) ? x : 0.0), x > 0 ? x : 0)
F(gelu, 0.5 * x * erfc(-x * M_SQRT1_2), 0) /* 1 + erf(x) cancels for x < -2: erfc(-x) */
F(gelu_tanh, 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))), 0)
F(silu, x *sigmoid(x), 0)
F(sigmoid, sigmoid(x), 0)
F(tanh, tanh(x), 0)
F(leaky_relu, x >= 0 ? x : x * P0F, x >= 0 ? x : (int64_t)((double)x * P0F))
F(elu, x > 0 ? x : P0F * expm1(x), 0)
F(softplus, x *P0F > P1F ? x : log1p(exp(x * P0F)) / P0F, 0)
F(neg, -x, -x)
F(abs, fabs(x), x < 0 ? -x : x)
F(exp, vkt_exp(x), 0)
F(log, log(x), 0)
F(sqrt, sqrt(x), 0)
F(rsqrt, 1.0 / sqrt(x), 0)
F(sin, sin(x), 0)
F(cos, cos(x), 0)
F(square, x *x, x *x)
F(reciprocal, 1.0 / x, 0)
F(clamp, fclamp(x, a), x<P0I ? P0I : x> P1I ? P1I : x)
F(sign, fsign(x), x > 0 ? 1 : x < 0 ? -1 : 0)
F(floor, floor(x), x)
F(ceil, ceil(x), x)
F(round, nearbyint(x), x)
F(logical_not, x == 0, x == 0)
F(identity, x, x)
F(add, x + y * P1F, x + y * P1I)
F(sub, x - y * P1F, x - y * P1I)
F(mul, x *y, x *y)
F(div, x / y, y == 0 ? (vkt_cpu_zero_division = true, 0) : x / y)
F(div_trunc, trunc(x / y), y == 0 ? (vkt_cpu_zero_division = true, 0) : x / y)
F(div_floor, fdiv_floor(x, y), idiv_floor(x, y))
F(pow, pow(x, y), ipow(x, y))
F(maximum, nan_max(x, y), x > y ? x : y)
F(minimum, nan_min(x, y), x < y ? x : y)
F(remainder, fremainder(x, y), iremainder(x, y))
F(eq, x == y, x == y)
F(ne, x != y, x != y)
F(lt, x < y, x < y)
F(le, x <= y, x <= y)
F(gt, x > y, x > y)
F(ge, x >= y, x >= y)
F(logical_and, x != 0 && y != 0, x != 0 && y != 0)
F(logical_or, x != 0 || y != 0, x != 0 || y != 0)

/* ---- issue 15: unary math, activations, tests; binary math, bitwise ops ---- */

/* Giles' single-precision erfinv ("Approximating the erfinv function", GPU Computing Gems, 2011), as
 * in shaders/math.glsl, then two Newton steps on libm's erf for float64 accuracy. */
static double erfinv(double y) {
  if (isnan(y) || fabs(y) > 1)
    return NAN;
  if (fabs(y) == 1)
    return copysign(INFINITY, y);
  double w = -log((1.0 - y) * (1.0 + y)), p;
  if (w < 5.0) {
    w -= 2.5;
    p = 2.81022636e-08;
    p = 3.43273939e-07 + p * w, p = -3.5233877e-06 + p * w, p = -4.39150654e-06 + p * w;
    p = 0.00021858087 + p * w, p = -0.00125372503 + p * w, p = -0.00417768164 + p * w;
    p = 0.246640727 + p * w, p = 1.50140941 + p * w;
  } else {
    w = sqrt(w) - 3.0;
    p = -0.000200214257;
    p = 0.000100950558 + p * w, p = 0.00134934322 + p * w, p = -0.00367342844 + p * w;
    p = 0.00573950773 + p * w, p = -0.0076224613 + p * w, p = 0.00943887047 + p * w;
    p = 1.00167406 + p * w, p = 2.83297682 + p * w;
  }
  double x = p * y;
  for (int i = 0; i < 2; i++)
    x -= (erf(x) - y) / (M_2_SQRTPI * exp(-x * x));
  return x;
}

/* v rounded to the op's compute type, where PyTorch rounds an intermediate (round's x * 10^d). */
static double in_compute(double v, const vkt_op_args *a) { return a->compute == VKT_FLOAT64 ? v : (double)(float)v; }

static double round_decimals(double x, const vkt_op_args *a) {
  return P1F != 0 ? nearbyint(in_compute(x / P0F, a)) * P0F : nearbyint(in_compute(x * P0F, a)) / P0F;
}

static double logaddexp(double x, double y) {
  if (isinf(x) && x == y)
    return x;
  if (isnan(x) || isnan(y))
    return x + y;
  return fmax(x, y) + log1p(exp(-fabs(x - y)));
}

static bool isclose(double x, double y, const vkt_op_args *a, bool equal_nan) {
  if (x == y)
    return true;
  if (isnan(x) || isnan(y))
    return equal_nan && isnan(x) && isnan(y);
  double d = fabs(x - y);
  return isfinite(d) && d <= P1F + fabs(P0F * y);
}

/* Shifts as PyTorch's: by a negative amount or the type's width or more, left gives 0 and right the
 * sign fill (width: the result's, so uint8 shifts as 8 bits). */
static int64_t shift_width(const vkt_op_args *a) { return 8 * (int64_t)vkt_dtype_size(a->out->dtype); }
static int64_t lshift(int64_t x, int64_t y, const vkt_op_args *a) {
  return y < 0 || y >= shift_width(a) ? 0 : (int64_t)((uint64_t)x << y);
}
static int64_t rshift(int64_t x, int64_t y, const vkt_op_args *a) {
  return y < 0 || y >= shift_width(a) ? (x < 0 ? -1 : 0) : x >> y;
}

static double hardsigmoid(double x) { return isnan(x) ? x : fmin(fmax(x + 3, 0), 6) / 6; }

F(log1p, log1p(x), 0)
F(expm1, expm1(x), 0)
F(log2, log2(x), 0)
F(log10, log10(x), 0)
F(exp2, exp2(x), 0)
F(erf, erf(x), 0)
F(erfc, erfc(x), 0)
F(erfinv, erfinv(x), 0)
F(tan, tan(x), 0)
F(asin, asin(x), 0)
F(acos, acos(x), 0)
F(atan, atan(x), 0)
F(sinh, sinh(x), 0)
F(cosh, cosh(x), 0)
F(asinh, asinh(x), 0)
F(acosh, acosh(x), 0)
F(atanh, atanh(x), 0)
F(trunc, trunc(x), x)
F(frac, x - trunc(x), 0)
F(deg2rad, x *(M_PI / 180), 0)
F(rad2deg, x *(180 / M_PI), 0)
F(isnan, isnan(x), 0)
F(isinf, isinf(x), 0)
F(isfinite, isfinite(x), 1)
F(isneginf, isinf(x) && x < 0, 0)
F(isposinf, isinf(x) && x > 0, 0)
F(nan_to_num, isnan(x) ? P0F : isinf(x) && x > 0 ? P1F : x, x)
F(neginf_to_num, isinf(x) && x < 0 ? P0F : x, x)
F(round_decimals, round_decimals(x, a), x)
F(bitwise_not, 0, ~x)
F(hardsigmoid, hardsigmoid(x), 0)
F(hardswish, x *hardsigmoid(x), 0)
F(mish, x *tanh(log1p(exp(x))), 0)
F(logsigmoid, isnan(x) ? x : fmin(x, 0) - log1p(exp(-fabs(x))), 0)
F(selu, 1.0507009873554805 * (x > 0 ? x : 1.6732632423543772 * expm1(x)), 0)
F(celu, x > 0 ? x : P0F * expm1(x / P0F), 0)
F(softsign, x / (1 + fabs(x)), 0)
F(tanhshrink, x - tanh(x), 0)
F(threshold, x <= P0F ? P1F : x, x <= P0I ? P1I : x)
F(atan2, atan2(x, y), 0)
F(fmod, fmod(x, y), y == 0 ? (vkt_cpu_zero_division = true, 0) : x % y)
F(hypot, hypot(x, y), 0)
F(copysign, copysign(x, y), 0)
F(logaddexp, logaddexp(x, y), 0)
F(bitwise_and, 0, x &y)
F(bitwise_or, 0, x | y)
F(bitwise_xor, 0, x ^ y)
F(lshift, 0, lshift(x, y, a))
F(rshift, 0, rshift(x, y, a))
F(logical_xor, (x != 0) != (y != 0), (x != 0) != (y != 0))
F(isclose, isclose(x, y, a, false), x == y)
F(isclose_nan, isclose(x, y, a, true), x == y)
F(threshold_backward, y > 0 ? x : 0, y > 0 ? x : 0)

/* ---- typed loops (loops.h): every op of VKT_MATH_FUNCS, with its math above inlined ---- */

VKT_MATH_FUNCS(VKT_MATH_LOOPS)

static const vkt_math_loops loops[] = {VKT_MATH_FUNCS(VKT_MATH_LOOPS_ENTRY)};

/* float16 add, sub, mul and div of two float16 values, computed in float32 and rounded once to float16: float32
 * holds more than 2 * 11 + 2 bits, so the result is the correctly rounded one, as the float64 of the typed loops
 * above gives and as PyTorch's CPU computes it, without their call a result to round float64 to float16. x and y
 * are float16, or a scalar operand (a double) that half_exact found to be a float16 value. */
#define HALF_LOOP(NAME, XT, YT, EXPR)                                                                                  \
  VKT_SIMD_F16C static void NAME(char *o, const char *x, const char *y, int64_t n, const int64_t *s,                   \
                                 const vkt_op_args *args) {                                                            \
    (void)args;                                                                                                        \
    _Float16 *po = (_Float16 *)o;                                                                                      \
    const XT *px = (const XT *)x;                                                                                      \
    const YT *py = (const YT *)y;                                                                                      \
    if (s[0] == 2 && s[1] == sizeof(XT) && s[2] == sizeof(YT))                                                         \
      for (int64_t i = 0; i < n; i++)                                                                                  \
        po[i] = (_Float16)EXPR((float)px[i], (float)py[i]);                                                            \
    else                                                                                                               \
      for (int64_t i = 0; i < n; i++)                                                                                  \
        *(_Float16 *)(o + i * s[0]) =                                                                                  \
            (_Float16)EXPR((float)*(const XT *)(x + i * s[1]), (float)*(const YT *)(y + i * s[2]));                    \
  }
#define HALF_LOOPS(name, EXPR)                                                                                         \
  HALF_LOOP(name##_half_tt, _Float16, _Float16, EXPR)                                                                  \
  HALF_LOOP(name##_half_ts, _Float16, double, EXPR)                                                                    \
  HALF_LOOP(name##_half_st, double, _Float16, EXPR)
#define HALF_ADD(x, y) ((x) + (y))
#define HALF_SUB(x, y) ((x) - (y))
#define HALF_MUL(x, y) ((x) * (y))
#define HALF_DIV(x, y) ((x) / (y))
HALF_LOOPS(add, HALF_ADD)
HALF_LOOPS(sub, HALF_SUB)
HALF_LOOPS(mul, HALF_MUL)
HALF_LOOPS(div, HALF_DIV)

static const struct {
  double (*f)(double, double, const vkt_op_args *);
  vkt_math_loop *loop[VKT_LOOP_FORMS];
} half_loops[] = {{vkt_f_add, {add_half_tt, add_half_ts, add_half_st}},
                  {vkt_f_sub, {sub_half_tt, sub_half_ts, sub_half_st}},
                  {vkt_f_mul, {mul_half_tt, mul_half_ts, mul_half_st}},
                  {vkt_f_div, {div_half_tt, div_half_ts, div_half_st}}};

/* Whether a float16 op of half_loops computes exactly in float32 with these args: add and sub with alpha 1 (x + y
 * * alpha would round twice), a scalar operand (rounded to float32, as elementwise.c passes it) a float16 value. */
static bool half_exact(const vkt_op *op, const vkt_op_args *a, int form) {
  double s = (double)(float)P0F;
  if ((op->f == vkt_f_add || op->f == vkt_f_sub) && P1F != 1)
    return false;
  return form == VKT_LOOP_TENSORS || (double)(_Float16)s == s;
}

static int loop_dtype(vkt_dtype d) {
  switch (d) {
  case VKT_FLOAT32: return VKT_LOOP_F32;
  case VKT_FLOAT64: return VKT_LOOP_F64;
  case VKT_INT32: return VKT_LOOP_I32;
  case VKT_INT64: return VKT_LOOP_I64;
  case VKT_FLOAT16: return VKT_LOOP_F16; /* rounded once to float16, as the generic path does */
  case VKT_UINT8:
  case VKT_BOOL: return VKT_LOOP_U8;
  default: return -1;
  }
}

vkt_math_loop *vkt_math_loop_for(const vkt_op *op, const vkt_op_args *a) {
  int dt = loop_dtype(a->compute);
  bool bool_out = a->out->dtype == VKT_BOOL;
  if (!op->f || dt < 0 || (!bool_out && a->out->dtype != a->compute))
    return NULL;
  for (int k = 0; k < a->nin; k++)
    if (a->in[k]->dtype != a->compute)
      return NULL;
  int form = a->nin == 2 ? VKT_LOOP_TENSORS : a->scalar == VKT_SCALAR_LHS ? VKT_LOOP_X_SCALAR : VKT_LOOP_Y_SCALAR;
  if (dt == VKT_LOOP_F16 && !bool_out)
    for (size_t i = 0; i < sizeof half_loops / sizeof half_loops[0]; i++)
      if (half_loops[i].f == op->f && half_exact(op, a, form))
        return half_loops[i].loop[form];
  for (size_t i = 0; i < sizeof loops / sizeof loops[0]; i++)
    if (loops[i].f == op->f)
      return loops[i].loop[dt][bool_out][form];
  return NULL;
}
