/* shape.c (autograd): the shape and indexing family's entry points and backward formulas (shape.h). Joins
 * go back as views of the gradient, splits as a join of theirs; reorderings undo themselves; reads through
 * an index go back as an accumulating write of the gradient into zeros, and writes as the gradient with the
 * written positions zeroed (the target) and read at them (the values). Index tensors are kept on the
 * forward's device, masks as their nonzero positions, so no backward reads anything to the host. */
#include <stdlib.h>
#include <string.h>

#include "../ops/scan.h"
#include "../ops/shape.h"
#include "formula.h"
#include "shape.h"

#define g G(b, 0)

static const vkt_scalar zero = {false, 0, 0};

/* Input i's gradient := *v (made by an entry point with status st); v is released. For formulas with one
 * gradient per input, which may be more than vkt_bw holds temporaries. */
static void set_owned(vkt_bw *b, int i, vkt_status st, vkt_var *v) {
  if (st && !b->st)
    b->st = st;
  else if (!st)
    SET(b, i, v);
  vkt_var_release(v);
}

/* Whether t reaches some storage element twice (a broadcast dim). */
static bool overlaps(const vkt_tensor *t) {
  for (int d = 0; d < t->ndim; d++)
    if (t->strides[d] == 0 && t->shape[d] > 1)
      return true;
  return false;
}

/* x, copied where it is broadcast, so that the inputs' gradients (views of it) own their elements: a leaf keeps one
 * under create_graph as its .grad, which an in-place update must be able to write. */
static const vkt_var *viewable(vkt_bw *b, const vkt_var *x) {
  vkt_var out = {0};
  if (!x || !overlaps(&x->t))
    return x;
  return keep(b, vkt_ag_clone(x, VKT_CONTIGUOUS_FORMAT, &out), &out);
}

/* x narrowed (select: x selected at start) along dim, recorded as a view. */
static vkt_status part(const vkt_var *x, int dim, int64_t start, int64_t len, bool select, vkt_var *out) {
  vkt_tensor v = {0};
  *out = (vkt_var){0};
  vkt_status st = select ? vkt_select(&v, &x->t, dim, start) : vkt_slice(&v, &x->t, dim, start, start + len, 1);
  return st ? st : vkt_ag_view(x, &v, VKT_VIEW_STRIDED, NULL, select ? "SelectBackward0" : "SliceBackward0", out);
}

/* ---- cat and stack: each input's gradient is its slice of g ---- */

static void join_backward(vkt_bw *b) {
  const int64_t *sizes = b->n->extra; /* cat: each input's size along dim, -1 where skipped */
  const vkt_var *gv = viewable(b, g);
  int64_t at = 0;
  for (int i = 0; gv && i < b->n->nin; i++) {
    vkt_var out = {0};
    int64_t len = b->n->flag ? 1 : sizes[i];
    if (len >= 0 && NEED(b, i))
      set_owned(b, i, part(gv, (int)b->n->iv[0], at, len, b->n->flag, &out), &out);
    at += len < 0 ? 0 : len;
  }
}

static const vkt_fn cat_fn = {"CatBackward0", join_backward}, stack_fn = {"StackBackward0", join_backward};

static vkt_status join(int n, const vkt_var *const *xs, int64_t dim, bool stack, vkt_var *out) {
  const vkt_tensor **ts = calloc((size_t)n + 1, sizeof *ts);
  int64_t *sizes = calloc((size_t)n + 1, sizeof *sizes);
  *out = (vkt_var){0};
  vkt_status st = ts && sizes ? VKT_OK : vkt_fail(VKT_ERR_NOMEM, "out of host memory");
  for (int i = 0; !st && i < n; i++)
    ts[i] = &xs[i]->t;
  if (!st)
    st = stack ? vkt_stack(n, ts, dim, &out->t) : vkt_cat(n, ts, dim, &out->t);
  vkt_node *node =
      st || !vkt_dtypes[out->t.dtype].is_float ? NULL : vkt_node_begin(stack ? &stack_fn : &cat_fn, n, xs, 1);
  int d = 0;
  if (node && !vkt_dim_wrap(dim, out->t.ndim ? out->t.ndim : 1, &d)) {
    for (int i = 0; i < n; i++) /* cat's legacy rule: 1-D empty inputs take no part */
      sizes[i] = !stack && xs[i]->t.ndim == 1 && xs[i]->t.shape[0] == 0 && out->t.ndim != 1 ? -1
                 : stack                                                                    ? 1
                                                                                            : xs[i]->t.shape[d];
    node->iv[0] = d;
    node->flag = stack;
    node->extra = sizes;
    node->extra_free = free;
    sizes = NULL;
    vkt_node_output(node, 0, out);
  }
  vkt_node_decref(node);
  free(ts);
  free(sizes);
  return st;
}

