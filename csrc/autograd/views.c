/* views.c (autograd): views, their in-place forms (t_(), squeeze_(), resize_()), gather and their backward
 * formulas. A view's backward is the inverse view where one exists (reshape, permute), a sum (expand), else the
 * gradient written into zeros through the same geometry (slices, select, diagonal). */
#include <stdlib.h>
#include <string.h>

#include "../ops/shape.h"
#include "formula.h"

#define g G(b, 0)

/* The geometry of a strided view, relative to its base's storage. */
typedef struct {
  int ndim, vndim;
  int64_t strides[VKT_MAX_DIMS], offset;   /* the base x */
  int64_t vstrides[VKT_MAX_DIMS], voffset; /* the view */
  int64_t lo, hi;                          /* storage span the base and the view cover */
} geometry;

static void reshape_backward(vkt_bw *b) { SET(b, 0, reshape(b, g, IN(b, 0)->ndim, IN(b, 0)->shape)); }

static void permute_backward(vkt_bw *b) {
  int64_t inverse[VKT_MAX_DIMS];
  for (int d = 0; d < IN(b, 0)->ndim; d++)
    inverse[b->n->iv[d]] = d;
  vkt_var out = {0};
  if (g)
    SET(b, 0, keep(b, vkt_ag_view(g, NULL, VKT_VIEW_PERMUTE, inverse, "PermuteBackward0", &out), &out));
}

static void expand_backward(vkt_bw *b) { SET(b, 0, sum_to(b, g, IN(b, 0)->ndim, IN(b, 0)->shape)); }

/* gx = zeros in x's geometry, with g written through the view's. */
static vkt_status scatter_view(const vkt_var *gv, const geometry *geo, const vkt_shape_info *x, vkt_var *out);
/* The view's geometry applied to gx (any layout of x's shape): the adjoint of scatter_view. */
static vkt_status gather_view(const vkt_var *gx, const geometry *geo, const vkt_shape_info *view, vkt_var *out);

static const vkt_fn view_scatter_fn, view_gather_fn;

static void strided_backward(vkt_bw *b) {
  vkt_var out = {0};
  if (g)
    SET(b, 0, keep(b, scatter_view(g, b->n->extra, IN(b, 0), &out), &out));
}

static void view_scatter_backward(vkt_bw *b) { /* gradient of scatter_view: gather_view */
  vkt_var out = {0};
  if (g)
    SET(b, 0, keep(b, gather_view(g, b->n->extra, IN(b, 0), &out), &out));
}

static void view_gather_backward(vkt_bw *b) {
  vkt_var out = {0};
  if (g)
    SET(b, 0, keep(b, scatter_view(g, b->n->extra, IN(b, 0), &out), &out));
}

static const vkt_fn view_scatter_fn = {"AsStridedScatterBackward0", view_scatter_backward};
static const vkt_fn view_gather_fn = {"AsStridedBackward0", view_gather_backward};

static geometry *geometry_copy(const geometry *geo) {
  geometry *c = malloc(sizeof *c);
  if (c)
    *c = *geo;
  return c;
}

static void record_geometry(const vkt_fn *fn, const vkt_var *x, const geometry *geo, vkt_var *out) {
  vkt_node *n = vkt_node_begin(fn, 1, &x, 1);
  if (n && (n->extra = geometry_copy(geo))) {
    n->extra_free = free;
    vkt_node_output(n, 0, out);
  }
  vkt_node_decref(n);
}

/* Whether two elements of a view can share a storage element: sorted by stride, each dim's stride must
 * pass the extent of the smaller dims (a sufficient test; a broadcast dim overlaps). */
static bool view_overlaps(int ndim, const int64_t *shape, const int64_t *strides) {
  int order[VKT_MAX_DIMS], n = 0;
  for (int d = 0; d < ndim; d++) {
    if (shape[d] == 0)
      return false;
    if (shape[d] > 1)
      order[n++] = d;
  }
  for (int i = 1; i < n; i++)
    for (int j = i; j > 0 && llabs(strides[order[j]]) < llabs(strides[order[j - 1]]); j--) {
      int t = order[j];
      order[j] = order[j - 1];
      order[j - 1] = t;
    }
  int64_t extent = 0; /* elements: the largest offset the smaller dims reach */
  for (int i = 0; i < n; i++) {
    int64_t stride = llabs(strides[order[i]]);
    if (stride <= extent)
      return true;
    extent += (shape[order[i]] - 1) * stride;
  }
  return false;
}

