// shape.glsl: what gather.comp and tri.comp share: elements moved as raw words of ITEMSIZE bytes (no
// arithmetic on them, so one shader serves every dtype bit-exactly), the push constants, and the walk
// from an output element to its index in each operand and its coordinates.
#ifndef VKT_SHAPE_GLSL
#define VKT_SHAPE_GLSL

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

#define MAX_RANK 6
#define NOPS 3 // out, in, index

layout(push_constant) uniform Push {
  uint n;                       // elements of out
  uint rank;                    // out's dimensions, unmerged: the kernels need their coordinates
  uint offset[NOPS];            // elements
  int param;                    // tril/triu: the diagonal; gather: the dim indexed
  uint limit;                   // gather: in's size along that dim
  uint shape[MAX_RANK];         // out's
  uint stride[NOPS * MAX_RANK]; // elements, operand-major; uint arithmetic wraps, so negatives work
} p;

void locate(uint i, out uint idx[NOPS], out uint coord[MAX_RANK]) {
  for (uint k = 0; k < NOPS; k++)
    idx[k] = p.offset[k];
  for (int d = int(p.rank) - 1; d >= 0; d--) {
    uint c = i % p.shape[d];
    i /= p.shape[d];
    coord[d] = c;
    for (uint k = 0; k < NOPS; k++)
      idx[k] += c * p.stride[k * MAX_RANK + d];
  }
}

#endif
