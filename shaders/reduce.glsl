// reduce.glsl: what reduce.comp's ops share: the push constants (the kept and reduced halves of the
// index space, each merged to at most 4 dims), index decomposition, and the accumulators: a compensated
// sum, the best (largest or smallest) value with its position, and a fold for prod/all/any.
// The host defines TO, TI (storage types), A and one of A_FLOAT, A_FLOAT64, A_INT, A_INT64 (the type the
// reduction computes in), LOAD(x) and STORE(v), the op's OP_* define, and PER_THREAD for short rows or COLUMNS;
// or, where the input is a pending expression computed in the load, FUSED (reduce_fused.glsl) instead of TI.
// That expression computes in its own type C, which may differ from A where its values convert exactly (a
// comparison's 0 and 1 summed in int64).
#ifndef VKT_REDUCE_GLSL
#define VKT_REDUCE_GLSL

#include "common.glsl"
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : enable
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : enable

#define MAX_RANK 4

// The loops over a row take its elements ROW_RUN at a time, so that an invocation has that many reads in flight
// (H100, softmax of rows of 4096: 0.27 ms one at a time, 0.245 four, 0.232 eight). They still merge the elements
// in order.
#ifndef ROW_RUN
#define ROW_RUN 8
#endif

#ifdef FUSED
#include "reduce_fused.glsl"
#else
layout(push_constant) uniform Push {
  uint nout, nred;                 // output rows; elements reduced into each
  uint krank, rrank;               // kept / reduced dims after merging
  uint in_offset, out_offset, idx_offset; // elements
  float correction;                // var: divide by max(0, nred - correction)
  uint kshape[MAX_RANK];
  uint kstride[2 * MAX_RANK];      // elements: input, then output
  uint rshape[MAX_RANK];
  uint rstride[2 * MAX_RANK];      // elements: input, then output (softmax writes every element)
} p;

// Offsets of kept element o in the input (.x) and the output (.y).
uvec2 kept_at(uint o) {
  uvec2 at = uvec2(p.in_offset, p.out_offset);
  for (int d = int(p.krank) - 1; d >= 0; d--) {
    uint c = o % p.kshape[d];
    o /= p.kshape[d];
    at += c * uvec2(p.kstride[d], p.kstride[MAX_RANK + d]);
  }
  return at;
}

// Offsets of reduced element r of a row, relative to the row's kept_at; with ONE_REDUCED_DIM (so the host
// merged them) without dividing, which doubles a long row's speed (the integer divisions, not memory,
// held it to half of the H100's bandwidth).
uvec2 red_at(uint r) {
#ifdef ONE_REDUCED_DIM
  return r * uvec2(p.rstride[0], p.rstride[MAX_RANK]);
#else
  uvec2 at = uvec2(0);
  for (int d = int(p.rrank) - 1; d >= 0; d--) {
    uint c = r % p.rshape[d];
    r /= p.rshape[d];
    at += c * uvec2(p.rstride[d], p.rstride[MAX_RANK + d]);
  }
  return at;
#endif
}
#endif

