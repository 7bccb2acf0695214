#version 450
// reduce.comp: every op of the reduce family, one per OP_* define from the op table. A row is the set of
// input elements that make one output element (softmax: one output row). Two-pass ops (var, softmax)
// read their row again after the first merge instead of keeping it, which keeps shared memory small.
// exp and log of doubles, before reduce.glsl: a fused load's float expression (C) brings math.glsl's float forms,
// among them a macro vkt_log10 that would rename math_f64.glsl's function
#if defined(A_FLOAT64) && (defined(OP_SOFTMAX) || defined(OP_LOG_SOFTMAX) || defined(OP_LOGSUMEXP))
#include "math_f64.glsl"
#endif
#include "reduce.glsl"

#ifdef FUSED // reduce_fused.glsl binds the expression's tensors first and defines load_elems()
layout(std430, binding = NOPS) writeonly buffer Out { TO out_[]; };
#ifdef WITH_INDICES
layout(std430, binding = NOPS + 1) writeonly buffer Idx { int64_t idx_[]; };
#endif
#else
layout(std430, binding = 0) writeonly buffer Out { TO out_[]; };
layout(std430, binding = 1) readonly buffer In { TI in_[]; };
#ifdef WITH_INDICES
layout(std430, binding = 2) writeonly buffer Idx { int64_t idx_[]; };
#endif

A load(uint i) { return LOAD(in_[i]); }
#endif

// A second pass over the row reads what the first wrote of the expression's intermediates: it stores none.
#ifdef FUSED
#define SECOND_PASS() stores_values = false
#else
#define SECOND_PASS()
#endif

// Elements r + i * STEP (i < ROW_RUN) of the row at base, and whether each lies in it.
struct Run {
  A x[ROW_RUN];
  bool in_row[ROW_RUN];
};

Run load_run(uint base, uint r) {
  Run u;
  uint at[ROW_RUN];
  [[unroll]] for (uint i = 0; i < ROW_RUN; i++) {
    u.in_row[i] = i * STEP < p.nred - r; // r < nred, so this cannot wrap
    at[i] = base + red_at(r + i * STEP).x;
  }
#ifdef FUSED
  load_elems(at, u.in_row, u.x);
#else
  [[unroll]] for (uint i = 0; i < ROW_RUN; i++)
    u.x[i] = u.in_row[i] ? load(at[i]) : A(0);
#endif
  return u;
}
#define FOR_RUNS(r) for (uint r = FIRST; r < p.nred; r += ROW_RUN * STEP)

#if defined(OP_SUM) || defined(OP_MEAN) || defined(OP_VAR)
GROUP_REDUCE(Sum, group_sum, sum_merge)

// Sum over the row of (x - shift)^power (power 1 or 2), merged over the workgroup.
Sum row_sum(uint base, A shift, int power) {
  Sum a = Sum(A(0), A(0));
  FOR_RUNS(r) {
    Run u = load_run(base, r);
    [[unroll]] for (uint i = 0; i < ROW_RUN; i++) {
      A x = u.x[i] - shift;
      if (u.in_row[i])
        a = sum_add(a, power == 2 ? x * x : x);
    }
  }
  return group_sum(a);
}
#endif
#if defined(OP_AMAX) || defined(OP_AMIN) || defined(OP_ARGMAX) || defined(OP_ARGMIN)
GROUP_REDUCE(Best, group_best, best_merge)
#endif

#if defined(OP_SUM) || defined(OP_MEAN)
void reduce_row(uvec2 base) {
  A s = sum_value(row_sum(base.x, A(0), 1));
#ifdef OP_MEAN
  s /= A(p.nred);
#endif
  if (STORES)
    out_[base.y] = STORE(s);
}

#elif defined(OP_VAR)
// Two passes: the mean, then the squared deviations from it (no cancellation, unlike E[x^2] - E[x]^2).
void reduce_row(uvec2 base) {
  A mean = sum_value(row_sum(base.x, A(0), 1)) / A(p.nred);
  SECOND_PASS();
  A m2 = sum_value(row_sum(base.x, mean, 2));
  A d = max(A(p.nred) - A(p.correction), A(0));
  A v = d > A(0) ? m2 / d : m2 > A(0) ? inf_value() : nan_value();
#ifdef TAKE_SQRT
  v = sqrt(v);
#endif
  if (STORES)
    out_[base.y] = STORE(v);
}

#elif defined(OP_PROD) || defined(OP_ALL) || defined(OP_ANY)
#if defined(OP_PROD)
#define FOLD_INIT A(1)
#define FOLD(a, b) ((a) * (b))
#elif defined(OP_ALL)
#define FOLD_INIT A(1)
#define FOLD(a, b) ((a) != A(0) && (b) != A(0) ? A(1) : A(0))
#else
#define FOLD_INIT A(0)
#define FOLD(a, b) ((a) != A(0) || (b) != A(0) ? A(1) : A(0))
#endif
A fold(A a, A b) { return FOLD(a, b); }
GROUP_REDUCE(A, group_fold, fold)

