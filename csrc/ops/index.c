/* index.c: advanced indexing (x[indices] and x[indices] = values: PyTorch's index and index_put_), the
 * writes along a dim through an index (index_copy_, index_add_, index_fill_, scatter, scatter_add,
 * scatter_reduce), take, take_along_dim, masked_select and masked_scatter_. Indices are checked and wrapped
 * by index.comp, reads are index_select (gather.comp), writes scatter.comp. A bool mask's result size
 * depends on its values, so a mask is read to the host (a wait). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shape.h"

/* ---- the advanced indices of a key ---- */

typedef struct {
  int n;                        /* advanced indices */
  int dims[VKT_MAX_DIMS];       /* the dim of x each indexes, increasing */
  vkt_tensor idx[VKT_MAX_DIMS]; /* owned: int32 or int64 on x's device */
} adv;

static void adv_release(adv *a) {
  for (int k = 0; k < a->n; k++)
    vkt_tensor_release(&a->idx[k]);
}

vkt_status vkt_check_mask(const vkt_tensor *x, const vkt_tensor *mask, int at) {
  char a[256], b[256];
  for (int i = 0; i < mask->ndim; i++)
    if (at + i >= x->ndim || mask->shape[i] != x->shape[at + i]) {
      vkt_shape_str(mask->ndim, mask->shape, a, sizeof a);
      vkt_shape_str(x->ndim, x->shape, b, sizeof b);
      return vkt_fail(VKT_ERR_INDEX,
                      "The shape of the mask %s at index %d does not match the shape of the indexed tensor %s at "
                      "index %d",
                      a, i, b, at + i);
    }
  return VKT_OK;
}

/* PyTorch's nonzero of a mask: the coordinates of its true elements, one int64 tensor per mask dim. */
static vkt_status mask_positions(const vkt_tensor *mask, int device, vkt_tensor *out) {
  int64_t n = vkt_tensor_numel(mask), count = 0;
  int m = mask->ndim;
  uint8_t *bits = malloc((size_t)n + 1);
  int64_t *pos = NULL;
  vkt_status st = VKT_OK;
  if (!bits || (st = n ? vkt_read(mask, bits) : VKT_OK))
    goto finish;
  for (int64_t i = 0; i < n; i++)
    count += bits[i] != 0;
  if (!(pos = malloc(sizeof *pos * (size_t)(count * m + 1))))
    goto finish;
  for (int64_t i = 0, j = 0; i < n; i++) {
    if (!bits[i])
      continue;
    for (int64_t r = i, d = m - 1; d >= 0; r /= mask->shape[d], d--)
      pos[d * count + j] = r % mask->shape[d];
    j++;
  }
  for (int d = 0; d < m && !st; d++)
    if (!(st = vkt_tensor_empty(&out[d], device, VKT_INT64, 1, &count)) && count)
      st = vkt_write(&out[d], pos + d * count);
finish:
  if (!bits || (count && !pos && !st))
    st = vkt_fail(VKT_ERR_NOMEM, "out of host memory");
  free(bits);
  free(pos);
  return st;
}

/* The advanced indices of indices[0..n) (NULL: the whole dim), each a dim of x; a bool mask stands for as
 * many dims as it has. */
static vkt_status adv_collect(const vkt_tensor *x, int n, const vkt_tensor *const *indices, adv *a) {
  vkt_status st = VKT_OK;
  int dim = 0, device = vkt_tensor_device(x);
  *a = (adv){0};
  for (int i = 0; i < n && !st; i++) {
    const vkt_tensor *t = indices[i];
    if (!t) {
      dim++;
    } else if (t->dtype == VKT_BOOL || t->dtype == VKT_UINT8) {
      if (!(st = vkt_check_mask(x, t, dim)) && !(st = mask_positions(t, device, &a->idx[a->n])))
        for (int j = 0; j < t->ndim; j++)
          a->dims[a->n++] = dim++;
    } else if (t->dtype == VKT_INT32 || t->dtype == VKT_INT64) {
      if (!(st = vkt_to(&a->idx[a->n], t, device, t->dtype)))
        a->dims[a->n++] = dim++;
    } else {
      st = vkt_fail(VKT_ERR_INDEX, "tensors used as indices must be long, int, byte or bool tensors");
    }
  }
  if (!st && dim > x->ndim)
    st = vkt_fail(VKT_ERR_INDEX, "too many indices for tensor of dimension %d", x->ndim);
  if (st)
    adv_release(a);
  return st;
}

/* ---- from the indices to one position along the merged advanced dims ---- */

static vkt_status broadcast_indices(const adv *a, int *ndim, int64_t *shape) {
  const vkt_tensor *t[VKT_MAX_DIMS];
  char buf[1024] = "", one[256];
  for (int k = 0; k < a->n; k++)
    t[k] = &a->idx[k];
  if (!vkt_broadcast_shape(a->n, t, ndim, shape))
    return VKT_OK;
  for (int k = 0; k < a->n; k++) {
    vkt_shape_str(t[k]->ndim, t[k]->shape, one, sizeof one);
    strncat(buf, k ? ", " : "", sizeof buf - strlen(buf) - 1);
    strncat(buf, one, sizeof buf - strlen(buf) - 1);
  }
  return vkt_fail(VKT_ERR_INDEX, "shape mismatch: indexing tensors could not be broadcast together with shapes %s",
                  buf);
}

/* Each index wrapped and (checked: one wait for all) checked against its dim's size, then combined
 * row-major over the advanced dims' sizes into lin: int64 of the broadcast shape, flattened. */
