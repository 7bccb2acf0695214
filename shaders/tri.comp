#version 450
// tri.comp: tril (OP_TRIL) and triu (OP_TRIU) over the last two dimensions: out = in where column
// minus row is <= (tril) or >= (triu) the diagonal, else zero.
#include "shape.glsl"

layout(std430, binding = 0) writeonly buffer Out { WORD out_[]; };
layout(std430, binding = 1) readonly buffer In { WORD in_[]; };

void main() {
  uint i = linear_id();
  if (i >= p.n)
    return;
  uint idx[NOPS], coord[MAX_RANK];
  locate(i, idx, coord);
  int k = int(coord[p.rank - 1]) - int(coord[p.rank - 2]);
#ifdef OP_TRIL
  bool keep = k <= p.param;
#else
  bool keep = k >= p.param;
#endif
  WORD w = WORD(0);
  if (keep)
    w = in_[idx[1]];
  out_[idx[0]] = w;
}
