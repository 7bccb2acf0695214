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

/* std::max and std::min, as PyTorch's maximum, minimum and clamp: x where the two compare equal (0.0 and -0.0),
 * where fmax and fmin may give either. */
static double std_max(double x, double y) { return x < y ? y : x; }
static double std_min(double x, double y) { return y < x ? y : x; }
/* A NaN bound gives NaN, as in PyTorch (fmin and fmax would ignore it). */
static double fclamp(double x, const vkt_op_args *a) {
  return isnan(x) ? x : isnan(P0F) || isnan(P1F) ? P0F + P1F : std_min(std_max(x, P0F), P1F);
}
static double nan_max(double x, double y) { return isnan(x) || isnan(y) ? x + y : std_max(x, y); }
static double nan_min(double x, double y) { return isnan(x) || isnan(y) ? x + y : std_min(x, y); }

F(relu, isnan(x) ? x : std_max(x, 0.0), x > 0 ? x : 0)
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

/* Giles' single-precision erfinv ("Approximating the erfinv function", GPU Computing Gems, 2011), as in
 * shaders/math.glsl: erfinv(y) / y as a function of w = -log(1 - y^2). */
static double erfinv_ratio(double w) {
  double p;
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
  return p;
}

/* Giles' estimate, then two Newton steps on libm's erf for float64 accuracy. */
static double erfinv(double y) {
  if (isnan(y) || fabs(y) > 1)
    return NAN;
  if (fabs(y) == 1)
    return copysign(INFINITY, y);
  double x = erfinv_ratio(-log((1.0 - y) * (1.0 + y))) * y;
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

/* ---- special functions (torch.special), in float64 after PyTorch's double kernels (ATen/native/Math.h) ---- */

/* sin(pi x), exactly 0 at the integers (sin(M_PI * x) is 1e-16 there), so that poles come out infinite. */
static double sinpi(double x) {
  double r = x - 2 * nearbyint(x / 2); /* [-1, 1], exactly */
  if (fabs(r) > 0.5)
    r = copysign(1.0, r) - r;
  return sin(M_PI * r);
}

static double digamma(double x) {
  static const double A[] = {8.33333333333333333333E-2,  -2.10927960927960927961E-2, 7.57575757575757575758E-3,
                             -4.16666666666666666667E-3, 3.96825396825396825397E-3,  -8.33333333333333333333E-3,
                             8.33333333333333333333E-2};
  if (x == 0)
    return copysign(INFINITY, -x); /* as C's lgamma and SciPy: +-0 gives -+inf */
  double result = 0;
  if (x < 0) {
    if (x == trunc(x))
      return NAN;
    double r = x - nearbyint(x); /* tan(pi r), not tan(pi x): pi x rounds, as pi r does near +-1 */
    result = -M_PI / tan(M_PI * r);
    x = 1 - x;
  }
  for (; x < 10; x += 1)
    result -= 1 / x;
  if (x == 10)
    return result + 2.25175258906672110764;
  double y = 0;
  if (x < 1.0e17) {
    double z = 1 / (x * x), p = A[0];
    for (int i = 1; i < 7; i++)
      p = p * z + A[i];
    y = z * p;
  }
  return result + log(x) - 0.5 / x - y;
}

static double trigamma(double x) {
  double sign = 1, result = 0;
  if (isinf(x)) /* PyTorch's limits */
    return x > 0 ? 0 : INFINITY;
  if (x < 0.5) { /* reflection: pi^2 / sin^2(pi x) - trigamma(1 - x) */
    double s = sinpi(x);
    sign = -1, result = -M_PI * M_PI / (s * s), x = 1 - x;
  }
  for (int i = 0; i < 6; i++, x += 1)
    result += 1 / (x * x);
  double ixx = 1 / (x * x);
  result += (1 + 1 / (2 * x) + ixx * (1. / 6 - ixx * (1. / 30 - ixx * (1. / 42)))) / x;
  return sign * result;
}

/* Hurwitz zeta(s, q) of s > 1 and q > 0: Cephes' sum to q + 9, then Euler-Maclaurin with Bernoulli numbers'
 * ratios. */
static double zeta_sum(double s, double q) {
  static const double A[] = {12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9, 7.47242496e10,
                             -2.950130727918164224e12, 1.1646782814350067249e14, -4.5979787224074726105e15,
                             1.8152105401943546773e17, -7.1661652561756670113e18};
  const double eps = 1.11022302462515654042E-16;
  double sum = pow(q, -s), a = q, b = 0;
  for (int i = 0; i < 9 || a <= 9; i++) {
    a += 1, b = pow(a, -s), sum += b;
    if (fabs(b) < eps * fabs(sum))
      return sum;
  }
  double w = a, f = 1, k = 0;
  sum += b * w / (s - 1) - 0.5 * b;
  for (int i = 0; i < 12; i++, k += 2) {
    f *= s + k, b /= w;
    double t = f * b / A[i];
    sum += t;
    if (fabs(t / sum) < eps)
      break;
    f *= s + k + 1, b /= w;
  }
  return sum;
}

/* zeta with PyTorch's special values (Cephes'): inf at s = 1 and at the poles q = 0, -1, ...; NaN for s < 1 and for
 * q < 0 unless s is an integer, where the terms left of 0 are zeta's at the fraction f = trunc(q) - q mirrored,
 * zeta(s, q) = (-1)^s (zeta(s, f) - zeta(s, 1 - q)) + zeta(s, 1 - f), so no loop runs to 0 from q (shaders'). */
static double zeta(double s, double q) {
  if (s == 1)
    return INFINITY;
  if (s < 1)
    return NAN;
  if (q <= 0 && q == floor(q))
    return INFINITY;
  if (q < 0 && s != floor(s))
    return NAN;
  if (isinf(s)) /* each term is 0, 1 or inf as |q + k| is above, at or below 1; Cephes' sum is NaN past q = 1 */
    return q < 1 ? INFINITY : q == 1 ? 1 : NAN;
  if (!(q < 0))
    return zeta_sum(s, q);
  double f = trunc(q) - q, even = fmod(s, 2) == 0 ? 1 : -1;
  double mirrored = zeta_sum(s, 1 - f) + even * zeta_sum(s, f); /* first: at f = 1/2 these cancel exactly */
  return isinf(mirrored) ? mirrored : mirrored - even * zeta_sum(s, 1 - q);
}

/* log(x^a e^-x / Gamma(a)); where x is near a large a, a log1pmx((x - a) / a) + log(a / 2 pi) / 2 minus lgamma's
 * Stirling correction, as a log x - x - lgamma(a) cancels there (shaders/math.glsl's vkt_igamma_factor). */
static double igamma_factor(double a, double x) {
  if (a < 10 || fabs(x - a) > 0.4 * a)
    return a * log(x) - x - lgamma(a);
  double d = (x - a) / a, m = 0, power = d;
  for (int n = 2; n < 64; n++) { /* log(1 + d) - d, |d| <= 0.4 */
    power *= -d;
    double term = power / n;
    m += term;
    if (fabs(term) <= fabs(m) * 0x1p-53)
      break;
  }
  double r = 1 / a, r2 = r * r;
  double correction =
      r * (1.0 / 12 - r2 * (1.0 / 360 - r2 * (1.0 / 1260 - r2 * (1.0 / 1680 - r2 * (1.0 / 1188 - r2 * (691.0 / 360360 -
                                                                                                    r2 / 156))))));
  return a * m + 0.5 * log(a / (2 * M_PI)) - correction;
}

/* The regularized incomplete gamma function P(a, x) = gamma(a, x) / Gamma(a), or Q(a, x) = 1 - P(a, x) with upper, by
 * Cephes' igam and igamc (shaders/math.glsl's vkt_igamma the same in the compute type): P's power series where
 * x <= 1 or x < a, else Q's continued fraction, each until its terms stop mattering; the other one as 1 minus it.
 * PyTorch's special values, in its order: NaN for a negative a or x, for a = 0 unless x > 0 and for both infinite;
 * P is 1 at a = 0, then 0 at x = 0 and at a = inf, 1 at x = inf (so a NaN there gives those). */
#define IGAMMA_TERMS 2000
static double igamma(double a, double x, bool upper) {
  double p;
  if (a < 0 || x < 0 || (a == 0 && !(x > 0)) || (x != 0 && isinf(a) && isinf(x)))
    return NAN;
  if (a == 0 || x == 0 || isinf(a) || isinf(x)) { /* in PyTorch's order: a NaN falls through where x decides */
    p = a == 0 ? 1 : x == 0 || isinf(a) ? 0 : 1;
    return upper ? 1 - p : p;
  }
  double prefix = exp(igamma_factor(a, x));
  if (x <= 1 || x < a) {
    double r = a, c = 1, sum = 1;
    for (int k = 0; k < IGAMMA_TERMS && c > sum * 0x1p-53; k++)
      r += 1, c *= x / r, sum += c;
    p = sum * prefix / a;
    p = p > 1 ? 1 : p; /* rounding can carry P a little past 1 where a is tiny (and NaN stays NaN) */
    return upper ? 1 - p : p;
  }
  double y = 1 - a, z = x + y + 1, c = 0, pkm2 = 1, qkm2 = x, pkm1 = x + 1, qkm1 = z * x, q = pkm1 / qkm1, t = 1;
  for (int k = 0; k < IGAMMA_TERMS && t > 0x1p-53; k++) {
    c += 1, y += 1, z += 2;
    double yc = y * c, pk = pkm1 * z - pkm2 * yc, qk = qkm1 * z - qkm2 * yc;
    if (qk != 0) {
      double r = pk / qk;
      t = fabs((q - r) / r), q = r;
    } else {
      t = 1;
    }
    pkm2 = pkm1, pkm1 = pk, qkm2 = qkm1, qkm1 = qk;
    if (fabs(pk) > 0x1p52) /* keep the convergents in range */
      pkm2 *= 0x1p-52, pkm1 *= 0x1p-52, qkm2 *= 0x1p-52, qkm1 *= 0x1p-52;
  }
  q *= prefix;
  return upper ? q : 1 - q;
}

/* (-1)^(n+1) n! zeta(n + 1, x), and the limit 0 at +inf, where zeta's terms are inf * 0. */
static double polygamma(int64_t n, double x) {
  if (n == 0)
    return digamma(x);
  if (n == 1)
    return trigamma(x);
  return (n % 2 ? 1.0 : -1.0) * exp(lgamma((double)n + 1)) * (x == INFINITY ? 0 : zeta((double)n + 1, x));
}

/* log(x / (1 - x)), x first clamped to [eps, 1 - eps] when eps >= 0; log1p near 1/2, where the ratio is near 1. */
static double logit(double x, double eps) {
  if (eps >= 0)
    x = x < eps ? eps : x > 1 - eps ? 1 - eps : x;
  return fabs(x - 0.5) < 0.25 ? log1p((2 * x - 1) / (1 - x)) : log(x / (1 - x));
}

static double ndtr(double x) { return 0.5 * erfc(-x * M_SQRT1_2); }

/* The lower tail's quantile, q <= 1/2 (where ndtr is accurate relative): Abramowitz & Stegun 26.2.23 (4.5e-4), then
 * Newton's steps, each squaring the error; e^(x^2 / 2) in halves, which stay finite down to the subnormals. */
static double ndtri(double p) {
  if (isnan(p) || p < 0 || p > 1)
    return NAN;
  if (p == 0 || p == 1)
    return p == 0 ? -INFINITY : INFINITY;
  double q = p > 0.5 ? 1 - p : p, t = sqrt(-2 * log(q));
  double x = -(t - (2.515517 + t * (0.802853 + t * 0.010328)) / (1 + t * (1.432788 + t * (0.189269 + t * 0.001308))));
  for (int i = 0; i < 4; i++) {
    double h = exp(x * x / 4);
    x -= (ndtr(x) - q) * h * sqrt(2 * M_PI) * h;
  }
  return p > 0.5 ? -x : x;
}

/* log(ndtr(x)): log1p of the upper tail above -1; below, log of the lower tail, and past -30 (where it would
 * underflow) erfc's asymptotic series, log(erfc(z)) = -z^2 - log(z sqrt(pi)) + log(sum (-1)^k (2k-1)!! / (2z^2)^k). */
static double log_ndtr(double x) {
  double z = -x * M_SQRT1_2;
  if (x >= -1)
    return log1p(-0.5 * erfc(-z));
  if (x >= -30)
    return log(0.5 * erfc(z));
  double s = 1, t = 1;
  for (int k = 1; k < 12; k++)
    t *= -(2 * k - 1) / (2 * z * z), s += t;
  return -z * z - log(2 * z * sqrt(M_PI)) + log(s);
}

/* I_nu(x) of nu 0 or 1 (times e^-|x| where scaled): the power series up to 20 (positive terms), beyond it the
 * asymptotic series, whose terms fall below 1e-17 of the sum before they grow (near k = 2x). */
static double bessel_i(int nu, double x, bool scaled) {
  double ax = fabs(x), s;
  if (isnan(x))
    return x;
  if (ax <= 20) {
    double q = ax * ax / 4, t = nu ? ax / 2 : 1;
    s = t;
    for (int k = 1; k < 200 && t > 1e-17 * s; k++)
      t *= q / (k * (k + nu)), s += t;
    s = scaled ? s * exp(-ax) : s;
  } else if (isinf(ax)) {
    s = scaled ? 0 : INFINITY;
  } else {
    double m = 4.0 * nu * nu, t = 1;
    s = 1;
    for (int k = 1; k < 60 && fabs(t) > 1e-17 * s; k++)
      t *= -(m - (2.0 * k - 1) * (2.0 * k - 1)) / (8.0 * k * ax), s += t;
    double h = scaled ? 1 : exp(ax / 2); /* e^x in halves: finite where I0 is */
    s = s / sqrt(2 * M_PI * ax) * h * h;
  }
  return nu && x < 0 ? -s : s;
}

/* e^(x^2) erfc(x), x^2 split exactly (fma) so that e^(x^2) keeps its exponent's bits; from 26, where erfc nears the
 * subnormals, the asymptotic series 1 / (x sqrt(pi)) sum (-1)^k (2k-1)!! / (2x^2)^k (its 10th term below 2^-60). */
static double erfcx(double x) {
  if (x < -26.7) /* e^(x^2) is past the largest double (and -inf's split would be NaN) */
    return INFINITY;
  if (isnan(x) || x < 26) {
    double hi = x * x, lo = fma(x, x, -hi);
    return exp(hi) * (1 + lo) * erfc(x);
  }
  double q = 0.5 / x / x, t = 1, s = 1;
  for (int k = 1; k < 10; k++)
    t *= -(2 * k - 1) * q, s += t;
  return 0.56418958354775628695 / x * s;
}

/* C's nextafter in the compute dtype's steps, y first rounded to it as PyTorch's kernel reads it: float16's by its
 * bits, which C has no nextafter for. */
static double nextafter_in(double x, double y, vkt_dtype d) {
  if (d == VKT_FLOAT64)
    return nextafter(x, y);
  if (d == VKT_FLOAT32)
    return nextafterf((float)x, (float)y);
  _Float16 hx = (_Float16)x, hy = (_Float16)y;
  uint16_t bits;
  if (isnan(x) || isnan(y))
    return x + y;
  if (hx == hy)
    return (double)hy;
  if (hx == 0)
    return copysign(0x1p-24, (double)hy);
  memcpy(&bits, &hx, sizeof bits);
  bits = (uint16_t)(bits + ((hx < hy) == (hx > 0) ? 1 : -1)); /* away from 0 where y is beyond x on its side */
  memcpy(&hx, &bits, sizeof hx);
  return (double)hx;
}

static double xlogy(double x, double y, bool log1p_y) {
  if (isnan(y))
    return y;
  return x == 0 ? 0 : x * (log1p_y ? log1p(y) : log(y));
}

F(lgamma, lgamma(x), 0)
F(digamma, digamma(x), 0)
F(polygamma, polygamma(P0I, x), 0)
F(logit, logit(x, P0F), 0)
F(sinc, x == 0 ? 1 : sinpi(x) / (M_PI * x), 0)
F(entr, isnan(x) ? x : x > 0 ? -x * log(x) : x == 0 ? 0 : -INFINITY, 0)
F(ndtr, ndtr(x), 0)
F(ndtri, ndtri(x), 0)
F(log_ndtr, log_ndtr(x), 0)
F(i0, bessel_i(0, x, false), 0)
F(i0e, bessel_i(0, x, true), 0)
F(i1, bessel_i(1, x, false), 0)
F(i1e, bessel_i(1, x, true), 0)
F(xlogy, xlogy(x, y, false), 0)
F(xlog1py, xlogy(x, y, true), 0)
F(erfcx, erfcx(x), 0)
F(angle, isnan(x) ? x : x < 0 ? M_PI : 0, 0)
F(nextafter, nextafter_in(x, y, a->compute), 0)
F(zeta, zeta(x, y), 0)
F(igamma, igamma(x, y, false), 0)
F(igammac, igamma(x, y, true), 0)

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
