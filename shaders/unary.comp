#version 450
// unary.comp: out = OP(x). The op's GLSL (a #define OP(x) from the op table) is all that differs.
#include "elementwise.glsl"
#include "math.glsl"

layout(std430, binding = 0) writeonly buffer Out { TO out_[]; };
layout(std430, binding = 1) readonly buffer A { TA a_[]; };

void main() {
  C x[ELEMS];
  uint idx[MAX_OPS];
  BEGIN(2);
  [[unroll]] for (uint k = 0; k < ELEMS; k++) { // every load before any store
    if (PRESENT(k)) {
      LOCATE(k, 2, idx);
      x[k] = C(a_[idx[1]]);
    }
  }
  [[unroll]] for (uint k = 0; k < ELEMS; k++) {
    if (PRESENT(k)) {
      LOCATE(k, 2, idx);
      precise VT v = OP(x[k]); // as in fused.comp: no contraction, so fused and unfused results agree
      out_[idx[0]] = STORE(v);
    }
  }
}