vkt_status vkt_ag_cat(int n, const vkt_var *const *xs, int64_t dim, vkt_var *out) {
  return join(n, xs, dim, false, out);
}

vkt_status vkt_ag_stack(int n, const vkt_var *const *xs, int64_t dim, vkt_var *out) {
  return join(n, xs, dim, true, out);
}

/* ---- split, split_with_sizes, chunk, unbind: one node, each output a view; g is their join ---- */

static void split_backward(vkt_bw *b) {
  int n = b->n->nout;
  const vkt_var **gs = malloc(sizeof *gs * (size_t)(n + 1));
  vkt_var out = {0};
  if (!gs) {
    b->st = vkt_fail(VKT_ERR_NOMEM, "out of host memory");
    return;
  }
  for (int k = 0; k < n; k++)
    gs[k] = G(b, k);
  if (!b->st)
    set_owned(b, 0, join(n, gs, b->n->iv[0], b->n->flag, &out), &out);
  free(gs);
}

static const vkt_fn split_fns[] = {
    {"SplitBackward0", split_backward},
    {"SplitWithSizesBackward0", split_backward},
    {"UnbindBackward0", split_backward},
};

vkt_status vkt_ag_split(const vkt_var *x, int64_t dim, int64_t n, const int64_t *sizes, bool unbind, const char *name,
                        vkt_var *outs) {
  vkt_tensor *ts = calloc((size_t)n + 1, sizeof *ts);
  int d = 0;
  vkt_status st = ts ? vkt_dim_wrap(dim, x->t.ndim ? x->t.ndim : 1, &d) : vkt_fail(VKT_ERR_NOMEM, "out of host memory");
  if (!st && !unbind)
    st = vkt_split_with_sizes(&x->t, dim, n, sizes, ts);
  for (int64_t k = 0; !st && unbind && k < n; k++)
    st = vkt_select(&ts[k], &x->t, d, k);
  int row = unbind ? 2 : !strcmp(name, split_fns[1].name);
  vkt_node *node = st ? NULL : vkt_node_begin(&split_fns[row], 1, &x, (int)n);
  if (node) {
    node->iv[0] = d;
    node->flag = unbind;
  }
  for (int64_t k = 0; ts && k < n; k++) {
    outs[k] = (vkt_var){ts[k], NULL};
    if (st)
      vkt_var_release(&outs[k]);
    vkt_node_output(node, (int)k, &outs[k]);
    if (!st && !node)
      vkt_view_unrecorded(&outs[k], x, true);
    else if (outs[k].ag) {
      outs[k].ag->is_view = outs[k].ag->multi_view = true;
      vkt_view_track(&outs[k], x);
    }
  }
  vkt_node_decref(node);
  free(ts);
  return st;
}

/* ---- flip, roll, tril, triu: the gradient goes through the same reordering, reversed ---- */

static void flip_backward(vkt_bw *b) {
  vkt_var out = {0};
  if (g)
    set_owned(b, 0, vkt_ag_flip(g, b->n->dims, &out), &out);
}

static const vkt_fn flip_fn = {"FlipBackward0", flip_backward};

/* Records fn over x for out (when anything records), returning the node (the caller fills it and drops it). */
static vkt_node *record1(const vkt_fn *fn, const vkt_var *x, vkt_var *out) {
  if (!vkt_dtypes[out->t.dtype].is_float)
    return NULL;
  vkt_node *n = vkt_node_begin(fn, 1, &x, 1);
  vkt_node_output(n, 0, out);
  return n;
}

