/* elementwise.c (autograd): the elementwise entry points and their backward formulas, one per op table
 * row, as derivatives.yaml writes them: x is the saved input, y the saved output, g the incoming gradient.
 * Gradients of broadcast operands come out in the output's shape; the engine sums them back. */
#include <math.h>

#include "formula.h"

#define X S(b, 0)
#define Y S(b, 1)
#define g G(b, 0)
#define P0 (b->n->s[0].is_float ? b->n->s[0].f : (double)b->n->s[0].i)
#define P1 (b->n->s[1].is_float ? b->n->s[1].f : (double)b->n->s[1].i)

static const vkt_scalar none = {false, 0, 0};
static const double sqrt_pi = 1.7724538509055160273, ln2 = 0.6931471805599453094, ln10 = 2.3025850929940456840;
static const double inv_sqrt_2pi = 0.39894228040143267794;

/* ---- unary: gradient of input 0 ---- */

static const vkt_var *gt0(vkt_bw *b, const vkt_var *v) { return bins(b, VKT_OP_GT, v, 0); }

static const vkt_var *d_unary(vkt_bw *b, int id) {
  switch (id) {
  case VKT_OP_RELU: return bin(b, VKT_OP_THRESHOLD_BACKWARD, g, Y);
  case VKT_OP_GELU: { /* Phi(x) + x phi(x) */
    const vkt_var *cdf = bins(b, VKT_OP_ADD, muls(b, un(b, VKT_OP_ERF, muls(b, X, M_SQRT1_2)), 0.5), 0.5);
    const vkt_var *pdf = muls(b, un(b, VKT_OP_EXP, muls(b, un(b, VKT_OP_SQUARE, X), -0.5)), M_2_SQRTPI * M_SQRT1_2 / 2);
    return mul(b, g, add(b, cdf, mul(b, X, pdf)));
  }
  case VKT_OP_GELU_TANH: { /* 0.5 (1 + t) + 0.5 x (1 - t^2) k (1 + 3c x^2), t = tanh(k (x + c x^3)) */
    const double k = M_2_SQRTPI * M_SQRT1_2, c = 0.044715;
    const vkt_var *x2 = un(b, VKT_OP_SQUARE, X);
    const vkt_var *t = un(b, VKT_OP_TANH, muls(b, mul(b, X, bins(b, VKT_OP_ADD, muls(b, x2, c), 1)), k));
    const vkt_var *left = muls(b, bins(b, VKT_OP_ADD, t, 1), 0.5);
    const vkt_var *sech2 = sbin(b, VKT_OP_SUB, 1, un(b, VKT_OP_SQUARE, t));
    const vkt_var *inner = muls(b, bins(b, VKT_OP_ADD, muls(b, x2, 3 * c), 1), 0.5 * k);
    return mul(b, g, add(b, left, mul(b, mul(b, X, sech2), inner)));
  }
  case VKT_OP_SILU: { /* s (1 + x (1 - s)) */
    const vkt_var *s = un(b, VKT_OP_SIGMOID, X);
    return mul(b, g, mul(b, s, bins(b, VKT_OP_ADD, mul(b, X, sbin(b, VKT_OP_SUB, 1, s)), 1)));
  }
  case VKT_OP_SIGMOID: return mul(b, g, mul(b, Y, sbin(b, VKT_OP_SUB, 1, Y)));
  case VKT_OP_TANH: return mul(b, g, sbin(b, VKT_OP_SUB, 1, un(b, VKT_OP_SQUARE, Y)));
  case VKT_OP_LEAKY_RELU: return add(b, keep_where(b, gt0(b, X), g), zero_where(b, gt0(b, X), muls(b, g, P0)));
  case VKT_OP_ELU: /* 1 above 0, alpha e^x below: from x alone, as PyTorch (which saves only x) */
    return add(b, keep_where(b, gt0(b, X), g), zero_where(b, gt0(b, X), mul(b, g, muls(b, un(b, VKT_OP_EXP, X), P0))));
  case VKT_OP_SOFTPLUS: { /* sigmoid(beta x), and 1 above the threshold */
    const vkt_var *bx = muls(b, X, P0);
    const vkt_var *linear = bins(b, VKT_OP_GT, bx, P1);
    return add(b, keep_where(b, linear, g), zero_where(b, linear, mul(b, g, un(b, VKT_OP_SIGMOID, bx))));
  }
  case VKT_OP_NEG: return un(b, VKT_OP_NEG, g);
  case VKT_OP_ABS: return mul(b, g, un(b, VKT_OP_SIGN, X));
  case VKT_OP_EXP: return mul(b, g, Y);
  case VKT_OP_LOG: return dvd(b, g, X);
  case VKT_OP_SQRT: return dvd(b, g, muls(b, Y, 2));
  case VKT_OP_RSQRT: return mul(b, g, muls(b, mul(b, Y, un(b, VKT_OP_SQUARE, Y)), -0.5));
  case VKT_OP_SIN: return mul(b, g, un(b, VKT_OP_COS, X));
  case VKT_OP_COS: return mul(b, g, un(b, VKT_OP_NEG, un(b, VKT_OP_SIN, X)));
  case VKT_OP_SQUARE: return mul(b, g, muls(b, X, 2));
  case VKT_OP_RECIPROCAL: return mul(b, g, un(b, VKT_OP_NEG, un(b, VKT_OP_SQUARE, Y)));
  case VKT_OP_CLAMP: { /* passes where lo <= x <= hi */
    const vkt_var *in = bin(b, VKT_OP_LOGICAL_AND, bins(b, VKT_OP_GE, X, P0), bins(b, VKT_OP_LE, X, P1));
    return keep_where(b, in, g);
  }
  case VKT_OP_LOG1P: return dvd(b, g, bins(b, VKT_OP_ADD, X, 1));
  case VKT_OP_EXPM1: return mul(b, g, bins(b, VKT_OP_ADD, Y, 1));
  case VKT_OP_LOG2: return dvd(b, g, muls(b, X, ln2));
  case VKT_OP_LOG10: return dvd(b, g, muls(b, X, ln10));
  case VKT_OP_EXP2: return mul(b, g, muls(b, Y, ln2));
  case VKT_OP_ERF: return mul(b, g, muls(b, un(b, VKT_OP_EXP, un(b, VKT_OP_NEG, un(b, VKT_OP_SQUARE, X))), M_2_SQRTPI));
  case VKT_OP_ERFC:
    return mul(b, g, muls(b, un(b, VKT_OP_EXP, un(b, VKT_OP_NEG, un(b, VKT_OP_SQUARE, X))), -M_2_SQRTPI));
  case VKT_OP_ERFINV: return mul(b, g, muls(b, un(b, VKT_OP_EXP, un(b, VKT_OP_SQUARE, Y)), sqrt_pi / 2));
  case VKT_OP_TAN: return mul(b, g, bins(b, VKT_OP_ADD, un(b, VKT_OP_SQUARE, Y), 1));
  case VKT_OP_ASIN: return mul(b, g, un(b, VKT_OP_RSQRT, sbin(b, VKT_OP_SUB, 1, un(b, VKT_OP_SQUARE, X))));
  case VKT_OP_ACOS:
    return mul(b, g, un(b, VKT_OP_NEG, un(b, VKT_OP_RSQRT, sbin(b, VKT_OP_SUB, 1, un(b, VKT_OP_SQUARE, X)))));
  case VKT_OP_ATAN: return dvd(b, g, bins(b, VKT_OP_ADD, un(b, VKT_OP_SQUARE, X), 1));
  case VKT_OP_SINH: return mul(b, g, un(b, VKT_OP_COSH, X));
  case VKT_OP_COSH: return mul(b, g, un(b, VKT_OP_SINH, X));
  case VKT_OP_ASINH: return mul(b, g, un(b, VKT_OP_RSQRT, bins(b, VKT_OP_ADD, un(b, VKT_OP_SQUARE, X), 1)));
  case VKT_OP_ACOSH: return mul(b, g, un(b, VKT_OP_RSQRT, bins(b, VKT_OP_SUB, un(b, VKT_OP_SQUARE, X), 1)));
  case VKT_OP_ATANH: return dvd(b, g, sbin(b, VKT_OP_SUB, 1, un(b, VKT_OP_SQUARE, X)));
  case VKT_OP_FRAC: return g;
  case VKT_OP_DEG2RAD: return muls(b, g, M_PI / 180);
  case VKT_OP_RAD2DEG: return muls(b, g, 180 / M_PI);
  case VKT_OP_NAN_TO_NUM:
  case VKT_OP_NEGINF_TO_NUM: return keep_where(b, un(b, VKT_OP_ISFINITE, X), g);
  case VKT_OP_HARDSIGMOID: {
    const vkt_var *in = bin(b, VKT_OP_LOGICAL_AND, bins(b, VKT_OP_GT, X, -3), bins(b, VKT_OP_LT, X, 3));
    return keep_where(b, in, muls(b, g, 1.0 / 6));
  }
  case VKT_OP_HARDSWISH: { /* 0 below -3, x / 3 + 1 / 2 up to 3, 1 above */
    const vkt_var *mid = mul(b, g, bins(b, VKT_OP_ADD, muls(b, X, 1.0 / 3), 0.5));
    const vkt_var *upper = bins(b, VKT_OP_GT, X, 3);
    return zero_where(b, bins(b, VKT_OP_LT, X, -3), add(b, keep_where(b, upper, g), zero_where(b, upper, mid)));
  }
  case VKT_OP_MISH: { /* t + x s (1 - t^2), t = tanh(softplus(x)), s = sigmoid(x) */
    const vkt_var *t = un(b, VKT_OP_TANH, un2(b, VKT_OP_SOFTPLUS, X, 1, 20));
    const vkt_var *sech2 = sbin(b, VKT_OP_SUB, 1, un(b, VKT_OP_SQUARE, t));
    return mul(b, g, add(b, t, mul(b, mul(b, X, un(b, VKT_OP_SIGMOID, X)), sech2)));
  }
  case VKT_OP_LOGSIGMOID: return mul(b, g, un(b, VKT_OP_SIGMOID, un(b, VKT_OP_NEG, X)));
  case VKT_OP_SELU: { /* scale above 0, scale alpha e^x below */
    const double alpha = 1.6732632423543772848, scale = 1.0507009873554804934;
    const vkt_var *pos = gt0(b, X);
    return add(b, keep_where(b, pos, muls(b, g, scale)),
               zero_where(b, pos, mul(b, g, muls(b, un(b, VKT_OP_EXP, X), scale * alpha))));
  }
  case VKT_OP_CELU: { /* 1 above 0, e^(x / alpha) below */
    const vkt_var *pos = gt0(b, X);
    return add(b, keep_where(b, pos, g), zero_where(b, pos, mul(b, g, un(b, VKT_OP_EXP, muls(b, X, 1 / P0)))));
  }
  case VKT_OP_SOFTSIGN: return dvd(b, g, un(b, VKT_OP_SQUARE, bins(b, VKT_OP_ADD, un(b, VKT_OP_ABS, X), 1)));
  case VKT_OP_TANHSHRINK: return mul(b, g, un(b, VKT_OP_SQUARE, un(b, VKT_OP_TANH, X)));
  case VKT_OP_THRESHOLD: return keep_where(b, bins(b, VKT_OP_GT, X, P0), g);
  case VKT_OP_LGAMMA: return mul(b, g, un(b, VKT_OP_DIGAMMA, X));
  case VKT_OP_DIGAMMA: return mul(b, g, un2(b, VKT_OP_POLYGAMMA, X, 1, 0));
  case VKT_OP_POLYGAMMA: return mul(b, g, un2(b, VKT_OP_POLYGAMMA, X, P0 + 1, 0));
  case VKT_OP_LOGIT: { /* 1 / (x (1 - x)) in [eps, 1 - eps], 0 outside; without eps (P0 < 0) NaN outside [0, 1] */
    double lo = P0 < 0 ? 0 : P0;
    const vkt_var *in = bin(b, VKT_OP_LOGICAL_AND, bins(b, VKT_OP_GE, X, lo), bins(b, VKT_OP_LE, X, 1 - lo));
    const vkt_var *d = keep_where(b, in, dvd(b, g, mul(b, X, sbin(b, VKT_OP_SUB, 1, X))));
    return P0 < 0 ? add(b, d, zero_where(b, in, muls(b, g, NAN))) : d;
  }
  case VKT_OP_SINC: { /* (pi x cos(pi x) - sin(pi x)) / (pi x^2), 0 at 0 */
    const vkt_var *px = muls(b, X, M_PI), *px2 = muls(b, un(b, VKT_OP_SQUARE, X), M_PI);
    const vkt_var *d = sub(b, mul(b, px, un(b, VKT_OP_COS, px)), un(b, VKT_OP_SIN, px));
    return zero_where(b, bins(b, VKT_OP_EQ, px2, 0), dvd(b, mul(b, g, d), px2));
  }
  case VKT_OP_ENTR: return mul(b, g, un(b, VKT_OP_NEG, bins(b, VKT_OP_ADD, un(b, VKT_OP_LOG, X), 1)));
  case VKT_OP_NDTR: return mul(b, g, muls(b, un(b, VKT_OP_EXP, muls(b, un(b, VKT_OP_SQUARE, X), -0.5)), inv_sqrt_2pi));
  case VKT_OP_NDTRI: /* sqrt(2 pi) e^(y^2 / 2) */
    return mul(b, g, muls(b, un(b, VKT_OP_EXP, muls(b, un(b, VKT_OP_SQUARE, Y), 0.5)), 1 / inv_sqrt_2pi));
  case VKT_OP_LOG_NDTR: { /* pdf(x) / ndtr(x) = e^-(y + x^2 / 2) / sqrt(2 pi) */
    const vkt_var *e = add(b, Y, muls(b, un(b, VKT_OP_SQUARE, X), 0.5));
    return mul(b, g, muls(b, un(b, VKT_OP_EXP, un(b, VKT_OP_NEG, e)), inv_sqrt_2pi));
  }
  case VKT_OP_I0: return mul(b, g, un(b, VKT_OP_I1, X));
  case VKT_OP_I0E: return mul(b, g, sub(b, un(b, VKT_OP_I1E, X), mul(b, un(b, VKT_OP_SIGN, X), Y)));
  case VKT_OP_I1:
  case VKT_OP_I1E: { /* i0(x) - i1(x) / x, i0e(x) - i1e(x) (sgn(x) + 1 / x); 1/2 at 0 */
    const vkt_var *zero = bins(b, VKT_OP_EQ, X, 0), *d;
    if (b->n->id == VKT_OP_I1)
      d = sub(b, un(b, VKT_OP_I0, X), dvd(b, Y, X));
    else
      d = sub(b, un(b, VKT_OP_I0E, X), mul(b, Y, add(b, un(b, VKT_OP_SIGN, X), un(b, VKT_OP_RECIPROCAL, X))));
    return add(b, keep_where(b, zero, muls(b, g, 0.5)), zero_where(b, zero, mul(b, g, d)));
  }
  case VKT_OP_ERFCX: return mul(b, g, bins(b, VKT_OP_SUB, muls(b, mul(b, X, Y), 2), 2 / sqrt_pi));
  case VKT_OP_ANGLE: return zeros_of(b, 0); /* of a real x: 0 or pi */
  default: /* sign, floor, ceil, round, trunc: zero almost everywhere */ return muls(b, g, 0);
  }
}

