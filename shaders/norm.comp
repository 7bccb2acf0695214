#version 450
// norm.comp: layer_norm and rms_norm (RMS) over each row's n trailing elements, in three ops: OP_FORWARD
// (y, and each row's mean and rstd for the backward), OP_BACKWARD (grad_input, a row at a time) and
// OP_COLUMNS (grad_weight and grad_bias partial sums over blocks of rows, which the host then sums: two
// stages instead of float atomics). Tensors are contiguous; the host defines T (input storage), TW (weight
// and bias storage), C (compute: float or double), W (invocations a row: a power of two up to
// LOCAL_SIZE), CACHE (elements an invocation keeps in registers, where a row fits in W * 8), SUBGROUP
// (W == LOCAL_SIZE and the adapter has subgroup arithmetic), HAS_WEIGHT and HAS_BIAS; and VEC where
// rows and offsets are multiples of 4: the row kernels then move 4 elements a load (TV, TWV, CV: the
// 4-vectors of T, TW, C), which takes a quarter of the load instructions.
#include "common.glsl"
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : enable
#extension GL_EXT_shader_explicit_arithmetic_types_float64 : enable

layout(push_constant) uniform Push {
  uint rows, n;      // rows; elements a row
  uint blocks;       // OP_COLUMNS: blocks of rows, block_rows each (the last may be short)
  uint block_rows;
  uint off[5];       // elements: each binding's tensor's offset
  float eps;
} p;

#if defined(C_FLOAT64)
#define C2 dvec2
#else
#define C2 vec2
#endif

// Bindings, in order: FORWARD y, stats, x, weight, bias; BACKWARD grad_x, g, x, stats, weight;
// COLUMNS partials, g, x, stats: x is binding 2 in all three. stats is [rows, 2]: mean (0 for RMS), rstd,
// in C.
// An item is what an invocation loads at once: V elements of type TI (compute type CI).
#ifdef VEC
#define V 4u
#define TI TV
#define TWI TWV
#define CI CV
C hsum(CI v) { return (v.x + v.y) + (v.z + v.w); }
#else
#define V 1u
#define TI T
#define TWI TW
#define CI C
C hsum(CI v) { return v; }
#endif
#define NI (p.n / V) // items a row
uint item_off(uint k) { return p.off[k] / V; }

#if defined(OP_FORWARD)
layout(std430, binding = 0) writeonly buffer Y { TI y_[]; };
layout(std430, binding = 1) writeonly buffer Stats { C stats_[]; };
layout(std430, binding = 2) readonly buffer X { TI x_[]; };
layout(std430, binding = 3) readonly buffer Wt { TWI w_[]; };
layout(std430, binding = 4) readonly buffer Bias { TWI b_[]; };
#define W_AT 3 // the weight's binding
#elif defined(OP_BACKWARD)
layout(std430, binding = 0) writeonly buffer GX { TI gx_[]; };
layout(std430, binding = 1) readonly buffer G { TI g_[]; };
layout(std430, binding = 2) readonly buffer X { TI x_[]; };
layout(std430, binding = 3) readonly buffer Stats { C stats_[]; };
layout(std430, binding = 4) readonly buffer Wt { TWI w_[]; };
#define W_AT 4
#else
layout(std430, binding = 0) writeonly buffer Part { C part_[]; };
layout(std430, binding = 1) readonly buffer G { T g_[]; };
layout(std430, binding = 2) readonly buffer X { T x_[]; };
layout(std430, binding = 3) readonly buffer Stats { C stats_[]; };
#endif

#if !defined(OP_COLUMNS)
CI weight(uint c) {
#ifdef HAS_WEIGHT
  return CI(w_[item_off(W_AT) + c]);
#else
  return CI(1);
#endif
}

