#version 450
// matmul_coop.comp: float16 products on tensor cores through VK_NV_cooperative_matrix, accumulating in
// float32 (written for the NV extension, which glslang 12 compiles; the runtime rewrites the SPIR-V into the
// KHR form where the adapter has VK_KHR_cooperative_matrix). A workgroup of 8 subgroups computes a
// 128 x 128 (32 deep a slice) or 128 x 256 (16 deep) tile of out: the slices of a and b are staged in shared
// memory through their strides (zero past the edges), each subgroup multiplies 16 x 16 fragments of a by
// 16 x 8 of b into its 64 x BN / 4 corner, and the sums leave through shared memory a fragment at a time so
// the common epilogue (alpha, bias, relu, bounds) applies. A, B and the sums have distinct fragment types,
// as the KHR form needs. With VEC8 (both operands dense along k and n respectively, rows 16-byte aligned,
// K and N multiples of 8) the slices move as uvec4s of 8 halves through two shared stages, one multiplied
// while the next is stored, and two slices in registers, fetched two slices ahead: one barrier a slice,
// and the loads have two slices' work to arrive in (8-10% faster than one stage and one slice ahead).
//
// The fragments are named variables, not arrays, written out by the macros below: the NVIDIA driver keeps
// arrays of cooperative matrices in local memory, which made this kernel 17 times slower (27 against 460
// TFLOP/s on an H100).
#include "matmul.glsl"
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require

#if BM != 128 || (BN != 128 && BN != 256) || BK % 16 != 0
#error "matmul_coop.comp computes 128 x 128 or 128 x 256 tiles, a multiple of 16 deep"
#endif
#define TI 4       // fragments down a subgroup's corner: 2 x 4 subgroups of 64 x BN / 4
#define TJ (BN / 32) // fragments across it
#define FM 16 // fragment rows
#define FN 8  // fragment columns
#define FK 16 // fragment depth
#define FRAG_A fcoopmatNV<16, gl_ScopeSubgroup, FM, FK>
#define FRAG_B fcoopmatNV<16, gl_ScopeSubgroup, FK, FN>
#define SUM fcoopmatNV<32, gl_ScopeSubgroup, FM, FN>

// Shared rows are padded by 8 halves so the 8 rows a fragment load reads at once fall in different
// banks (unpadded, b's 256-byte rows would all start in bank 0).
#define SA (BK + 8) // halves per row of sa
#define SB (BN + 8) // halves per row of sb

#ifdef VEC8
layout(std430, binding = A_BINDING) readonly buffer A8 { uvec4 a8_[]; };
layout(std430, binding = B_BINDING) readonly buffer B8 { uvec4 b8_[]; };
#define UNIT 8 // halves per element of the shared arrays
shared uvec4 sa[2 * BM * SA / UNIT]; // two stages of the layout below
shared uvec4 sb[2 * BK * SB / UNIT];
#else
#define UNIT 1
shared float16_t sa[BM * SA]; // sa[m * SA + k] = a[m0 + m, k0 + k]
shared float16_t sb[BK * SB]; // sb[k * SB + n] = b[k0 + k, n0 + n]
#endif
shared float sc[8 * FM * FN];

#ifdef VEC8
// A slice of a is BM x BK halves, one of b BK x BN, moved as uvec4s: NA and NB per invocation.
#define NA (BM * BK / 8 / LOCAL_SIZE)
#define NB (BK * BN / 8 / LOCAL_SIZE)
struct Slice {
  uvec4 a[NA], b[NB];
};

void fetch(inout Slice s, Batch bt, uint m0, uint n0, uint k0) {
  [[unroll]] for (uint e = 0; e < NA; e++) {
    uint i = gl_LocalInvocationID.x + e * LOCAL_SIZE;
    uint m = i / (BK / 8), k = (i % (BK / 8)) * 8, gm = m0 + m, gk = k0 + k;
    s.a[e] = gm < p.M && gk < p.K ? a8_[(bt.a0 + gm * p.stride[0] + gk) / 8] : uvec4(0);
  }
  [[unroll]] for (uint e = 0; e < NB; e++) {
    uint i = gl_LocalInvocationID.x + e * LOCAL_SIZE;
    uint k = i / (BN / 8), n = (i % (BN / 8)) * 8, gk = k0 + k, gn = n0 + n;
    s.b[e] = gk < p.K && gn < p.N ? b8_[(bt.b0 + gk * p.stride[2] + gn) / 8] : uvec4(0);
  }
}