/* span[offset + position of each element of vals, laid out by strides] += vals, for positions that repeat (a view
 * or a base that reaches a storage element twice): computed on the host (int64, vals' shape) and summed by
 * index_put_'s accumulate. offset counts from the span's start. */
static vkt_status span_add(const vkt_tensor *span, const vkt_tensor *vals, const int64_t *strides, int64_t offset) {
  vkt_tensor host = {0}, pos = {0};
  vkt_status st = vkt_tensor_empty(&host, VKT_CPU, VKT_INT64, vals->ndim, vals->shape);
  if (!st) {
    int64_t *p = (int64_t *)vkt_tensor_host(&host), n = vkt_tensor_numel(&host), index[VKT_MAX_DIMS] = {0};
    for (int64_t i = 0; i < n; i++) {
      p[i] = offset;
      for (int d = 0; d < vals->ndim; d++)
        p[i] += index[d] * strides[d];
      for (int d = vals->ndim - 1; d >= 0 && ++index[d] == vals->shape[d]; d--)
        index[d] = 0;
    }
    st = vkt_to(&pos, &host, vkt_tensor_device(span), VKT_INT64);
  }
  if (!st)
    st = vkt_index_put_trusted(span, 1, (const vkt_tensor *[]){&pos}, vals, true);
  vkt_tensor_release(&host);
  vkt_tensor_release(&pos);
  return st;
}

/* Where the base x reaches a storage element k times (an expanded tensor), each of those k elements takes 1/k of
 * that element's gradient, as PyTorch's as_strided backward shares it: the views of x are views of its storage,
 * and its own backward (expand's sum) adds the k shares up again. The share is one number (*share) where every
 * element is reached alike (x broadcast along some dims and otherwise apart), else a tensor of x's shape (*out,
 * counted on the host); *share is 1 where x reaches each element once. */
static vkt_status alias_share(const vkt_shape_info *x, const geometry *geo, vkt_tensor *out, double *share) {
  int64_t shape[VKT_MAX_DIMS] = {0}, strides[VKT_MAX_DIMS] = {0}, copies = 1;
  int n = 0;
  *share = 1;
  if (!view_overlaps(x->ndim, x->shape, geo->strides))
    return VKT_OK;
  for (int d = 0; d < x->ndim; d++)
    if (geo->strides[d] == 0)
      copies *= x->shape[d];
    else
      shape[n] = x->shape[d], strides[n++] = geo->strides[d];
  if (!view_overlaps(n, shape, strides)) {
    *share = 1.0 / (double)copies;
    return VKT_OK;
  }
  vkt_tensor host = {0};
  int64_t numel = 1, span = geo->hi - geo->lo, index[VKT_MAX_DIMS] = {0};
  for (int d = 0; d < x->ndim; d++)
    numel *= x->shape[d];
  int64_t *at = malloc(sizeof *at * (size_t)(numel + 1));
  int32_t *count = calloc((size_t)span + 1, sizeof *count);
  vkt_status st = at && count ? vkt_tensor_empty(&host, VKT_CPU, VKT_FLOAT64, x->ndim, x->shape)
                              : vkt_fail(VKT_ERR_NOMEM, "out of host memory");
  for (int64_t i = 0; !st && i < numel; i++) {
    at[i] = geo->offset - geo->lo;
    for (int d = 0; d < x->ndim; d++)
      at[i] += index[d] * geo->strides[d];
    count[at[i]]++;
    for (int d = x->ndim - 1; d >= 0 && ++index[d] == x->shape[d]; d--)
      index[d] = 0;
  }
  double *h = st ? NULL : (double *)vkt_tensor_host(&host);
  for (int64_t i = 0; h && i < numel; i++)
    h[i] = 1.0 / count[at[i]];
  if (!st)
    st = vkt_to(out, &host, x->device, x->dtype);
  free(at);
  free(count);
  vkt_tensor_release(&host);
  return st;
}