vkt_status vkt_ag_flip(const vkt_var *x, uint32_t dims, vkt_var *out) {
  *out = (vkt_var){0};
  vkt_status st = vkt_flip(&x->t, dims, &out->t);
  vkt_node *n = st ? NULL : record1(&flip_fn, x, out);
  if (n)
    n->dims = dims;
  vkt_node_decref(n);
  return st;
}

typedef struct {
  int n, ndims;
  int64_t shifts[VKT_MAX_DIMS], dims[VKT_MAX_DIMS];
} roll_args;

static void roll_backward(vkt_bw *b) {
  roll_args *r = b->n->extra;
  int64_t back[VKT_MAX_DIMS];
  for (int i = 0; i < r->n; i++)
    back[i] = -r->shifts[i];
  vkt_var out = {0};
  if (g)
    set_owned(b, 0, vkt_ag_roll(g, r->n, back, r->ndims, r->dims, &out), &out);
}

static const vkt_fn roll_fn = {"RollBackward0", roll_backward};

vkt_status vkt_ag_roll(const vkt_var *x, int n, const int64_t *shifts, int ndims, const int64_t *dims, vkt_var *out) {
  *out = (vkt_var){0};
  vkt_status st = vkt_roll(&x->t, n, shifts, ndims, dims, &out->t);
  vkt_node *node = st ? NULL : record1(&roll_fn, x, out);
  roll_args *r = node ? calloc(1, sizeof *r) : NULL;
  if (r) {
    r->n = n, r->ndims = ndims;
    memcpy(r->shifts, shifts, sizeof *shifts * (size_t)n);
    memcpy(r->dims, dims, sizeof *dims * (size_t)ndims);
    node->extra = r;
    node->extra_free = free;
  }
  vkt_node_decref(node);
  return st;
}

static void tri_backward(vkt_bw *b) {
  vkt_var out = {0};
  if (g)
    set_owned(b, 0, vkt_ag_tri(g, b->n->flag, b->n->iv[0], &out), &out);
}

static const vkt_fn tril_fn = {"TrilBackward0", tri_backward}, triu_fn = {"TriuBackward0", tri_backward};

vkt_status vkt_ag_tri(const vkt_var *x, bool upper, int64_t diagonal, vkt_var *out) {
  *out = (vkt_var){0};
  vkt_status st = vkt_tri(&x->t, upper, diagonal, &out->t);
  vkt_node *n = st ? NULL : record1(upper ? &triu_fn : &tril_fn, x, out);
  if (n) {
    n->flag = upper;
    n->iv[0] = diagonal;
  }
  vkt_node_decref(n);
  return st;
}

/* ---- im2col and col2im: each other's adjoint ---- */

typedef struct {
  vkt_window w;
  int nd;          /* the image's spatial dims */
  int64_t size[3]; /* ... and their sizes */
} window_extra;

static vkt_status record_window(const vkt_fn *fn, const vkt_var *x, vkt_var *out, const vkt_window *w, int nd,
                                const int64_t *size) {
  vkt_node *n = record1(fn, x, out);
  window_extra *e = n ? malloc(sizeof *e) : NULL;
  if (e) {
    e->w = *w, e->nd = nd;
    memcpy(e->size, size, sizeof *size * (size_t)nd);
    n->extra = e;
    n->extra_free = free;
  }
  vkt_node_decref(n);
  return n && !e ? vkt_fail(VKT_ERR_NOMEM, "out of host memory") : VKT_OK;
}

static void im2col_backward(vkt_bw *b) {
  const window_extra *e = b->n->extra;
  vkt_var out = {0};
  if (g)
    set_owned(b, 0, vkt_ag_col2im(g, &e->w, e->nd, e->size, &out), &out);
}

static void col2im_backward(vkt_bw *b) {
  const window_extra *e = b->n->extra;
  vkt_var out = {0};
  if (g)
    set_owned(b, 0, vkt_ag_im2col(g, &e->w, &out), &out);
}

static const vkt_fn im2col_fn = {"Im2ColBackward0", im2col_backward}, col2im_fn = {"Col2ImBackward0", col2im_backward};

vkt_status vkt_ag_im2col(const vkt_var *x, const vkt_window *w, vkt_var *out) {
  *out = (vkt_var){0};
  vkt_status st = vkt_im2col(&x->t, w, &out->t);
  return st ? st : record_window(&im2col_fn, x, out, w, x->t.ndim - 2, x->t.shape + 2);
}

