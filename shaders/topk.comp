#version 450
// topk.comp: the first K entries of each row under sort.comp's order (ascending with NaN last, or
// DESCENDING: descending with NaN first; equal values by position), for small K, in one read of the row:
// a workgroup takes a row, each invocation keeps the best K of its strided slice sorted in registers
// (insertion: after the first few, most values lose to the worst kept in one compare), and then K rounds
// in shared memory each pick the best head of the invocations' lists, which its owner pops.
// The host defines TO, TI, C (output, input, compute types), LOAD, STORE and K.
#include "common.glsl"
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : enable
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : enable

#define MAX_RANK 4
#define NONE 0xffffffffu // the position of an empty slot: it sorts after everything
#define UNROLL 4u        // loads an invocation has in flight

layout(push_constant) uniform Push {
  uint nout, n;                 // rows; entries of a row
  uint krank;
  uint rstride_in, rstride_out; // elements between neighbours of a row
  uint in_offset, out_offset, idx_offset;
  uint kshape[MAX_RANK];
  uint kstride[2 * MAX_RANK];   // elements: input, then output
} p;

layout(std430, binding = 0) writeonly buffer OutV { TO ov[]; };
layout(std430, binding = 1) writeonly buffer OutI { int64_t oi[]; };
layout(std430, binding = 2) readonly buffer InV { TI iv[]; };

#if defined(C_FLOAT) || defined(C_FLOAT64)
#define IS_NAN(x) isnan(x)
#else
#define IS_NAN(x) false
#endif

// Whether entry (a, ia) sorts before entry (b, ib): sort.comp's order.
bool before(C a, uint ia, C b, uint ib) {
  if (ia == NONE || ib == NONE)
    return ib == NONE && ia != NONE;
  bool na = IS_NAN(a), nb = IS_NAN(b);
  if (na != nb)
#ifdef DESCENDING
    return na;
#else
    return nb;
#endif
  if (!na && a != b)
#ifdef DESCENDING
    return a > b;
#else
    return a < b;
#endif
  return ia < ib;
}

uvec2 kept_at(uint o) {
  uvec2 at = uvec2(p.in_offset, p.out_offset);
  for (int d = int(p.krank) - 1; d >= 0; d--) {
    uint c = o % p.kshape[d];
    o /= p.kshape[d];
    at += c * uvec2(p.kstride[d], p.kstride[MAX_RANK + d]);
  }
  return at;
}

C kv[K]; // the invocation's best K, best first
uint ki[K];

// Puts (v, i) in the invocation's list if it beats the worst kept entry.
void offer(C v, uint i) {
  if (!before(v, i, kv[K - 1], ki[K - 1]))
    return;
  kv[K - 1] = v, ki[K - 1] = i;
  [[unroll]] for (uint q = K - 1u; q > 0u; q--) {
    if (before(kv[q], ki[q], kv[q - 1u], ki[q - 1u])) {
      C tv = kv[q];
      kv[q] = kv[q - 1u], kv[q - 1u] = tv;
      uint ti = ki[q];
      ki[q] = ki[q - 1u], ki[q - 1u] = ti;
    }
  }
}

shared C sv[LOCAL_SIZE];
shared uint si[LOCAL_SIZE];

void main() {
  uint row = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x, t = gl_LocalInvocationID.x;
  if (row >= p.nout) // a whole workgroup leaves, so the barriers stay uniform
    return;
  uvec2 base = kept_at(row);
  [[unroll]] for (uint q = 0; q < K; q++)
    kv[q] = C(0), ki[q] = NONE;
  const uint stride = UNROLL * uint(LOCAL_SIZE);
  uint j = t;
  for (; j + (UNROLL - 1u) * uint(LOCAL_SIZE) < p.n; j += stride) {
    C v[UNROLL];
    [[unroll]] for (uint u = 0; u < UNROLL; u++)
      v[u] = LOAD(iv[base.x + (j + u * uint(LOCAL_SIZE)) * p.rstride_in]);
    [[unroll]] for (uint u = 0; u < UNROLL; u++)
      offer(v[u], j + u * uint(LOCAL_SIZE));
  }
  for (; j < p.n; j += uint(LOCAL_SIZE))
    offer(LOAD(iv[base.x + j * p.rstride_in]), j);
  // Round r: the best of the invocations' heads is the row's r-th entry; its owner pops it.
  for (uint r = 0; r < K; r++) {
    sv[t] = kv[0], si[t] = ki[0];
    barrier();
    for (uint s = uint(LOCAL_SIZE) / 2u; s > 0u; s >>= 1) {
      if (t < s && before(sv[t + s], si[t + s], sv[t], si[t]))
        sv[t] = sv[t + s], si[t] = si[t + s];
      barrier();
    }
    C bv = sv[0];
    uint bi = si[0];
    if (t == 0u) {
      uint at = base.y + r * p.rstride_out;
      ov[at] = STORE(bv);
      oi[at - p.out_offset + p.idx_offset] = int64_t(bi);
    }
    if (ki[0] == bi) {
      [[unroll]] for (uint q = 0; q + 1u < K; q++)
        kv[q] = kv[q + 1u], ki[q] = ki[q + 1u];
      kv[K - 1u] = C(0), ki[K - 1u] = NONE;
    }
    barrier(); // sv[0] is read before the next round writes it
  }
}