static vkt_status adv_linear(const vkt_tensor *x, const adv *a, vkt_index_err style, bool checked, int *bn,
                             int64_t *bshape, vkt_tensor *lin) {
  vkt_tensor flag = {0}, wrapped[VKT_MAX_DIMS] = {0}, acc = {0}, next = {0}, e = {0}, c = {0};
  vkt_index_check checks[VKT_MAX_DIMS];
  vkt_scalar one = {false, 0, 1};
  vkt_status st;
  if ((st = broadcast_indices(a, bn, bshape)) || (st = vkt_index_flag_new(x, &flag)))
    return st;
  for (int k = 0; k < a->n && !st; k++) {
    int64_t size = x->shape[a->dims[k]];
    checks[k] = (vkt_index_check){&a->idx[k], size, k, style, true};
    if ((st = vkt_tensor_empty(&wrapped[k], vkt_tensor_device(x), VKT_INT64, a->idx[k].ndim, a->idx[k].shape)) ||
        !vkt_tensor_numel(&wrapped[k]))
      continue;
    vkt_op_args args = {.out = &wrapped[k], .in = {&a->idx[k]}, .nin = 1, .iparam = {size, k}, .flags = style};
    args.out2 = flag.storage ? &flag : NULL;
    st = vkt_op_run(VKT_OP_INDEX_WRAP, &args);
  }
  if (!st && checked)
    st = vkt_index_flag_check(&flag, a->n, checks);
  int64_t mult = 1, n = 1;
  for (int k = a->n - 1; k >= 0 && !st; k--) { /* acc += wrapped[k] * mult */
    vkt_operand term = {.t = &wrapped[k]};
    if (!acc.storage && mult == 1)
      vkt_tensor_share(&next, &wrapped[k]);
    else if (!acc.storage)
      st = vkt_binary(VKT_OP_MUL, term, (vkt_operand){.s = {false, 0, mult}}, one, NULL, &next);
    else
      st = vkt_binary(VKT_OP_ADD, (vkt_operand){.t = &acc}, term, (vkt_scalar){false, 0, mult}, NULL, &next);
    vkt_tensor_release(&acc);
    acc = next, next = (vkt_tensor){0};
    mult *= x->shape[a->dims[k]];
  }
  for (int i = 0; i < *bn; i++)
    n *= bshape[i];
  if (!st && !(st = vkt_expand(&e, &acc, *bn, bshape)) && !(st = vkt_contiguous(&c, &e)))
    st = vkt_view(lin, &c, 1, &n);
  for (int k = 0; k < a->n; k++)
    vkt_tensor_release(&wrapped[k]);
  vkt_tensor_release(&flag);
  vkt_tensor_release(&acc);
  vkt_tensor_release(&e);
  vkt_tensor_release(&c);
  return st;
}

/* x's dims reordered: the advanced ones first (perm), the rest after in order; rest gets their sizes. */
static int adv_order(const vkt_tensor *x, const adv *a, int64_t *perm, int64_t *rest, int64_t *merged) {
  int r = 0, j = a->n;
  *merged = 1;
  for (int k = 0; k < a->n; k++)
    perm[k] = a->dims[k], *merged *= x->shape[a->dims[k]];
  for (int d = 0; d < x->ndim; d++) {
    bool is_adv = false;
    for (int k = 0; k < a->n; k++)
      is_adv = is_adv || a->dims[k] == d;
    if (!is_adv)
      perm[j++] = d, rest[r++] = x->shape[d];
  }
  return r;
}

/* Where the broadcast dims go in the result: at the first advanced dim when the advanced dims are
 * adjacent, else first (PyTorch's and NumPy's rule). */
static int adv_position(const adv *a) {
  for (int k = 1; k < a->n; k++)
    if (a->dims[k] != a->dims[k - 1] + 1)
      return 0;
  return a->dims[0];
}

/* The permutation taking [broadcast dims, rest dims] to the result's order (inverse: the other way). */
static void result_perm(int at, int bn, int r, bool inverse, int64_t *perm) {
  int64_t p[VKT_MAX_DIMS];
  int j = 0;
  for (int i = 0; i < at; i++)
    p[j++] = bn + i;
  for (int i = 0; i < bn; i++)
    p[j++] = i;
  for (int i = at; i < r; i++)
    p[j++] = bn + i;
  for (int i = 0; i < bn + r; i++) {
    if (inverse)
      perm[p[i]] = i;
    else
      perm[i] = p[i];
  }
}

static vkt_status index_as(const vkt_tensor *x, int n, const vkt_tensor *const *indices, vkt_index_err style,
                           vkt_tensor *out) {
  adv a;
  vkt_tensor lin = {0}, xp = {0}, c = {0}, flat = {0}, picked = {0}, shaped = {0};
  int64_t bshape[VKT_MAX_DIMS], perm[VKT_MAX_DIMS], rest[VKT_MAX_DIMS], merged, shape[VKT_MAX_DIMS];
  int bn = 0;
  vkt_status st = adv_collect(x, n, indices, &a);
  if (st)
    return st;
  if (a.n == 0) {
    vkt_tensor_share(out, x);
    return VKT_OK;
  }
  int r = adv_order(x, &a, perm, rest, &merged);
  if ((st = adv_linear(x, &a, style, true, &bn, bshape, &lin)))
    goto finish;
  if (bn + r > VKT_MAX_DIMS) {
    st = vkt_fail(VKT_ERR_RUNTIME, "tensors have at most %d dimensions", VKT_MAX_DIMS);
    goto finish;
  }
  int at = adv_position(&a);
  if (at > 0) { /* adjacent advanced dims after others: picked where they are, laid out as PyTorch's result is */
    memcpy(shape, x->shape, sizeof *shape * (size_t)at);
    shape[at] = merged;
    memcpy(shape + at + 1, rest + at, sizeof *rest * (size_t)(r - at));
    if (vkt_view(&flat, x, r + 1, shape) && ((st = vkt_contiguous(&c, x)) || (st = vkt_view(&flat, &c, r + 1, shape))))
      goto finish;
    memcpy(shape + at, bshape, sizeof *bshape * (size_t)bn);
    memcpy(shape + at + bn, rest + at, sizeof *rest * (size_t)(r - at));
    if (!(st = vkt_index_select_trusted(&flat, at, &lin, &picked)))
      st = vkt_view(out, &picked, bn + r, shape);
    goto finish;
  }
  shape[0] = merged;
  memcpy(shape + 1, rest, sizeof *rest * (size_t)r);
  if ((st = vkt_permute(&xp, x, x->ndim, perm)))
    goto finish;
  if (vkt_view(&flat, &xp, r + 1, shape)) { /* the advanced dims do not merge in place: a copy reads them */
    if ((st = vkt_contiguous(&c, &xp)) || (st = vkt_view(&flat, &c, r + 1, shape)))
      goto finish;
  }
  memcpy(shape, bshape, sizeof *bshape * (size_t)bn);
  memcpy(shape + bn, rest, sizeof *rest * (size_t)r);
  if ((st = vkt_index_select_trusted(&flat, 0, &lin, &picked)) || (st = vkt_view(&shaped, &picked, bn + r, shape)))
    goto finish;
  result_perm(0, bn, r, false, perm);
  st = vkt_permute(out, &shaped, bn + r, perm);
finish:
  adv_release(&a);
  vkt_tensor_release(&lin);
  vkt_tensor_release(&xp);
  vkt_tensor_release(&c);
  vkt_tensor_release(&flat);
  vkt_tensor_release(&picked);
  vkt_tensor_release(&shaped);
  return st;
}

