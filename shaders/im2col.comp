#version 450
// im2col.comp: a convolution's columns (OP_IM2COL) and their adjoint (OP_COL2IM), over three spatial dims
// (fewer come with leading dims of size 1). With K = prod(kernel) window elements and L = prod(out) windows,
//   cols[nc, k, l] = x[nc, o(l) * stride + k * dilation - pad], 0 where that falls in the padding,
// for nc = n * C + c. col2im sums, for each element of x, the (at most K) entries of cols that read it: one
// invocation an element of x and no atomics, so the sum's order is fixed (the scatter it replaces added
// with float atomics, in whatever order they landed). Both tensors are dense; T is their storage type.
#include "common.glsl"

layout(std430, binding = 0) writeonly buffer Out { T out_[]; };
layout(std430, binding = 1) readonly buffer In { T in_[]; };

layout(push_constant) uniform Push {
  uint n;        // invocations: elements of cols (im2col) or of x (col2im)
  uint windows;  // L
  uint taps;     // K
  uint volume;   // elements of one (n, c) image of x
  uint base;     // the element of in's buffer where it starts
  int size[3];   // x's spatial sizes
  int grid[3];   // windows along each spatial dim
  int kernel[3];
  int stride[3];
  int pad[3];    // leading padding
  int dilation[3];
} p;

// The three coordinates of flat index i in a row-major grid of sizes s; two divisions, one where s.x is 1.
ivec3 unflatten(uint i, ivec3 s) {
  uint z = i % uint(s.z), yx = i / uint(s.z);
  return s.x == 1 ? ivec3(0, yx, z) : ivec3(yx / uint(s.y), yx % uint(s.y), z);
}

#define V(f) ivec3(p.f[0], p.f[1], p.f[2])
#define ELEMS 4

// Rows along y and z, one a workgroup: im2col's are (nc, tap) rows of cols, col2im's the (n, c) images, so that
// their divisions are made once an invocation; each invocation then takes ELEMS elements of the row, LOCAL_SIZE
// apart. Integer division is what these kernels spent their time on (H100, 32x64x56x56: im2col 0.33 ms with
// six divisions an element).
void main() {
  uint row = gl_WorkGroupID.z * gl_NumWorkGroups.y + gl_WorkGroupID.y;
  uint first = gl_WorkGroupID.x * ELEMS * LOCAL_SIZE + gl_LocalInvocationID.x;
#ifdef OP_IM2COL
  if (row >= p.n / p.windows)
    return;
  uint nc = row / p.taps, base = p.base + nc * p.volume;
  ivec3 offset = unflatten(row % p.taps, V(kernel)) * V(dilation) - V(pad), stride = V(stride), size = V(size);
  [[unroll]] for (uint e = 0; e < ELEMS; e++) {
    uint l = first + e * LOCAL_SIZE;
    if (l >= p.windows)
      break;
    ivec3 at = unflatten(l, V(grid)) * stride + offset;
    T v = T(0);
    if (all(greaterThanEqual(at, ivec3(0))) && all(lessThan(at, size)))
      v = in_[base + uint((at.x * size.y + at.y) * size.z + at.z)];
    out_[row * p.windows + l] = v;
  }
#else
  if (row >= p.n / p.volume)
    return;
  ivec3 stride = V(stride), windows = V(grid), dilation = V(dilation);
  bool unit = all(equal(stride, ivec3(1)));
  [[unroll]] for (uint e = 0; e < ELEMS; e++) {
    uint i = first + e * LOCAL_SIZE;
    if (i >= p.volume)
      break;
    ivec3 at = unflatten(i, V(size)) + V(pad);
    C sum = C(0);
    for (int k0 = 0; k0 < p.kernel[0]; k0++)
      for (int k1 = 0; k1 < p.kernel[1]; k1++)
        for (int k2 = 0; k2 < p.kernel[2]; k2++) {
          ivec3 start = at - ivec3(k0, k1, k2) * dilation; // o * stride where a window starts there
          ivec3 o = unit ? start : start / stride;
          bool whole = unit || all(equal(o * stride, start)); // a window starts exactly there
          if (all(greaterThanEqual(start, ivec3(0))) && all(lessThan(o, windows)) && whole) {
            uint tap = uint((k0 * p.kernel[1] + k1) * p.kernel[2] + k2);
            uint l = uint((o.x * windows.y + o.y) * windows.z + o.z);
            sum += C(in_[p.base + (row * p.taps + tap) * p.windows + l]);
          }
        }
    out_[row * p.volume + i] = T(sum);
  }
#endif
}
