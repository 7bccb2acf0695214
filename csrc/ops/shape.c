/* shape.c: the shape family's front-ends (checks, output allocation, views) and the launches of shape.glsl's
 * shaders: gather.comp for gather and index_select, tri.comp for tril and triu, index.comp and
 * scatter.comp for index.c's ops (combining atomically, or sorted: deterministic), the strided copy for flip; and
 * the error word those shaders set on a bad index. cat, stack, split, chunk, roll and assignment are views and
 * vkt_copy_, with no shader of their own. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/iter.h"
#include "scan.h"
#include "shape.h"
#include "table.h"

/* ---- checks shared by the front-ends ---- */

/* A 0-d tensor seen as shape [1] (borrowed storage), so kernels always have a dim to index. */
static vkt_tensor as_1d(const vkt_tensor *t) {
  vkt_tensor v = *t;
  if (t->ndim == 0)
    v.ndim = 1, v.shape[0] = 1, v.strides[0] = 1;
  return v;
}

/* ---- split and chunk: views ---- */

vkt_status vkt_split_with_sizes(const vkt_tensor *x, int64_t dim, int64_t n, const int64_t *sizes, vkt_tensor *outs) {
  int d = 0;
  char s[512];
  if (x->ndim == 0)
    return vkt_fail(VKT_ERR_RUNTIME, "split expects at least a 1-dimensional tensor");
  vkt_status st = vkt_dim_wrap(dim, x->ndim, &d);
  if (st)
    return st;
  int64_t total = 0;
  bool negative = false;
  for (int64_t i = 0; i < n; i++)
    total += sizes[i], negative = negative || sizes[i] < 0;
  vkt_shape_str(n < VKT_MAX_DIMS ? (int)n : VKT_MAX_DIMS, sizes, s, sizeof s);
  if (negative)
    return vkt_fail(VKT_ERR_RUNTIME,
                    "split_with_sizes expects split_sizes have only non-negative entries, but got split_sizes=%s", s);
  if (total != x->shape[d])
    return vkt_fail(VKT_ERR_RUNTIME,
                    "split_with_sizes expects split_sizes to sum exactly to %lld (input tensor's size at dimension "
                    "%d), but got split_sizes=%s",
                    (long long)x->shape[d], d, s);
  for (int64_t i = 0, start = 0; i < n; start += sizes[i++])
    vkt_slice(&outs[i], x, d, start, start + sizes[i], 1);
  return VKT_OK;
}

static vkt_status pieces(int64_t n, int64_t size, int64_t last, int64_t **sizes, int64_t *count) {
  *sizes = malloc(sizeof **sizes * (size_t)n);
  if (!*sizes)
    return vkt_fail(VKT_ERR_NOMEM, "out of host memory");
  for (int64_t i = 0; i < n; i++)
    (*sizes)[i] = size;
  (*sizes)[n - 1] = last;
  *count = n;
  return VKT_OK;
}

vkt_status vkt_split_sizes(const vkt_tensor *x, int64_t dim, int64_t split_size, int64_t **sizes, int64_t *n) {
  int d = 0;
  if (x->ndim == 0)
    return vkt_fail(VKT_ERR_RUNTIME, "split expects at least a 1-dimensional tensor");
  vkt_status st = vkt_dim_wrap(dim, x->ndim, &d);
  if (st)
    return st;
  int64_t len = x->shape[d];
  if (split_size < 0)
    return vkt_fail(VKT_ERR_RUNTIME, "split expects split_size be non-negative, but got split_size=%lld",
                    (long long)split_size);
  if (split_size == 0 && len != 0)
    return vkt_fail(VKT_ERR_RUNTIME, "split_size can only be 0 if dimension size is 0, but got dimension size of %lld",
                    (long long)len);
  int64_t count = split_size ? (len + split_size - 1) / split_size : 1;
  count = count < 1 ? 1 : count;
  return pieces(count, split_size, len - split_size * (count - 1), sizes, n);
}

vkt_status vkt_chunk_sizes(const vkt_tensor *x, int64_t dim, int64_t chunks, int64_t **sizes, int64_t *n) {
  int d = 0;
  if (x->ndim == 0)
    return vkt_fail(VKT_ERR_RUNTIME, "chunk expects at least a 1-dimensional tensor");
  if (chunks <= 0)
    return vkt_fail(VKT_ERR_RUNTIME, "chunk expects `chunks` to be greater than 0, got: %lld", (long long)chunks);
  vkt_status st = vkt_dim_wrap(dim, x->ndim, &d);
  if (st)
    return st;
  int64_t len = x->shape[d], size = (len + chunks - 1) / chunks;
  if (len == 0) /* any number of empty pieces adds up to 0: keep the count asked for */
    return pieces(chunks, 0, 0, sizes, n);
  return vkt_split_sizes(x, d, size, sizes, n);
}

