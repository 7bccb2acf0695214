#version 450
// loss.comp: cross_entropy (OP_CE) and nll_loss (OP_NLL), forward and BACKWARD. A row is the C class values
// of one sample at one spatial position, `inner` elements apart (csrc/ops/loss.h). ROWS: a workgroup takes a
// row of neighbouring elements (inner == 1), and reads it once: max and sum of exp(x - max) merged online,
// with the sums a smoothed or probability target needs, then subgroup and workgroup merges. Otherwise an
// invocation takes a row, so that neighbouring invocations read neighbouring spatial positions.
// The forward writes per row its loss, target weight, log-sum-exp and target mass (loss.h's rows); the
// backward writes (exp(x - lse) * mass - target's coefficient) * the loss's gradient for each element.
// The host defines TI (input storage type), TO (output storage type), TI4/TO4 with VEC4 (a row's whole vec4s
// read as such), INDEX64 or INDEX32 or PROB (the target), WEIGHT, SMOOTH (label_smoothing > 0), SUBGROUPS, and
// F64 where the input is float64: the rows' values are then doubles (F), else floats.
#include "common.glsl"
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : enable
#ifdef SUBGROUPS
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
#ifdef F64
#include "math_f64.glsl" // exp and log of doubles
#define F double
#define F_LOWEST -1.7976931348623157e308lf
#define SMOOTHING packDouble2x32(p.smoothing64)
#else
#define F float
#define F_LOWEST -3.402823466e38
#define SMOOTHING p.smoothing
#endif

layout(push_constant) uniform Push {
  uvec2 ignore;                         // ignore_index as an int64's (low, high) words
  uint rows, row_stride, classes, inner; // R, (forward) the output's elements a row, C, and the elements
                                        // between a row's classes
  uint x_offset, t_offset, w_offset;    // elements
  float smoothing;                      // label_smoothing
#ifdef F64
  uvec2 smoothing64;                    // label_smoothing's double, as (low, high) words
#endif
} p;

#ifdef BACKWARD
#ifdef VEC4
layout(std430, binding = 0) writeonly buffer Out { TO4 out4_[]; };
void store1(uint i, F v) { out4_[i / 4u][i % 4u] = TO(v); }
#else
layout(std430, binding = 0) writeonly buffer Out { TO out_[]; };
void store1(uint i, F v) { out_[i] = TO(v); }
#endif
#else
layout(std430, binding = 0) writeonly buffer Out { F out_[]; }; // (4, row_stride): loss, weight, lse, mass
#endif
#ifdef VEC4
layout(std430, binding = 1) readonly buffer In { TI4 in4_[]; };
F x_at(uint i) { return F(in4_[i / 4u][i % 4u]); }
#else
layout(std430, binding = 1) readonly buffer In { TI in_[]; };
F x_at(uint i) { return F(in_[i]); }
#endif
#if defined(PROB) && defined(VEC4)
layout(std430, binding = 2) readonly buffer Target { TI4 target4_[]; };
F prob_at(uint i) { return F(target4_[i / 4u][i % 4u]); }
#elif defined(PROB)
layout(std430, binding = 2) readonly buffer Target { TI target_[]; };
F prob_at(uint i) { return F(target_[i]); }
#elif defined(INDEX64)
layout(std430, binding = 2) readonly buffer Target { uvec2 target_[]; }; // int64 as (low, high)
#else
layout(std430, binding = 2) readonly buffer Target { int target_[]; };
#endif
#ifdef BACKWARD
layout(std430, binding = 3) readonly buffer Pack { F pack_[]; }; // lse[R], mass[R], grad[R], weight[C]
#else
layout(std430, binding = 3) writeonly buffer Err { uint err_[]; };
#endif
#if defined(WEIGHT) && defined(BACKWARD)
F weight_at(uint c) { return pack_[3u * p.rows + c]; }
#elif defined(WEIGHT)
layout(std430, binding = 4) readonly buffer Weight { TI weight_[]; };
F weight_at(uint c) { return F(weight_[p.w_offset + c]); }
#else
F weight_at(uint c) { return F(1.0); }
#endif

