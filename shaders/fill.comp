#version 450
// fill.comp: dst[offset + i] = word for i < n (words), the fill of a dense tensor on a Vulkan device. It replaces
// vkCmdFillBuffer, which NVIDIA's driver runs apart from the compute work around it: on an H100, ten 64-byte fills
// among 20 dependent ops took 45 us more than the ops alone, 2.5 us more as this shader. ELEMS words an invocation,
// as copy.comp's ONE_DIM.
#include "common.glsl"

layout(std430, binding = 0) writeonly buffer Dst { uint dst[]; };

layout(push_constant) uniform Push {
  uint n, offset, word; // words
} p;

#define ELEMS 4u
void main() {
  uint first = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * ELEMS * LOCAL_SIZE;
  [[unroll]] for (uint k = 0; k < ELEMS; k++) {
    uint c = first + k * LOCAL_SIZE + gl_LocalInvocationID.x;
    if (c < p.n)
      dst[p.offset + c] = p.word;
  }
}