/* ---- cat and stack: one copy per input into a slice of the output ---- */

/* PyTorch's legacy rule: a 1-D empty tensor joins tensors of any shape. */
static bool cat_skipped(const vkt_tensor *t) { return t->ndim == 1 && t->shape[0] == 0; }

static vkt_status cat_shape(int n, const vkt_tensor *const *ts, int64_t dim, int *d, int *ndim, int64_t *shape) {
  char a[256], b[256];
  if (n == 0)
    return vkt_fail(VKT_ERR_VALUE, "torch.cat(): expected a non-empty list of Tensors");
  int ref = 0;
  for (int k = n - 1; k >= 0; k--) {
    if (ts[k]->ndim == 0)
      return vkt_fail(VKT_ERR_RUNTIME, "zero-dimensional tensor (at position %d) cannot be concatenated", k);
    ref = cat_skipped(ts[k]) ? ref : k;
  }
  const vkt_tensor *r = ts[ref];
  vkt_status st = vkt_dim_wrap(dim, r->ndim, d);
  if (st)
    return st;
  *ndim = r->ndim;
  memcpy(shape, r->shape, sizeof *shape * (size_t)r->ndim);
  shape[*d] = 0;
  for (int k = 0; k < n; k++) {
    const vkt_tensor *t = ts[k];
    if (cat_skipped(t) && !cat_skipped(r))
      continue;
    if (t->ndim != r->ndim)
      return vkt_fail(VKT_ERR_RUNTIME, "Tensors must have same number of dimensions: got %d and %d", r->ndim, t->ndim);
    for (int i = 0; i < t->ndim; i++)
      if (i != *d && t->shape[i] != r->shape[i]) {
        vkt_shape_str(r->ndim, r->shape, a, sizeof a);
        vkt_shape_str(t->ndim, t->shape, b, sizeof b);
        return vkt_fail(VKT_ERR_RUNTIME,
                        "Sizes of tensors must match except in dimension %d. Expected size %lld but got size %lld for "
                        "tensor number %d in the list (shapes %s and %s)",
                        *d, (long long)r->shape[i], (long long)t->shape[i], k, a, b);
      }
    shape[*d] += t->shape[*d];
  }
  return VKT_OK;
}

/* PyTorch's result type over a list of tensors. */
static vkt_status result_type(int n, const vkt_tensor *const *ts, vkt_dtype *out) {
  vkt_operand *ops = calloc((size_t)n, sizeof *ops);
  if (!ops)
    return vkt_fail(VKT_ERR_NOMEM, "out of host memory");
  for (int k = 0; k < n; k++)
    ops[k].t = ts[k];
  *out = vkt_result_type(n, ops);
  free(ops);
  return VKT_OK;
}

vkt_status vkt_cat(int n, const vkt_tensor *const *ts, int64_t dim, vkt_tensor *out) {
  int d = 0, ndim = 0;
  int64_t shape[VKT_MAX_DIMS];
  vkt_dtype dtype;
  vkt_status st;
  if ((st = cat_shape(n, ts, dim, &d, &ndim, shape)) || (st = vkt_same_device(n, ts, NULL)) ||
      (st = result_type(n, ts, &dtype)) || (st = vkt_tensor_empty(out, vkt_tensor_device(ts[0]), dtype, ndim, shape)))
    return st;
  int64_t start = 0;
  for (int k = 0; k < n && !st; k++) {
    int64_t len = ndim == ts[k]->ndim ? ts[k]->shape[d] : 0;
    if (len == 0)
      continue;
    vkt_tensor part;
    vkt_slice(&part, out, d, start, start + len, 1);
    st = vkt_copy_(&part, ts[k]);
    vkt_tensor_release(&part);
    start += len;
  }
  if (st)
    vkt_tensor_release(out);
  else
    vkt_tensor_take_range(out, n, ts);
  return st;
}