#ifdef PROB
#define COEFS // every class weighs in: with its probability, smoothed
#elif defined(SMOOTH) && !defined(OP_NLL)
#define COEFS // every class weighs in: ls / C of its weight
#endif

#ifndef PROB
// The row's target class as an int64's (low, high) words, and whether it lies in [0, C).
uvec2 target_of(uint r) {
#ifdef INDEX64
  return target_[p.t_offset + r];
#else
  int t = target_[p.t_offset + r];
  return uvec2(uint(t), t < 0 ? 0xffffffffu : 0u);
#endif
}
bool in_range(uvec2 t) { return t.y == 0u && t.x < p.classes; }
#endif

// What class c weighs in the smoothed target, without the target class's own (1 - ls) * weight: its
// weight times its smoothed probability; ls / C of its weight; or nothing.
F coef(uint c, F prob) {
#ifdef PROB
  return weight_at(c) * (prob * (1.0 - SMOOTHING) + SMOOTHING / F(p.classes));
#elif defined(COEFS)
  return weight_at(c) * (SMOOTHING / F(p.classes));
#else
  return F(0.0);
#endif
}

// Where row r's class 0 lies in the input (elements).
uint row_base(uint r) { return p.x_offset + (r / p.inner) * p.classes * p.inner + r % p.inner; }

#ifdef ROWS
#define FIRST gl_LocalInvocationID.x
#define STEP uint(LOCAL_SIZE)
uint row() { return gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x; }
#else
#define FIRST 0u
#define STEP 1u
uint row() { return linear_id(); }
#endif
#define UNROLL 4u // loads in flight per invocation

// ---- reading a row ----
// With VEC4 (rows of neighbouring elements, the input and a probability target at multiples of 4 elements)
// the row's classes from its first multiple of 4 elements on are read as whole vec4s, the few before and
// after them one at a time ("lone" classes); without, every class is lone.
struct Span {
  uint head, vecs; // lone classes before the first whole vec4; whole vec4s
};

Span span_of(uint base) {
#ifdef VEC4
  uint head = min((4u - base % 4u) % 4u, p.classes);
  return Span(head, (p.classes - head) / 4u);
#else
  return Span(0u, 0u);
#endif
}

uint lone_count(Span s) { return p.classes - 4u * s.vecs; }
uint lone_class(Span s, uint e) { return e < s.head ? e : e + 4u * s.vecs; } // e < lone_count(s)

F x_of(uint base, uint c) { return x_at(base + c * p.inner); }
// A probability target's class c of the row at base (0 for class indices).
F prob_of(uint base, uint c) {
#ifdef PROB
  return prob_at(base - p.x_offset + p.t_offset + c * p.inner);
#else
  return F(0.0);
#endif
}

#ifdef VEC4
vec4 x4_of(uint base, uint c) { return vec4(in4_[(base + c) / 4u]); }
vec4 prob4_of(uint base, uint c) {
#ifdef PROB
  return vec4(target4_[(base - p.x_offset + p.t_offset + c) / 4u]);
#else
  return vec4(0.0);
#endif
}
#endif

#ifndef BACKWARD
// ---- forward ----
// Max m, sum of exp(x - m), and the sums of coef * x and of coef, over the elements an invocation saw.
struct Acc {
  F m, s, ux, u;
};

// exp(from - to), where a sum kept against max from is now kept against to >= from (1 where equal: -inf).
F rescale(F from, F to) { return from == to ? F(1.0) : exp(from - to); }

Acc merge(Acc a, Acc b) {
  F m = max(a.m, b.m);
  return Acc(m, a.s * rescale(a.m, m) + b.s * rescale(b.m, m), a.ux + b.ux, a.u + b.u);
}

// Raises a's max to vm where that is larger, rescaling its sum; the max to subtract, never -inf (exp(-inf -
// -inf) would be NaN, where a row's -inf elements add nothing).
F raise_max(inout Acc a, F vm) {
  if (vm > a.m) {
    a.s *= exp(a.m - vm);
    a.m = vm;
  }
  return max(a.m, F_LOWEST);
}

void add_coef(inout Acc a, F v, F q, uint c) {
#ifdef COEFS
  F w = coef(c, q);
  a.ux += w * v;
  a.u += w;
#endif
}

