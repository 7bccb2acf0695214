/* write.c (autograd): writes along a dim or through a mask (write.h), with PyTorch's backward formulas:
 * the target's gradient is g with the overwritten positions zeroed (or g itself where the write adds),
 * the source's is g read back at the positions it went to. The zeroing writes are themselves entry points
 * of this file, so the backward is differentiable (create_graph). Index tensors and masks are kept on the
 * forward's device: no backward reads anything to the host but masked_scatter's count (a shape), and prod's
 * zero count under create_graph. */
#include <string.h>

#include "../ops/reduce.h"
#include "../ops/shape.h"
#include "formula.h"
#include "shape.h"
#include "write.h"

#define g G(b, 0)

static const vkt_scalar zero = {false, 0, 0}, one = {false, 0, 1};

/* The write itself: a copy of x, written to. */
static vkt_status write_op(vkt_write_kind kind, const vkt_tensor *x, int64_t dim, const vkt_tensor *index,
                           const vkt_tensor *src, vkt_scalar s, bool include_self, vkt_tensor *out) {
  vkt_tensor value = {0}, spread = {0}, scaled = {0};
  vkt_status st = VKT_OK;
  if (!src && kind == VKT_WRITE_SCATTER) { /* the number broadcast over index's shape */
    if (!(st = vkt_tensor_empty(&value, vkt_tensor_device(x), x->dtype, 0, NULL)) && !(st = vkt_fill_(&value, s)))
      st = vkt_expand(&spread, &value, index->ndim, index->shape);
    src = &spread;
  } else if (!src && kind == VKT_WRITE_INDEX_FILL) {
    if (!(st = vkt_tensor_empty(&value, VKT_CPU, x->dtype, 0, NULL)))
      st = vkt_fill_(&value, s);
    src = &value;
  } else if (kind == VKT_WRITE_INDEX_ADD && (s.is_float ? s.f != 1 : s.i != 1)) {
    st = vkt_binary(VKT_OP_MUL, (vkt_operand){.t = src}, (vkt_operand){.s = s}, one, NULL, &scaled);
    src = &scaled;
  }
  if (!st)
    st = vkt_clone(out, x);
  if (!st) {
    switch (kind) {
    case VKT_WRITE_SCATTER:
    case VKT_WRITE_SCATTER_ADD: st = vkt_scatter_(out, dim, index, src, kind == VKT_WRITE_SCATTER_ADD); break;
    case VKT_WRITE_REDUCE_SUM:
    case VKT_WRITE_REDUCE_MEAN:
    case VKT_WRITE_REDUCE_PROD:
    case VKT_WRITE_REDUCE_AMAX:
    case VKT_WRITE_REDUCE_AMIN:
      st = vkt_scatter_reduce_(out, dim, index, src, (vkt_scatter_reduce)(kind - VKT_WRITE_REDUCE_SUM), include_self);
      break;
    case VKT_WRITE_INDEX_COPY:
    case VKT_WRITE_INDEX_ADD: st = vkt_index_copy_(out, dim, index, src, kind == VKT_WRITE_INDEX_ADD); break;
    case VKT_WRITE_INDEX_FILL: st = vkt_index_fill_(out, dim, index, src); break;
    case VKT_WRITE_MASKED_SCATTER: st = vkt_masked_scatter_(out, index, src); break;
    }
    if (st)
      vkt_tensor_release(out);
  }
  vkt_tensor_release(&value);
  vkt_tensor_release(&spread);
  vkt_tensor_release(&scaled);
  return st;
}

/* g with the positions a write of this kind overwrote zeroed: scatter's or index_fill's of the number 0. */
static const vkt_var *zeroed(vkt_bw *b, vkt_write_kind kind, const vkt_var *x, const vkt_var *idx) {
  vkt_var out = {0};
  if (!x || !idx)
    return NULL;
  return keep(b, vkt_ag_write(kind, x, b->n->iv[0], &idx->t, NULL, zero, true, &out), &out);
}

static const vkt_var *gathered(vkt_bw *b, const vkt_var *x, const vkt_var *idx) {
  vkt_var out = {0};
  if (!x || !idx)
    return NULL;
  return keep(b, vkt_ag_gather(x, b->n->iv[0], &idx->t, &out), &out);
}