vkt_status vkt_index(const vkt_tensor *x, int n, const vkt_tensor *const *indices, vkt_tensor *out) {
  return index_as(x, n, indices, VKT_INDEX_ERR_INDEXING, out);
}

vkt_status vkt_take(const vkt_tensor *x, const vkt_tensor *index, vkt_tensor *out) {
  vkt_tensor c = {0}, flat = {0};
  int64_t n = vkt_tensor_numel(x);
  vkt_status st = vkt_same_device(2, (const vkt_tensor *[]){x, index}, NULL);
  if (!st && index->dtype != VKT_INT64 && index->dtype != VKT_INT32)
    st = vkt_fail(VKT_ERR_RUNTIME, "take(): Expected a long tensor for index, but got %s",
                  vkt_dtypes[index->dtype].name);
  if (!st && !(st = vkt_contiguous(&c, x)) && !(st = vkt_view(&flat, &c, 1, &n)))
    st = index_as(&flat, 1, &index, VKT_INDEX_ERR_TAKE, out);
  vkt_tensor_release(&c);
  vkt_tensor_release(&flat);
  return st;
}

vkt_status vkt_take_along_dim(const vkt_tensor *x, const vkt_tensor *index, bool flat, int64_t dim, vkt_tensor *out) {
  vkt_tensor cx = {0}, fx = {0}, ci = {0}, fi = {0}, xe = {0}, ie = {0};
  int d = 0, ndim = 0;
  int64_t shape[VKT_MAX_DIMS], n = vkt_tensor_numel(x), k = vkt_tensor_numel(index);
  vkt_status st = vkt_same_device(2, (const vkt_tensor *[]){x, index}, NULL);
  if (!st && index->dtype != VKT_INT64 && index->dtype != VKT_INT32)
    st = vkt_fail(VKT_ERR_RUNTIME, "torch.take_along_dim(): dtype of indices should be int64 but got %s instead",
                  vkt_dtypes[index->dtype].name);
  if (st)
    return st;
  if (flat) {
    if (!(st = vkt_contiguous(&cx, x)) && !(st = vkt_view(&fx, &cx, 1, &n)) && !(st = vkt_contiguous(&ci, index)) &&
        !(st = vkt_view(&fi, &ci, 1, &k)))
      st = vkt_gather(&fx, 0, &fi, out);
  } else if (x->ndim != index->ndim) {
    st = vkt_fail(VKT_ERR_RUNTIME,
                  "torch.take_along_dim(): input and indices should have the same number of dimensions, but got %d "
                  "dimensions for input, and %d dimensions for indices",
                  x->ndim, index->ndim);
  } else if (!(st = vkt_dim_wrap(dim, x->ndim, &d))) { /* both broadcast to each other except along dim */
    vkt_tensor xs = *x, is = *index;
    xs.shape[d] = is.shape[d] = 1;
    if (!(st = vkt_broadcast_shape(2, (const vkt_tensor *[]){&xs, &is}, &ndim, shape))) {
      shape[d] = x->shape[d];
      if (!(st = vkt_expand(&xe, x, ndim, shape))) {
        shape[d] = index->shape[d];
        if (!(st = vkt_expand(&ie, index, ndim, shape)))
          st = vkt_gather(&xe, d, &ie, out);
      }
    }
  }
  vkt_tensor *owned[] = {&cx, &fx, &ci, &fi, &xe, &ie};
  for (int j = 0; j < 6; j++)
    vkt_tensor_release(owned[j]);
  return st;
}

vkt_status vkt_masked_select(const vkt_tensor *x, const vkt_tensor *mask, vkt_tensor *out) {
  vkt_tensor xe = {0}, me = {0};
  int ndim = 0;
  int64_t shape[VKT_MAX_DIMS];
  vkt_status st = vkt_same_device(2, (const vkt_tensor *[]){x, mask}, NULL);
  if (!st && mask->dtype != VKT_BOOL)
    st = vkt_fail(VKT_ERR_RUNTIME, "masked_select: expected BoolTensor for mask");
  if (!st && !(st = vkt_broadcast_shape(2, (const vkt_tensor *[]){x, mask}, &ndim, shape)) &&
      !(st = vkt_expand(&xe, x, ndim, shape)) && !(st = vkt_expand(&me, mask, ndim, shape))) {
    int64_t n = vkt_tensor_numel(&xe);
    vkt_tensor flat_x = {0}, flat_m = {0}, cx = {0}, cm = {0};
    const vkt_tensor *m = &flat_m;
    if (!(st = vkt_contiguous(&cx, &xe)) && !(st = vkt_view(&flat_x, &cx, 1, &n)) && !(st = vkt_contiguous(&cm, &me)) &&
        !(st = vkt_view(&flat_m, &cm, 1, &n)))
      st = vkt_index(&flat_x, 1, &m, out);
    vkt_tensor *owned[] = {&flat_x, &flat_m, &cx, &cm};
    for (int k = 0; k < 4; k++)
      vkt_tensor_release(owned[k]);
  }
  vkt_tensor_release(&xe);
  vkt_tensor_release(&me);
  return st;
}