vkt_status vkt_stack(int n, const vkt_tensor *const *ts, int64_t dim, vkt_tensor *out) {
  char a[256], b[256];
  int d;
  vkt_dtype dtype;
  vkt_status st;
  if (n == 0)
    return vkt_fail(VKT_ERR_RUNTIME, "stack expects a non-empty TensorList");
  const vkt_tensor *t0 = ts[0];
  for (int k = 1; k < n; k++)
    if (ts[k]->ndim != t0->ndim || memcmp(ts[k]->shape, t0->shape, sizeof *t0->shape * (size_t)t0->ndim) != 0) {
      vkt_shape_str(t0->ndim, t0->shape, a, sizeof a);
      vkt_shape_str(ts[k]->ndim, ts[k]->shape, b, sizeof b);
      return vkt_fail(VKT_ERR_RUNTIME,
                      "stack expects each tensor to be equal size, but got %s at entry 0 and %s at entry %d", a, b, k);
    }
  if ((st = vkt_dim_wrap(dim, t0->ndim + 1, &d)) || (st = vkt_same_device(n, ts, NULL)) ||
      (st = result_type(n, ts, &dtype)))
    return st;
  if (t0->ndim >= VKT_MAX_DIMS)
    return vkt_fail(VKT_ERR_RUNTIME, "tensors have at most %d dimensions", VKT_MAX_DIMS);
  int64_t shape[VKT_MAX_DIMS];
  for (int i = 0, j = 0; i <= t0->ndim; i++)
    shape[i] = i == d ? n : t0->shape[j++];
  if ((st = vkt_tensor_empty(out, vkt_tensor_device(t0), dtype, t0->ndim + 1, shape)))
    return st;
  for (int k = 0; k < n && !st; k++) {
    vkt_tensor part;
    vkt_select(&part, out, d, k);
    st = vkt_copy_(&part, ts[k]);
    vkt_tensor_release(&part);
  }
  if (st)
    vkt_tensor_release(out);
  else
    vkt_tensor_take_range(out, n, ts);
  return st;
}

/* ---- flip and roll ---- */

vkt_status vkt_flip(const vkt_tensor *x, uint32_t dims, vkt_tensor *out) {
  vkt_tensor view = *x; /* borrows x's storage: x outlives the call */
  for (int d = 0; d < x->ndim; d++)
    if ((dims >> d & 1u) && x->shape[d] > 0) {
      view.offset += (x->shape[d] - 1) * x->strides[d];
      view.strides[d] = -x->strides[d];
    }
  vkt_status st = vkt_tensor_empty(out, vkt_tensor_device(x), x->dtype, x->ndim, x->shape);
  if (st || vkt_tensor_numel(out) == 0)
    return st;
  if ((st = vkt_op_run(VKT_OP_FLIP, &(vkt_op_args){.out = out, .in = {&view}, .nin = 1})))
    vkt_tensor_release(out);
  return st;
}

/* out[s:] = x[:n-s] and out[:s] = x[n-s:] along d. */
static vkt_status roll_dim(const vkt_tensor *x, int d, int64_t shift, vkt_tensor *out) {
  int64_t n = x->shape[d], s = n ? (shift % n + n) % n : 0;
  vkt_tensor parts[4] = {0};
  vkt_status st = vkt_tensor_empty(out, vkt_tensor_device(x), x->dtype, x->ndim, x->shape);
  if (st)
    return st;
  vkt_slice(&parts[0], out, d, s, n, 1);
  vkt_slice(&parts[1], x, d, 0, n - s, 1);
  vkt_slice(&parts[2], out, d, 0, s, 1);
  vkt_slice(&parts[3], x, d, n - s, n, 1);
  if (!(st = vkt_copy_(&parts[0], &parts[1])))
    st = vkt_copy_(&parts[2], &parts[3]);
  for (int k = 0; k < 4; k++)
    vkt_tensor_release(&parts[k]);
  if (st)
    vkt_tensor_release(out);
  return st;
}

static vkt_status roll_flat(const vkt_tensor *x, int64_t shift, vkt_tensor *out) {
  vkt_tensor c = {0}, flat = {0}, rolled = {0};
  int64_t n = vkt_tensor_numel(x);
  vkt_status st;
  if (!(st = vkt_contiguous(&c, x)) && !(st = vkt_view(&flat, &c, 1, &n)) && !(st = roll_dim(&flat, 0, shift, &rolled)))
    st = vkt_view(out, &rolled, x->ndim, x->shape);
  vkt_tensor_release(&c);
  vkt_tensor_release(&flat);
  vkt_tensor_release(&rolled);
  return st;
}

