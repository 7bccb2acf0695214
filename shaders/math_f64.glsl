// math_f64.glsl: a double-precision libm for shaders, which GLSL has only in float: exp, log, sin, pow, ... as
// overloads of GLSL's own names (user code may overload the built-in functions: GLSL 4.60, chapter 8), so the op
// table's GLSL and the shaders' exp() and log() serve float64 unchanged; and what GLSL lacks (erf, lgamma, ...)
// under math.glsl's names. Written from double +, -, *, /, sqrt, floor and bit operations on 32-bit words only.
//
// The algorithms and their minimax coefficients are fdlibm's (Sun Microsystems, as FreeBSD's msun has them:
// e_exp.c, s_expm1.c, k_log.h, e_log2.c, e_log10.c, s_log1p.c, k_sin.c, k_cos.c, k_tan.c, e_rem_pio2.c, e_asin.c,
// e_acos.c, s_atan.c, e_atan2.c, e_sinh.c, e_cosh.c, s_tanh.c, s_asinh.c, e_acosh.c, e_atanh.c, s_erf.c,
// e_lgamma_r.c, e_pow.c), except where a function says otherwise. Every function returns `precise`: fdlibm's exact
// splittings (hi - (hi - x), (z - y) - w, ...) need its operations done as written, and Mesa's compilers
// reassociate and fold imprecise ones; `precise` also keeps contraction into fma out, which lavapipe computes
// rounded twice anyway. Measured against correctly rounded results (mpmath; tests/test_float64_math.py checks
// them against NumPy's): within 1 ulp for exp, exp2, expm1, log, log2, log10, log1p, sin, cos, tan (at any
// argument: the reduction by pi/2 is exact), asin, acos, atan, atan2, asinh, atanh, erf, erfinv and pow; 2 ulp
// for sinh, cosh, tanh, acosh, erfc, and lgamma and digamma of x > 0; for x < 0, where the reflection's terms
// cancel into lgamma's and digamma's zeros, 5 and 3 ulp of the larger term.
#ifndef VKT_MATH_F64_GLSL
#define VKT_MATH_F64_GLSL

// ---- words and scaling ----

uint vkt_f64_hi(double x) { return unpackDouble2x32(x).y; }
uint vkt_f64_lo(double x) { return unpackDouble2x32(x).x; }
double vkt_f64_words(uint hi, uint lo) { return packDouble2x32(uvec2(lo, hi)); }
// x's leading 21 bits (its low word cleared): products of two such numbers are exact.
double vkt_f64_head(double x) { return vkt_f64_words(vkt_f64_hi(x), 0u); }
double vkt_f64_inf() { return vkt_f64_words(0x7ff00000u, 0u); }
double vkt_f64_nan() { return vkt_f64_words(0x7ff80000u, 0u); }
bool vkt_f64_negative(double x) { return (vkt_f64_hi(x) >> 31) != 0u; } // -0.0 included
// |m| with s's sign, set in the bits: s * 0.0 would not do, Mesa folds it to +0.0 even where precise.
double vkt_f64_copysign(double m, double s) {
  return vkt_f64_words((vkt_f64_hi(m) & 0x7fffffffu) | (vkt_f64_hi(s) & 0x80000000u), vkt_f64_lo(m));
}
// 2^k, -1022 <= k <= 1023.
double vkt_f64_pow2(int k) { return vkt_f64_words(uint(k + 1023) << 20, 0u); }
// y 2^k for y in [1/2, 4) and -1100 < k <= 1024, rounded once: a result below 2^-1022 in two steps, the first exact.
precise double vkt_f64_scale(double y, int k) {
  if (k > 1023)
    return y * 2.0lf * vkt_f64_pow2(k - 1);
  if (k >= -1022)
    return y * vkt_f64_pow2(k);
  return y * vkt_f64_pow2(k + 1000) * vkt_f64_pow2(-1000);
}
// 1 / x, with 1 / +-0 = +-inf and 1 / +-inf = +-0, which a GPU's division need not give.
precise double vkt_f64_recip(double x) {
  return x == 0.0lf ? vkt_f64_copysign(vkt_f64_inf(), x) : isinf(x) ? vkt_f64_copysign(0.0lf, x) : 1.0lf / x;
}
// a b as p + e exactly (Dekker's product, Veltkamp's split: no fma, which lavapipe rounds twice), |a|, |b| < 2^995.
precise dvec2 vkt_f64_two_prod(double a, double b) {
  double p = a * b, c = 134217729.0lf * a, ah = c - (c - a), al = a - ah;
  c = 134217729.0lf * b;
  double bh = c - (c - b), bl = b - bh;
  return dvec2(p, ((ah * bh - p) + ah * bl + al * bh) + al * bl);
}

// ---- exp ----

// exp(hi - lo) 2^k, |hi - lo| <= ln2 / 2 with lo the rounding error of hi: exp(r) = 1 + r + r c / (2 - c), where
// c = r - r^2 P(r^2) is fdlibm's rational approximation of r (e^r + 1) / (e^r - 1), its error below 2^-59.
precise double vkt_f64_exp_kernel(double hi, double lo, int k) {
  double r = hi - lo, t = r * r;
  double c = r - t * (1.66666666666666019037e-01lf + t * (-2.77777777770155933842e-03lf +
             t * (6.61375632143793436117e-05lf + t * (-1.65339022054652515390e-06lf +
             t * 4.13813679705723846039e-08lf))));
  return vkt_f64_scale(1.0lf - ((lo - (r * c) / (2.0lf - c)) - hi), k);
}
// e^(a + b), a + b in [-745, 709] with a's rounding error b: a - k ln2's head is exact, b joins the tail.
precise double vkt_f64_exp_sum(double a, double b) {
  double k = roundEven((a + b) * 1.44269504088896338700lf);
  return vkt_f64_exp_kernel(a - k * 6.93147180369123816490e-01lf, k * 1.90821492927058770002e-10lf - b, int(k));
}
// x = k ln2 + r in two parts, Cody and Waite's: k ln2's head (the leading 32 bits of ln2) is exact for |k| < 2^21.
precise double exp(double x) {
  if (isnan(x))
    return x;
  if (x > 7.09782712893383973096e+02lf) // e^x past the largest double
    return vkt_f64_inf();
  if (x < -7.45133219101941108420e+02lf) // below half the smallest subnormal
    return 0.0lf;
  double k = roundEven(x * 1.44269504088896338700lf);
  return vkt_f64_exp_kernel(x - k * 6.93147180369123816490e-01lf, k * 1.90821492927058770002e-10lf, int(k));
}
// 2^x = 2^k 2^f, f = x - k exactly, e^(f ln2) with f ln2 as a double-double.
precise double exp2(double x) {
  if (isnan(x))
    return x;
  if (x >= 1024.0lf)
    return vkt_f64_inf();
  if (x < -1075.0lf)
    return 0.0lf;
  double k = roundEven(x), f = x - k;
  dvec2 p = vkt_f64_two_prod(f, 6.93147180559945286227e-01lf);
  double lo = p.y + f * 2.31904681384629955842e-17lf, hi = p.x + lo; // ln2 = 0x3FE62E42FEFA39EF + that tail
  return vkt_f64_exp_kernel(hi, (hi - p.x) - lo, int(k));
}
// e^x - 1 (fdlibm's expm1): r = x - k ln2 with its rounding error c, expm1(r) from R1(r^2), a minimax fit (error
// below 2^-61) of 6 / r ((e^r + 1) / (e^r - 1) - 2 / r), then 2^k (1 + expm1(r)) - 1 in a form that loses no bits.
precise double vkt_expm1(double x) {
  if (isnan(x))
    return x;
  if (x > 7.09782712893383973096e+02lf)
    return vkt_f64_inf();
  if (x < -38.81624211135693lf) // 56 ln2: e^x below 2^-56, so that e^x - 1 rounds to -1
    return -1.0lf;
  double ax = abs(x), c = 0.0lf;
  int k = 0;
  if (ax > 0.34657359027997264lf) { // ln2 / 2
    double kk = roundEven(x * 1.44269504088896338700lf);
    double hi = x - kk * 6.93147180369123816490e-01lf, lo = kk * 1.90821492927058770002e-10lf;
    k = int(kk);
    x = hi - lo;
    c = (hi - x) - lo;
  } else if (ax < 5.551115123125783e-17lf) { // 2^-54: x itself, -0 included
    return x;
  }
  double hfx = 0.5lf * x, hxs = x * hfx;
  double r1 = 1.0lf + hxs * (-3.33333333333331316428e-02lf + hxs * (1.58730158725481460165e-03lf +
              hxs * (-7.93650757867487942473e-05lf + hxs * (4.00821782732936239552e-06lf +
              hxs * -2.01099218183624371326e-07lf))));
  double t = 3.0lf - r1 * hfx, e = hxs * ((r1 - t) / (6.0lf - x * t));
  if (k == 0)
    return x - (x * e - hxs);
  e = x * (e - c) - c;
  e -= hxs;
  if (k == -1)
    return 0.5lf * (x - e) - 0.5lf;
  if (k == 1)
    return x < -0.25lf ? -2.0lf * (e - (x + 0.5lf)) : 1.0lf + 2.0lf * (x - e);
  if (k <= -2 || k > 56)
    return vkt_f64_scale(1.0lf - (e - x), k) - 1.0lf;
  if (k < 20)
    return ((vkt_f64_words(0x3ff00000u - (0x200000u >> k), 0u) - (e - x))) * vkt_f64_pow2(k); // (1 - 2^-k)
  return ((x - (e + vkt_f64_pow2(-k))) + 1.0lf) * vkt_f64_pow2(k);
}