void put(Slice s, uint stage) {
  [[unroll]] for (uint e = 0; e < NA; e++) {
    uint i = gl_LocalInvocationID.x + e * LOCAL_SIZE;
    sa[stage * (BM * SA / 8) + (i / (BK / 8) * SA + (i % (BK / 8)) * 8) / 8] = s.a[e];
  }
  [[unroll]] for (uint e = 0; e < NB; e++) {
    uint i = gl_LocalInvocationID.x + e * LOCAL_SIZE;
    sb[stage * (BK * SB / 8) + (i / (BN / 8) * SB + (i % (BN / 8)) * 8) / 8] = s.b[e];
  }
}
#else
// Element by element, through the strides, into the one stage.
void stage_slice(Batch bt, uint m0, uint n0, uint k0) {
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

// The subgroup's TI x TJ sums c<i><j>, and the fragments a<i>, b<j> of one 16-deep step.
#define EACH_I(X) X(0) X(1) X(2) X(3)
#if TJ == 4
#define EACH_J(X) X(0) X(1) X(2) X(3)
#define ROW(X, i) X(i, 0) X(i, 1) X(i, 2) X(i, 3)
#else
#define EACH_J(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#define ROW(X, i) X(i, 0) X(i, 1) X(i, 2) X(i, 3) X(i, 4) X(i, 5) X(i, 6) X(i, 7)
#endif
#define EACH(X) ROW(X, 0) ROW(X, 1) ROW(X, 2) ROW(X, 3)
#define ZERO(i, j) SUM c##i##j = SUM(0.0);
#define LOAD_A(i)                                                                                              \
  FRAG_A a##i;                                                                                                 \
  coopMatLoadNV(a##i, sa, (stage * BM * SA + (wm + i * FM) * SA + kk) / UNIT, SA / UNIT, false);
#define LOAD_B(j)                                                                                              \
  FRAG_B b##j;                                                                                                 \
  coopMatLoadNV(b##j, sb, (stage * BK * SB + kk * SB + wn + j * FN) / UNIT, SB / UNIT, false);
#define MULADD(i, j) c##i##j = coopMatMulAddNV(a##i, b##j, c##i##j);
#define MULTIPLY()                                                                                             \
  [[unroll]] for (uint kk = 0; kk < BK; kk += FK) {                                                            \
    EACH_I(LOAD_A)                                                                                             \
    EACH_J(LOAD_B)                                                                                             \
    EACH(MULADD)                                                                                               \
  }
#define STORE(i, j)                                                                                            \
  coopMatStoreNV(c##i##j, sc, slot, FN, false);                                                                \
  subgroupMemoryBarrierShared();                                                                               \
  subgroupBarrier();                                                                                           \
  for (uint e = gl_SubgroupInvocationID; e < FM * FN; e += gl_SubgroupSize)                                    \
    store(bt, m0 + wm + i * FM + e / FN, n0 + wn + j * FN + e % FN, ACC(sc[slot + e]));                        \
  subgroupBarrier();

void main() {
  uint warp = gl_SubgroupID, wm = (warp / 4) * 64, wn = (warp % 4) * (BN / 4); // this subgroup's corner
  uint m0 = gl_WorkGroupID.y * BM, n0 = gl_WorkGroupID.x * BN;
  Batch bt = batch_of_workgroup();
  EACH(ZERO)
  uint stage = 0; // the shared stage being multiplied
#ifdef VEC8
  Slice s, s1; // slices k0 + 2 BK (s) and k0 + BK (s1) on their way while stage 0 holds k0
  fetch(s, bt, m0, n0, 0);
  put(s, 0);
  if (BK < p.K)
    fetch(s1, bt, m0, n0, BK);
  barrier();
  for (uint k0 = 0; k0 < p.K; k0 += 2 * BK) {
    if (k0 + 2 * BK < p.K)
      fetch(s, bt, m0, n0, k0 + 2 * BK);
    stage = 0;
    MULTIPLY()
    if (k0 + BK < p.K)
      put(s1, 1);
    barrier();
    if (k0 + BK >= p.K)
      break;
    if (k0 + 3 * BK < p.K)
      fetch(s1, bt, m0, n0, k0 + 3 * BK);
    stage = 1;
    MULTIPLY()
    if (k0 + 2 * BK < p.K)
      put(s, 0);
    barrier();
  }
#else
  for (uint k0 = 0; k0 < p.K; k0 += BK) {
    stage_slice(bt, m0, n0, k0);
    barrier();
    MULTIPLY()
    barrier();
  }
#endif
  uint slot = warp * FM * FN;
  EACH(STORE)
}
