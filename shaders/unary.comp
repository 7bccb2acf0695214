#version 450
// unary.comp: out = OP(x). The op's GLSL (a #define OP(x) from the op table) is all that differs.
#include "elementwise.glsl"
#include "math.glsl"

layout(std430, binding = 0) writeonly buffer Out { TO out_[]; };
layout(std430, binding = 1) readonly buffer A { TA a_[]; };

void main() {
  uint i = linear_id();
  if (i >= p.n)
    return;
  uint idx[MAX_OPS];
  locate(i, 2, idx);
  C x = C(a_[idx[1]]);
  out_[idx[0]] = STORE(OP(x));
}
