#version 450
// binary.comp: out = OP(x, y) of two tensors, or of a tensor and the scalar P0 (SCALAR0: x is the
// scalar, SCALAR1: y is).
#include "elementwise.glsl"
#include "math.glsl"

layout(std430, binding = 0) writeonly buffer Out { TO out_[]; };
layout(std430, binding = 1) readonly buffer A { TA a_[]; };
#if !defined(SCALAR1) && !defined(SCALAR0)
layout(std430, binding = 2) readonly buffer B { TB b_[]; };
#endif

#if defined(SCALAR1) || defined(SCALAR0)
#define NOPS 2
#else
#define NOPS 3
#endif

void main() {
  C x[ELEMS], y[ELEMS];
  uint idx[MAX_OPS];
  BEGIN(NOPS);
  [[unroll]] for (uint k = 0; k < ELEMS; k++) { // every load before any store
    if (PRESENT(k)) {
      LOCATE(k, NOPS, idx);
#if defined(SCALAR1)
      x[k] = C(a_[idx[1]]), y[k] = P0;
#elif defined(SCALAR0)
      x[k] = P0, y[k] = C(a_[idx[1]]);
#else
      x[k] = C(a_[idx[1]]), y[k] = C(b_[idx[2]]);
#endif
    }
  }
  [[unroll]] for (uint k = 0; k < ELEMS; k++) {
    if (PRESENT(k)) {
      LOCATE(k, NOPS, idx);
      precise VT v = OP(x[k], y[k]); // as in fused.comp: no contraction, so fused and unfused results agree
      out_[idx[0]] = STORE(v);
    }
  }
}
