#version 450
// copy.comp: dst[i] = src[i] between two strided views of the same dtype, moved as raw words of
// ITEMSIZE bytes so every dtype (NaN payloads included) copies bit-exactly. Strides may be negative
// (flip copies from a view walking backwards): uint arithmetic wraps, so the sums are exact.
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
} p;

void main() {
  uint i = linear_id();
  if (i >= p.n)
    return;
  uint s = p.src_offset, d = p.dst_offset;
  for (int k = int(p.rank) - 1; k >= 0; k--) {
    uint c = i % p.shape[k];
    i /= p.shape[k];
    s += c * p.src_stride[k];
    d += c * p.dst_stride[k];
  }
  dst[d] = src[s];
}
