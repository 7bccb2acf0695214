/* cpu/math.c: per-element math of the elementwise ops, mirroring shaders/math.glsl and the GLSL in
 * the op table. float64 throughout, so float32 results round once. */
#include <math.h>

#include "loops.h"
#include "math.h"

_Thread_local bool vkt_cpu_zero_division;

#define P0F (a->param[0].is_float ? a->param[0].f : (double)a->param[0].i)
#define P1F (a->param[1].is_float ? a->param[1].f : (double)a->param[1].i)
#define P0I (a->param[0].is_float ? (int64_t)a->param[0].f : a->param[0].i)
#define P1I (a->param[1].is_float ? (int64_t)a->param[1].f : a->param[1].i)

/* F(name, float expression, int expression): x, y and a are in scope. */
#define F(name, fexpr, iexpr)                                                                                          \
  double vkt_f_##name(double x, double y, const vkt_op_args *a) {                                                      \
    (void)x, (void)y, (void)a;                                                                                         \
    return fexpr;                                                                                                      \
  }                                                                                                                    \
  int64_t vkt_i_##name(int64_t x, int64_t y, const vkt_op_args *a) {                                                   \
    (void)x, (void)y, (void)a;                                                                                         \
    return iexpr;                                                                                                      \
  }

static double sigmoid(double x) { return 1.0 / (1.0 + vkt_exp(-x)); }

static int64_t ipow(int64_t x, int64_t y) {
  int64_t r = 1;
  for (; y > 0; y >>= 1, x *= x)
    if (y & 1)
      r *= x;
  return r;
}

static double fsign(double x) { return x > 0 ? 1.0 : x < 0 ? -1.0 : x; }

static int64_t idiv_floor(int64_t x, int64_t y) {
  if (y == 0)
    return vkt_cpu_zero_division = true, 0;
  int64_t q = x / y;
  return (q * y != x && ((x < 0) != (y < 0))) ? q - 1 : q;
}

static int64_t iremainder(int64_t x, int64_t y) {
  if (y == 0)
    return vkt_cpu_zero_division = true, 0;
  int64_t r = x % y;
  return (r != 0 && ((r < 0) != (y < 0))) ? r + y : r;
}

static double fremainder(double x, double y) {
  double r = fmod(x, y);
  return (r != 0 && ((r < 0) != (y < 0))) ? r + y : r;
}

static double fclamp(double x, const vkt_op_args *a) { return isnan(x) ? x : fmin(fmax(x, P0F), P1F); }
static double nan_max(double x, double y) { return isnan(x) || isnan(y) ? x + y : fmax(x, y); }
static double nan_min(double x, double y) { return isnan(x) || isnan(y) ? x + y : fmin(x, y); }

F(relu, x > 0 ? x : (isnan(x) ? x : 0.0), x > 0 ? x : 0)
F(gelu, 0.5 * x * (1.0 + erf(x * M_SQRT1_2)), 0)
F(gelu_tanh, 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))), 0)
F(silu, x *sigmoid(x), 0)
F(sigmoid, sigmoid(x), 0)
F(tanh, tanh(x), 0)
F(leaky_relu, x >= 0 ? x : x * P0F, x >= 0 ? x : (int64_t)((double)x * P0F))
F(elu, x > 0 ? x : P0F * (exp(x) - 1.0), 0)
F(softplus, x *P0F > P1F ? x : log1p(exp(x * P0F)) / P0F, 0)
F(neg, -x, -x)
F(abs, fabs(x), x < 0 ? -x : x)
F(exp, vkt_exp(x), 0)
F(log, log(x), 0)
F(sqrt, sqrt(x), 0)
F(rsqrt, 1.0 / sqrt(x), 0)
F(sin, sin(x), 0)
F(cos, cos(x), 0)
F(square, x *x, x *x)
F(reciprocal, 1.0 / x, 0)
F(clamp, fclamp(x, a), x<P0I ? P0I : x> P1I ? P1I : x)
F(sign, fsign(x), x > 0 ? 1 : x < 0 ? -1 : 0)
F(floor, floor(x), x)
F(ceil, ceil(x), x)
F(round, nearbyint(x), x)
F(logical_not, x == 0, x == 0)
F(identity, x, x)
F(add, x + y * P1F, x + y * P1I)
F(sub, x - y * P1F, x - y * P1I)
F(mul, x *y, x *y)
F(div, x / y, y == 0 ? (vkt_cpu_zero_division = true, 0) : x / y)
F(div_trunc, trunc(x / y), y == 0 ? (vkt_cpu_zero_division = true, 0) : x / y)
F(div_floor, floor(x / y), idiv_floor(x, y))
F(pow, pow(x, y), ipow(x, y))
F(maximum, nan_max(x, y), x > y ? x : y)
F(minimum, nan_min(x, y), x < y ? x : y)
F(remainder, fremainder(x, y), iremainder(x, y))
F(eq, x == y, x == y)
F(ne, x != y, x != y)
F(lt, x < y, x < y)
F(le, x <= y, x <= y)
F(gt, x > y, x > y)
F(ge, x >= y, x >= y)
F(logical_and, x != 0 && y != 0, x != 0 && y != 0)
F(logical_or, x != 0 || y != 0, x != 0 || y != 0)

/* ---- typed loops (loops.h): every op of VKT_MATH_FUNCS, with its math above inlined ---- */

VKT_MATH_FUNCS(VKT_MATH_LOOPS)

static const vkt_math_loops loops[] = {VKT_MATH_FUNCS(VKT_MATH_LOOPS_ENTRY)};

static int loop_dtype(vkt_dtype d) {
  switch (d) {
  case VKT_FLOAT32: return VKT_LOOP_F32;
  case VKT_FLOAT64: return VKT_LOOP_F64;
  case VKT_INT32: return VKT_LOOP_I32;
  case VKT_INT64: return VKT_LOOP_I64;
  default: return -1;
  }
}

vkt_math_loop *vkt_math_loop_for(const vkt_op *op, const vkt_op_args *a) {
  int dt = loop_dtype(a->compute);
  bool bool_out = a->out->dtype == VKT_BOOL;
  if (!op->f || dt < 0 || (!bool_out && a->out->dtype != a->compute))
    return NULL;
  for (int k = 0; k < a->nin; k++)
    if (a->in[k]->dtype != a->compute)
      return NULL;
  int form = a->nin == 2 ? VKT_LOOP_TENSORS : a->scalar == VKT_SCALAR_LHS ? VKT_LOOP_X_SCALAR : VKT_LOOP_Y_SCALAR;
  for (size_t i = 0; i < sizeof loops / sizeof loops[0]; i++)
    if (loops[i].f == op->f)
      return loops[i].loop[dt][bool_out][form];
  return NULL;
}
