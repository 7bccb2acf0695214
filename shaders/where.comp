#version 450
// where.comp: out = cond ? a : b, every operand strided and broadcast. A Python number for a (SCALAR1) or
// b (SCALAR2) is a push constant instead of a buffer: P0 the first of them, P1 the second.
#include "elementwise.glsl"

layout(std430, binding = 0) writeonly buffer Out { TO out_[]; };
layout(std430, binding = 1) readonly buffer Cond { uint8_t cond_[]; };
#ifdef SCALAR1
#define A_VALUE P0
#define B_NUMBER P1
#define B_AT 2 // b's binding and operand index where it is a tensor
#else
layout(std430, binding = 2) readonly buffer A { TA a_[]; };
#define A_VALUE C(a_[idx[2]])
#define B_NUMBER P0
#define B_AT 3
#endif
#ifdef SCALAR2
#define B_VALUE B_NUMBER
#define NOPS B_AT
#else
layout(std430, binding = B_AT) readonly buffer B { TB b_[]; };
#define B_VALUE C(b_[idx[B_AT]])
#define NOPS (B_AT + 1)
#endif

void main() {
  C v[ELEMS];
  uint idx[MAX_OPS];
  BEGIN(NOPS);
  [[unroll]] for (uint k = 0; k < ELEMS; k++) { // every load before any store
    if (PRESENT(k)) {
      LOCATE(k, NOPS, idx);
      v[k] = cond_[idx[1]] != uint8_t(0) ? A_VALUE : B_VALUE;
    }
  }
  [[unroll]] for (uint k = 0; k < ELEMS; k++) {
    if (PRESENT(k)) {
      LOCATE(k, NOPS, idx);
      out_[idx[0]] = STORE(v[k]);
    }
  }
}
