// half.glsl: rounded_half() for the generated kernels (fused.comp, reduce_fused.glsl, matmul epilogues), which need a
// float16 result's value exactly as memory would give it back.
#ifndef VKT_HALF_GLSL
#define VKT_HALF_GLSL

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

#endif
