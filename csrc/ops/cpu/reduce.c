/* cpu/reduce.c: the reduce family on strided host views, row by row over the layout the shader uses, rows
 * shared among the pool's threads. Float math runs in double (sums pairwise, as NumPy's), integer math in int64
 * with wrap-around; var takes two passes and softmax three, as in the shader. Sums, products, extremes and var
 * of float32, float64, int32 and int64 read dense rows in place through typed loops, and softmax's exp vectorises
 * (vkt_expf for float32 rows, vkt_exp for float64); a whole-tensor sum is split into fixed blocks
 * summed in parallel and column sums add whole rows at a time, so that no result depends on the number of
 * threads. The cpu device's kernel and the shader's reference. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../reduce.h"
#include "math.h"
#include "threads.h"

/* One row of the input: the elements reduced into one output element. */
typedef struct {
  const vkt_reduce_layout *l;
  const char *in; /* host address of the input's element 0 */
  vkt_dtype dtype, compute;
  int64_t base; /* elements: the row's first element */
} row;

/* Element r of the row in the compute type, as the shader's LOAD converts it. */
static vkt_scalar load(const row *w, int64_t r) {
  int64_t at[2];
  vkt_reduce_locate(w->l->rrank, w->l->rshape, w->l->rstride, r, at);
  vkt_scalar v = vkt_scalar_load(w->dtype, w->in + (w->base + at[0]) * vkt_dtype_size(w->dtype));
  if (!vkt_dtypes[w->compute].is_float)
    return v.is_float ? (vkt_scalar){false, 0, (int64_t)v.f} : v;
  double f = v.is_float ? v.f : (double)v.i;
  return (vkt_scalar){true, w->compute == VKT_FLOAT32 ? (double)(float)f : f, 0};
}

/* Pairwise summation as NumPy does it: blocks of up to PW_BLOCK elements summed in 8 partial sums (which the
 * compiler vectorises), blocks combined by halving. The error grows with log(n), not n, and there is no
 * compensation term, whose inf - inf would turn an infinite sum into NaN. */
#define PW_BLOCK 128
#define PAIRWISE(NAME, T, V)                                                                                           \
  VKT_SIMD static double NAME(const T *p, int64_t n, double shift) {                                                   \
    if (n > PW_BLOCK) {                                                                                                \
      int64_t h = n / 2;                                                                                               \
      h -= h % 8;                                                                                                      \
      return NAME(p, h, shift) + NAME(p + h, n - h, shift);                                                            \
    }                                                                                                                  \
    double s = 0;                                                                                                      \
    int64_t i = 0;                                                                                                     \
    if (n >= 8) {                                                                                                      \
      double r[8];                                                                                                     \
      for (int k = 0; k < 8; k++)                                                                                      \
        r[k] = V(p[k]);                                                                                                \
      for (i = 8; i + 8 <= n; i += 8)                                                                                  \
        for (int k = 0; k < 8; k++)                                                                                    \
          r[k] += V(p[i + k]);                                                                                         \
      s = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));                                           \
    }                                                                                                                  \
    for (; i < n; i++)                                                                                                 \
      s += V(p[i]);                                                                                                    \
    return s;                                                                                                          \
  }
#define PLAIN(x) ((void)shift, (double)(x))
#define SQUARED(x) (((double)(x)-shift) * ((double)(x)-shift))
PAIRWISE(pairwise_f32, float, PLAIN)
PAIRWISE(pairwise_f64, double, PLAIN)
PAIRWISE(squares_f32, float, SQUARED) /* var's second pass, with the mean as shift */
PAIRWISE(squares_f64, double, SQUARED)

/* Elements [lo, lo + n) of the row, (x - shift)^power, summed pairwise: leaves of PW_BLOCK loaded elements. */
static double sum_range(const row *w, int64_t lo, int64_t n, double shift, int power) {
  if (n > PW_BLOCK) {
    int64_t h = n / 2;
    h -= h % 8;
    return sum_range(w, lo, h, shift, power) + sum_range(w, lo + h, n - h, shift, power);
  }
  double buf[PW_BLOCK];
  for (int64_t i = 0; i < n; i++) {
    double x = load(w, lo + i).f - shift;
    buf[i] = power == 2 ? x * x : x;
  }
  return pairwise_f64(buf, n, 0);
}

