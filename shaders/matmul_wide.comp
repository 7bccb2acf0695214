#version 450
// matmul_wide.comp: the float32 path for large products. A workgroup computes a 128 x 128 tile of
// out in 16-deep slices; each invocation keeps an 8 x 8 block in registers, made of rows
// {4ty..4ty+3, 64+4ty..} and columns {4tx.., 64+4tx..}, so it reads shared memory as vec4s that
// neighbouring invocations take from neighbouring banks. The next slice is loaded from memory into
// registers while this one is multiplied (one shared buffer, two barriers a slice). Operands are
// read through their strides; A_K_FAST / B_N_FAST pick the direction in which loads are contiguous.
#include "matmul.glsl"

#if BM != 128 || BN != 128 || BK != 16 || TM != 8 || TN != 8
#error "matmul_wide.comp computes 128 x 128 tiles, 16 deep, 8 x 8 per invocation"
#endif
#define BLOCK 2 // slices summed apart before joining the total: error near (32 + K / 32) ulps
#define E 8     // elements of a's slice, and of b's, each invocation loads

shared vec4 as[BK][BM / 4]; // as[k][m / 4][m % 4] = a[m0 + m, k0 + k]
shared vec4 bs[BK][BN / 4];

// Each invocation loads 4 elements of a's slice and 4 of b's, contiguous in memory where the
// operand allows it.
struct Slice {
  float a[E], b[E];
};

void load(inout Slice s, Batch bt, uint m0, uint n0, uint k0) {
  uint id = gl_LocalInvocationID.x;
  [[unroll]] for (uint e = 0; e < E; e++) {
#ifdef A_K_FAST
    uint m = id / 2, k = (id % 2) * 8 + e;
#else
    uint m = (id % 32) * 4 + e % 4, k = id / 32 + 8 * (e / 4);
#endif
    uint gm = m0 + m, gk = k0 + k;
    s.a[e] = gm < p.M && gk < p.K ? float(a_[bt.a0 + gm * p.stride[0] + gk * p.stride[1]]) : 0.0;
#ifdef B_N_FAST
    uint kb = id / 32 + 8 * (e / 4), n = (id % 32) * 4 + e % 4;
#else
    uint kb = (id % 2) * 8 + e, n = id / 2;
#endif
    uint gkb = k0 + kb, gn = n0 + n;
    s.b[e] = gkb < p.K && gn < p.N ? float(b_[bt.b0 + gkb * p.stride[2] + gn * p.stride[3]]) : 0.0;
  }
}

void put(Slice s) {
  uint id = gl_LocalInvocationID.x;
#ifdef A_K_FAST
  [[unroll]] for (uint e = 0; e < E; e++)
    as[(id % 2) * 8 + e][id / 8][(id / 2) % 4] = s.a[e];
#else
  as[id / 32][id % 32] = vec4(s.a[0], s.a[1], s.a[2], s.a[3]);
  as[id / 32 + 8][id % 32] = vec4(s.a[4], s.a[5], s.a[6], s.a[7]);
#endif
#ifdef B_N_FAST
  bs[id / 32][id % 32] = vec4(s.b[0], s.b[1], s.b[2], s.b[3]);
  bs[id / 32 + 8][id % 32] = vec4(s.b[4], s.b[5], s.b[6], s.b[7]);
#else
  [[unroll]] for (uint e = 0; e < E; e++)
    bs[(id % 2) * 8 + e][id / 8][(id / 2) % 4] = s.b[e];
#endif
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
