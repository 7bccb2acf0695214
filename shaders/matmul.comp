#version 450
// matmul.comp: out = alpha * (a @ b) + beta * bias, then relu, for one matrix of a batch per
// gl_WorkGroupID.z. A workgroup computes a BM x BN tile of out, staging BK-deep slices of a and b in
// shared memory; each invocation keeps a TM x TN block of sums in registers. Operands are read through
// their strides (batch strides are 0 where a dim is broadcast), so transposes, slices and expands cost
// no copy. The host defines TO, TA, TB, TC (storage types), ACC (float, or double with ACC_FLOAT64),
// the tile shape BM, BN, BK, TM, TN, BIAS, RELU, and A_K_FAST / B_N_FAST when k (of a) / n (of b) has
// the smaller stride: the tile loads then walk that way, so neighbouring invocations read neighbouring
// elements.
#include "common.glsl"
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : enable

#define WM (BM / TM) // invocations down a tile
#define WN (BN / TN) // invocations across a tile
#if WM * WN != LOCAL_SIZE
#error "a tile must give each invocation of the workgroup one TM x TN block"
#endif

layout(push_constant) uniform Push {
  uvec2 alpha, beta; // bits of ACC
  uint M, N, K;
  uint z0;           // the first matrix of this dispatch, counted over batch[]
  uint offset[4];    // elements: out, a, b, bias
  uint stride[6];    // elements: rows and columns of a, of b, of bias
  uint batch[2];     // the batch dims the shader walks: outer, inner
  uint bstride[6];   // elements: a, b, bias along batch[0] and batch[1]
} p;

layout(std430, binding = 0) writeonly buffer Out { TO out_[]; };
layout(std430, binding = 1) readonly buffer A { TA a_[]; };
layout(std430, binding = 2) readonly buffer B { TB b_[]; };
#ifdef BIAS
layout(std430, binding = 3) readonly buffer Bias { TC c_[]; };
#endif

shared ACC as[BK][BM];
shared ACC bs[BK][BN];

#ifdef ACC_FLOAT64
ACC decode(uvec2 v) { return packDouble2x32(v); }
#else
ACC decode(uvec2 v) { return uintBitsToFloat(v.x); }
#endif

// Stages a[m0.., k0..] and b[k0.., n0..] into shared memory, zero past the edges.
void stage(uint a0, uint b0, uint m0, uint n0, uint k0) {
  for (uint i = gl_LocalInvocationID.x; i < BM * BK; i += LOCAL_SIZE) {
#ifdef A_K_FAST
    uint m = i / BK, k = i % BK;
#else
    uint m = i % BM, k = i / BM;
#endif
    uint gm = m0 + m, gk = k0 + k;
    as[k][m] = gm < p.M && gk < p.K ? ACC(a_[a0 + gm * p.stride[0] + gk * p.stride[1]]) : ACC(0);
  }
  for (uint i = gl_LocalInvocationID.x; i < BK * BN; i += LOCAL_SIZE) {
#ifdef B_N_FAST
    uint k = i / BN, n = i % BN;
#else
    uint k = i % BK, n = i / BK;
#endif
    uint gk = k0 + k, gn = n0 + n;
    bs[k][n] = gk < p.K && gn < p.N ? ACC(b_[b0 + gk * p.stride[2] + gn * p.stride[3]]) : ACC(0);
  }
}

void main() {
  uint tx = gl_LocalInvocationID.x % WN, ty = gl_LocalInvocationID.x / WN;
  uint m0 = gl_WorkGroupID.y * BM, n0 = gl_WorkGroupID.x * BN;
  uint z = p.z0 + gl_WorkGroupID.z, zo = z / p.batch[1], zi = z % p.batch[1];
  uint a0 = p.offset[1] + zo * p.bstride[0] + zi * p.bstride[1];
  uint b0 = p.offset[2] + zo * p.bstride[2] + zi * p.bstride[3];
  ACC acc[TM][TN];
  for (uint i = 0; i < TM; i++)
    for (uint j = 0; j < TN; j++)
      acc[i][j] = ACC(0);
  for (uint k0 = 0; k0 < p.K; k0 += BK) {
    stage(a0, b0, m0, n0, k0);
    barrier();
    // Each slice sums apart before joining acc: blocked summation keeps the rounding error near
    // (BK + K / BK) ulps rather than K.
    ACC part[TM][TN];
    for (uint i = 0; i < TM; i++)
      for (uint j = 0; j < TN; j++)
        part[i][j] = ACC(0);
    for (uint k = 0; k < BK; k++) {
      ACC av[TM], bv[TN];
      for (uint i = 0; i < TM; i++)
        av[i] = as[k][ty + i * WM];
      for (uint j = 0; j < TN; j++)
        bv[j] = bs[k][tx + j * WN];
      for (uint i = 0; i < TM; i++)
        for (uint j = 0; j < TN; j++)
          part[i][j] += av[i] * bv[j];
    }
    for (uint i = 0; i < TM; i++)
      for (uint j = 0; j < TN; j++)
        acc[i][j] += part[i][j];
    barrier();
  }

  ACC alpha = decode(p.alpha);
#ifdef BIAS
  ACC beta = decode(p.beta);
  uint c0 = p.offset[3] + zo * p.bstride[4] + zi * p.bstride[5];
#endif
  for (uint i = 0; i < TM; i++) {
    uint gm = m0 + ty + i * WM;
    for (uint j = 0; j < TN && gm < p.M; j++) {
      uint gn = n0 + tx + j * WN;
      if (gn >= p.N)
        break;
      ACC v = alpha * acc[i][j];
#ifdef BIAS
      v += beta * ACC(c_[c0 + gm * p.stride[4] + gn * p.stride[5]]);
#endif
#ifdef RELU
      v = v != v ? v : max(v, ACC(0));
#endif
      out_[p.offset[0] + (z * p.M + gm) * p.N + gn] = TO(v);
    }
  }
}
