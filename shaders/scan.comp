#version 450
// scan.comp: cumsum (OP_SUM), cumprod (OP_PROD), cummax (OP_MAX) and cummin (OP_MIN) along one dim, with
// the position of each running extreme for cummax/cummin (INDICES). Three modes, picked by scan.c:
// PER_THREAD, an invocation scans a whole (short) row; BLOCK_REDUCE, a workgroup folds a block of BLOCK
// elements of a row into one total, written to an aux tensor [rows, blocks]; BLOCK_SCAN, a workgroup scans
// a block, starting from SEED (the scanned totals of the blocks before it, from aux) where there is one.
// A long row is reduce, scan of the totals (this shader again), scan: it reads the row twice and writes it
// once, and every output is rounded once from the compute type.
// The host defines TO, TI, A (storage, storage, compute types; A_FLOAT/A_FLOAT64/A_INT/A_INT64), LOAD(x),
// STORE(v), the binding numbers B_IDX (IDX_T indices out), B_IIDX (element positions in, when the input is
// an aux tensor of totals), B_SEED and B_SIDX, and SUBGROUP_SCAN for the block modes of float32 cumsum and
// cumprod where the adapter has subgroup arithmetic: coalesced loads and stores through shared memory and
// subgroup scans, so a pass runs at memory speed. Where the input is a pending expression computed in the load,
// FUSED (scan_fused.glsl) instead of TI: the expression's tensors are bound first, the output after them; it
// computes in its own type C, which may differ from A where its values are exact in C (reduce.glsl says more).
#include "common.glsl"
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : enable
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : enable

#define MAX_RANK 4
#define ITEMS 8u                         // elements an invocation takes in a block
#define BLOCK (ITEMS * uint(LOCAL_SIZE)) // elements a workgroup takes (scan.c's SCAN_BLOCK)

#ifdef FUSED // scan_fused.glsl: the push constants, the expression's buffers, kept_at() and value_at()
#include "scan_fused.glsl"
layout(std430, binding = NOPS) writeonly buffer Out { TO out_[]; };
#else
layout(push_constant) uniform Push {
  uint nout, n, nblocks, krank;   // rows; elements a row; blocks a row (BLOCK_* modes)
  uint in_offset, out_offset;     // elements
  uint idx_offset;                // elements of the indices out
  uint rstride_in, rstride_out;   // elements between neighbours in a row
  uint kshape[MAX_RANK];
  uint kstride[2 * MAX_RANK];     // elements: input, then output
} p;
#define OUT_STRIDE p.rstride_out

layout(std430, binding = 0) writeonly buffer Out { TO out_[]; };
layout(std430, binding = 1) readonly buffer In { TI in_[]; };
#endif
#ifdef INDICES
layout(std430, binding = B_IDX) writeonly buffer Idx { IDX_T idx_[]; };
#endif
#ifdef IN_INDICES
layout(std430, binding = B_IIDX) readonly buffer IIdx { uint iidx_[]; };
#endif
#ifdef SEED
layout(std430, binding = B_SEED) readonly buffer Seed { A seed_[]; };
#ifdef INDICES
layout(std430, binding = B_SIDX) readonly buffer SIdx { uint sidx_[]; };
#endif
#endif

#if defined(A_FLOAT) || defined(A_FLOAT64)
#define IS_NAN(x) isnan(x)
#else
#define IS_NAN(x) false
#endif

// A value and the position it came from (cummax/cummin); NONE marks the identity.
#define NONE 0xffffffffu
struct Elem { A v; uint i; };

// a then b, a earlier in the row. cummax: NaN beats everything, a later NaN an earlier one, and of equal
// values the later wins, as in PyTorch; this picks the greatest under one total order, so it is associative.
Elem combine(Elem a, Elem b) {
#if defined(OP_SUM)
  return Elem(a.v + b.v, 0u);
#elif defined(OP_PROD)
  return Elem(a.v * b.v, 0u);
#else
  if (a.i == NONE || b.i == NONE)
    return a.i == NONE ? b : a;
#ifdef OP_MAX
  bool later = IS_NAN(b.v) || (!IS_NAN(a.v) && b.v >= a.v);
#else
  bool later = IS_NAN(b.v) || (!IS_NAN(a.v) && b.v <= a.v);
#endif
  return later ? b : a;
#endif
}