// ---- log ----

// x = 2^k (1 + f), sqrt(2) / 2 <= 1 + f < sqrt(2), for x > 0 finite (a subnormal scaled by 2^54 first): returns k.
int vkt_f64_log_reduce(double x, out double f) {
  int k = 0;
  uint hx = vkt_f64_hi(x);
  if (hx < 0x00100000u) {
    x *= 18014398509481984.0lf;
    k = -54;
    hx = vkt_f64_hi(x);
  }
  k += int(hx >> 20) - 1023;
  hx &= 0x000fffffu;
  uint i = (hx + 0x95f64u) & 0x100000u; // set where the mantissa is sqrt(2) or more: x / 2 instead
  f = vkt_f64_words(hx | (i ^ 0x3ff00000u), vkt_f64_lo(x)) - 1.0lf;
  return k + int(i >> 20);
}
// log(1 + f) - f + f^2 / 2 = s (f^2 / 2 + R(s^2)), s = f / (2 + f): fdlibm's minimax R (Lg1..Lg7, error 2^-58.45).
precise double vkt_f64_log_poly(double f) {
  double s = f / (2.0lf + f), z = s * s, w = z * z;
  double t1 = w * (3.999999999940941908e-01lf + w * (2.222219843214978396e-01lf + w * 1.531383769920937332e-01lf));
  double t2 = z * (6.666666666666735130e-01lf + w * (2.857142874366239149e-01lf + w * (1.818357216161805012e-01lf +
              w * 1.479819860511658591e-01lf)));
  return s * (0.5lf * f * f + t1 + t2);
}
// NaN, +inf, 0 or negative: log's value there; else -1 (a finite positive x).
double vkt_f64_log_special(double x) {
  if (isnan(x) || x < 0.0lf)
    return vkt_f64_nan();
  return x == 0.0lf ? -vkt_f64_inf() : isinf(x) ? x : -1.0lf;
}
precise double log(double x) {
  if (!(x > 0.0lf) || isinf(x))
    return vkt_f64_log_special(x);
  double f;
  double k = double(vkt_f64_log_reduce(x, f)), hfsq = 0.5lf * f * f;
  return k * 6.93147180369123816490e-01lf - ((hfsq - (vkt_f64_log_poly(f) + k * 1.90821492927058770002e-10lf)) - f);
}
// log2 and log10 take log(1 + f) as hi + lo with hi's 21 leading bits, so that hi times the constant's head
// (1 / ln 2 or 1 / ln 10 to 33 bits) is nearly exact.
precise dvec2 vkt_f64_log_parts(double x, out double k) {
  double f;
  k = double(vkt_f64_log_reduce(x, f));
  double hfsq = 0.5lf * f * f, hi = vkt_f64_head(f - hfsq);
  return dvec2(hi, (f - hi) - hfsq + vkt_f64_log_poly(f));
}
precise double log2(double x) {
  if (!(x > 0.0lf) || isinf(x))
    return vkt_f64_log_special(x);
  double k;
  dvec2 l = vkt_f64_log_parts(x, k);
  double hi = l.x * 1.44269504072144627571e+00lf; // 0x3ff71547 65200000
  double lo = (l.y + l.x) * 1.67517131648865118353e-10lf + l.y * 1.44269504072144627571e+00lf, w = k + hi;
  lo += (k - w) + hi;
  return lo + w;
}
precise double vkt_log10(double x) {
  if (!(x > 0.0lf) || isinf(x))
    return vkt_f64_log_special(x);
  double k;
  dvec2 l = vkt_f64_log_parts(x, k);
  double hi = l.x * 4.34294481878168880939e-01lf, k2 = k * 3.01029995663611771306e-01lf; // 33-bit heads
  double lo = k * 3.69423907715893078616e-13lf + (l.y + l.x) * 2.50829467116452752298e-11lf +
              l.y * 4.34294481878168880939e-01lf;
  double w = k2 + hi;
  lo += (k2 - w) + hi;
  return lo + w;
}
// log(1 + x): 1 + x = 2^k (1 + f) where that is exact, else u = 1 + x rounded and log(u) + c / u, c = 1 + x - u.
precise double vkt_log1p(double x) {
  if (!(x > -1.0lf) || isinf(x))
    return isnan(x) || x < -1.0lf ? vkt_f64_nan() : x == -1.0lf ? -vkt_f64_inf() : x;
  double ax = abs(x);
  if (ax < 1.862645149230957e-09lf) // 2^-29
    return ax < 5.551115123125783e-17lf ? x : x - x * x * 0.5lf;
  double f = x, c = 0.0lf;
  int k = 0;
  if (!(x < 0.41421356237309503lf && x > -0.29289321881345248lf)) { // 1 + x outside [sqrt(2) / 2, sqrt(2))
    double u = x;
    if (x < 9007199254740992.0lf) { // 2^53
      u = 1.0lf + x;
      c = (vkt_f64_hi(u) >= 0x40000000u ? 1.0lf - (u - x) : x - (u - 1.0lf)) / u; // u - x, u - 1 exact
    }
    k = vkt_f64_log_reduce(u, f);
  }
  double dk = double(k), hfsq = 0.5lf * f * f;
  return dk * 6.93147180369123816490e-01lf -
         ((hfsq - (vkt_f64_log_poly(f) + (dk * 1.90821492927058770002e-10lf + c))) - f);
}

// ---- sin, cos, tan ----

// sin(x + y) on [-pi/4, pi/4], y the tail of x (tail: whether it is there): x + x^3 (S1 + x^2 S2 + ...), fdlibm's
// minimax coefficients (error 2^-58), with sin'(x) y ~ (1 - x^2 / 2) y.
precise double vkt_f64_k_sin(double x, double y, bool tail) {
  double z = x * x, w = z * z, v = z * x;
  double r = 8.33333333332248946124e-03lf + z * (-1.98412698298579493134e-04lf + z * 2.75573137070700676789e-06lf) +
             z * w * (-2.50507602534068634195e-08lf + z * 1.58969099521155010221e-10lf);
  if (!tail)
    return x + v * (-1.66666666666666324348e-01lf + z * r);
  return x - ((z * (0.5lf * y - v * r) - y) - v * -1.66666666666666324348e-01lf);
}
// cos(x + y) on [-pi/4, pi/4]: 1 - x^2 / 2 + x^4 C(x^2) (error 2^-58), 1 - x^2 / 2 as w + its rounding error.
precise double vkt_f64_k_cos(double x, double y) {
  double z = x * x, w = z * z;
  double r = z * (4.16666666666666019037e-02lf + z * (-1.38888888888741095749e-03lf +
             z * 2.48015872894767294178e-05lf)) + w * w * (-2.75573143513906633035e-07lf +
             z * (2.08757232129817482790e-09lf + z * -1.13596475577881948265e-11lf));
  double hz = 0.5lf * z;
  w = 1.0lf - hz;
  return w + (((1.0lf - w) - hz) + (z * r - x * y));
}
// tan(x + y) (odd: true) or -1 / tan(x + y) on [-pi/4, pi/4]: an odd polynomial to x^27 (error 2^-59.2) below
// 0.6744, and tan(pi/4 - x) = (1 - tan x) / (1 + tan x) above; -1 / tan with its division's rounding compensated.
precise double vkt_f64_k_tan(double x, double y, bool odd) {
  bool big = (vkt_f64_hi(x) & 0x7fffffffu) >= 0x3fe59428u, negative = vkt_f64_negative(x);
  if (big) {
    if (negative)
      x = -x, y = -y;
    x = (7.85398163397448278999e-01lf - x) + (3.06161699786838301793e-17lf - y); // pi/4 - x, in two parts
    y = 0.0lf;
  }
  double z = x * x, w = z * z;
  double r = 1.33333333333201242699e-01lf + w * (2.18694882948595424599e-02lf + w * (3.59207910759131235356e-03lf +
             w * (5.88041240820264096874e-04lf + w * (7.81794442939557092300e-05lf +
             w * -1.85586374855275456654e-05lf))));
  double v = z * (5.39682539762260521377e-02lf + w * (8.86323982359930005737e-03lf +
             w * (1.45620945432529025516e-03lf + w * (2.46463134818469906812e-04lf +
             w * (7.14072491382608190305e-05lf + w * 2.59073051863633712884e-05lf)))));
  double s = z * x;
  r = y + z * (s * (r + v) + y);
  r += 3.33333333333334091986e-01lf * s;
  w = x + r;
  if (big) {
    v = odd ? 1.0lf : -1.0lf;
    double t = v - 2.0lf * (x - (w * w / (w + v) - r));
    return negative ? -t : t;
  }
  if (odd)
    return w;
  z = vkt_f64_head(w);
  v = r - (z - x); // z + v = x + r
  double a = -1.0lf / w, t = vkt_f64_head(a);
  return t + a * ((1.0lf + t * z) + t * v);
}