// A workgroup takes a row and its invocations stride through it; with PER_THREAD an invocation takes a
// whole row; with COLUMNS a workgroup takes 32 rows that start next to each other in memory while their
// elements lie apart (the column sums of a matrix), 8 invocations a row, so that a subgroup reads 32
// neighbouring elements at a time; with TEAMS (rows of moderate length) a team of 32 neighbouring
// invocations takes a row, 8 rows a workgroup, so that a row's merge takes 5 barriers shared by 8 rows
// instead of 8 of its own. ROW_REAL says whether the invocation's row exists: COLUMNS and TEAMS put the
// last workgroup's spare invocations on the last row, so that they take part in its barriers.
#if defined(PER_THREAD)
#define FIRST 0u
#define STEP 1u
uint row() { return linear_id(); }
#elif defined(COLUMNS)
#define COLS 32u
#define FIRST (gl_LocalInvocationID.x / COLS)
#define STEP (uint(LOCAL_SIZE) / COLS)
uint row() { return (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * COLS + gl_LocalInvocationID.x % COLS; }
#elif defined(TEAMS)
#define TEAM 32u
#define FIRST (gl_LocalInvocationID.x % TEAM)
#define STEP TEAM
uint row() {
  return (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * (uint(LOCAL_SIZE) / TEAM) +
         gl_LocalInvocationID.x / TEAM;
}
#else
#define FIRST gl_LocalInvocationID.x
#define STEP uint(LOCAL_SIZE)
uint row() { return gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x; }
#endif
#if defined(COLUMNS) || defined(TEAMS)
#define ROW_REAL (row() < p.nout)
#else
#define ROW_REAL true
#endif
#define STORES (FIRST == 0u && ROW_REAL) // whether this invocation stores its row's result

// T name(T a): the merge of a over the invocations on this row (a tree in shared memory), returned to all
// of them. A whole workgroup returns early or none of it does, so the barriers are uniform.
#ifdef PER_THREAD
#define GROUP_REDUCE(T, name, merge) T name(T a) { return a; }
#elif defined(TEAMS) // a tree within each team: lane l merges lane l + s's, as the workgroup's tree does
#define GROUP_REDUCE(T, name, merge)                                            \
  shared T sh_##name[LOCAL_SIZE];                                               \
  T name(T a) {                                                                 \
    uint t = gl_LocalInvocationID.x, lane = t % TEAM;                           \
    sh_##name[t] = a;                                                           \
    barrier();                                                                  \
    for (uint s = TEAM / 2; s >= 1; s >>= 1) {                                  \
      if (lane < s)                                                             \
        sh_##name[t] = merge(sh_##name[t], sh_##name[t + s]);                   \
      barrier();                                                                \
    }                                                                           \
    T r = sh_##name[t - lane];                                                  \
    barrier();                                                                  \
    return r;                                                                   \
  }
#else
#ifdef COLUMNS
#define GROUP_LAST COLS // invocations t and t + COLS * i share a row
#else
#define GROUP_LAST 1u
#endif
#define GROUP_REDUCE(T, name, merge)                                            \
  shared T sh_##name[LOCAL_SIZE];                                               \
  T name(T a) {                                                                 \
    uint t = gl_LocalInvocationID.x;                                            \
    sh_##name[t] = a;                                                           \
    barrier();                                                                  \
    for (uint s = LOCAL_SIZE / 2; s >= GROUP_LAST; s >>= 1) {                   \
      if (t < s)                                                                \
        sh_##name[t] = merge(sh_##name[t], sh_##name[t + s]);                   \
      barrier();                                                                \
    }                                                                           \
    T r = sh_##name[t % GROUP_LAST];                                            \
    barrier();                                                                  \
    return r;                                                                   \
  }
#endif

#if defined(A_FLOAT) || defined(A_FLOAT64)
#define IS_NAN(x) isnan(x)
#else
#define IS_NAN(x) false
#endif

#if defined(A_FLOAT64)
A nan_value() { return packDouble2x32(uvec2(0u, 0x7ff80000u)); }
A inf_value() { return packDouble2x32(uvec2(0u, 0x7ff00000u)); }
#else
A nan_value() { return A(uintBitsToFloat(0x7fc00000u)); }
A inf_value() { return A(uintBitsToFloat(0x7f800000u)); }
#endif

// ---- compensated sum: s + c, where c gathers the rounding error of every addition (Neumaier), so a
// float32 row of 2^20 elements sums to within a few ulp; precise keeps the driver from refolding it.
struct Sum { A s; A c; };

#if defined(A_FLOAT) || defined(A_FLOAT64)
// An infinite t (an inf met, or an overflow) has no rounding error to gather: the error term would be
// inf - inf, a NaN that the sum itself does not have.
Sum sum_add(Sum a, A x) {
  precise A t = a.s + x;
  precise A e = isinf(t) ? A(0) : abs(a.s) >= abs(x) ? (a.s - t) + x : (x - t) + a.s;
  precise A c = a.c + e;
  return Sum(t, c);
}
#else
Sum sum_add(Sum a, A x) { return Sum(a.s + x, a.c); }
#endif

Sum sum_merge(Sum a, Sum b) {
  Sum r = sum_add(a, b.s);
  r.c += b.c;
  return r;
}

A sum_value(Sum a) { return a.s + a.c; }

// ---- best value and its position: NaN beats everything, then the larger (MIN: smaller), then the
// earlier position, which makes argmax's answer PyTorch's whatever order the tree merges in.
#define NONE 0xffffffffu
struct Best { A v; uint i; };

bool beats(Best a, Best b) {
  if (a.i == NONE || b.i == NONE)
    return b.i == NONE;
  if (IS_NAN(a.v) || IS_NAN(b.v))
    return IS_NAN(a.v) && (!IS_NAN(b.v) || a.i < b.i);
  if (a.v != b.v)
#if defined(OP_AMIN) || defined(OP_ARGMIN)
    return a.v < b.v;
#else
    return a.v > b.v;
#endif
  return a.i < b.i;
}

Best best_merge(Best a, Best b) { return beats(a, b) ? a : b; }

#endif
