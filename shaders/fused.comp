#version 450
// fused.comp: a pending expression of elementwise ops as one kernel (csrc/ops/fuse.c generates it). The
// host defines, besides elementwise.glsl's C and CONTIGUOUS: NOPS operands (MAX_OPS), the results written
// first, then the tensors read; NPARAMS scalars; OPi(x, [y,] P0, P1) and STi(v) per op (its GLSL and the
// conversion to its result dtype); FUSED_BUFFERS (the bindings), FUSED_DECLARE, FUSED_LOAD(k) (each
// tensor's element) and FUSED_EVAL(k) (each op's value, rounded through its dtype as a stored result
// would be, then the stores). Values are `precise`: no contraction across ops, so results equal the
// unfused kernels', which are `precise` too.
#include "elementwise.glsl"
#include "math.glsl"

FUSED_BUFFERS

// A float16 result as the next op reads it back from memory. NVIDIA's compiler (driver 580) treats
// float(float16_t(v)) as v, keeping the conversion only for its NaN test, so a float16 chain would round
// once at its end instead of after each op; decoding the bits in integer arithmetic keeps every rounding.
float rounded_half(float16_t h) {
  uint bits = packFloat2x16(f16vec2(h, float16_t(0)));
  uint sign = (bits & 0x8000u) << 16, e = (bits >> 10) & 0x1fu, m = bits & 0x3ffu;
  if (e == 31u) // inf, NaN
    return uintBitsToFloat(sign | 0x7f800000u | (m << 13));
  if (e == 0u) // zero and subnormals: m * 2^-24, exact in float32
    return uintBitsToFloat(sign | floatBitsToUint(float(m) * (1.0 / 16777216.0)));
  return uintBitsToFloat(sign | ((e + 112u) << 23) | (m << 13));
}

void main() {
  FUSED_DECLARE
  uint idx[MAX_OPS];
  [[unroll]] for (uint k = 0; k < ELEMS; k++) { // every load before any store
    uint i = element(k);
    if (i < p.n) {
      locate(i, NOPS, idx);
      FUSED_LOAD(k)
    }
  }
  [[unroll]] for (uint k = 0; k < ELEMS; k++) {
    uint i = element(k);
    if (i < p.n) {
      locate(i, NOPS, idx);
      FUSED_EVAL(k)
    }
  }
}