/* The row's elements where they lie in one dense run (NULL elsewhere). */
static const char *dense_run(const row *w) {
  const vkt_reduce_layout *l = w->l;
  if (l->rrank > 1 || (l->rrank == 1 && l->rstride[0] != 1))
    return NULL;
  return w->in + w->base * vkt_dtype_size(w->dtype);
}

/* Sum of (x - shift)^power over the row: pairwise in double, or wrapping int64. */
static vkt_scalar sum_row(const row *w, double shift, int power) {
  const char *run = dense_run(w);
  if (!vkt_dtypes[w->compute].is_float) {
    uint64_t n = 0;
    if (run && w->dtype == VKT_INT64)
      for (int64_t r = 0; r < w->l->nred; r++)
        n += (uint64_t)((const int64_t *)run)[r];
    else
      for (int64_t r = 0; r < w->l->nred; r++)
        n += (uint64_t)load(w, r).i;
    return (vkt_scalar){false, 0, (int64_t)n};
  }
  bool plain = run && power == 1 && shift == 0 && w->dtype == w->compute;
  if (plain && w->dtype == VKT_FLOAT32)
    return (vkt_scalar){true, pairwise_f32((const float *)run, w->l->nred, 0), 0};
  if (plain && w->dtype == VKT_FLOAT64)
    return (vkt_scalar){true, pairwise_f64((const double *)run, w->l->nred, 0), 0};
  return (vkt_scalar){true, sum_range(w, 0, w->l->nred, shift, power), 0};
}

/* Typed loops over a dense run of float32, float64, int32 or int64 (dense_typed says when), which the compiler
 * vectorises: 8 lanes of products, 16 of extremes (BEST_DENSE), where the generic loops load element by element
 * through vkt_scalar. */
#define PROD_DENSE(NAME, T, ACC)                                                                                       \
  VKT_SIMD static ACC NAME(const T *p, int64_t n) {                                                                    \
    ACC lane[8] = {1, 1, 1, 1, 1, 1, 1, 1};                                                                            \
    int64_t r = 0;                                                                                                     \
    for (; r + 8 <= n; r += 8)                                                                                         \
      for (int k = 0; k < 8; k++)                                                                                      \
        lane[k] *= (ACC)p[r + k];                                                                                      \
    for (; r < n; r++)                                                                                                 \
      lane[0] *= (ACC)p[r];                                                                                            \
    return ((lane[0] * lane[1]) * (lane[2] * lane[3])) * ((lane[4] * lane[5]) * (lane[6] * lane[7]));                  \
  }
PROD_DENSE(prod_f32, float, double)
PROD_DENSE(prod_f64, double, double)
PROD_DENSE(prod_i32, int32_t, uint64_t) /* wrapping, as the int64 math does */
PROD_DENSE(prod_i64, int64_t, uint64_t)

/* The position of a dense run's extreme: the first NaN, else the first extreme. One pass in 16 lanes, each taking the
 * extreme of four elements a step (a tree, so that a lane waits on one compare a step) and noting the last block of
 * 64 elements where it grew, with 16 NaN flags (F: an integer as wide as T, so that a block number or a flag is one
 * lane of T's vector; an int32 counts the blocks of 2^37 elements); the block number is kept by max, as a select became
 * a masked store that held the lanes in memory. A lane that holds the extreme has it first at one of its four places in
 * its block; the first of those places over the lanes is the answer, unless the tail has a larger element; a row
 * shorter than a block is all tail. After a NaN, a search for the first, 32 compares ORed a step. */