// The 32 bits of the 9-word integer p (least significant word first) from bit `at` up.
uint vkt_f64_bits_at(uint p[9], int at) {
  int q = at >> 5, r = at & 31;
  return r == 0 ? p[q] : (p[q] >> r) | (p[q + 1] << (32 - r));
}
// Payne and Hanek's reduction of ax >= 2^20 pi/2 (finite): ax 2/pi = n + f, |f| <= 1/2; returns f pi/2 as a
// double-double, n mod 4 in n. ax = m 2^e with m an integer below 2^53; of 2/pi only 7 words are needed, from
// word j0 (m times the words before it adds multiples of 4), which leave a fraction of 191 to 222 bits, exact to
// 2^-138 in all: the closest a double comes to a multiple of pi/2 is 2^-61 of it, so f keeps 77 bits or more.
precise dvec2 vkt_f64_rem_pio2_large(double ax, out int n) {
  // The bits of 2/pi: word j weighs 2^-32 (j + 1). 37 words reach past what the largest double needs (2^1024 2/pi's
  // bits down to 2^-224).
  const uint two_over_pi[37] = uint[37](0xA2F9836Eu, 0x4E441529u, 0xFC2757D1u, 0xF534DDC0u, 0xDB629599u,
      0x3C439041u, 0xFE5163ABu, 0xDEBBC561u, 0xB7246E3Au, 0x424DD2E0u, 0x06492EEAu, 0x09D1921Cu, 0xFE1DEB1Cu,
      0xB129A73Eu, 0xE88235F5u, 0x2EBB4484u, 0xE99C7026u, 0xB45F7E41u, 0x3991D639u, 0x835339F4u, 0x9C845F8Bu,
      0xBDF9283Bu, 0x1FF897FFu, 0xDE05980Fu, 0xEF2F118Bu, 0x5A0A6D1Fu, 0x6D367ECFu, 0x27CB09B7u, 0x4F463F66u,
      0x9E5FEA2Du, 0x7527BAC7u, 0xEBE5F17Bu, 0x3D0739F7u, 0x8A5292EAu, 0x6BFB5FB1u, 0x1F8D5D08u, 0x56033046u);
  uvec2 w = unpackDouble2x32(ax);
  int e = int(w.y >> 20) - 1075, j0 = max(0, (e - 2) / 32);
  uint m[2] = uint[2](w.x, (w.y & 0xfffffu) | 0x100000u);
  uint p[9];
  for (int i = 0; i < 9; i++)
    p[i] = 0u;
  for (int h = 0; h < 2; h++) { // p += m's word h times the 7 words, shifted by h words
    uint carry = 0u;
    for (int i = 0; i < 7; i++) {
      uint hi, lo, c1, c2;
      umulExtended(two_over_pi[j0 + 6 - i], m[h], hi, lo);
      uint t = uaddCarry(p[i + h], lo, c1);
      p[i + h] = uaddCarry(t, carry, c2);
      carry = hi + c1 + c2;
    }
    p[7 + h] = carry;
  }
  int point = 32 * (j0 + 7) - e; // p's bits below the binary point
  n = int(vkt_f64_bits_at(p, point) & 3u);
  uint f[5];
  for (int i = 0; i < 5; i++)
    f[i] = vkt_f64_bits_at(p, point - 32 * (i + 1));
  bool negative = f[0] >= 0x80000000u; // f >= 1/2: f - 1, negated (two's complement), and n + 1
  if (negative) {
    uint carry = 1u;
    for (int i = 4; i >= 0; i--)
      f[i] = uaddCarry(~f[i], carry, carry);
    n++;
  }
  double a = double(f[0]) * 2.3283064365386963e-10lf, b = double(f[1]) * 5.421010862427522e-20lf; // 2^-32, 2^-64
  double s = a + b, c = (b - (s - a)) + (double(f[2]) * 1.2621774483536189e-29lf + // 2^-96
             (double(f[3]) * 2.938735877055719e-39lf + double(f[4]) * 6.842277657836021e-49lf)); // 2^-128, 2^-160
  double hi = s + c, lo = c - (hi - s);
  dvec2 y = vkt_f64_two_prod(hi, 1.57079632679489655800e+00lf); // pi/2 = that + 6.123e-17
  double t = y.y + (hi * 6.12323399573676603587e-17lf + lo * 1.57079632679489655800e+00lf), y0 = y.x + t;
  y = dvec2(y0, t - (y0 - y.x));
  return negative ? -y : y;
}
// x = n pi/2 + y0 + y1, |y0 + y1| <= pi/4 (a little more): returns (y0, y1), n mod 4 in n. Below 2^20 pi/2, Cody and
// Waite's subtraction of n pi/2 in parts of 33 bits (n pi/2's first part exact), a second and third part where
// the first cancelled the leading 16 and 49 bits; above, Payne and Hanek's; NaN for inf and NaN.
precise dvec2 vkt_f64_rem_pio2(double x, out int n) {
  if (abs(x) < 1647099.3291652855lf) {
    double fn = roundEven(x * 6.36619772367581382433e-01lf);
    n = int(fn);
    double r = x - fn * 1.57079632673412561417e+00lf, w = fn * 6.07710050650619224932e-11lf, y0 = r - w;
    int j = int(vkt_f64_hi(x) >> 20 & 0x7ffu);
    if (j - int(vkt_f64_hi(y0) >> 20 & 0x7ffu) > 16) {
      double t = r;
      w = fn * 6.07710050630396597660e-11lf;
      r = t - w;
      w = fn * 2.02226624879595063154e-21lf - ((t - r) - w);
      y0 = r - w;
      if (j - int(vkt_f64_hi(y0) >> 20 & 0x7ffu) > 49) {
        t = r;
        w = fn * 2.02226624871116645580e-21lf;
        r = t - w;
        w = fn * 8.47842766036889956997e-32lf - ((t - r) - w);
        y0 = r - w;
      }
    }
    return dvec2(y0, (r - y0) - w);
  }
  n = 0;
  if (isinf(x) || isnan(x))
    return dvec2(vkt_f64_nan());
  dvec2 y = vkt_f64_rem_pio2_large(abs(x), n);
  if (vkt_f64_negative(x)) {
    n = -n;
    y = -y;
  }
  return y;
}
precise double sin(double x) {
  if (abs(x) <= 7.85398163397448278999e-01lf)
    return abs(x) < 7.450580596923828e-09lf ? x : vkt_f64_k_sin(x, 0.0lf, false); // 2^-27: x, -0 included
  int n;
  dvec2 y = vkt_f64_rem_pio2(x, n);
  double v = (n & 1) == 0 ? vkt_f64_k_sin(y.x, y.y, true) : vkt_f64_k_cos(y.x, y.y);
  return (n & 2) == 0 ? v : -v;
}
precise double cos(double x) {
  if (abs(x) <= 7.85398163397448278999e-01lf)
    return abs(x) < 7.450580596923828e-09lf ? 1.0lf : vkt_f64_k_cos(x, 0.0lf);
  int n;
  dvec2 y = vkt_f64_rem_pio2(x, n);
  double v = (n & 1) == 0 ? vkt_f64_k_cos(y.x, y.y) : vkt_f64_k_sin(y.x, y.y, true);
  return ((n + 1) & 2) == 0 ? v : -v;
}
precise double tan(double x) {
  if (abs(x) <= 7.85398163397448278999e-01lf)
    return abs(x) < 7.450580596923828e-09lf ? x : vkt_f64_k_tan(x, 0.0lf, true);
  int n;
  dvec2 y = vkt_f64_rem_pio2(x, n);
  return vkt_f64_k_tan(y.x, y.y, (n & 1) == 0);
}

// ---- inverse trigonometric ----

