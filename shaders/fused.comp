#version 450
// fused.comp: a pending expression of elementwise ops as one kernel (csrc/ops/fuse.c generates it). The
// host defines, besides elementwise.glsl's C and CONTIGUOUS: NOPS operands (MAX_OPS), the results written
// first, then the tensors read; NPARAMS scalars; OPi(x, [y,] P0, P1) and STi(v) per op (its GLSL and the
// conversion to its result dtype); FUSED_BUFFERS (the bindings), FUSED_DECLARE, FUSED_LOAD(k) (each
// tensor's element) and FUSED_EVAL(k) (each op's value, rounded through its dtype as a stored result
// would be, then the stores), and ROWS where the innermost dim is long (elementwise.glsl). Values are
// `precise`: no contraction across ops, so results equal the unfused kernels', which are `precise` too.
#ifdef CONTIGUOUS
#define ELEMS 8
#endif
#include "elementwise.glsl"
#include "math.glsl"
#include "half.glsl"

FUSED_BUFFERS

void main() {
  FUSED_DECLARE
  uint idx[MAX_OPS];
  BEGIN(NOPS);
  [[unroll]] for (uint k = 0; k < ELEMS; k++) { // every load before any store
    if (PRESENT(k)) {
      LOCATE(k, NOPS, idx);
      FUSED_LOAD(k)
    }
  }
  [[unroll]] for (uint k = 0; k < ELEMS; k++) {
    if (PRESENT(k)) {
      LOCATE(k, NOPS, idx);
      FUSED_EVAL(k)
    }
  }
}
