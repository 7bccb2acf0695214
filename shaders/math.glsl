// math.glsl: functions GLSL lacks, for the op table's GLSL: erf, a NaN-safe tanh, pow with negative
// bases, floor division and Python's remainder, in every compute type they are used with.
#ifndef VKT_MATH_GLSL
#define VKT_MATH_GLSL

#if defined(C_FLOAT)
// Abramowitz & Stegun 7.1.26 is 1.5e-7 absolute; this rational form (from Numerical Recipes' erfc
// Chebyshev fit) keeps 1.2e-7 relative on erfc, so gelu stays within float32 rounding.
float vkt_erf(float x) {
  float z = abs(x), t = 1.0 / (1.0 + 0.5 * z);
  float r = t * exp(-z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 +
            t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 +
            t * (-0.82215223 + t * 0.17087277)))))))));
  return x >= 0.0 ? 1.0 - r : r - 1.0;
}
// tanh through exp overflows to inf/inf for |x| > 44 on some drivers; it is +-1 in float32 past 9.
// clamp() of a NaN may give either bound, so NaN is passed through first.
float vkt_tanh(float x) { return x != x ? x : tanh(clamp(x, -10.0, 10.0)); }
float vkt_sigmoid(float x) { return 1.0 / (1.0 + exp(-x)); }
#endif

#if defined(C_FLOAT) || defined(C_FLOAT64)
#if defined(C_FLOAT64)
C vkt_nan() { return packDouble2x32(uvec2(0u, 0x7ff80000u)); }
C vkt_inf() { return packDouble2x32(uvec2(0u, 0x7ff00000u)); }
#else
C vkt_nan() { return uintBitsToFloat(0x7fc00000u); }
C vkt_inf() { return uintBitsToFloat(0x7f800000u); }
#endif
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
C vkt_div_floor(C x, C y) { return floor(x / y); }
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
#endif

#endif
