/* composite.c (autograd): the elementwise composites of elementwise_more.c (lerp, addcmul, addcdiv, clamp
 * with tensor bounds, nan_to_num). Nothing recording, each runs its fused kernel; recording, it is composed
 * of entry points, so its gradient is theirs. */
#include "autograd.h"

static const vkt_scalar one = {false, 0, 1}, none = {false, 0, 0};

static bool records(int n, const vkt_var *const *in) {
  if (!vkt_grad_enabled())
    return false;
  for (int i = 0; i < n; i++)
    if (vkt_requires_grad(in[i]))
      return true;
  return false;
}

/* out = op(a, b), then a and b released: a chain of steps reads as one line each. */
static vkt_status step(vkt_status st, int id, vkt_var *a, const vkt_var *b, vkt_scalar sb, vkt_var *out) {
  if (!st)
    st = vkt_ag_binary(id, a, none, b, sb, one, out);
  vkt_var_release(a);
  return st;
}

vkt_status vkt_ag_lerp(const vkt_var *start, const vkt_var *end, const vkt_var *w, vkt_operand wo, vkt_var *out) {
  *out = (vkt_var){0};
  if (!records(3, (const vkt_var *[]){start, end, w}))
    return vkt_lerp(&start->t, &end->t, wo, NULL, &out->t);
  vkt_var d = {0}, wd = {0};
  vkt_status st = vkt_ag_binary(VKT_OP_SUB, end, none, start, none, one, &d); /* start + w (end - start) */
  st = w ? step(st, VKT_OP_MUL, &d, w, none, &wd) : step(st, VKT_OP_MUL, &d, NULL, wo.s, &wd);
  return step(st, VKT_OP_ADD, &wd, start, none, out);
}

vkt_status vkt_ag_addcmul(const vkt_var *x, const vkt_var *t1, const vkt_var *t2, vkt_scalar value, bool div,
                          vkt_var *out) {
  *out = (vkt_var){0};
  if (!records(3, (const vkt_var *[]){x, t1, t2}))
    return vkt_addcmul(&x->t, &t1->t, &t2->t, value, div, NULL, &out->t);
  vkt_var p = {0}, scaled = {0};
  vkt_status st = vkt_ag_binary(div ? VKT_OP_DIV : VKT_OP_MUL, t1, none, t2, none, one, &p);
  st = step(st, VKT_OP_MUL, &p, NULL, value, &scaled);
  if (!st)
    st = vkt_ag_binary(VKT_OP_ADD, x, none, &scaled, none, one, out);
  vkt_var_release(&scaled);
  return st;
}

vkt_status vkt_ag_clamp_tensors(const vkt_var *x, const vkt_var *lo, const vkt_var *hi, vkt_var *out) {
  *out = (vkt_var){0};
  if (!records(3, (const vkt_var *[]){x, lo, hi}))
    return vkt_clamp_tensors(&x->t, lo ? &lo->t : NULL, hi ? &hi->t : NULL, NULL, &out->t);
  /* min(max(x, lo), hi) as selections: the gradient goes to whichever value was taken. */
  vkt_var cur = {0}, cond = {0}, next = {0};
  vkt_var_share(&cur, x);
  vkt_status st = VKT_OK;
  const vkt_var *bound[2] = {lo, hi};
  for (int k = 0; k < 2 && !st; k++) {
    if (!bound[k])
      continue;
    st = vkt_ag_binary(k ? VKT_OP_GT : VKT_OP_LT, &cur, none, bound[k], none, one, &cond);
    if (!st)
      st = vkt_ag_where(&cond.t, bound[k], none, &cur, none, &next);
    vkt_var_release(&cond);
    vkt_var_release(&cur);
    cur = next;
    next = (vkt_var){0};
  }
  if (st)
    vkt_var_release(&cur);
  *out = cur;
  return st;
}

vkt_status vkt_ag_nan_to_num(const vkt_var *x, vkt_scalar nan, const vkt_scalar *posinf, const vkt_scalar *neginf,
                             vkt_var *out) {
  *out = (vkt_var){0};
  vkt_status st = vkt_nan_to_num(&x->t, nan, posinf, neginf, NULL, &out->t);
  return st ? st : vkt_ag_record_unary(VKT_OP_NAN_TO_NUM, x, none, none, out);
}
