// matmul.glsl: what the matmul shaders share: push constants, buffers, the batch offsets of a
// workgroup's matrix, and the epilogue (alpha, bias, relu, the store). The host defines TO, TA, TB, TC
// (storage types), ACC (float, double with ACC_FLOAT64, int with ACC_INT, int64_t with ACC_INT64), BIAS
// and RELU. Integer sums wrap, as PyTorch's CPU ones do.
// With EPILOGUE the store is a fused elementwise expression over the product instead (csrc/ops/fuse.c
// generates it with fused.comp's macros: OPi, STi, FUSED_BUFFERS, FUSED_DECLARE, FUSED_LOAD(k),
// FUSED_EVAL(k)): NOUT results written, dense with the product's shape; NREAD tensors read through their
// strides; the product's own value (MM_VALUE(k), rounded through TO as a stored product would be) the
// last operand, written too where it is kept; a and b bound after them, at A_BINDING and B_BINDING.
#ifndef VKT_MATMUL_GLSL
#define VKT_MATMUL_GLSL

#include "common.glsl"
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : enable

#ifndef EPILOGUE
layout(push_constant) uniform Push {
  uvec2 alpha, beta; // bits of ACC
  uint M, N, K;
  uint z0;           // the first matrix of this dispatch, counted over batch[]
  uint offset[4];    // elements: out, a, b, bias
  uint stride[6];    // elements: rows and columns of a, of b, of bias
  uint batch[2];     // the batch dims the shader walks: outer, inner
  uint bstride[6];   // elements: a, b, bias along batch[0] and batch[1]
} p;

#define A_BINDING 1
#define B_BINDING 2
layout(std430, binding = 0) restrict writeonly buffer Out { TO out_[]; };
#else
// Without beta and the bias's fields (lavapipe allows 128 bytes), with the expression's tensors and scalars.
layout(push_constant) uniform Push {
  uint alpha;        // bits of float
  uint M, N, K;
  uint z0;
  uint offset[3];    // elements: the results, a, b
  uint stride[4];    // elements: rows and columns of a, of b
  uint batch[2];
  uint bstride[4];   // elements: a, b along batch[0] and batch[1]
#if NREAD > 0
  uint read[5 * NREAD]; // elements, per tensor read: offset, row and column stride, stride along batch[0], [1]
#endif
  uvec2 param[NPARAMS]; // the expression's scalars, as bits of its compute type
} p;
#endif
layout(std430, binding = A_BINDING) readonly buffer A { TA a_[]; };
layout(std430, binding = B_BINDING) readonly buffer B { TB b_[]; };
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

// The first elements of this workgroup's matrices of a, b and bias, and its index z (zo, zi along batch[]).
struct Batch {
  uint z, zo, zi, a0, b0, c0;
};

// Matrix z (counted over batch[]).
Batch batch_of(uint z) {
  uint zo = z / p.batch[1], zi = z % p.batch[1];
#ifdef EPILOGUE
  uint c0 = 0;
#else
  uint c0 = p.offset[3] + zo * p.bstride[4] + zi * p.bstride[5];
#endif
  return Batch(z, zo, zi, p.offset[1] + zo * p.bstride[0] + zi * p.bstride[1],
               p.offset[2] + zo * p.bstride[2] + zi * p.bstride[3], c0);
}

Batch batch_of_workgroup() { return batch_of(p.z0 + gl_WorkGroupID.z); }

// Whether v is NaN, read from its bits: where a shader does not ask to preserve NaNs (Vulkan's
// SignedZeroInfNanPreserve), a driver may take v != v as false for a computed v, and an H100's did, so
// relu's epilogue turned NaN sums into 0.
bool is_nan(float v) { return (floatBitsToUint(v) & 0x7fffffffu) > 0x7f800000u; }
// relu(NaN) is NaN and relu(-0.0) is -0.0, as in PyTorch (max(v, 0.0) may give 0.0)
float relu(float v) { return is_nan(v) ? v : v < 0.0 ? 0.0 : v; }
#ifdef ACC_FLOAT64
bool is_nan(double v) {
  uvec2 w = unpackDouble2x32(v);
  return (w.y & 0x7fffffffu) > 0x7ff00000u || ((w.y & 0x7fffffffu) == 0x7ff00000u && w.x != 0u);
}
double relu(double v) { return is_nan(v) ? v : v < 0.0LF ? 0.0LF : v; }
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

#ifdef EPILOGUE
#include "half.glsl"
#include "math.glsl"
#ifndef ELEMS // elements a shader's epilogue takes at once
#define ELEMS 1
#endif
FUSED_BUFFERS

// Each operand's index of element (0, gn) and its step from one row to the next: the results share the product's
// dense layout, which a kept product (the last operand) has too.
void column_base(Batch bt, uint gn, out uint base[MAX_OPS], out uint step[MAX_OPS]) {
  [[unroll]] for (uint t = 0; t < MAX_OPS; t++)
    base[t] = 0, step[t] = 0;
  uint o = p.offset[0] + bt.z * p.M * p.N + gn;
  [[unroll]] for (uint k = 0; k < NOUT; k++)
    base[k] = o, step[k] = p.N;
#if NREAD > 0
  [[unroll]] for (uint j = 0; j < NREAD; j++)
    base[NOUT + j] = p.read[5 * j] + gn * p.read[5 * j + 2] + bt.zo * p.read[5 * j + 3] + bt.zi * p.read[5 * j + 4],
    step[NOUT + j] = p.read[5 * j + 1];
#endif
  base[MAX_OPS - 1] = o, step[MAX_OPS - 1] = p.N;
}

// Each operand's index of element (gm, gn).
void locate(Batch bt, uint gm, uint gn, out uint idx[MAX_OPS]) {
  uint base[MAX_OPS], step[MAX_OPS];
  column_base(bt, gn, base, step);
  [[unroll]] for (uint t = 0; t < MAX_OPS; t++)
    idx[t] = base[t] + gm * step[t];
}

// The product as stored, alpha * sum (alpha is 1: the unfused kernel's multiply, kept for the same bits).
// MM_VALUE(k) is element k's, of `sum` here; a shader that takes ELEMS at once redefines it.
ACC product(ACC sum) { return uintBitsToFloat(p.alpha) * sum; }
#define MM_VALUE(k) TO(product(sum))

// The expression at out[gm, gn], inside the matrix only (c is ignored: no bias).
void store_with(Batch bt, uint gm, uint gn, ACC sum, ACC c) {
  if (gm < p.M && gn < p.N) {
    FUSED_DECLARE
    uint idx[MAX_OPS];
    const uint k = 0;
    locate(bt, gm, gn, idx);
    FUSED_LOAD(k)
    FUSED_EVAL(k)
  }
}
#else
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
#endif

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
