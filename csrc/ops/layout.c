/* layout.c: PyTorch's composite layout ops, each views (narrow, movedim, unflatten, diagonal,
 * broadcast_to, atleast_Nd) or views and one strided copy (repeat, tile, repeat_interleave, rot90, diag,
 * diag_embed), built from vkt's view functions and vkt_copy_, with no shader of their own; and resize_. */
#include <stdlib.h>
#include <string.h>

#include "fuse.h"
#include "shape.h"

vkt_status vkt_narrow(vkt_tensor *out, const vkt_tensor *x, int64_t dim, int64_t start, int64_t length) {
  int d = 0;
  vkt_status st;
  if (x->ndim == 0)
    return vkt_fail(VKT_ERR_RUNTIME, "narrow() cannot be applied to a 0-dim tensor.");
  if ((st = vkt_dim_wrap(dim, x->ndim, &d)))
    return st;
  int64_t size = x->shape[d];
  if (start < -size || start > size)
    return vkt_fail(VKT_ERR_INDEX, "start out of range (expected to be in range of [%lld, %lld], but got %lld)",
                    (long long)-size, (long long)size, (long long)start);
  if (start < 0)
    start += size;
  if (length < 0)
    return vkt_fail(VKT_ERR_RUNTIME, "narrow(): length must be non-negative.");
  if (start > size - length)
    return vkt_fail(VKT_ERR_RUNTIME, "start (%lld) + length (%lld) exceeds dimension size (%lld).", (long long)start,
                    (long long)length, (long long)size);
  return vkt_slice(out, x, d, start, start + length, 1);
}

vkt_status vkt_movedim(vkt_tensor *out, const vkt_tensor *x, int n, const int64_t *src, const int64_t *dst) {
  int64_t perm[VKT_MAX_DIMS];
  bool used[VKT_MAX_DIMS] = {0}, placed[VKT_MAX_DIMS] = {0};
  int nd = x->ndim ? x->ndim : 1;
  vkt_status st = VKT_OK;
  for (int k = 0; k < n && !st; k++) {
    int s = 0, t = 0;
    if ((st = vkt_dim_wrap(src[k], nd, &s)) || (st = vkt_dim_wrap(dst[k], nd, &t)))
      break;
    if (used[s] || placed[t])
      st = vkt_fail(VKT_ERR_RUNTIME, "movedim: repeated dim in `%s`", used[s] ? "source" : "destination");
    used[s] = placed[t] = true, perm[t] = s;
  }
  if (st || x->ndim == 0) {
    if (!st)
      vkt_tensor_share(out, x);
    return st;
  }
  for (int t = 0, s = 0; t < x->ndim; t++) {
    if (placed[t])
      continue;
    while (used[s])
      s++;
    perm[t] = s++;
  }
  return vkt_permute(out, x, x->ndim, perm);
}

vkt_status vkt_unflatten(vkt_tensor *out, const vkt_tensor *x, int64_t dim, int n, const int64_t *sizes) {
  int d = 0;
  int64_t shape[VKT_MAX_DIMS];
  vkt_status st;
  if (x->ndim == 0)
    return vkt_fail(VKT_ERR_RUNTIME, "unflatten: Dimension size must be non-zero for a 0-dim tensor");
  if ((st = vkt_dim_wrap(dim, x->ndim, &d)))
    return st;
  if (n == 0)
    return vkt_fail(VKT_ERR_RUNTIME, "unflatten: sizes must be non-empty");
  if (x->ndim - 1 + n > VKT_MAX_DIMS)
    return vkt_fail(VKT_ERR_RUNTIME, "tensors have at most %d dimensions", VKT_MAX_DIMS);
  memcpy(shape, sizes, sizeof *shape * (size_t)n);
  if ((st = vkt_infer_shape(x->shape[d], n, shape)))
    return st;
  int64_t full[VKT_MAX_DIMS];
  int r = 0;
  for (int i = 0; i < x->ndim; i++) {
    if (i != d) {
      full[r++] = x->shape[i];
      continue;
    }
    for (int k = 0; k < n; k++)
      full[r++] = shape[k];
  }
  return vkt_view(out, x, r, full);
}

