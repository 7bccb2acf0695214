#version 450
// binary.comp: out = OP(x, y) of two tensors, or of a tensor and the scalar P0 (RHS_SCALAR: y is the
// scalar, LHS_SCALAR: x is).
#include "elementwise.glsl"
#include "math.glsl"

layout(std430, binding = 0) writeonly buffer Out { TO out_[]; };
layout(std430, binding = 1) readonly buffer A { TA a_[]; };
#if !defined(RHS_SCALAR) && !defined(LHS_SCALAR)
layout(std430, binding = 2) readonly buffer B { TB b_[]; };
#endif

void main() {
  uint i = linear_id();
  if (i >= p.n)
    return;
  uint idx[MAX_OPS];
#if defined(RHS_SCALAR)
  locate(i, 2, idx);
  C x = C(a_[idx[1]]), y = P0;
#elif defined(LHS_SCALAR)
  locate(i, 2, idx);
  C x = P0, y = C(a_[idx[1]]);
#else
  locate(i, 3, idx);
  C x = C(a_[idx[1]]), y = C(b_[idx[2]]);
#endif
  out_[idx[0]] = STORE(OP(x, y));
}