static void unary_backward(vkt_bw *b) { SET(b, 0, d_unary(b, b->n->id)); }

/* What each row saves (input x in slot 0, output y in slot 1) and its name. */
enum { SX = 1, SY = 2 };
typedef struct {
  vkt_fn fn;
  unsigned save;
} unary_row;

#define U(ID, NAME, SAVE) [ID] = {{NAME, unary_backward}, SAVE}
static const unary_row unary_rows[VKT_OP_COUNT] = {
    U(VKT_OP_RELU, "ReluBackward0", SY),
    U(VKT_OP_GELU, "GeluBackward0", SX),
    U(VKT_OP_GELU_TANH, "GeluBackward0", SX),
    U(VKT_OP_SILU, "SiluBackward0", SX),
    U(VKT_OP_SIGMOID, "SigmoidBackward0", SY),
    U(VKT_OP_TANH, "TanhBackward0", SY),
    U(VKT_OP_LEAKY_RELU, "LeakyReluBackward0", SX),
    U(VKT_OP_ELU, "EluBackward0", SX),
    U(VKT_OP_SOFTPLUS, "SoftplusBackward0", SX),
    U(VKT_OP_NEG, "NegBackward0", 0),
    U(VKT_OP_ABS, "AbsBackward0", SX),
    U(VKT_OP_EXP, "ExpBackward0", SY),
    U(VKT_OP_LOG, "LogBackward0", SX),
    U(VKT_OP_SQRT, "SqrtBackward0", SY),
    U(VKT_OP_RSQRT, "RsqrtBackward0", SY),
    U(VKT_OP_SIN, "SinBackward0", SX),
    U(VKT_OP_COS, "CosBackward0", SX),
    U(VKT_OP_SQUARE, "PowBackward0", SX),
    U(VKT_OP_RECIPROCAL, "ReciprocalBackward0", SY),
    U(VKT_OP_CLAMP, "ClampBackward1", SX),
    U(VKT_OP_SIGN, "SignBackward0", 0),
    U(VKT_OP_FLOOR, "FloorBackward0", 0),
    U(VKT_OP_CEIL, "CeilBackward0", 0),
    U(VKT_OP_ROUND, "RoundBackward0", 0),
    U(VKT_OP_ROUND_DECIMALS, "RoundBackward1", 0),
    U(VKT_OP_TRUNC, "TruncBackward0", 0),
    U(VKT_OP_LOG1P, "Log1PBackward0", SX),
    U(VKT_OP_EXPM1, "Expm1Backward0", SY),
    U(VKT_OP_LOG2, "Log2Backward0", SX),
    U(VKT_OP_LOG10, "Log10Backward0", SX),
    U(VKT_OP_EXP2, "Exp2Backward0", SY),
    U(VKT_OP_ERF, "ErfBackward0", SX),
    U(VKT_OP_ERFC, "ErfcBackward0", SX),
    U(VKT_OP_ERFINV, "ErfinvBackward0", SY),
    U(VKT_OP_TAN, "TanBackward0", SY),
    U(VKT_OP_ASIN, "AsinBackward0", SX),
    U(VKT_OP_ACOS, "AcosBackward0", SX),
    U(VKT_OP_ATAN, "AtanBackward0", SX),
    U(VKT_OP_SINH, "SinhBackward0", SX),
    U(VKT_OP_COSH, "CoshBackward0", SX),
    U(VKT_OP_ASINH, "AsinhBackward0", SX),
    U(VKT_OP_ACOSH, "AcoshBackward0", SX),
    U(VKT_OP_ATANH, "AtanhBackward0", SX),
    U(VKT_OP_FRAC, "FracBackward0", 0),
    U(VKT_OP_DEG2RAD, "Deg2RadBackward0", 0),
    U(VKT_OP_RAD2DEG, "Rad2DegBackward0", 0),
    U(VKT_OP_NAN_TO_NUM, "NanToNumBackward0", SX),
    U(VKT_OP_NEGINF_TO_NUM, "NanToNumBackward0", SX),
    U(VKT_OP_HARDSIGMOID, "HardsigmoidBackward0", SX),
    U(VKT_OP_HARDSWISH, "HardswishBackward0", SX),
    U(VKT_OP_MISH, "MishBackward0", SX),
    U(VKT_OP_LOGSIGMOID, "LogSigmoidBackward0", SX),
    U(VKT_OP_SELU, "EluBackward0", SX),
    U(VKT_OP_CELU, "CeluBackward0", SX),
    U(VKT_OP_SOFTSIGN, "SoftsignBackward0", SX),
    U(VKT_OP_TANHSHRINK, "TanhshrinkBackward0", SX),
    U(VKT_OP_THRESHOLD, "ThresholdBackward0", SX),
    U(VKT_OP_LGAMMA, "LgammaBackward0", SX),
    U(VKT_OP_DIGAMMA, "DigammaBackward0", SX),
    U(VKT_OP_POLYGAMMA, "PolygammaBackward0", SX),
    U(VKT_OP_LOGIT, "LogitBackward0", SX),
    U(VKT_OP_SINC, "SincBackward0", SX),
    U(VKT_OP_ENTR, "SpecialEntrBackward0", SX),
    U(VKT_OP_NDTR, "SpecialNdtrBackward0", SX),
    U(VKT_OP_NDTRI, "SpecialNdtriBackward0", SY),
    U(VKT_OP_LOG_NDTR, "SpecialLogNdtrBackward0", SX | SY),
    U(VKT_OP_I0, "I0Backward0", SX),
    U(VKT_OP_I0E, "SpecialI0EBackward0", SX | SY),
    U(VKT_OP_I1, "SpecialI1Backward0", SX | SY),
    U(VKT_OP_I1E, "SpecialI1EBackward0", SX | SY),
    U(VKT_OP_ERFCX, "SpecialErfcxBackward0", SX | SY),
    U(VKT_OP_ANGLE, "AngleBackward0", 0),
};

