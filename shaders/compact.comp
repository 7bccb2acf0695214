#version 450
// compact.comp: stream compaction and scatter over n elements in row-major order, for nonzero and unique.
// in_[i] is the inclusive prefix count (int64) of the selected elements, so element i is selected where
// it steps up, and goes to out position in_[i] - 1:
//   COORDS: its coordinates in the shape p.shape (nonzero: out is [count, rank] int64);
//   INDEX: i itself (int64);
//   VALUES: src[i], raw words of ITEMSIZE bytes.
// SCATTER: out[idx[i]] = src[i] for every i (in_ is the int64 idx; unique's inverse), raw words.
#include "common.glsl"
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : enable

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

layout(push_constant) uniform Push {
  uint n, rank;
  uint out_offset, in_offset, src_offset; // elements
  uint shape[MAX_RANK];
} p;

#if defined(COORDS) || defined(INDEX)
layout(std430, binding = 0) writeonly buffer Out { int64_t out_[]; };
#else
layout(std430, binding = 0) writeonly buffer Out { WORD out_[]; };
#endif
layout(std430, binding = 1) readonly buffer In { int64_t in_[]; };
#if defined(VALUES) || defined(SCATTER)
layout(std430, binding = 2) readonly buffer Src { WORD src_[]; };
#endif

void main() {
  uint i = linear_id();
  if (i >= p.n)
    return;
#ifdef SCATTER
  out_[p.out_offset + uint(in_[p.in_offset + i])] = src_[p.src_offset + i];
#else
  int64_t c = in_[p.in_offset + i];
  if (c == (i > 0u ? in_[p.in_offset + i - 1u] : int64_t(0)))
    return;
  uint at = uint(c) - 1u;
#if defined(COORDS)
  uint r = i;
  for (int d = int(p.rank) - 1; d >= 0; d--) {
    out_[p.out_offset + at * p.rank + uint(d)] = int64_t(r % p.shape[d]);
    r /= p.shape[d];
  }
#elif defined(INDEX)
  out_[p.out_offset + at] = int64_t(i);
#else
  out_[p.out_offset + at] = src_[p.src_offset + i];
#endif
#endif
}
