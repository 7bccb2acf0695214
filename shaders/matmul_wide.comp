#version 450
// matmul_wide.comp: the float32 path for large products. A workgroup computes a 128 x 128 tile of
// out in 16-deep slices; each invocation keeps an 8 x 8 block in registers, made of rows
// {4ty..4ty+3, 64+4ty..} and columns {4tx.., 64+4tx..}, so it reads shared memory as vec4s that
// neighbouring invocations take from neighbouring banks. The next slice is loaded from memory into
// registers while this one is multiplied (one shared buffer, two barriers a slice). Operands are
// read through their strides; A_K_FAST / B_N_FAST say in which direction loads are contiguous, and
// VEC4_A / VEC4_B that the operand is dense that way with 16-byte aligned rows, so it moves as vec4s.
#include "matmul.glsl"

#if BM != 128 || BN != 128 || BK != 16 || TM != 8 || TN != 8
#error "matmul_wide.comp computes 128 x 128 tiles, 16 deep, 8 x 8 per invocation"
#endif
#define BLOCK 2 // slices summed apart before joining the total: error near (32 + K / 32) ulps

layout(std430, binding = 1) readonly buffer A4 { vec4 a4_[]; };
layout(std430, binding = 2) readonly buffer B4 { vec4 b4_[]; };

// as[k][m / 4][m % 4] = a[m0 + m, k0 + k]; rows padded by a vec4 so that the four stores of a vec4 along k
// fall in different banks
shared vec4 as[BK][BM / 4 + 1];
shared vec4 bs[BK][BN / 4 + 1];

// A slice is 128 x 16 elements of each operand: 8 per invocation, as two vec4s, each four elements
// along the fast direction (with VEC4_*) or four rows/columns apart along the other.
struct Slice {
  vec4 a[2], b[2];
};

// Where invocation id's e-th vec4 of a slice lies: (row or column of the tile, k), for an operand
// whose fast direction is k (kfast) or the tile's side.
uvec2 spot(uint id, uint e, bool kfast) {
  return kfast ? uvec2(id / 4 + 64 * e, (id % 4) * 4) : uvec2(id % 32 * 4, id / 32 + 8 * e);
}

vec4 load_a(Batch bt, uint m0, uint k0, uint e) {
#ifdef A_K_FAST
  uvec2 s = spot(gl_LocalInvocationID.x, e, true);
  uint gm = m0 + s.x, gk = k0 + s.y;
#ifdef VEC4_A
  return gm < p.M && gk < p.K ? a4_[(bt.a0 + gm * p.stride[0] + gk) / 4] : vec4(0);
#else
  vec4 v;
  [[unroll]] for (uint c = 0; c < 4; c++)
    v[c] = gm < p.M && gk + c < p.K ? float(a_[bt.a0 + gm * p.stride[0] + (gk + c) * p.stride[1]]) : 0.0;
  return v;
#endif
#else
  uvec2 s = spot(gl_LocalInvocationID.x, e, false);
  uint gm = m0 + s.x, gk = k0 + s.y;
#ifdef VEC4_A
  return gm < p.M && gk < p.K ? a4_[(bt.a0 + gm + gk * p.stride[1]) / 4] : vec4(0);
#else
  vec4 v;
  [[unroll]] for (uint c = 0; c < 4; c++)
    v[c] = gm + c < p.M && gk < p.K ? float(a_[bt.a0 + (gm + c) * p.stride[0] + gk * p.stride[1]]) : 0.0;
  return v;
#endif
#endif
}