/* t times alias_share's share (t stolen into out; the same tensor where the share is 1). */
static vkt_status shared_out(vkt_tensor *t, const vkt_shape_info *x, const geometry *geo, vkt_tensor *out) {
  vkt_tensor by = {0};
  double share;
  vkt_status st = alias_share(x, geo, &by, &share);
  if (!st && (by.storage || share != 1)) {
    vkt_operand f = by.storage ? (vkt_operand){.t = &by} : (vkt_operand){.s = {true, share, 0}};
    st = vkt_binary(VKT_OP_MUL, (vkt_operand){.t = t}, f, (vkt_scalar){false, 0, 1}, NULL, out);
    vkt_tensor_release(t);
  } else if (!st) {
    *out = *t;
    *t = (vkt_tensor){0};
  }
  vkt_tensor_release(&by);
  return st;
}

static vkt_status scatter_view(const vkt_var *gv, const geometry *geo, const vkt_shape_info *x, vkt_var *out) {
  vkt_tensor span = {0}, zx = {0}, zv = {0};
  *out = (vkt_var){0};
  vkt_status st = vkt_tensor_empty(&span, vkt_tensor_device(&gv->t), gv->t.dtype, 1, (int64_t[]){geo->hi - geo->lo});
  if (!st)
    st = vkt_fill_(&span, (vkt_scalar){false, 0, 0});
  if (!st)
    st = vkt_as_strided(&zx, &span, x->ndim, x->shape, geo->strides, geo->offset - geo->lo);
  if (!st && view_overlaps(gv->t.ndim, gv->t.shape, geo->vstrides))
    st = span_add(&span, &gv->t, geo->vstrides, geo->voffset - geo->lo);
  else if (!st)
    st = vkt_as_strided(&zv, &span, gv->t.ndim, gv->t.shape, geo->vstrides, geo->voffset - geo->lo);
  if (!st && zv.storage)
    st = vkt_copy_(&zv, &gv->t);
  if (!st && !(st = shared_out(&zx, x, geo, &out->t)))
    record_geometry(&view_scatter_fn, gv, geo, out);
  vkt_tensor_release(&span);
  vkt_tensor_release(&zx);
  vkt_tensor_release(&zv);
  return st;
}

static vkt_status gather_view(const vkt_var *gx, const geometry *geo, const vkt_shape_info *view, vkt_var *out) {
  vkt_tensor span = {0}, zx = {0}, shared = {0}, gxt = {0};
  vkt_shape_info x = {gx->t.dtype, vkt_tensor_device(&gx->t), gx->t.ndim, {0}};
  memcpy(x.shape, gx->t.shape, sizeof x.shape);
  *out = (vkt_var){0};
  vkt_tensor_share(&gxt, &gx->t);
  vkt_status st = vkt_tensor_empty(&span, x.device, x.dtype, 1, (int64_t[]){geo->hi - geo->lo});
  if (!st) /* zeros where the view reads storage that is not x's (a gap of a strided x, or past its ends) */
    st = vkt_fill_(&span, (vkt_scalar){false, 0, 0});
  if (!st) /* the adjoint of scatter_view's share: each of x's elements that reach one storage element adds its own */
    st = shared_out(&gxt, &x, geo, &shared);
  if (!st && view_overlaps(x.ndim, x.shape, geo->strides))
    st = span_add(&span, &shared, geo->strides, geo->offset - geo->lo);
  else if (!st && !(st = vkt_as_strided(&zx, &span, x.ndim, x.shape, geo->strides, geo->offset - geo->lo)))
    st = vkt_copy_(&zx, &shared);
  if (!st)
    st = vkt_as_strided(&out->t, &span, view->ndim, view->shape, geo->vstrides, geo->voffset - geo->lo);
  if (!st)
    record_geometry(&view_gather_fn, gx, geo, out);
  vkt_tensor_release(&span);
  vkt_tensor_release(&zx);
  vkt_tensor_release(&shared);
  vkt_tensor_release(&gxt);
  return st;
}

/* ---- views after a write: their history is the base's, seen through their geometry ---- */

static geometry view_geometry(const vkt_tensor *base, const vkt_tensor *view) {
  geometry geo = {.ndim = base->ndim, .vndim = view->ndim, .offset = base->offset, .voffset = view->offset};
  memcpy(geo.strides, base->strides, sizeof geo.strides);
  memcpy(geo.vstrides, view->strides, sizeof geo.vstrides);
  vkt_tensor_extent(base, &geo.lo, &geo.hi);
  int64_t lo, hi; /* as_strided may reach storage outside the base's elements: their gradient is dropped */
  vkt_tensor_extent(view, &lo, &hi);
  if (vkt_tensor_numel(view) > 0)
    geo.lo = lo < geo.lo ? lo : geo.lo, geo.hi = hi > geo.hi ? hi : geo.hi;
  return geo;
}

