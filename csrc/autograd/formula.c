/* formula.c: the helpers backward functions are written with (formula.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formula.h"

static const vkt_scalar none = {false, 0, 0}, one = {false, 0, 1};

const vkt_var *keep(vkt_bw *b, vkt_status st, vkt_var *v) {
  if (st || b->ntmp == (int)(sizeof b->tmp / sizeof b->tmp[0])) {
    vkt_var_release(v);
    if (!b->st)
      b->st = st ? st : vkt_fail(VKT_ERR_RUNTIME, "%s: backward formula too long", b->n->fn->name);
    return NULL;
  }
  vkt_var *kept = malloc(sizeof *kept);
  if (!kept) {
    vkt_var_release(v);
    b->st = vkt_fail(VKT_ERR_NOMEM, "out of host memory");
    return NULL;
  }
  *kept = *v;
  return b->tmp[b->ntmp++] = kept;
}

void vkt_bw_end(vkt_bw *b) {
  for (int i = 0; i < b->ntmp; i++) {
    vkt_var_release(b->tmp[i]);
    free(b->tmp[i]);
  }
  b->ntmp = 0;
}

const vkt_var *G(vkt_bw *b, int k) { return b->st ? NULL : &b->grads[k]; }

/* Saved value s as its hooks' unpack gives it back, with its autograd state: an input's as it was saved, an
 * output's this node (with create_graph). */
static const vkt_var *unpacked(vkt_bw *b, vkt_saved *s) {
  vkt_var v = {0};
  b->st = s->handle ? s->hooks->unpack(s->handle, &v) : vkt_fail(VKT_ERR_NOMEM, "out of host memory");
  if (b->st)
    return NULL;
  vkt_meta *m = s->is_output && vkt_grad_enabled() ? vkt_var_meta(&v) : NULL;
  if (m) {
    vkt_node_incref(b->n);
    m->grad_fn = (vkt_edge){b->n, s->output_nr};
    m->requires_grad = true;
  } else if (!s->is_output && s->v.ag) {
    v.ag = s->v.ag;
    __atomic_add_fetch(&v.ag->refcount, 1, __ATOMIC_RELAXED);
  }
  return keep(b, VKT_OK, &v);
}

/* The node that made saved tensor s of node n, as PyTorch names it when s was written since: n for n's own output,
 * else s's grad_fn now (a view written since: the AsStrided one vkt_view_refresh makes), NULL for a leaf. */
static const char *saved_creator(const vkt_saved *s, const vkt_node *n, int *nr) {
  const vkt_meta *m = s->v.ag;
  *nr = s->is_output ? s->output_nr : 0;
  if (s->is_output)
    return n->fn->name;
  if (!m)
    return NULL;
  if (m->base && m->base_version != s->v.t.storage->version && !m->no_grad_view && !m->multi_view &&
      (m->base->requires_grad || m->base->grad_fn.node))
    return "AsStridedBackward0";
  *nr = m->grad_fn.nr;
  return m->grad_fn.node ? m->grad_fn.node->fn->name : NULL;
}

/* PyTorch's error for a saved tensor written since: it names the node by its name less "Backward" (and less a 0
 * after it: ExpBackward0 is Exp, TBackward1 T1), and the tensor by its shape now (an input that an in-place view op
 * reshaped since); its hint points at anomaly mode, or, in anomaly mode, at the forward trace printed above. */