vkt_status vkt_roll(const vkt_tensor *x, int n, const int64_t *shifts, int ndims, const int64_t *dims,
                    vkt_tensor *out) {
  if (ndims == 0 && n == 1)
    return roll_flat(x, shifts[0], out);
  if (n != ndims)
    return vkt_fail(VKT_ERR_RUNTIME, "shifts and dimensions must align. shifts: %d, dims:%d", n, ndims);
  vkt_tensor cur, next;
  vkt_status st = VKT_OK;
  vkt_tensor_share(&cur, x);
  for (int k = 0; k < n && !st; k++) {
    int d = 0;
    if (!(st = vkt_dim_wrap(dims[k], x->ndim, &d)) && x->ndim == 0)
      st = roll_flat(&cur, shifts[k], &next);
    else if (!st)
      st = roll_dim(&cur, d, shifts[k], &next);
    if (!st) {
      vkt_tensor_release(&cur);
      cur = next;
    }
  }
  if (st)
    vkt_tensor_release(&cur);
  else
    *out = cur;
  return st;
}

/* ---- tril, triu, gather, index_select ---- */

vkt_status vkt_tri(const vkt_tensor *x, bool upper, int64_t diagonal, vkt_tensor *out) {
  if (x->ndim < 2)
    return vkt_fail(VKT_ERR_RUNTIME, "%s: input tensor must have at least 2 dimensions", upper ? "triu" : "tril");
  vkt_status st = vkt_tensor_empty(out, vkt_tensor_device(x), x->dtype, x->ndim, x->shape);
  if (st || vkt_tensor_numel(out) == 0)
    return st;
  vkt_op_args a = {.out = out, .in = {x}, .nin = 1, .iparam = {diagonal}};
  if ((st = vkt_op_run(upper ? VKT_OP_TRIU : VKT_OP_TRIL, &a)))
    vkt_tensor_release(out);
  return st;
}

vkt_status vkt_index_error(vkt_index_err style, int64_t k, int d, int64_t size) {
  long long kk = (long long)k, n = (long long)size;
  switch (style) {
  case VKT_INDEX_ERR_SELF: return vkt_fail(VKT_ERR_INDEX, "index out of range in self");
  case VKT_INDEX_ERR_TAKE:
    return vkt_fail(VKT_ERR_INDEX, "out of range: tried to access index %lld on a tensor of %lld elements.", kk, n);
  case VKT_INDEX_ERR_COPY:
    return vkt_fail(VKT_ERR_INDEX, "index_copy_(): index %lld is out of bounds for dimension %d with size %lld", kk, d,
                    n);
  default:
    return vkt_fail(style == VKT_INDEX_ERR_BOUNDS ? VKT_ERR_RUNTIME : VKT_ERR_INDEX,
                    "index %lld is out of bounds for dimension %d with size %lld", kk, d, n);
  }
}

vkt_status vkt_index_flag_new(const vkt_tensor *like, vkt_tensor *flag) {
  *flag = (vkt_tensor){0};
  if (vkt_tensor_device(like) == VKT_CPU)
    return VKT_OK;
  vkt_status st = vkt_tensor_empty(flag, vkt_tensor_device(like), VKT_INT32, 0, NULL);
  if (!st && (st = vkt_fill_(flag, (vkt_scalar){false, 0, 0})))
    vkt_tensor_release(flag);
  return st;
}

vkt_status vkt_index_flag_check(const vkt_tensor *flag, int n, const vkt_index_check *checks) {
  int32_t set = 0;
  bool known = true; /* every index known on the host to lie inside: no need to read the word back */
  for (int c = 0; c < n && known; c++)
    known = vkt_tensor_known_within(checks[c].index, checks[c].negatives ? -checks[c].size : 0, checks[c].size);
  vkt_status st = flag->storage && !known ? vkt_read(flag, &set) : VKT_OK;
  for (int c = 0; c < n && !st && set; c++) { /* the first bad index, in order, names the error */
    vkt_tensor h = {0};
    if ((st = vkt_host_view(checks[c].index, &h)))
      break;
    int64_t count = vkt_tensor_numel(&h), lo = checks[c].negatives ? -checks[c].size : 0;
    vkt_iter it;
    vkt_iter_init(&it, 1, (const vkt_tensor *[]){&h});
    for (int64_t e = 0; e < count && !st; e++, vkt_iter_next(&it)) {
      int64_t k = h.dtype == VKT_INT64 ? *(const int64_t *)it.ptr[0] : *(const int32_t *)it.ptr[0];
      if (k < lo || k >= checks[c].size)
        st = vkt_index_error(checks[c].style, k, checks[c].dim, checks[c].size);
    }
    vkt_tensor_release(&h);
  }
  return st;
}