static const vkt_var *selected(vkt_bw *b, const vkt_var *x, const vkt_var *idx) {
  vkt_var out = {0};
  if (!x || !idx)
    return NULL;
  return keep(b, vkt_ag_index_select(x, b->n->iv[0], &idx->t, &out), &out);
}

/* A mask as x's dtype: 1 where it holds. */
static const vkt_var *ones_at(vkt_bw *b, const vkt_var *mask) {
  vkt_var out = {0};
  if (!mask)
    return NULL;
  vkt_status st = vkt_ag_cast(mask, vkt_tensor_device(&mask->t), IN(b, 0)->dtype, VKT_PRESERVE_FORMAT, false, &out);
  return keep(b, st, &out);
}

/* x.masked_fill(mask, 1). */
static const vkt_var *ones_where(vkt_bw *b, const vkt_var *mask, const vkt_var *x) {
  vkt_var out = {0};
  return mask && x ? keep(b, vkt_ag_masked_fill(x, &mask->t, NULL, one, &out), &out) : NULL;
}

static const vkt_var *select(vkt_bw *b, const vkt_var *cond, const vkt_var *x, const vkt_var *y) {
  vkt_var out = {0};
  return cond && x && y ? keep(b, vkt_ag_where(&cond->t, x, zero, y, zero, &out), &out) : NULL;
}

/* x.scatter_add(dim, index, src), or x.scatter_reduce(dim, index, src, ...) with the node's include_self. */
static const vkt_var *rewritten(vkt_bw *b, vkt_write_kind kind, const vkt_var *x, const vkt_var *idx,
                                const vkt_var *src) {
  vkt_var out = {0};
  if (!x || !idx || !src)
    return NULL;
  return keep(b, vkt_ag_write(kind, x, b->n->iv[0], &idx->t, src, one, b->n->flag, &out), &out);
}

/* zeros of x's shape with src added at index. */
static const vkt_var *added(vkt_bw *b, const vkt_var *src, const vkt_var *idx) {
  vkt_var out = {0};
  if (!src || !idx)
    return NULL;
  return keep(b, vkt_ag_scatter_add_zeros(src, b->n->iv[0], &idx->t, IN(b, 0)->ndim, IN(b, 0)->shape, &out), &out);
}

/* amax, amin: g shared evenly among the values equal to the result, x's and src's alike (PyTorch counts x's
 * even where include_self is false). */
static void extreme_backward(vkt_bw *b, const vkt_var *idx, const vkt_var **gx, const vkt_var **gs) {
  const vkt_var *x = S(b, 1), *src = S(b, 2), *y = S(b, 3);
  const vkt_var *x_hit = ones_at(b, bin(b, VKT_OP_EQ, x, y));
  const vkt_var *src_hit = ones_at(b, bin(b, VKT_OP_EQ, src, gathered(b, y, idx)));
  const vkt_var *share = dvd(b, g, rewritten(b, VKT_WRITE_SCATTER_ADD, x_hit, idx, src_hit));
  *gx = NEED(b, 0) ? mul(b, x_hit, share) : NULL;
  *gs = NEED(b, 1) ? mul(b, src_hit, gathered(b, share, idx)) : NULL;
}

/* prod: g times the product of the others. x's zeros are taken as ones; so is src's zero where it is the only
 * one in its slot, and a slot with two zeros gives its zeros 0. (PyTorch also refuses the double backward of
 * the latter, which needs a read to the host; vkt does not check.) */
/* PyTorch's Error node: src's gradient under create_graph where a slot took more than one zero, whose own
 * gradient this formula does not give. */
static void refuse_backward(vkt_bw *b) {
  b->st = vkt_fail(VKT_ERR_RUNTIME, "scatter_reduce(): Double backward is unsupported for src when >1 zeros in src "
                   "are scattered to the same position in self");
}

static const vkt_fn refuse_fn = {"Error", refuse_backward};

/* With create_graph, gs as the output of an Error node where some slot took more than one of src's zeros (a read
 * to the host, as PyTorch's check is). */
static const vkt_var *refused_past_one_zero(vkt_bw *b, const vkt_var *zeros, const vkt_var *gs) {
  const vkt_var *many = vkt_grad_enabled() && gs ? bins(b, VKT_OP_GT, zeros, 1) : NULL;
  bool found = false;
  if (many)
    b->st = vkt_any_read(&many->t, &found);
  if (!found || b->st)
    return gs;
  vkt_var out = {0};
  vkt_tensor_share(&out.t, &gs->t);
  vkt_node *n = vkt_node_begin(&refuse_fn, 1, &gs, 1);
  vkt_node_output(n, 0, &out);
  vkt_node_decref(n);
  return keep(b, VKT_OK, &out);
}