static vkt_status modified_fail(const vkt_saved *s, const vkt_node *n) {
  char shape[96], from[160] = "";
  int nr;
  const char *creator = saved_creator(s, n, &nr);
  const vkt_tensor *now = s->v.ag && s->v.ag->regeometried ? &s->v.ag->geometry : &s->v.t;
  vkt_shape_str(now->ndim, now->shape, shape, sizeof shape);
  if (creator) {
    const char *cut = strstr(creator, "Backward"), *digits = cut ? cut + 8 : "";
    bool numbered = cut && *digits && strspn(digits, "0123456789") == strlen(digits);
    int len = numbered ? (int)(cut - creator) : (int)strlen(creator);
    snprintf(from, sizeof from, ", which is output %d of %.*s%s,", nr, len, creator,
             numbered && strcmp(digits, "0") ? digits : "");
  }
  bool check_nan;
  const vkt_storage *st = s->v.t.storage;
  return vkt_fail(VKT_ERR_RUNTIME,
                  "one of the variables needed for gradient computation has been modified by an inplace operation: "
                  "[torch.%sTensor %s]%s is at version %u; expected version %u instead. Hint: %s",
                  vkt_dtypes[s->v.t.dtype].torch_name, shape, from, st->version - st->version_shown,
                  s->version - st->version_shown,
                  vkt_anomaly(&check_nan)
                      ? "the backtrace further above shows the operation that failed to compute its gradient. The "
                        "variable in question was changed in there or anywhere later. Good luck!"
                      : "enable anomaly detection to find the operation that failed to compute its gradient, with "
                        "torch.autograd.set_detect_anomaly(True, check_nan=False).");
}

const vkt_var *S(vkt_bw *b, int k) {
  if (b->st)
    return NULL;
  vkt_node *n = b->n;
  vkt_saved *s = &n->saved[k];
  if (n->released) {
    b->st = vkt_fail(VKT_ERR_RUNTIME,
                     "Trying to backward through the graph a second time (or directly access saved tensors after "
                     "they have already been freed). Saved intermediate values of the graph are freed when you call "
                     ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
                     "graph a second time or if you need to access saved tensors after calling backward.");
    return NULL;
  }
  if (!vkt_saved_present(s)) { /* a formula asked for what its entry point did not save: a bug of the formula */
    b->st = vkt_fail(VKT_ERR_RUNTIME, "vkt: %s read saved value %d, which was not saved", n->fn->name, k);
    return NULL;
  }
  if (s->hooks)
    return unpacked(b, s);
  if (s->v.t.storage->version != s->version) {
    b->st = modified_fail(s, n);
    return NULL;
  }
  if (!s->is_output || !vkt_grad_enabled())
    return &s->v;
  /* With create_graph an output takes its place in the graph again: its grad_fn is this node. */
  vkt_var v = {0};
  vkt_tensor_share(&v.t, &s->v.t);
  vkt_meta *m = vkt_var_meta(&v);
  if (!m)
    return keep(b, vkt_fail(VKT_ERR_NOMEM, "out of host memory"), &v);
  vkt_node_incref(n);
  m->grad_fn = (vkt_edge){n, s->output_nr};
  m->requires_grad = true;
  return keep(b, VKT_OK, &v);
}

bool NEED(vkt_bw *b, int i) { return b->n->next[i].node != NULL; }

void SET(vkt_bw *b, int i, const vkt_var *g) {
  if (g && !b->st && NEED(b, i)) {
    vkt_var_release(&b->out[i]);
    vkt_var_share(&b->out[i], g);
  }
}

const vkt_var *un2(vkt_bw *b, int id, const vkt_var *x, double p0, double p1) {
  vkt_var out = {0};
  return x ? keep(b, vkt_ag_unary(id, x, num(p0), num(p1), &out), &out) : NULL;
}

const vkt_var *un(vkt_bw *b, int id, const vkt_var *x) {
  vkt_var out = {0};
  return x ? keep(b, vkt_ag_unary(id, x, none, none, &out), &out) : NULL;
}

const vkt_var *bin(vkt_bw *b, int id, const vkt_var *x, const vkt_var *y) {
  vkt_var out = {0};
  return x && y ? keep(b, vkt_ag_binary(id, x, none, y, none, one, &out), &out) : NULL;
}

const vkt_var *bins(vkt_bw *b, int id, const vkt_var *x, double s) {
  vkt_var out = {0};
  return x ? keep(b, vkt_ag_binary(id, x, none, NULL, num(s), one, &out), &out) : NULL;
}

const vkt_var *sbin(vkt_bw *b, int id, double s, const vkt_var *x) {
  vkt_var out = {0};
  return x ? keep(b, vkt_ag_binary(id, NULL, num(s), x, none, one, &out), &out) : NULL;
}