/* Records node fn over inputs in (saving them in slots 0.., and the output in slot `yslot` when >= 0). An input
 * that is a number (in[i] NULL) sets bit i of the node's dims. With need (binary ops), what is saved is what the
 * gradients that are needed read, as PyTorch saves: need[i] has bit k for slot k (2: the output) where input i's
 * gradient reads it, so that x * 2 keeps nothing and x * w keeps w only for x's gradient. */
static void record(const vkt_fn *fn, int nin, const vkt_var *const *in, unsigned save_in, int yslot, vkt_var *out,
                   int id, const vkt_scalar *s, int ns, const unsigned char *need) {
  if (!vkt_dtypes[out->t.dtype].is_float)
    return; /* integer and bool results carry no gradient */
  vkt_node *n = vkt_node_begin(fn, nin, in, 1);
  if (!n)
    return;
  n->id = id;
  for (int i = 0; i < ns; i++)
    n->s[i] = s[i];
  for (int i = 0; i < nin; i++)
    n->dims |= (uint32_t)!in[i] << i;
  if (need)
    vkt_node_save_needed(n, nin, in, need, out);
  for (int i = 0; !need && i < nin; i++)
    if (in[i] && (save_in >> i & 1))
      vkt_node_save(n, i, in[i], false, 0);
  if (!need && yslot >= 0)
    vkt_node_save(n, yslot, out, true, 0);
  vkt_node_output(n, 0, out);
  vkt_node_decref(n);
}

