#version 450
// copy.comp: dst[i] = src[i] between two strided views of the same dtype, moved as raw words of
// ITEMSIZE bytes so every dtype (NaN payloads included) copies bit-exactly. Strides may be negative
// (flip copies from a view walking backwards): uint arithmetic wraps, so the sums are exact. With TILED
// the copy transposes through shared memory (below); ONE_DIM and ROWS take 4 elements an invocation.
#include "common.glsl"

#if ITEMSIZE == 1
#define WORD uint8_t
#elif ITEMSIZE == 2
#define WORD uint16_t
#elif ITEMSIZE == 4
#define WORD uint
#else
#define WORD uvec2
#endif

#define MAX_RANK 8

layout(std430, binding = 0) readonly buffer Src { WORD src[]; };
layout(std430, binding = 1) writeonly buffer Dst { WORD dst[]; };

layout(push_constant) uniform Push {
  uint n;       // elements
  uint rank;    // dimensions after merging contiguous ones
  uint src_offset, dst_offset; // elements
  uint shape[MAX_RANK];
  uint src_stride[MAX_RANK]; // elements
  uint dst_stride[MAX_RANK]; // elements
  uint src_fast, dst_fast;   // TILED: the dims along which src and dst are dense
} p;

// The offsets in src (.x) and dst (.y) of element `index` of the dims other than skip_i and skip_j,
// walked row-major from the last dim.
uvec2 offsets_of(uint index, int skip_i, int skip_j) {
  uvec2 at = uvec2(p.src_offset, p.dst_offset);
  for (int k = int(p.rank) - 1; k >= 0; k--) {
    if (k == skip_i || k == skip_j)
      continue;
    uint c = index % p.shape[k];
    index /= p.shape[k];
    at += c * uvec2(p.src_stride[k], p.dst_stride[k]);
  }
  return at;
}

#ifdef TILED
// A transposing copy (src dense along one dim, dst along another) moves 32 x 32 tiles through shared
// memory, so that both the reads and the writes of a subgroup are 32 neighbouring elements; copied one
// element an invocation, one side's accesses would each be a memory transaction of their own. A
// workgroup of 32 x 8 invocations takes one tile; the dims other than the two are its batch.
#if ITEMSIZE == 8
#define HELD uvec2
#else
#define HELD uint
#endif
shared HELD tile[32][33]; // padded so that a column's 32 elements lie in different banks

void main() {
  uint i = p.src_fast, j = p.dst_fast;
  uint ti = (p.shape[i] + 31) / 32, tj = (p.shape[j] + 31) / 32;
  uint w = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x, b = w / (ti * tj);
  uint i0 = w % (ti * tj) / tj * 32, j0 = w % tj * 32;
  if (b >= p.n / (p.shape[i] * p.shape[j])) // past the last batch: vkt_groups_for may round up
    return;
  uvec2 at = offsets_of(b, int(i), int(j));
  uint s = at.x, d = at.y;
  uint x = gl_LocalInvocationID.x % 32, y = gl_LocalInvocationID.x / 32;
  [[unroll]] for (uint r = 0; r < 32; r += 8) { // along i: neighbouring invocations read neighbours
    uint ii = i0 + x, jj = j0 + y + r;
    if (ii < p.shape[i] && jj < p.shape[j])
      tile[y + r][x] = HELD(src[s + ii * p.src_stride[i] + jj * p.src_stride[j]]);
  }
  barrier();
  [[unroll]] for (uint r = 0; r < 32; r += 8) { // along j: neighbouring invocations write neighbours
    uint ii = i0 + y + r, jj = j0 + x;
    if (ii < p.shape[i] && jj < p.shape[j])
      dst[d + ii * p.dst_stride[i] + jj * p.dst_stride[j]] = WORD(tile[x][y + r]);
  }
}
#elif defined(ONE_DIM) || defined(ROWS)
// One merged dim (ONE_DIM: an expanded scalar, a strided slice) or a long innermost one (ROWS, along x, the
// rows along y and z): ELEMS elements an invocation, all read before any is written, and no division per
// element (a row's offsets take them, once an invocation). On an H200, us, one element an invocation ->
// these: an expanded scalar into 8192 x 1024 26-28 -> 11-15, an expanded row 27 -> 13, x[::2] of 8192 x 1024
// 18 -> 10-11, cat of two 8192 x 1024 along dim 1 78-83 -> 45.
#define ELEMS 4u
void main() {
#ifdef ONE_DIM
  uint first = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * ELEMS * LOCAL_SIZE, d = 0u, len = p.n;
  uvec2 at = uvec2(p.src_offset, p.dst_offset);
#else
  uint row = gl_WorkGroupID.z * gl_NumWorkGroups.y + gl_WorkGroupID.y, d = p.rank - 1u, len = p.shape[d];
  if (row >= p.n / len)
    return;
  uint first = gl_WorkGroupID.x * ELEMS * LOCAL_SIZE;
  uvec2 at = offsets_of(row, int(d), -1);
#endif
  WORD v[ELEMS];
  [[unroll]] for (uint k = 0; k < ELEMS; k++) {
    uint c = first + k * LOCAL_SIZE + gl_LocalInvocationID.x;
    if (c < len)
      v[k] = src[at.x + c * p.src_stride[d]];
  }
  [[unroll]] for (uint k = 0; k < ELEMS; k++) {
    uint c = first + k * LOCAL_SIZE + gl_LocalInvocationID.x;
    if (c < len)
      dst[at.y + c * p.dst_stride[d]] = v[k];
  }
}
#else
void main() {
  uint i = linear_id();
  if (i >= p.n)
    return;
  uvec2 at = offsets_of(i, -1, -1);
  dst[at.y] = src[at.x];
}
#endif
