#version 450
// optim.comp: one optimizer step over one parameter in one pass: reads the parameter, its gradient and
// the algorithm's state, writes the parameter and the state. Hyperparameters (bias corrections included)
// are push constants, so a new learning rate never recompiles. Each invocation takes VW consecutive
// elements as one vector load per operand; the last vector may be partial (its lanes one by one).
// The host defines T (storage vector of VW elements), TS (its element), CV and CS (compute vector and
// scalar: float math for float32 and float16, double for float64), VW (4, or 1 where an operand's offset
// is not a multiple of 4), NSTATE, one of SGD ADAM RMSPROP ADAGRAD, and MOMENTUM, AMSGRAD, CENTERED.
#include "common.glsl"
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : enable
#extension GL_EXT_shader_explicit_arithmetic_types_float64 : enable

layout(push_constant) uniform Push {
  uint n;         // elements of the parameter
  uint flags;     // MAXIMIZE, NESTEROV, FIRST, DECOUPLED
  uint offset[6]; // vectors of VW elements: param, grad, state 0-2
  uvec2 h[8];     // hyperparameters as bits of CS; csrc/ops/optim.c lists each algorithm's
} p;

#define MAXIMIZE 1u
#define NESTEROV 2u
#define FIRST 4u     // SGD's first step with momentum: the buffer becomes the gradient
#define DECOUPLED 8u // AdamW: the decay scales the parameter instead of joining the gradient

layout(std430, binding = 0) buffer P { T p_[]; };
layout(std430, binding = 1) readonly buffer G { T g_[]; };
#if NSTATE > 0
layout(std430, binding = 2) buffer S0 { T s0_[]; };
#endif
#if NSTATE > 1
layout(std430, binding = 3) buffer S1 { T s1_[]; };
#endif
#if NSTATE > 2
layout(std430, binding = 4) buffer S2 { T s2_[]; };
#endif

#ifdef C_FLOAT64
CS H(uint k) { return packDouble2x32(p.h[k]); }
#else
CS H(uint k) { return uintBitsToFloat(p.h[k].x); }
#endif

#if VW == 1
#define LOAD(v, buf, k) v = CV(buf[p.offset[k] + i])
#define STORE(buf, k, v) buf[p.offset[k] + i] = T(v)
#else
#define LOAD(v, buf, k)                                                                                               \
  if (full)                                                                                                            \
    v = CV(buf[p.offset[k] + i]);                                                                                      \
  else                                                                                                                 \
    for (uint c = 0; c < VW; c++)                                                                                      \
      v[c] = c < rem ? CS(buf[p.offset[k] + i][c]) : CS(0);
#define STORE(buf, k, v)                                                                                               \
  if (full)                                                                                                            \
    buf[p.offset[k] + i] = T(v);                                                                                       \
  else                                                                                                                 \
    for (uint c = 0; c < rem; c++)                                                                                     \
      buf[p.offset[k] + i][c] = TS(v[c]);
#endif

// RMSprop's grad_avg follows its momentum buffer when there is one.
#if defined(MOMENTUM)
#define GRAD_AVG s2_
#define GRAD_AVG_K 4
#else
#define GRAD_AVG s1_
#define GRAD_AVG_K 3
#endif

// PyTorch's lerp: exact at both ends of the weight.
CV lerp_(CV a, CV b, CS w) { return w < CS(0.5) ? a + w * (b - a) : b - (b - a) * (CS(1) - w); }

void main() {
  uint i = linear_id();
  if (i * VW >= p.n)
    return;
  bool full = i * VW + VW <= p.n;
  uint rem = p.n - i * VW;
  CV x, g;
  LOAD(x, p_, 0);
  LOAD(g, g_, 1);
  if ((p.flags & MAXIMIZE) != 0)
    g = -g;
#if defined(SGD) // h: lr, weight_decay, momentum, 1 - dampening
  if (H(1) != CS(0))
    g += H(1) * x;
#ifdef MOMENTUM
  CV buf;
  if ((p.flags & FIRST) != 0) {
    buf = g;
  } else {
    LOAD(buf, s0_, 2);
    buf = buf * H(2) + H(3) * g;
  }
  STORE(s0_, 2, buf);
  g = (p.flags & NESTEROV) != 0 ? g + H(2) * buf : buf;
#endif
  x -= H(0) * g;
#elif defined(ADAM) // h: step_size, weight_decay, 1 - lr * weight_decay, 1 - beta1, beta2, 1 - beta2, bc2_sqrt, eps
  if (H(1) != CS(0)) {
    if ((p.flags & DECOUPLED) != 0)
      x *= H(2);
    else
      g += H(1) * x;
  }
  CV m, v;
  LOAD(m, s0_, 2);
  LOAD(v, s1_, 3);
  m = lerp_(m, g, H(3));
  v = v * H(4) + H(5) * g * g;
  STORE(s0_, 2, m);
  STORE(s1_, 3, v);
#ifdef AMSGRAD
  CV vmax;
  LOAD(vmax, s2_, 4);
  v = max(vmax, v);
  STORE(s2_, 4, v);
#endif
  x -= H(0) * (m / (sqrt(v) / H(6) + H(7)));
#elif defined(RMSPROP) // h: lr, weight_decay, alpha, 1 - alpha, eps, momentum; state: square_avg, buffer, grad_avg
  if (H(1) != CS(0))
    g += H(1) * x;
  CV sq;
  LOAD(sq, s0_, 2);
  sq = sq * H(2) + H(3) * g * g;
  STORE(s0_, 2, sq);
  CV avg = sq;
#ifdef CENTERED
  CV ga;
  LOAD(ga, GRAD_AVG, GRAD_AVG_K);
  ga = lerp_(ga, g, H(3));
  STORE(GRAD_AVG, GRAD_AVG_K, ga);
  avg -= ga * ga;
#endif
  avg = sqrt(avg) + H(4);
#ifdef MOMENTUM
  CV buf;
  LOAD(buf, s1_, 3);
  buf = buf * H(5) + g / avg;
  STORE(s1_, 3, buf);
  x -= H(0) * buf;
#else
  x -= H(0) * (g / avg);
#endif
#elif defined(ADAGRAD) // h: lr / (1 + (step - 1) * lr_decay), weight_decay, eps
  if (H(1) != CS(0))
    g += H(1) * x;
  CV sum;
  LOAD(sum, s0_, 2);
  sum += g * g;
  STORE(s0_, 2, sum);
  x -= H(0) * (g / (sqrt(sum) + H(2)));
#endif
  STORE(p_, 0, x);
}
