#version 450
// eigh.comp: the cyclic Jacobi eigendecomposition of one symmetric [n, n] matrix per invocation, the steps of
// csrc/ops/cpu/decompose.c, in the output block (linalg.h's layout): S (the matrix, rotated to diagonal), the
// eigenvalues ascending, V. T is the storage and compute type (float or double), EPS its machine epsilon,
// MAX_SWEEPS linalg.h's; UPPER reads the upper triangle, else the lower.
#include "common.glsl"

layout(push_constant) uniform Push {
  uint batch, n, size;       // size: one matrix's block (elements)
  uint a_offset, out_offset; // elements
} p;

layout(std430, binding = 0) buffer Out { T out_[]; };
layout(std430, binding = 1) readonly buffer In { T a_[]; };

uint s0, w0, v0; // this matrix's S, eigenvalues and V (element offsets in out_)
#define S(i, j) out_[s0 + (i) * p.n + (j)]
#define V(i, j) out_[v0 + (i) * p.n + (j)]

T hypot_t(T a, T b) {
  T x = max(abs(a), abs(b)), y = min(abs(a), abs(b));
  return x == T(0) ? T(0) : x * sqrt(T(1) + (y / x) * (y / x));
}

void rotate(uint q0, uint q1) {
  T apq = S(q0, q1), theta = (S(q1, q1) - S(q0, q0)) / (T(2) * apq);
  T t = (theta < T(0) ? T(-1) : T(1)) / (abs(theta) + hypot_t(T(1), theta)); // the smaller angle
  T c = T(1) / sqrt(T(1) + t * t), sn = t * c;
  for (uint r = 0u; r < p.n; r++) {
    if (r != q0 && r != q1) {
      T rp = S(r, q0), rq = S(r, q1);
      S(r, q0) = c * rp - sn * rq;
      S(q0, r) = S(r, q0);
      S(r, q1) = sn * rp + c * rq;
      S(q1, r) = S(r, q1);
    }
    T vp = V(r, q0), vq = V(r, q1);
    V(r, q0) = c * vp - sn * vq;
    V(r, q1) = sn * vp + c * vq;
  }
  S(q0, q0) -= t * apq;
  S(q1, q1) += t * apq;
  S(q0, q1) = T(0);
  S(q1, q0) = T(0);
}

void main() {
  uint b = linear_id();
  if (b >= p.batch)
    return;
  s0 = p.out_offset + b * p.size;
  w0 = s0 + p.n * p.n;
  v0 = w0 + p.n;
  uint a0 = p.a_offset + b * p.n * p.n;
  T fro = T(0);
  for (uint i = 0u; i < p.n; i++)
    for (uint j = 0u; j < p.n; j++) {
#ifdef UPPER
      bool here = i <= j;
#else
      bool here = i >= j;
#endif
      S(i, j) = a_[a0 + (here ? i * p.n + j : j * p.n + i)];
      V(i, j) = i == j ? T(1) : T(0);
      fro = hypot_t(fro, S(i, j));
    }
  bool rotated = true;
  for (int sweep = 0; sweep < MAX_SWEEPS && rotated; sweep++) {
    rotated = false;
    for (uint q0 = 0u; q0 + 1u < p.n; q0++)
      for (uint q1 = q0 + 1u; q1 < p.n; q1++) {
        T floor_ = sqrt(abs(S(q0, q0))) * sqrt(abs(S(q1, q1)));
        if (!(abs(S(q0, q1)) > EPS * max(floor_, EPS * fro)))
          continue;
        rotate(q0, q1);
        rotated = true;
      }
  }
  for (uint q = 0u; q < p.n; q++)
    out_[w0 + q] = S(q, q);
  for (uint q = 0u; q < p.n; q++) { // selection sort, ascending, V's columns with the values
    uint low = q;
    for (uint q1 = q + 1u; q1 < p.n; q1++)
      low = out_[w0 + q1] < out_[w0 + low] ? q1 : low;
    if (low == q)
      continue;
    T t = out_[w0 + q];
    out_[w0 + q] = out_[w0 + low];
    out_[w0 + low] = t;
    for (uint r = 0u; r < p.n; r++) {
      t = V(r, q);
      V(r, q) = V(r, low);
      V(r, low) = t;
    }
  }
  for (uint q = 0u; q < p.n; q++) { // the sign: each column's entry of largest magnitude positive
    uint top = 0u;
    for (uint r = 1u; r < p.n; r++)
      top = abs(V(r, q)) > abs(V(top, q)) ? r : top;
    T sg = V(top, q) < T(0) ? T(-1) : T(1);
    for (uint r = 0u; r < p.n; r++)
      V(r, q) *= sg;
  }
}
