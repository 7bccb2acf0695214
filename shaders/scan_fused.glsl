// scan_fused.glsl: scan.comp's indexing when its input is a pending elementwise expression
// (csrc/ops/fuse_scan.c): value_at(j) computes element j of the row from the expression's tensors, as fused.comp
// would, so the value equals what the unfused scan loads, and stores the intermediates that are referenced
// elsewhere (fused.comp's results) in every mode but BLOCK_REDUCE: a long row's blocks are read twice, for their
// totals and then for their scans, and each other mode reads each element once. The host defines, besides
// fused.comp's NOPS (tensors: results written, then those read), NPARAMS, OPi, STi, FUSED_BUFFERS, FUSED_DECLARE,
// FUSED_LOAD(k), FUSED_VALUES(k) and FUSED_STORES(k): KRANK (the rows' dims after merging, 0 to 4) and
// FUSED_VALUE (the root's value). Only what a launch varies by is pushed, so that it fits 128 bytes.
#ifndef VKT_SCAN_FUSED_GLSL
#define VKT_SCAN_FUSED_GLSL

#include "half.glsl"
#include "math.glsl"

layout(push_constant) uniform Push {
  uvec2 param[NPARAMS];       // the expression's scalars, as bits of the compute type
  uint nout, n, nblocks;      // rows; elements a row; blocks a row (BLOCK_* modes)
  uint out_offset, idx_offset; // elements
  uint offset[NOPS];          // elements, of each tensor read
  uint rstride[NOPS + 1];     // elements between neighbours in a row: the tensors, then the output
#if KRANK > 0
  uint kshape[KRANK];
  uint kstride[(NOPS + 1) * KRANK]; // elements, operand-major: the tensors, then the output
#endif
} p;
#define OUT_STRIDE p.rstride[NOPS]

#include "decode.glsl"

FUSED_BUFFERS

#define ELEMS 1
uint row_at[NOPS]; // each tensor's offset of the row kept_at() last located

// The output's offset of row o's first element (.y); the tensors' go to row_at.
uvec2 kept_at(uint o) {
  uint at = p.out_offset;
  [[unroll]] for (uint t = 0; t < NOPS; t++)
    row_at[t] = p.offset[t];
#if KRANK > 0
  for (int d = KRANK - 1; d >= 0; d--) {
    uint c = o % p.kshape[d];
    o /= p.kshape[d];
    [[unroll]] for (uint t = 0; t < NOPS; t++)
      row_at[t] += c * p.kstride[t * KRANK + d];
    at += c * p.kstride[NOPS * KRANK + d];
  }
#endif
  return uvec2(0u, at);
}

// Element j of the row kept_at() located (base is the plain input's offset: unused here).
A value_at(uint base, uint j) {
  uint idx[NOPS];
  [[unroll]] for (uint t = 0; t < NOPS; t++)
    idx[t] = row_at[t] + j * p.rstride[t];
  FUSED_DECLARE
  FUSED_LOAD(0)
  FUSED_VALUES(0)
#ifndef BLOCK_REDUCE
  FUSED_STORES(0)
#endif
  return A(FUSED_VALUE); // exact in C, so converted as LOAD would (reduce_fused.glsl)
}

#endif