#define BEST_LANES 16
#define BEST_STEP (4 * BEST_LANES)
#define BEST_DENSE(NAME, T, F, CMP, UNORDERED)                                                                         \
  VKT_SIMD static int64_t NAME##_nan(const T *p, int64_t n) {                                                          \
    int64_t at = 0;                                                                                                    \
    for (; at + 32 <= n; at += 32) {                                                                                   \
      F hit = 0;                                                                                                       \
      for (int k = 0; k < 32; k++)                                                                                     \
        hit |= p[at + k] != p[at + k];                                                                                 \
      if (hit)                                                                                                         \
        break;                                                                                                         \
    }                                                                                                                  \
    while (p[at] == p[at])                                                                                             \
      at++;                                                                                                            \
    return at;                                                                                                         \
  }                                                                                                                    \
  /* The extreme of the lanes in *m, and its first place in the r elements they read. */                               \
  VKT_SIMD static int64_t NAME##_first(const T *p, int64_t r, const T *lane, const F *block, T *m) {                   \
    T best = lane[0];                                                                                                  \
    int64_t at = r;                                                                                                    \
    for (int k = 1; k < BEST_LANES; k++)                                                                               \
      best = lane[k] CMP best ? lane[k] : best;                                                                        \
    for (int k = 0; k < BEST_LANES; k++) {                                                                             \
      int64_t i = block[k] * (int64_t)BEST_STEP + k;                                                                   \
      if (lane[k] != best)                                                                                             \
        continue;                                                                                                      \
      while (p[i] != best)                                                                                             \
        i += BEST_LANES;                                                                                               \
      at = i < at ? i : at;                                                                                            \
    }                                                                                                                  \
    *m = best;                                                                                                         \
    return at;                                                                                                         \
  }                                                                                                                    \
  VKT_SIMD static int64_t NAME(const T *p, int64_t n) {                                                                \
    T lane[BEST_LANES], m = p[0];                                                                                      \
    F block[BEST_LANES] = {0}, flag[BEST_LANES] = {0}, b = 0, nan = 0;                                                 \
    int64_t r = 0, at = 0;                                                                                             \
    for (int k = 0; k < BEST_LANES; k++) /* a lane's first element, one of its places in block 0 */                    \
      lane[k] = p[n < BEST_STEP ? 0 : k];                                                                              \
    for (; r + BEST_STEP <= n; r += BEST_STEP, b++)                                                                    \
      for (int k = 0; k < BEST_LANES; k++) {                                                                           \
        const T *q = p + r + k; /* the lane's four elements, BEST_LANES apart */                                       \
        T x0 = q[0], x1 = q[BEST_LANES], x2 = q[2 * BEST_LANES], x3 = q[3 * BEST_LANES];                               \
        T x01 = x0 CMP x1 ? x0 : x1, x23 = x2 CMP x3 ? x2 : x3, x = x01 CMP x23 ? x01 : x23;                           \
        F grew = b & -(F)(x CMP lane[k]); /* the block's number where the lane grows, else 0 */                        \
        flag[k] |= UNORDERED(x0, x1) | UNORDERED(x2, x3);                                                              \
        block[k] = grew > block[k] ? grew : block[k];                                                                  \
        lane[k] = x CMP lane[k] ? x : lane[k];                                                                         \
      }                                                                                                                \
    for (int k = 0; k < BEST_LANES; k++)                                                                               \
      nan |= flag[k];                                                                                                  \
    if (r > 0)                                                                                                         \
      at = NAME##_first(p, r, lane, block, &m);                                                                        \
    for (int64_t q = r; q < n; q++) {                                                                                  \
      nan |= UNORDERED(p[q], p[q]);                                                                                    \
      if (p[q] CMP m)                                                                                                  \
        m = p[q], at = q;                                                                                              \
    }                                                                                                                  \
    return nan ? NAME##_nan(p, n) : at;                                                                                \
  }
#define NEVER_NAN(x, y) 0
BEST_DENSE(max_f32, float, int32_t, >, isunordered)
BEST_DENSE(max_f64, double, int64_t, >, isunordered)
BEST_DENSE(max_i32, int32_t, int32_t, >, NEVER_NAN)
BEST_DENSE(max_i64, int64_t, int64_t, >, NEVER_NAN)
BEST_DENSE(min_f32, float, int32_t, <, isunordered)
BEST_DENSE(min_f64, double, int64_t, <, isunordered)
BEST_DENSE(min_i32, int32_t, int32_t, <, NEVER_NAN)
BEST_DENSE(min_i64, int64_t, int64_t, <, NEVER_NAN)

/* The row's elements when they lie densely in a dtype with typed loops and convert exactly to the compute type
 * (NULL elsewhere). */
static const char *dense_typed(const row *w) {
  vkt_dtype d = w->dtype, c = w->compute;
  bool typed = d == VKT_FLOAT32 || d == VKT_FLOAT64 || d == VKT_INT32 || d == VKT_INT64;
  if (!typed || vkt_dtypes[d].is_float != vkt_dtypes[c].is_float || vkt_dtype_size(c) < vkt_dtype_size(d))
    return NULL;
  return dense_run(w);
}

