#version 450
// matmul.comp: out = alpha * (a @ b) + beta * bias, then relu, for one matrix of a batch per
// gl_WorkGroupID.z. A workgroup computes a BM x BN tile of out, staging BK-deep slices of a and b in
// shared memory, the next one loaded into registers while this one is multiplied; each invocation keeps
// a TM x TN block of sums in registers. Operands are read through their strides (batch strides are 0
// where a dim is broadcast), so transposes, slices and expands cost no copy. The host defines TO, TA, TB,
// TC (storage types), ACC (float, or double with ACC_FLOAT64), the tile shape BM, BN, BK, TM, TN, BIAS,
// RELU, and A_K_FAST / B_N_FAST when k (of a) / n (of b) has the smaller stride: the tile loads then walk
// that way, so neighbouring invocations read neighbouring elements.
#include "matmul.glsl"

#define WM (BM / TM) // invocations down a tile
#define WN (BN / TN) // invocations across a tile
#if WM * WN != LOCAL_SIZE
#error "a tile must give each invocation of the workgroup one TM x TN block"
#endif

#define NA (BM * BK / LOCAL_SIZE) // elements of a's slice each invocation stages
#define NB (BK * BN / LOCAL_SIZE) // ... of b's
#if NA * LOCAL_SIZE != BM * BK || NB * LOCAL_SIZE != BK * BN
#error "a slice must give each invocation of the workgroup the same number of elements"
#endif

shared ACC as[BK][BM];
shared ACC bs[BK][BN];

// An invocation's share of a slice, held in registers from its load until the slice before it is done.
struct Slice {
  ACC a[NA], b[NB];
};

// Where element e of an invocation's share lies in the slice: (row or column of the tile, k).
uvec2 a_spot(uint e) {
  uint i = gl_LocalInvocationID.x + e * LOCAL_SIZE;
#ifdef A_K_FAST
  return uvec2(i / BK, i % BK);
#else
  return uvec2(i % BM, i / BM);
#endif
}

uvec2 b_spot(uint e) {
  uint i = gl_LocalInvocationID.x + e * LOCAL_SIZE;
#ifdef B_N_FAST
  return uvec2(i % BN, i / BN);
#else
  return uvec2(i / BK, i % BK);
#endif
}

// Loads a[m0.., k0..] and b[k0.., n0..], zero past the edges.
Slice load(uint a0, uint b0, uint m0, uint n0, uint k0) {
  Slice s;
  for (uint e = 0; e < NA; e++) {
    uvec2 at = a_spot(e);
    uint gm = m0 + at.x, gk = k0 + at.y;
    s.a[e] = gm < p.M && gk < p.K ? ACC(a_[a0 + gm * p.stride[0] + gk * p.stride[1]]) : ACC(0);
  }
  for (uint e = 0; e < NB; e++) {
    uvec2 at = b_spot(e);
    uint gn = n0 + at.x, gk = k0 + at.y;
    s.b[e] = gk < p.K && gn < p.N ? ACC(b_[b0 + gk * p.stride[2] + gn * p.stride[3]]) : ACC(0);
  }
  return s;
}

void put(Slice s) {
  for (uint e = 0; e < NA; e++) {
    uvec2 at = a_spot(e);
    as[at.y][at.x] = s.a[e];
  }
  for (uint e = 0; e < NB; e++) {
    uvec2 at = b_spot(e);
    bs[at.y][at.x] = s.b[e];
  }
}

void main() {
  uint tx = gl_LocalInvocationID.x % WN, ty = gl_LocalInvocationID.x / WN;
  uint m0 = gl_WorkGroupID.y * BM, n0 = gl_WorkGroupID.x * BN;
  Batch bt = batch_of_workgroup();
  ACC acc[TM][TN];
  for (uint i = 0; i < TM; i++)
    for (uint j = 0; j < TN; j++)
      acc[i][j] = ACC(0);
  Slice s = load(bt.a0, bt.b0, m0, n0, 0);
  for (uint k0 = 0; k0 < p.K; k0 += BK) {
    put(s);
    barrier();
    if (k0 + BK < p.K) // the next slice is on its way while this one is multiplied
      s = load(bt.a0, bt.b0, m0, n0, k0 + BK);
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
  for (uint i = 0; i < TM; i++)
    for (uint j = 0; j < TN; j++)
      store(bt, m0 + ty + i * WM, n0 + tx + j * WN, acc[i][j]);
}
