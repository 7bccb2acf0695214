#version 450
// gather.comp: out[c] = in[c with c[dim] = index[c]], for gather and index_select (whose 1-D index
// the host views with out's shape, stride 0 off dim). A shader cannot raise: an index outside
// [0, size) writes zero and sets the error word, which the host reads after the dispatch and turns into
// the op's IndexError or RuntimeError.
#include "shape.glsl"

layout(std430, binding = 0) writeonly buffer Out { WORD out_[]; };
layout(std430, binding = 1) readonly buffer In { WORD in_[]; };
#ifdef INDEX64
layout(std430, binding = 2) readonly buffer Index { uvec2 index_[]; }; // int64 as (low, high): no shaderInt64 needed
#else
layout(std430, binding = 2) readonly buffer Index { int index_[]; };
#endif
layout(std430, binding = 3) writeonly buffer Err { uint err_[]; };

void main() {
  uint i = linear_id();
  if (i >= p.n)
    return;
  uint idx[NOPS], coord[MAX_RANK];
  locate(i, idx, coord);
  uint dim = uint(p.param);
#ifdef INDEX64
  uvec2 v = index_[idx[2]];
  bool ok = v.y == 0u && v.x < p.limit;
  uint k = v.x;
#else
  int v = index_[idx[2]];
  bool ok = v >= 0 && uint(v) < p.limit;
  uint k = uint(v);
#endif
  WORD w = WORD(0);
  if (ok)
    w = in_[idx[1] + (k - coord[dim]) * p.stride[MAX_RANK + dim]];
  else
    err_[0] = 1u; // every invocation that writes it writes the same word: no atomic needed
  out_[idx[0]] = w;
}