/* A node of fn over inputs in with geo, made the grad_fn of meta m (the output, of tensor t); false where none
 * was made (grad mode off, out of host memory). */
static bool record_into(const vkt_fn *fn, int nin, const vkt_var *const *in, const geometry *geo, vkt_meta *m,
                        const vkt_tensor *t) {
  vkt_node *n = vkt_node_begin(fn, nin, in, 1);
  if (!n)
    return false;
  if (!(n->extra = geometry_copy(geo))) {
    vkt_node_decref(n);
    return false;
  }
  n->extra_free = free;
  vkt_var out = {*t, m}; /* borrowed: vkt_node_output sets m's grad_fn */
  vkt_node_output(n, 0, &out);
  vkt_node_decref(n);
  return true;
}

static const vkt_fn view_of_base_fn = {"AsStridedBackward0", strided_backward};

void vkt_view_refresh(vkt_meta *m, const vkt_tensor *t) {
  vkt_var base = {vkt_view_base(m), m->base}; /* the first of its views: its edge never refreshes */
  const vkt_var *in = &base;
  geometry geo = view_geometry(&base.t, t);
  if (record_into(&view_of_base_fn, 1, &in, &geo, m, t) || vkt_grad_enabled()) /* else at the next read in grad mode */
    m->base_version = t->storage->version;
}

/* CopySlices: the base's gradient with the view's part zeroed, and that part for the value written. */
static void copy_slices_backward(vkt_bw *b) {
  vkt_var part = {0}, spread = {0};
  if (!g)
    return;
  const vkt_var *gv = keep(b, gather_view(g, b->n->extra, IN(b, 1), &part), &part);
  if (NEED(b, 0) && gv)
    SET(b, 0, sub(b, g, keep(b, scatter_view(gv, b->n->extra, IN(b, 0), &spread), &spread)));
  SET(b, 1, gv);
}

static const vkt_fn copy_slices_fn = {"CopySlices", copy_slices_backward};

void vkt_view_write(vkt_meta *m, const vkt_tensor *t, const vkt_var *result) {
  vkt_var base = {vkt_view_base(m), m->base};
  const vkt_var *in[2] = {&base, result};
  geometry geo = view_geometry(&base.t, t);
  record_into(&copy_slices_fn, 2, in, &geo, m->base, &base.t);
  vkt_view_refresh(m, t);
}

static const vkt_fn reshape_fn = {"ViewBackward0", reshape_backward},
                    permute_fn = {"PermuteBackward0", permute_backward},
                    transpose_fn = {"TransposeBackward0", permute_backward},
                    expand_fn = {"ExpandBackward0", expand_backward};

/* The node kind of a view of this kind named `name`: the common names' without a look-up (view and transpose are
 * on the hot path), PyTorch's others (SqueezeBackward0, TBackward0, SliceBackward0) by name. NULL: out of host
 * memory. */
static const vkt_fn *view_fn(vkt_view_kind kind, const char *name) {
  static const struct {
    const vkt_fn *fn;
    void (*backward)(vkt_bw *b);
  } kinds[] = {[VKT_VIEW_RESHAPE] = {&reshape_fn, reshape_backward},
               [VKT_VIEW_PERMUTE] = {&permute_fn, permute_backward},
               [VKT_VIEW_EXPAND] = {&expand_fn, expand_backward},
               [VKT_VIEW_STRIDED] = {NULL, strided_backward}};
  if (kinds[kind].fn && !strcmp(name, kinds[kind].fn->name))
    return kinds[kind].fn;
  if (kind == VKT_VIEW_PERMUTE && !strcmp(name, transpose_fn.name))
    return &transpose_fn;
  return vkt_fn_named(name, kinds[kind].backward);
}

