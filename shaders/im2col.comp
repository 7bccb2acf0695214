#version 450
// im2col.comp: a convolution's columns (OP_IM2COL) and their adjoint (OP_COL2IM), over three spatial dims
// (fewer come with leading dims of size 1). With K = prod(kernel) window elements and L = prod(out) windows,
//   cols[nc, k, l] = x[nc, o(l) * stride + k * dilation - pad], 0 where that falls in the padding,
// for nc = n * C + c. col2im sums, for each element of x, the (at most K) entries of cols that read it: one
// invocation an element of x and no atomics, so the sum's order is fixed (the scatter it replaces added
// with float atomics, in whatever order they landed). Both tensors are dense; T is their storage type.
// KERNEL, STRIDE and DILATION (ivec3s) are #defines, so that the taps' loops unroll and their divisions are by
// constants: integer division is what these kernels spent their time on (H100, 32x64x56x56: im2col 0.33 ms with
// six divisions an element, 0.18 with one).
#include "common.glsl"

layout(std430, binding = 0) writeonly buffer Out { T out_[]; };
layout(std430, binding = 1) readonly buffer In { T in_[]; };

layout(push_constant) uniform Push {
  uint n;        // invocations: elements of cols (im2col) or of x (col2im)
  uint windows;  // L
  uint volume;   // elements of one (n, c) image of x
  uint base;     // the element of in's buffer where it starts
  int size[3];   // x's spatial sizes
  int grid[3];   // windows along each spatial dim
  int pad[3];    // leading padding
} p;

#define V(f) ivec3(p.f[0], p.f[1], p.f[2])
#define TAPS (KERNEL.x * KERNEL.y * KERNEL.z)
#define ELEMS 4

// The three coordinates of flat index i in a row-major grid of sizes s.
ivec3 unflatten(uint i, ivec3 s) {
  uint z = i % uint(s.z), yx = i / uint(s.z);
  return ivec3(yx / uint(s.y), yx % uint(s.y), z);
}

// c advanced by step (both coordinates in a grid of sizes s, step's below s in each dim) with carries, for the
// invocation's next element LOCAL_SIZE further on: no division.
ivec3 advance(ivec3 c, ivec3 step, ivec3 s) {
  c += step;
  if (c.z >= s.z)
    c.z -= s.z, c.y++;
  if (c.y >= s.y)
    c.y -= s.y, c.x++;
  return c;
}

// Rows along y and z, one a workgroup: im2col's are (nc, tap) rows of cols, col2im's the (n, c) images. Each
// invocation takes ELEMS elements of its row, LOCAL_SIZE apart.
void main() {
  uint row = gl_WorkGroupID.z * gl_NumWorkGroups.y + gl_WorkGroupID.y;
  uint first = gl_WorkGroupID.x * ELEMS * LOCAL_SIZE + gl_LocalInvocationID.x;
#ifdef OP_IM2COL
  if (row >= p.n / p.windows)
    return;
  uint nc = row / TAPS, base = p.base + nc * p.volume;
  ivec3 grid = V(grid), size = V(size), step = unflatten(LOCAL_SIZE, grid);
  ivec3 offset = unflatten(row % TAPS, KERNEL) * DILATION - V(pad), o = unflatten(first, grid);
  T v[ELEMS]; // all of the invocation's loads first, then its stores, so that the loads are in flight together
  [[unroll]] for (uint e = 0; e < ELEMS; e++, o = advance(o, step, grid)) {
    ivec3 at = o * STRIDE + offset;
    bool inside = first + e * LOCAL_SIZE < p.windows && all(greaterThanEqual(at, ivec3(0))) && all(lessThan(at, size));
    v[e] = T(0);
    if (inside)
      v[e] = in_[base + uint((at.x * size.y + at.y) * size.z + at.z)];
  }
  [[unroll]] for (uint e = 0; e < ELEMS; e++)
    if (first + e * LOCAL_SIZE < p.windows)
      out_[row * p.windows + first + e * LOCAL_SIZE] = v[e];
#else
  if (row >= p.n / p.volume)
    return;
  ivec3 grid = V(grid), size = V(size), step = unflatten(LOCAL_SIZE, size), at = unflatten(first, size);
  uint base = p.base + row * TAPS * p.windows;
  [[unroll]] for (uint e = 0; e < ELEMS; e++, at = advance(at, step, size)) {
    uint i = first + e * LOCAL_SIZE;
    if (i >= p.volume)
      break;
    C sum = C(0);
    [[unroll]] for (int k0 = 0; k0 < KERNEL.x; k0++)
      [[unroll]] for (int k1 = 0; k1 < KERNEL.y; k1++)
        [[unroll]] for (int k2 = 0; k2 < KERNEL.z; k2++) {
          ivec3 start = at + V(pad) - ivec3(k0, k1, k2) * DILATION; // o * stride where a window starts there
          ivec3 o = start / STRIDE;
          if (all(greaterThanEqual(start, ivec3(0))) && all(lessThan(o, grid)) && all(equal(o * STRIDE, start))) {
            uint tap = uint((k0 * KERNEL.y + k1) * KERNEL.z + k2);
            sum += C(in_[base + tap * p.windows + uint((o.x * grid.y + o.y) * grid.z + o.z)]);
          }
        }
    out_[row * p.volume + i] = T(sum);
  }
#endif
}
