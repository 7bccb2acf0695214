// elementwise.glsl: what the elementwise shaders share: the push constants (shape, per-operand strides
// and offsets, the op's scalars), dtype plumbing and strided indexing. Operand 0 is the output.
// The host defines TO, TA, TB, TC (storage types), C and one of C_FLOAT, C_FLOAT64, C_INT, C_INT64
// (the compute type), STORE(v) (compute -> TO), VT (the type of an op's value: bool for comparisons, else C),
// and CONTIGUOUS when every operand is dense; fused.comp's dense kernels also define COMPACT_PUSH, which
// leaves the shape and strides out of the push constants so that eight operands fit the 128 bytes every
// adapter has.
#ifndef VKT_ELEMENTWISE_GLSL
#define VKT_ELEMENTWISE_GLSL

#include "common.glsl"
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : enable
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : enable

#define MAX_RANK 4
#ifndef MAX_OPS // operands, the output's included (fused.comp has more)
#define MAX_OPS 4
#endif
#ifndef NPARAMS // the op's scalars (fused.comp: every fused op's)
#define NPARAMS 2
#endif

layout(push_constant) uniform Push {
  uint n;                          // elements of the output
  uint rank;                       // dimensions after merging
  uint offset[MAX_OPS];            // elements
#ifndef COMPACT_PUSH
  uint shape[MAX_RANK];
  uint stride[MAX_OPS * MAX_RANK]; // elements, operand-major
#endif
  uvec2 param[NPARAMS];            // the op's scalars, as bits of the compute type
} p;

#include "decode.glsl"

#define P0 decode(p.param[0])
#define P1 decode(p.param[1])

// Dense operands: each thread takes ELEMS elements a workgroup apart, so every load is coalesced and
// a thread keeps ELEMS loads in flight, which HBM needs to reach its bandwidth. So does one merged dim with
// other strides (ONE_DIM: an operand broadcast whole, say, the expanded scalar that starts a backward pass),
// which needs no division. Other strided ones take one: four a thread made fused.comp's y * (g - s) over
// 4096 x 4096 with a broadcast s no faster on an H200 (107 -> 105 us).
#ifndef ELEMS
#if defined(CONTIGUOUS) || defined(ONE_DIM) || defined(ROWS)
#define ELEMS 4
#else
#define ELEMS 1
#endif
#endif

uint element(uint k) {
  uint group = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  return (group * ELEMS + k) * LOCAL_SIZE + gl_LocalInvocationID.x;
}

#ifndef COMPACT_PUSH
// Adds to each of nops operands' idx its offset of element i of dims 0..last, the last varying fastest. The
// outermost coordinate is what the inner dims' divisions leave: integer division is the costliest part of a
// strided element's work, and this takes one fewer.
void add_offsets(uint i, int last, uint nops, inout uint idx[MAX_OPS]) {
  for (int d = last; d > 0; d--) {
    uint c = i % p.shape[d];
    i /= p.shape[d];
    for (uint k = 0; k < nops; k++)
      idx[k] += c * p.stride[k * MAX_RANK + d];
  }
  for (uint k = 0; k < nops; k++)
    idx[k] += i * p.stride[k * MAX_RANK];
}
#endif

#ifdef ROWS
// A long innermost dim (ROWS): it runs along x, ELEMS * LOCAL_SIZE elements a workgroup, and the
// other dims, the rows, along y and z. A row's offsets take the divisions, once an invocation; its elements
// none, and each invocation has ELEMS of them in flight. The operands' strides along the row may differ (a
// broadcast bias has 0).
uint row_base[MAX_OPS];
bool row_real;

void locate_row(uint nops) {
  uint row = gl_WorkGroupID.z * gl_NumWorkGroups.y + gl_WorkGroupID.y, inner = p.shape[p.rank - 1];
  row_real = row < p.n / inner;
  for (uint k = 0; k < nops; k++)
    row_base[k] = p.offset[k];
  add_offsets(row, int(p.rank) - 2, nops, row_base);
}

uint column(uint k) { return (gl_WorkGroupID.x * ELEMS + k) * LOCAL_SIZE + gl_LocalInvocationID.x; }

bool present(uint k) { return row_real && column(k) < p.shape[p.rank - 1]; }

// Element k of the invocation's row: its index in each of nops operands.
void locate_column(uint k, uint nops, out uint idx[MAX_OPS]) {
  uint c = column(k), d = p.rank - 1;
  for (uint j = 0; j < nops; j++)
    idx[j] = row_base[j] + c * p.stride[j * MAX_RANK + d];
}
#endif

// Element i's index in each of nops operands.
void locate(uint i, uint nops, out uint idx[MAX_OPS]) {
  for (uint k = 0; k < nops; k++)
    idx[k] = p.offset[k];
#ifdef CONTIGUOUS
  for (uint k = 0; k < nops; k++)
    idx[k] += i;
#elif defined(ONE_DIM)
  for (uint k = 0; k < nops; k++)
    idx[k] += i * p.stride[k * MAX_RANK];
#else
  add_offsets(i, int(p.rank) - 1, nops, idx);
#endif
}

// What the shaders' loops use, whatever the layout: begin(nops) once, then for each k < ELEMS whether the
// invocation's element k exists (PRESENT) and its index in each operand (LOCATE, into idx).
#ifdef ROWS
#define BEGIN(nops) locate_row(nops)
#define PRESENT(k) present(k)
#define LOCATE(k, nops, idx) locate_column(k, nops, idx)
#else
#define BEGIN(nops)
#define PRESENT(k) (element(k) < p.n)
#define LOCATE(k, nops, idx) locate(element(k), nops, idx)
#endif

#endif