vkt_status vkt_ag_col2im(const vkt_var *cols, const vkt_window *w, int nd, const int64_t *size, vkt_var *out) {
  *out = (vkt_var){0};
  vkt_status st = vkt_col2im(&cols->t, w, nd, size, &out->t);
  return st ? st : record_window(&col2im_fn, cols, out, w, nd, size);
}

/* ---- repeat and tile: each repeated dim of g is split into (repeats, size) and summed over the repeats ---- */

static void repeat_backward(vkt_bw *b) {
  int nd = (int)b->n->iv[0];
  const int64_t *reps = b->n->iv + 1;
  const vkt_var *cur = g;
  for (int d = 0; cur && d < nd; d++) {
    if (reps[d] == 1)
      continue;
    int64_t shape[VKT_MAX_DIMS + 1];
    memcpy(shape, cur->t.shape, sizeof *shape * (size_t)d);
    shape[d] = reps[d];
    int lead = nd - IN(b, 0)->ndim; /* x's dims, padded with leading 1s */
    shape[d + 1] = d < lead ? 1 : IN(b, 0)->shape[d - lead];
    memcpy(shape + d + 2, cur->t.shape + d + 1, sizeof *shape * (size_t)(nd - d - 1));
    cur = sum_dims(b, reshape(b, cur, nd + 1, shape), 1u << d, false);
  }
  SET(b, 0, reshape(b, cur, IN(b, 0)->ndim, IN(b, 0)->shape));
}

static const vkt_fn repeat_fn = {"RepeatBackward0", repeat_backward};

vkt_status vkt_ag_repeat(const vkt_var *x, int n, const int64_t *reps, bool tile, vkt_var *out) {
  *out = (vkt_var){0};
  vkt_status st = tile ? vkt_tile(&out->t, &x->t, n, reps) : vkt_repeat(&out->t, &x->t, n, reps);
  if (!st && out->t.ndim >= VKT_MAX_DIMS && vkt_requires_grad(x) && vkt_grad_enabled()) {
    vkt_var_release(out);
    return vkt_fail(VKT_ERR_RUNTIME, "vkt: the backward of repeat needs fewer than %d dims", VKT_MAX_DIMS);
  }
  vkt_node *node = st ? NULL : record1(&repeat_fn, x, out);
  if (node) {
    int nd = out->t.ndim; /* the reps as applied: leading 1s where tile's are short */
    node->iv[0] = nd;
    for (int d = 0; d < nd; d++)
      node->iv[1 + d] = d < nd - n ? 1 : reps[d - (nd - n)];
  }
  vkt_node_decref(node);
  return st;
}

/* ---- movedim: a permutation, read off a probe whose strides are its dims' numbers ---- */

vkt_status vkt_ag_movedim(const vkt_var *x, int n, const int64_t *src, const int64_t *dst, vkt_var *out) {
  vkt_tensor probe = x->t, moved = {0};
  int64_t perm[VKT_MAX_DIMS];
  *out = (vkt_var){0};
  for (int d = 0; d < probe.ndim; d++)
    probe.strides[d] = d;
  vkt_status st = vkt_movedim(&moved, &probe, n, src, dst);
  if (st)
    return st;
  memcpy(perm, moved.strides, sizeof *perm * (size_t)moved.ndim);
  vkt_tensor_release(&moved);
  return vkt_ag_view(x, NULL, VKT_VIEW_PERMUTE, perm, "PermuteBackward0", out);
}

/* ---- index_select and take_along_dim: gathers, whose backward adds g into zeros at the index ---- */

static void index_select_backward(vkt_bw *b) {
  const vkt_var *idx = S(b, 0);
  vkt_var out = {0};
  if (g && idx)
    set_owned(b, 0, vkt_ag_scatter_add_zeros(g, b->n->iv[0], &idx->t, IN(b, 0)->ndim, IN(b, 0)->shape, &out), &out);
}

static const vkt_fn index_select_fn = {"IndexSelectBackward0", index_select_backward};

