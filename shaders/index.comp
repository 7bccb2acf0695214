#version 450
// index.comp: an index tensor checked and wrapped for advanced indexing: out = index + size where
// index < 0, as int64, for out's shape (index viewed with it). An index outside [-size, size) sets the
// error word, which the host reads after the dispatch and raises as PyTorch's IndexError.
#include "shape.glsl" // ITEMSIZE is 8: out is int64

layout(std430, binding = 0) writeonly buffer Out { int64_t out_[]; };
#ifdef INDEX64
layout(std430, binding = 1) readonly buffer Index { int64_t index_[]; };
#else
layout(std430, binding = 1) readonly buffer Index { int index_[]; };
#endif
layout(std430, binding = 2) writeonly buffer Err { uint err_[]; };

void main() {
  uint i = linear_id();
  if (i >= p.n)
    return;
  uint idx[NOPS], coord[MAX_RANK];
  locate(i, idx, coord);
#ifdef INDEX64
  int64_t v = index_[idx[1]];
#else
  int w = index_[idx[1]];
  int64_t v = w < 0 ? -int64_t(uint(-w)) : int64_t(uint(w)); // by hand: int64_t(w) zero-extended on lavapipe
#endif
  int64_t size = int64_t(p.limit);
  if (v < -size || v >= size)
    err_[0] = 1u;
  out_[idx[0]] = v < 0 ? v + size : v;
}
