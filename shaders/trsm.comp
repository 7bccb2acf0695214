#version 450
// trsm.comp: X = A^-1 B for one column of B per invocation (invocation = matrix * k + column), A triangular
// (UPPER, unit diagonal when UNIT), or with LU_SOLVE A an LU block of lu.comp: B's rows swapped by its pivots,
// then the unit lower and the upper solve (LAPACK's getrs); with PERMUTE, X = P B alone, P of lu_factor's pivots
// ([batch, n]: the swaps undone in reverse order). The steps of csrc/ops/cpu/solve.c; T is the storage and
// compute type.
#include "common.glsl"

layout(push_constant) uniform Push {
  uint batch, n, k;                               // B and X are [batch, n, k]
  uint a_stride;                                  // elements from one matrix of A to the next
  uint a_offset, b_offset, out_offset, piv_offset; // elements; piv: [batch, n + 1] ints (lu.comp's)
} p;

layout(std430, binding = 0) buffer Out { T out_[]; };
layout(std430, binding = 1) readonly buffer A { T a_[]; };
layout(std430, binding = 2) readonly buffer B { T b_[]; };
#if defined(LU_SOLVE) || defined(PERMUTE)
layout(std430, binding = 3) readonly buffer Piv { int piv_[]; };
#endif

uint a0, x0; // this matrix of A, this column of X (element offsets)
#define A_(i, j) a_[a0 + (i) * p.n + (j)]
#define X(i) out_[x0 + (i) * p.k]

void lower(bool unit) {
  for (uint i = 0u; i < p.n; i++) {
    T s = X(i);
    for (uint c = 0u; c < i; c++)
      s -= A_(i, c) * X(c);
    X(i) = unit ? s : s / A_(i, i);
  }
}

void upper(bool unit) {
  for (uint i = p.n; i-- > 0u;) {
    T s = X(i);
    for (uint c = i + 1u; c < p.n; c++)
      s -= A_(i, c) * X(c);
    X(i) = unit ? s : s / A_(i, i);
  }
}

void main() {
  uint id = linear_id();
  if (id >= p.batch * p.k)
    return;
  uint b = id / p.k, col = id % p.k;
  a0 = p.a_offset + b * p.a_stride;
  x0 = p.out_offset + b * p.n * p.k + col;
  uint b0 = p.b_offset + b * p.n * p.k + col;
  for (uint i = 0u; i < p.n; i++)
    X(i) = b_[b0 + i * p.k];
#ifdef LU_SOLVE
  for (uint i = 0u; i < p.n; i++) {
    uint q = uint(piv_[p.piv_offset + b * (p.n + 1u) + i] - 1);
    T t = X(i);
    X(i) = X(q);
    X(q) = t;
  }
  lower(true);
  upper(false);
#elif defined(PERMUTE)
  for (uint i = p.n; i-- > 0u;) {
    uint q = uint(piv_[p.piv_offset + b * p.n + i] - 1);
    T t = X(i);
    X(i) = X(q);
    X(q) = t;
  }
#elif defined(UPPER)
  upper(UNIT);
#else
  lower(UNIT);
#endif
}