/* index (0-d or 1-D) on x's device, seen with out's shape: 1 off dim, stride 0 there. */
static vkt_status spread_index(const vkt_tensor *index, const vkt_tensor *x, const vkt_tensor *out, int d,
                               vkt_tensor *spread) {
  vkt_tensor moved = {0}, col = {0};
  int64_t shape[VKT_MAX_DIMS];
  for (int i = 0; i < out->ndim; i++)
    shape[i] = i == d ? out->shape[d] : 1;
  vkt_status st = vkt_to(&moved, index, vkt_tensor_device(x), index->dtype);
  if (!st && !(st = vkt_view(&col, &moved, out->ndim, shape)))
    st = vkt_expand(spread, &col, out->ndim, out->shape);
  vkt_tensor_release(&moved);
  vkt_tensor_release(&col);
  return st;
}

vkt_status vkt_ag_index_select(const vkt_var *x, int64_t dim, const vkt_tensor *index, vkt_var *out) {
  *out = (vkt_var){0};
  vkt_status st = vkt_index_select(&x->t, dim, index, &out->t);
  int d = 0;
  if (st || x->t.ndim == 0 || vkt_dim_wrap(dim, x->t.ndim, &d))
    return st;
  vkt_node *n = record1(&index_select_fn, x, out);
  vkt_var idx = {0};
  if (n && !(st = spread_index(index, &x->t, &out->t, d, &idx.t))) {
    n->iv[0] = d;
    vkt_node_save(n, 0, &idx, false, 0);
  }
  vkt_var_release(&idx);
  vkt_node_decref(n);
  if (st)
    vkt_var_release(out);
  return st;
}

vkt_status vkt_ag_take_along_dim(const vkt_var *x, const vkt_tensor *index, bool flat, int64_t dim, vkt_var *out) {
  *out = (vkt_var){0};
  if (!vkt_grad_enabled() || !vkt_requires_grad(x) || !vkt_dtypes[x->t.dtype].is_float ||
      (!flat && x->t.ndim != index->ndim) || (index->dtype != VKT_INT64 && index->dtype != VKT_INT32))
    return vkt_take_along_dim(&x->t, index, flat, dim, &out->t); /* nothing to record, or its error */
  /* Recorded as PyTorch composes it: a gather from x flattened, or from x broadcast against the index. */
  vkt_var xs = {0};
  vkt_tensor is = {0}, ic = {0};
  int64_t shape[VKT_MAX_DIMS], n = vkt_tensor_numel(&x->t), k = vkt_tensor_numel(index);
  int ndim = 0, d = 0;
  vkt_status st = vkt_same_device(2, (const vkt_tensor *[]){&x->t, index}, NULL);
  if (!st && flat) {
    if (!(st = vkt_ag_reshape(x, 1, &n, false, &xs)) && !(st = vkt_contiguous(&ic, index)))
      st = vkt_view(&is, &ic, 1, &k);
  } else if (!st && !(st = vkt_dim_wrap(dim, x->t.ndim, &d))) {
    vkt_tensor a = x->t, c = *index;
    a.shape[d] = c.shape[d] = 1;
    if (!(st = vkt_broadcast_shape(2, (const vkt_tensor *[]){&a, &c}, &ndim, shape))) {
      shape[d] = x->t.shape[d];
      if (!(st = vkt_ag_expand(x, ndim, shape, &xs))) {
        shape[d] = index->shape[d];
        st = vkt_expand(&is, index, ndim, shape);
      }
    }
  }
  if (!st)
    st = vkt_ag_gather(&xs, flat ? 0 : d, &is, out);
  vkt_var_release(&xs);
  vkt_tensor_release(&is);
  vkt_tensor_release(&ic);
  return st;
}

/* ---- masked_fill: g with the filled positions zeroed; the value gets g summed over them ---- */

static void masked_fill_backward(vkt_bw *b) {
  const vkt_var *mask = S(b, 0);
  if (NEED(b, 0))
    SET(b, 0, zero_where(b, mask, g));
  if (!NEED(b, 1) || !g)
    return;
  const vkt_var *kept = keep_where(b, mask, g);
  const vkt_var *sum = kept ? sum_dims(b, kept, (1u << kept->t.ndim) - 1, false) : NULL;
  vkt_var out = {0};
  if (sum && vkt_tensor_device(&sum->t) != IN(b, 1)->device) /* a value on another device (the cpu's 0-d) */
    set_owned(b, 1, vkt_ag_cast(sum, IN(b, 1)->device, sum->t.dtype, VKT_PRESERVE_FORMAT, false, &out), &out);
  else
    SET(b, 1, sum);
}