vkt_status vkt_diagonal(vkt_tensor *out, const vkt_tensor *x, int64_t offset, int64_t dim1, int64_t dim2) {
  int a = 0, b = 0;
  vkt_status st;
  if ((st = vkt_dim_wrap(dim1, x->ndim, &a)) || (st = vkt_dim_wrap(dim2, x->ndim, &b)))
    return st;
  if (a == b)
    return vkt_fail(VKT_ERR_RUNTIME, "diagonal dimensions cannot be identical %lld, %lld", (long long)dim1,
                    (long long)dim2);
  int64_t la = offset >= 0 ? x->shape[a] : x->shape[a] + offset, lb = offset >= 0 ? x->shape[b] - offset : x->shape[b];
  int64_t len = la < lb ? la : lb;
  len = len < 0 ? 0 : len;
  vkt_tensor_share(out, x);
  if (len > 0)
    out->offset += offset >= 0 ? offset * x->strides[b] : -offset * x->strides[a];
  out->ndim = 0;
  for (int i = 0; i < x->ndim; i++)
    if (i != a && i != b) {
      out->shape[out->ndim] = x->shape[i];
      out->strides[out->ndim++] = x->strides[i];
    }
  out->shape[out->ndim] = len;
  out->strides[out->ndim++] = x->strides[a] + x->strides[b];
  return VKT_OK;
}

/* x with leading size-1 dims up to ndim (no copy). */
static vkt_tensor padded(const vkt_tensor *x, int ndim) {
  vkt_tensor v = *x;
  int pad = ndim - x->ndim;
  v.ndim = ndim;
  for (int i = ndim - 1; i >= 0; i--) {
    v.shape[i] = i >= pad ? x->shape[i - pad] : 1;
    v.strides[i] = i >= pad ? x->strides[i - pad] : 0;
  }
  return v;
}

vkt_status vkt_repeat(vkt_tensor *out, const vkt_tensor *x, int n, const int64_t *reps) {
  if (n < x->ndim)
    return vkt_fail(VKT_ERR_RUNTIME,
                    "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor");
  if (2 * n > VKT_MAX_DIMS)
    return vkt_fail(VKT_ERR_RUNTIME, "repeat: at most %d dims", VKT_MAX_DIMS / 2);
  for (int i = 0; i < n; i++)
    if (reps[i] < 0)
      return vkt_fail(VKT_ERR_RUNTIME,
                      "Trying to create tensor with negative dimension %lld: repeats must be "
                      "non-negative",
                      (long long)reps[i]);
  vkt_tensor p = padded(x, n), spread = p, c = {0};
  int64_t shape[VKT_MAX_DIMS];
  spread.ndim = 2 * n; /* [r0, s0, r1, s1, ...] with stride 0 along each r */
  for (int i = 0; i < n; i++) {
    spread.shape[2 * i] = reps[i], spread.strides[2 * i] = 0;
    spread.shape[2 * i + 1] = p.shape[i], spread.strides[2 * i + 1] = p.strides[i];
    shape[i] = reps[i] * p.shape[i];
  }
  vkt_status st = vkt_clone(&c, &spread);
  if (!st)
    st = vkt_view(out, &c, n, shape);
  vkt_tensor_release(&c);
  return st;
}

vkt_status vkt_tile(vkt_tensor *out, const vkt_tensor *x, int n, const int64_t *reps) {
  int64_t r[VKT_MAX_DIMS];
  int m = n > x->ndim ? n : x->ndim;
  if (m > VKT_MAX_DIMS)
    return vkt_fail(VKT_ERR_RUNTIME, "tensors have at most %d dimensions", VKT_MAX_DIMS);
  for (int i = 0; i < m; i++)
    r[i] = i < m - n ? 1 : reps[i - (m - n)];
  return vkt_repeat(out, x, m, r);
}

vkt_status vkt_repeat_interleave(vkt_tensor *out, const vkt_tensor *x, int64_t repeats, bool flat, int64_t dim) {
  vkt_tensor c = {0}, src = {0}, spread = {0}, e = {0};
  int d = 0;
  int64_t n = vkt_tensor_numel(x), shape[VKT_MAX_DIMS];
  vkt_status st;
  if (repeats < 0)
    return vkt_fail(VKT_ERR_RUNTIME, "Repeats must be non-negative"); /* the tensor form's words differ */
  if (flat) {
    if ((st = vkt_contiguous(&c, x)) || (st = vkt_view(&src, &c, 1, &n)))
      goto finish;
  } else if ((st = vkt_dim_wrap(dim, x->ndim, &d))) {
    return st;
  } else if (x->ndim == 0) { /* PyTorch unsqueezes x after dim, for which a 0-d x has no room */
    return vkt_fail(VKT_ERR_INDEX, "Dimension out of range (expected to be in range of [-1, 0], but got 1)");
  } else {
    src = padded(x, x->ndim ? x->ndim : 1);
    vkt_storage_incref(src.storage);
  }
  if (src.ndim >= VKT_MAX_DIMS) {
    st = vkt_fail(VKT_ERR_RUNTIME, "tensors have at most %d dimensions", VKT_MAX_DIMS);
    goto finish;
  }
  spread = src; /* a new dim after d, of size repeats and stride 0 */
  vkt_storage_incref(spread.storage);
  memmove(spread.shape + d + 2, src.shape + d + 1, sizeof *shape * (size_t)(src.ndim - d - 1));
  memmove(spread.strides + d + 2, src.strides + d + 1, sizeof *shape * (size_t)(src.ndim - d - 1));
  spread.shape[d + 1] = repeats, spread.strides[d + 1] = 0, spread.ndim++;
  memcpy(shape, src.shape, sizeof *shape * (size_t)src.ndim);
  shape[d] *= repeats;
  if (!(st = vkt_clone(&e, &spread)))
    st = vkt_view(out, &e, src.ndim, shape);
finish:
  vkt_tensor_release(&c);
  vkt_tensor_release(&src);
  vkt_tensor_release(&spread);
  vkt_tensor_release(&e);
  return st;
}