Acc add1(Acc a, F v, F q, uint c) {
  F base = raise_max(a, v);
  a.s += exp(v - base);
  add_coef(a, v, q, c);
  return a;
}

#ifdef VEC4
// Classes c..c+3 at once: one rescale serves the four.
Acc add4(Acc a, vec4 v, vec4 q, uint c) {
  float base = raise_max(a, max(max(v.x, v.y), max(v.z, v.w)));
  vec4 e = exp(v - base);
  a.s += (e.x + e.y) + (e.z + e.w);
  [[unroll]] for (uint k = 0; k < 4u; k++)
    add_coef(a, v[k], q[k], c + k);
  return a;
}
#endif

#ifdef ROWS
shared Acc sh_acc[LOCAL_SIZE];
#ifdef SUBGROUPS
// Each subgroup merges its own, then every invocation merges the subgroups' in order.
Acc group_merge(Acc a) {
  F m = subgroupMax(a.m);
  a = Acc(m, subgroupAdd(a.s * rescale(a.m, m)), subgroupAdd(a.ux), subgroupAdd(a.u));
  if (subgroupElect())
    sh_acc[gl_SubgroupID] = a;
  barrier();
  Acc r = sh_acc[0];
  for (uint i = 1; i < gl_NumSubgroups; i++)
    r = merge(r, sh_acc[i]);
  return r;
}
#else
Acc group_merge(Acc a) {
  uint t = gl_LocalInvocationID.x;
  sh_acc[t] = a;
  barrier();
  for (uint s = LOCAL_SIZE / 2; s > 0u; s >>= 1) {
    if (t < s)
      sh_acc[t] = merge(sh_acc[t], sh_acc[t + s]);
    barrier();
  }
  return sh_acc[0];
}
#endif
#else
Acc group_merge(Acc a) { return a; }
#endif

// The row's accumulators: UNROLL loads in flight per invocation, whole vec4s first, then the lone classes.
Acc row_acc(uint base) {
  Acc a = Acc(F(-1.0 / 0.0), F(0.0), F(0.0), F(0.0));
  Span sp = span_of(base);
#ifdef VEC4
  for (uint i = FIRST; i < sp.vecs; i += UNROLL * STEP) {
    vec4 v[UNROLL], q[UNROLL];
    [[unroll]] for (uint k = 0; k < UNROLL; k++) {
      uint c = sp.head + 4u * min(i + k * STEP, sp.vecs - 1u);
      v[k] = x4_of(base, c);
      q[k] = prob4_of(base, c);
    }
    [[unroll]] for (uint k = 0; k < UNROLL; k++)
      if (i + k * STEP < sp.vecs)
        a = add4(a, v[k], q[k], sp.head + 4u * (i + k * STEP));
  }
#endif
  uint n = lone_count(sp);
  for (uint i = FIRST; i < n; i += UNROLL * STEP) {
    F v[UNROLL], q[UNROLL];
    [[unroll]] for (uint k = 0; k < UNROLL; k++) {
      uint c = lone_class(sp, min(i + k * STEP, n - 1u));
      v[k] = x_of(base, c);
      q[k] = prob_of(base, c);
    }
    [[unroll]] for (uint k = 0; k < UNROLL; k++)
      if (i + k * STEP < n)
        a = add1(a, v[k], q[k], lone_class(sp, i + k * STEP));
  }
  return group_merge(a);
}

void forward(uint r) {
  uint base = row_base(r);
#ifdef OP_NLL
  Acc a = Acc(F(0.0), F(1.0), F(0.0), F(0.0));
#else
  Acc a = row_acc(base);
#endif
  if (FIRST != 0u)
    return;
  F lse = a.m + log(a.s), loss, wt = F(1.0), mass;
#ifdef PROB
  loss = lse * a.u - a.ux;
  mass = a.u;
#else
  uvec2 t = target_of(r);
  bool ignored = t == p.ignore;
  if (!ignored && !in_range(t))
    err_[0] = 1u; // every invocation that writes it writes the same word: no atomic needed
  bool valid = !ignored && in_range(t);
  wt = valid ? weight_at(t.x) : F(0.0);
  F xt = valid ? x_of(base, t.x) : F(0.0);
#ifdef OP_NLL
  loss = -wt * xt;
  mass = wt;
#else
  F keep = 1.0 - SMOOTHING;
  loss = valid ? keep * wt * (lse - xt) + (lse * a.u - a.ux) : F(0.0);
  mass = valid ? keep * wt + a.u : F(0.0);
#endif
#endif
  out_[r] = loss;
  out_[p.row_stride + r] = wt;
  out_[2u * p.row_stride + r] = lse;
  out_[3u * p.row_stride + r] = mass;
}