/* prod, all, any */
static vkt_scalar fold_row(const row *w, int id) {
  bool fl = vkt_dtypes[w->compute].is_float;
  const char *run = id == VKT_OP_PROD ? dense_typed(w) : NULL;
  int64_t n = w->l->nred;
  switch (run ? w->dtype : VKT_DTYPE_COUNT) {
  case VKT_FLOAT32: return (vkt_scalar){true, prod_f32((const float *)run, n), 0};
  case VKT_FLOAT64: return (vkt_scalar){true, prod_f64((const double *)run, n), 0};
  case VKT_INT32: return (vkt_scalar){false, 0, (int64_t)prod_i32((const int32_t *)run, n)};
  case VKT_INT64: return (vkt_scalar){false, 0, (int64_t)prod_i64((const int64_t *)run, n)};
  default: break;
  }
  double f = 1;
  uint64_t i = 1;
  for (int64_t r = 0; r < n; r++) {
    vkt_scalar v = load(w, r);
    if (id != VKT_OP_PROD) {
      if ((fl ? v.f != 0 : v.i != 0) != (id == VKT_OP_ALL))
        return (vkt_scalar){false, 0, id == VKT_OP_ANY};
    } else if (fl) {
      f *= v.f;
    } else {
      i *= (uint64_t)v.i;
    }
  }
  if (id != VKT_OP_PROD)
    return (vkt_scalar){false, 0, id == VKT_OP_ALL};
  return fl ? (vkt_scalar){true, f, 0} : (vkt_scalar){false, 0, (int64_t)i};
}

/* The position of a dense run's extreme through max_T/min_T. */
#define BEST_CASE(DT, T, SUFFIX)                                                                                       \
  case DT: at = largest ? max_##SUFFIX((const T *)run, n) : min_##SUFFIX((const T *)run, n); break;

/* The row's largest (smallest) element and its position: the first NaN, else the first extreme (whose bits, a
 * zero's sign among them, are the answer). */
static int64_t best_row(const row *w, bool largest, vkt_scalar *best) {
  const char *run = dense_typed(w);
  int64_t at = 0, n = w->l->nred;
  switch (run ? w->dtype : VKT_DTYPE_COUNT) {
    BEST_CASE(VKT_FLOAT32, float, f32)
    BEST_CASE(VKT_FLOAT64, double, f64)
    BEST_CASE(VKT_INT32, int32_t, i32)
    BEST_CASE(VKT_INT64, int64_t, i64)
  default: break;
  }
  if (run) { /* the compute type holds T: the element as it lies */
    *best = vkt_scalar_load(w->dtype, run + at * vkt_dtype_size(w->dtype));
    return at;
  }
  *best = load(w, 0);
  for (int64_t r = 1; r < w->l->nred && !(best->is_float && isnan(best->f)); r++) {
    vkt_scalar v = load(w, r);
    bool better = v.is_float ? isnan(v.f) || (largest ? v.f > best->f : v.f < best->f)
                             : (largest ? v.i > best->i : v.i < best->i);
    if (better)
      *best = v, at = r;
  }
  return at;
}

static double var_row(const row *w, const vkt_op_args *a) {
  const char *run = vkt_dtypes[w->dtype].is_float ? dense_typed(w) : NULL;
  double n = (double)w->l->nred, mean = sum_row(w, 0, 1).f / n, m2;
  if (run && w->dtype == VKT_FLOAT32)
    m2 = squares_f32((const float *)run, w->l->nred, mean);
  else if (run && w->dtype == VKT_FLOAT64)
    m2 = squares_f64((const double *)run, w->l->nred, mean);
  else
    m2 = sum_row(w, mean, 2).f;
  double d = fmax(n - a->param[0].f, 0), v = d > 0 ? m2 / d : m2 > 0 ? INFINITY : NAN;
  return a->flags & VKT_REDUCE_SQRT ? sqrt(v) : v;
}