vkt_status vkt_rot90(vkt_tensor *out, const vkt_tensor *x, int64_t k, int64_t dim0, int64_t dim1) {
  int a = 0, b = 0;
  vkt_status st;
  if (x->ndim < 2)
    return vkt_fail(VKT_ERR_RUNTIME, "expected total dims >= 2, but got total dims = %d", x->ndim);
  if ((st = vkt_dim_wrap(dim0, x->ndim, &a)) || (st = vkt_dim_wrap(dim1, x->ndim, &b)))
    return st;
  if (a == b)
    return vkt_fail(VKT_ERR_RUNTIME, "expected rotation dims to be different, but got dim0 = %d and dim1 = %d", a, b);
  k = ((k % 4) + 4) % 4;
  if (k == 0)
    return vkt_clone(out, x);
  if (k == 2)
    return vkt_flip(x, 1u << a | 1u << b, out);
  vkt_tensor f = {0};
  if (!(st = vkt_flip(x, 1u << (k == 1 ? b : a), &f)))
    st = vkt_transpose(out, &f, a, b);
  vkt_tensor_release(&f);
  return st;
}

/* A new zero tensor of shape whose diagonal (offset, d1, d2) is x's last dim: diag and diag_embed. */
vkt_status vkt_diag_embed(vkt_tensor *out, const vkt_tensor *x, int64_t offset, int64_t dim1, int64_t dim2) {
  int nd = x->ndim + 1, a = 0, b = 0;
  vkt_status st;
  if (x->ndim == 0)
    return vkt_fail(VKT_ERR_RUNTIME, "diag_embed(): input must have at least 1 dimension");
  if ((st = vkt_dim_wrap(dim1, nd, &a)) || (st = vkt_dim_wrap(dim2, nd, &b)))
    return st;
  if (a == b)
    return vkt_fail(VKT_ERR_RUNTIME, "diagonal dimensions cannot be identical %lld, %lld", (long long)dim1,
                    (long long)dim2);
  int64_t n = x->shape[x->ndim - 1] + (offset < 0 ? -offset : offset), shape[VKT_MAX_DIMS];
  for (int i = 0, j = 0; i < nd; i++)
    shape[i] = i == a || i == b ? n : x->shape[j++];
  vkt_tensor diag = {0};
  if ((st = vkt_tensor_empty(out, vkt_tensor_device(x), x->dtype, nd, shape)) ||
      (st = vkt_fill_(out, (vkt_scalar){false, 0, 0})) || (st = vkt_diagonal(&diag, out, offset, a, b)) ||
      (st = vkt_copy_(&diag, x)))
    vkt_tensor_release(out);
  vkt_tensor_release(&diag);
  return st;
}

vkt_status vkt_diag(vkt_tensor *out, const vkt_tensor *x, int64_t diagonal) {
  if (x->ndim == 1)
    return vkt_diag_embed(out, x, diagonal, 0, 1);
  if (x->ndim != 2)
    return vkt_fail(VKT_ERR_RUNTIME, "diag(): Supports 1D or 2D tensors. Got %dD", x->ndim);
  vkt_tensor d = {0};
  vkt_status st = vkt_diagonal(&d, x, diagonal, 0, 1);
  if (!st)
    st = vkt_clone(out, &d);
  vkt_tensor_release(&d);
  return st;
}