vkt_status vkt_index_run_checked(vkt_op_id id, vkt_op_args *a, const vkt_index_check *check) {
  vkt_tensor flag;
  vkt_status st = vkt_index_flag_new(a->out, &flag);
  a->out2 = flag.storage ? &flag : NULL;
  if (!st && !(st = vkt_op_run(id, a)) && check)
    st = vkt_index_flag_check(&flag, 1, check);
  vkt_tensor_release(&flag);
  return st;
}

/* Allocates out (shape, ndim of them) and runs gather.comp's row id: out[c] = x[c, c[d] = index[c]],
 * with index already a view of out's shape. checked: read the error word back (a wait). */
static vkt_status run_gather(int id, const vkt_tensor *x, const vkt_tensor *index, int d, int ndim,
                             const int64_t *shape, bool checked, vkt_tensor *out) {
  vkt_status st = vkt_tensor_empty(out, vkt_tensor_device(x), x->dtype, ndim, shape);
  if (st || vkt_tensor_numel(out) == 0)
    return st;
  vkt_tensor o = as_1d(out), x1 = as_1d(x), i1 = as_1d(index);
  vkt_index_err style = id == VKT_OP_INDEX_SELECT ? VKT_INDEX_ERR_SELF : VKT_INDEX_ERR_BOUNDS;
  vkt_op_args a = {.out = &o, .in = {&x1, &i1}, .nin = 2, .iparam = {d}, .flags = style};
  if ((st = vkt_index_run_checked(id, &a, checked ? &(vkt_index_check){&i1, x1.shape[d], d, style, false} : NULL)))
    vkt_tensor_release(out);
  else
    vkt_tensor_take_range(out, 1, &x);
  return st;
}

static vkt_status index_dtype(const char *op, const vkt_tensor *index) {
  if (index->dtype != VKT_INT64 && index->dtype != VKT_INT32)
    return vkt_fail(VKT_ERR_RUNTIME, "%s(): Expected dtype int32/int64 for index", op);
  return VKT_OK;
}

vkt_status vkt_gather(const vkt_tensor *x, int64_t dim, const vkt_tensor *index, vkt_tensor *out) {
  char a[256], b[256];
  int d = 0;
  vkt_status st;
  if ((st = vkt_same_device(2, (const vkt_tensor *[]){x, index}, NULL)) || (st = index_dtype("gather", index)) ||
      (st = vkt_dim_wrap(dim, x->ndim, &d)))
    return st;
  if ((index->ndim ? index->ndim : 1) != (x->ndim ? x->ndim : 1))
    return vkt_fail(VKT_ERR_RUNTIME, "Index tensor must have the same number of dimensions as input tensor");
  for (int i = 0; i < index->ndim && i < x->ndim; i++)
    if (i != d && index->shape[i] > x->shape[i]) {
      vkt_shape_str(index->ndim, index->shape, a, sizeof a);
      vkt_shape_str(x->ndim, x->shape, b, sizeof b);
      return vkt_fail(VKT_ERR_RUNTIME,
                      "Size does not match at dimension %d expected index %s to be smaller than self %s apart from "
                      "dimension %d",
                      i, a, b, d);
    }
  return run_gather(VKT_OP_GATHER, x, index, d, index->ndim, index->shape, true, out);
}

static vkt_status index_select(const vkt_tensor *x, int64_t dim, const vkt_tensor *index, bool checked,
                               vkt_tensor *out) {
  int d = 0;
  vkt_status st;
  if ((st = vkt_same_device(2, (const vkt_tensor *[]){x, index}, NULL)))
    return st;
  if (index->ndim > 1)
    return vkt_fail(VKT_ERR_INDEX, "index_select(): Index is supposed to be a vector");
  if (index->dtype != VKT_INT64 && index->dtype != VKT_INT32)
    return vkt_fail(VKT_ERR_RUNTIME, "index_select(): Expected dtype int32 or int64 for index, but got %s",
                    vkt_dtypes[index->dtype].name);
  if ((st = vkt_dim_wrap(dim, x->ndim, &d)))
    return st;
  int64_t k = vkt_tensor_numel(index);
  if (x->ndim == 0 && k != 1)
    return vkt_fail(VKT_ERR_RUNTIME, "index_select(): Index to scalar can have only 1 value, got %lld value(s)",
                    (long long)k);
  vkt_tensor x1 = as_1d(x), iv = x1; /* index seen with out's shape: stride 0 except along d */
  iv.storage = index->storage, iv.dtype = index->dtype, iv.offset = index->offset;
  iv.shape[d] = k;
  for (int i = 0; i < iv.ndim; i++)
    iv.strides[i] = i == d && index->ndim ? index->strides[0] : 0;
  return run_gather(VKT_OP_INDEX_SELECT, &x1, &iv, d, x->ndim, iv.shape, checked, out);
}

