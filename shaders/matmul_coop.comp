#version 450
// matmul_coop.comp: float16 products on tensor cores through VK_NV_cooperative_matrix, accumulating in
// float32. A workgroup of 8 subgroups computes a 128 x 128 tile of out, 32 deep a step: the slices of
// a and b are staged in shared memory through their strides (zero past the edges), each subgroup
// multiplies 16 x 16 fragments into its 64 x 32 corner, and the sums leave through shared memory a
// fragment at a time so the common epilogue (alpha, bias, relu, bounds) applies. With VEC8 (both
// operands dense along k and n respectively, rows 16-byte aligned, K and N multiples of 8) the
// slices move as uvec4s of 8 halves.
#include "matmul.glsl"
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require

#if BM != 128 || BN != 128 || BK != 32
#error "matmul_coop.comp computes 128 x 128 tiles, 32 deep"
#endif
#define FRAG 16
#define HALF fcoopmatNV<16, gl_ScopeSubgroup, FRAG, FRAG>
#define SUM fcoopmatNV<32, gl_ScopeSubgroup, FRAG, FRAG>

// Shared rows are padded by 8 halves so the 8 rows a fragment load reads at once fall in different
// banks (unpadded, b's 256-byte rows would all start in bank 0).
#define SA (BK + 8) // halves per row of sa
#define SB (BN + 8) // halves per row of sb

#ifdef VEC8
layout(std430, binding = 1) readonly buffer A8 { uvec4 a8_[]; };
layout(std430, binding = 2) readonly buffer B8 { uvec4 b8_[]; };
#define UNIT 8 // halves per element of the shared arrays
shared uvec4 sa[BM * SA / UNIT];
shared uvec4 sb[BK * SB / UNIT];
#else
#define UNIT 1
shared float16_t sa[BM * SA]; // sa[m * SA + k] = a[m0 + m, k0 + k]
shared float16_t sb[BK * SB]; // sb[k * SB + n] = b[k0 + k, n0 + n]
#endif
shared float sc[8 * FRAG * FRAG];

#ifdef VEC8
void stage(Batch bt, uint m0, uint n0, uint k0) {
  for (uint i = gl_LocalInvocationID.x; i < BM * BK / 8; i += LOCAL_SIZE) {
    uint m = i / (BK / 8), k = (i % (BK / 8)) * 8, gm = m0 + m, gk = k0 + k;
    sa[(m * SA + k) / 8] = gm < p.M && gk < p.K ? a8_[(bt.a0 + gm * p.stride[0] + gk) / 8] : uvec4(0);
  }
  for (uint i = gl_LocalInvocationID.x; i < BK * BN / 8; i += LOCAL_SIZE) {
    uint k = i / (BN / 8), n = (i % (BN / 8)) * 8, gk = k0 + k, gn = n0 + n;
    sb[(k * SB + n) / 8] = gk < p.K && gn < p.N ? b8_[(bt.b0 + gk * p.stride[2] + gn) / 8] : uvec4(0);
  }
}
#else
void stage(Batch bt, uint m0, uint n0, uint k0) {
  for (uint i = gl_LocalInvocationID.x; i < BM * BK; i += LOCAL_SIZE) {
#ifdef A_K_FAST
    uint m = i / BK, k = i % BK;
#else
    uint m = i % BM, k = i / BM;
#endif
    uint gm = m0 + m, gk = k0 + k;
    sa[m * SA + k] = gm < p.M && gk < p.K ? float16_t(a_[bt.a0 + gm * p.stride[0] + gk * p.stride[1]])
                                          : float16_t(0);
  }
  for (uint i = gl_LocalInvocationID.x; i < BK * BN; i += LOCAL_SIZE) {
#ifdef B_N_FAST
    uint k = i / BN, n = i % BN;
#else
    uint k = i % BK, n = i / BK;
#endif
    uint gk = k0 + k, gn = n0 + n;
    sb[k * SB + n] = gk < p.K && gn < p.N ? float16_t(b_[bt.b0 + gk * p.stride[2] + gn * p.stride[3]])
                                          : float16_t(0);
  }
}
#endif

void main() {
  uint warp = gl_SubgroupID, wm = (warp / 4) * 64, wn = (warp % 4) * 32; // this subgroup's corner
  uint m0 = gl_WorkGroupID.y * BM, n0 = gl_WorkGroupID.x * BN;
  Batch bt = batch_of_workgroup();
  SUM acc[4][2];
  [[unroll]] for (uint i = 0; i < 4; i++)
    [[unroll]] for (uint j = 0; j < 2; j++)
      acc[i][j] = SUM(0.0);
  for (uint k0 = 0; k0 < p.K; k0 += BK) {
    stage(bt, m0, n0, k0);
    barrier();
    [[unroll]] for (uint kk = 0; kk < BK; kk += FRAG) {
      HALF fa[4], fb[2];
      [[unroll]] for (uint i = 0; i < 4; i++)
        coopMatLoadNV(fa[i], sa, ((wm + i * FRAG) * SA + kk) / UNIT, SA / UNIT, false);
      [[unroll]] for (uint j = 0; j < 2; j++)
        coopMatLoadNV(fb[j], sb, (kk * SB + wn + j * FRAG) / UNIT, SB / UNIT, false);
      [[unroll]] for (uint i = 0; i < 4; i++)
        [[unroll]] for (uint j = 0; j < 2; j++)
          acc[i][j] = coopMatMulAddNV(fa[i], fb[j], acc[i][j]);
    }
    barrier();
  }
  uint slot = warp * FRAG * FRAG;
  [[unroll]] for (uint i = 0; i < 4; i++)
    [[unroll]] for (uint j = 0; j < 2; j++) {
      coopMatStoreNV(acc[i][j], sc, slot, FRAG, false);
      subgroupMemoryBarrierShared();
      subgroupBarrier();
      for (uint e = gl_SubgroupInvocationID; e < FRAG * FRAG; e += gl_SubgroupSize)
        store(bt, m0 + wm + i * FRAG + e / FRAG, n0 + wn + j * FRAG + e % FRAG, ACC(sc[slot + e]));
      subgroupBarrier();
    }
}