#else
// ---- backward ----
// What a row's gradient needs besides x: its log-sum-exp, target mass, the loss's gradient, and its target.
struct Row {
  uint base;
  F lse, mass, g;
  bool valid; // not ignored
  uint t;     // the target class (none: ~0u)
  F wt;       // (1 - ls) * its weight
};

Row row_of(uint r) {
  Row w = Row(row_base(r), pack_[r], pack_[p.rows + r], pack_[2u * p.rows + r], true, 0xffffffffu, F(0.0));
#ifndef PROB
  uvec2 t = target_of(r);
  w.valid = t != p.ignore && in_range(t);
  w.t = w.valid ? t.x : 0xffffffffu;
  w.wt = w.valid ? (1.0 - SMOOTHING) * weight_at(w.t) : F(0.0);
#endif
  return w;
}

// d loss / d x of class c (value x, target probability q).
F grad_of(Row w, uint c, F x, F q) {
#ifdef OP_NLL
  return c == w.t ? -w.g * weight_at(w.t) : F(0.0);
#else
  F own = c == w.t ? w.wt : F(0.0);
  return w.valid ? w.g * (exp(x - w.lse) * w.mass - own - coef(c, q)) : F(0.0);
#endif
}

// UNROLL loads in flight, as the forward's: whole vec4s, then the lone classes.
void backward(uint r) {
  Row w = row_of(r);
  Span sp = span_of(w.base);
  uint out_base = w.base - p.x_offset;
#ifdef VEC4
  for (uint i = FIRST; i < sp.vecs; i += UNROLL * STEP) {
    vec4 x[UNROLL], q[UNROLL];
    [[unroll]] for (uint k = 0; k < UNROLL; k++) {
      uint c = sp.head + 4u * min(i + k * STEP, sp.vecs - 1u);
      x[k] = x4_of(w.base, c);
      q[k] = prob4_of(w.base, c);
    }
    [[unroll]] for (uint k = 0; k < UNROLL; k++) {
      uint c = sp.head + 4u * (i + k * STEP);
      if (i + k * STEP < sp.vecs)
        out4_[(out_base + c) / 4u] = TO4(vec4(grad_of(w, c, x[k].x, q[k].x), grad_of(w, c + 1u, x[k].y, q[k].y),
                                              grad_of(w, c + 2u, x[k].z, q[k].z), grad_of(w, c + 3u, x[k].w, q[k].w)));
    }
  }
#endif
  uint n = lone_count(sp);
  for (uint i = FIRST; i < n; i += UNROLL * STEP) {
    F x[UNROLL], q[UNROLL];
    [[unroll]] for (uint k = 0; k < UNROLL; k++) {
      uint c = lone_class(sp, min(i + k * STEP, n - 1u));
      x[k] = x_of(w.base, c);
      q[k] = prob_of(w.base, c);
    }
    [[unroll]] for (uint k = 0; k < UNROLL; k++) {
      uint c = lone_class(sp, i + k * STEP);
      if (i + k * STEP < n)
        store1(out_base + c * p.inner, grad_of(w, c, x[k], q[k]));
    }
  }
}
#endif

void main() {
  uint r = row();
#ifdef BACKWARD
  if (r < p.rows)
    backward(r);
#else
  if (r < p.rows)
    forward(r);
  else if (r < p.row_stride && FIRST == 0u) // the padding: zeros, for the sums over rows
    for (uint k = 0; k < 4u; k++)
      out_[k * p.row_stride + r] = 0.0;
#endif
}