vkt_status vkt_ag_unary(int id, const vkt_var *x, vkt_scalar p0, vkt_scalar p1, vkt_var *out) {
  *out = (vkt_var){0};
  vkt_status st = vkt_unary(id, &x->t, p0, p1, NULL, &out->t);
  const unary_row *row = &unary_rows[id];
  if (st || !row->fn.name)
    return st; /* tests and bitwise ops: no gradient */
  vkt_scalar s[2] = {p0, p1};
  record(&row->fn, 1, &x, row->save & SX ? 1 : 0, row->save & SY ? 1 : -1, out, id, s, 2, NULL);
  return VKT_OK;
}

/* ---- binary: a in slot 0, b in slot 1, the output in slot 2; numbers in s[0], s[1]; alpha in s[2] ---- */

#define A S(b, 0)
#define B S(b, 1)
#define ALPHA (b->n->s[2].is_float ? b->n->s[2].f : (double)b->n->s[2].i)
#define SA (b->n->s[0].is_float ? b->n->s[0].f : (double)b->n->s[0].i)
#define SB (b->n->s[1].is_float ? b->n->s[1].f : (double)b->n->s[1].i)

/* Operand k of the node times x: the saved tensor, or the number it was. */
static bool is_num(vkt_bw *b, int k) { return b->n->dims >> k & 1; }
static const vkt_var *times(vkt_bw *b, const vkt_var *x, int k) {
  return is_num(b, k) ? muls(b, x, k ? SB : SA) : mul(b, x, S(b, k));
}
/* The operand as a tensor-or-number pair for a binary op: op(x, operand k). */
static const vkt_var *with(vkt_bw *b, int id, const vkt_var *x, int k) {
  return is_num(b, k) ? bins(b, id, x, k ? SB : SA) : bin(b, id, x, S(b, k));
}
static const vkt_var *of(vkt_bw *b, int id, int k, const vkt_var *x) { /* op(operand k, x) */
  return is_num(b, k) ? sbin(b, id, k ? SB : SA, x) : bin(b, id, S(b, k), x);
}