vkt_status vkt_meshgrid(int n, const vkt_tensor *const *ts, bool xy, vkt_tensor *outs) {
  int64_t shape[VKT_MAX_DIMS];
  vkt_status st = vkt_same_device(n, ts, NULL);
  if (st)
    return st;
  if (n > VKT_MAX_DIMS)
    return vkt_fail(VKT_ERR_RUNTIME, "tensors have at most %d dimensions", VKT_MAX_DIMS);
  for (int k = 0; k < n; k++) {
    if (ts[k]->ndim > 1)
      return vkt_fail(VKT_ERR_RUNTIME, "torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: %dD",
                      ts[k]->ndim);
    if (ts[k]->dtype != ts[0]->dtype)
      return vkt_fail(VKT_ERR_RUNTIME,
                      "torch.meshgrid: Expected all tensors in the tensor list to have the same dtype");
    int at = xy && n > 1 && k < 2 ? 1 - k : k; /* xy: the first two inputs' dims trade places */
    shape[at] = vkt_tensor_numel(ts[k]);
  }
  for (int k = 0; k < n; k++) {
    int at = xy && n > 1 && k < 2 ? 1 - k : k;
    vkt_tensor v = *ts[k]; /* a line along dim at, stride 0 elsewhere */
    v.ndim = n;
    for (int i = 0; i < n; i++)
      v.shape[i] = shape[i], v.strides[i] = i == at && ts[k]->ndim ? ts[k]->strides[0] : 0;
    vkt_tensor_share(&outs[k], &v);
  }
  return VKT_OK;
}

/* PyTorch's repeat_interleave of an input checks the repeats' shape against input's size n along dim (0-D or one
 * count stand for n of them) before its kernel checks their dtype. */
static vkt_status repeats_fit(const vkt_tensor *repeats, int64_t n, int dim) {
  if (repeats->ndim > 1)
    return vkt_fail(VKT_ERR_RUNTIME, "repeats must be 0-dim or 1-dim tensor");
  int64_t k = vkt_tensor_numel(repeats);
  if (k == n || k == 1)
    return VKT_OK;
  return vkt_fail(VKT_ERR_RUNTIME,
                  "repeats must have the same size as input along dim, but got repeats.size(0) = %lld and "
                  "input.size(%d) = %lld",
                  (long long)k, dim, (long long)n);
}

/* The positions repeat_interleave picks: i repeated counts[i] times (counts read to the host), on device. With no
 * input (alone), the checks are PyTorch's kernel's alone: the dtype, then a 1-D repeats. */
static vkt_status repeat_positions(const vkt_tensor *repeats, int64_t n, int dim, int device, bool alone,
                                   vkt_tensor *out) {
  int64_t k = vkt_tensor_numel(repeats), total = 0, *counts = NULL, *pos = NULL;
  vkt_tensor c = {0};
  vkt_status st = alone ? VKT_OK : repeats_fit(repeats, n, dim);
  if (st)
    return st;
  if (repeats->dtype != VKT_INT64 && repeats->dtype != VKT_INT32)
    return vkt_fail(VKT_ERR_NOTIMPL, "\"repeat_interleave_cpu\" not implemented for '%s'",
                    vkt_dtypes[repeats->dtype].torch_name);
  if (alone && repeats->ndim != 1)
    return vkt_fail(VKT_ERR_RUNTIME, "repeat_interleave only accept 1D vector as repeat");
  if (!(counts = malloc(sizeof *counts * (size_t)(k + 1))))
    return vkt_fail(VKT_ERR_NOMEM, "out of host memory");
  if (k && ((st = vkt_to(&c, repeats, VKT_CPU, VKT_INT64)) || (st = vkt_read(&c, counts))))
    goto finish;
  for (int64_t i = 0; i < n; i++) {
    int64_t r = counts[k == 1 ? 0 : i];
    if (r < 0) {
      st = vkt_fail(VKT_ERR_RUNTIME, "repeats can not be negative");
      goto finish;
    }
    total += r;
  }
  if (!(pos = malloc(sizeof *pos * (size_t)(total + 1)))) {
    st = vkt_fail(VKT_ERR_NOMEM, "out of host memory");
    goto finish;
  }
  for (int64_t i = 0, j = 0; i < n; i++)
    for (int64_t r = 0; r < counts[k == 1 ? 0 : i]; r++)
      pos[j++] = i;
  if (!(st = vkt_tensor_empty(out, device, VKT_INT64, 1, &total)) && total && (st = vkt_write(out, pos)))
    vkt_tensor_release(out);
finish:
  free(counts);
  free(pos);
  vkt_tensor_release(&c);
  return st;
}