static void prod_backward(vkt_bw *b, const vkt_var *idx, const vkt_var **gx, const vkt_var **gs) {
  const vkt_var *x = S(b, 1), *src = S(b, 2), *y = S(b, 3);
  if (NEED(b, 0)) {
    const vkt_var *x1 = ones_where(b, bins(b, VKT_OP_EQ, x, 0), x);
    *gx = dvd(b, mul(b, g, rewritten(b, VKT_WRITE_REDUCE_PROD, x1, idx, src)), x1);
  }
  if (!NEED(b, 1))
    return;
  const vkt_var *src_zero = bins(b, VKT_OP_EQ, src, 0);
  const vkt_var *zeros = gathered(b, added(b, ones_at(b, src_zero), idx), idx); /* src's zeros in each slot */
  const vkt_var *lone = bin(b, VKT_OP_LOGICAL_AND, src_zero, bins(b, VKT_OP_EQ, zeros, 1));
  const vkt_var *others =
      gathered(b, mul(b, g, rewritten(b, VKT_WRITE_REDUCE_PROD, x, idx, ones_where(b, lone, src))), idx);
  const vkt_var *plain = dvd(b, gathered(b, mul(b, g, y), idx), ones_where(b, src_zero, src));
  *gs = refused_past_one_zero(b, zeros, select(b, lone, others, plain));
}

/* saved: 0 the index (the mask for masked_scatter), 1 mean's counts; prod, amax, amin: 1 x, 2 src, 3 the
 * result. */
static void write_backward(vkt_bw *b) {
  vkt_write_kind kind = (vkt_write_kind)b->n->id;
  const vkt_var *idx = S(b, 0);
  switch (kind) {
  case VKT_WRITE_REDUCE_PROD:
  case VKT_WRITE_REDUCE_AMAX:
  case VKT_WRITE_REDUCE_AMIN: {
    const vkt_var *gx = NULL, *gs = NULL;
    (kind == VKT_WRITE_REDUCE_PROD ? prod_backward : extreme_backward)(b, idx, &gx, &gs);
    if (NEED(b, 0))
      SET(b, 0, b->n->flag ? gx : zeroed(b, VKT_WRITE_SCATTER, gx, idx));
    SET(b, 1, gs);
    break;
  }
  case VKT_WRITE_SCATTER:
    if (NEED(b, 0))
      SET(b, 0, zeroed(b, VKT_WRITE_SCATTER, g, idx));
    if (NEED(b, 1))
      SET(b, 1, gathered(b, g, idx));
    break;
  case VKT_WRITE_SCATTER_ADD:
  case VKT_WRITE_REDUCE_SUM:
  case VKT_WRITE_REDUCE_MEAN: {
    const vkt_var *gs = kind == VKT_WRITE_REDUCE_MEAN ? dvd(b, g, S(b, 1)) : g;
    if (NEED(b, 0))
      SET(b, 0, b->n->flag ? gs : zeroed(b, VKT_WRITE_SCATTER, gs, idx));
    if (NEED(b, 1))
      SET(b, 1, gathered(b, gs, idx));
    break;
  }
  case VKT_WRITE_INDEX_COPY:
  case VKT_WRITE_INDEX_ADD: {
    if (NEED(b, 0))
      SET(b, 0, kind == VKT_WRITE_INDEX_ADD ? g : zeroed(b, VKT_WRITE_INDEX_FILL, g, idx));
    const vkt_var *gs = NEED(b, 1) ? selected(b, g, idx) : NULL;
    vkt_scalar a = b->n->s[0];
    if (gs && kind == VKT_WRITE_INDEX_ADD && (a.is_float ? a.f != 1 : a.i != 1))
      gs = bins(b, VKT_OP_MUL, gs, a.is_float ? a.f : (double)a.i);
    if (NEED(b, 1))
      SET(b, 1, gs);
    break;
  }
  case VKT_WRITE_INDEX_FILL: {
    const vkt_var *gx = zeroed(b, VKT_WRITE_INDEX_FILL, g, idx);
    if (NEED(b, 0))
      SET(b, 0, gx);
    if (!NEED(b, 1) || !gx)
      break;
    /* the value's: g summed over the filled positions (each once, as PyTorch's unique index) */
    const vkt_var *at = sub(b, g, gx);
    const vkt_var *sum = at ? sum_dims(b, at, (1u << at->t.ndim) - 1, false) : NULL;
    vkt_var out = {0};
    if (sum && vkt_tensor_device(&sum->t) != IN(b, 1)->device)
      sum = keep(b, vkt_ag_cast(sum, IN(b, 1)->device, sum->t.dtype, VKT_PRESERVE_FORMAT, false, &out), &out);
    SET(b, 1, sum);
    break;
  }
  case VKT_WRITE_MASKED_SCATTER: {
    vkt_var out = {0};
    if (NEED(b, 0) && g && idx)
      SET(b, 0, keep(b, vkt_ag_masked_fill(g, &idx->t, NULL, zero, &out), &out));
    if (!NEED(b, 1) || !g || !idx)
      break;
    const vkt_tensor *m = &idx->t;
    const vkt_var *sel = keep(b, vkt_ag_index(g, 1, &m, &out), &out);
    const vkt_shape_info *si = IN(b, 1);
    int64_t numel = 1;
    for (int d = 0; d < si->ndim; d++)
      numel *= si->shape[d];
    if (sel && sel->t.shape[0] < numel) { /* source's elements past the mask's count get zeros */
      int64_t rest = numel - sel->t.shape[0];
      vkt_var z = {0};
      vkt_status st = vkt_tensor_empty(&z.t, vkt_tensor_device(&sel->t), sel->t.dtype, 1, &rest);
      if (!st)
        st = vkt_fill_(&z.t, zero);
      const vkt_var *zv = keep(b, st, &z);
      sel = zv ? keep(b, vkt_ag_cat(2, (const vkt_var *[]){sel, zv}, 0, &out), &out) : NULL;
    }
    SET(b, 1, sel ? reshape(b, sel, si->ndim, si->shape) : NULL);
    break;
  }
  }
}

