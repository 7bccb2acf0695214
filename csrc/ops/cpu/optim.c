/* cpu/optim.c: the host kernel of the fused optimizer step, the same math as shaders/optim.comp per
 * element (float math for float32 and float16, double for float64), on contiguous operands. */
#include <math.h>

#include "../table.h"
#include "threads.h"

/* PyTorch's lerp: exact at both ends of the weight. */
#define LERP(C, a, b, w) ((w) < (C)0.5 ? (a) + (w) * ((b) - (a)) : (b) - ((b) - (a)) * ((C)1 - (w)))

/* One element's step: x the parameter, g the gradient, s the state (as optim.c orders it). */
#define STEP_FN(NAME, C, SQRT)                                                                                         \
  static inline void NAME(const vkt_optim_hyper *h, const C *c, C *x, C g, C *s) {                                     \
    unsigned f = h->flags;                                                                                             \
    if (f & VKT_OPTIM_MAXIMIZE)                                                                                        \
      g = -g;                                                                                                          \
    if (c[1] != 0 && !(h->algo == VKT_OPTIM_ADAM && (f & VKT_OPTIM_DECOUPLED)))                                        \
      g += c[1] * *x;                                                                                                  \
    switch (h->algo) {                                                                                                 \
    case VKT_OPTIM_SGD:                                                                                                \
      if (f & VKT_OPTIM_MOMENTUM) {                                                                                    \
        s[0] = f & VKT_OPTIM_FIRST ? g : s[0] * c[2] + c[3] * g;                                                       \
        g = f & VKT_OPTIM_NESTEROV ? g + c[2] * s[0] : s[0];                                                           \
      }                                                                                                                \
      *x -= c[0] * g;                                                                                                  \
      break;                                                                                                           \
    case VKT_OPTIM_ADAM:                                                                                               \
      if (c[1] != 0 && (f & VKT_OPTIM_DECOUPLED))                                                                      \
        *x *= c[2];                                                                                                    \
      s[0] = LERP(C, s[0], g, c[3]);                                                                                   \
      s[1] = s[1] * c[4] + c[5] * g * g;                                                                               \
      C v = s[1];                                                                                                      \
      if (f & VKT_OPTIM_AMSGRAD)                                                                                       \
        v = s[2] = s[2] > v ? s[2] : v;                                                                                \
      *x -= c[0] * (s[0] / (SQRT(v) / c[6] + c[7]));                                                                   \
      break;                                                                                                           \
    case VKT_OPTIM_RMSPROP:                                                                                            \
      s[0] = s[0] * c[2] + c[3] * g * g;                                                                               \
      C avg = s[0];                                                                                                    \
      if (f & VKT_OPTIM_CENTERED) {                                                                                    \
        C *ga = &s[f & VKT_OPTIM_MOMENTUM ? 2 : 1];                                                                    \
        *ga = LERP(C, *ga, g, c[3]);                                                                                   \
        avg -= *ga * *ga;                                                                                              \
      }                                                                                                                \
      avg = SQRT(avg) + c[4];                                                                                          \
      if (f & VKT_OPTIM_MOMENTUM) {                                                                                    \
        s[1] = s[1] * c[5] + g / avg;                                                                                  \
        *x -= c[0] * s[1];                                                                                             \
      } else {                                                                                                         \
        *x -= c[0] * (g / avg);                                                                                        \
      }                                                                                                                \
      break;                                                                                                           \
    case VKT_OPTIM_ADAGRAD:                                                                                            \
      s[0] += g * g;                                                                                                   \
      *x -= c[0] * (g / (SQRT(s[0]) + c[2]));                                                                          \
      break;                                                                                                           \
    }                                                                                                                  \
  }

STEP_FN(step_f32, float, sqrtf)
STEP_FN(step_f64, double, sqrt)

typedef struct {
  const vkt_optim_args *o;
  double c[8];
} job;

/* The loop over [begin, end) of one storage type T computing in C. */
#define LOOP(NAME, T, C, STEP)                                                                                         \
  static void NAME(void *ctx, int64_t begin, int64_t end) {                                                            \
    const job *j = ctx;                                                                                                \
    const vkt_optim_args *o = j->o;                                                                                    \
    T *x = (T *)vkt_tensor_host(o->base.out), *s[3] = {0};                                                             \
    const T *g = (const T *)vkt_tensor_host(o->base.in[0]);                                                            \
    C c[8], sv[3] = {0};                                                                                               \
    for (int k = 0; k < 8; k++)                                                                                        \
      c[k] = (C)j->c[k];                                                                                               \
    for (int k = 0; k < o->nstate; k++)                                                                                \
      s[k] = (T *)vkt_tensor_host(o->state[k]);                                                                        \
    for (int64_t i = begin; i < end; i++) {                                                                            \
      C xv = (C)x[i];                                                                                                  \
      for (int k = 0; k < o->nstate; k++)                                                                              \
        sv[k] = (C)s[k][i];                                                                                            \
      STEP(o->hyper, c, &xv, (C)g[i], sv);                                                                             \
      x[i] = (T)xv;                                                                                                    \
      for (int k = 0; k < o->nstate; k++)                                                                              \
        s[k][i] = (T)sv[k];                                                                                            \
    }                                                                                                                  \
  }

LOOP(loop_f32, float, float, step_f32)
LOOP(loop_f16, _Float16, float, step_f32)
LOOP(loop_f64, double, double, step_f64)

vkt_status vkt_cpu_optim(const vkt_op *op, const vkt_op_args *a) {
  (void)op;
  job j = {.o = (const vkt_optim_args *)a};
  vkt_optim_constants(j.o->hyper, j.c);
  vkt_dtype d = a->out->dtype;
  vkt_parallel_for(vkt_tensor_numel(a->out), VKT_GRAIN,
                   d == VKT_FLOAT64   ? loop_f64
                   : d == VKT_FLOAT16 ? loop_f16
                                      : loop_f32,
                   &j);
  return VKT_OK;
}
