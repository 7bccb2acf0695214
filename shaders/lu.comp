#version 450
// lu.comp: the LU factorisation with partial pivoting of one [m, n] matrix per invocation (LAPACK's getf2,
// the steps of csrc/ops/cpu/solve.c), in place in the output block (linalg.h's vkt_lu_layout): LU, then det,
// sign and log|det|; pivots (1-based) and info (the first zero pivot, 1-based, or 0) go to the int block.
// T is the storage and compute type (float or double), LN2 log(2) in it.
#include "common.glsl"

layout(push_constant) uniform Push {
  uint batch, m, n, k;                    // k = min(m, n)
  uint a_offset, out_offset, piv_offset;  // elements
} p;

layout(std430, binding = 0) buffer Out { T out_[]; };
layout(std430, binding = 1) buffer Piv { int piv_[]; };
layout(std430, binding = 2) readonly buffer In { T a_[]; };

uint o; // this matrix's LU (element offset in out_)
#define LU(i, j) out_[o + (i) * p.n + (j)]

// log(x) for x > 0 in T: GLSL's log() is float only, which would leave float64's log|det| at float's precision.
// frexp's mantissa in [sqrt(1/2), sqrt(2)), then log f = 2 atanh((f - 1) / (f + 1)) as a series (|s| < 0.18).
T log_t(T x) {
  int e;
  T f = frexp(x, e);
  if (f < T(0.70710678118654752)) {
    f *= T(2);
    e -= 1;
  }
  T s = (f - T(1)) / (f + T(1)), s2 = s * s, term = s, sum = T(0);
  for (int i = 1; i < 40; i += 2) {
    sum += term / T(i);
    term *= s2;
  }
  return T(2) * sum + T(e) * LN2;
}

void main() {
  uint b = linear_id();
  if (b >= p.batch)
    return;
  o = p.out_offset + b * (p.m * p.n + 3u);
  uint a0 = p.a_offset + b * p.m * p.n, v0 = p.piv_offset + b * (p.k + 1u);
  for (uint i = 0u; i < p.m * p.n; i++)
    out_[o + i] = a_[a0 + i];
  int info = 0, ex = 0;
  T sign = T(1), mant = T(1); // |det| = mant 2^ex: one log at the end, not one a pivot (float64's is a series)
  for (uint j = 0u; j < p.k; j++) {
    uint top = j;
    for (uint i = j + 1u; i < p.m; i++)
      top = abs(LU(i, j)) > abs(LU(top, j)) ? i : top;
    piv_[v0 + j] = int(top) + 1;
    T d = LU(top, j);
    if (d == T(0)) { // nothing to eliminate below a zero column: LAPACK records it and goes on
      info = info == 0 ? int(j) + 1 : info;
      sign = T(0);
      continue;
    }
    if (top != j) {
      sign = -sign;
      for (uint c = 0u; c < p.n; c++) {
        T t = LU(j, c);
        LU(j, c) = LU(top, c);
        LU(top, c) = t;
      }
    }
    sign *= d < T(0) ? T(-1) : T(1);
    int e;
    mant = frexp(mant * abs(d), e);
    ex += e;
    T r = T(1) / d; // LAPACK's getf2 scales the column by the reciprocal too
    for (uint i = j + 1u; i < p.m; i++) {
      T l = LU(i, j) * r;
      LU(i, j) = l;
      for (uint c = j + 1u; c < p.n; c++)
        LU(i, c) -= l * LU(j, c);
    }
  }
  piv_[v0 + p.k] = info;
  T det = sign;
  for (uint j = 0u; j < p.k; j++)
    det *= abs(LU(j, j));
  uint at = o + p.m * p.n;
  out_[at] = det;
  out_[at + 1u] = sign;
  out_[at + 2u] = sign == T(0) ? T(-1) / T(0) : log_t(mant) + T(ex) * LN2; // log 0: -inf, as torch's
}