static const vkt_var *select2(vkt_bw *b, const vkt_var *cond, const vkt_var *x, const vkt_var *y) {
  vkt_var out = {0};
  return cond && x && y ? keep(b, vkt_ag_where(&cond->t, x, none, y, none, &out), &out) : NULL;
}

/* maximum / minimum: the gradient goes to the larger (smaller) operand, half to each on a tie. */
static const vkt_var *extreme_grad(vkt_bw *b, int loses) {
  const vkt_var *half = select2(b, bin(b, VKT_OP_EQ, A, B), muls(b, g, 0.5), g);
  return zero_where(b, bin(b, loses, A, B), half);
}

static void binary_backward(vkt_bw *b) {
  switch (b->n->id) {
  case VKT_OP_ADD:
    SET(b, 0, g);
    SET(b, 1, ALPHA == 1 ? g : muls(b, g, ALPHA));
    break;
  case VKT_OP_SUB:
    SET(b, 0, g);
    SET(b, 1, muls(b, g, -ALPHA));
    break;
  case VKT_OP_MUL:
    if (NEED(b, 0))
      SET(b, 0, times(b, g, 1));
    if (NEED(b, 1))
      SET(b, 1, times(b, g, 0));
    break;
  case VKT_OP_DIV:
    if (NEED(b, 0))
      SET(b, 0, with(b, VKT_OP_DIV, g, 1));
    if (NEED(b, 1)) /* -g a / b^2 */
      SET(b, 1, un(b, VKT_OP_NEG, dvd(b, times(b, g, 0), un(b, VKT_OP_SQUARE, B))));
    break;
  case VKT_OP_POW:
    if (NEED(b, 0)) { /* b a^(b-1), 0 where b == 0 */
      if (is_num(b, 1))
        SET(b, 0, SB == 0 ? muls(b, g, 0) : mul(b, muls(b, g, SB), bins(b, VKT_OP_POW, A, SB - 1)));
      else
        SET(b, 0,
            zero_where(b, bins(b, VKT_OP_EQ, B, 0),
                       mul(b, mul(b, g, B), bin(b, VKT_OP_POW, A, bins(b, VKT_OP_SUB, B, 1)))));
    }
    if (NEED(b, 1)) { /* y log(a), 0 where a == 0 and b >= 0 */
      const vkt_var *d =
          is_num(b, 0) ? muls(b, mul(b, g, S(b, 2)), log(SA)) : mul(b, mul(b, g, S(b, 2)), un(b, VKT_OP_LOG, A));
      if (is_num(b, 0) && SA != 0)
        SET(b, 1, d);
      else if (is_num(b, 0))
        SET(b, 1, zero_where(b, bins(b, VKT_OP_GE, B, 0), d));
      else
        SET(b, 1, zero_where(b, bin(b, VKT_OP_LOGICAL_AND, bins(b, VKT_OP_EQ, A, 0), bins(b, VKT_OP_GE, B, 0)), d));
    }
    break;
  case VKT_OP_MAXIMUM:
    SET(b, 0, extreme_grad(b, VKT_OP_LT));
    SET(b, 1, extreme_grad(b, VKT_OP_GT));
    break;
  case VKT_OP_MINIMUM:
    SET(b, 0, extreme_grad(b, VKT_OP_GT));
    SET(b, 1, extreme_grad(b, VKT_OP_LT));
    break;
  case VKT_OP_REMAINDER:
  case VKT_OP_FMOD: { /* a - q b: -q for b, q = floor (remainder) or trunc (fmod) of a / b */
    int q = b->n->id == VKT_OP_REMAINDER ? VKT_OP_DIV_FLOOR : VKT_OP_DIV_TRUNC;
    SET(b, 0, g);
    if (NEED(b, 1))
      SET(b, 1, mul(b, g, un(b, VKT_OP_NEG, of(b, q, 0, B))));
    break;
  }
  case VKT_OP_ATAN2: { /* (b, -a) / (a^2 + b^2) */
    const vkt_var *d = add(b, un(b, VKT_OP_SQUARE, A), un(b, VKT_OP_SQUARE, B));
    SET(b, 0, dvd(b, mul(b, g, B), d));
    SET(b, 1, dvd(b, mul(b, g, un(b, VKT_OP_NEG, A)), d));
    break;
  }
  case VKT_OP_HYPOT:
    if (NEED(b, 0))
      SET(b, 0, dvd(b, mul(b, g, A), S(b, 2)));
    if (NEED(b, 1))
      SET(b, 1, dvd(b, mul(b, g, B), S(b, 2)));
    break;
  case VKT_OP_COPYSIGN:
    if (NEED(b, 0))
      SET(b, 0, zero_where(b, bins(b, VKT_OP_EQ, A, 0), mul(b, g, dvd(b, S(b, 2), A))));
    SET(b, 1, muls(b, g, 0));
    break;
  case VKT_OP_LOGADDEXP:
    SET(b, 0, dvd(b, g, bins(b, VKT_OP_ADD, un(b, VKT_OP_EXP, bin(b, VKT_OP_SUB, B, A)), 1)));
    SET(b, 1, dvd(b, g, bins(b, VKT_OP_ADD, un(b, VKT_OP_EXP, bin(b, VKT_OP_SUB, A, B)), 1)));
    break;
  case VKT_OP_XLOGY:
  case VKT_OP_XLOG1PY: { /* a's: xlogy(g, b) (xlog1py), 0 where a = 0 and b <= 0 (-1): log(b) at a = 0 too, NaN
                          * where b is; b's: g a / b, g a / (b + 1) */
    bool logy = b->n->id == VKT_OP_XLOGY;
    double edge = logy ? 0 : -1;
    if (NEED(b, 0)) {
      const vkt_var *d = with(b, b->n->id, g, 1), *zero = bins(b, VKT_OP_EQ, A, 0);
      if (!is_num(b, 1))
        zero = bin(b, VKT_OP_LOGICAL_AND, zero, bins(b, VKT_OP_LE, B, edge));
      SET(b, 0, is_num(b, 1) && SB > edge ? d : zero_where(b, zero, d));
    }
    if (NEED(b, 1))
      SET(b, 1, dvd(b, times(b, g, 0), logy ? B : bins(b, VKT_OP_ADD, B, 1)));
    break;
  }
  case VKT_OP_NEXTAFTER: /* g where a != b, as PyTorch's; b moves nothing */
    if (NEED(b, 0))
      SET(b, 0, keep_where(b, with(b, VKT_OP_NE, A, 1), g));
    if (NEED(b, 1))
      SET(b, 1, zeros_of(b, 1));
    break;
  case VKT_OP_ZETA: /* q's: -g x zeta(x + 1, q); PyTorch has no formula for x's */
    if (NEED(b, 0)) {
      b->st = vkt_fail(VKT_ERR_NOTIMPL, "the derivative for 'zeta' is not implemented.");
    } else {
      const vkt_var *z =
          is_num(b, 0) ? sbin(b, VKT_OP_ZETA, SA + 1, B) : bin(b, VKT_OP_ZETA, bins(b, VKT_OP_ADD, A, 1), B);
      SET(b, 1, un(b, VKT_OP_NEG, times(b, mul(b, g, z), 0)));
    }
    break;
  case VKT_OP_IGAMMA:  /* x's: g exp((a - 1) log x - x - lgamma(a)), PyTorch's formula; it has none for a's */
  case VKT_OP_IGAMMAC: /* ... and minus that */
    if (NEED(b, 0)) {
      b->st = vkt_fail(VKT_ERR_NOTIMPL, "the derivative for '%s: input' is not implemented.",
                       b->n->id == VKT_OP_IGAMMA ? "igamma" : "igammac");
    } else {
      const vkt_var *power = mul(b, bins(b, VKT_OP_SUB, A, 1), un(b, VKT_OP_LOG, B)),
                    *exponent = bin(b, VKT_OP_SUB, bin(b, VKT_OP_SUB, power, B), un(b, VKT_OP_LGAMMA, A)),
                    *d = mul(b, g, un(b, VKT_OP_EXP, exponent));
      SET(b, 1, b->n->id == VKT_OP_IGAMMA ? d : un(b, VKT_OP_NEG, d));
    }
    break;
  case VKT_OP_THRESHOLD_BACKWARD: /* relu's backward: linear in the gradient, a step in y */
    if (NEED(b, 0))
      SET(b, 0, bin(b, VKT_OP_THRESHOLD_BACKWARD, g, B));
    SET(b, 1, muls(b, g, 0));
    break;
  default: /* rounded divisions: zero almost everywhere */ SET(b, 0, muls(b, g, 0)); SET(b, 1, muls(b, g, 0));
  }
}