// The W invocations of a row: lane, and the row's first element.
#define ROWS (uint(LOCAL_SIZE) / W)
uint lane() { return gl_LocalInvocationID.x % W; }
uint row_of() { return (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * ROWS + gl_LocalInvocationID.x / W; }

// The sum of v over the row's W invocations, returned to all of them. Every invocation of the workgroup
// calls it (rows past the end with zeros), so the barriers are uniform.
#ifdef SUBGROUP
#extension GL_KHR_shader_subgroup_arithmetic : require
shared C2 sh[LOCAL_SIZE];
C2 row_sum(C2 v) {
  v = subgroupAdd(v);
  if (subgroupElect())
    sh[gl_SubgroupID] = v;
  barrier();
  C2 s = C2(0);
  for (uint i = 0; i < gl_NumSubgroups; i++)
    s += sh[i];
  barrier(); // sh is reused by the next call
  return s;
}
#else
shared C2 sh[LOCAL_SIZE];
C2 row_sum(C2 v) {
  uint t = gl_LocalInvocationID.x;
  sh[t] = v;
  barrier();
  for (uint s = W / 2; s > 0; s >>= 1) {
    if (lane() < s)
      sh[t] += sh[t + s];
    barrier();
  }
  C2 r = sh[t - lane()];
  barrier();
  return r;
}
#endif

// EACH(i, c): the invocation's items c = lane + i * W of its row; with CACHE, i is a constant of an
// unrolled loop, so v[i] arrays stay in registers and the row is read from memory once.
#ifdef CACHE
#define EACH(i, c) [[unroll]] for (uint i = 0, c = lane(); i < CACHE; i++, c += W) if (c < NI)
#define KEEP(v, i, value) v[i] = (value)
#define AT(v, i, value) v[i]
#define REGS(v) CI v[CACHE]
#else
#define EACH(i, c) for (uint i = 0, c = lane(); c < NI; i++, c += W)
#define KEEP(v, i, value)
#define AT(v, i, value) (value)
#define REGS(v)
#endif
#endif

#if defined(OP_FORWARD)
// Two passes over the kept row: the mean, then the squared deviations from it (no cancellation).
void main() {
  uint r = row_of();
  bool real = r < p.rows;
  uint base = item_off(2) + min(r, p.rows - 1u) * NI;
  REGS(xv);
  EACH(i, c) KEEP(xv, i, CI(x_[base + c]));
  C mean = C(0);
#ifndef RMS
  C2 s = C2(0);
  EACH(i, c) s.x += hsum(AT(xv, i, CI(x_[base + c])));
  mean = row_sum(s).x / C(p.n);
#endif
  C2 q = C2(0);
  EACH(i, c) {
    CI d = AT(xv, i, CI(x_[base + c])) - mean;
    q.x += hsum(d * d);
  }
  C rstd = inversesqrt(row_sum(q).x / C(p.n) + C(p.eps));
  if (!real)
    return;
  uint dst = item_off(0) + r * NI;
  EACH(i, c) {
    CI v = (AT(xv, i, CI(x_[base + c])) - mean) * rstd * weight(c);
#ifdef HAS_BIAS
    v += CI(b_[item_off(4) + c]);
#endif
    y_[dst + c] = TI(v);
  }
  if (lane() == 0u) {
    stats_[p.off[1] + 2u * r] = mean;
    stats_[p.off[1] + 2u * r + 1u] = rstd;
  }
}

#elif defined(OP_BACKWARD)
// With xhat = (x - mean) rstd and gw = g w: grad_x = rstd (gw - mean(gw) - xhat mean(gw xhat)), one
// workgroup pass over g and x for both sums (RMS: no mean(gw) term).
void main() {
  uint r = row_of();
  bool real = r < p.rows;
  uint rr = min(r, p.rows - 1u), gbase = item_off(1) + rr * NI, xbase = item_off(2) + rr * NI;
  C mean = stats_[p.off[3] + 2u * rr], rstd = stats_[p.off[3] + 2u * rr + 1u];
  REGS(gv);
  REGS(xv);
  EACH(i, c) {
    KEEP(gv, i, CI(g_[gbase + c]) * weight(c));
    KEEP(xv, i, (CI(x_[xbase + c]) - mean) * rstd);
  }
  C2 s = C2(0);
  EACH(i, c) {
    CI gw = AT(gv, i, CI(g_[gbase + c]) * weight(c)), xh = AT(xv, i, (CI(x_[xbase + c]) - mean) * rstd);
    s += C2(hsum(gw), hsum(gw * xh));
  }
  s = row_sum(s) / C(p.n);
#ifdef RMS
  s.x = C(0);
#endif
  if (!real)
    return;
  uint dst = item_off(0) + r * NI;
  EACH(i, c) {
    CI gw = AT(gv, i, CI(g_[gbase + c]) * weight(c)), xh = AT(xv, i, (CI(x_[xbase + c]) - mean) * rstd);
    gx_[dst + c] = TI(rstd * (gw - s.x - xh * s.y));
  }
}

#else
// A workgroup takes 32 neighbouring columns of one block of rows, LOCAL_SIZE / 32 invocations a column
// (a subgroup reads 32 neighbouring elements of a row), and writes that block's sums of g xhat (grad_weight)
// and g (grad_bias, not for RMS) for those columns: part_ is [2, blocks, n].
#define COLS 32u
#define LANES (uint(LOCAL_SIZE) / COLS)
#define RUN 4u
shared C2 sh[LOCAL_SIZE];

void main() {
  uint wg = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x, tiles = (p.n + COLS - 1u) / COLS;
  uint block = wg / tiles, t = gl_LocalInvocationID.x, col = (wg % tiles) * COLS + t % COLS;
  uint first = block * p.block_rows, last = min(p.rows, first + p.block_rows);
  C2 a = C2(0);
  // RUN rows at a time, their loads unconditional (a row past the block is read at the last row and
  // weighed 0), so that an invocation has that many reads in flight
  if (col < p.n && block < p.blocks && first < last)
    for (uint r0 = first + t / COLS; r0 < last; r0 += RUN * LANES) {
      [[unroll]] for (uint k = 0u; k < RUN; k++) {
        uint r = min(r0 + k * LANES, last - 1u);
        C mean = stats_[p.off[3] + 2u * r], rstd = stats_[p.off[3] + 2u * r + 1u];
        C g = C(g_[p.off[1] + r * p.n + col]), xh = (C(x_[p.off[2] + r * p.n + col]) - mean) * rstd;
        if (r0 + k * LANES < last)
          a += C2(g * xh, g);
      }
    }
  sh[t] = a;
  barrier();
  if (t >= COLS || col >= p.n || block >= p.blocks)
    return;
  for (uint k = 1u; k < LANES; k++)
    a += sh[t + k * COLS];
  part_[p.off[0] + block * p.n + col] = a.x;
#ifndef RMS
  part_[p.off[0] + (p.blocks + block) * p.n + col] = a.y;
#endif
}
#endif
