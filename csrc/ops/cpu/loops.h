/* loops.h: typed loops of the elementwise ops over one row of elements, instantiated by math.c for each op
 * of VKT_MATH_FUNCS, where the op's math functions are in scope to inline. One loop reads its operands in
 * their own dtype, computes as the generic kernel does (float64 for floats, so float32 results round once;
 * int64 for integers, wrapping) and stores in the output's dtype: no per-element call or conversion
 * through vkt_scalar. */
#ifndef VKT_CPU_LOOPS_H
#define VKT_CPU_LOOPS_H

#include "../table.h"
#include "threads.h"

/* n elements of a row; strides are bytes (o, x, y). A scalar operand (param[0]: the rhs of a binary op with
 * a number, every unary op's y, or a number lhs) is one element of the compute type with stride 0. */
typedef void vkt_math_loop(char *o, const char *x, const char *y, int64_t n, const int64_t *strides,
                           const vkt_op_args *args);

/* The compute dtypes with typed loops (bool computes as uint8 with a bool output), and which operands are
 * scalars. */
enum { VKT_LOOP_F32, VKT_LOOP_F64, VKT_LOOP_I32, VKT_LOOP_I64, VKT_LOOP_F16, VKT_LOOP_U8, VKT_LOOP_DTYPES };
enum { VKT_LOOP_TENSORS, VKT_LOOP_Y_SCALAR, VKT_LOOP_X_SCALAR, VKT_LOOP_FORMS };

/* An op's loops: [dtype][bool output][form]. */
typedef struct {
  double (*f)(double, double, const vkt_op_args *); /* the op's math, to find it by its table row */
  vkt_math_loop *loop[VKT_LOOP_DTYPES][2][VKT_LOOP_FORMS];
} vkt_math_loops;

/* The loop for op in a's dtypes, or NULL where none applies (the generic kernel runs). */
vkt_math_loop *vkt_math_loop_for(const vkt_op *op, const vkt_op_args *a);

/* How a loop computes: through the op's float64 or int64 math, stored as is or as a bool. */
#define VKT_EXPR_F(op, X, Y) vkt_f_##op((double)(X), (double)(Y), a)
#define VKT_EXPR_FB(op, X, Y) (vkt_f_##op((double)(X), (double)(Y), a) != 0)
#define VKT_EXPR_I(op, X, Y) vkt_i_##op((int64_t)(X), (int64_t)(Y), a)
#define VKT_EXPR_IB(op, X, Y) (vkt_i_##op((int64_t)(X), (int64_t)(Y), a) != 0)

/* The float loops' params as floats, so that the math's `is_float ? f : i` is a constant and the loop has no
 * branch (the integer loops take them as they come). */
#define VKT_PARAMS_F(args)                                                                                             \
  for (int k_ = 0; k_ < 2; k_++) {                                                                                     \
    args.param[k_].f = args.param[k_].is_float ? args.param[k_].f : (double)args.param[k_].i;                          \
    args.param[k_].is_float = true;                                                                                    \
  }
#define VKT_PARAMS_I(args)

/* One loop: OUT out[i] = EXPR(op, XT x[i], YT y[i]); the contiguous cases as plain indexed loops the compiler
 * vectorises. The args are copied to a local so that stores through o cannot alias the params. */
#define VKT_LOOP(NAME, OUT, XT, YT, EXPR, PARAMS, op)                                                                  \
  VKT_SIMD static void NAME(char *o, const char *x, const char *y, int64_t n, const int64_t *s,                        \
                            const vkt_op_args *args) {                                                                 \
    vkt_op_args local = *args;                                                                                         \
    PARAMS(local);                                                                                                     \
    const vkt_op_args *a = &local;                                                                                     \
    OUT *po = (OUT *)o;                                                                                                \
    const XT *px = (const XT *)x;                                                                                      \
    const YT *py = (const YT *)y;                                                                                      \
    if (s[0] == sizeof(OUT) && s[1] == sizeof(XT) && s[2] == sizeof(YT)) {                                             \
      for (int64_t i = 0; i < n; i++)                                                                                  \
        po[i] = (OUT)EXPR(op, px[i], py[i]);                                                                           \
    } else if (s[0] == sizeof(OUT) && s[1] == sizeof(XT) && s[2] == 0) {                                               \
      const YT yv = *py;                                                                                               \
      for (int64_t i = 0; i < n; i++)                                                                                  \
        po[i] = (OUT)EXPR(op, px[i], yv);                                                                              \
    } else if (s[0] == sizeof(OUT) && s[1] == 0 && s[2] == sizeof(YT)) {                                               \
      const XT xv = *px;                                                                                               \
      for (int64_t i = 0; i < n; i++)                                                                                  \
        po[i] = (OUT)EXPR(op, xv, py[i]);                                                                              \
    } else {                                                                                                           \
      for (int64_t i = 0; i < n; i++)                                                                                  \
        *(OUT *)(o + i * s[0]) = (OUT)EXPR(op, *(const XT *)(x + i * s[1]), *(const YT *)(y + i * s[2]));              \
    }                                                                                                                  \
  }