/* ---- writes through an index along one dim ---- */

/* dst[c with c[d] = index[c]] = src[c] (or +=) over index's shape, index any view of src's shape. */
static vkt_status scatter_op(vkt_op_id id, const vkt_tensor *dst, int d, const vkt_tensor *index, const vkt_tensor *src,
                             const vkt_index_check *check) {
  if (vkt_tensor_numel(index) == 0) { /* no element written, still a write to autograd's version check */
    dst->storage->version++;
    return VKT_OK;
  }
  vkt_op_args a = {.out = dst, .in = {dst, index, src}, .nin = 3, .iparam = {d}, .flags = check ? check->style : 0};
  return vkt_index_run_checked(id, &a, check);
}

static vkt_status scatter(const vkt_tensor *dst, int d, const vkt_tensor *index, const vkt_tensor *src, bool add,
                          const vkt_index_check *check) {
  return scatter_op(add ? VKT_OP_SCATTER_ADD : VKT_OP_SCATTER, dst, d, index, src, check);
}

/* src as a contiguous tensor of dst's dtype, never sharing dst's storage (a write must not read what it
 * overwrites). */
static vkt_status values_for(const vkt_tensor *dst, const vkt_tensor *src, vkt_tensor *out) {
  vkt_tensor cast = {0};
  vkt_status st = vkt_to(&cast, src, vkt_tensor_device(dst), dst->dtype);
  if (!st)
    st = cast.storage == dst->storage ? vkt_clone(out, &cast) : vkt_contiguous(out, &cast);
  vkt_tensor_release(&cast);
  return st;
}

static vkt_status value_shape_error(const vkt_tensor *v, int ndim, const int64_t *shape) {
  char a[256], b[256];
  vkt_shape_str(v->ndim, v->shape, a, sizeof a);
  vkt_shape_str(ndim, shape, b, sizeof b);
  return vkt_fail(VKT_ERR_RUNTIME,
                  "shape mismatch: value tensor of shape %s cannot be broadcast to indexing result "
                  "of shape %s",
                  a, b);
}

/* values broadcast to shape (leading size-1 dims beyond it dropped, as PyTorch's setitem does). */
static vkt_status broadcast_values(const vkt_tensor *values, int ndim, const int64_t *shape, vkt_tensor *out) {
  vkt_tensor v = *values;
  while (v.ndim > ndim && v.shape[0] == 1) {
    v.ndim--;
    memmove(v.shape, v.shape + 1, sizeof *v.shape * (size_t)v.ndim);
    memmove(v.strides, v.strides + 1, sizeof *v.strides * (size_t)v.ndim);
  }
  return vkt_expand(out, &v, ndim, shape) ? value_shape_error(values, ndim, shape) : VKT_OK;
}

/* x[mask] = one value, for a bool mask over x's leading dims: masked_fill in place, which reads nothing
 * back (the general path reads the mask to the host). */
static vkt_status mask_fill(const vkt_tensor *x, const vkt_tensor *mask, const vkt_tensor *value) {
  vkt_tensor m = {0}, v = {0};
  vkt_status st = vkt_check_mask(x, mask, 0);
  if (st || (st = vkt_to(&m, mask, vkt_tensor_device(x), VKT_BOOL)) || (st = vkt_view(&v, value, 0, NULL)))
    goto finish;
  for (; m.ndim < x->ndim; m.ndim++) /* x's trailing dims as size 1, to broadcast */
    m.shape[m.ndim] = 1, m.strides[m.ndim] = 1;
  st = vkt_masked_fill(x, &m, &v, (vkt_scalar){0}, true, NULL);
finish:
  vkt_tensor_release(&m);
  vkt_tensor_release(&v);
  return st;
}

/* PyTorch's index_put_ casts no values (only its fill of a mask by one value and basic indexing do), after it has
 * checked their shape. */
static vkt_status same_dtype(const vkt_tensor *x, const vkt_tensor *values) {
  if (values->dtype == x->dtype)
    return VKT_OK;
  return vkt_fail(VKT_ERR_RUNTIME,
                  "Index put requires the source and destination dtypes match, got %s for the destination and %s for "
                  "the source.",
                  vkt_dtypes[x->dtype].torch_name, vkt_dtypes[values->dtype].torch_name);
}