typedef struct {
  vkt_fn fn;
  unsigned char need[2]; /* what a's gradient reads, and b's: 1 a, 2 b, 4 the output (record) */
} binary_row;

#define BR(ID, NAME, NEED_A, NEED_B) [ID] = {{NAME, binary_backward}, {NEED_A, NEED_B}}
static const binary_row binary_rows[VKT_OP_COUNT] = {
    BR(VKT_OP_ADD, "AddBackward0", 0, 0),
    BR(VKT_OP_SUB, "SubBackward0", 0, 0),
    BR(VKT_OP_MUL, "MulBackward0", 2, 1),
    BR(VKT_OP_DIV, "DivBackward0", 2, 3),
    BR(VKT_OP_DIV_TRUNC, "DivBackward2", 0, 0),
    BR(VKT_OP_DIV_FLOOR, "DivBackward2", 0, 0),
    BR(VKT_OP_POW, "PowBackward1", 3, 7),
    BR(VKT_OP_MAXIMUM, "MaximumBackward0", 3, 3),
    BR(VKT_OP_MINIMUM, "MinimumBackward0", 3, 3),
    BR(VKT_OP_REMAINDER, "RemainderBackward0", 0, 3),
    BR(VKT_OP_FMOD, "FmodBackward0", 0, 3),
    BR(VKT_OP_ATAN2, "Atan2Backward0", 3, 3),
    BR(VKT_OP_HYPOT, "HypotBackward0", 5, 6),
    BR(VKT_OP_COPYSIGN, "CopysignBackward0", 5, 0),
    BR(VKT_OP_LOGADDEXP, "LogaddexpBackward0", 3, 3),
    BR(VKT_OP_XLOGY, "XlogyBackward0", 3, 3),
    BR(VKT_OP_XLOG1PY, "SpecialXlog1PyBackward0", 3, 3),
    BR(VKT_OP_NEXTAFTER, "NextafterBackward0", 3, 0),
    BR(VKT_OP_ZETA, "SpecialZetaBackward0", 0, 3),
    BR(VKT_OP_IGAMMA, "IgammaBackward0", 0, 3),
    BR(VKT_OP_IGAMMAC, "IgammacBackward0", 0, 3),
    BR(VKT_OP_THRESHOLD_BACKWARD, "ThresholdBackwardBackward0", 2, 0),
};