// (asin(x) - x) / x^3 as fdlibm's rational function of t = x^2 (error 2^-58.75).
precise double vkt_f64_asin_ratio(double t) {
  double p = t * (1.66666666666666657415e-01lf + t * (-3.25565818622400915405e-01lf +
             t * (2.01212532134862925881e-01lf + t * (-4.00555345006794114027e-02lf +
             t * (7.91534994289814532176e-04lf + t * 3.47933107596021167570e-05lf)))));
  double q = 1.0lf + t * (-2.40339491173441421878e+00lf + t * (2.02094576023350569471e+00lf +
             t * (-6.88283971605453293030e-01lf + t * 7.70381505559019352791e-02lf)));
  return p / q;
}
// Beyond 1/2: asin(x) = pi/2 - 2 asin(sqrt((1 - x) / 2)), the square root's head and its correction (t - h^2) / (s + h)
// separately below 0.975.
precise double asin(double x) {
  double ax = abs(x);
  if (!(ax < 1.0lf))
    return ax == 1.0lf ? x * 1.57079632679489655800e+00lf + x * 6.12323399573676603587e-17lf : vkt_f64_nan();
  if (ax < 0.5lf)
    return ax < 7.450580596923828e-09lf ? x : x + x * vkt_f64_asin_ratio(x * x);
  double t = (1.0lf - ax) * 0.5lf, s = sqrt(t), r = vkt_f64_asin_ratio(t), v;
  if (ax >= 0.975lf) {
    v = 1.57079632679489655800e+00lf - (2.0lf * (s + s * r) - 6.12323399573676603587e-17lf);
  } else {
    double h = vkt_f64_head(s), c = (t - h * h) / (s + h);
    double p = 2.0lf * s * r - (6.12323399573676603587e-17lf - 2.0lf * c), q = 7.85398163397448278999e-01lf - 2.0lf * h;
    v = 7.85398163397448278999e-01lf - (p - q);
  }
  return x < 0.0lf ? -v : v;
}
precise double acos(double x) {
  double ax = abs(x);
  if (!(ax < 1.0lf))
    return x == 1.0lf ? 0.0lf : x == -1.0lf ? 3.14159265358979311600e+00lf + 2.0lf * 6.12323399573676603587e-17lf :
                                              vkt_f64_nan();
  if (ax < 0.5lf) {
    if (ax <= 6.938893903907228e-18lf) // 2^-57
      return 1.57079632679489655800e+00lf + 6.12323399573676603587e-17lf;
    return 1.57079632679489655800e+00lf - (x - (6.12323399573676603587e-17lf - x * vkt_f64_asin_ratio(x * x)));
  }
  double z = (1.0lf - ax) * 0.5lf, s = sqrt(z), r = vkt_f64_asin_ratio(z);
  if (x < 0.0lf)
    return 3.14159265358979311600e+00lf - 2.0lf * (s + (r * s - 6.12323399573676603587e-17lf));
  double h = vkt_f64_head(s), c = (z - h * h) / (s + h);
  return 2.0lf * (h + (r * s + c));
}
// atan of |x| reduced to [0, 7/16] by atan(x) = atan(c) + atan((x - c) / (1 + x c)), c = 1/2, 1, 3/2 or inf, then an
// odd polynomial to x^23 (fdlibm's aT), atan(c) in two parts.
precise double atan(double x) {
  double ax = abs(x);
  if (isnan(x))
    return x;
  if (ax >= 7.378697629483821e+19lf) // 2^66: pi/2
    return vkt_f64_copysign(1.57079632679489655800e+00lf + 6.12323399573676603587e-17lf, x);
  int id = -1;
  double t = x;
  if (ax >= 0.4375lf) {
    if (ax < 0.6875lf)
      id = 0, t = (2.0lf * ax - 1.0lf) / (2.0lf + ax);
    else if (ax < 1.1875lf)
      id = 1, t = (ax - 1.0lf) / (ax + 1.0lf);
    else if (ax < 2.4375lf)
      id = 2, t = (ax - 1.5lf) / (1.0lf + 1.5lf * ax);
    else
      id = 3, t = -1.0lf / ax;
  } else if (ax < 1.862645149230957e-09lf) { // 2^-29
    return x;
  }
  double z = t * t, w = z * z;
  double s1 = z * (3.33333333333329318027e-01lf + w * (1.42857142725034663711e-01lf +
              w * (9.09088713343650656196e-02lf + w * (6.66107313738753120669e-02lf +
              w * (4.97687799461593236017e-02lf + w * 1.62858201153657823623e-02lf)))));
  double s2 = w * (-1.99999999998764832476e-01lf + w * (-1.11111104054623557880e-01lf +
              w * (-7.69187620504482999495e-02lf + w * (-5.83357013379057348645e-02lf +
              w * -3.65315727442169155270e-02lf))));
  if (id < 0)
    return t - t * (s1 + s2);
  const double hi[4] = double[4](4.63647609000806093515e-01lf, 7.85398163397448278999e-01lf,
                                 9.82793723247329054082e-01lf, 1.57079632679489655800e+00lf);
  const double lo[4] = double[4](2.26987774529616870924e-17lf, 3.06161699786838301793e-17lf,
                                 1.39033110312309984516e-17lf, 6.12323399573676603587e-17lf);
  double v = hi[id] - ((t * (s1 + s2) - lo[id]) - t);
  return x < 0.0lf ? -v : v;
}
// C's atan2(y, x), signed zeros and infinities included: atan(|y / x|), then the quadrant (pi - z as pi - (z - pi_lo)).
precise double atan(double y, double x) {
  if (isnan(x) || isnan(y))
    return x + y;
  const double pi = 3.1415926535897931160e+00lf, pi_lo = 1.2246467991473531772e-16lf;
  bool nx = vkt_f64_negative(x), ny = vkt_f64_negative(y);
  double z;
  if (x == 1.0lf)
    return atan(y);
  if (y == 0.0lf)
    return nx ? vkt_f64_copysign(pi, y) : y;
  if (x == 0.0lf || (isinf(y) && !isinf(x)))
    return vkt_f64_copysign(1.5707963267948965580e+00lf, y);
  if (isinf(x))
    z = isinf(y) ? (nx ? 3.0lf * 7.8539816339744827900e-01lf : 7.8539816339744827900e-01lf) : nx ? pi : 0.0lf;
  else if (int(vkt_f64_hi(y) >> 20 & 0x7ffu) - int(vkt_f64_hi(x) >> 20 & 0x7ffu) > 60) // |y / x| > 2^60
    z = 1.5707963267948965580e+00lf + 0.5lf * pi_lo;
  else if (nx && int(vkt_f64_hi(y) >> 20 & 0x7ffu) - int(vkt_f64_hi(x) >> 20 & 0x7ffu) < -60)
    z = pi;
  else if (nx)
    z = pi - (atan(abs(y / x)) - pi_lo);
  else
    z = atan(abs(y / x));
  return ny ? -z : z;
}

// ---- hyperbolic ----

// sinh from expm1 below 22 (where e^-x still counts), e^x / 2 above, e^(x/2) e^(x/2) / 2 near the overflow.
precise double sinh(double x) {
  double ax = abs(x), h = vkt_f64_negative(x) ? -0.5lf : 0.5lf;
  if (isnan(x))
    return x;
  if (ax < 22.0lf) {
    if (ax < 3.725290298461914e-09lf) // 2^-28
      return x;
    double t = vkt_expm1(ax);
    return ax < 1.0lf ? h * (2.0lf * t - t * t / (t + 1.0lf)) : h * (t + t / (t + 1.0lf));
  }
  if (ax < 7.09782712893383973096e+02lf)
    return h * exp(ax);
  if (ax <= 7.104758600739439e+02lf) { // the last x whose sinh is finite
    double w = exp(0.5lf * ax), t = h * w;
    return t * w;
  }
  return vkt_f64_copysign(vkt_f64_inf(), x);
}
precise double cosh(double x) {
  double ax = abs(x);
  if (isnan(x))
    return x * x;
  if (ax < 0.34657359027997264lf) { // ln2 / 2
    double t = vkt_expm1(ax), w = 1.0lf + t;
    return ax < 5.551115123125783e-17lf ? w : 1.0lf + (t * t) / (w + w);
  }
  if (ax < 22.0lf) {
    double t = exp(ax);
    return 0.5lf * t + 0.5lf / t;
  }
  if (ax < 7.09782712893383973096e+02lf)
    return 0.5lf * exp(ax);
  if (ax <= 7.104758600739439e+02lf) {
    double w = exp(0.5lf * ax), t = 0.5lf * w;
    return t * w;
  }
  return vkt_f64_inf();
}
precise double tanh(double x) {
  double ax = abs(x), z;
  if (isnan(x))
    return x;
  if (ax < 22.0lf) {
    if (ax < 5.551115123125783e-17lf) // 2^-55
      return x;
    if (ax >= 1.0lf) {
      z = 1.0lf - 2.0lf / (vkt_expm1(2.0lf * ax) + 2.0lf);
    } else {
      double t = vkt_expm1(-2.0lf * ax);
      z = -t / (t + 2.0lf);
    }
  } else {
    z = 1.0lf; // |tanh| within 2^-63 of 1
  }
  return x < 0.0lf ? -z : z;
}
precise double asinh(double x) {
  double ax = abs(x), w;
  if (isnan(x) || isinf(x) || ax < 3.725290298461914e-09lf) // 2^-28: x itself
    return x;
  if (ax > 268435456.0lf) // 2^28: log(2x)
    w = log(ax) + 6.93147180559945286227e-01lf;
  else if (ax > 2.0lf)
    w = log(2.0lf * ax + 1.0lf / (sqrt(x * x + 1.0lf) + ax));
  else
    w = vkt_log1p(ax + x * x / (1.0lf + sqrt(1.0lf + x * x)));
  return x < 0.0lf ? -w : w;
}
precise double acosh(double x) {
  if (!(x >= 1.0lf))
    return isnan(x) ? x : vkt_f64_nan();
  if (x >= 268435456.0lf)
    return isinf(x) ? x : log(x) + 6.93147180559945286227e-01lf;
  if (x > 2.0lf)
    return log(2.0lf * x - 1.0lf / (x + sqrt(x * x - 1.0lf)));
  double t = x - 1.0lf;
  return vkt_log1p(t + sqrt(2.0lf * t + t * t));
}
precise double atanh(double x) {
  double ax = abs(x), t;
  if (!(ax < 1.0lf))
    return ax == 1.0lf ? vkt_f64_copysign(vkt_f64_inf(), x) : vkt_f64_nan(); // NaN included
  if (ax < 3.725290298461914e-09lf)
    return x;
  if (ax < 0.5lf) {
    t = ax + ax;
    t = 0.5lf * vkt_log1p(t + t * ax / (1.0lf - ax));
  } else {
    t = 0.5lf * vkt_log1p((ax + ax) / (1.0lf - ax));
  }
  return x < 0.0lf ? -t : t;
}