static vkt_status index_put(const vkt_tensor *x, int n, const vkt_tensor *const *indices, const vkt_tensor *values,
                            bool accumulate, bool checked) {
  if (n >= 1 && indices[0] && indices[0]->dtype == VKT_BOOL && indices[0]->ndim > 0 && !accumulate &&
      vkt_tensor_numel(values) == 1) {
    bool rest = true;
    for (int i = 1; i < n; i++)
      rest = rest && !indices[i];
    if (rest && !vkt_same_device(2, (const vkt_tensor *[]){x, values}, NULL))
      return mask_fill(x, indices[0], values);
  }
  adv a;
  vkt_tensor lin = {0}, xp = {0}, c = {0}, flat = {0}, e = {0}, ep = {0}, v = {0}, v2 = {0}, iv;
  int64_t bshape[VKT_MAX_DIMS], perm[VKT_MAX_DIMS], rest[VKT_MAX_DIMS], merged, shape[VKT_MAX_DIMS];
  int bn = 0;
  vkt_status st = vkt_same_device(2, (const vkt_tensor *[]){x, values}, NULL);
  if (st || (st = adv_collect(x, n, indices, &a)))
    return st;
  if (a.n == 0) {
    st = accumulate ? vkt_binary(VKT_OP_ADD, (vkt_operand){.t = x}, (vkt_operand){.t = values},
                                 (vkt_scalar){false, 0, 1}, x, &e)
                    : vkt_assign(x, values);
    goto finish;
  }
  int r = adv_order(x, &a, perm, rest, &merged);
  if ((st = adv_linear(x, &a, VKT_INDEX_ERR_INDEXING, checked, &bn, bshape, &lin)) ||
      (st = vkt_permute(&xp, x, x->ndim, perm)))
    goto finish;
  int at = adv_position(&a);
  int64_t order[VKT_MAX_DIMS], result[VKT_MAX_DIMS];
  result_perm(at, bn, r, false, order);
  memcpy(shape, bshape, sizeof *bshape * (size_t)bn);
  memcpy(shape + bn, rest, sizeof *rest * (size_t)r);
  for (int i = 0; i < bn + r; i++)
    result[i] = shape[order[i]];
  result_perm(at, bn, r, true, order);
  if ((st = broadcast_values(values, bn + r, result, &e)) || (checked && (st = same_dtype(x, values))) ||
      (st = vkt_permute(&ep, &e, bn + r, order)) || (st = values_for(x, &ep, &v)))
    goto finish;
  int64_t nb = vkt_tensor_numel(&lin);
  shape[0] = nb;
  memcpy(shape + 1, rest, sizeof *rest * (size_t)r);
  if ((st = vkt_view(&v2, &v, r + 1, shape)))
    goto finish;
  shape[0] = merged;
  bool copied = vkt_view(&flat, &xp, r + 1, shape) != VKT_OK; /* not mergeable in place: write a copy back */
  if (copied && ((st = vkt_contiguous(&c, &xp)) || (st = vkt_view(&flat, &c, r + 1, shape))))
    goto finish;
  iv = v2; /* lin seen with the values' shape: stride 0 off dim 0 */
  iv.storage = lin.storage, iv.dtype = lin.dtype, iv.offset = lin.offset;
  for (int i = 0; i < iv.ndim; i++)
    iv.strides[i] = i == 0 ? lin.strides[0] : 0;
  if (!(st = scatter(&flat, 0, &iv, &v2, accumulate, NULL)) && copied)
    st = vkt_copy_(&xp, &c);
finish:
  adv_release(&a);
  vkt_tensor *owned[] = {&lin, &xp, &c, &flat, &e, &ep, &v, &v2};
  for (size_t i = 0; i < sizeof owned / sizeof *owned; i++)
    vkt_tensor_release(owned[i]);
  return st;
}

vkt_status vkt_index_put_(const vkt_tensor *x, int n, const vkt_tensor *const *indices, const vkt_tensor *values,
                          bool accumulate) {
  return index_put(x, n, indices, values, accumulate, true);
}

vkt_status vkt_index_put_trusted(const vkt_tensor *x, int n, const vkt_tensor *const *indices, const vkt_tensor *values,
                                 bool accumulate) {
  return index_put(x, n, indices, values, accumulate, false);
}

/* ---- scatter, scatter_add, index_copy_, index_add_ ---- */

static vkt_status index_dtype(const char *op, const vkt_tensor *index) {
  if (index->dtype != VKT_INT64 && index->dtype != VKT_INT32)
    return vkt_fail(VKT_ERR_RUNTIME, "%s(): Expected dtype int32/int64 for index", op);
  return VKT_OK;
}

/* The checks of scatter's arguments, and x, index and src as the scatter shader takes them (0-d as [1],
 * src cut to index's shape) with dim wrapped into *d. */
static vkt_status scatter_args(const char *op, const vkt_tensor *x, int64_t dim, const vkt_tensor *index,
                               const vkt_tensor *src, int *d, vkt_tensor *x1, vkt_tensor *i1, vkt_tensor *s1) {
  vkt_status st;
  if ((st = vkt_same_device(3, (const vkt_tensor *[]){x, index, src}, NULL)) || (st = index_dtype(op, index)) ||
      (st = vkt_dim_wrap(dim, x->ndim, d)))
    return st;
  if (src->dtype != x->dtype)
    return vkt_fail(VKT_ERR_RUNTIME, "%s(): Expected self.dtype to be equal to src.dtype", op);
  if ((index->ndim ? index->ndim : 1) != (x->ndim ? x->ndim : 1) ||
      (src->ndim ? src->ndim : 1) != (x->ndim ? x->ndim : 1))
    return vkt_fail(VKT_ERR_RUNTIME, "Index tensor must have the same number of dimensions as self tensor");
  *x1 = *x, *i1 = *index, *s1 = *src;
  vkt_tensor *all[] = {x1, i1, s1};
  for (int k = 0; k < 3; k++)
    if (all[k]->ndim == 0)
      all[k]->ndim = 1, all[k]->shape[0] = 1, all[k]->strides[0] = 1;
  for (int i = 0; i < i1->ndim; i++)
    if (i1->shape[i] > s1->shape[i] || (i != *d && i1->shape[i] > x1->shape[i])) {
      char a[256], b[256], c[256];
      vkt_shape_str(index->ndim, index->shape, a, sizeof a);
      vkt_shape_str(x->ndim, x->shape, b, sizeof b);
      vkt_shape_str(src->ndim, src->shape, c, sizeof c);
      return vkt_fail(VKT_ERR_RUNTIME,
                      "Expected index %s to be smaller than self %s apart from dimension %d and to be smaller size "
                      "than src %s",
                      a, b, *d, c);
    }
  memcpy(s1->shape, i1->shape, sizeof *s1->shape * (size_t)i1->ndim);
  return VKT_OK;
}