const vkt_var *keep_where(vkt_bw *b, const vkt_var *cond, const vkt_var *x) {
  vkt_var out = {0};
  return cond && x ? keep(b, vkt_ag_where(&cond->t, x, none, NULL, (vkt_scalar){false, 0, 0}, &out), &out) : NULL;
}

const vkt_var *zero_where(vkt_bw *b, const vkt_var *cond, const vkt_var *x) {
  vkt_var out = {0};
  return cond && x ? keep(b, vkt_ag_where(&cond->t, NULL, (vkt_scalar){false, 0, 0}, x, none, &out), &out) : NULL;
}

const vkt_var *zeros_of(vkt_bw *b, int i) {
  vkt_var out = {0};
  if (b->st)
    return NULL;
  const vkt_shape_info *in = IN(b, i);
  vkt_status st = vkt_tensor_empty(&out.t, in->device, in->dtype, in->ndim, in->shape);
  return keep(b, st ? st : vkt_fill_(&out.t, (vkt_scalar){false, 0, 0}), &out);
}

const vkt_var *sum_dims(vkt_bw *b, const vkt_var *x, uint32_t dims, bool keepdim) {
  vkt_var out = {0};
  return x ? keep(b, vkt_ag_reduce(VKT_OP_SUM, x, dims, keepdim, -1, 0, false, "sum", false, &out), &out) : NULL;
}

const vkt_var *reshape(vkt_bw *b, const vkt_var *x, int ndim, const int64_t *shape) {
  vkt_var out = {0};
  return x ? keep(b, vkt_ag_reshape(x, ndim, shape, false, &out), &out) : NULL;
}

const vkt_var *lift(vkt_bw *b, const vkt_var *x, bool row) {
  int64_t shape[VKT_MAX_DIMS];
  if (!x)
    return NULL;
  int nd = x->t.ndim;
  for (int d = 0; d < nd - 1; d++)
    shape[d] = x->t.shape[d];
  shape[nd - 1] = row ? 1 : x->t.shape[nd - 1];
  shape[nd] = row ? x->t.shape[nd - 1] : 1;
  return reshape(b, x, nd + 1, shape);
}

const vkt_var *expand(vkt_bw *b, const vkt_var *x, int ndim, const int64_t *shape) {
  vkt_var out = {0};
  return x ? keep(b, vkt_ag_expand(x, ndim, shape, &out), &out) : NULL;
}

const vkt_var *unreduce(vkt_bw *b, const vkt_var *x, uint32_t dims, bool keepdim, int ndim, const int64_t *shape) {
  if (!x)
    return NULL;
  if (!keepdim) {
    int64_t kept[VKT_MAX_DIMS];
    for (int d = 0; d < ndim; d++)
      kept[d] = dims >> d & 1 ? 1 : shape[d];
    x = reshape(b, x, ndim, kept);
  }
  return expand(b, x, ndim, shape);
}

const vkt_var *transpose(vkt_bw *b, const vkt_var *x, int64_t d0, int64_t d1) {
  vkt_var out = {0};
  return x ? keep(b, vkt_ag_transpose(x, d0, d1, &out), &out) : NULL;
}

const vkt_var *narrow(vkt_bw *b, const vkt_var *x, int64_t dim, int64_t start, int64_t len) {
  vkt_tensor view = {0};
  vkt_var out = {0};
  if (!x)
    return NULL;
  vkt_status st = vkt_slice(&view, &x->t, dim, start, start + len, 1);
  if (!st)
    st = vkt_ag_view(x, &view, VKT_VIEW_STRIDED, NULL, "SliceBackward0", &out);
  return keep(b, st, &out);
}

const vkt_var *matmul(vkt_bw *b, const vkt_var *x, const vkt_var *y) {
  vkt_var out = {0};
  return x && y ? keep(b, vkt_ag_matmul(x, y, &out), &out) : NULL;
}

const vkt_var *sum_to(vkt_bw *b, const vkt_var *x, int ndim, const int64_t *shape) {
  vkt_var out = {0};
  return x ? keep(b, vkt_ag_sum_to(x, ndim, shape, &out), &out) : NULL;
}