static const vkt_fn masked_fill_fn = {"MaskedFillBackward0", masked_fill_backward},
                    masked_fill_tensor_fn = {"MaskedFillBackward1", masked_fill_backward};

vkt_status vkt_ag_masked_fill(const vkt_var *x, const vkt_tensor *mask, const vkt_var *value, vkt_scalar v,
                              vkt_var *out) {
  *out = (vkt_var){0};
  vkt_status st = vkt_masked_fill(&x->t, mask, value ? &value->t : NULL, v, false, &out->t);
  if (st || !vkt_dtypes[out->t.dtype].is_float)
    return st;
  vkt_node *n = vkt_node_begin(value ? &masked_fill_tensor_fn : &masked_fill_fn, 2, (const vkt_var *[]){x, value}, 1);
  vkt_var m = {0};
  if (n) {
    vkt_tensor_share(&m.t, mask);
    vkt_node_save(n, 0, &m, false, 0);
    vkt_node_output(n, 0, out);
  }
  vkt_var_release(&m);
  vkt_node_decref(n);
  return st;
}

/* ---- advanced indexing ---- */

/* An index list as the backward keeps it: int tensors on the forward's device (a mask as its nonzero
 * positions, one per dim it covers); idx[k].storage NULL for a whole dim. */
typedef struct {
  int n;
  vkt_tensor idx[VKT_MAX_DIMS];
  /* index_put's key, for the values' gradient: the view's geometry in a row-major x, and the values' dims */
  int ndim, vndim;
  int64_t shape[VKT_MAX_DIMS], strides[VKT_MAX_DIMS], offset;
} index_list;

static void index_list_free(void *p) {
  index_list *l = p;
  for (int k = 0; l && k < l->n; k++)
    vkt_tensor_release(&l->idx[k]);
  free(l);
}

static int index_ptrs(const index_list *l, const vkt_tensor **p) {
  for (int k = 0; k < l->n; k++)
    p[k] = l->idx[k].storage ? &l->idx[k] : NULL;
  return l->n;
}

/* A mask's nonzero positions, one int64 index per dim it covers, appended to l on device. */
static vkt_status mask_indices(const vkt_tensor *mask, int device, index_list *l) {
  vkt_tensor nz = {0}, moved = {0};
  vkt_status st = vkt_nonzero(mask, &nz);
  if (!st)
    st = vkt_to(&moved, &nz, device, VKT_INT64);
  for (int j = 0; !st && j < mask->ndim; j++)
    if (l->n == VKT_MAX_DIMS)
      st = vkt_fail(VKT_ERR_INDEX, "too many indices");
    else
      st = vkt_select(&l->idx[l->n++], &moved, 1, j);
  vkt_tensor_release(&nz);
  vkt_tensor_release(&moved);
  return st;
}

static vkt_status index_list_new(const vkt_tensor *x, int n, const vkt_tensor *const *indices, index_list **out) {
  index_list *l = calloc(1, sizeof *l);
  vkt_status st = l ? VKT_OK : vkt_fail(VKT_ERR_NOMEM, "out of host memory");
  int device = vkt_tensor_device(x);
  for (int i = 0, dim = 0; !st && i < n; i++) {
    const vkt_tensor *t = indices[i];
    if (t && (t->dtype == VKT_BOOL || t->dtype == VKT_UINT8) && t->ndim > 0) {
      if (!(st = vkt_check_mask(x, t, dim)))
        st = mask_indices(t, device, l);
      dim += t->ndim;
    } else if (l->n == VKT_MAX_DIMS) {
      st = vkt_fail(VKT_ERR_INDEX, "too many indices for tensor of dimension %d", x->ndim);
    } else {
      if (t)
        st = vkt_to(&l->idx[l->n], t, device, t->dtype);
      l->n++, dim++;
    }
  }
  if (st)
    index_list_free(l), l = NULL;
  *out = l;
  return st;
}

