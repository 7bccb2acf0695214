// reduce_fused.glsl: reduce.comp's indexing when its input is a pending elementwise expression
// (csrc/ops/fuse_reduce.c): load(r) computes element r of the row from the expression's tensors, as
// fused.comp would, so the value equals what the unfused reduction loads, and stores the intermediates that
// are referenced elsewhere (fused.comp's results) while stores_values holds: in the first pass over a row
// that exists. The host defines, besides fused.comp's NOPS (tensors: results written, then those read),
// NPARAMS, OPi, STi, FUSED_BUFFERS, FUSED_DECLARE, FUSED_LOAD(k), FUSED_VALUES(k) and FUSED_STORES(k):
// KRANK and RRANK (kept and reduced dims after merging, 0 to 4) and
// FUSED_VALUE (the root's value), OUT_REDUCED for ops that write every element (softmax), whose output
// then has strides along the reduced dims too, and WITH_INDICES where max/min also write their positions
// (bound after the output, indexed as it is). Only what a launch varies by is pushed, so that it fits
// 128 bytes.
#ifndef VKT_REDUCE_FUSED_GLSL
#define VKT_REDUCE_FUSED_GLSL

#include "half.glsl"
#include "math.glsl"

layout(push_constant) uniform Push {
  uvec2 param[NPARAMS];   // the expression's scalars, as bits of the compute type
  uint nout, nred;        // output rows; elements reduced into each
  float correction;       // var: divide by max(0, nred - correction)
  uint out_offset;        // elements
#ifdef WITH_INDICES
  uint idx_offset;        // elements
#endif
  uint offset[NOPS];      // elements, of each tensor read
#if KRANK > 0
  uint kshape[KRANK];
  uint kstride[(NOPS + 1) * KRANK]; // elements, operand-major: the tensors read, then the output
#endif
#if RRANK > 0
  uint rshape[RRANK];
#ifdef OUT_REDUCED
  uint rstride[(NOPS + 1) * RRANK]; // elements, operand-major: the tensors read, then the output
#else
  uint rstride[NOPS * RRANK];       // elements, operand-major
#endif
#endif
} p;

#include "decode.glsl"

FUSED_BUFFERS

#define ELEMS 1
uint row_at[NOPS];        // each tensor's offset of the row kept_at() last located
bool stores_values = true; // reduce.comp clears it for a second pass and for rows past the last

// The output's offset of kept element o (.y); the tensors' go to row_at.
uvec2 kept_at(uint o) {
  uint at = p.out_offset;
  [[unroll]] for (uint j = 0; j < NOPS; j++)
    row_at[j] = p.offset[j];
#if KRANK > 0
  for (int d = KRANK - 1; d >= 0; d--) {
    uint c = o % p.kshape[d];
    o /= p.kshape[d];
    [[unroll]] for (uint j = 0; j < NOPS; j++)
      row_at[j] += c * p.kstride[j * KRANK + d];
    at += c * p.kstride[NOPS * KRANK + d];
  }
#endif
  return uvec2(0u, at);
}

// load() takes the reduced index itself (.x): each tensor has its own strides. With OUT_REDUCED, .y is the
// output's offset of reduced element r, relative to the row's kept_at.
uvec2 red_at(uint r) {
  uint at = 0u;
#if defined(OUT_REDUCED) && RRANK == 1
  at = r * p.rstride[NOPS];
#elif defined(OUT_REDUCED) && RRANK > 1
  uint q = r;
  for (int d = RRANK - 1; d >= 0; d--) {
    at += q % p.rshape[d] * p.rstride[NOPS * RRANK + d];
    q /= p.rshape[d];
  }
#endif
  return uvec2(r, at);
}

A load(uint r) {
  uint idx[NOPS];
  [[unroll]] for (uint j = 0; j < NOPS; j++)
    idx[j] = row_at[j];
#if RRANK == 1
  [[unroll]] for (uint j = 0; j < NOPS; j++)
    idx[j] += r * p.rstride[j];
#elif RRANK > 1
  for (int d = RRANK - 1; d >= 0; d--) {
    uint c = r % p.rshape[d];
    r /= p.rshape[d];
    [[unroll]] for (uint j = 0; j < NOPS; j++)
      idx[j] += c * p.rstride[j * RRANK + d];
  }
#endif
  FUSED_DECLARE
  FUSED_LOAD(0)
  FUSED_VALUES(0)
  if (stores_values) {
    FUSED_STORES(0)
  }
  return A(FUSED_VALUE); // the value as stored, exact in C (fuse_reduce.c), so converted as LOAD would
}

#endif