vkt_status vkt_scatter_(const vkt_tensor *x, int64_t dim, const vkt_tensor *index, const vkt_tensor *src, bool add) {
  vkt_tensor x1, i1, s1;
  int d = 0;
  vkt_status st = scatter_args(add ? "scatter_add" : "scatter", x, dim, index, src, &d, &x1, &i1, &s1);
  return st ? st : scatter(&x1, d, &i1, &s1, add, &(vkt_index_check){&i1, x1.shape[d], d, VKT_INDEX_ERR_BOUNDS, false});
}

/* identity of a reduction in dtype: where include_self=False starts. */
static vkt_scalar reduce_identity(vkt_scatter_reduce how, vkt_dtype dtype) {
  static const int64_t imax[VKT_DTYPE_COUNT] = {
      [VKT_INT32] = INT32_MAX, [VKT_INT64] = INT64_MAX, [VKT_UINT8] = UINT8_MAX, [VKT_BOOL] = 1};
  bool f = vkt_dtypes[dtype].is_float;
  switch (how) {
  case VKT_SCATTER_PROD: return (vkt_scalar){false, 0, 1};
  case VKT_SCATTER_AMAX:
    return f ? (vkt_scalar){true, -1.0 / 0.0, 0}
             : (vkt_scalar){false, 0, dtype == VKT_UINT8 || dtype == VKT_BOOL ? 0 : -imax[dtype] - 1};
  case VKT_SCATTER_AMIN: return f ? (vkt_scalar){true, 1.0 / 0.0, 0} : (vkt_scalar){false, 0, imax[dtype]};
  default: return (vkt_scalar){false, 0, 0};
  }
}

/* mean: x (the sums) divided by how many values each element took, where it took any (floor division for
 * integers, as PyTorch's). */
static vkt_status divide_by_count(const vkt_tensor *x, int d, const vkt_tensor *i1, bool include_self) {
  vkt_tensor count = {0}, one = {0}, ones = {0}, q = {0}, r = {0}, none = {0};
  vkt_scalar unit = {false, 0, 1};
  vkt_status st;
  if ((st = vkt_tensor_empty(&count, vkt_tensor_device(x), x->dtype, x->ndim, x->shape)) ||
      (st = vkt_fill_(&count, (vkt_scalar){false, 0, include_self})) ||
      (st = vkt_tensor_empty(&one, vkt_tensor_device(x), x->dtype, 0, NULL)) || (st = vkt_fill_(&one, unit)) ||
      (st = vkt_expand(&ones, &one, i1->ndim, i1->shape)) || (st = scatter(&count, d, i1, &ones, true, NULL)))
    goto finish;
  vkt_op_id div = vkt_dtypes[x->dtype].is_float ? VKT_OP_DIV : VKT_OP_DIV_FLOOR;
  if ((st = vkt_binary(VKT_OP_EQ, (vkt_operand){.t = &count}, (vkt_operand){.s = {false, 0, 0}}, unit, NULL, &none)) ||
      (st = vkt_where(&none, (vkt_operand){.s = unit}, (vkt_operand){.t = &count}, &q)) || /* x / 1 where none came */
      (st = vkt_binary(div, (vkt_operand){.t = x}, (vkt_operand){.t = &q}, unit, NULL, &r)))
    goto finish;
  st = vkt_copy_(x, &r);
finish:
  vkt_tensor *owned[] = {&count, &one, &ones, &q, &r, &none};
  for (int k = 0; k < 6; k++)
    vkt_tensor_release(owned[k]);
  return st;
}

vkt_status vkt_scatter_reduce_(const vkt_tensor *x, int64_t dim, const vkt_tensor *index, const vkt_tensor *src,
                               vkt_scatter_reduce how, bool include_self) {
  static const vkt_op_id ids[] = {[VKT_SCATTER_SUM] = VKT_OP_SCATTER_ADD,
                                  [VKT_SCATTER_PROD] = VKT_OP_SCATTER_PROD,
                                  [VKT_SCATTER_MEAN] = VKT_OP_SCATTER_ADD,
                                  [VKT_SCATTER_AMAX] = VKT_OP_SCATTER_AMAX,
                                  [VKT_SCATTER_AMIN] = VKT_OP_SCATTER_AMIN};
  vkt_tensor x1, i1, s1, start = {0}, spread = {0};
  int d = 0;
  vkt_status st = scatter_args("scatter_reduce", x, dim, index, src, &d, &x1, &i1, &s1);
  if (st)
    return st;
  if (how == VKT_SCATTER_MEAN && x->dtype == VKT_BOOL)
    return vkt_fail(VKT_ERR_RUNTIME, "\"scatter_gather_tensor_cpu_reduce_mean\" not implemented for 'Bool'");
  vkt_index_check check = {&i1, x1.shape[d], d, VKT_INDEX_ERR_BOUNDS, false};
  if (!include_self && /* the elements written start from the reduction's identity */
      ((st = vkt_tensor_empty(&start, vkt_tensor_device(x), x->dtype, 0, NULL)) ||
       (st = vkt_fill_(&start, reduce_identity(how, x->dtype))) ||
       (st = vkt_expand(&spread, &start, i1.ndim, i1.shape)) || (st = scatter(&x1, d, &i1, &spread, false, &check))))
    goto finish;
  if (!(st = scatter_op(ids[how], &x1, d, &i1, &s1, include_self ? &check : NULL)) && how == VKT_SCATTER_MEAN)
    st = divide_by_count(&x1, d, &i1, include_self);
finish:
  vkt_tensor_release(&start);
  vkt_tensor_release(&spread);
  return st;
}

vkt_status vkt_scatter_add(const vkt_tensor *x, int64_t dim, const vkt_tensor *index, const vkt_tensor *src) {
  vkt_tensor x1, i1, s1;
  int d = 0;
  vkt_status st = scatter_args("scatter_add", x, dim, index, src, &d, &x1, &i1, &s1);
  return st ? st : scatter(&x1, d, &i1, &s1, true, NULL);
}