/* vkt_ag_view's and vkt_ag_view_indexed's (twin NULL or not). */
static vkt_status record_view(const vkt_var *x, vkt_tensor *view, vkt_view_kind kind, const int64_t *perm,
                              const char *name, const vkt_tensor *twin, vkt_var *out) {
  *out = (vkt_var){0};
  vkt_status st = VKT_OK;
  if (view) {
    out->t = *view;
    *view = (vkt_tensor){0};
  } else if (kind == VKT_VIEW_PERMUTE) {
    st = vkt_permute(&out->t, &x->t, x->t.ndim, perm);
  }
  if (st)
    return st;
  vkt_node *n = vkt_node_begin(&reshape_fn, 1, &x, 1); /* its kind is set below, once it is known to record */
  if (!n) {
    vkt_view_unrecorded(out, x, false);
    return VKT_OK;
  }
  if (!(n->fn = view_fn(kind, name))) {
    vkt_node_decref(n);
    vkt_var_release(out);
    return vkt_fail(VKT_ERR_NOMEM, "out of host memory");
  }
  if (kind == VKT_VIEW_STRIDED) {
    vkt_tensor space = {0};
    bool indexed = twin && view_overlaps(x->t.ndim, x->t.shape, x->t.strides);
    if (indexed)
      vkt_tensor_index_space(&x->t, &space);
    geometry geo = indexed ? view_geometry(&space, twin) : view_geometry(&x->t, &out->t);
    vkt_tensor_release(&space);
    if (!(n->extra = geometry_copy(&geo))) {
      vkt_node_decref(n);
      return VKT_OK;
    }
    n->extra_free = free;
  }
  if (perm)
    memcpy(n->iv, perm, (size_t)x->t.ndim * sizeof *perm);
  vkt_node_output(n, 0, out);
  out->ag->is_view = true;
  vkt_view_track(out, x);
  vkt_node_decref(n);
  return VKT_OK;
}

vkt_status vkt_ag_view(const vkt_var *x, vkt_tensor *view, vkt_view_kind kind, const int64_t *perm, const char *name,
                       vkt_var *out) {
  return record_view(x, view, kind, perm, name, NULL, out);
}

bool vkt_ag_view_needs_twin(const vkt_var *x) {
  return vkt_grad_enabled() && vkt_requires_grad(x) && view_overlaps(x->t.ndim, x->t.shape, x->t.strides);
}

vkt_status vkt_ag_view_indexed(const vkt_var *x, vkt_tensor *view, const vkt_tensor *twin, const char *name,
                               vkt_var *out) {
  return record_view(x, view, VKT_VIEW_STRIDED, NULL, name, twin, out);
}

vkt_status vkt_ag_view_(vkt_var *x, vkt_tensor *view, vkt_view_kind kind, const int64_t *perm, const char *name) {
  vkt_var out = {0};
  bool records = vkt_grad_enabled() && vkt_requires_grad(x);
  vkt_status st = vkt_inplace_check(x, records);
  if (!st && records && !(st = vkt_ag_view(x, view, kind, perm, name, &out)))
    st = vkt_ag_error(); /* x is a view whose history is refused: x stays as it was */
  if (st) {
    vkt_var_release(&out);
    vkt_tensor_release(view);
    return st;
  }
  if (!records) {
    out.t = *view;
    *view = (vkt_tensor){0};
  }
  vkt_inplace_view(x, &out, true);
  return VKT_OK;
}

vkt_status vkt_ag_resize_(vkt_var *x, int ndim, const int64_t *shape, const vkt_memory_format *fmt) {
  vkt_var out = {0};
  bool reshaped = ndim != x->t.ndim || memcmp(shape, x->t.shape, sizeof *shape * (size_t)ndim);
  vkt_status st = vkt_requires_grad(x) ? vkt_fail(VKT_ERR_RUNTIME, "cannot resize variables that require grad")
                                       : vkt_inplace_check(x, false);
  if (!st)
    st = vkt_resize(&out.t, &x->t, ndim, shape, fmt);
  if (!st)
    vkt_inplace_view(x, &out, reshaped);
  return st;
}