/* The output element of a reduction's row; *index gets the position for argmax/argmin and max/min. */
static vkt_scalar reduce_row(int id, const row *w, const vkt_op_args *a, int64_t *index) {
  vkt_scalar v;
  switch (id) {
  case VKT_OP_SUM: return sum_row(w, 0, 1);
  case VKT_OP_MEAN: return (vkt_scalar){true, sum_row(w, 0, 1).f / (double)w->l->nred, 0};
  case VKT_OP_VAR: return (vkt_scalar){true, var_row(w, a), 0};
  case VKT_OP_PROD:
  case VKT_OP_ALL:
  case VKT_OP_ANY: return fold_row(w, id);
  default: { /* amax, amin, argmax, argmin; max and min with indices have out2 */
    bool arg = id == VKT_OP_ARGMAX || id == VKT_OP_ARGMIN;
    *index = best_row(w, id == VKT_OP_AMAX || id == VKT_OP_ARGMAX, &v);
    return arg ? (vkt_scalar){false, 0, *index} : v;
  }
  }
}

static void softmax_row(const row *w, const vkt_tensor *out, int64_t out_base, bool log_out) {
  vkt_scalar m;
  best_row(w, true, &m);
  double s = 0;
  for (int64_t r = 0; r < w->l->nred; r++)
    s += exp(load(w, r).f - m.f);
  char *dst = vkt_tensor_host(out);
  int size = vkt_dtype_size(out->dtype);
  for (int64_t r = 0; r < w->l->nred; r++) {
    int64_t at[2];
    double x = load(w, r).f - m.f;
    vkt_reduce_locate(w->l->rrank, w->l->rshape, w->l->rstride, r, at);
    vkt_scalar_store(out->dtype, (vkt_scalar){true, log_out ? x - log(s) : exp(x) / s, 0},
                     dst + (out_base + at[1]) * size);
  }
}

/* softmax_row's math on a dense row of float32 or float64 computed in its own dtype and written densely: a NaN
 * anywhere makes the max NaN, and so every output. The max is the element max_T finds; the exps are summed in 16
 * lanes of T over blocks of 64 elements (four adds a lane, so that float32 loses nothing that matters), each
 * block's lanes added into 16 float64 sums, so that the loop vectorises without a conversion an element;
 * softmax keeps each exp for its last pass. */
#define SOFTMAX_DENSE(NAME, T, EXP, MAX)                                                                               \
  VKT_SIMD static double NAME##_exps(const T *x, T *y, int64_t n, T m, bool store) {                                   \
    double acc[16] = {0}, s = 0;                                                                                       \
    int64_t r = 0;                                                                                                     \
    for (; r + 64 <= n; r += 64) {                                                                                     \
      T lane[16] = {0};                                                                                                \
      if (store)                                                                                                       \
        for (int j = 0; j < 64; j += 16)                                                                               \
          for (int k = 0; k < 16; k++) {                                                                               \
            T e = EXP(x[r + j + k], m);                                                                                \
            lane[k] += e;                                                                                              \
            y[r + j + k] = e;                                                                                          \
          }                                                                                                            \
      else                                                                                                             \
        for (int j = 0; j < 64; j += 16)                                                                               \
          for (int k = 0; k < 16; k++)                                                                                 \
            lane[k] += EXP(x[r + j + k], m);                                                                           \
      for (int k = 0; k < 16; k++)                                                                                     \
        acc[k] += lane[k];                                                                                             \
    }                                                                                                                  \
    for (; r < n; r++) {                                                                                               \
      T e = EXP(x[r], m);                                                                                              \
      s += e;                                                                                                          \
      if (store)                                                                                                       \
        y[r] = e;                                                                                                      \
    }                                                                                                                  \
    for (int k = 0; k < 16; k++)                                                                                       \
      s += acc[k];                                                                                                     \
    return s;                                                                                                          \
  }                                                                                                                    \
  VKT_SIMD static void NAME##_last(const T *x, T *y, int64_t n, double mm, double s, bool log_out) {                   \
    double ls = log(s), inv = 1 / s;                                                                                   \
    if (log_out)                                                                                                       \
      for (int64_t r = 0; r < n; r++)                                                                                  \
        y[r] = (T)(((double)x[r] - mm) - ls);                                                                          \
    else /* the exps stored above times 1 / s (a multiply an element, not a division), as PyTorch does */              \
      for (int64_t r = 0; r < n; r++)                                                                                  \
        y[r] = (T)((double)y[r] * inv);                                                                                \
  }                                                                                                                    \
  static void NAME(const T *x, T *y, int64_t n, bool log_out) {                                                        \
    T m = x[MAX(x, n)];                                                                                                \
    NAME##_last(x, y, n, (double)m, NAME##_exps(x, y, n, m, !log_out), log_out);                                       \
  }