/* A shape's sizes but dim's, as PyTorch prints a vector of them (space-separated): its index_copy_ slices. */
static void slice_str(const vkt_tensor *t, int dim, char *buf, size_t n) {
  size_t len = 0;
  buf[0] = 0;
  for (int i = 0; i < t->ndim && len < n; i++)
    if (i != dim)
      len += (size_t)snprintf(buf + len, n - len, "%s%lld", len ? " " : "", (long long)t->shape[i]);
}

/* PyTorch's index_copy_ checks in its order (its meta function), with its error types: IndexError for the index's
 * rank and count, RuntimeError for dtypes, devices and slice shapes. */
static vkt_status index_copy_check(const vkt_tensor *x, int d, const vkt_tensor *index, const vkt_tensor *source) {
  int64_t k = vkt_tensor_numel(index);
  if (index->ndim > 1)
    return vkt_fail(VKT_ERR_INDEX, "index_copy_(): Index should have dimension 1 or 0 (got %d)", index->ndim);
  if (source->ndim == 0 && k != 1)
    return vkt_fail(VKT_ERR_INDEX, "index_copy_(): When source is scalar, index should have one element (got %lld)",
                    (long long)k);
  if (source->ndim != x->ndim && source->ndim && x->ndim)
    return vkt_fail(VKT_ERR_INDEX, "index_copy_(): When source and destination are not scalars, their dimensionality "
                    "must match. Source dimensionality (%d), destination dimensionality (%d)", source->ndim, x->ndim);
  if (index->dtype != VKT_INT64)
    return vkt_fail(VKT_ERR_RUNTIME, "index_copy_(): Expected a long tensor for index, but got %s",
                    vkt_dtypes[index->dtype].torch_name);
  if (source->dtype != x->dtype)
    return vkt_fail(VKT_ERR_RUNTIME, "index_copy_(): self and source expected to have the same dtype, but got "
                    "(self) %s and (source) %s", vkt_dtypes[x->dtype].torch_name, vkt_dtypes[source->dtype].torch_name);
  int dx = vkt_tensor_device(x), di = vkt_tensor_device(index), ds = vkt_tensor_device(source);
  if (dx != di || dx != ds) {
    char a[32], b[32], c[32];
    vkt_device_name(dx, a, sizeof a), vkt_device_name(di, b, sizeof b), vkt_device_name(ds, c, sizeof c);
    return vkt_fail(VKT_ERR_RUNTIME, "index_copy_(): self, index and source expected to be in the same device, but got "
                    "(self) %s, (index) %s, and (source) %s", a, b, c);
  }
  char a[256], b[256];
  slice_str(x, d, a, sizeof a);
  slice_str(source, source->ndim ? d : -1, b, sizeof b); /* a 0-d source has no dim to drop */
  if ((x->ndim ? x->ndim - 1 : 0) != (source->ndim ? source->ndim - 1 : 0) || strcmp(a, b))
    return vkt_fail(VKT_ERR_RUNTIME, "index_copy_(): Source/destination tensor must have same slice shapes. "
                    "Destination slice shape: %s at dimension %d and source slice shape: %s at dimension 0.", a, d, b);
  if (source->ndim && k != source->shape[d])
    return vkt_fail(VKT_ERR_INDEX, "index_copy_(): Number of indices (%lld) should be equal to source.size(dim) "
                    "(%lld)", (long long)k, (long long)source->shape[d]);
  return VKT_OK;
}

/* PyTorch's index_add_ checks in its order (index_func_meta_impl), all RuntimeError but the index's rank. */
static vkt_status index_add_check(const vkt_tensor *x, int d, const vkt_tensor *index, const vkt_tensor *source) {
  char a[256], b[256];
  int64_t k = vkt_tensor_numel(index), n = source->ndim ? source->shape[d < source->ndim ? d : 0] : 1;
  vkt_status st = vkt_same_device(3, (const vkt_tensor *[]){x, index, source}, NULL);
  if (st)
    return st;
  if (index->ndim > 1) {
    vkt_shape_str(index->ndim, index->shape, a, sizeof a);
    return vkt_fail(VKT_ERR_INDEX, "index_add_(): Index is supposed to be a vector, but got dim: %d with type: %s and "
                    "size: %s", index->ndim, vkt_dtypes[index->dtype].torch_name, a);
  }
  if (index->dtype != VKT_INT64 && index->dtype != VKT_INT32)
    return vkt_fail(VKT_ERR_RUNTIME, "index_add_(): Expected dtype int32/int64 for index but got: %s",
                    vkt_dtypes[index->dtype].torch_name);
  if (source->dtype != x->dtype)
    return vkt_fail(VKT_ERR_RUNTIME, "index_add_(): self (%s) and source (%s) must have the same scalar type",
                    vkt_dtypes[x->dtype].torch_name, vkt_dtypes[source->dtype].torch_name);
  if (d != 0 && d >= source->ndim)
    return vkt_fail(VKT_ERR_RUNTIME, "index_add_(): Indexing dim %d is out of bounds of the source tensor with dim %d",
                    d, source->ndim);
  if (k != n)
    return vkt_fail(VKT_ERR_RUNTIME, "index_add_(): Number of indices (%lld) should be equal to source.size(dim): "
                    "(%lld), for dim: %d", (long long)k, (long long)n, d);
  bool same = source->ndim == x->ndim; /* a 0-d one matches only a 0-d one */
  for (int i = 0; same && i < x->ndim; i++)
    same = i == d || source->shape[i] == x->shape[i];
  if (same)
    return VKT_OK;
  vkt_shape_str(x->ndim, x->shape, a, sizeof a);
  vkt_shape_str(source->ndim, source->shape, b, sizeof b);
  return vkt_fail(VKT_ERR_RUNTIME, "source tensor shape must match self tensor shape, excluding the specified "
                  "dimension. Got self.shape = %s source.shape = %s", a, b);
}