vkt_status vkt_ag_binary(int id, const vkt_var *a, vkt_scalar sa, const vkt_var *b, vkt_scalar sb, vkt_scalar alpha,
                         vkt_var *out) {
  vkt_operand x = a ? (vkt_operand){.t = &a->t} : (vkt_operand){.s = sa};
  vkt_operand y = b ? (vkt_operand){.t = &b->t} : (vkt_operand){.s = sb};
  return vkt_ag_binary_operands(id, a, x, b, y, alpha, out);
}

vkt_status vkt_ag_binary_operands(int id, const vkt_var *a, vkt_operand x, const vkt_var *b, vkt_operand y,
                                  vkt_scalar alpha, vkt_var *out) {
  *out = (vkt_var){0};
  vkt_scalar sa = x.s, sb = y.s;
  vkt_status st = vkt_binary(id, x, y, alpha, NULL, &out->t);
  const binary_row *row = &binary_rows[id];
  if (st || !row->fn.name)
    return st; /* comparisons, logical and bitwise ops: no gradient */
  static const vkt_fn pow_number = {"PowBackward0", binary_backward}, rsub = {"RsubBackward1", binary_backward};
  const vkt_fn *fn = id == VKT_OP_POW && !b ? &pow_number : id == VKT_OP_SUB && !a ? &rsub : &row->fn;
  static const vkt_fn number_fns[3][2] = { /* [xlogy, xlog1py, zeta][b a number]: PyTorch's Scalar overloads */
      {{"XlogyBackward1", binary_backward}, {"XlogyBackward2", binary_backward}},
      {{"SpecialXlog1PyBackward1", binary_backward}, {"SpecialXlog1PyBackward2", binary_backward}},
      {{"SpecialZetaBackward1", binary_backward}, {"SpecialZetaBackward2", binary_backward}}};
  int overloads = id == VKT_OP_XLOGY ? 0 : id == VKT_OP_XLOG1PY ? 1 : id == VKT_OP_ZETA ? 2 : -1;
  if (overloads >= 0 && (!a || !b))
    fn = &number_fns[overloads][!b];
  const vkt_var *in[2] = {a, b};
  vkt_scalar s[3] = {sa, sb, alpha};
  record(fn, 2, in, 0, -1, out, id, s, 3, row->need);
  return VKT_OK;
}

/* ---- a comparison in place (x.eq_(y)): x takes 0 and 1 in its own dtype, which depend on x and y nowhere
 * differentiably; PyTorch records it, giving both zeros rather than the gradient of the values x had ---- */

static void compare_backward(vkt_bw *b) {
  for (int i = 0; i < 2; i++)
    if (NEED(b, i))
      SET(b, i, zeros_of(b, i));
}

vkt_status vkt_ag_compare_into(int id, const vkt_var *a, vkt_operand x, const vkt_var *b, vkt_operand y,
                               vkt_var *out) {
  static const vkt_fn fns[][2] = {
      {{"EqBackward0", compare_backward}, {"EqBackward1", compare_backward}},
      {{"NeBackward0", compare_backward}, {"NeBackward1", compare_backward}},
      {{"LtBackward0", compare_backward}, {"LtBackward1", compare_backward}},
      {{"LeBackward0", compare_backward}, {"LeBackward1", compare_backward}},
      {{"GtBackward0", compare_backward}, {"GtBackward1", compare_backward}},
      {{"GeBackward0", compare_backward}, {"GeBackward1", compare_backward}}};
  static const int ids[] = {VKT_OP_EQ, VKT_OP_NE, VKT_OP_LT, VKT_OP_LE, VKT_OP_GT, VKT_OP_GE};
  *out = (vkt_var){0};
  vkt_tensor c = {0};
  vkt_status st = vkt_binary(id, x, y, (vkt_scalar){false, 0, 1}, NULL, &c);
  if (!st)
    st = vkt_cast(&c, a->t.dtype, &out->t);
  vkt_tensor_release(&c);
  int k = 0;
  while (k < 5 && ids[k] != id)
    k++;
  const vkt_var *in[2] = {a, b};
  if (!st)
    record(&fns[k][b != NULL], 2, in, 0, -1, out, id, NULL, 0, NULL);
  return st;
}

