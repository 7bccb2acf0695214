#version 450
// svd.comp: the one-sided Jacobi SVD of one [m, n] matrix per invocation, the steps of csrc/ops/cpu/svd.c
// run in place in the output block (linalg.h's layout): L (A, or A^T when A is wide, r x cl) sits where U
// (tall) or V (wide) goes, J (c x c) where the other goes, so no scratch memory is needed. T is the
// storage and compute type (float or double), EPS its machine epsilon, MAX_SWEEPS linalg.h's.
#include "common.glsl"

layout(push_constant) uniform Push {
  uint batch, m, n, k, cu, cv, s_at, v_at, size; // elements
  uint a_offset, out_offset;                     // elements
} p;

layout(std430, binding = 0) buffer Out { T out_[]; };
layout(std430, binding = 1) readonly buffer In { T a_[]; };

uint l0, j0, r, c, cl; // this matrix's L and J (element offsets in out_), L's rows, columns and row length

#define L(i, j) out_[l0 + (i) * cl + (j)]
#define J(i, j) out_[j0 + (i) * c + (j)]

void rotate_l(uint q0, uint q1, T cs, T sn) {
  for (uint i = 0u; i < r; i++) {
    T a = L(i, q0), b = L(i, q1);
    L(i, q0) = cs * a - sn * b;
    L(i, q1) = sn * a + cs * b;
  }
}

void rotate_j(uint q0, uint q1, T cs, T sn) {
  for (uint i = 0u; i < c; i++) {
    T a = J(i, q0), b = J(i, q1);
    J(i, q0) = cs * a - sn * b;
    J(i, q1) = sn * a + cs * b;
  }
}

bool orthogonalise(uint q0, uint q1) {
  T alpha = T(0), beta = T(0), gamma = T(0);
  for (uint i = 0u; i < r; i++) {
    T a = L(i, q0), b = L(i, q1);
    alpha += a * a;
    beta += b * b;
    gamma += a * b;
  }
  if (!(abs(gamma) > EPS * sqrt(alpha) * sqrt(beta)))
    return false;
  T zeta = (beta - alpha) / (T(2) * gamma);
  T az = abs(zeta);
  T h = az > T(1) ? az * sqrt(T(1) + (T(1) / az) * (T(1) / az)) : sqrt(T(1) + az * az); // hypot(1, zeta)
  T t = (zeta < T(0) ? T(-1) : T(1)) / (az + h);
  T cs = T(1) / sqrt(T(1) + t * t), sn = cs * t;
  rotate_l(q0, q1, cs, sn);
  rotate_j(q0, q1, cs, sn);
  return true;
}

void swap_columns(uint q0, uint q1) {
  for (uint i = 0u; i < r; i++) {
    T t = L(i, q0);
    L(i, q0) = L(i, q1);
    L(i, q1) = t;
  }
  for (uint i = 0u; i < c; i++) {
    T t = J(i, q0);
    J(i, q0) = J(i, q1);
    J(i, q1) = t;
  }
}

// Column col of L := a unit vector orthogonal to columns [0, col) (cpu/svd.c's complete()).
void complete(uint col) {
  uint best = 0u;
  T best_rest = T(-1);
  for (uint e = 0u; e < r; e++) {
    T rest = T(1);
    for (uint q = 0u; q < col; q++)
      rest -= L(e, q) * L(e, q);
    if (rest > best_rest) {
      best = e;
      best_rest = rest;
    }
  }
  for (uint i = 0u; i < r; i++)
    L(i, col) = i == best ? T(1) : T(0);
  for (int pass = 0; pass < 2; pass++)
    for (uint q = 0u; q < col; q++) {
      T d = T(0);
      for (uint i = 0u; i < r; i++)
        d += L(i, q) * L(i, col);
      for (uint i = 0u; i < r; i++)
        L(i, col) -= d * L(i, q);
    }
  T norm = T(0);
  for (uint i = 0u; i < r; i++)
    norm += L(i, col) * L(i, col);
  for (uint i = 0u; i < r; i++)
    L(i, col) /= sqrt(norm);
}

void main() {
  uint b = linear_id();
  if (b >= p.batch)
    return;
  bool tall = p.m >= p.n;
  uint o = p.out_offset + b * p.size, a0 = p.a_offset + b * p.m * p.n, s0 = o + p.s_at;
  l0 = o + (tall ? 0u : p.v_at);
  j0 = o + (tall ? p.v_at : 0u);
  r = tall ? p.m : p.n;
  c = p.k;
  cl = tall ? p.cu : p.cv;
  for (uint i = 0u; i < r; i++)
    for (uint j = 0u; j < c; j++)
      L(i, j) = a_[a0 + (tall ? i * p.n + j : j * p.n + i)];
  for (uint i = 0u; i < c; i++)
    for (uint j = 0u; j < c; j++)
      J(i, j) = i == j ? T(1) : T(0);
  bool rotated = true;
  for (int sweep = 0; sweep < MAX_SWEEPS && rotated; sweep++) {
    rotated = false;
    for (uint q0 = 0u; q0 + 1u < c; q0++)
      for (uint q1 = q0 + 1u; q1 < c; q1++)
        rotated = orthogonalise(q0, q1) || rotated;
  }
  for (uint q = 0u; q < c; q++) {
    T s = T(0);
    for (uint i = 0u; i < r; i++)
      s += L(i, q) * L(i, q);
    out_[s0 + q] = sqrt(s);
  }
  for (uint q = 0u; q < c; q++) {
    uint top = q;
    for (uint q1 = q + 1u; q1 < c; q1++)
      top = out_[s0 + q1] > out_[s0 + top] ? q1 : top;
    if (top == q)
      continue;
    T t = out_[s0 + q];
    out_[s0 + q] = out_[s0 + top];
    out_[s0 + top] = t;
    swap_columns(q, top);
  }
  for (uint q = 0u; q < cl; q++) {
    if (q >= c || out_[s0 + q] == T(0)) {
      complete(q);
      continue;
    }
    T s = out_[s0 + q];
    for (uint i = 0u; i < r; i++)
      L(i, q) /= s;
  }
}