static vkt_status index_put_zeros(const vkt_var *src, index_list *l, const vkt_shape_info *x, vkt_var *out);

static void index_backward(vkt_bw *b) {
  vkt_var out = {0};
  if (g)
    set_owned(b, 0, index_put_zeros(g, b->n->extra, IN(b, 0), &out), &out);
}

static void index_put_zeros_backward(vkt_bw *b) {
  const vkt_tensor *p[VKT_MAX_DIMS];
  vkt_var out = {0};
  if (g)
    set_owned(b, 0, vkt_ag_index(g, index_ptrs(b->n->extra, p), p, &out), &out);
}

static const vkt_fn index_fn = {"IndexBackward0", index_backward},
                    index_put_zeros_fn = {"IndexPutBackward0", index_put_zeros_backward};

static index_list *index_list_ref(index_list *l) { /* a copy sharing the index tensors */
  index_list *c = malloc(sizeof *c);
  if (c) {
    *c = *l;
    for (int k = 0; k < l->n; k++)
      if (l->idx[k].storage)
        vkt_tensor_share(&c->idx[k], &l->idx[k]);
  }
  return c;
}

/* zeros of x's shape with src added at l's positions (repeated ones add up): index's adjoint. */
static vkt_status index_put_zeros(const vkt_var *src, index_list *l, const vkt_shape_info *x, vkt_var *out) {
  const vkt_tensor *p[VKT_MAX_DIMS];
  *out = (vkt_var){0};
  vkt_status st = vkt_tensor_empty(&out->t, vkt_tensor_device(&src->t), src->t.dtype, x->ndim, x->shape);
  if (!st)
    st = vkt_fill_(&out->t, zero);
  if (!st)
    st = vkt_index_put_trusted(&out->t, index_ptrs(l, p), p, &src->t, true);
  if (st) {
    vkt_var_release(out);
    return st;
  }
  vkt_node *n = vkt_node_begin(&index_put_zeros_fn, 1, &src, 1);
  if (n && (n->extra = index_list_ref(l))) {
    n->extra_free = index_list_free;
    vkt_node_output(n, 0, out);
  }
  vkt_node_decref(n);
  return VKT_OK;
}

vkt_status vkt_ag_index(const vkt_var *x, int n, const vkt_tensor *const *indices, vkt_var *out) {
  *out = (vkt_var){0};
  if (!vkt_grad_enabled() || !vkt_requires_grad(x) || !vkt_dtypes[x->t.dtype].is_float)
    return vkt_index(&x->t, n, indices, &out->t);
  index_list *l = NULL;
  const vkt_tensor *p[VKT_MAX_DIMS];
  vkt_status st = index_list_new(&x->t, n, indices, &l);
  if (!st)
    st = vkt_index(&x->t, index_ptrs(l, p), p, &out->t);
  vkt_node *node = st ? NULL : vkt_node_begin(&index_fn, 1, &x, 1);
  if (node) {
    node->extra = l;
    node->extra_free = index_list_free;
    l = NULL;
    vkt_node_output(node, 0, out);
  }
  vkt_node_decref(node);
  index_list_free(l);
  return st;
}

/* ---- x[key] = values and index_put: g with the written positions zeroed, and g read at them ---- */

static void index_put_backward(vkt_bw *b) {
  index_list *l = b->n->extra;
  if (NEED(b, 0))
    SET(b, 0, b->n->flag ? g : zero_where(b, S(b, 0), g));
  if (!NEED(b, 1) || !g)
    return;
  const vkt_var *gc = g;
  vkt_var c = {0}, at = {0}, read = {0};
  if (!vkt_tensor_is_contiguous(&g->t))
    gc = keep(b, vkt_ag_clone(g, VKT_CONTIGUOUS_FORMAT, &c), &c);
  vkt_tensor v = {0};
  const vkt_tensor *p[VKT_MAX_DIMS];
  vkt_status st = gc ? vkt_as_strided(&v, &gc->t, l->ndim, l->shape, l->strides, gc->t.offset + l->offset) : b->st;
  if (!st)
    st = vkt_ag_view(gc, &v, VKT_VIEW_STRIDED, NULL, "AsStridedBackward0", &at);
  if (!st)
    st = vkt_ag_index(&at, index_ptrs(l, p), p, &read);
  vkt_var_release(&at);
  const vkt_var *gv = keep(b, st, &read);
  if (gv && l->vndim > gv->t.ndim) { /* values with leading 1s beyond the result's dims */
    int64_t shape[VKT_MAX_DIMS];
    int lead = l->vndim - gv->t.ndim;
    for (int d = 0; d < l->vndim; d++)
      shape[d] = d < lead ? 1 : gv->t.shape[d - lead];
    gv = reshape(b, gv, l->vndim, shape);
  }
  SET(b, 1, gv);
}