// ---- pow ----

// x^y as fdlibm's pow computes it: log2(|x|) = t1 + t2 to about 2^-64 (t1 with 29 trailing zeros), y log2(|x|) =
// n + y' by splitting y the same way, then 2^n 2^y'. Special values as C99's (and NumPy's): x^0 = 1 and 1^y = 1,
// NaN included; (-1)^+-inf = 1; a negative x to an odd integer keeps its sign, to a non-integer is NaN.
precise double pow(double x, double y) {
  uvec2 wx = unpackDouble2x32(x), wy = unpackDouble2x32(y);
  int hx = int(wx.y), hy = int(wy.y), ix = hx & 0x7fffffff, iy = hy & 0x7fffffff;
  uint lx = wx.x, ly = wy.x;
  if ((uint(iy) | ly) == 0u || (wx.y == 0x3ff00000u && lx == 0u))
    return 1.0lf;
  if (isnan(x) || isnan(y))
    return x + y;
  int yisint = 0; // where x < 0: 0 y is not an integer, 1 an odd one, 2 an even one
  if (hx < 0) {
    if (iy >= 0x43400000) {
      yisint = 2;
    } else if (iy >= 0x3ff00000) {
      int k = (iy >> 20) - 0x3ff;
      if (k > 20) {
        uint j = ly >> (52 - k);
        if ((j << (52 - k)) == ly)
          yisint = 2 - int(j & 1u);
      } else if (ly == 0u) {
        int j = iy >> (20 - k);
        if ((j << (20 - k)) == iy)
          yisint = 2 - (j & 1);
      }
    }
  }
  double inf = vkt_f64_inf();
  if (ly == 0u) {
    if (iy == 0x7ff00000) // y = +-inf
      return ix == 0x3ff00000 && lx == 0u ? 1.0lf : (ix >= 0x3ff00000) == (hy >= 0) ? inf : 0.0lf;
    if (iy == 0x3ff00000) // y = +-1
      return hy < 0 ? vkt_f64_recip(x) : x;
    if (hy == 0x40000000) // y = 2
      return x * x;
    if (hy == 0x3fe00000 && hx >= 0) // y = 1/2, x >= +0
      return sqrt(x);
  }
  double ax = abs(x);
  if (lx == 0u && (ix == 0x7ff00000 || ix == 0 || ix == 0x3ff00000)) { // x = +-0, +-inf, +-1
    double z = hy < 0 ? vkt_f64_recip(ax) : ax;
    if (hx < 0 && ix == 0x3ff00000 && yisint == 0)
      return vkt_f64_nan();
    return hx < 0 && yisint == 1 ? -z : z;
  }
  if (hx < 0 && yisint == 0)
    return vkt_f64_nan();
  double s = hx < 0 && yisint == 1 ? -1.0lf : 1.0lf, t1, t2;
  if (iy > 0x41e00000) { // |y| > 2^31
    if (iy > 0x43f00000) // |y| > 2^64: 0 or inf
      return (ix >= 0x3ff00000) == (hy > 0) ? inf : 0.0lf;
    if (ix < 0x3fefffff)
      return vkt_f64_copysign(hy < 0 ? inf : 0.0lf, s);
    if (ix > 0x3ff00000)
      return vkt_f64_copysign(hy > 0 ? inf : 0.0lf, s);
    // |1 - x| <= 2^-20: log(x) = t - w, w = t^2 / 2 - t^3 / 3 + t^4 / 4, t = x - 1 exactly, times 1 / ln2 as
    // the double 1.4426950408889634 and its tail, t times the former exactly (fdlibm's t times a 24-bit head of it is
    // not exact below 1, where t has 31 bits or more: 2^-46 of log2(x) lost, up to 500 ulp of a large x^y)
    double t = ax - 1.0lf, w = (t * t) * (0.5lf - t * (0.3333333333333333333333lf - t * 0.25lf));
    dvec2 tl = vkt_f64_two_prod(t, 1.44269504088896338700lf);
    double u = tl.x, v = tl.y + t * 2.0355273740931033e-17lf - w * 1.44269504088896338700lf;
    t1 = vkt_f64_head(u + v);
    t2 = v - (t1 - u);
  } else {
    int n = 0;
    if (ix < 0x00100000) { // subnormal
      ax *= 9007199254740992.0lf;
      n -= 53;
      ix = int(vkt_f64_hi(ax));
    }
    n += (ix >> 20) - 0x3ff;
    int j = ix & 0x000fffff, k = 0;
    ix = j | 0x3ff00000; // |x| = 2^n m, m in [1, 2): m, or m / 2 with n + 1, in [1, sqrt(3))
    if (j > 0x3988E && j < 0xBB67A) {
      k = 1;
    } else if (j >= 0xBB67A) {
      n += 1;
      ix -= 0x00100000;
    }
    ax = vkt_f64_words(uint(ix), vkt_f64_lo(ax));
    // ss = s_h + s_l = (m - b) / (m + b), b = 1 or 3/2 (k)
    double b = k == 1 ? 1.5lf : 1.0lf, dp_h = k == 1 ? 5.84962487220764160156e-01lf : 0.0lf;
    double dp_l = k == 1 ? 1.35003920212974897128e-08lf : 0.0lf;
    double u = ax - b, v = 1.0lf / (ax + b), ss = u * v, s_h = vkt_f64_head(ss);
    double t_h = vkt_f64_words(uint(((ix >> 1) | 0x20000000) + 0x00080000 + (k << 18)), 0u); // m + b's head
    double t_l = ax - (t_h - b), s_l = v * ((u - s_h * t_h) - s_h * t_l);
    // log(m) = 2 ss + (2/3) ss^3 + ss^5 L(ss^2), fdlibm's L1..L6
    double s2 = ss * ss;
    double r = s2 * s2 * (5.99999999999994648725e-01lf + s2 * (4.28571428578550184252e-01lf +
               s2 * (3.33333329818377432918e-01lf + s2 * (2.72728123808534006489e-01lf +
               s2 * (2.30660745775561754067e-01lf + s2 * 2.06975017800338417784e-01lf)))));
    r += s_l * (s_h + ss);
    s2 = s_h * s_h;
    t_h = vkt_f64_head(3.0lf + s2 + r);
    t_l = r - ((t_h - 3.0lf) - s2);
    u = s_h * t_h;
    v = s_l * t_h + t_l * ss;
    // log2(m) = (2 / (3 ln2)) (ss + ...) + log2(b), the constant cp = cp_h + cp_l
    double p_h = vkt_f64_head(u + v), p_l = v - (p_h - u);
    double z_h = 9.61796700954437255859e-01lf * p_h;
    double z_l = -7.02846165095275826516e-09lf * p_h + p_l * 9.61796693925975554329e-01lf + dp_l;
    double t = double(n);
    t1 = vkt_f64_head(((z_h + z_l) + dp_h) + t);
    t2 = z_l - (((t1 - t) - dp_h) - z_h);
  }
  // y log2|x| = p_h + p_l, with y split as t1 is
  double y1 = vkt_f64_head(y), p_l = (y - y1) * t1 + y * t2, p_h = y1 * t1, z = p_l + p_h;
  uint jz = vkt_f64_hi(z), iz = vkt_f64_lo(z);
  int j = int(jz);
  if (j >= 0x40900000) { // z >= 1024
    if (jz != 0x40900000u || iz != 0u || p_l + 8.0085662595372944372e-17lf > z - p_h)
      return vkt_f64_copysign(inf, s);
  } else if ((j & 0x7fffffff) >= 0x4090cc00) { // z <= -1075
    if (jz != 0xc090cc00u || iz != 0u || p_l <= z - p_h)
      return vkt_f64_copysign(0.0lf, s);
  }
  // 2^(p_h + p_l): n = the nearest integer where |z| > 1/2, 2^r for r = z - n by exp's rational form
  int i = j & 0x7fffffff, k = (i >> 20) - 0x3ff, n = 0;
  if (i > 0x3fe00000) {
    n = j + (0x00100000 >> (k + 1));
    k = ((n & 0x7fffffff) >> 20) - 0x3ff;
    double t = vkt_f64_words(uint(n & ~(0x000fffff >> k)), 0u);
    n = ((n & 0x000fffff) | 0x00100000) >> (20 - k);
    if (j < 0)
      n = -n;
    p_h -= t;
  }
  double t = vkt_f64_head(p_l + p_h);
  double u = t * 6.93147182464599609375e-01lf;
  double v = (p_l - (t - p_h)) * 6.93147180559945286227e-01lf + t * -1.90465429995776804525e-09lf;
  z = u + v;
  double w = v - (z - u);
  t = z * z;
  t1 = z - t * (1.66666666666666019037e-01lf + t * (-2.77777777770155933842e-03lf +
       t * (6.61375632143793436117e-05lf + t * (-1.65339022054652515390e-06lf + t * 4.13813679705723846039e-08lf))));
  double r = (z * t1) / (t1 - 2.0lf) - (w + z * w);
  z = 1.0lf - (r - z);
  int jr = int(vkt_f64_hi(z)) + (n << 20);
  z = (jr >> 20) <= 0 ? vkt_f64_scale(z, n) : vkt_f64_words(uint(jr), vkt_f64_lo(z));
  return s * z;
}