/* ---- where: cond in slot 2, a and b as a binary op's ---- */

static void where_backward(vkt_bw *b) {
  const vkt_var *cond = S(b, 2);
  SET(b, 0, keep_where(b, cond, g));
  SET(b, 1, zero_where(b, cond, g));
}

static const vkt_fn where_fn = {"WhereBackward0", where_backward};

vkt_status vkt_ag_where(const vkt_tensor *cond, const vkt_var *a, vkt_scalar sa, const vkt_var *b, vkt_scalar sb,
                        vkt_var *out) {
  vkt_operand x = a ? (vkt_operand){.t = &a->t} : (vkt_operand){.s = sa};
  vkt_operand y = b ? (vkt_operand){.t = &b->t} : (vkt_operand){.s = sb};
  return vkt_ag_where_operands(cond, a, x, b, y, out);
}

vkt_status vkt_ag_where_operands(const vkt_tensor *cond, const vkt_var *a, vkt_operand x, const vkt_var *b,
                                 vkt_operand y, vkt_var *out) {
  *out = (vkt_var){0};
  vkt_status st = vkt_where(cond, x, y, &out->t);
  if (st || !vkt_dtypes[out->t.dtype].is_float)
    return st;
  const vkt_var *in[2] = {a, b};
  vkt_node *n = vkt_node_begin(&where_fn, 2, in, 1);
  if (n) {
    vkt_var c = {0};
    vkt_tensor_share(&c.t, cond);
    vkt_node_save(n, 2, &c, false, 0);
    vkt_var_release(&c);
    vkt_node_output(n, 0, out);
    vkt_node_decref(n);
  }
  return VKT_OK;
}

/* ---- casts and copies: the gradient goes back to the input's device and dtype ---- */

static void to_backward(vkt_bw *b) {
  vkt_var out = {0};
  const vkt_shape_info *in = IN(b, 0);
  if (g)
    SET(b, 0, keep(b, vkt_ag_cast(g, in->device, in->dtype, VKT_PRESERVE_FORMAT, false, &out), &out));
}

static void clone_backward(vkt_bw *b) { SET(b, 0, g); }

static const vkt_fn to_fn = {"ToCopyBackward0", to_backward}, clone_fn = {"CloneBackward0", clone_backward};

static void record_unary(const vkt_fn *fn, const vkt_var *x, vkt_var *out) {
  vkt_node *n = vkt_node_begin(fn, 1, &x, 1);
  vkt_node_output(n, 0, out);
  vkt_node_decref(n);
}

vkt_status vkt_ag_cast(const vkt_var *x, int device, vkt_dtype dtype, vkt_memory_format fmt, bool copy, vkt_var *out) {
  *out = (vkt_var){0};
  if (!copy && vkt_tensor_device(&x->t) == device && x->t.dtype == dtype) {
    vkt_var_share(out, x); /* .to() of what it already is: the tensor itself */
    return VKT_OK;
  }
  vkt_status st = vkt_copy_as(&out->t, &x->t, device, dtype, fmt);
  if (!st && vkt_dtypes[dtype].is_float)
    record_unary(&to_fn, x, out);
  return st;
}

vkt_status vkt_ag_clone(const vkt_var *x, vkt_memory_format fmt, vkt_var *out) {
  *out = (vkt_var){0};
  vkt_status st = vkt_copy_as(&out->t, &x->t, vkt_tensor_device(&x->t), x->t.dtype, fmt);
  if (!st)
    record_unary(&clone_fn, x, out);
  return st;
}

vkt_status vkt_ag_record_unary(int id, const vkt_var *x, vkt_scalar p0, vkt_scalar p1, vkt_var *out) {
  const unary_row *row = &unary_rows[id];
  vkt_scalar s[2] = {p0, p1};
  if (row->fn.name)
    record(&row->fn, 1, &x, row->save & SX ? 1 : 0, row->save & SY ? 1 : -1, out, id, s, 2, NULL);
  return VKT_OK;
}

/* PyTorch's in-place leaky_relu saves its result, from which a negative slope's gradient cannot be had (a negative
 * output may come from either side of 0), so its backward refuses; the out-of-place node, which saves x, does not. */
static void negative_slope_backward(vkt_bw *b) {
  b->st = vkt_fail(VKT_ERR_RUNTIME,
                   "In-place leakyReLu backward calculation is triggered with a negative slope which is not supported. "
                   "This is caused by calling in-place forward function with a negative slope, please call "
                   "out-of-place version instead. File an issue at https://github.com/pytorch/pytorch if you do "
                   "require supporting in-place leakRelu backward calculation with negative slope");
}

void vkt_ag_leaky_relu_inplace(vkt_var *out, const char *name) {
  vkt_node *n = out->ag ? out->ag->grad_fn.node : NULL;
  if (!n)
    return;
  double slope = n->s[0].is_float ? n->s[0].f : (double)n->s[0].i;
  const vkt_fn *fn = vkt_fn_named(name, slope < 0 ? negative_slope_backward : n->fn->backward);
  if (fn)
    n->fn = fn;
}