#ifdef OP_PROD
#define IDENTITY Elem(A(1), NONE)
#else
#define IDENTITY Elem(A(0), NONE)
#endif

#ifndef FUSED
// Offsets of row o's first element in the input (.x) and the output (.y).
uvec2 kept_at(uint o) {
  uvec2 at = uvec2(p.in_offset, p.out_offset);
  for (int d = int(p.krank) - 1; d >= 0; d--) {
    uint c = o % p.kshape[d];
    o /= p.kshape[d];
    at += c * uvec2(p.kstride[d], p.kstride[MAX_RANK + d]);
  }
  return at;
}

// Element j of the row whose input starts at base.
A value_at(uint base, uint j) { return LOAD(in_[base + j * p.rstride_in]); }
#endif

Elem load(uint base, uint j) {
#ifdef IN_INDICES
  uint at = base + j * p.rstride_in;
  return Elem(LOAD(in_[at]), iidx_[at - p.in_offset]);
#else
  return Elem(value_at(base, j), j);
#endif
}

void store(uint base, uint j, Elem e) {
  uint at = base + j * OUT_STRIDE;
  out_[at] = STORE(e.v);
#ifdef INDICES
  idx_[at - p.out_offset + p.idx_offset] = IDX_T(e.i);
#endif
}

#ifdef PER_THREAD
void main() {
  uint row = linear_id();
  if (row >= p.nout)
    return;
  uvec2 base = kept_at(row);
  Elem a = IDENTITY;
  for (uint j = 0; j < p.n; j++) {
    a = combine(a, load(base.x, j));
    store(base.y, j, a);
  }
}

#elif defined(SUBGROUP_SCAN)
#extension GL_KHR_shader_subgroup_arithmetic : require
#ifdef OP_SUM
#define OPC(a, b) ((a) + (b))
#define ID A(0)
#define SUB_EXCLUSIVE(v) subgroupExclusiveAdd(v)
#else
#define OPC(a, b) ((a) * (b))
#define ID A(1)
#define SUB_EXCLUSIVE(v) subgroupExclusiveMul(v)
#endif
// A skew of one word every 32: an invocation's ITEMS neighbours (ITEMS a power of two up to 32) and a
// subgroup's coalesced run both fall in distinct banks.
#define PAD(i) ((i) + ((i) >> 5u))
shared A sh_x[PAD(BLOCK)];
shared A sh_sub[LOCAL_SIZE]; // each subgroup's total, by subgroup

// The exclusive scan of v over the workgroup's invocations, and the total: each subgroup scans its own,
// then adds the totals of the subgroups before it.
A group_exclusive(A v, out A total) {
  A ex = SUB_EXCLUSIVE(v);
  if (gl_SubgroupInvocationID == gl_SubgroupSize - 1u)
    sh_sub[gl_SubgroupID] = OPC(ex, v);
  barrier();
  A before = ID;
  total = ID;
  for (uint s = 0; s < gl_NumSubgroups; s++) {
    A w = sh_sub[s];
    if (s < gl_SubgroupID)
      before = OPC(before, w);
    total = OPC(total, w);
  }
  return OPC(before, ex);
}

