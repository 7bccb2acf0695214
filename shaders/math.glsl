// math.glsl: functions GLSL lacks, for the op table's GLSL: erf, a NaN-safe tanh, pow with negative
// bases, floor division and Python's remainder, in every compute type they are used with. GLSL's exp, log, sin,
// ... have no double forms: in float64, math_f64.glsl's.
#ifndef VKT_MATH_GLSL
#define VKT_MATH_GLSL

// Signed zeros, infinities and NaNs as IEEE 754 has them, where the adapter can keep them (the pipeline then defines
// VKT_PRESERVE_F32 / _F64): otherwise a driver may assume there are none and compile x < y ? y : x to an instruction
// that orders -0.0 below 0.0 (an H100's did, in a fused clamp), or drop a NaN test.
#if defined(VKT_PRESERVE_F32) || (defined(VKT_PRESERVE_F64) && defined(C_FLOAT64))
#extension GL_EXT_spirv_intrinsics : require
#endif
#if defined(VKT_PRESERVE_F32)
spirv_execution_mode(extensions = ["SPV_KHR_float_controls"], capabilities = [4466], 4461, 32);
#endif
#if defined(VKT_PRESERVE_F64) && defined(C_FLOAT64)
spirv_execution_mode(extensions = ["SPV_KHR_float_controls"], capabilities = [4466], 4461, 64);
#endif

#if defined(C_FLOAT64)
#include "math_f64.glsl"
#endif

// max and min as PyTorch's maximum, minimum and clamp take them (C++'s std::max and std::min): the first operand
// where the two compare equal, so max(0.0, -0.0) is 0.0 and max(-0.0, 0.0) is -0.0. GLSL's max and min say the same,
// but lavapipe's returned the other operand. Operands are evaluated twice.
#define vkt_max(x, y) ((x) < (y) ? (y) : (x))
#define vkt_min(x, y) ((y) < (x) ? (y) : (x))

#if defined(C_FLOAT)
// Abramowitz & Stegun 7.1.26 is 1.5e-7 absolute; this rational form (from Numerical Recipes' erfc
// Chebyshev fit) keeps 1.2e-7 relative on erfc, so gelu stays within float32 rounding. erf itself
// takes the Maclaurin series below 0.5, where 1 - erfc cancels (erf(1e-3) was 5e-5 off).
// erfc(z) = t e^(-z^2 + vkt_erfc_nr_poly(t)), t = 1 / (1 + z / 2): log_ndtr and ndtri take its log, without
// underflow.
float vkt_erfc_nr_poly(float t) {
  return -1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806 + t * (0.27886807 +
         t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))))));
}
float vkt_erfc_nr_exponent(float z, float t) { return -z * z + vkt_erfc_nr_poly(t); }
float vkt_erfc_nr(float z) {
  float t = 1.0 / (1.0 + 0.5 * z);
  return t * exp(vkt_erfc_nr_exponent(z, t));
}
float vkt_erf(float x) {
  if (abs(x) < 0.5) {
    float z = x * x;
    return x * 1.1283791670955126 * (1.0 + z * (-1.0 / 3.0 + z * (1.0 / 10.0 + z * (-1.0 / 42.0 + z * (1.0 / 216.0 +
           z * (-1.0 / 1320.0 + z * (1.0 / 9360.0 + z * (-1.0 / 75600.0))))))));
  }
  float r = vkt_erfc_nr(abs(x));
  return x >= 0.0 ? 1.0 - r : r - 1.0;
}
float vkt_erfc(float x) {
  float r = vkt_erfc_nr(abs(x));
  return x >= 0.0 ? r : 2.0 - r;
}
float vkt_sigmoid(float x) { return 1.0 / (1.0 + exp(-x)); }