/* The three forms (tensor-tensor, scalar y, scalar x) of one op, dtype and output. */
#define VKT_LOOP_FORMS_OF(NAME, OUT, T, C, EXPR, PARAMS, op)                                                           \
  VKT_LOOP(NAME##_tt, OUT, T, T, EXPR, PARAMS, op)                                                                     \
  VKT_LOOP(NAME##_ts, OUT, T, C, EXPR, PARAMS, op)                                                                     \
  VKT_LOOP(NAME##_st, OUT, C, T, EXPR, PARAMS, op)

/* Every loop of op `name`. */
#define VKT_MATH_LOOPS(name)                                                                                           \
  VKT_LOOP_FORMS_OF(name##_f32, float, float, double, VKT_EXPR_F, VKT_PARAMS_F, name)                                  \
  VKT_LOOP_FORMS_OF(name##_f32b, uint8_t, float, double, VKT_EXPR_FB, VKT_PARAMS_F, name)                              \
  VKT_LOOP_FORMS_OF(name##_f64, double, double, double, VKT_EXPR_F, VKT_PARAMS_F, name)                                \
  VKT_LOOP_FORMS_OF(name##_f64b, uint8_t, double, double, VKT_EXPR_FB, VKT_PARAMS_F, name)                             \
  VKT_LOOP_FORMS_OF(name##_i32, int32_t, int32_t, int64_t, VKT_EXPR_I, VKT_PARAMS_I, name)                             \
  VKT_LOOP_FORMS_OF(name##_i32b, uint8_t, int32_t, int64_t, VKT_EXPR_IB, VKT_PARAMS_I, name)                           \
  VKT_LOOP_FORMS_OF(name##_i64, int64_t, int64_t, int64_t, VKT_EXPR_I, VKT_PARAMS_I, name)                             \
  VKT_LOOP_FORMS_OF(name##_i64b, uint8_t, int64_t, int64_t, VKT_EXPR_IB, VKT_PARAMS_I, name)                           \
  VKT_LOOP_FORMS_OF(name##_f16, _Float16, _Float16, double, VKT_EXPR_F, VKT_PARAMS_F, name)                            \
  VKT_LOOP_FORMS_OF(name##_f16b, uint8_t, _Float16, double, VKT_EXPR_FB, VKT_PARAMS_F, name)                           \
  VKT_LOOP_FORMS_OF(name##_u8, uint8_t, uint8_t, int64_t, VKT_EXPR_I, VKT_PARAMS_I, name)                              \
  VKT_LOOP_FORMS_OF(name##_u8b, uint8_t, uint8_t, int64_t, VKT_EXPR_IB, VKT_PARAMS_I, name)

#define VKT_LOOP_ROW(name, dt)                                                                                         \
  {                                                                                                                    \
    {name##_##dt##_tt, name##_##dt##_ts, name##_##dt##_st}, {                                                          \
      name##_##dt##b_tt, name##_##dt##b_ts, name##_##dt##b_st                                                          \
    }                                                                                                                  \
  }
#define VKT_MATH_LOOPS_ENTRY(name)                                                                                     \
  {vkt_f_##name,                                                                                                       \
   {VKT_LOOP_ROW(name, f32), VKT_LOOP_ROW(name, f64), VKT_LOOP_ROW(name, i32), VKT_LOOP_ROW(name, i64),                \
    VKT_LOOP_ROW(name, f16), VKT_LOOP_ROW(name, u8)}},

#endif