vec4 load_b(Batch bt, uint n0, uint k0, uint e) {
#ifdef B_N_FAST
  uvec2 s = spot(gl_LocalInvocationID.x, e, false);
  uint gn = n0 + s.x, gk = k0 + s.y;
#ifdef VEC4_B
  return gn < p.N && gk < p.K ? b4_[(bt.b0 + gk * p.stride[2] + gn) / 4] : vec4(0);
#else
  vec4 v;
  [[unroll]] for (uint c = 0; c < 4; c++)
    v[c] = gn + c < p.N && gk < p.K ? float(b_[bt.b0 + gk * p.stride[2] + (gn + c) * p.stride[3]]) : 0.0;
  return v;
#endif
#else
  uvec2 s = spot(gl_LocalInvocationID.x, e, true);
  uint gn = n0 + s.x, gk = k0 + s.y;
#ifdef VEC4_B
  return gn < p.N && gk < p.K ? b4_[(bt.b0 + gk + gn * p.stride[3]) / 4] : vec4(0);
#else
  vec4 v;
  [[unroll]] for (uint c = 0; c < 4; c++)
    v[c] = gn < p.N && gk + c < p.K ? float(b_[bt.b0 + (gk + c) * p.stride[2] + gn * p.stride[3]]) : 0.0;
  return v;
#endif
#endif
}

void load(inout Slice s, Batch bt, uint m0, uint n0, uint k0) {
  [[unroll]] for (uint e = 0; e < 2; e++) {
    s.a[e] = load_a(bt, m0, k0, e);
    s.b[e] = load_b(bt, n0, k0, e);
  }
}

// Into shared memory: a vec4 along the tile's side is one store; one along k is four.
void put(Slice s) {
  uint id = gl_LocalInvocationID.x;
  [[unroll]] for (uint e = 0; e < 2; e++) {
#ifdef A_K_FAST
    uvec2 sa = spot(id, e, true);
    [[unroll]] for (uint c = 0; c < 4; c++)
      as[sa.y + c][sa.x / 4][sa.x % 4] = s.a[e][c];
#else
    uvec2 sa = spot(id, e, false);
    as[sa.y][sa.x / 4] = s.a[e];
#endif
#ifdef B_N_FAST
    uvec2 sb = spot(id, e, false);
    bs[sb.y][sb.x / 4] = s.b[e];
#else
    uvec2 sb = spot(id, e, true);
    [[unroll]] for (uint c = 0; c < 4; c++)
      bs[sb.y + c][sb.x / 4][sb.x % 4] = s.b[e][c];
#endif
  }
}

void main() {
  uint tx = gl_LocalInvocationID.x % 16, ty = gl_LocalInvocationID.x / 16;
  uint m0 = gl_WorkGroupID.y * BM, n0 = gl_WorkGroupID.x * BN;
  Batch bt = batch_of_workgroup();
  float acc[8][8], part[8][8];
  [[unroll]] for (uint i = 0; i < 8; i++)
    [[unroll]] for (uint j = 0; j < 8; j++)
      acc[i][j] = part[i][j] = 0.0;
  Slice s;
  load(s, bt, m0, n0, 0);
  for (uint k0 = 0, slice = 1; k0 < p.K; k0 += BK, slice++) {
    put(s);
    barrier();
    if (k0 + BK < p.K)
      load(s, bt, m0, n0, k0 + BK);
    [[unroll]] for (uint k = 0; k < BK; k++) {
      vec4 a0 = as[k][ty], a1 = as[k][ty + 16], b0 = bs[k][tx], b1 = bs[k][tx + 16];
      float av[8] = float[8](a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w);
      float bv[8] = float[8](b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w);
      [[unroll]] for (uint i = 0; i < 8; i++)
        [[unroll]] for (uint j = 0; j < 8; j++)
          part[i][j] = fma(av[i], bv[j], part[i][j]);
    }
    if (slice % BLOCK == 0 || k0 + BK >= p.K)
      [[unroll]] for (uint i = 0; i < 8; i++)
        [[unroll]] for (uint j = 0; j < 8; j++) {
          acc[i][j] += part[i][j];
          part[i][j] = 0.0;
        }
    barrier();
  }
  [[unroll]] for (uint i = 0; i < 8; i++) {
    uint gm = m0 + (i < 4 ? 4 * ty + i : 64 + 4 * ty + i - 4);
    [[unroll]] for (uint j = 0; j < 8; j++)
      store(bt, gm, n0 + (j < 4 ? 4 * tx + j : 64 + 4 * tx + j - 4), acc[i][j]);
  }
}
