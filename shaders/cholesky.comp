#version 450
// cholesky.comp: A = L L^T for one [n, n] matrix per invocation from its lower triangle (LAPACK's potf2,
// the steps of csrc/ops/cpu/solve.c), L written whole (zeros above the diagonal); info is the order of the
// first leading minor that is not positive-definite (1-based), or 0. T is the storage and compute type.
#include "common.glsl"

layout(push_constant) uniform Push {
  uint batch, n;
  uint a_offset, out_offset, info_offset; // elements
} p;

layout(std430, binding = 0) buffer Out { T out_[]; };
layout(std430, binding = 1) buffer Info { int info_[]; };
layout(std430, binding = 2) readonly buffer In { T a_[]; };

void main() {
  uint b = linear_id();
  if (b >= p.batch)
    return;
  uint o = p.out_offset + b * p.n * p.n, a0 = p.a_offset + b * p.n * p.n;
  int info = 0;
  for (uint i = 0u; i < p.n * p.n; i++)
    out_[o + i] = T(0);
  for (uint j = 0u; j < p.n && info == 0; j++) {
    T d = a_[a0 + j * p.n + j];
    for (uint c = 0u; c < j; c++)
      d -= out_[o + j * p.n + c] * out_[o + j * p.n + c];
    if (!(d > T(0))) { // LAPACK stops at the first minor that is not positive (NaN included)
      info = int(j) + 1;
      break;
    }
    d = sqrt(d);
    out_[o + j * p.n + j] = d;
    for (uint i = j + 1u; i < p.n; i++) {
      T s = a_[a0 + i * p.n + j];
      for (uint c = 0u; c < j; c++)
        s -= out_[o + i * p.n + c] * out_[o + j * p.n + c];
      out_[o + i * p.n + j] = s / d;
    }
  }
  info_[p.info_offset + b] = info;
}