vkt_status vkt_index_select(const vkt_tensor *x, int64_t dim, const vkt_tensor *index, vkt_tensor *out) {
  return index_select(x, dim, index, true, out);
}

vkt_status vkt_index_select_trusted(const vkt_tensor *x, int64_t dim, const vkt_tensor *index, vkt_tensor *out) {
  return index_select(x, dim, index, false, out);
}

/* ---- masked_fill and assignment ---- */

vkt_status vkt_masked_fill(const vkt_tensor *x, const vkt_tensor *mask, const vkt_tensor *value, vkt_scalar v,
                           bool inplace, vkt_tensor *out) {
  vkt_tensor fill = {0}, r = {0};
  vkt_status st;
  if (mask->dtype != VKT_BOOL)
    return vkt_fail(VKT_ERR_RUNTIME, "masked_fill_ only supports boolean masks, but got mask with dtype %s",
                    vkt_dtypes[mask->dtype].name);
  if (value && value->ndim != 0)
    return vkt_fail(VKT_ERR_RUNTIME,
                    "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with %d "
                    "dimension(s).",
                    value->ndim);
  if ((st = vkt_same_device(2, (const vkt_tensor *[]){x, mask}, NULL)) ||
      (st = value ? vkt_value_check(x->dtype, value) : vkt_scalar_check(x->dtype, v)) ||
      (st = vkt_tensor_empty(&fill, vkt_tensor_device(x), x->dtype, 0, NULL)) ||
      (st = value ? vkt_copy_(&fill, value) : vkt_fill_(&fill, v)) ||
      (st = vkt_where(mask, (vkt_operand){.t = &fill}, (vkt_operand){.t = x}, &r)))
    goto finish;
  if (!inplace) {
    *out = r, r.storage = NULL;
  } else if (!(st = vkt_into_shape_check(x, r.ndim, r.shape))) {
    st = vkt_copy_(x, &r);
  }
finish:
  vkt_tensor_release(&fill);
  vkt_tensor_release(&r);
  return st;
}

static bool overlaps(const vkt_tensor *a, const vkt_tensor *b) {
  int64_t alo, ahi, blo, bhi;
  if (a->storage != b->storage)
    return false;
  vkt_tensor_extent(a, &alo, &ahi);
  vkt_tensor_extent(b, &blo, &bhi);
  int sa = vkt_dtype_size(a->dtype), sb = vkt_dtype_size(b->dtype);
  return alo * sa < bhi * sb && blo * sb < ahi * sa;
}

vkt_status vkt_assign(const vkt_tensor *dst, const vkt_tensor *src) {
  char a[256], b[256];
  vkt_tensor e = {0}, c = {0};
  vkt_status st = VKT_OK;
  for (int i = 0; i < dst->ndim; i++)
    if (dst->strides[i] == 0 && dst->shape[i] > 1 && vkt_tensor_numel(dst) > 0) /* an empty one writes nothing */
      return vkt_fail(VKT_ERR_RUNTIME, "unsupported operation: more than one element of the written-to tensor "
                                       "refers to a single memory location. Please clone() the tensor before "
                                       "performing the operation.");
  vkt_tensor s = *src; /* leading size-1 dims beyond dst's rank drop, as PyTorch's setitem does */
  while (s.ndim > dst->ndim && s.shape[0] == 1) {
    s.ndim--;
    memmove(s.shape, s.shape + 1, sizeof *s.shape * (size_t)s.ndim);
    memmove(s.strides, s.strides + 1, sizeof *s.strides * (size_t)s.ndim);
  }
  if (vkt_expand(&e, &s, dst->ndim, dst->shape)) {
    vkt_shape_str(src->ndim, src->shape, a, sizeof a);
    vkt_shape_str(dst->ndim, dst->shape, b, sizeof b);
    return vkt_fail(VKT_ERR_RUNTIME,
                    "shape mismatch: value tensor of shape %s cannot be broadcast to indexing result "
                    "of shape %s",
                    a, b);
  }
  if (overlaps(dst, &e))
    st = vkt_clone(&c, &e);
  if (!st)
    st = vkt_copy_(dst, c.storage ? &c : &e);
  vkt_tensor_release(&c);
  vkt_tensor_release(&e);
  return st;
}

/* ---- the shader path ---- */

#define SHAPE_MAX_RANK 6
#define COPY_MAX_RANK 8 /* copy.comp's */