/* float32 rows take exp in float32, as PyTorch does: twice the lanes and half the polynomial of float64's. */
#define EXP_F32(x, m) vkt_expf((x) - (m))
#define EXP_F64(x, m) vkt_exp((x) - (m))
SOFTMAX_DENSE(softmax_f32, float, EXP_F32, max_f32)
SOFTMAX_DENSE(softmax_f64, double, EXP_F64, max_f64)

/* Whether a softmax row takes softmax_f32/f64. */
static bool dense_softmax(const vkt_op_args *a, const vkt_reduce_layout *l) {
  vkt_dtype d = a->in[0]->dtype;
  return (d == VKT_FLOAT32 || d == VKT_FLOAT64) && a->compute == d && a->out->dtype == d && l->nred > 0 &&
         (l->rrank == 0 || (l->rrank == 1 && l->rstride[0] == 1 && l->rstride[VKT_MAX_DIMS] == 1));
}

typedef struct {
  int id;
  const vkt_op_args *a;
  const vkt_reduce_layout *l;
  double *partial; /* block sums of a whole-tensor sum */
} red_job;

/* Output elements [o0, o1), each its row. */
static void rows_part(void *ctx, int64_t o0, int64_t o1) {
  const red_job *j = ctx;
  const vkt_op_args *a = j->a;
  const vkt_reduce_layout *l = j->l;
  row w = {l, vkt_tensor_host(a->in[0]), a->in[0]->dtype, a->compute, 0};
  char *dst = vkt_tensor_host(a->out);
  int size = vkt_dtype_size(a->out->dtype);
  bool softmax = j->id == VKT_OP_SOFTMAX || j->id == VKT_OP_LOG_SOFTMAX, fast = softmax && dense_softmax(a, l);
  for (int64_t o = o0; o < o1; o++) {
    int64_t at[2], index = 0;
    vkt_reduce_locate(l->krank, l->kshape, l->kstride, o, at);
    w.base = at[0];
    if (fast && a->in[0]->dtype == VKT_FLOAT32) {
      softmax_f32((const float *)w.in + at[0], (float *)dst + at[1], l->nred, j->id == VKT_OP_LOG_SOFTMAX);
      continue;
    }
    if (fast) {
      softmax_f64((const double *)w.in + at[0], (double *)dst + at[1], l->nred, j->id == VKT_OP_LOG_SOFTMAX);
      continue;
    }
    if (softmax) {
      softmax_row(&w, a->out, at[1], j->id == VKT_OP_LOG_SOFTMAX);
      continue;
    }
    vkt_scalar_store(a->out->dtype, reduce_row(j->id, &w, a, &index), dst + at[1] * size);
    if (a->out2) /* the indices have the output's shape and strides */
      vkt_scalar_store(VKT_INT64, (vkt_scalar){false, 0, index}, vkt_tensor_host(a->out2) + at[1] * 8);
  }
}

/* Whether a float sum or mean reads its input as is: float32 or float64, computed and stored in that dtype. */
static bool plain_sum(const red_job *j) {
  const vkt_op_args *a = j->a;
  vkt_dtype d = a->in[0]->dtype;
  return (j->id == VKT_OP_SUM || j->id == VKT_OP_MEAN) && (d == VKT_FLOAT32 || d == VKT_FLOAT64) && a->compute == d &&
         a->out->dtype == d;
}

#define SUM_BLOCK 65536 /* elements of a whole-tensor sum per block */

static void blocks_part(void *ctx, int64_t b0, int64_t b1) {
  const red_job *j = ctx;
  const char *in = vkt_tensor_host(j->a->in[0]);
  int64_t n = j->l->nred;
  for (int64_t b = b0; b < b1; b++) {
    int64_t lo = b * SUM_BLOCK, len = n - lo < SUM_BLOCK ? n - lo : SUM_BLOCK;
    j->partial[b] = j->a->in[0]->dtype == VKT_FLOAT32 ? pairwise_f32((const float *)in + lo, len, 0)
                                                      : pairwise_f64((const double *)in + lo, len, 0);
  }
}

