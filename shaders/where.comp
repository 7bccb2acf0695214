#version 450
// where.comp: out = cond ? x : y, all four operands strided and broadcast.
#include "elementwise.glsl"

layout(std430, binding = 0) writeonly buffer Out { TO out_[]; };
layout(std430, binding = 1) readonly buffer Cond { uint8_t cond_[]; };
layout(std430, binding = 2) readonly buffer A { TA a_[]; };
layout(std430, binding = 3) readonly buffer B { TB b_[]; };

void main() {
  C v[ELEMS];
  uint idx[MAX_OPS];
  [[unroll]] for (uint k = 0; k < ELEMS; k++) { // every load before any store
    uint i = element(k);
    if (i < p.n) {
      locate(i, 4, idx);
      v[k] = cond_[idx[1]] != uint8_t(0) ? C(a_[idx[2]]) : C(b_[idx[3]]);
    }
  }
  [[unroll]] for (uint k = 0; k < ELEMS; k++) {
    uint i = element(k);
    if (i < p.n) {
      locate(i, 4, idx);
      out_[idx[0]] = STORE(v[k]);
    }
  }
}