// ---- error function ----

// erf on [0, 0.84375]: x + x R(x^2), R fdlibm's rational function (error 2^-57.9).
precise double vkt_f64_erf_small(double x) {
  double z = x * x;
  double r = 1.28379167095512558561e-01lf + z * (-3.25042107247001499370e-01lf + z * (-2.84817495755985104766e-02lf +
             z * (-5.77027029648944159157e-03lf + z * -2.37630166566501626084e-05lf)));
  double s = 1.0lf + z * (3.97917223959155352819e-01lf + z * (6.50222499887672944485e-02lf +
             z * (5.08130628187576562776e-03lf + z * (1.32494738004321644526e-04lf +
             z * -3.96022827877536812320e-06lf))));
  return r / s;
}
// erf(1 + s) - c on [0.84375, 1.25], c = erf(1) to 24 bits: P(s) / Q(s) (error 2^-59.06).
precise double vkt_f64_erf_near1(double s) {
  double p = -2.36211856075265944077e-03lf + s * (4.14856118683748331666e-01lf + s * (-3.72207876035701323847e-01lf + s
             * (3.18346619901161753674e-01lf + s * (-1.10894694282396677476e-01lf + s * (3.54783043256182359371e-02lf +
             s * -2.16637559486879084300e-03lf)))));
  double q = 1.0lf + s * (1.06420880400844228286e-01lf + s * (5.40397917702171048937e-01lf +
             s * (7.18286544141962662868e-02lf + s * (1.26171219808761642112e-01lf +
             s * (1.36370839120290507362e-02lf + s * 1.19844998467991074170e-02lf)))));
  return p / q;
}
// erfc(x) for 1.25 <= x < 28 is e^(-x^2 - 0.5625 + R(1/x^2) / S(1/x^2)) / x: R / S, fdlibm's fits below and above
// 1/0.35 (errors 2^-62.57, 2^-61.52).
precise double vkt_f64_erfc_ratio(double x) {
  double s = 1.0lf / (x * x), r, q;
  if (x < 2.857142857142857lf) {
    r = -9.86494403484714822705e-03lf + s * (-6.93858572707181764372e-01lf + s * (-1.05586262253232909814e+01lf +
        s * (-6.23753324503260060396e+01lf + s * (-1.62396669462573470355e+02lf + s * (-1.84605092906711035994e+02lf +
        s * (-8.12874355063065934246e+01lf + s * -9.81432934416914548592e+00lf))))));
    q = 1.0lf + s * (1.96512716674392571292e+01lf + s * (1.37657754143519042600e+02lf +
        s * (4.34565877475229228821e+02lf + s * (6.45387271733267880336e+02lf + s * (4.29008140027567833386e+02lf +
        s * (1.08635005541779435134e+02lf + s * (6.57024977031928170135e+00lf +
        s * -6.04244152148580987438e-02lf)))))));
  } else {
    r = -9.86494292470009928597e-03lf + s * (-7.99283237680523006574e-01lf + s * (-1.77579549177547519889e+01lf +
        s * (-1.60636384855821916062e+02lf + s * (-6.37566443368389627722e+02lf + s * (-1.02509513161107724954e+03lf +
        s * -4.83519191608651397019e+02lf)))));
    q = 1.0lf + s * (3.03380607434824582924e+01lf + s * (3.25792512996573918826e+02lf +
        s * (1.53672958608443695994e+03lf + s * (3.19985821950859553908e+03lf + s * (2.55305040643316442583e+03lf +
        s * (4.74528541206955367215e+02lf + s * -2.24409524465858183362e+01lf))))));
  }
  return r / q;
}
// erfc(x) for 1.25 <= x < 28, -x^2 as -z^2 + (z - x)(z + x) with z = x's head, so that z^2 is exact.
precise double vkt_f64_erfc_tail(double x) {
  double z = vkt_f64_head(x); // -z^2 - 0.5625 is exact: one exponential of it and the rest
  return vkt_f64_exp_sum(-z * z - 0.5625lf, (z - x) * (z + x) + vkt_f64_erfc_ratio(x)) / x;
}
precise double vkt_erf(double x) {
  double ax = abs(x), v;
  if (isnan(x))
    return x;
  if (ax < 0.84375lf)
    return ax < 3.725290298461914e-09lf ? (8.0lf * x + 1.02703333676410069053e+00lf * x) * 0.125lf // 2^-28; no
                                        : x + x * vkt_f64_erf_small(x); // spurious underflow
  if (ax < 1.25lf)
    v = 8.45062911510467529297e-01lf + vkt_f64_erf_near1(ax - 1.0lf);
  else
    v = ax < 6.0lf ? 1.0lf - vkt_f64_erfc_tail(ax) : 1.0lf;
  return x < 0.0lf ? -v : v;
}
precise double vkt_erfc(double x) {
  double ax = abs(x);
  if (isnan(x))
    return x;
  if (ax < 0.84375lf) {
    if (ax < 1.3877787807814457e-17lf) // 2^-56
      return 1.0lf - x;
    double y = vkt_f64_erf_small(x);
    return x < 0.25lf ? 1.0lf - (x + x * y) : 0.5lf - (x * y + (x - 0.5lf));
  }
  if (ax < 1.25lf) {
    double p = vkt_f64_erf_near1(ax - 1.0lf);
    return x > 0.0lf ? (1.0lf - 8.45062911510467529297e-01lf) - p : 1.0lf + (8.45062911510467529297e-01lf + p);
  }
  if (x < -6.0lf) // 2 - erfc(|x|) rounds to 2
    return 2.0lf;
  double r = ax < 28.0lf ? vkt_f64_erfc_tail(ax) : 0.0lf;
  return x > 0.0lf ? r : 2.0lf - r;
}
// e^(x^2) erfc(x): from 1.25 erfc's tail without its e^(-x^2), and from 28, where erfc underflows, the asymptotic
// series 1 / (x sqrt(pi)) sum (-1)^k (2k-1)!! / (2x^2)^k (its 10th term is below 2^-60); below 1.25, e^(x^2) (x^2
// exact, as Dekker's product) times erfc, which is at least 0.07 there.
precise double vkt_erfcx(double x) {
  if (isnan(x))
    return x;
  if (x >= 28.0lf) {
    double q = 0.5lf / x / x, t = 1.0lf, s = 1.0lf;
    for (int k = 1; k < 10; k++)
      t *= -double(2 * k - 1) * q, s += t;
    return 0.56418958354775628695lf / x * s;
  }
  if (x >= 1.25lf)
    return exp(vkt_f64_erfc_ratio(x) - 0.5625lf) / x;
  if (x < -26.6417744927425lf) // e^(x^2) past the largest double
    return vkt_f64_inf();
  dvec2 x2 = vkt_f64_two_prod(x, x);
  return vkt_f64_exp_sum(x2.x, x2.y) * vkt_erfc(x);
}
// C's nextafter, on the words (f16 is float's: float16 never computes in float64).
double vkt_nextafter(double x, double y, bool f16) {
  uvec2 a = unpackDouble2x32(x), b = unpackDouble2x32(y); // low word, high word
  if (isnan(x) || isnan(y))
    return x + y;
  if (a == b || (((a.y | b.y) << 1) | a.x | b.x) == 0u) // equal, +-0 included
    return y;
  if (((a.y << 1) | a.x) == 0u) // from 0, the smallest subnormal with y's sign
    return vkt_f64_words(b.y & 0x80000000u, 1u);
  uint ah = a.y & 0x7fffffffu, bh = b.y & 0x7fffffffu;
  bool outward = ((a.y ^ b.y) >> 31) == 0u && (ah < bh || (ah == bh && a.x < b.x)); // away from 0, toward y
  uint lo = outward ? a.x + 1u : a.x - 1u;
  return vkt_f64_words(outward ? a.y + uint(lo == 0u) : a.y - uint(a.x == 0u), lo);
}
// Giles' double-precision polynomials ("Approximating the erfinv function", GPU Computing Gems, 2011) for erfinv(x)
// / x in w = -log((1 - x)(1 + x)) (taken as two log1p, which do not cancel), then a Newton step on erf (on erfc from
// |x| = 1/2, where 1 - |x| is exact and erfc keeps its relative accuracy), which leaves the rounding.
precise double vkt_erfinv(double x) {
  double ax = abs(x), p;
  if (!(ax < 1.0lf))
    return ax == 1.0lf ? vkt_f64_copysign(vkt_f64_inf(), x) : vkt_f64_nan();
  double w = -(vkt_log1p(-ax) + vkt_log1p(ax));
  if (w < 6.25lf) {
    w -= 3.125lf;
    p = -3.6444120640178196996e-21lf;
    p = -1.685059138182016589e-19lf + p * w, p = 1.2858480715256400167e-18lf + p * w;
    p = 1.115787767802518096e-17lf + p * w, p = -1.333171662854620906e-16lf + p * w;
    p = 2.0972767875968561637e-17lf + p * w, p = 6.6376381343583238325e-15lf + p * w;
    p = -4.0545662729752068639e-14lf + p * w, p = -8.1519341976054721522e-14lf + p * w;
    p = 2.6335093153082322977e-12lf + p * w, p = -1.2975133253453532498e-11lf + p * w;
    p = -5.4154120542946279317e-11lf + p * w, p = 1.051212273321532285e-09lf + p * w;
    p = -4.1126339803469836976e-09lf + p * w, p = -2.9070369957882005086e-08lf + p * w;
    p = 4.2347877827932403518e-07lf + p * w, p = -1.3654692000834678645e-06lf + p * w;
    p = -1.3882523362786468719e-05lf + p * w, p = 0.0001867342080340571352lf + p * w;
    p = -0.00074070253416626697512lf + p * w, p = -0.0060336708714301490533lf + p * w;
    p = 0.24015818242558961693lf + p * w, p = 1.6536545626831027356lf + p * w;
  } else if (w < 16.0lf) {
    w = sqrt(w) - 3.25lf;
    p = 2.2137376921775787049e-09lf;
    p = 9.0756561938885390979e-08lf + p * w, p = -2.7517406297064545428e-07lf + p * w;
    p = 1.8239629214389227755e-08lf + p * w, p = 1.5027403968909827627e-06lf + p * w;
    p = -4.013867526981545969e-06lf + p * w, p = 2.9234449089955446044e-06lf + p * w;
    p = 1.2475304481671778723e-05lf + p * w, p = -4.7318229009055733981e-05lf + p * w;
    p = 6.8284851459573175448e-05lf + p * w, p = 2.4031110387097893999e-05lf + p * w;
    p = -0.0003550375203628474796lf + p * w, p = 0.00095328937973738049703lf + p * w;
    p = -0.0016882755560235047313lf + p * w, p = 0.0024914420961078508066lf + p * w;
    p = -0.0037512085075692412107lf + p * w, p = 0.005370914553590063617lf + p * w;
    p = 1.0052589676941592334lf + p * w, p = 3.0838856104922207635lf + p * w;
  } else {
    w = sqrt(w) - 5.0lf;
    p = -2.7109920616438573243e-11lf;
    p = -2.5556418169965252055e-10lf + p * w, p = 1.5076572693500548083e-09lf + p * w;
    p = -3.7894654401267369937e-09lf + p * w, p = 7.6157012080783393804e-09lf + p * w;
    p = -1.4960026627149240478e-08lf + p * w, p = 2.9147953450901080826e-08lf + p * w;
    p = -6.7711997758452339498e-08lf + p * w, p = 2.2900482228026654717e-07lf + p * w;
    p = -9.9298272942317002539e-07lf + p * w, p = 4.5260625972231537039e-06lf + p * w;
    p = -1.9681778105531670567e-05lf + p * w, p = 7.5995277030017761139e-05lf + p * w;
    p = -0.00021503011930044477347lf + p * w, p = -0.00013871931833623122026lf + p * w;
    p = 1.0103004648645343977lf + p * w, p = 4.8499064014085844221lf + p * w;
  }
  double y = p * ax;
  double r = ax < 0.5lf ? vkt_erf(y) - ax : (1.0lf - ax) - vkt_erfc(y);
  y -= r / (1.1283791670955126lf * exp(-y * y)); // erf'(y) = 2 / sqrt(pi) e^(-y^2)
  return x < 0.0lf ? -y : y;
}

