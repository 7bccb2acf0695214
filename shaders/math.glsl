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
float vkt_tanh(float x) { return tanh(clamp(x, -10.0, 10.0)); }
float vkt_sigmoid(float x) { return 1.0 / (1.0 + exp(-x)); }
#endif

#if defined(C_FLOAT) || defined(C_FLOAT64)
// Small integral exponents multiply exactly (x ** 2 is x * x, as on the CPU); other integral
// exponents of negative bases are defined as in C's pow.
C vkt_pow(C x, C y) {
  if (floor(y) == y && abs(y) <= C(64)) {
    C r = C(1), b = x;
    for (int e = int(abs(y)); e > 0; e >>= 1, b *= b)
      if ((e & 1) != 0)
        r *= b;
    return y < C(0) ? C(1) / r : r;
  }
  if (x >= C(0))
    return C(pow(float(x), float(y)));
  if (floor(y) != y)
    return C(0) / C(0);
  C r = C(pow(float(-x), float(y)));
  return mod(y, C(2)) == C(1) ? -r : r;
}
C vkt_div_trunc(C x, C y) { return trunc(x / y); }
C vkt_div_floor(C x, C y) { return floor(x / y); }
C vkt_remainder(C x, C y) {
  C r = x - floor(x / y) * y;
  return y == C(0) ? x - x / y * y : r;
}
C vkt_sign(C x) { return x > C(0) ? C(1) : x < C(0) ? C(-1) : x; }
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
C vkt_pow(C x, C y) {
  C r = C(1);
  for (; y > C(0); y >>= 1, x *= x)
    if ((y & C(1)) != C(0))
      r *= x;
  return r;
}
C vkt_sign(C x) { return x > C(0) ? C(1) : x < C(0) ? C(-1) : C(0); }
#endif

#endif
