// decode.glsl: a scalar push constant (two words, as csrc's vkt_scalar_bits writes it) as the compute type
// C, for the generated and elementwise kernels. The host defines C and one of C_FLOAT, C_FLOAT64, C_INT,
// C_INT64.
#ifndef VKT_DECODE_GLSL
#define VKT_DECODE_GLSL

#if defined(C_FLOAT64)
C decode(uvec2 v) { return packDouble2x32(v); }
#elif defined(C_INT64)
C decode(uvec2 v) { return int64_t(pack64(v)); }
#elif defined(C_FLOAT)
C decode(uvec2 v) { return uintBitsToFloat(v.x); }
#else
C decode(uvec2 v) { return int(v.x); }
#endif

#endif
