// reduce_fused.glsl: reduce.comp's indexing when its input is a pending elementwise expression
// (csrc/ops/fuse_reduce.c): load_elems() computes elements of the row from the expression's tensors, as
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

#define ELEMS ROW_RUN
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

// load_elems() takes the reduced index itself (.x): each tensor has its own strides. With OUT_REDUCED, .y is the
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

// Each tensor's offset of reduced element r of the row kept_at() last located.
void indices(uint r, out uint idx[NOPS]) {
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
}

// The values of reduced elements at[k] (.x of red_at) of the row, where in_row[k]: every tensor's loads first,
// then the values and their stores, as fused.comp orders them. With each element's stores before the next
// element's loads, a load waited for the store before it (the compiler keeps their order), and relu's backward
// summed into a bias's gradient ([8192, 1024], writing the backward too) moved 2.2 TB/s on an H100.
void load_elems(uint at[ROW_RUN], bool in_row[ROW_RUN], out A x[ROW_RUN]) {
  FUSED_DECLARE
  [[unroll]] for (uint k = 0; k < ROW_RUN; k++) {
    uint idx[NOPS];
    indices(at[k], idx);
    if (in_row[k]) {
      FUSED_LOAD(k)
    }
  }
  [[unroll]] for (uint k = 0; k < ROW_RUN; k++) {
    x[k] = A(0);
    if (!in_row[k])
      continue;
    uint idx[NOPS];
    indices(at[k], idx);
    FUSED_VALUES(k)
    if (stores_values) {
      FUSED_STORES(k)
    }
    x[k] = A(FUSED_VALUE); // the value as stored, exact in C (fuse_reduce.c), so converted as LOAD would
  }
}

#endif
