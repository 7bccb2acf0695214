// math.glsl: functions GLSL lacks, for the op table's GLSL: erf, a NaN-safe tanh, pow with negative
// bases, floor division and Python's remainder, in every compute type they are used with.
#ifndef VKT_MATH_GLSL
#define VKT_MATH_GLSL

#if defined(C_FLOAT)
// Abramowitz & Stegun 7.1.26 is 1.5e-7 absolute; this rational form (from Numerical Recipes' erfc
// Chebyshev fit) keeps 1.2e-7 relative on erfc, so gelu stays within float32 rounding. erf itself
// takes the Maclaurin series below 0.5, where 1 - erfc cancels (erf(1e-3) was 5e-5 off).
float vkt_erfc_nr(float z) {
  float t = 1.0 / (1.0 + 0.5 * z);
  return t * exp(-z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 +
         t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 +
         t * (-0.82215223 + t * 0.17087277)))))))));
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
// Giles, "Approximating the erfinv function" (GPU Computing Gems, 2011), single precision.
float vkt_erfinv(float x) {
  if (abs(x) >= 1.0)
    return abs(x) == 1.0 ? vkt_with_sign_of(uintBitsToFloat(0x7f800000u), x) : uintBitsToFloat(0x7fc00000u);
  float w = -log((1.0 - x) * (1.0 + x)), p;
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
  return p * x;
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
C vkt_copysign(C x, C y) {
  uvec2 a = unpackDouble2x32(x), b = unpackDouble2x32(y);
  return packDouble2x32(uvec2(a.x, (a.y & 0x7fffffffu) | (b.y & 0x80000000u)));
}
#else
#define VKT_DEG2RAD 0.017453292519943295
#define VKT_RAD2DEG 57.29577951308232
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