/* reshape, its node named `name` where it is a view of x */
static vkt_status reshape_named(const vkt_var *x, int ndim, const int64_t *shape, bool view_only, const char *name,
                                vkt_var *out) {
  int64_t s[VKT_MAX_DIMS];
  vkt_tensor v = {0};
  memcpy(s, shape, (size_t)ndim * sizeof *s);
  vkt_status st = vkt_infer_shape(vkt_tensor_numel(&x->t), ndim, s);
  if (!st && (st = vkt_view(&v, &x->t, ndim, s)) && !view_only) {
    vkt_var c = {0}; /* strides no view can express: a copy, then a view of it (PyTorch's _unsafe_view) */
    if (!(st = vkt_ag_clone(x, VKT_CONTIGUOUS_FORMAT, &c)))
      st = reshape_named(&c, ndim, s, true, "UnsafeViewBackward0", out);
    vkt_var_release(&c);
    if (!st && out->ag) { /* a view of a copy nobody else sees: no view to autograd */
      out->ag->is_view = out->ag->no_grad_view = out->ag->inference_view = false;
      vkt_meta_decref(out->ag->base);
      out->ag->base = NULL;
      out->ag->base_t = (vkt_tensor){0};
    }
    return st;
  }
  if (st)
    return st;
  return vkt_ag_view(x, &v, VKT_VIEW_RESHAPE, NULL, name, out);
}

/* PyTorch's names: view(), and reshape() of a contiguous tensor, ViewBackward0; reshape() of another that a view
 * can take, ReshapeAliasBackward0 (its _reshape_alias); else UnsafeViewBackward0 over a copy. */
vkt_status vkt_ag_reshape(const vkt_var *x, int ndim, const int64_t *shape, bool view_only, vkt_var *out) {
  bool alias = !view_only && !vkt_tensor_is_contiguous(&x->t);
  return reshape_named(x, ndim, shape, view_only, alias ? "ReshapeAliasBackward0" : "ViewBackward0", out);
}

/* The permutation transpose(d0, d1) is, over x's dims. */
static vkt_status transpose_perm(const vkt_tensor *x, int64_t d0, int64_t d1, int64_t *perm) {
  int a, c;
  vkt_status st;
  int nd = x->ndim ? x->ndim : 1;
  if ((st = vkt_dim_wrap(d0, nd, &a)) || (st = vkt_dim_wrap(d1, nd, &c)))
    return st;
  for (int d = 0; d < x->ndim; d++)
    perm[d] = d == a ? c : d == c ? a : d;
  return VKT_OK;
}

vkt_status vkt_ag_transpose_named(const vkt_var *x, int64_t d0, int64_t d1, const char *name, vkt_var *out) {
  int64_t perm[VKT_MAX_DIMS];
  vkt_status st = transpose_perm(&x->t, d0, d1, perm);
  return st ? st : vkt_ag_view(x, NULL, VKT_VIEW_PERMUTE, perm, name, out);
}

vkt_status vkt_ag_transpose(const vkt_var *x, int64_t d0, int64_t d1, vkt_var *out) {
  return vkt_ag_transpose_named(x, d0, d1, "TransposeBackward0", out);
}

vkt_status vkt_ag_transpose_(vkt_var *x, int64_t d0, int64_t d1, const char *name) {
  int64_t perm[VKT_MAX_DIMS];
  vkt_tensor view = {0};
  vkt_status st = transpose_perm(&x->t, d0, d1, perm);
  if (!st)
    st = vkt_permute(&view, &x->t, x->t.ndim, perm);
  return st ? st : vkt_ag_view_(x, &view, VKT_VIEW_PERMUTE, perm, name);
}

vkt_status vkt_ag_expand(const vkt_var *x, int ndim, const int64_t *shape, vkt_var *out) {
  vkt_tensor v = {0};
  vkt_status st = vkt_expand(&v, &x->t, ndim, shape);
  return st ? st : vkt_ag_view(x, &v, VKT_VIEW_EXPAND, NULL, "ExpandBackward0", out);
}

/* ---- gather and its adjoint ---- */

static void gather_backward(vkt_bw *b) {
  vkt_var out = {0};
  const vkt_var *idx = S(b, 0);
  if (g && idx)
    SET(b, 0, keep(b, vkt_ag_scatter_add_zeros(g, b->n->iv[0], &idx->t, IN(b, 0)->ndim, IN(b, 0)->shape, &out), &out));
}

static void scatter_zeros_backward(vkt_bw *b) {
  vkt_var out = {0};
  const vkt_var *idx = S(b, 0);
  if (g && idx)
    SET(b, 0, keep(b, vkt_ag_gather(g, b->n->iv[0], &idx->t, &out), &out));
}

