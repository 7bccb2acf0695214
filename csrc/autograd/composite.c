/* composite.c (autograd): the elementwise composites of elementwise_more.c (lerp, addcmul, addcdiv, clamp
 * with tensor bounds, nan_to_num) and rrelu's product with its drawn slopes. Each runs its fused kernel and
 * records one node with PyTorch's name and formulas (derivatives.yaml). */
#include "formula.h"

#define g G(b, 0)

static const vkt_scalar none = {false, 0, 0};

static bool records(int n, const vkt_var *const *in) {
  if (!vkt_grad_enabled())
    return false;
  for (int i = 0; i < n; i++)
    if (vkt_requires_grad(in[i]))
      return true;
  return false;
}

static double real(vkt_scalar s) { return s.is_float ? s.f : (double)s.i; }

/* lerp: start + w (end - start). Saved: 0 start, 1 end (for the weight's gradient), 2 the weight tensor. */
static void lerp_backward(vkt_bw *b) {
  const vkt_var *w = b->n->flag && (NEED(b, 0) || NEED(b, 1)) ? S(b, 2) : NULL;
  double ws = real(b->n->s[0]);
  if (NEED(b, 0))
    SET(b, 0, w ? mul(b, g, sbin(b, VKT_OP_SUB, 1, w)) : muls(b, g, 1 - ws));
  if (NEED(b, 1))
    SET(b, 1, w ? mul(b, g, w) : muls(b, g, ws));
  if (b->n->flag && NEED(b, 2))
    SET(b, 2, mul(b, g, sub(b, S(b, 1), S(b, 0))));
}

/* addcmul: x + v t1 t2, addcdiv (flag): x + v t1 / t2. Saved: 1 t1, 2 t2, as the other's gradient needs them. */
static void addc_backward(vkt_bw *b) {
  double v = real(b->n->s[0]);
  bool div = b->n->flag;
  if (NEED(b, 0))
    SET(b, 0, g);
  if (NEED(b, 1))
    SET(b, 1, muls(b, div ? dvd(b, g, S(b, 2)) : mul(b, g, S(b, 2)), v));
  if (NEED(b, 2)) { /* addcdiv: -v g t1 / t2^2 */
    const vkt_var *gt1 = mul(b, g, S(b, 1));
    SET(b, 2, div ? muls(b, dvd(b, gt1, un(b, VKT_OP_SQUARE, S(b, 2))), -v) : muls(b, gt1, v));
  }
}

/* clamp with tensor bounds, as derivatives.yaml's clamp_backward and clamp_backward_min_max: x's gradient passes
 * where lo <= x <= hi, a bound's where it was taken; where lo > hi the result is hi, so lo gets none and hi all.
 * Saved: the inputs in their slots; iv[0], iv[1]: the slots of lo and hi (0 where not given). */
static void clamp_backward(vkt_bw *b) {
  int l = (int)b->n->iv[0], h = (int)b->n->iv[1];
  const vkt_var *x = S(b, 0), *lo = l ? S(b, l) : NULL, *hi = h ? S(b, h) : NULL;
  if (NEED(b, 0)) {
    const vkt_var *above = lo ? bin(b, VKT_OP_GE, x, lo) : NULL, *below = hi ? bin(b, VKT_OP_LE, x, hi) : NULL;
    SET(b, 0, keep_where(b, lo && hi ? bin(b, VKT_OP_LOGICAL_AND, above, below) : lo ? above : below, g));
  }
  if (l && NEED(b, l)) {
    const vkt_var *taken = bin(b, VKT_OP_LT, x, lo);
    SET(b, l, keep_where(b, hi ? bin(b, VKT_OP_LOGICAL_AND, taken, bin(b, VKT_OP_LT, lo, hi)) : taken, g));
  }
  if (h && NEED(b, h)) {
    const vkt_var *taken = bin(b, VKT_OP_GT, x, hi);
    SET(b, h, keep_where(b, lo ? bin(b, VKT_OP_LOGICAL_OR, taken, bin(b, VKT_OP_LT, hi, lo)) : taken, g));
  }
}

static const vkt_fn clamp_fn = {"ClampBackward0", clamp_backward};

static const vkt_fn lerp_fns[2] = {{"LerpBackward0", lerp_backward}, {"LerpBackward1", lerp_backward}},
                    addc_fns[2] = {{"AddcmulBackward0", addc_backward}, {"AddcdivBackward0", addc_backward}};

