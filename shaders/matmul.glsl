// matmul.glsl: what the matmul shaders share: push constants, buffers, the batch offsets of a
// workgroup's matrix, and the epilogue (alpha, bias, relu, the store). The host defines TO, TA, TB, TC
// (storage types), ACC (float, double with ACC_FLOAT64, int with ACC_INT, int64_t with ACC_INT64), BIAS
// and RELU. Integer sums wrap, as PyTorch's CPU ones do.
#ifndef VKT_MATMUL_GLSL
#define VKT_MATMUL_GLSL

#include "common.glsl"
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : enable

layout(push_constant) uniform Push {
  uvec2 alpha, beta; // bits of ACC
  uint M, N, K;
  uint z0;           // the first matrix of this dispatch, counted over batch[]
  uint offset[4];    // elements: out, a, b, bias
  uint stride[6];    // elements: rows and columns of a, of b, of bias
  uint batch[2];     // the batch dims the shader walks: outer, inner
  uint bstride[6];   // elements: a, b, bias along batch[0] and batch[1]
} p;

layout(std430, binding = 0) restrict writeonly buffer Out { TO out_[]; };
layout(std430, binding = 1) readonly buffer A { TA a_[]; };
layout(std430, binding = 2) readonly buffer B { TB b_[]; };
#ifdef BIAS
layout(std430, binding = 3) restrict readonly buffer Bias { TC c_[]; };
#endif

#if defined(ACC_FLOAT64)
ACC decode(uvec2 v) { return packDouble2x32(v); }
#elif defined(ACC_INT64)
ACC decode(uvec2 v) { return int64_t(uint64_t(v.y) << 32 | uint64_t(v.x)); }
#elif defined(ACC_INT)
ACC decode(uvec2 v) { return int(v.x); }
#else
ACC decode(uvec2 v) { return uintBitsToFloat(v.x); }
#endif

// The first elements of this workgroup's matrices of a, b and bias, and its index z.
struct Batch {
  uint z, a0, b0, c0;
};

Batch batch_of_workgroup() {
  uint z = p.z0 + gl_WorkGroupID.z, zo = z / p.batch[1], zi = z % p.batch[1];
  return Batch(z, p.offset[1] + zo * p.bstride[0] + zi * p.bstride[1],
               p.offset[2] + zo * p.bstride[2] + zi * p.bstride[3],
               p.offset[3] + zo * p.bstride[4] + zi * p.bstride[5]);
}

// Whether v is NaN, read from its bits: where a shader does not ask to preserve NaNs (Vulkan's
// SignedZeroInfNanPreserve), a driver may take v != v as false for a computed v, and an H100's did, so
// relu's epilogue turned NaN sums into 0.
bool is_nan(float v) { return (floatBitsToUint(v) & 0x7fffffffu) > 0x7f800000u; }
float relu(float v) { return is_nan(v) ? v : max(v, 0.0); } // relu(NaN) is NaN, as in PyTorch
#ifdef ACC_FLOAT64
bool is_nan(double v) {
  uvec2 w = unpackDouble2x32(v);
  return (w.y & 0x7fffffffu) > 0x7ff00000u || ((w.y & 0x7fffffffu) == 0x7ff00000u && w.x != 0u);
}
double relu(double v) { return is_nan(v) ? v : max(v, 0.0LF); }
#endif
int relu(int v) { return max(v, 0); }
#ifdef ACC_INT64
int64_t relu(int64_t v) { return max(v, 0L); }
#endif

// beta * bias[gm, gn], or 0 without a bias or outside the matrix: read apart from the store, so that a
// shader can have many reads in flight before it stores.
ACC bias_at(Batch bt, uint gm, uint gn) {
#ifdef BIAS
  if (gm < p.M && gn < p.N)
    return decode(p.beta) * ACC(c_[bt.c0 + gm * p.stride[4] + gn * p.stride[5]]);
#endif
  return ACC(0);
}

// The epilogue of one sum: relu(alpha * sum + c), c being beta * bias (ignored without a bias).
ACC finish(ACC sum, ACC c) {
  ACC v = decode(p.alpha) * sum;
#ifdef BIAS
  v += c;
#endif
#ifdef RELU
  v = relu(v);
#endif
  return v;
}

// out[gm, gn] = finish(sum, c), inside the matrix only; c is bias_at(bt, gm, gn).
void store_with(Batch bt, uint gm, uint gn, ACC sum, ACC c) {
  if (gm < p.M && gn < p.N)
    out_[p.offset[0] + (bt.z * p.M + gm) * p.N + gn] = TO(finish(sum, c));
}

void store(Batch bt, uint gm, uint gn, ACC sum) { store_with(bt, gm, gn, sum, bias_at(bt, gm, gn)); }

#ifdef VEC4_OUT
// The same for out[gm, gn..gn + 3] as one 16-byte store: the host defines VEC4_OUT where out is float32
// with N and its offset multiples of 4, and VEC4_C where the bias is float32 and moves as vec4s along n.
layout(std430, binding = 0) restrict writeonly buffer Out4 { vec4 out4_[]; };
#ifdef VEC4_C
layout(std430, binding = 3) restrict readonly buffer Bias4 { vec4 c4_[]; };
#endif

vec4 bias4_at(Batch bt, uint gm, uint gn) {
#if defined(VEC4_C)
  if (gm < p.M && gn < p.N)
    return decode(p.beta) * c4_[(bt.c0 + gm * p.stride[4] + gn) / 4];
  return vec4(0);
#else
  return vec4(bias_at(bt, gm, gn), bias_at(bt, gm, gn + 1), bias_at(bt, gm, gn + 2), bias_at(bt, gm, gn + 3));
#endif
}

void store4(Batch bt, uint gm, uint gn, vec4 sum, vec4 c) {
  if (gm < p.M && gn < p.N)
    out4_[(p.offset[0] + (bt.z * p.M + gm) * p.N + gn) / 4] =
        vec4(finish(sum.x, c.x), finish(sum.y, c.y), finish(sum.z, c.z), finish(sum.w, c.w));
}
#endif

#endif