typedef struct {
  uint32_t n, rank, offset[3]; /* elements: out, in, index */
  int32_t param;               /* tril/triu: the diagonal; gather and scatter: the dim indexed */
  uint32_t limit;              /* gather and scatter: the size along that dim; index_wrap: the dim's size */
  uint32_t shape[SHAPE_MAX_RANK];
  uint32_t stride[3 * SHAPE_MAX_RANK]; /* elements, operand-major; may wrap (negative) */
} shape_push;
static_assert(sizeof(shape_push) == 124, "shape_push must match shaders/shape.glsl");

/* What a launch of one of shape.glsl's shaders walks: the tensor whose elements the invocations are
 * (iter), the three operands of the push constants (out, in, index; NULL where unused), the dim param
 * and limit, and the storage buffers bound in order (the error word last, where the op has one). */
typedef struct {
  const vkt_tensor *iter, *t[3], *bind[4];
  int nbind;
  int64_t param, limit;
} geometry;

static geometry geometry_of(const vkt_op *op, const vkt_op_args *a) {
  geometry g = {.iter = a->out, .t = {a->out, a->in[0], a->in[1]}, .param = a->iparam[0]};
  switch ((vkt_op_id)(op - vkt_ops)) {
  case VKT_OP_GATHER:
  case VKT_OP_INDEX_SELECT: g.limit = a->in[0]->shape[a->iparam[0]]; break;
  case VKT_OP_INDEX_WRAP: g.t[2] = NULL, g.limit = a->iparam[0], g.param = 0; break;
  case VKT_OP_SCATTER:
  case VKT_OP_SCATTER_ADD:
  case VKT_OP_SCATTER_PROD:
  case VKT_OP_SCATTER_AMAX:
  case VKT_OP_SCATTER_AMIN: /* invocations over index's shape; out keeps its own strides */
    g.iter = a->in[1], g.t[1] = a->in[2], g.t[2] = a->in[1], g.limit = a->out->shape[a->iparam[0]];
    break;
  default: g.t[2] = NULL; break;
  }
  for (int k = 0; k < 3; k++)
    if (g.t[k])
      g.bind[g.nbind++] = g.t[k];
  if (a->out2)
    g.bind[g.nbind++] = a->out2;
  return g;
}

bool vkt_shape_supports(const vkt_op *op, const vkt_op_args *a, const char **why) {
  const vkt_tensor *t[3] = {a->out, a->in[0], a->in[1]};
  const vkt_adapter_props *p = vkt_device_props(a->out->storage->dev);
  if (op == &vkt_ops[VKT_OP_FLIP]) { /* the conditions of vkt_copy_'s shader path */
    int64_t shape[VKT_MAX_DIMS], strides[2 * VKT_MAX_DIMS];
    *why = "more than 8 dimensions that cannot be merged";
    return vkt_merge_dims(2, t, shape, strides) <= COPY_MAX_RANK;
  }
  geometry g = geometry_of(op, a);
  for (int k = 0; k < g.nbind; k++)
    if (!vkt_dtype_storable(p, g.bind[k]->dtype, why) || !vkt_bindable(g.bind[k], why))
      return false;
  if (op == &vkt_ops[VKT_OP_INDEX_WRAP] && !p->int64) {
    *why = "the adapter has no shaderInt64";
    return false;
  }
  *why = "more than 2^32 elements";
  if (vkt_tensor_numel(g.iter) > UINT32_MAX || g.limit > UINT32_MAX)
    return false;
  *why = "more than 6 dimensions";
  return g.iter->ndim <= SHAPE_MAX_RANK;
}

static void shape_push_fill(const geometry *g, shape_push *p) {
  *p = (shape_push){.n = (uint32_t)vkt_tensor_numel(g->iter),
                    .rank = (uint32_t)g->iter->ndim,
                    .param = (int32_t)(g->param < -INT32_MAX  ? -INT32_MAX
                                       : g->param > INT32_MAX ? INT32_MAX
                                                              : g->param),
                    .limit = (uint32_t)g->limit};
  for (int k = 0; k < 3; k++) {
    if (!g->t[k])
      continue;
    p->offset[k] = (uint32_t)g->t[k]->offset;
    for (int d = 0; d < g->iter->ndim; d++)
      p->stride[k * SHAPE_MAX_RANK + d] = (uint32_t)g->t[k]->strides[d];
  }
  for (int d = 0; d < g->iter->ndim; d++)
    p->shape[d] = (uint32_t)g->iter->shape[d];
}