void reduce_row(uvec2 base) {
  A f = FOLD_INIT;
  FOR_RUNS(r) {
    Run u = load_run(base.x, r);
    [[unroll]] for (uint i = 0; i < ROW_RUN; i++)
      if (u.in_row[i])
        f = FOLD(f, u.x[i]);
  }
  f = group_fold(f);
  if (STORES)
    out_[base.y] = STORE(f);
}

#elif defined(OP_AMAX) || defined(OP_AMIN) || defined(OP_ARGMAX) || defined(OP_ARGMIN)
void reduce_row(uvec2 base) {
  Best b = Best(A(0), NONE);
  FOR_RUNS(r) {
    Run u = load_run(base.x, r);
    [[unroll]] for (uint i = 0; i < ROW_RUN; i++)
      if (u.in_row[i])
        b = best_merge(b, Best(u.x[i], r + i * STEP));
  }
  b = group_best(b);
  if (!STORES)
    return;
#if defined(OP_ARGMAX) || defined(OP_ARGMIN)
  out_[base.y] = TO(b.i);
#else
  out_[base.y] = STORE(b.v);
#endif
#ifdef WITH_INDICES
  idx_[base.y - p.out_offset + p.idx_offset] = int64_t(b.i);
#endif
}

#elif defined(OP_SOFTMAX) || defined(OP_LOG_SOFTMAX) || defined(OP_LOGSUMEXP)
// Two passes over the row: its max m and the sum of exp(x - m) in one (online: the sum so far is scaled
// down whenever m grows), then the output. Subtracting m keeps exp from overflowing. A NaN anywhere in
// the row makes the sum NaN, and with it every output, as in PyTorch. logsumexp takes the first pass
// only: m + log(sum).
struct Soft {
  A m;
  Sum s;
};

Sum sum_scale(Sum a, A f) { return Sum(a.s * f, a.c * f); }

// exp(from - to) for a sum kept against max from, now against to >= from (1 where equal, -inf included)
A rescale(A from, A to) { return from == to ? A(1) : exp(from - to); }

Soft soft_merge(Soft a, Soft b) {
  A m = max(a.m, b.m);
  return Soft(m, sum_merge(sum_scale(a.s, rescale(a.m, m)), sum_scale(b.s, rescale(b.m, m))));
}
GROUP_REDUCE(Soft, group_soft, soft_merge)

void reduce_row(uvec2 base) {
  Soft a = Soft(-inf_value(), Sum(A(0), A(0)));
  FOR_RUNS(r) {
    Run u = load_run(base.x, r);
    [[unroll]] for (uint i = 0; i < ROW_RUN; i++) {
      A x = u.x[i];
      if (!u.in_row[i])
        continue;
      if (x > a.m) {
        a.s = sum_scale(a.s, exp(a.m - x));
        a.m = x;
      }
      // -inf against a max of -inf so far counts as exp(0), as rescale does: exp(-inf - -inf) is NaN,
      // and would spoil a row that later meets a finite max (a causal mask's row). For logsumexp +inf
      // too: its sum is then a count of infs, and m + log(count) is PyTorch's inf; softmax's is NaN.
#ifdef OP_LOGSUMEXP
      bool same_inf = x == a.m && isinf(x);
#else
      bool same_inf = x == a.m && isinf(x) && x < A(0);
#endif
      a.s = sum_add(a.s, same_inf ? A(1) : exp(x - a.m));
    }
  }
  a = group_soft(a);
  A mx = a.m, s = sum_value(a.s);
#ifdef OP_LOGSUMEXP
  if (STORES)
    out_[base.y] = STORE(mx + log(s));
#else
#ifdef OP_LOG_SOFTMAX
  A log_s = log(s);
#endif
  SECOND_PASS();
  FOR_RUNS(r) {
    Run u = load_run(base.x, r);
    [[unroll]] for (uint i = 0; i < ROW_RUN; i++) {
      if (!u.in_row[i] || !ROW_REAL)
        continue;
#ifdef OP_LOG_SOFTMAX
      out_[base.y + red_at(r + i * STEP).y] = STORE((u.x[i] - mx) - log_s);
#else
      out_[base.y + red_at(r + i * STEP).y] = STORE(exp(u.x[i] - mx) / s);
#endif
    }
  }
#endif
}
#endif

void main() {
#if defined(COLUMNS) || defined(TEAMS)
#ifdef FUSED
  stores_values = ROW_REAL;
#endif
  reduce_row(kept_at(min(row(), p.nout - 1)));
#else
  uint o = row();
  if (o >= p.nout)
    return;
  reduce_row(kept_at(o));
#endif
}