// ---- gamma ----

// sin(pi x) for x < 0 not an integer: |x| mod 2 exactly, then the kernel on the nearest quarter's reduction.
precise double vkt_f64_sin_pi(double x) {
  if (x > -0.25lf)
    return vkt_f64_k_sin(3.14159265358979311600e+00lf * x, 0.0lf, false);
  double y = -x * 0.5lf;
  y = 2.0lf * (y - floor(y)); // |x| mod 2
  int n = int(y * 4.0lf);
  double v;
  if (n == 0)
    v = vkt_f64_k_sin(3.14159265358979311600e+00lf * y, 0.0lf, false);
  else if (n <= 2)
    v = vkt_f64_k_cos(3.14159265358979311600e+00lf * (0.5lf - y), 0.0lf);
  else if (n <= 4)
    v = vkt_f64_k_sin(3.14159265358979311600e+00lf * (1.0lf - y), 0.0lf, false);
  else if (n <= 6)
    v = -vkt_f64_k_cos(3.14159265358979311600e+00lf * (y - 1.5lf), 0.0lf);
  else
    v = vkt_f64_k_sin(3.14159265358979311600e+00lf * (y - 2.0lf), 0.0lf, false);
  return -v;
}
// log|Gamma(x)| (fdlibm's lgamma): polynomials and rational functions near 1, the minimum 1.4616 and 2 (where
// lgamma is near 0), the recurrence down into [2, 3) below 8, Stirling's series above, and for x < 0 the
// reflection log(pi / |x sin(pi x)|) - lgamma(-x).
precise double vkt_lgamma(double x) {
  double ax = abs(x), nadj = 0.0lf, r;
  if (isnan(x))
    return x;
  if (isinf(x) || x == 0.0lf || (x < 0.0lf && (ax >= 4503599627370496.0lf || x == floor(x)))) // poles; 2^52
    return vkt_f64_inf();
  if (ax < 8.470329472543003e-22lf) // 2^-70: -log|x|
    return -log(ax);
  if (x < 0.0lf)
    nadj = log(3.14159265358979311600e+00lf / abs(vkt_f64_sin_pi(x) * x));
  if (ax == 1.0lf || ax == 2.0lf) {
    r = 0.0lf;
  } else if (ax < 2.0lf) {
    double y;
    int i;
    if (ax <= 0.9lf) { // lgamma(x) = lgamma(x + 1) - log(x)
      r = -log(ax);
      if (ax >= 0.7316lf)
        y = 1.0lf - ax, i = 0;
      else if (ax >= 0.23164lf)
        y = ax - (1.46163214496836224576e+00lf - 1.0lf), i = 1;
      else
        y = ax, i = 2;
    } else {
      r = 0.0lf;
      if (ax >= 1.7316lf)
        y = 2.0lf - ax, i = 0;
      else if (ax >= 1.23164lf)
        y = ax - 1.46163214496836224576e+00lf, i = 1;
      else
        y = ax - 1.0lf, i = 2;
    }
    if (i == 0) { // around 2 (y = 2 - x) and 1 (y = 1 - x)
      double z = y * y;
      double p1 = 7.72156649015328655494e-02lf + z * (6.73523010531292681824e-02lf +
                  z * (7.38555086081402883957e-03lf + z * (1.19270763183362067845e-03lf +
                  z * (2.20862790713908385557e-04lf + z * 2.52144565451257326939e-05lf))));
      double p2 = z * (3.22467033424113591611e-01lf + z * (2.05808084325167332806e-02lf +
                  z * (2.89051383673415629091e-03lf + z * (5.10069792153511336608e-04lf +
                  z * (1.08011567247583939954e-04lf + z * 4.48640949618915160150e-05lf)))));
      r += (y * p1 + p2) - 0.5lf * y;
    } else if (i == 1) { // around the minimum: -0.1214862905358496 + y^2 poly(y)
      double z = y * y, w = z * y;
      double p1 = 4.83836122723810047042e-01lf + w * (-3.27885410759859649565e-02lf +
                  w * (6.10053870246291332635e-03lf + w * (-1.40346469989232843813e-03lf +
                  w * 3.15632070903625950361e-04lf)));
      double p2 = -1.47587722994593911752e-01lf + w * (1.79706750811820387126e-02lf +
                  w * (-3.68452016781138256760e-03lf + w * (8.81081882437654011382e-04lf +
                  w * -3.12754168375120860518e-04lf)));
      double p3 = 6.46249402391333854778e-02lf + w * (-1.03142241298341437450e-02lf +
                  w * (2.25964780900612472250e-03lf + w * (-5.38595305356740546715e-04lf +
                  w * 3.35529192635519073543e-04lf)));
      double p = z * p1 - (-3.63867699703950536541e-18lf - w * (p2 + y * p3));
      r += -1.21486290535849611461e-01lf + p;
    } else { // around 1 (y = x - 1)
      double p1 = y * (-7.72156649015328655494e-02lf + y * (6.32827064025093366517e-01lf +
                  y * (1.45492250137234768737e+00lf + y * (9.77717527963372745603e-01lf +
                  y * (2.28963728064692451092e-01lf + y * 1.33810918536787660377e-02lf)))));
      double p2 = 1.0lf + y * (2.45597793713041134822e+00lf + y * (2.12848976379893395361e+00lf +
                  y * (7.69285150456672783825e-01lf + y * (1.04222645593369134254e-01lf +
                  y * 3.21709242282423911810e-03lf))));
      r += -0.5lf * y + p1 / p2;
    }
  } else if (ax < 8.0lf) { // lgamma(2 + y) by a rational function, times (y + 2)(y + 3) ... back up to x
    int i = int(ax);
    double y = ax - double(i);
    double p = y * (-7.72156649015328655494e-02lf + y * (2.14982415960608852501e-01lf +
               y * (3.25778796408930981787e-01lf + y * (1.46350472652464452805e-01lf +
               y * (2.66422703033638609560e-02lf + y * (1.84028451407337715652e-03lf +
               y * 3.19475326584100867617e-05lf))))));
    double q = 1.0lf + y * (1.39200533467621045958e+00lf + y * (7.21935547567138069525e-01lf +
               y * (1.71933865632803078993e-01lf + y * (1.86459191715652901344e-02lf +
               y * (7.77942496381893596434e-04lf + y * 7.32668430744625636189e-06lf)))));
    r = 0.5lf * y + p / q;
    double z = 1.0lf;
    for (int k = 2; k < i; k++)
      z *= y + double(k);
    if (i > 2)
      r += log(z);
  } else if (ax < 2.8823037615171174e+17lf) { // 2^58: (x - 1/2)(log(x) - 1) + w(1 / x)
    double t = log(ax), z = 1.0lf / ax, y = z * z;
    double w = 4.18938533204672725052e-01lf + z * (8.33333333333329678849e-02lf +
               y * (-2.77777777728775536470e-03lf + y * (7.93650558643019558500e-04lf +
               y * (-5.95187557450339963135e-04lf + y * (8.36339918996282139126e-04lf +
               y * -1.63092934096575273989e-03lf)))));
    r = (ax - 0.5lf) * (t - 1.0lf) + w;
  } else {
    r = ax * (log(ax) - 1.0lf);
  }
  return x < 0.0lf ? nadj - r : r;
}
// sin(pi t) for |t| <= 1/2: the kernels on pi |t| or on pi (1/2 - |t|) (exact), so that it is 0 only at 0 and 1
// only at 1/2.
precise double vkt_f64_sinpi(double t) {
  double a = abs(t), v = a <= 0.25lf ? vkt_f64_k_sin(3.14159265358979311600e+00lf * a, 0.0lf, false)
                                     : vkt_f64_k_cos(3.14159265358979311600e+00lf * (0.5lf - a), 0.0lf);
  return t < 0.0lf ? -v : v;
}
// digamma on [1, 2], (x - x0)(Y + R(x - 1)), x0 the positive zero in three parts: Boost's rational R (John Maddock,
// 2006), fitted for absolute error against the float constant Y, as SciPy's psi has it.
precise double vkt_f64_digamma_1_2(double x) {
  double g = x - 1569415565.0lf / 1073741824.0lf;
  g -= 381566830.0lf / 1152921504606846976.0lf; // 2^60
  g -= 0.9016312093258695918615325266959189453125e-19lf;
  double t = x - 1.0lf;
  double p = -0.0020713321167745952lf;
  p = -0.045251321448739056lf + p * t, p = -0.28919126444774784lf + p * t, p = -0.65031853770896507lf + p * t;
  p = -0.32555031186804491lf + p * t, p = 0.25479851061131551lf + p * t;
  double q = -0.55789841321675513e-6lf;
  q = 0.0021284987017821144lf + q * t, q = 0.054151797245674225lf + q * t, q = 0.43593529692665969lf + q * t;
  q = 1.4606242909763515lf + q * t, q = 2.0767117023730469lf + q * t, q = 1.0lf + q * t;
  return g * 0.99558162689208984375lf + g * (p / q);
}
// s + e = a + b exactly (Knuth's two-sum).
precise dvec2 vkt_f64_two_sum(double a, double b) {
  double s = a + b, v = s - a;
  return dvec2(s, (a - (s - v)) + (b - v));
}
// The double-double acc plus 1 / x, the quotient's remainder (1 - q x) / x included (q x is near 1: exact).
precise dvec2 vkt_f64_add_recip(dvec2 acc, double x, double sign) {
  double q = 1.0lf / x;
  dvec2 p = vkt_f64_two_prod(q, x), s = vkt_f64_two_sum(acc.x, sign * q);
  return dvec2(s.x, acc.y + s.y + sign * (((1.0lf - p.x) - p.y) / x));
}
// digamma (psi), as SciPy's: the reflection psi(1 - x) - pi / tan(pi x) below 0, the recurrence into [1, 2] below 10
// (summed as a double-double, so that its terms' roundings do not add up), the asymptotic series log(x) - 1/(2x) -
// sum B2k / (2k x^2k) above.
precise double vkt_digamma(double x) {
  if (isnan(x) || x == 0.0lf || isinf(x))
    return x == 0.0lf ? vkt_f64_copysign(vkt_f64_inf(), -x) : x > 0.0lf ? x : vkt_f64_nan(); // +-0: -+inf, as C's
  dvec2 y = dvec2(0.0lf);
  if (x < 0.0lf) {
    if (x == floor(x))
      return vkt_f64_nan();
    double r = x - roundEven(x); // pi / tan(pi x) = pi cos(pi r) / sin(pi r): 0 at r = 1/2, as tan(pi r) is not
    y.x = -3.14159265358979311600e+00lf * vkt_f64_sinpi(0.5lf - abs(r)) / vkt_f64_sinpi(r);
    x = 1.0lf - x;
  }
  if (x >= 10.0lf) {
    double z = 1.0lf / (x * x), a = 8.33333333333333333333E-2lf;
    a = -2.10927960927960927961E-2lf + a * z, a = 7.57575757575757575758E-3lf + a * z;
    a = -4.16666666666666666667E-3lf + a * z, a = 3.96825396825396825397E-3lf + a * z;
    a = -8.33333333333333333333E-3lf + a * z, a = 8.33333333333333333333E-2lf + a * z;
    return y.x + ((log(x) - 0.5lf / x) - (x < 1e17lf ? a * z : 0.0lf));
  }
  double dx = 0.0lf; // x + dx is the argument where x + 1 rounded
  if (x < 9.313225746154785e-10lf) // 2^-30: -1 / x - Euler's constant, the next term x pi^2 / 6 below 2^-59 of it
    return -1.0lf / x - 0.57721566490153286061lf;
  if (x < 1.0lf) {
    y = vkt_f64_add_recip(y, x, -1.0lf);
    double u = x + 1.0lf;
    dx = x - (u - 1.0lf);
    x = u;
  }
  while (x > 2.0lf) {
    x -= 1.0lf;
    y = vkt_f64_add_recip(y, x, 1.0lf);
  }
  // psi(x + dx) = psi(x) + dx psi'(x), psi'(x) = 1 / x^2 + psi'(x + 1) by its asymptotic series (to 1e-4: dx is tiny)
  double t = x + 1.0lf;
  double d = 1.0lf / (x * x) + (1.0lf + (0.5lf + (1.0lf / 6.0lf - 1.0lf / (30.0lf * t * t)) / t) / t) / t;
  dvec2 s = vkt_f64_two_sum(y.x, vkt_f64_digamma_1_2(x));
  return s.x + (s.y + y.y + dx * d);
}
#endif