vkt_status vkt_repeat_interleave_by(vkt_tensor *out, const vkt_tensor *x, const vkt_tensor *repeats, bool flat,
                                    int64_t dim) {
  vkt_tensor c = {0}, src = {0}, pos = {0};
  int d = 0;
  int64_t n;
  vkt_status st;
  if (!x) /* repeat_interleave(repeats): the positions themselves */
    return repeat_positions(repeats, vkt_tensor_numel(repeats), 0, vkt_tensor_device(repeats), true, out);
  if (flat) {
    n = vkt_tensor_numel(x);
    if ((st = vkt_contiguous(&c, x)) || (st = vkt_view(&src, &c, 1, &n)))
      goto finish;
  } else if (x->ndim == 0) { /* after the repeats' rank, PyTorch refuses any dim of a 0-D input */
    return repeats->ndim > 1 ? repeats_fit(repeats, 1, 0)
                             : vkt_fail(VKT_ERR_INDEX, "Dimension specified as %lld but tensor has no dimensions",
                                        (long long)dim);
  } else if ((st = vkt_dim_wrap(dim, x->ndim, &d))) {
    return st;
  } else {
    vkt_tensor_share(&src, x);
  }
  if (!(st = repeat_positions(repeats, src.shape[d], d, vkt_tensor_device(x), false, &pos)))
    st = vkt_index_select_trusted(&src, d, &pos, out);
finish:
  vkt_tensor_release(&c);
  vkt_tensor_release(&src);
  vkt_tensor_release(&pos);
  return st;
}

/* A new storage of nbytes holding s's bytes and taking its version: s grown, where only the tensor resized holds it. */
static vkt_status grown(vkt_storage *s, uint64_t nbytes, vkt_storage **out) {
  vkt_storage *n = NULL;
  uint64_t batch = 0;
  if (s->release)
    return vkt_fail(VKT_ERR_RUNTIME, "Trying to resize storage that is not resizable");
  vkt_status st = s->dev ? vkt_fuse_ready(s, true) : VKT_OK; /* its value, and the pending reads of it, first */
  if (!st && __atomic_load_n(&s->refcount, __ATOMIC_ACQUIRE) > 1)
    st = vkt_fail(VKT_ERR_RUNTIME, "vkt: resize_ cannot grow a storage that other tensors share (views, saved tensors, "
                  "NumPy arrays, DLPack capsules), which PyTorch grows under all of them; resize a clone() instead");
  if (!st)
    st = vkt_storage_new(s->device, nbytes, &n);
  if (!st && s->dev) {
    st = vkt_mem_copy(s->dev, &s->alloc, 0, &n->alloc, 0, s->nbytes, &batch);
    vkt_storage_touched(s, batch);
    vkt_storage_touched(n, batch);
  } else if (!st) {
    memcpy(n->host, s->host, s->nbytes);
  }
  if (st) {
    vkt_storage_decref(n);
    return st;
  }
  n->version = s->version, n->version_shown = s->version_shown, n->shown = s->shown, n->inference = s->inference;
  *out = n;
  return VKT_OK;
}

vkt_status vkt_resize(vkt_tensor *out, const vkt_tensor *t, int ndim, const int64_t *shape,
                      const vkt_memory_format *fmt) {
  if (ndim > VKT_MAX_DIMS)
    return vkt_fail(VKT_ERR_RUNTIME, "tensors have at most %d dimensions, got %d", VKT_MAX_DIMS, ndim);
  for (int d = 0; d < ndim; d++)
    if (shape[d] < 0)
      return vkt_fail(VKT_ERR_RUNTIME, "numel: integer multiplication overflow");
  if (fmt && *fmt == VKT_PRESERVE_FORMAT)
    return vkt_fail(VKT_ERR_RUNTIME, "Unsupported memory formatPreserve"); /* sic: PyTorch's, without a space */
  vkt_tensor r = *t;
  bool same = ndim == t->ndim && !memcmp(shape, t->shape, sizeof *shape * (size_t)ndim);
  r.ndim = ndim;
  memcpy(r.shape, shape, sizeof *shape * (size_t)ndim);
  vkt_status st = fmt || !same ? vkt_format_strides(&r, fmt ? *fmt : VKT_CONTIGUOUS_FORMAT, r.strides) : VKT_OK;
  int64_t lo, hi, size = vkt_dtype_size(t->dtype);
  vkt_tensor_extent(&r, &lo, &hi);
  if (!st && (uint64_t)(hi * size) > t->storage->nbytes)
    st = grown(t->storage, (uint64_t)(hi * size), &r.storage);
  else if (!st)
    vkt_storage_incref(r.storage);
  if (!st)
    *out = r;
  return st;
}