static const vkt_fn gather_fn = {"GatherBackward0", gather_backward},
                    scatter_zeros_fn = {"ScatterAddBackward0", scatter_zeros_backward};

static void record_index(const vkt_fn *fn, const vkt_var *x, int64_t dim, const vkt_tensor *index, vkt_var *out) {
  vkt_node *n = vkt_node_begin(fn, 1, &x, 1);
  if (!n)
    return;
  vkt_var idx = {0};
  vkt_tensor_share(&idx.t, index);
  vkt_node_save(n, 0, &idx, false, 0);
  vkt_var_release(&idx);
  n->iv[0] = dim;
  vkt_node_output(n, 0, out);
  vkt_node_decref(n);
}

vkt_status vkt_ag_gather(const vkt_var *x, int64_t dim, const vkt_tensor *index, vkt_var *out) {
  *out = (vkt_var){0};
  vkt_status st = vkt_gather(&x->t, dim, index, &out->t);
  if (!st && vkt_dtypes[out->t.dtype].is_float)
    record_index(&gather_fn, x, dim, index, out);
  return st;
}

vkt_status vkt_ag_scatter_add_zeros(const vkt_var *src, int64_t dim, const vkt_tensor *index, int ndim,
                                    const int64_t *shape, vkt_var *out) {
  *out = (vkt_var){0};
  vkt_status st = vkt_tensor_empty(&out->t, vkt_tensor_device(&src->t), src->t.dtype, ndim, shape);
  if (!st)
    st = vkt_fill_(&out->t, (vkt_scalar){false, 0, 0});
  if (!st)
    st = vkt_scatter_add(&out->t, dim, index, &src->t);
  if (st)
    vkt_var_release(out);
  else
    record_index(&scatter_zeros_fn, src, dim, index, out);
  return st;
}

/* ---- values picked along a dim by an op that also returns their indices (sort, topk, kthvalue, median,
 * mode, cummax, cummin): the gradient goes back to where each value came from ---- */

static void selected_backward(vkt_bw *b) {
  const vkt_var *idx = S(b, 0), *gk = g;
  if (b->n->flag && gk) { /* the op dropped dim: put it back */
    int64_t shape[VKT_MAX_DIMS];
    for (int d = 0; d < IN(b, 0)->ndim; d++)
      shape[d] = d == b->n->iv[0] ? 1 : IN(b, 0)->shape[d];
    gk = reshape(b, gk, IN(b, 0)->ndim, shape);
  }
  vkt_var out = {0};
  if (gk && idx)
    SET(b, 0, keep(b, vkt_ag_scatter_add_zeros(gk, b->n->iv[0], &idx->t, IN(b, 0)->ndim, IN(b, 0)->shape, &out), &out));
}

vkt_status vkt_ag_selected(const vkt_var *x, int64_t dim, bool dropped, vkt_tensor *values, const vkt_tensor *indices,
                           const char *name, vkt_var *out) {
  *out = (vkt_var){values ? *values : (vkt_tensor){0}, NULL};
  *values = (vkt_tensor){0};
  int d;
  if (!vkt_dtypes[out->t.dtype].is_float || vkt_dim_wrap(dim, x->t.ndim ? x->t.ndim : 1, &d))
    return VKT_OK;
  const vkt_fn *kind = vkt_fn_named(name, selected_backward);
  vkt_node *n = kind ? vkt_node_begin(kind, 1, &x, 1) : NULL; /* out of host memory: no history, as node_begin's */
  if (!n)
    return VKT_OK;
  vkt_var idx = {0};
  vkt_status st = VKT_OK;
  if (dropped && x->t.ndim) {
    int64_t shape[VKT_MAX_DIMS];
    for (int i = 0; i < x->t.ndim; i++)
      shape[i] = i == d ? 1 : x->t.shape[i];
    st = vkt_view(&idx.t, indices, x->t.ndim, shape);
  } else {
    vkt_tensor_share(&idx.t, indices);
  }
  if (!st) {
    vkt_node_save(n, 0, &idx, false, 0);
    n->iv[0] = d;
    n->flag = dropped && x->t.ndim;
    vkt_node_output(n, 0, out);
  }
  vkt_var_release(&idx);
  vkt_node_decref(n);
  return st;
}