/* The defines of a launch of shape.glsl's shader for op: its dtype's, its index's, and mode's. */
static void shape_defines(const vkt_op *op, const vkt_op_args *a, const vkt_tensor *index, const char *mode, char *buf,
                          size_t size) {
  snprintf(buf, size, "#define ITEMSIZE %d\n%s%s%s%s", vkt_dtype_size(a->out->dtype), op->define, mode,
           index && index->dtype == VKT_INT64 ? "#define INDEX64\n" : "",
           a->out->dtype == VKT_INT32   ? "#define ADD_INT\n"
           : a->out->dtype == VKT_INT64 ? "#define IS_INT64\n"
           : a->out->dtype == VKT_BOOL  ? "#define IS_BOOL\n"
                                        : "");
}

/* Whether a combining scatter takes the sorted path: always in deterministic mode, where atomics would add floats in
 * whatever order the GPU ran them; and for 8-byte elements where the adapter has no 64-bit atomics. Else atomics,
 * which cost one pass where the sorted path costs a sort and two. */
static bool scatter_sorts(vkt_op_id id, const vkt_op_args *a) {
  bool combines =
      id == VKT_OP_SCATTER_ADD || id == VKT_OP_SCATTER_PROD || id == VKT_OP_SCATTER_AMAX || id == VKT_OP_SCATTER_AMIN;
  return combines && (vkt_deterministic() ||
                      (vkt_dtype_size(a->out->dtype) == 8 && !vkt_device_props(a->out->storage->dev)->int64_atomics));
}

/* The sorted scatter, a segmented reduction: scatter.comp's KEYS writes the destination of each element of index
 * (its offset in out's buffer), the stable sort groups equal destinations keeping index order, and SEGMENTS gives
 * each run one invocation, which combines out's value with the run's src elements one by one in index order and
 * writes it once. That is the CPU kernel's order (row-major over index), so results are the CPU's bit for bit. */
static vkt_status scatter_sorted(const vkt_op *op, const vkt_op_args *a, const shape_push *push) {
  vkt_tensor keys = {0}, sorted = {0}, order = {0};
  const vkt_tensor *index = a->in[1], *src = a->in[2];
  int64_t n = push->n;
  char defines[192];
  snprintf(defines, sizeof defines, "#define KEYS\n#define ITEMSIZE 4\n%s",
           index->dtype == VKT_INT64 ? "#define INDEX64\n" : "");
  vkt_status st = vkt_tensor_empty(&keys, vkt_tensor_device(a->out), VKT_INT32, 1, &n);
  if (st ||
      (st = vkt_launch_flat(op->shader, defines, 4, (const vkt_tensor *[]){&keys, src, index, a->out2}, 0x9u, push,
                            sizeof *push, push->n)) ||
      (st = vkt_sort(&keys, 0, false, &sorted, &order)))
    goto finish;
  shape_defines(op, a, NULL, "#define SEGMENTS\n", defines, sizeof defines);
  st = vkt_launch_flat(op->shader, defines, 4, (const vkt_tensor *[]){a->out, src, &sorted, &order}, 0x1u, push,
                       sizeof *push, push->n);
finish:
  vkt_tensor_release(&keys); /* freed in stream order: reused only once the GPU is done with them */
  vkt_tensor_release(&sorted);
  vkt_tensor_release(&order);
  return st;
}

vkt_status vkt_shape_launch(const vkt_op *op, const vkt_op_args *a) {
  if (op == &vkt_ops[VKT_OP_FLIP]) /* the strided copy from a view with negative strides */
    return vkt_copy_(a->out, a->in[0]);
  geometry g = geometry_of(op, a);
  shape_push push;
  shape_push_fill(&g, &push);
  if (scatter_sorts((vkt_op_id)(op - vkt_ops), a))
    return scatter_sorted(op, a, &push);
  const vkt_tensor *index = g.t[2] ? g.t[2] : op == &vkt_ops[VKT_OP_INDEX_WRAP] ? a->in[0] : NULL;
  char defines[192];
  bool float_atomic = a->out->dtype == VKT_FLOAT32 && vkt_device_props(a->out->storage->dev)->float32_atomic_add;
  shape_defines(op, a, index, float_atomic ? "#define FLOAT_ATOMIC\n" : "", defines, sizeof defines);
  unsigned writes = 1u;
  for (int k = 1; k < g.nbind; k++)
    writes |= (g.bind[k] == a->out2) << k;
  return vkt_launch_flat(op->shader, defines, g.nbind, g.bind, writes, &push, sizeof push, push.n);
}