/* A sum over one dense run longer than a block: blocks in parallel, their sums added pairwise. */
static vkt_status whole_sum(red_job *j) {
  int64_t nblocks = (j->l->nred + SUM_BLOCK - 1) / SUM_BLOCK;
  if (!(j->partial = malloc(sizeof(double) * (size_t)nblocks)))
    return vkt_fail(VKT_ERR_NOMEM, "out of host memory for a sum");
  vkt_parallel_for(nblocks, 1, blocks_part, j);
  double s = pairwise_f64(j->partial, nblocks, 0) / (j->id == VKT_OP_MEAN ? (double)j->l->nred : 1);
  free(j->partial);
  vkt_scalar_store(j->a->out->dtype, (vkt_scalar){true, s, 0}, vkt_tensor_host(j->a->out));
  return VKT_OK;
}

#define COLUMN_BLOCK 2048 /* output elements a column sum accumulates at once: long runs of each input row */

/* acc[0, n) += the n elements from b on of each input row the reduced positions [0, nred) point at: four rows a
 * pass, added in pairs, so that each pass loads and stores the accumulators once for four rows. */
#define ADD_ROWS(NAME, T)                                                                                              \
  VKT_SIMD static void NAME(const vkt_reduce_layout *l, const T *in, int64_t b, int64_t n, double *acc) {              \
    int64_t r = 0, at[2];                                                                                              \
    for (; r + 4 <= l->nred; r += 4) {                                                                                 \
      const T *p[4];                                                                                                   \
      for (int q = 0; q < 4; q++)                                                                                      \
        vkt_reduce_locate(l->rrank, l->rshape, l->rstride, r + q, at), p[q] = in + at[0] + b;                          \
      for (int64_t c = 0; c < n; c++)                                                                                  \
        acc[c] += ((double)p[0][c] + (double)p[1][c]) + ((double)p[2][c] + (double)p[3][c]);                           \
    }                                                                                                                  \
    for (; r < l->nred; r++) {                                                                                         \
      vkt_reduce_locate(l->rrank, l->rshape, l->rstride, r, at);                                                       \
      for (int64_t c = 0; c < n; c++)                                                                                  \
        acc[c] += (double)in[at[0] + b + c];                                                                           \
    }                                                                                                                  \
  }
ADD_ROWS(add_rows_f32, float)
ADD_ROWS(add_rows_f64, double)

/* Output elements [c0, c1) of a column sum (one kept dim, dense in input and output), COLUMN_BLOCK at a time. */
static void columns_part(void *ctx, int64_t c0, int64_t c1) {
  const red_job *j = ctx;
  const vkt_reduce_layout *l = j->l;
  bool f32 = j->a->in[0]->dtype == VKT_FLOAT32;
  const char *in = vkt_tensor_host(j->a->in[0]);
  char *out = vkt_tensor_host(j->a->out);
  double divisor = j->id == VKT_OP_MEAN ? (double)l->nred : 1;
  for (int64_t b = c0; b < c1; b += COLUMN_BLOCK) {
    int64_t n = c1 - b < COLUMN_BLOCK ? c1 - b : COLUMN_BLOCK;
    double acc[COLUMN_BLOCK] = {0};
    if (f32)
      add_rows_f32(l, (const float *)in, b, n, acc);
    else
      add_rows_f64(l, (const double *)in, b, n, acc);
    for (int64_t c = 0; c < n; c++) {
      int64_t o = (b + c) * l->kstride[VKT_MAX_DIMS];
      if (f32)
        ((float *)out)[o] = (float)(acc[c] / divisor);
      else
        ((double *)out)[o] = acc[c] / divisor;
    }
  }
}

vkt_status vkt_cpu_reduce(const vkt_op *op, const vkt_op_args *a) {
  vkt_reduce_layout l;
  vkt_reduce_layout_of(a, &l);
  red_job j = {(int)(op - vkt_ops), a, &l, NULL};
  if (l.nout == 0)
    return VKT_OK;
  bool dense = l.rrank == 0 || (l.rrank == 1 && l.rstride[0] == 1);
  if (plain_sum(&j) && l.nout == 1 && dense && l.nred > SUM_BLOCK)
    return whole_sum(&j);
  if (plain_sum(&j) && l.krank == 1 && l.kstride[0] == 1 && !dense && l.nred > 0) {
    vkt_parallel_for(l.nout, VKT_GRAIN / l.nred + 1, columns_part, &j);
    return VKT_OK;
  }
  vkt_parallel_for(l.nout, VKT_GRAIN / (l.nred + 1) + 1, rows_part, &j);
  return VKT_OK;
}
