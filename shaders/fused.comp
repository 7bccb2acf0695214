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

#ifdef ROWS // the innermost dim along x, the rows along y and z (elementwise.glsl)
#define PRESENT(k) present(k)
#define LOCATE(k) locate_column(k, NOPS, idx)
#else
#define PRESENT(k) (element(k) < p.n)
#define LOCATE(k) locate(element(k), NOPS, idx)
#endif

void main() {
  FUSED_DECLARE
  uint idx[MAX_OPS];
#ifdef ROWS
  locate_row(NOPS);
#endif
  [[unroll]] for (uint k = 0; k < ELEMS; k++) { // every load before any store
    if (PRESENT(k)) {
      LOCATE(k);
      FUSED_LOAD(k)
    }
  }
  [[unroll]] for (uint k = 0; k < ELEMS; k++) {
    if (PRESENT(k)) {
      LOCATE(k);
      FUSED_EVAL(k)
    }
  }
}