/* x's slices index[i] along d become (add: gain) source's slice i, once the arguments are known to fit (0-d ones
 * taken as one element along d). */
static vkt_status index_write(const vkt_tensor *x, int d, const vkt_tensor *index, const vkt_tensor *source, bool add) {
  vkt_tensor x1 = *x, s1 = *source;
  if (x1.ndim == 0)
    x1.ndim = 1, x1.shape[0] = 1, x1.strides[0] = 1;
  if (s1.ndim == 0)
    s1.ndim = 1, s1.shape[0] = 1, s1.strides[0] = 1;
  vkt_tensor iv = s1; /* the index seen with source's shape: stride 0 except along d */
  iv.storage = index->storage, iv.dtype = index->dtype, iv.offset = index->offset;
  for (int i = 0; i < iv.ndim; i++)
    iv.strides[i] = i == d && index->ndim ? index->strides[0] : 0;
  vkt_index_err style = add ? VKT_INDEX_ERR_BOUNDS : VKT_INDEX_ERR_COPY;
  return scatter(&x1, d, &iv, &s1, add, &(vkt_index_check){&iv, x1.shape[d], d, style, false});
}

vkt_status vkt_index_copy_(const vkt_tensor *x, int64_t dim, const vkt_tensor *index, const vkt_tensor *source,
                           bool add) {
  int d = 0;
  vkt_status st = vkt_dim_wrap(dim, x->ndim, &d);
  if (!st)
    st = add ? index_add_check(x, d, index, source) : index_copy_check(x, d, index, source);
  return st ? st : index_write(x, d, index, source, add);
}

vkt_status vkt_masked_scatter_(const vkt_tensor *x, const vkt_tensor *mask, const vkt_tensor *source) {
  vkt_tensor me = {0}, cm = {0}, c = {0}, flat = {0}, head = {0};
  uint8_t *bits = NULL;
  int64_t n = vkt_tensor_numel(x), count = 0, total = vkt_tensor_numel(source);
  vkt_status st = vkt_same_device(3, (const vkt_tensor *[]){x, mask, source}, NULL);
  if (!st && mask->dtype != VKT_BOOL)
    st = vkt_fail(VKT_ERR_RUNTIME, "masked_scatter_ only supports boolean masks, but got mask with dtype %s",
                  vkt_dtypes[mask->dtype].name);
  if (!st && source->dtype != x->dtype)
    st = vkt_fail(VKT_ERR_RUNTIME, "masked_scatter: expected self and source to have same dtypes but got%s and %s",
                  vkt_dtypes[x->dtype].torch_name, vkt_dtypes[source->dtype].torch_name); /* sic: no space */
  if (st || (st = vkt_expand(&me, mask, x->ndim, x->shape)) || (st = vkt_contiguous(&cm, &me)))
    goto finish;
  if (!(bits = malloc((size_t)n + 1))) {
    st = vkt_fail(VKT_ERR_NOMEM, "out of host memory");
    goto finish;
  }
  if (n && (st = vkt_read(&cm, bits)))
    goto finish;
  for (int64_t i = 0; i < n; i++)
    count += bits[i] != 0;
  if (count > total) {
    st = vkt_fail(VKT_ERR_RUNTIME, "Number of elements of source < number of ones in mask");
    goto finish;
  }
  const vkt_tensor *m = &cm;
  if (!(st = vkt_contiguous(&c, source)) && !(st = vkt_view(&flat, &c, 1, &total)) &&
      !(st = vkt_slice(&head, &flat, 0, 0, count, 1)))
    st = vkt_index_put_(x, 1, &m, &head, false);
finish:
  free(bits);
  vkt_tensor *owned[] = {&me, &cm, &c, &flat, &head};
  for (int k = 0; k < 5; k++)
    vkt_tensor_release(owned[k]);
  return st;
}

vkt_status vkt_index_fill_(const vkt_tensor *x, int64_t dim, const vkt_tensor *index, const vkt_tensor *value) {
  adv a = {.n = 1};
  vkt_tensor lin = {0}, v = {0}, spread = {0};
  int d = 0, bn = 0;
  int64_t bshape[VKT_MAX_DIMS];
  vkt_status st;
  if ((st = vkt_same_device(2, (const vkt_tensor *[]){x, index}, NULL)) || (st = index_dtype("index_fill_", index)) ||
      (st = vkt_dim_wrap(dim, x->ndim, &d)))
    return st;
  if (index->ndim > 1)
    return vkt_fail(VKT_ERR_INDEX, "index_fill_(): Index is supposed to be a vector");
  if (value->ndim != 0)
    return vkt_fail(VKT_ERR_RUNTIME,
                    "index_fill_ only supports a 0-dimensional value tensor, but got tensor with %d "
                    "dimension(s).",
                    value->ndim);
  vkt_tensor x1 = *x;
  if (x1.ndim == 0)
    x1.ndim = 1, x1.shape[0] = 1, x1.strides[0] = 1;
  a.dims[0] = d;
  vkt_tensor_share(&a.idx[0], index);
  int64_t shape[VKT_MAX_DIMS];
  memcpy(shape, x1.shape, sizeof *shape * (size_t)x1.ndim);
  shape[d] = vkt_tensor_numel(index);
  if (!(st = adv_linear(&x1, &a, VKT_INDEX_ERR_INDEXING, true, &bn, bshape, &lin)) &&
      !(st = vkt_to(&v, value, vkt_tensor_device(x), x->dtype)) && !(st = vkt_expand(&spread, &v, x1.ndim, shape)))
    st = index_write(&x1, d, &lin, &spread, false);
  adv_release(&a);
  vkt_tensor_release(&lin);
  vkt_tensor_release(&v);
  vkt_tensor_release(&spread);
  return st;
}