static const vkt_fn write_fns[] = {
    [VKT_WRITE_SCATTER] = {"ScatterBackward0", write_backward},
    [VKT_WRITE_SCATTER_ADD] = {"ScatterAddBackward0", write_backward},
    [VKT_WRITE_REDUCE_SUM] = {"ScatterReduceBackward0", write_backward},
    [VKT_WRITE_REDUCE_MEAN] = {"ScatterReduceBackward0", write_backward},
    [VKT_WRITE_REDUCE_PROD] = {"ScatterReduceBackward0", write_backward},
    [VKT_WRITE_REDUCE_AMAX] = {"ScatterReduceBackward0", write_backward},
    [VKT_WRITE_REDUCE_AMIN] = {"ScatterReduceBackward0", write_backward},
    [VKT_WRITE_INDEX_COPY] = {"IndexCopyBackward0", write_backward},
    [VKT_WRITE_INDEX_ADD] = {"IndexAddBackward0", write_backward},
    [VKT_WRITE_INDEX_FILL] = {"IndexFillBackward1", write_backward},
    [VKT_WRITE_MASKED_SCATTER] = {"MaskedScatterBackward0", write_backward},
};
static const vkt_fn scatter_value_fn = {"ScatterBackward1", write_backward},
                    index_fill_value_fn = {"IndexFillBackward0", write_backward};

/* mean's counts: how many values each position of x averages (include_self: x's own), at least 1. */
static vkt_status mean_counts(const vkt_tensor *x, int64_t dim, const vkt_tensor *index, bool include_self,
                              vkt_tensor *out) {
  vkt_tensor ones = {0}, spread = {0}, n = {0};
  vkt_status st = vkt_tensor_empty(&n, vkt_tensor_device(x), x->dtype, x->ndim, x->shape);
  if (!st)
    st = vkt_fill_(&n, include_self ? one : zero);
  if (!st && !(st = vkt_tensor_empty(&ones, vkt_tensor_device(x), x->dtype, 0, NULL)) && !(st = vkt_fill_(&ones, one)))
    st = vkt_expand(&spread, &ones, index->ndim, index->shape);
  if (!st)
    st = vkt_scatter_(&n, dim, index, &spread, true);
  if (!st)
    st = vkt_binary(VKT_OP_MAXIMUM, (vkt_operand){.t = &n}, (vkt_operand){.s = one}, one, NULL, out);
  vkt_tensor_release(&ones);
  vkt_tensor_release(&spread);
  vkt_tensor_release(&n);
  return st;
}