void main() {
  uint g = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  if (g >= p.nout * p.nblocks) // a whole workgroup leaves, so the barriers stay uniform
    return;
  uint row = g / p.nblocks, blk = g % p.nblocks, t = gl_LocalInvocationID.x, first = blk * BLOCK;
  uvec2 base = kept_at(row);
  A total;
#ifdef BLOCK_REDUCE
  // a sum or product in any order: neighbours in the row go to neighbouring invocations
  A a = ID;
  [[unroll]] for (uint k = 0; k < ITEMS; k++) {
    uint j = first + k * uint(LOCAL_SIZE) + t;
    if (j < p.n)
      a = OPC(a, value_at(base.x, j));
  }
  group_exclusive(a, total);
  if (t == 0u)
    out_[g] = STORE(total);
#else
  // loaded coalesced, then scanned as ITEMS neighbours an invocation, then stored coalesced
  [[unroll]] for (uint k = 0; k < ITEMS; k++) {
    uint j = first + k * uint(LOCAL_SIZE) + t;
    sh_x[PAD(k * uint(LOCAL_SIZE) + t)] = j < p.n ? value_at(base.x, j) : ID;
  }
  barrier();
  A e[ITEMS], a = ID;
  [[unroll]] for (uint k = 0; k < ITEMS; k++) {
    a = OPC(a, sh_x[PAD(t * ITEMS + k)]);
    e[k] = a;
  }
  A before = group_exclusive(a, total);
#ifdef SEED
  if (blk > 0u)
    before = OPC(seed_[g - 1u], before);
#endif
  [[unroll]] for (uint k = 0; k < ITEMS; k++)
    sh_x[PAD(t * ITEMS + k)] = OPC(before, e[k]);
  barrier();
  [[unroll]] for (uint k = 0; k < ITEMS; k++) {
    uint j = first + k * uint(LOCAL_SIZE) + t;
    if (j < p.n)
      out_[base.y + j * OUT_STRIDE] = STORE(sh_x[PAD(k * uint(LOCAL_SIZE) + t)]);
  }
#endif
}

#else
shared A sh_v[LOCAL_SIZE];
shared uint sh_i[LOCAL_SIZE];

// The inclusive scan of a over the workgroup's invocations (Hillis-Steele in shared memory); afterwards
// sh_v/sh_i hold every invocation's result.
Elem group_scan(Elem a) {
  uint t = gl_LocalInvocationID.x;
  sh_v[t] = a.v, sh_i[t] = a.i;
  barrier();
  for (uint off = 1; off < uint(LOCAL_SIZE); off <<= 1) {
    Elem o = t >= off ? Elem(sh_v[t - off], sh_i[t - off]) : IDENTITY;
    barrier();
    a = combine(o, a);
    sh_v[t] = a.v, sh_i[t] = a.i;
    barrier();
  }
  return a;
}

void main() {
  uint g = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  if (g >= p.nout * p.nblocks) // a whole workgroup leaves, so the barriers stay uniform
    return;
  uint row = g / p.nblocks, blk = g % p.nblocks, t = gl_LocalInvocationID.x;
  uvec2 base = kept_at(row);
  uint first = blk * BLOCK + t * ITEMS; // the invocation's ITEMS neighbours
  Elem e[ITEMS];
  Elem a = IDENTITY;
  [[unroll]] for (uint k = 0; k < ITEMS; k++) {
    e[k] = first + k < p.n ? load(base.x, first + k) : IDENTITY;
    a = combine(a, e[k]);
    e[k] = a;
  }
  Elem total = group_scan(a);
#ifdef BLOCK_REDUCE
  if (t == uint(LOCAL_SIZE) - 1u) {
    out_[g] = STORE(total.v);
#ifdef INDICES
    idx_[g] = IDX_T(total.i);
#endif
  }
#else
  Elem before = t > 0u ? Elem(sh_v[t - 1u], sh_i[t - 1u]) : IDENTITY;
#ifdef SEED
  if (blk > 0u)
#ifdef INDICES
    before = combine(Elem(seed_[g - 1u], sidx_[g - 1u]), before);
#else
    before = combine(Elem(seed_[g - 1u], 0u), before);
#endif
#endif
  [[unroll]] for (uint k = 0; k < ITEMS; k++)
    if (first + k < p.n)
      store(base.y, first + k, combine(before, e[k]));
#endif
}
#endif