// The small-argument forms below keep float32's relative accuracy near 0, where log(1 + x),
// exp(x) - 1 and (e^x - e^-x) / 2 cancel; drivers' log is only 2^-21 absolute near 1.
float vkt_log1p(float x) {
  if (x < -1.0)
    return uintBitsToFloat(0x7fc00000u);
  if (!(abs(x) < 0.25)) // NaN included: log(NaN)
    return log(1.0 + x);
  float s = x / (2.0 + x), z = s * s; // log1p(x) = 2 atanh(s)
  return 2.0 * s * (1.0 + z * (1.0 / 3.0 + z * (1.0 / 5.0 + z * (1.0 / 7.0 + z * (1.0 / 9.0 + z * (1.0 / 11.0 +
         z * (1.0 / 13.0)))))));
}
float vkt_expm1(float x) {
  if (!(abs(x) < 0.5))
    return exp(x) - 1.0;
  float p = 1.0 + x / 10.0;
  p = 1.0 + x / 9.0 * p, p = 1.0 + x / 8.0 * p, p = 1.0 + x / 7.0 * p, p = 1.0 + x / 6.0 * p;
  p = 1.0 + x / 5.0 * p, p = 1.0 + x / 4.0 * p, p = 1.0 + x / 3.0 * p, p = 1.0 + x / 2.0 * p;
  return x * p;
}
// tanh through exp overflows to inf/inf for |x| > 44 on some drivers, and lavapipe's is 7e-5 off
// near 0: expm1(2|x|) / (expm1(2|x|) + 2), with |x| clamped at 9, past which tanh is +-1 in float32.
float vkt_with_sign_of(float r, float x) { return (floatBitsToUint(x) >> 31) != 0u ? -r : r; }
float vkt_tanh(float x) {
  if (x != x)
    return x;
  float e = vkt_expm1(2.0 * min(abs(x), 9.0));
  return vkt_with_sign_of(e / (e + 2.0), x);
}
// Cephes' tanf: |x| reduced by multiples of pi/4 in three parts, then a polynomial on [-pi/4, pi/4]
// (-1/tan past an odd multiple of pi/2). Drivers' tan is not float32-accurate: lavapipe's tan(+-0) is
// +-2e-15, an H100's tan(1e-3) is 3e-5 off. Past 8192 (and inf, NaN) the driver's.
float vkt_tan(float x) {
  float a = abs(x);
  if (!(a < 8192.0))
    return tan(x);
  float j = floor(a * 1.2732395447351628); // 4 / pi
  j += mod(j, 2.0);                        // even: y lands in [-pi/4, pi/4]
  float y = ((a - j * 0.78515625) - j * 2.4187564849853515625e-4) - j * 3.77489497744594108e-8, z = y * y;
  float t = ((((((9.38540185543e-3 * z + 3.11992232697e-3) * z + 2.44301354525e-2) * z + 5.34112807005e-2) * z +
               1.33387994085e-1) * z + 3.33331568548e-1) * z) * y + y;
  if (mod(j, 4.0) == 2.0)
    t = -1.0 / t;
  return x < 0.0 ? -t : t;
}
float vkt_log(float x) { return abs(x - 1.0) < 0.25 ? vkt_log1p(x - 1.0) : log(x); }
float vkt_log2(float x) { return abs(x - 1.0) < 0.25 ? vkt_log1p(x - 1.0) * 1.4426950408889634 : log2(x); }
// log2(x) log10(2): a macro, which leaves the table's float GLSL as it was (float64's vkt_log10 is math_f64.glsl's,
// as log2 times log10(2) rounds log10(1000) to 2.9999999999999996)
#define vkt_log10(x) (vkt_log2(x) * C(0.30102999566398120))
// e^|x| overflows from 88.7, sinh and cosh only from 89.4: past 88 through (e^(|x|/2))^2 / 2.
float vkt_sinh(float x) {
  float a = abs(x), r;
  if (a < 0.5) {
    float z = x * x;
    return x * (1.0 + z / 6.0 * (1.0 + z / 20.0 * (1.0 + z / 42.0 * (1.0 + z / 72.0 * (1.0 + z / 110.0)))));
  }
  if (a < 88.0) {
    float e = exp(a);
    r = 0.5 * (e - 1.0 / e);
  } else {
    float h = exp(0.5 * a);
    r = 0.5 * h * h;
  }
  return vkt_with_sign_of(r, x);
}
float vkt_cosh(float x) {
  float a = abs(x);
  if (a < 88.0) {
    float e = exp(a);
    return 0.5 * (e + 1.0 / e);
  }
  float h = exp(0.5 * a);
  return 0.5 * h * h;
}
float vkt_asinh(float x) {
  float a = abs(x), r;
  if (a > 1e18)
    r = log(a) + 0.6931471805599453;
  else if (a < 0.5)
    r = vkt_log1p(a + a * a / (1.0 + sqrt(1.0 + a * a)));
  else
    r = log(a + sqrt(a * a + 1.0));
  return vkt_with_sign_of(r, x);
}
float vkt_acosh(float x) {
  if (x < 1.0)
    return uintBitsToFloat(0x7fc00000u);
  if (x > 1e18)
    return log(x) + 0.6931471805599453;
  if (x < 2.0) {
    float t = x - 1.0;
    return vkt_log1p(t + sqrt(2.0 * t + t * t));
  }
  return log(x + sqrt(x * x - 1.0));
}
float vkt_atanh(float x) {
  float a = abs(x);
  if (a > 1.0)
    return uintBitsToFloat(0x7fc00000u);
  float r = a == 1.0 ? uintBitsToFloat(0x7f800000u) : 0.5 * vkt_log1p(2.0 * a / (1.0 - a));
  return vkt_with_sign_of(r, x);
}
// Cephes' atanf, asinf and acosf (about 2e-7 relative): lavapipe's asin was 2e-4 off.
float vkt_atan(float x) {
  float a = abs(x), off = 0.0, t = a;
  if (a > 2.414213562373095) {
    off = 1.5707963267948966, t = -1.0 / a;
  } else if (a > 0.41421356237309503) {
    off = 0.7853981633974483, t = (a - 1.0) / (a + 1.0);
  }
  float z = t * t;
  float r = (((8.05374449538e-2 * z - 1.38776856032e-1) * z + 1.99777106478e-1) * z - 3.33329491539e-1) * z * t + t;
  return vkt_with_sign_of(off + r, x);
}
float vkt_asin(float x) {
  float a = abs(x), z, t;
  if (a > 1.0)
    return uintBitsToFloat(0x7fc00000u);
  bool big = a > 0.5;
  if (big) {
    z = 0.5 * (1.0 - a), t = sqrt(z);
  } else {
    z = a * a, t = a;
  }
  float r = ((((4.2163199048e-2 * z + 2.4181311049e-2) * z + 4.5470025998e-2) * z + 7.4953002686e-2) * z +
             1.6666752422e-1) * z * t + t;
  return vkt_with_sign_of(big ? 1.5707963267948966 - 2.0 * r : r, x);
}
float vkt_acos(float x) {
  if (abs(x) > 1.0)
    return uintBitsToFloat(0x7fc00000u);
  if (x < -0.5)
    return 3.141592653589793 - 2.0 * vkt_asin(sqrt(0.5 * (1.0 + x)));
  if (x > 0.5)
    return 2.0 * vkt_asin(sqrt(0.5 * (1.0 - x)));
  return 1.5707963267948966 - vkt_asin(x);
}
// Giles, "Approximating the erfinv function" (GPU Computing Gems, 2011), single precision: erfinv(x) / x
// as a function of w = -log(1 - x^2), which ndtri computes without 1 - x^2's cancellation.
float vkt_erfinv_ratio(float w) {
  float p;
  if (w < 5.0) {
    w = w - 2.5;
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
float vkt_erfinv(float x) {
  if (abs(x) >= 1.0)
    return abs(x) == 1.0 ? vkt_with_sign_of(uintBitsToFloat(0x7f800000u), x) : uintBitsToFloat(0x7fc00000u);
  return vkt_erfinv_ratio(-log((1.0 - x) * (1.0 + x))) * x;
}
// C's atan2, signed zeros and infinities included (GLSL's atan(y, x) is undefined at x = y = 0).
float vkt_atan2(float y, float x) {
  if (x != x || y != y)
    return x + y;
  const float pi = 3.14159265358979323846;
  bool nx = (floatBitsToUint(x) >> 31) != 0u;
  float r;
  if (y == 0.0)
    r = nx ? pi : 0.0;
  else if (isinf(x) && isinf(y))
    r = nx ? 0.75 * pi : 0.25 * pi;
  else if (isinf(x))
    r = nx ? pi : 0.0;
  else if (isinf(y))
    r = 0.5 * pi;
  else if (abs(x) >= abs(y)) // atan of the smaller ratio, then the quadrant
    r = x > 0.0 ? vkt_atan(abs(y) / x) : 3.141592653589793 - vkt_atan(abs(y) / -x);
  else
    r = 1.5707963267948966 - vkt_atan(x / abs(y));
  return vkt_with_sign_of(r, y);
}
float vkt_logaddexp(float x, float y) {
  if (isinf(x) && x == y)
    return x;
  if (x != x || y != y)
    return x + y;
  return max(x, y) + vkt_log1p(exp(-abs(x - y)));
}

// ---- special functions (torch.special): Cephes' single-precision forms, as PyTorch's float kernels ----

// sin(pi z), |z| <= 1/2, by its Taylor series (truncation below 1e-9): exactly 0 at z = 0, so that the reflection
// formulas find the poles at the integers, where the drivers' sin(pi * x) is 1e-7 off.
float vkt_sinpi_reduced(float z) {
  float t = 3.141592653589793 * z, s = t * t;
  return t * (1.0 + s * (-1.0 / 6.0 + s * (1.0 / 120.0 + s * (-1.0 / 5040.0 + s * (1.0 / 362880.0 +
         s * (-1.0 / 39916800.0 + s * (1.0 / 6227020800.0)))))));
}
float vkt_sinpi(float x) {
  float r = x - 2.0 * roundEven(0.5 * x); // [-1, 1], exactly
  if (abs(r) > 0.5)
    r = (r > 0.0 ? 1.0 : -1.0) - r;
  return vkt_sinpi_reduced(r);
}
float vkt_cospi(float x) {
  float r = abs(x - 2.0 * roundEven(0.5 * x));
  return r <= 0.5 ? vkt_sinpi_reduced(0.5 - r) : -vkt_sinpi_reduced(r - 0.5);
}
float vkt_sinc(float x) { return x == 0.0 ? 1.0 : vkt_sinpi(x) / (3.141592653589793 * x); }

// e^a within a few ulp at any a: 2^k e^r, r = a - k ln 2 in two parts (Cody and Waite's), where the drivers' exp,
// 2^(a log2(e)), is off by |a| 2^-24 relative through the rounding of a log2(e) (3e-6 at a = -70).
float vkt_exp_reduced(float a) {
  if (!(abs(a) < 150.0)) // NaN, and past the range: 0 or inf
    return exp(a);
  float k = roundEven(a * 1.4426950408889634);
  precise float r = (a - k * 0.693359375) + k * 2.12194440e-4;
  return ldexp(exp(r), int(k));
}
// log(x) of x > 0, subnormals included: lavapipe's log takes 1e-45 as 1.2e-38; scaled by 2^64 first (exactly).
float vkt_log_small(float x) { return x < 1e-30 ? log(x * 18446744073709551616.0) - 44.3614195558365 : vkt_log(x); }

// Cephes' lgamf for x > 0: log Gamma(2 + p) and log Gamma(1 + p) by polynomials near 2 and 1 (where lgamma
// is near 0 and a shift by the recurrence would cancel), Stirling's series from 6.5.
float vkt_lgamma_near2(float p) {
  return p * (((((((6.055172732649237E-004 * p - 1.311620815545743E-003) * p + 2.863437556468661E-003) * p -
         7.366775108654962E-003) * p + 2.058355474821512E-002) * p - 6.735323259371034E-002) * p +
         3.224669577325661E-001) * p + 4.227843421859038E-001);
}
float vkt_lgamma_positive(float x) {
  if (x >= 6.5) {
    float q = 0.91893853320467274178 - x + (x - 0.5) * log(x);
    if (x <= 1e4) {
      float z = 1.0 / x, p = z * z;
      q += ((6.789774945028216E-004 * p - 2.769887652139863E-003) * p + 8.333316229807355E-002) * z;
    }
    return q;
  }
  float z = 1.0;
  if (x >= 1.5) { // down into [1.5, 2.5]: Gamma(x) = (x - 1) ... (x - n) Gamma(x - n)
    for (int i = 0; i < 5 && x > 2.5; i++)
      x -= 1.0, z *= x;
    return vkt_lgamma_near2(x - 2.0) + log(z);
  }
  if (x >= 1.25)
    return vkt_lgamma_near2(x - 1.0) - log(x);
  if (x >= 0.75) {
    float p = x - 1.0;
    return p * (((((((1.369488127325832E-001 * p - 1.590086327657347E-001) * p + 1.692415923504637E-001) * p -
           2.067882815621965E-001) * p + 2.705806208275915E-001) * p - 4.006931650563372E-001) * p +
           8.224670749082976E-001) * p - 5.772156501719101E-001);
  }
  for (int i = 0; i < 2 && x < 1.5; i++) // up into [1.5, 2.5)
    z *= x, x += 1.0;
  return vkt_lgamma_near2(x - 2.0) - vkt_log_small(z);
}
// Negative x by the reflection Gamma(x) Gamma(1 - x) = pi / sin(pi x), except in (-1, 0), where
// Gamma(x) = Gamma(x + 1) / x keeps x sin(pi x) from underflowing.
float vkt_lgamma(float x) {
  if (isinf(x) || x == floor(x) && x <= 0.0)
    return uintBitsToFloat(0x7f800000u);
  if (x > 0.0 || isnan(x))
    return vkt_lgamma_positive(x);
  if (x > -1.0)
    return vkt_lgamma_positive(x + 1.0) - vkt_log_small(-x);
  return 1.1447298858494002 - log(abs(x * vkt_sinpi(x))) - vkt_lgamma_positive(-x);
}

// PyTorch's calc_digamma: the reflection psi(x) = psi(1 - x) - pi / tan(pi x) below 0, the recurrence up to 10,
// then the asymptotic series.
float vkt_digamma(float x) {
  if (x == 0.0)
    return vkt_with_sign_of(-uintBitsToFloat(0x7f800000u), x); // +-0 gives -+inf, as C's and SciPy's
  // Near its zero x0 the recurrence's terms cancel (1e-4 relative off, as PyTorch's float kernel is): psi's Taylor
  // series at x0 instead (truncation 1e-8), in d = x - x0 from x0's float and the rest (x - x0's float is exact).
  if (abs(x - 1.4616321) < 0.2) {
    precise float d = (x - 1.4616321325302124) - 1.2438149843418955e-08; // precise: lavapipe folded the constants
    return d * (0.96767224589461254 + d * (-0.44276316898359214 + d * (0.25849976095565119 + d * (-0.16394270544240661 +
           d * (0.10782405069126237 + d * (-0.07219956125645477 + d * (0.048804288164143075 +
           d * (-0.033161126474847397 + d * 0.022597648232218152))))))));
  }
  float result = 0.0;
  if (x < 0.0) {
    if (x == floor(x))
      return uintBitsToFloat(0x7fc00000u);
    float r = x - trunc(x);
    result = -3.141592653589793 * vkt_cospi(r) / vkt_sinpi(r);
    x = 1.0 - x;
  }
  for (int i = 0; i < 10 && x < 10.0; i++)
    result -= 1.0 / x, x += 1.0;
  if (x == 10.0)
    return result + 2.25175258906672110764;
  float y = 0.0;
  if (x < 1.0e17) {
    float z = 1.0 / (x * x);
    y = z * ((((((8.33333333333333333333E-2 * z - 2.10927960927960927961E-2) * z + 7.57575757575757575758E-3) * z -
        4.16666666666666666667E-3) * z + 3.96825396825396825397E-3) * z - 8.33333333333333333333E-3) * z +
        8.33333333333333333333E-2);
  }
  return result + log(x) - 0.5 / x - y;
}
// PyTorch's calc_trigamma, with the reflection pi^2 / sin^2(pi x) - trigamma(1 - x) below 1/2.
float vkt_trigamma(float x) {
  float sign = 1.0, result = 0.0;
  if (isinf(x)) // PyTorch's limits
    return x > 0.0 ? 0.0 : uintBitsToFloat(0x7f800000u);
  if (x < 0.5) {
    float s = vkt_sinpi(x);
    sign = -1.0, result = -9.869604401089358 / (s * s), x = 1.0 - x;
  }
  for (int i = 0; i < 6; i++)
    result += 1.0 / (x * x), x += 1.0;
  float ixx = 1.0 / (x * x);
  result += (1.0 + 1.0 / (2.0 * x) + ixx * (1.0 / 6.0 - ixx * (1.0 / 30.0 - ixx * (1.0 / 42.0)))) / x;
  return sign * result;
}
float vkt_powi(float x, int n) { // x^n of an integer n >= 0, by squaring: defined for x < 0, where pow is not
  float r = 1.0;
  for (; n > 0; n >>= 1, x *= x)
    if ((n & 1) != 0)
      r *= x;
  return r;
}
// a^-s: an integral s up to 128 (past it a^s overflows float32 for a >= 2) as 1 / a^s by squaring (polygamma's), within
// a few ulp, where NVIDIA's pow (exp2 of s log2(a), the log to 2^-22) was 5e-6 off at 0.5^-65; else the driver's pow
// (1 at a = 1, where it would be NaN for an infinite s).
float vkt_zeta_term(float a, float s) {
  return s == floor(s) && s <= 128.0 ? 1.0 / vkt_powi(a, int(s)) : a == 1.0 ? 1.0 : pow(a, -s);
}
// Hurwitz zeta(s, q) of s > 1 and q > 0: Cephes' sum up to q + 9, then Euler-Maclaurin.
float vkt_zeta_sum(float s, float q) {
  const float bernoulli[12] = float[12](12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9,
      7.47242496e10, -2.950130727918164224e12, 1.1646782814350067249e14, -4.5979787224074726105e15,
      1.8152105401943546773e17, -7.1661652561756670113e18);
  float sum = vkt_zeta_term(q, s), a = q, b = 0.0;
  for (int i = 0; i < 20 && (i < 9 || a <= 9.0); i++) {
    a += 1.0, b = vkt_zeta_term(a, s), sum += b;
    if (b < 6e-8 * sum)
      return sum;
  }
  float w = a, f = 1.0, k = 0.0;
  sum += b * w / (s - 1.0) - 0.5 * b;
  for (int i = 0; i < 12; i++, k += 2.0) {
    f *= s + k, b /= w;
    float t = f * b / bernoulli[i];
    sum += t;
    if (abs(t) <= 6e-8 * abs(sum)) // 0 <= 0 too: where a^-s underflows, f would overflow float32 next
      break;
    f *= s + k + 1.0, b /= w;
  }
  return sum;
}

// log(x / (1 - x)), x first clamped to [eps, 1 - eps] where eps >= 0; log1p near 1/2, where the ratio is near 1.
float vkt_logit(float x, float eps) {
  if (eps >= 0.0 && !isnan(x)) // NaN passes: NVIDIA's compiler makes the selects a min/max, which would drop it
    x = x < eps ? eps : x > 1.0 - eps ? 1.0 - eps : x;
  if (x < 0.0 || x > 1.0)
    return uintBitsToFloat(0x7fc00000u);
  return abs(x - 0.5) < 0.25 ? vkt_log1p((2.0 * x - 1.0) / (1.0 - x)) : vkt_log_small(x / (1.0 - x));
}
float vkt_entr(float x) {
  if (isnan(x) || x == 0.0)
    return isnan(x) ? x : 0.0;
  return x > 0.0 ? -x * vkt_log_small(x) : -uintBitsToFloat(0x7f800000u);
}
// x^2 as hi + lo exactly: x * x and its rounding error by Dekker's product, in multiplies and adds that `precise` keeps
// as written.
vec2 vkt_square_exact(float x) {
  precise float hi = x * x, c = 4097.0 * x, xh = c - (c - x), xl = x - xh;
  precise float lo = ((xh * xh - hi) + 2.0 * xh * xl) + xl * xl;
  return vec2(hi, lo);
}
// 0.5 erfc(-x / sqrt 2); below -1 with erfc's e^(-x^2 / 2) split exactly: rounded once, x^2 / 2 near 80 would lose
// 1e-5 of the tail.
float vkt_ndtr(float x) {
  if (!(x < -1.0) || x < -15.0) // below -15 it is 0 in float32 (and -inf's split would be NaN)
    return x < -15.0 ? 0.0 : 0.5 * vkt_erfc(x * -0.7071067811865476);
  float z = x * -0.7071067811865476, t = 1.0 / (1.0 + 0.5 * z);
  vec2 x2 = vkt_square_exact(x);
  return 0.5 * t * vkt_exp_reduced(-0.5 * x2.x) * exp(vkt_erfc_nr_poly(t) - 0.5 * x2.y);
}
// e^(x^2) erfc(x): from 0 erfc's rational form without its e^(-x^2), t e^(P(t)) (1.2e-7 relative, and no overflow
// where e^(x^2) would); below, 2 e^(x^2) - erfcx(-x) with x^2 split exactly, as ndtr's.
float vkt_erfcx(float x) {
  if (!(x < 0.0)) { // NaN included
    float t = 1.0 / (1.0 + 0.5 * x);
    return t * vkt_exp_reduced(vkt_erfc_nr_poly(t));
  }
  if (x < -10.0) // e^(x^2) is past float32's range (and -inf's split would be NaN)
    return uintBitsToFloat(0x7f800000u);
  vec2 x2 = vkt_square_exact(x);
  float t = 1.0 / (1.0 - 0.5 * x);
  return 2.0 * vkt_exp_reduced(x2.x) * exp(x2.y) - t * vkt_exp_reduced(vkt_erfc_nr_poly(t));
}
// C's nextafter, on the bits, where a GPU's float arithmetic may flush subnormals; in float16's steps where f16 (the
// shaders compute float16 in float, so x and y are float16 values then): a float16 value's float has 13 trailing
// zero bits, and its step is 2^13 of the float's except below float16's smallest normal, 2^-14, where it is 2^-24.
float vkt_nextafter(float x, float y, bool f16) {
  uint ux = floatBitsToUint(x), uy = floatBitsToUint(y);
  if (isnan(x) || isnan(y)) // the NaN itself, as the CPU's x + y gives it (a GPU's sum is its own NaN)
    return isnan(x) ? x : y;
  if (ux == uy || ((ux | uy) << 1) == 0u) // equal, +-0 included
    return y;
  if ((ux << 1) == 0u) // from 0, the smallest subnormal with y's sign
    return f16 ? (y > 0.0 ? 5.960464477539063e-08 : -5.960464477539063e-08) : uintBitsToFloat((uy & 0x80000000u) | 1u);
  bool outward = ((ux ^ uy) >> 31) == 0u && (ux & 0x7fffffffu) < (uy & 0x7fffffffu); // away from 0, toward y
  if (f16 && isinf(x))
    return x > 0.0 ? 65504.0 : -65504.0;
  if (f16 && (abs(x) < 6.103515625e-05 || (abs(x) == 6.103515625e-05 && !outward))) // x's sign kept, on 0 too
    return uintBitsToFloat(floatBitsToUint(abs(x) + (outward ? 5.960464477539063e-08 : -5.960464477539063e-08)) |
                           (ux & 0x80000000u));
  uint step = f16 ? 8192u : 1u;
  return uintBitsToFloat(outward ? ux + step : ux - step);
}
// log(ndtr(x)): log1p of the upper tail above -1 (ndtr(-x), exact in its exponent); below, the log of erfc's
// rational form, which never underflows.
float vkt_log_ndtr(float x) {
  if (x >= -1.0 || isnan(x))
    return vkt_log1p(-vkt_ndtr(-x));
  float z = x * -0.7071067811865476, t = 1.0 / (1.0 + 0.5 * z);
  return log(0.5 * t) + vkt_erfc_nr_exponent(z, t);
}

// sqrt(2) erfinv(2p - 1), with 1 - (2p - 1)^2 = 4 p (1 - p) taken as that product: no cancellation. Giles' form
// holds while w = -log(4 p (1 - p)) < 16 (erfinv's float range); in the tails, from Abramowitz & Stegun 26.2.23
// (4.5e-4), Newton's steps on log(ndtr(x)) - log(q), whose derivative is 1 / Mills' ratio and neither underflows.
float vkt_ndtri(float p) {
  if (p <= 0.0 || p >= 1.0)
    return p == 0.0 ? -uintBitsToFloat(0x7f800000u) : p == 1.0 ? uintBitsToFloat(0x7f800000u) :
           uintBitsToFloat(0x7fc00000u);
  float w = -vkt_log_small(4.0 * p * (1.0 - p));
  if (w < 16.0)
    return 1.4142135623730951 * vkt_erfinv_ratio(w) * (2.0 * p - 1.0);
  float q = min(p, 1.0 - p), lq = vkt_log_small(q), t = sqrt(-2.0 * lq);
  float x = (2.515517 + t * (0.802853 + t * 0.010328)) / (1.0 + t * (1.432788 + t * (0.189269 + t * 0.001308))) - t;
  for (int i = 0; i < 3; i++) {
    float z = x * -0.7071067811865476, u = 1.0 / (1.0 + 0.5 * z);
    float mills = 1.2533141373155003 * u * exp(vkt_erfc_nr_poly(u)); // ndtr(x) / pdf(x) = sqrt(pi / 2) erfcx(z)
    x -= (vkt_log_ndtr(x) - lq) * mills;
  }
  return p > 0.5 ? -x : x;
}
// Cephes' i0f, i1f (Chebyshev series of e^-x I(x) on [0, 8] and of e^-x sqrt(x) I(x) beyond), as PyTorch's float
// kernels; e^x applied in halves, so that I0 and I1 stay finite up to 91.9, as in float64.
float vkt_bessel_i(float x, bool one, bool scaled) {
  const float i0a[18] = float[18](-1.30002500998624804212E-8, 6.04699502254191894932E-8, -2.67079385394061173391E-7,
      1.11738753912010371815E-6, -4.41673835845875056359E-6, 1.64484480707288970893E-5, -5.75419501008210370398E-5,
      1.88502885095841655729E-4, -5.76375574538582365885E-4, 1.63947561694133579842E-3, -4.32430999505057594430E-3,
      1.05464603945949983183E-2, -2.37374148058994688156E-2, 4.93052842396707084878E-2, -9.49010970480476444210E-2,
      1.71620901522208775349E-1, -3.04682672343198398683E-1, 6.76795274409476084995E-1);
  const float i0b[7] = float[7](3.39623202570838634515E-9, 2.26666899049817806459E-8, 2.04891858946906374183E-7,
      2.89137052083475648297E-6, 6.88975834691682398426E-5, 3.36911647825569408990E-3, 8.04490411014108831608E-1);
  const float i1a[17] = float[17](9.38153738649577178388E-9, -4.44505912879632808065E-8, 2.00329475355213526229E-7,
      -8.56872026469545474066E-7, 3.47025130813767847674E-6, -1.32731636560394358279E-5, 4.78156510755005422638E-5,
      -1.61760815825896745588E-4, 5.12285956168575772895E-4, -1.51357245063125314899E-3, 4.15642294431288815669E-3,
      -1.05640848946261981558E-2, 2.47264490306265168283E-2, -5.29459812080949914269E-2, 1.02643658689847095384E-1,
      -1.76416518357834055153E-1, 2.52587186443633654823E-1);
  const float i1b[7] = float[7](-3.83538038596423702205E-9, -2.63146884688951950684E-8, -2.51223623787020892529E-7,
      -3.88256480887769039346E-6, -1.10588938762623716291E-4, -9.76109749136146840777E-3, 7.78576235018280120474E-1);
  float ax = abs(x), b0 = 0.0, b1 = 0.0, b2 = 0.0, r;
  if (isinf(ax))
    return scaled ? 0.0 : one ? x : ax;
  bool near = ax <= 8.0;
  float y = near ? 0.5 * ax - 2.0 : 32.0 / ax - 2.0; // Clenshaw's recurrence below
  int n = near ? (one ? 17 : 18) : 7;
  for (int i = 0; i < n; i++) {
    float c = near ? (one ? i1a[i] : i0a[i]) : (one ? i1b[i] : i0b[i]);
    b2 = b1, b1 = b0, b0 = y * b1 - b2 + c;
  }
  r = 0.5 * (b0 - b2);
  r = near ? (one ? r * ax : r) : r / sqrt(ax);
  if (!scaled) { // precise: (r h) h, as written; NVIDIA's compiler reassociated it into r (h h), which overflows
    float h = vkt_exp_reduced(0.5 * ax);
    precise float rh = r * h;
    r = rh * h;
  }
  return one ? vkt_with_sign_of(r, x) : r;
}

// x log(y) and x log1p(y), 0 where x is 0 (unless y is NaN), as PyTorch's.
float vkt_xlogy(float x, float y, bool log1p_y) {
  if (isnan(y) || x == 0.0)
    return isnan(y) ? y : 0.0;
  if (!log1p_y && y < 0.0) // GLSL's log is undefined there
    return uintBitsToFloat(0x7fc00000u);
  return x * (log1p_y ? vkt_log1p(y) : vkt_log(y));
}
#endif

#if defined(C_FLOAT64)
// The op table's functions in float64 on math_f64.glsl, by the formulas of the CPU kernels (cpu/math.c), which
// compute in float64 with C's libm.
double vkt_log(double x) { return log(x); }
double vkt_log2(double x) { return log2(x); }
double vkt_tan(double x) { return tan(x); }
double vkt_tanh(double x) { return tanh(x); }
double vkt_sinh(double x) { return sinh(x); }
double vkt_cosh(double x) { return cosh(x); }
double vkt_asinh(double x) { return asinh(x); }
double vkt_acosh(double x) { return acosh(x); }
double vkt_atanh(double x) { return atanh(x); }
double vkt_asin(double x) { return asin(x); }
double vkt_acos(double x) { return acos(x); }
double vkt_atan(double x) { return atan(x); }
double vkt_atan2(double y, double x) { return atan(y, x); }
precise double vkt_sigmoid(double x) { return 1.0lf / (1.0lf + exp(-x)); }
precise double vkt_logaddexp(double x, double y) {
  if (isinf(x) && x == y)
    return x;
  if (isnan(x) || isnan(y)) // the NaN itself, as the CPU's x + y gives it (a GPU's sum is its own NaN)
    return isnan(x) ? x : y;
  return max(x, y) + vkt_log1p(exp(-abs(x - y)));
}
precise double vkt_xlogy(double x, double y, bool log1p_y) {
  if (isnan(y) || x == 0.0lf)
    return isnan(y) ? y : 0.0lf;
  return x * (log1p_y ? vkt_log1p(y) : log(y));
}
precise double vkt_logit(double x, double eps) {
  if (eps >= 0.0lf && !isnan(x)) // NaN passes: NVIDIA's compiler makes the selects a min/max, which would drop it
    x = x < eps ? eps : x > 1.0lf - eps ? 1.0lf - eps : x;
  return abs(x - 0.5lf) < 0.25lf ? vkt_log1p((2.0lf * x - 1.0lf) / (1.0lf - x)) : log(x / (1.0lf - x));
}
precise double vkt_entr(double x) {
  if (isnan(x) || x == 0.0lf)
    return isnan(x) ? x : 0.0lf;
  return x > 0.0lf ? -x * log(x) : -vkt_f64_inf();
}
// sin(pi x), x reduced into [-1/2, 1/2] exactly: 0 at the integers.
precise double vkt_sinpi(double x) {
  double r = x - 2.0lf * roundEven(0.5lf * x); // [-1, 1], exactly
  if (abs(r) > 0.5lf)
    r = (r > 0.0lf ? 1.0lf : -1.0lf) - r;
  return vkt_f64_sinpi(r);
}
precise double vkt_sinc(double x) { return x == 0.0lf ? 1.0lf : vkt_sinpi(x) / (3.14159265358979311600e+00lf * x); }
precise double vkt_ndtr(double x) { return 0.5lf * vkt_erfc(x * -0.70710678118654752440lf); }
// log(ndtr(x)): log1p of the upper tail above -1; below, log of the lower tail, and past -30 (where it would
// underflow) erfc's asymptotic series, log(erfc(z)) = -z^2 - log(z sqrt(pi)) + log(sum (-1)^k (2k-1)!! / (2z^2)^k).
precise double vkt_log_ndtr(double x) {
  double z = x * -0.70710678118654752440lf;
  if (x >= -1.0lf)
    return vkt_log1p(-0.5lf * vkt_erfc(-z));
  if (x >= -30.0lf)
    return log(0.5lf * vkt_erfc(z));
  double s = 1.0lf, t = 1.0lf;
  for (int k = 1; k < 12; k++) {
    t *= -double(2 * k - 1) / (2.0lf * z * z);
    s += t;
  }
  return -z * z - log(2.0lf * z * 1.7724538509055160273lf) + log(s);
}
// The lower tail's quantile, q <= 1/2: Abramowitz & Stegun 26.2.23 (4.5e-4), then Newton's steps, each squaring the
// error; e^(x^2 / 2) in halves, which stay finite down to the subnormals.
precise double vkt_ndtri(double p) {
  if (!(p > 0.0lf && p < 1.0lf))
    return p == 0.0lf ? -vkt_f64_inf() : p == 1.0lf ? vkt_f64_inf() : vkt_f64_nan();
  double q = p > 0.5lf ? 1.0lf - p : p, t = sqrt(-2.0lf * log(q));
  double x = -(t - (2.515517lf + t * (0.802853lf + t * 0.010328lf)) /
                   (1.0lf + t * (1.432788lf + t * (0.189269lf + t * 0.001308lf))));
  for (int i = 0; i < 4; i++) {
    double h = exp(x * x / 4.0lf);
    x -= (vkt_ndtr(x) - q) * h * 2.5066282746310002lf * h; // sqrt(2 pi), as the CPU kernel rounds it
  }
  return p > 0.5lf ? -x : x;
}
// I_nu(x) of nu 0 or 1 (times e^-|x| where scaled): the power series up to 20 (positive terms), beyond it the
// asymptotic series, whose terms fall below 1e-17 of the sum before they grow (near k = 2x).
precise double vkt_bessel_i(double x, bool one, bool scaled) {
  double ax = abs(x), nu = one ? 1.0lf : 0.0lf, s;
  if (isnan(x))
    return x;
  if (ax <= 20.0lf) {
    double q = ax * ax / 4.0lf, t = one ? ax / 2.0lf : 1.0lf;
    s = t;
    for (int k = 1; k < 200 && t > 1e-17lf * s; k++) {
      t *= q / (double(k) * (double(k) + nu));
      s += t;
    }
    s = scaled ? s * exp(-ax) : s;
  } else if (isinf(ax)) {
    s = scaled ? 0.0lf : ax;
  } else {
    double m = 4.0lf * nu * nu, t = 1.0lf;
    s = 1.0lf;
    for (int k = 1; k < 60 && abs(t) > 1e-17lf * s; k++) {
      t *= -(m - double(2 * k - 1) * double(2 * k - 1)) / (8.0lf * double(k) * ax);
      s += t;
    }
    double h = scaled ? 1.0lf : exp(ax / 2.0lf); // e^x in halves: finite where I0 is
    s = s / sqrt(6.28318530717958647692lf * ax) * h * h;
  }
  return one && x < 0.0lf ? -s : s;
}
// PyTorch's calc_trigamma, with the reflection pi^2 / sin^2(pi x) - trigamma(1 - x) below 1/2.
precise double vkt_trigamma(double x) {
  double sign = 1.0lf, result = 0.0lf;
  if (isinf(x)) // PyTorch's limits
    return x > 0.0lf ? 0.0lf : vkt_f64_inf();
  if (x < 0.5lf) {
    double s = vkt_sinpi(x);
    sign = -1.0lf, result = -9.8696044010893586188lf / (s * s), x = 1.0lf - x;
  }
  for (int i = 0; i < 6; i++) {
    result += 1.0lf / (x * x);
    x += 1.0lf;
  }
  double ixx = 1.0lf / (x * x);
  result += (1.0lf + 1.0lf / (2.0lf * x) + ixx * (1.0lf / 6.0lf - ixx * (1.0lf / 30.0lf - ixx * (1.0lf / 42.0lf)))) / x;
  return sign * result;
}
// Hurwitz zeta(s, q) of s > 1 and q > 0: Cephes' sum up to q + 9, then Euler-Maclaurin.
precise double vkt_zeta_sum(double s, double q) {
  const double bernoulli[12] = double[12](12.0lf, -720.0lf, 30240.0lf, -1209600.0lf, 47900160.0lf,
      -1.8924375803183791606e9lf, 7.47242496e10lf, -2.950130727918164224e12lf, 1.1646782814350067249e14lf,
      -4.5979787224074726105e15lf, 1.8152105401943546773e17lf, -7.1661652561756670113e18lf);
  const double eps = 1.11022302462515654042e-16lf;
  double sum = pow(q, -s), a = q, b = 0.0lf;
  for (int i = 0; i < 20 && (i < 9 || a <= 9.0lf); i++) {
    a += 1.0lf, b = pow(a, -s), sum += b;
    if (abs(b) < eps * abs(sum))
      return sum;
  }
  double w = a, f = 1.0lf, k = 0.0lf;
  sum += b * w / (s - 1.0lf) - 0.5lf * b;
  for (int i = 0; i < 12; i++, k += 2.0lf) {
    f *= s + k, b /= w;
    double t = f * b / bernoulli[i];
    sum += t;
    if (abs(t / sum) < eps)
      break;
    f *= s + k + 1.0lf, b /= w;
  }
  return sum;
}
#endif

#if defined(C_FLOAT) || defined(C_FLOAT64)
#if defined(C_FLOAT64)
C vkt_nan() { return packDouble2x32(uvec2(0u, 0x7ff80000u)); }
C vkt_inf() { return packDouble2x32(uvec2(0u, 0x7ff00000u)); }
#else
C vkt_nan() { return uintBitsToFloat(0x7fc00000u); }
C vkt_inf() { return uintBitsToFloat(0x7f800000u); }
#endif
#if defined(C_FLOAT64)
#define VKT_DEG2RAD 0.017453292519943295lf
#define VKT_RAD2DEG 57.29577951308232lf
#define VKT_PI 3.141592653589793lf
C vkt_copysign(C x, C y) {
  uvec2 a = unpackDouble2x32(x), b = unpackDouble2x32(y);
  return packDouble2x32(uvec2(a.x, (a.y & 0x7fffffffu) | (b.y & 0x80000000u)));
}
#else
#define VKT_DEG2RAD 0.017453292519943295
#define VKT_RAD2DEG 57.29577951308232
#define VKT_PI 3.141592653589793
C vkt_copysign(C x, C y) { return uintBitsToFloat((floatBitsToUint(x) & 0x7fffffffu) | (floatBitsToUint(y) & 0x80000000u)); }
#endif
bool vkt_isnan(C x) { return isnan(x); }
bool vkt_isinf(C x) { return isinf(x); }
C vkt_hypot(C x, C y) {
  C a = abs(x), b = abs(y);
  if (isinf(a) || isinf(b))
    return vkt_inf();
  if (isnan(a) || isnan(b)) // not a != a: a driver may fold that to false (an H100's did)
    return a + b;
  C m = max(a, b), r = min(a, b) / m;
  return m == C(0) ? C(0) : m * sqrt(C(1) + r * r);
}
// PyTorch's isclose: equal, or both NaN where asked, or a finite |x - y| within atol + |rtol * y|.
bool vkt_isclose(C x, C y, C rtol, C atol, bool equal_nan) {
  if (x == y)
    return true;
  if (isnan(x) || isnan(y))
    return equal_nan && isnan(x) && isnan(y);
  C d = abs(x - y);
  return !isinf(d) && d <= atol + abs(rtol * y);
}
// Hurwitz zeta(s, q) with PyTorch's special values (Cephes'): inf at s = 1 and at the poles q = 0, -1, ...; NaN for
// s < 1 and for q < 0 unless s is an integer, where the terms left of 0 are zeta's at the fraction f = trunc(q) - q
// mirrored, zeta(s, q) = (-1)^s (zeta(s, f) - zeta(s, 1 - q)) + zeta(s, 1 - f), so no loop runs to 0 from q.
precise C vkt_zeta(C s, C q) {
  if (s == C(1))
    return vkt_inf();
  if (s < C(1))
    return vkt_nan();
  if (q <= C(0) && q == floor(q))
    return vkt_inf();
  if (q < C(0) && s != floor(s))
    return vkt_nan();
  if (isinf(s)) // each term is 0, 1 or inf as |q + k| is above, at or below 1; Cephes' sum is NaN past q = 1
    return q < C(1) ? vkt_inf() : q == C(1) ? C(1) : vkt_nan();
  if (!(q < C(0)))
    return vkt_zeta_sum(s, q);
  C f = trunc(q) - q, even = floor(s / C(2)) * C(2) == s ? C(1) : C(-1);
  // The mirrored terms first: at f = 1/2 they cancel exactly. An infinite one is the value (where s is so large that
  // a term overflows, the sum from 1 - q is NaN: Cephes' 0 * inf).
  C mirrored = vkt_zeta_sum(s, C(1) - f) + even * vkt_zeta_sum(s, f);
  return isinf(mirrored) ? mirrored : mirrored - even * vkt_zeta_sum(s, C(1) - q);
}
// (-1)^(n+1) n! zeta(n + 1, x), and the limit 0 at +inf, where zeta's terms are inf * 0.
precise C vkt_polygamma(int n, C x) {
  if (n == 0)
    return vkt_digamma(x);
  if (n == 1)
    return vkt_trigamma(x);
  C factorial = C(1);
  for (int k = 2; k <= n; k++)
    factorial *= C(k);
  C z = isinf(x) && x > C(0) ? C(0) : vkt_zeta(C(n + 1), x);
  return ((n & 1) != 0 ? factorial : -factorial) * z;
}
// The regularized incomplete gamma function P(a, x), or Q(a, x) = 1 - P(a, x) with upper: cpu/math.c's igamma
// (Cephes' igam and igamc), in the compute type: P's power series where x <= 1 or x < a, else Q's continued
// fraction, until a term no longer changes the sum (at most 2000); PyTorch's special values. Q of a tiny a at a
// small x is 1 - P, exact to the type's epsilon but not relatively (PyTorch sums Q's own series there).
#if defined(C_FLOAT64)
#define VKT_IGAMMA_EPS 1.1102230246251565e-16lf
#define VKT_IGAMMA_BIG 4503599627370496.0lf
#else
#define VKT_IGAMMA_EPS 5.9604644775390625e-8
#define VKT_IGAMMA_BIG 16777216.0
#endif
// log(x^a e^-x / Gamma(a)), the factor of both. Where x is near a large a, as a log1pmx((x - a) / a) +
// log(a / 2 pi) / 2 minus lgamma's Stirling correction: a log x - x - lgamma(a) there cancels a * log(a) to its last
// bits (in float32, P off by 3e-4 at a = 1000).
precise C vkt_igamma_factor(C a, C x) {
  if (a < C(10) || abs(x - a) > C(0.4) * a)
    return a * vkt_log(x) - x - vkt_lgamma(a);
  C d = (x - a) / a, m = C(0), power = d;
  for (int n = 2; n < 64; n++) { // log(1 + d) - d, |d| <= 0.4
    power *= -d;
    C term = power / C(n);
    m += term;
    if (abs(term) <= abs(m) * VKT_IGAMMA_EPS)
      break;
  }
  C r = C(1) / a, r2 = r * r;
  C correction = r * (C(1) / C(12) - r2 * (C(1) / C(360) - r2 * (C(1) / C(1260) - r2 * (C(1) / C(1680) -
                 r2 * (C(1) / C(1188) - r2 * (C(691) / C(360360) - r2 / C(156)))))));
  return a * m + C(0.5) * vkt_log(a / (C(2) * VKT_PI)) - correction;
}
precise C vkt_igamma(C a, C x, bool upper) {
  C p;
  if (a < C(0) || x < C(0) || (a == C(0) && !(x > C(0))) || (x != C(0) && isinf(a) && isinf(x)))
    return vkt_nan();
  if (a == C(0) || x == C(0) || isinf(a) || isinf(x)) { // in PyTorch's order: a NaN falls through where x decides
    p = a == C(0) ? C(1) : x == C(0) || isinf(a) ? C(0) : C(1);
    return upper ? C(1) - p : p;
  }
  C prefix = exp(vkt_igamma_factor(a, x));
  if (x <= C(1) || x < a) {
    C r = a, c = C(1), sum = C(1);
    for (int k = 0; k < 2000 && c > sum * VKT_IGAMMA_EPS; k++)
      r += C(1), c *= x / r, sum += c;
    p = sum * prefix / a;
    p = p > C(1) ? C(1) : p; // rounding can carry P a little past 1 where a is tiny (and NaN stays NaN)
    return upper ? C(1) - p : p;
  }
  C y = C(1) - a, z = x + y + C(1), c = C(0), pkm2 = C(1), qkm2 = x, pkm1 = x + C(1), qkm1 = z * x;
  C q = pkm1 / qkm1, t = C(1);
  for (int k = 0; k < 2000 && t > VKT_IGAMMA_EPS; k++) {
    c += C(1), y += C(1), z += C(2);
    C yc = y * c, pk = pkm1 * z - pkm2 * yc, qk = qkm1 * z - qkm2 * yc;
    if (qk != C(0)) {
      C r = pk / qk;
      t = abs((q - r) / r), q = r;
    } else {
      t = C(1);
    }
    pkm2 = pkm1, pkm1 = pk, qkm2 = qkm1, qkm1 = qk;
    if (abs(pk) > VKT_IGAMMA_BIG)
      pkm2 /= VKT_IGAMMA_BIG, pkm1 /= VKT_IGAMMA_BIG, qkm2 /= VKT_IGAMMA_BIG, qkm1 /= VKT_IGAMMA_BIG;
  }
  q *= prefix;
  return upper ? q : C(1) - q;
}
#if defined(C_FLOAT64)
C vkt_pow(C x, C y) { return pow(x, y); } // math_f64.glsl's: C's special values, and exact integer powers
#else
bool vkt_odd(C y) { return abs(y) < C(16777216) && mod(y, C(2)) == C(1); } // every float past 2^24 is even
// C's pow, special values included (GLSL's pow is undefined for x < 0, x == 0 with y <= 0, and
// non-finite operands). Small integral exponents multiply exactly (x ** 2 is x * x, as on the CPU).
C vkt_pow(C x, C y) {
  if (y == C(0) || x == C(1))
    return C(1);
  if (x != x || y != y)
    return x + y;
  bool integral = floor(y) == y;
  if (integral && abs(y) <= C(64)) {
    C r = C(1), b = x;
    for (int e = int(abs(y)); e > 0; e >>= 1, b *= b)
      if ((e & 1) != 0)
        r *= b;
    return y < C(0) ? C(1) / r : r;
  }
  C ax = abs(x);
  bool negate = (floatBitsToUint(float(x)) >> 31) != 0u && vkt_odd(y); // -0.0 included
  C r;
  if (isinf(y))
    r = ax == C(1) ? C(1) : (ax > C(1)) == (y > C(0)) ? vkt_inf() : C(0);
  else if (ax == C(0) || isinf(ax))
    r = (ax == C(0)) == (y < C(0)) ? vkt_inf() : C(0);
  else if (x < C(0) && !integral)
    return vkt_nan();
  else
    r = C(pow(float(ax), float(y)));
  return negate ? -r : r;
}
#endif
C vkt_div_trunc(C x, C y) { return trunc(x / y); }
// C's fmod, exactly: subtracting |y| scaled to just under the remainder is exact (Sterbenz), and
// each step clears the remainder's leading bit. x - trunc(x / y) * y is not exact: float32 lost
// 0.04 of remainder(4988429, 1001.2) that way, and all of remainder(1e10, 3).
C vkt_fmod(C x, C y) {
  C ax = abs(x), ay = abs(y);
  if (isinf(x) || x != x || y != y || y == C(0))
    return vkt_nan();
  if (ax < ay)
    return x;
  int ey, er;
  frexp(ay, ey);
  C r = ax;
  // At most one step per exponent; the bound keeps a driver that flushes subnormals from looping.
  for (int i = 0; i < 2200 && r >= ay; i++) {
    frexp(r, er);
    C k = ldexp(ay, er - ey);
    r -= k > r ? ldexp(ay, er - ey - 1) : k;
  }
  return x < C(0) ? -r : r;
}
// Python's remainder, as PyTorch computes it: fmod, moved into y's sign.
C vkt_remainder(C x, C y) {
  C r = vkt_fmod(x, y);
  return r != C(0) && (r < C(0)) != (y < C(0)) ? r + y : r;
}
// PyTorch's floor division, consistent with its remainder: (x - fmod(x, y)) / y, moved down where
// the remainder moves, then floored (inf // y is NaN there, not floor(inf)).
C vkt_div_floor(C x, C y) {
  if (y == C(0))
    return x / y;
  C m = vkt_fmod(x, y), d = (x - m) / y;
  if (m != C(0) && (y < C(0)) != (m < C(0)))
    d -= C(1);
  if (d == C(0))
    return vkt_copysign(C(0), x / y);
  C f = floor(d);
  return d - f > C(0.5) ? f + C(1) : f;
}
// (0 < x) - (x < 0), as PyTorch computes it: NaN and -0 give +0. The ternary form was folded by
// lavapipe into a sign() that keeps NaN and the zero's sign.
C vkt_sign(C x) { return C(int(x > C(0)) - int(x < C(0))); }
#else
// Integer division by zero cannot be detected in a shader: it gives 0 (the CPU kernel raises).
C vkt_div_trunc(C x, C y) { return y == C(0) ? C(0) : x / y; }
C vkt_div_floor(C x, C y) {
  if (y == C(0))
    return C(0);
  C q = x / y;
  return (q * y != x && ((x < C(0)) != (y < C(0)))) ? q - C(1) : q;
}
C vkt_remainder(C x, C y) {
  if (y == C(0))
    return C(0);
  C r = x - (x / y) * y;
  return (r != C(0) && ((r < C(0)) != (y < C(0)))) ? r + y : r;
}
// Negative exponents truncate 1 / x ** -y toward zero, as PyTorch does: 0 unless |x| is 1.
C vkt_pow(C x, C y) {
  if (y < C(0))
    return x == C(1) ? C(1) : x == C(-1) ? ((y & C(1)) != C(0) ? C(-1) : C(1)) : C(0);
  C r = C(1);
  for (; y > C(0); y >>= 1, x *= x)
    if ((y & C(1)) != C(0))
      r *= x;
  return r;
}
C vkt_sign(C x) { return x > C(0) ? C(1) : x < C(0) ? C(-1) : C(0); }
bool vkt_isnan(C x) { return false; }
bool vkt_isinf(C x) { return false; }
C vkt_fmod(C x, C y) { return y == C(0) ? C(0) : x - (x / y) * y; }
// As PyTorch shifts: by a negative amount or the result type's width (OUT_BITS) or more, left gives 0
// and right the sign fill.
C vkt_lshift(C x, C y) { return y < C(0) || y >= C(OUT_BITS) ? C(0) : x << int(y); }
C vkt_rshift(C x, C y) { return y < C(0) || y >= C(OUT_BITS) ? (x < C(0) ? C(-1) : C(0)) : x >> int(y); }
#endif

#endif