/* One node of fn over the three inputs (a NULL third: a number), saving what the needed gradients read. */
static void record3(const vkt_fn *fn, const vkt_var *const *in, const unsigned char *need, vkt_scalar s, bool flag,
                    vkt_var *out) {
  vkt_node *n = vkt_dtypes[out->t.dtype].is_float ? vkt_node_begin(fn, 3, in, 1) : NULL;
  if (!n)
    return;
  n->s[0] = s;
  n->flag = flag;
  vkt_node_save_needed(n, 3, in, need, out);
  vkt_node_output(n, 0, out);
  vkt_node_decref(n);
}

vkt_status vkt_ag_lerp(const vkt_var *start, const vkt_var *end, const vkt_var *w, vkt_operand wo, vkt_var *out) {
  *out = (vkt_var){0};
  vkt_status st = vkt_lerp(&start->t, &end->t, wo, NULL, &out->t);
  if (!st && records(3, (const vkt_var *[]){start, end, w})) /* start's and end's gradients read w; w's both */
    record3(&lerp_fns[w != NULL], (const vkt_var *[]){start, end, w}, (const unsigned char[]){4, 4, 3},
            w ? none : wo.s, w != NULL, out);
  return st;
}

vkt_status vkt_ag_addcmul(const vkt_var *x, const vkt_var *t1, const vkt_var *t2, vkt_scalar value, bool div,
                          vkt_var *out) {
  *out = (vkt_var){0};
  vkt_status st = vkt_addcmul(&x->t, &t1->t, &t2->t, value, div, NULL, &out->t);
  if (!st && records(3, (const vkt_var *[]){x, t1, t2})) /* t1's gradient reads t2; t2's both (addcdiv) or t1 */
    record3(&addc_fns[div], (const vkt_var *[]){x, t1, t2}, (const unsigned char[]){0, 4, div ? 6 : 2}, value, div,
            out);
  return st;
}

vkt_status vkt_ag_clamp_tensors(const vkt_var *x, const vkt_var *lo, const vkt_var *hi, const char *name,
                                vkt_var *out) {
  *out = (vkt_var){0};
  vkt_status st = vkt_clamp_tensors(&x->t, lo ? &lo->t : NULL, hi ? &hi->t : NULL, NULL, &out->t);
  if (st || !records(3, (const vkt_var *[]){x, lo, hi}))
    return st;
  /* clamp_min and clamp_max (one bound, named) have two inputs, clamp three with None for a missing bound */
  bool two = name != NULL;
  const vkt_var *in[3] = {x, two ? (lo ? lo : hi) : lo, two ? NULL : hi};
  const vkt_fn *fn = two ? vkt_fn_named(name, clamp_backward) : &clamp_fn;
  vkt_node *n = fn && vkt_dtypes[out->t.dtype].is_float ? vkt_node_begin(fn, two ? 2 : 3, in, 1) : NULL;
  if (!n)
    return st;
  n->iv[0] = lo ? 1 : 0;
  n->iv[1] = hi ? (two ? 1 : 2) : 0;
  for (int k = 0; k < 3; k++) /* every gradient reads x and the bounds (lo's and hi's: both, where both are given) */
    if (in[k])
      vkt_node_save(n, k, in[k], false, 0);
  vkt_node_output(n, 0, out);
  vkt_node_decref(n);
  return st;
}

/* rrelu in training: x times its slopes, a node of x alone (the slopes are no input to autograd) that saves them
 * in slot 0: the gradient takes the same slopes. */
static void rrelu_backward(vkt_bw *b) { SET(b, 0, mul(b, g, S(b, 0))); }

static const vkt_fn rrelu_fn = {"RreluWithNoiseBackward0", rrelu_backward};

vkt_status vkt_ag_rrelu_noise(const vkt_var *x, const vkt_tensor *noise, vkt_var *out) {
  *out = (vkt_var){0};
  vkt_status st = vkt_binary(VKT_OP_MUL, (vkt_operand){.t = &x->t}, (vkt_operand){.t = noise},
                             (vkt_scalar){false, 0, 1}, NULL, &out->t);
  vkt_node *n = st || !vkt_dtypes[out->t.dtype].is_float ? NULL : vkt_node_begin(&rrelu_fn, 1, &x, 1);
  if (!n)
    return st;
  vkt_var slopes = {0};
  vkt_tensor_share(&slopes.t, noise);
  vkt_node_save(n, 0, &slopes, false, 0);
  vkt_var_release(&slopes);
  vkt_node_output(n, 0, out);
  vkt_node_decref(n);
  return st;
}

vkt_status vkt_ag_nan_to_num(const vkt_var *x, vkt_scalar nan, const vkt_scalar *posinf, const vkt_scalar *neginf,
                             vkt_var *out) {
  *out = (vkt_var){0};
  vkt_status st = vkt_nan_to_num(&x->t, nan, posinf, neginf, NULL, &out->t);
  return st ? st : vkt_ag_record_unary(VKT_OP_NAN_TO_NUM, x, none, none, out);
}
