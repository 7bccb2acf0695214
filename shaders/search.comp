#version 450
// search.comp: searchsorted and bucketize: for each value, a binary search of its row of the sorted
// sequence (the one row, or the row of the sequence's leading dims that the value's match) for the first
// entry >= it (RIGHT: > it), read through SORTER's positions where given. Comparisons as PyTorch's, so a
// NaN value goes past every entry. The host defines TI (storage), C (compute), LOAD, OT (int or int64_t).
#include "common.glsl"
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : enable
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : enable

layout(push_constant) uniform Push {
  uint n;         // values
  uint slen;      // entries a row of the sequence
  uint vlast;     // values a row (their last dim), when the sequence has rows of its own
  uint rows;      // 1: one row for every value
  uint out_offset, seq_offset, val_offset, sorter_offset; // elements
} p;

layout(std430, binding = 0) writeonly buffer Out { OT out_[]; };
layout(std430, binding = 1) readonly buffer Seq { TI seq_[]; };
layout(std430, binding = 2) readonly buffer Val { TI val_[]; };
#ifdef SORTER
layout(std430, binding = 3) readonly buffer Sorter { int64_t sorter_[]; };
#endif

void main() {
  uint i = linear_id();
  if (i >= p.n)
    return;
  uint base = p.rows > 1u ? (i / p.vlast) * p.slen : 0u;
  C v = LOAD(val_[p.val_offset + i]);
  uint lo = 0u, hi = p.slen;
  while (lo < hi) {
    uint mid = lo + (hi - lo) / 2u;
#ifdef SORTER
    C m = LOAD(seq_[p.seq_offset + base + uint(sorter_[p.sorter_offset + base + mid])]);
#else
    C m = LOAD(seq_[p.seq_offset + base + mid]);
#endif
#ifdef RIGHT
    bool past = !(m > v);
#else
    bool past = !(m >= v);
#endif
    if (past)
      lo = mid + 1u;
    else
      hi = mid;
  }
  out_[p.out_offset + i] = OT(lo);
}