vkt_status vkt_ag_write(vkt_write_kind kind, const vkt_var *x, int64_t dim, const vkt_tensor *index, const vkt_var *src,
                        vkt_scalar s, bool include_self, vkt_var *out) {
  *out = (vkt_var){0};
  vkt_status st = write_op(kind, &x->t, dim, index, src ? &src->t : NULL, s, include_self, &out->t);
  if (st || !vkt_dtypes[out->t.dtype].is_float)
    return st;
  const vkt_fn *fn = !src && kind == VKT_WRITE_SCATTER      ? &scatter_value_fn
                     : !src && kind == VKT_WRITE_INDEX_FILL ? &index_fill_value_fn
                                                            : &write_fns[kind];
  vkt_node *n = vkt_node_begin(fn, 2, (const vkt_var *[]){x, src}, 1);
  vkt_var saved = {0}, counts = {0};
  if (n && kind == VKT_WRITE_MASKED_SCATTER) /* the mask as x's shape, for the index of g */
    st = vkt_expand(&saved.t, index, x->t.ndim, x->t.shape);
  else if (n)
    vkt_tensor_share(&saved.t, index);
  if (n && !st && kind == VKT_WRITE_REDUCE_MEAN)
    st = mean_counts(&x->t, dim, index, include_self, &counts.t);
  if (n && !st) {
    n->id = (int)kind;
    n->iv[0] = dim;
    n->s[0] = s;
    n->flag = include_self;
    vkt_node_save(n, 0, &saved, false, 0);
    if (counts.t.storage)
      vkt_node_save(n, 1, &counts, false, 0);
    if (kind == VKT_WRITE_REDUCE_PROD || kind == VKT_WRITE_REDUCE_AMAX || kind == VKT_WRITE_REDUCE_AMIN) {
      vkt_node_save(n, 1, x, false, 0);
      vkt_node_save(n, 2, src, false, 0);
      vkt_node_save(n, 3, out, true, 0);
    }
    vkt_node_output(n, 0, out);
  }
  vkt_var_release(&saved);
  vkt_var_release(&counts);
  vkt_node_decref(n);
  if (st)
    vkt_var_release(out);
  return st;
}

/* ---- reads recorded as indexing ---- */

vkt_status vkt_ag_take(const vkt_var *x, const vkt_tensor *index, vkt_var *out) {
  *out = (vkt_var){0};
  if (!vkt_grad_enabled() || !vkt_requires_grad(x) || !vkt_dtypes[x->t.dtype].is_float)
    return vkt_take(&x->t, index, &out->t);
  int64_t numel = vkt_tensor_numel(&x->t);
  vkt_var flat = {0};
  vkt_status st = vkt_ag_reshape(x, 1, &numel, false, &flat);
  if (!st)
    st = vkt_ag_index(&flat, 1, &index, out);
  vkt_var_release(&flat);
  return st;
}

vkt_status vkt_ag_masked_select(const vkt_var *x, const vkt_tensor *mask, vkt_var *out) {
  *out = (vkt_var){0};
  if (!vkt_grad_enabled() || !vkt_requires_grad(x) || !vkt_dtypes[x->t.dtype].is_float)
    return vkt_masked_select(&x->t, mask, &out->t);
  int64_t shape[VKT_MAX_DIMS];
  int ndim = 0;
  vkt_var xs = {0};
  vkt_tensor ms = {0};
  vkt_status st =
      mask->dtype == VKT_BOOL ? VKT_OK : vkt_fail(VKT_ERR_RUNTIME, "masked_select: expected BoolTensor for mask");
  if (!st)
    st = vkt_broadcast_shape(2, (const vkt_tensor *[]){&x->t, mask}, &ndim, shape);
  if (!st)
    st = vkt_ag_expand(x, ndim, shape, &xs);
  if (!st)
    st = vkt_expand(&ms, mask, ndim, shape);
  const vkt_tensor *m = &ms;
  if (!st)
    st = vkt_ag_index(&xs, 1, &m, out);
  vkt_var_release(&xs);
  vkt_tensor_release(&ms);
  return st;
}
