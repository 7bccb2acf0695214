#version 450
// qr.comp: the Householder QR of one [m, n] matrix per invocation (LAPACK's geqr2, then org2r for Q), the steps
// of csrc/ops/cpu/decompose.c, in place in the output block (linalg.h's layout): W (A, then R and the reflectors),
// tau, Q. T is the storage and compute type (float or double).
#include "common.glsl"

layout(push_constant) uniform Push {
  uint batch, m, n, k, cq, size;  // size: one matrix's block (elements)
  uint a_offset, out_offset;      // elements
} p;

layout(std430, binding = 0) buffer Out { T out_[]; };
layout(std430, binding = 1) readonly buffer In { T a_[]; };

uint w0, t0, q0; // this matrix's W, tau and Q (element offsets in out_)
#define W(i, j) out_[w0 + (i) * p.n + (j)]
#define Q(i, j) out_[q0 + (i) * p.cq + (j)]

T hypot_t(T a, T b) { // without overflow or underflow for the squares
  T x = max(abs(a), abs(b)), y = min(abs(a), abs(b));
  return x == T(0) ? T(0) : x * sqrt(T(1) + (y / x) * (y / x));
}

void main() {
  uint b = linear_id();
  if (b >= p.batch)
    return;
  w0 = p.out_offset + b * p.size;
  t0 = w0 + p.m * p.n;
  q0 = t0 + p.k;
  uint a0 = p.a_offset + b * p.m * p.n;
  for (uint i = 0u; i < p.m * p.n; i++)
    out_[w0 + i] = a_[a0 + i];
  for (uint j = 0u; j < p.k; j++) {
    T alpha = W(j, j), xnorm = T(0);
    for (uint i = j + 1u; i < p.m; i++)
      xnorm = hypot_t(xnorm, W(i, j));
    out_[t0 + j] = T(0);
    if (xnorm == T(0)) // nothing below the diagonal: H = I, R's entry keeps its sign (dlarfg)
      continue;
    T beta = alpha < T(0) ? hypot_t(alpha, xnorm) : -hypot_t(alpha, xnorm), scale = T(1) / (alpha - beta);
    T tau = (beta - alpha) / beta;
    out_[t0 + j] = tau;
    for (uint i = j + 1u; i < p.m; i++)
      W(i, j) *= scale;
    W(j, j) = beta;
    for (uint c = j + 1u; c < p.n; c++) {
      T s = W(j, c);
      for (uint i = j + 1u; i < p.m; i++)
        s += W(i, j) * W(i, c);
      s *= tau;
      W(j, c) -= s;
      for (uint i = j + 1u; i < p.m; i++)
        W(i, c) -= s * W(i, j);
    }
  }
  for (uint i = 0u; i < p.m; i++)
    for (uint c = 0u; c < p.cq; c++)
      Q(i, c) = i == c ? T(1) : T(0);
  for (uint j = p.cq > 0u ? p.k : 0u; j-- > 0u;) {
    T tau = out_[t0 + j];
    for (uint c = j; c < p.cq && tau != T(0); c++) { // columns left of j are still the identity's
      T s = Q(j, c);
      for (uint i = j + 1u; i < p.m; i++)
        s += W(i, j) * Q(i, c);
      s *= tau;
      Q(j, c) -= s;
      for (uint i = j + 1u; i < p.m; i++)
        Q(i, c) -= s * W(i, j);
    }
  }
}
