#version 450
// scatter.comp: out[c with c[dim] = index[c]] = src[c] (OP_SET) or += src[c] (OP_ADD), for every c of
// index's shape: scatter, scatter_add, index_copy, index_add and index_put (whose 1-D index the host
// views with src's shape, stride 0 off dim). OP_ADD adds atomically, since indices may repeat: int32
// with atomicAdd, float32 by compare-and-swap on the word. An index outside [0, size) is skipped and
// sets the error word, which the host reads after the dispatch.
#include "shape.glsl"

#ifdef OP_ADD
layout(std430, binding = 0) buffer Out { WORD out_[]; };
#else
layout(std430, binding = 0) writeonly buffer Out { WORD out_[]; };
#endif
layout(std430, binding = 1) readonly buffer Src { WORD src_[]; };
#ifdef INDEX64
layout(std430, binding = 2) readonly buffer Index { uvec2 index_[]; };
#else
layout(std430, binding = 2) readonly buffer Index { int index_[]; };
#endif
layout(std430, binding = 3) writeonly buffer Err { uint err_[]; };

void main() {
  uint i = linear_id();
  if (i >= p.n)
    return;
  uint idx[NOPS], coord[MAX_RANK];
  locate(i, idx, coord); // over index's shape; operand 0 is out with its own strides
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
  if (!ok) {
    err_[0] = 1u;
    return;
  }
  uint at = idx[0] + (k - coord[dim]) * p.stride[dim];
  WORD w = src_[idx[1]];
#if defined(OP_ADD) && defined(ADD_INT)
  atomicAdd(out_[at], w);
#elif defined(OP_ADD)
  uint seen = out_[at], want;
  do { // float32: retry until no other invocation changed the word between the read and the swap
    want = seen;
    seen = atomicCompSwap(out_[at], want, floatBitsToUint(uintBitsToFloat(want) + uintBitsToFloat(w)));
  } while (seen != want);
#else
  out_[at] = w;
#endif
}