/* Where values land: a bool tensor of x's shape, true at the written positions. */
static vkt_status written(const vkt_tensor *x, const vkt_tensor *view, index_list *l, vkt_tensor *mask) {
  vkt_tensor at = {0}, yes = {0};
  const vkt_tensor *p[VKT_MAX_DIMS];
  vkt_status st = vkt_tensor_empty(mask, vkt_tensor_device(x), VKT_BOOL, x->ndim, x->shape);
  if (!st)
    st = vkt_fill_(mask, zero);
  if (!st)
    st = vkt_as_strided(&at, mask, view->ndim, view->shape, view->strides, view->offset);
  if (!st && !(st = vkt_tensor_empty(&yes, vkt_tensor_device(x), VKT_BOOL, 0, NULL)) &&
      !(st = vkt_fill_(&yes, (vkt_scalar){false, 0, 1})))
    st = vkt_index_put_trusted(&at, index_ptrs(l, p), p, &yes, false);
  vkt_tensor_release(&at);
  vkt_tensor_release(&yes);
  return st;
}

static const vkt_fn index_put_fn = {"IndexPutBackward0", index_put_backward},
                    copy_slices_fn = {"CopySlices", index_put_backward},
                    copy_fn = {"CopyBackwards", index_put_backward};

vkt_status vkt_ag_index_put(const vkt_var *x, const vkt_tensor *view, int n, const vkt_tensor *const *indices,
                            const vkt_var *values, bool accumulate, bool slices, vkt_var *out) {
  index_list *l = NULL;
  const vkt_tensor *p[VKT_MAX_DIMS];
  int64_t strides[VKT_MAX_DIMS];
  *out = (vkt_var){0};
  vkt_status st = index_list_new(&x->t, n, indices, &l);
  if (!st)
    st = vkt_index_put_(view, index_ptrs(l, p), p, &values->t, accumulate);
  for (int64_t d = x->t.ndim - 1, s = 1; d >= 0; s *= x->t.shape[d], d--)
    strides[d] = s;
  if (!st)
    st = vkt_as_strided(&out->t, view, x->t.ndim, x->t.shape, strides, 0);
  /* basic items that keep the whole of x (copy_, t[...] = v, t[:] = v) are a copy to PyTorch */
  bool whole = slices && !n && view->ndim == x->t.ndim &&
               !memcmp(view->shape, x->t.shape, (size_t)x->t.ndim * sizeof *view->shape);
  const vkt_fn *fn = whole ? &copy_fn : slices ? &copy_slices_fn : &index_put_fn;
  vkt_node *node =
      st || !vkt_dtypes[x->t.dtype].is_float ? NULL : vkt_node_begin(fn, 2, (const vkt_var *[]){x, values}, 1);
  vkt_var mask = {0};
  if (node && !accumulate && node->next[0].node && (st = written(&x->t, view, l, &mask.t)))
    vkt_var_release(out);
  if (node && !st) {
    l->ndim = view->ndim, l->vndim = values->t.ndim, l->offset = view->offset;
    memcpy(l->shape, view->shape, sizeof l->shape);
    memcpy(l->strides, view->strides, sizeof l->strides);
    if (mask.t.storage)
      vkt_node_save(node, 0, &mask, false, 0);
    node->flag = accumulate;
    node->extra = l;
    node->extra_free = index_list_free;
    l = NULL;
    vkt_node_output(node, 0, out);
  }
  vkt_var_release(&mask);
  vkt_node_decref(node);
  index_list_free(l);
  return st;
}
