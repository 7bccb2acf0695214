/* tensor.c: storage lifetime and the view operations, which only rewrite shape, strides and offset. */
#include "tensor.h"

#include "host.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* Large host buffers ask for transparent huge pages, as NumPy's do: a fresh 16 MiB tensor then takes 8 page
 * faults instead of 4096, which cost the cpu device's kernels more than their arithmetic (the allocator hands
 * freed large blocks back to the kernel, so every new output faults again). */
#define HUGE_MIN (4u << 20)
#define HUGE_PAGE ((uintptr_t)2 << 20)
static void advise_huge_pages(void *p, uint64_t nbytes) {
  uintptr_t lo = ((uintptr_t)p + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1), hi = ((uintptr_t)p + nbytes) & ~(HUGE_PAGE - 1);
  if (hi > lo)
    madvise((void *)lo, hi - lo, MADV_HUGEPAGE); /* a hint: refused or not, the memory is the same */
}

static _Thread_local bool inference_on;

void vkt_set_inference_mode(bool on) { inference_on = on; }
bool vkt_inference_mode(void) { return inference_on; }

static vkt_status storage_new(int device, uint64_t nbytes, bool lazy, vkt_storage **out) {
  vkt_storage *s = calloc(1, sizeof *s);
  if (!s)
    return vkt_fail(VKT_ERR_NOMEM, "out of host memory");
  s->refcount = 1;
  s->device = device;
  s->nbytes = nbytes;
  s->inference = inference_on;
  vkt_status st = VKT_OK;
  if (device == VKT_CPU) {
    /* 64-byte alignment suits SIMD loads and DLPack consumers. */
    s->host = vkt_host_alloc(nbytes);
    if (!s->host)
      st = vkt_fail(VKT_ERR_NOMEM, "out of host memory allocating %llu bytes", (unsigned long long)nbytes);
    else if (nbytes >= HUGE_MIN)
      advise_huge_pages(s->host, nbytes);
  } else if (!(st = vkt_device_get(device, &s->dev)) && !lazy) {
    st = vkt_storage_allocate(s);
  }
  if (st) {
    vkt_host_free(s->host, nbytes);
    free(s);
    return st;
  }
  *out = s;
  return VKT_OK;
}

vkt_status vkt_storage_new(int device, uint64_t nbytes, vkt_storage **out) {
  return storage_new(device, nbytes, false, out);
}

vkt_status vkt_storage_new_lazy(int device, uint64_t nbytes, vkt_storage **out) {
  return storage_new(device, nbytes, true, out);
}

vkt_status vkt_storage_allocate(vkt_storage *s) {
  vkt_status st = vkt_mem_alloc(s->dev, s->nbytes, &s->alloc);
  if (!st)
    s->last_use = s->alloc.last_use; /* host access waits for the range's previous owner too */
  return st;
}

vkt_status vkt_storage_borrow(void *host, uint64_t nbytes, void *owner, void (*release)(void *), vkt_storage **out) {
  vkt_storage *s = calloc(1, sizeof *s);
  if (!s)
    return vkt_fail(VKT_ERR_NOMEM, "out of host memory");
  *s = (vkt_storage){
      .refcount = 1, .device = VKT_CPU, .nbytes = nbytes, .host = host, .owner = owner, .release = release,
      .inference = inference_on};
  *out = s;
  return VKT_OK;
}

void vkt_storage_incref(vkt_storage *s) { __atomic_add_fetch(&s->refcount, 1, __ATOMIC_RELAXED); }

void vkt_storage_decref(vkt_storage *s) {
  if (!s || __atomic_sub_fetch(&s->refcount, 1, __ATOMIC_ACQ_REL) != 0)
    return;
  if (s->pending)
    s->forget(s->pending);
  if (s->release)
    s->release(s->owner);
  else if (s->dev && vkt_runtime_available()) /* after shutdown the device and its blocks are gone */
    vkt_mem_free(s->dev, &s->alloc, s->last_use);
  else
    vkt_host_free(s->host, s->nbytes);
  free(s);
}

static void set_contiguous(vkt_tensor *t) {
  int64_t stride = 1;
  for (int i = t->ndim - 1; i >= 0; i--) {
    t->strides[i] = stride;
    stride *= t->shape[i] > 1 ? t->shape[i] : 1;
  }
}

void vkt_shape_str(int ndim, const int64_t *shape, char *buf, size_t n) {
  size_t k = (size_t)snprintf(buf, n, "[");
  for (int i = 0; i < ndim && k < n; i++)
    k += (size_t)snprintf(buf + k, n - k, i ? ", %lld" : "%lld", (long long)shape[i]);
  if (k < n)
    snprintf(buf + k, n - k, "]");
}

static vkt_status tensor_empty(vkt_tensor *out, int device, vkt_dtype dtype, int ndim, const int64_t *shape,
                               bool lazy) {
  char s[512];
  if (ndim > VKT_MAX_DIMS)
    return vkt_fail(VKT_ERR_RUNTIME, "tensors have at most %d dimensions, got %d", VKT_MAX_DIMS, ndim);
  int64_t bytes = vkt_dtype_size(dtype);
  for (int i = 0; i < ndim; i++) {
    if (shape[i] < 0) {
      vkt_shape_str(ndim, shape, s, sizeof s);
      return vkt_fail(VKT_ERR_RUNTIME, "Trying to create tensor with negative dimension %lld: %s", (long long)shape[i],
                      s);
    }
    if (vkt_mul_overflows(bytes, shape[i], &bytes)) {
      vkt_shape_str(ndim, shape, s, sizeof s);
      return vkt_fail(VKT_ERR_RUNTIME, "a tensor of shape %s and dtype %s is too large: its size in bytes overflows", s,
                      vkt_dtypes[dtype].name);
    }
  }
  vkt_tensor t = {.dtype = dtype, .ndim = ndim};
  if (ndim > 0) /* shape may be NULL for a 0-d tensor, and memcpy's arguments must not be */
    memcpy(t.shape, shape, sizeof *shape * (size_t)ndim);
  set_contiguous(&t);
  vkt_status st = storage_new(device, (uint64_t)bytes, lazy, &t.storage);
  if (st)
    return st;
  *out = t;
  return VKT_OK;
}

vkt_status vkt_tensor_empty(vkt_tensor *out, int device, vkt_dtype dtype, int ndim, const int64_t *shape) {
  return tensor_empty(out, device, dtype, ndim, shape, false);
}

vkt_status vkt_tensor_empty_lazy(vkt_tensor *out, int device, vkt_dtype dtype, int ndim, const int64_t *shape) {
  return tensor_empty(out, device, dtype, ndim, shape, true);
}

void vkt_tensor_share(vkt_tensor *out, const vkt_tensor *src) {
  *out = *src;
  vkt_storage_incref(src->storage);
}

void vkt_tensor_release(vkt_tensor *t) {
  vkt_storage_decref(t->storage);
  t->storage = NULL;
}

int64_t vkt_tensor_numel(const vkt_tensor *t) {
  int64_t n = 1;
  for (int i = 0; i < t->ndim; i++)
    n *= t->shape[i];
  return n;
}

/* Whether t's dims, taken in `order` (outermost first; NULL: as they are), lay it out row-major. */
static bool dense_in(const vkt_tensor *t, const int *order) {
  int64_t expected = 1;
  for (int d = 0; d < t->ndim; d++)
    if (t->shape[d] == 0) /* an empty tensor is contiguous whatever its strides, as in PyTorch */
      return true;
  for (int k = t->ndim - 1; k >= 0; k--) {
    int d = order ? order[k] : k;
    if (t->shape[d] != 1 && t->strides[d] != expected)
      return false;
    expected *= t->shape[d];
  }
  return true;
}

bool vkt_tensor_is_contiguous(const vkt_tensor *t) { return dense_in(t, NULL); }

bool vkt_tensor_stride_order(const vkt_tensor *t, int *order) {
  for (int i = 0; i < t->ndim; i++) {
    if (t->shape[i] > 1 && t->strides[i] <= 0)
      return false;
    int k = i;
    for (; k > 0; k--) {
      int prev = order[k - 1];
      if (t->shape[prev] == 1 || (t->shape[i] > 1 && t->strides[prev] >= t->strides[i]))
        break;
      order[k] = prev;
    }
    order[k] = i;
  }
  return true;
}

void vkt_sorted_dense_strides(int ndim, const int64_t *shape, vkt_dim_order_fn outer, const void *ctx,
                              int64_t *strides) {
  int perm[VKT_MAX_DIMS]; /* perm[0]: the innermost dim */
  for (int i = 0; i < ndim; i++)
    perm[i] = ndim - 1 - i;
  for (int i = 1; i < ndim; i++)
    for (int k = i - 1, moving = i; k >= 0; k--) {
      int c = outer(ctx, perm[k], perm[moving]);
      if (c < 0)
        break;
      if (c > 0) {
        int tmp = perm[k];
        perm[k] = perm[moving], perm[moving] = tmp, moving = k;
      }
    }
  int64_t step = 1;
  for (int i = 0; i < ndim; i++) {
    strides[perm[i]] = step;
    step *= shape[perm[i]] > 1 ? shape[perm[i]] : 1;
  }
}

/* PyTorch's should_swap of infer_dense_strides: whether dim a goes outside dim b (1), inside (-1), or either
 * (0); a dim of stride 0 compares equal to every other, so it keeps its row-major place. */
static int outer_than(const void *ctx, int a, int b) {
  const vkt_tensor *t = ctx;
  int64_t sa = t->strides[a], sb = t->strides[b];
  if (sa == 0 || sb == 0)
    return 0;
  if (sa != sb)
    return sa > sb ? 1 : -1;
  return t->shape[a] > t->shape[b];
}

/* preserve_format, as PyTorch's empty_like: a non-overlapping and dense src's own strides (dims of one
 * element included), else dense strides that keep the order of src's (infer_dense_strides). */
static void preserved_strides(const vkt_tensor *src, int64_t *strides) {
  if (vkt_tensor_numel(src) == 0 || vkt_tensor_is_dense(src))
    memcpy(strides, src->strides, sizeof *strides * (size_t)src->ndim);
  else
    vkt_sorted_dense_strides(src->ndim, src->shape, outer_than, src, strides);
}

vkt_status vkt_format_strides(const vkt_tensor *src, vkt_memory_format fmt, int64_t *strides) {
  static const int last4[] = {0, 2, 3, 1}, last5[] = {0, 2, 3, 4, 1};
  int order[VKT_MAX_DIMS];
  const int *by = order;
  if (fmt == VKT_PRESERVE_FORMAT) {
    preserved_strides(src, strides);
    return VKT_OK;
  }
  if (fmt == VKT_CHANNELS_LAST || fmt == VKT_CHANNELS_LAST_3D) {
    int rank = fmt == VKT_CHANNELS_LAST ? 4 : 5;
    if (src->ndim != rank)
      return vkt_fail(VKT_ERR_RUNTIME, "required rank %d tensor to use %s format", rank,
                      rank == 4 ? "channels_last" : "channels_last_3d");
    by = rank == 4 ? last4 : last5;
  } else {
    for (int d = 0; d < src->ndim; d++)
      order[d] = d;
  }
  int64_t step = 1;
  for (int d = src->ndim - 1; d >= 0; d--) {
    strides[by[d]] = step;
    step *= src->shape[by[d]] > 1 ? src->shape[by[d]] : 1;
  }
  return VKT_OK;
}

vkt_status vkt_tensor_empty_like(vkt_tensor *out, const vkt_tensor *src, int device, vkt_dtype dtype,
                                 vkt_memory_format fmt) {
  int64_t strides[VKT_MAX_DIMS];
  vkt_status st = vkt_format_strides(src, fmt, strides);
  if (st || (st = vkt_tensor_empty(out, device, dtype, src->ndim, src->shape)))
    return st;
  memcpy(out->strides, strides, sizeof *strides * (size_t)src->ndim);
  return VKT_OK;
}

bool vkt_tensor_is_dense(const vkt_tensor *t) {
  int order[VKT_MAX_DIMS];
  return vkt_tensor_stride_order(t, order) && dense_in(t, order);
}

void vkt_tensor_extent(const vkt_tensor *t, int64_t *lo, int64_t *hi) {
  *lo = *hi = t->offset;
  if (vkt_tensor_numel(t) == 0)
    return;
  for (int i = 0; i < t->ndim; i++) {
    int64_t span = (t->shape[i] - 1) * t->strides[i];
    if (span < 0)
      *lo += span;
    else
      *hi += span;
  }
  *hi += 1;
}

void vkt_tensor_index_space(const vkt_tensor *t, vkt_tensor *out) {
  vkt_tensor_share(out, t);
  out->offset = 0;
  int64_t stride = 1;
  for (int d = t->ndim - 1; d >= 0; d--) {
    out->strides[d] = stride;
    stride *= t->shape[d] > 1 ? t->shape[d] : 1;
  }
}

vkt_status vkt_dim_wrap(int64_t dim, int ndim, int *out) {
  int64_t n = ndim > 0 ? ndim : 1; /* a 0-d tensor accepts dims 0 and -1, as in PyTorch */
  if (dim < -n || dim >= n)
    return vkt_fail(VKT_ERR_INDEX, "Dimension out of range (expected to be in range of [%lld, %lld], but got %lld)",
                    (long long)-n, (long long)(n - 1), (long long)dim);
  *out = (int)(dim < 0 ? dim + n : dim);
  return VKT_OK;
}

vkt_status vkt_infer_shape(int64_t numel, int ndim, int64_t *shape) {
  int infer = -1;
  int64_t known = 1;
  bool overflow = false; /* a product past int64 matches no numel (and must not wrap onto one) */
  char s[512];
  for (int i = 0; i < ndim; i++) {
    if (shape[i] == -1) {
      if (infer >= 0)
        return vkt_fail(VKT_ERR_RUNTIME, "only one dimension can be inferred");
      infer = i;
    } else if (shape[i] < 0) {
      return vkt_fail(VKT_ERR_RUNTIME, "invalid shape dimension %lld", (long long)shape[i]);
    } else {
      overflow |= vkt_mul_overflows(known, shape[i], &known);
    }
  }
  if (overflow) {
    vkt_shape_str(ndim, shape, s, sizeof s);
    return vkt_fail(VKT_ERR_RUNTIME, "shape '%s' is invalid for input of size %lld", s, (long long)numel);
  }
  if (infer >= 0 && known != 0 && numel % known == 0)
    shape[infer] = numel / known;
  else if (infer >= 0 || known != numel) {
    vkt_shape_str(ndim, shape, s, sizeof s);
    return vkt_fail(VKT_ERR_RUNTIME, "shape '%s' is invalid for input of size %lld", s, (long long)numel);
  }
  return VKT_OK;
}

/* PyTorch's computeStride: a view exists when each run of merged old dimensions maps onto a run of
 * new ones without crossing a gap in memory. */
bool vkt_view_strides(const vkt_tensor *src, int ndim, const int64_t *shape, int64_t *strides) {
  if (vkt_tensor_numel(src) == 0 || src->ndim == 0) {
    int64_t stride = 1;
    for (int i = ndim - 1; i >= 0; i--) {
      strides[i] = stride;
      stride *= shape[i] > 1 ? shape[i] : 1;
    }
    return true;
  }
  int view_d = ndim - 1;
  int64_t chunk_base_stride = src->strides[src->ndim - 1], tensor_numel = 1, view_numel = 1;
  for (int d = src->ndim - 1; d >= 0; d--) {
    tensor_numel *= src->shape[d];
    if (d == 0 || (src->shape[d - 1] != 1 && src->strides[d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || shape[view_d] == 1)) {
        strides[view_d] = view_numel * chunk_base_stride;
        view_numel *= shape[view_d];
        view_d--;
      }
      if (view_numel != tensor_numel)
        return false;
      if (d > 0) {
        chunk_base_stride = src->strides[d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  return view_d == -1;
}

vkt_status vkt_view(vkt_tensor *out, const vkt_tensor *src, int ndim, const int64_t *shape_in) {
  int64_t shape[VKT_MAX_DIMS], strides[VKT_MAX_DIMS];
  if (ndim > VKT_MAX_DIMS)
    return vkt_fail(VKT_ERR_RUNTIME, "tensors have at most %d dimensions, got %d", VKT_MAX_DIMS, ndim);
  memcpy(shape, shape_in, sizeof *shape * (size_t)ndim);
  vkt_status st = vkt_infer_shape(vkt_tensor_numel(src), ndim, shape);
  if (st)
    return st;
  if (!vkt_view_strides(src, ndim, shape, strides))
    return vkt_fail(VKT_ERR_RUNTIME,
                    "view size is not compatible with input tensor's size and stride (at least "
                    "one dimension spans across two contiguous subspaces). Use .reshape(...) instead.");
  vkt_tensor_share(out, src);
  out->ndim = ndim;
  memcpy(out->shape, shape, sizeof *shape * (size_t)ndim);
  memcpy(out->strides, strides, sizeof *strides * (size_t)ndim);
  return VKT_OK;
}

/* PyTorch's view_dtype checks, in its order, each failure in its words. */
static vkt_status view_dtype_check(const vkt_tensor *src, vkt_dtype dtype, int ratio, bool up) {
  const char *from = vkt_dtypes[src->dtype].torch_name, *to = vkt_dtypes[dtype].torch_name;
  int last = src->ndim - 1;
  if (src->ndim == 0)
    return vkt_fail(VKT_ERR_RUNTIME, "self.dim() cannot be 0 to view %s as %s (different element sizes)", from, to);
  if (up && src->shape[last] % ratio)
    return vkt_fail(VKT_ERR_RUNTIME,
                    "self.size(-1) must be divisible by %d to view %s as %s (different element sizes), but got %lld",
                    ratio, from, to, (long long)src->shape[last]);
  if (up && src->offset % ratio)
    return vkt_fail(VKT_ERR_RUNTIME,
                    "self.storage_offset() must be divisible by %d to view %s as %s (different element sizes), "
                    "but got %lld",
                    ratio, from, to, (long long)src->offset);
  if (src->strides[last] != 1)
    return vkt_fail(VKT_ERR_RUNTIME, "self.stride(-1) must be 1 to view %s as %s (different element sizes), but got %lld",
                    from, to, (long long)src->strides[last]);
  for (int d = 0; up && d < last; d++)
    if (src->strides[d] % ratio)
      return vkt_fail(VKT_ERR_RUNTIME,
                      "self.stride(%d) must be divisible by %d to view %s as %s (different element sizes), "
                      "but got %lld",
                      d, ratio, from, to, (long long)src->strides[d]);
  return VKT_OK;
}

vkt_status vkt_view_dtype(vkt_tensor *out, const vkt_tensor *src, vkt_dtype dtype) {
  int from = vkt_dtype_size(src->dtype), to = vkt_dtype_size(dtype);
  bool up = to > from;
  int ratio = up ? to / from : from / to;
  vkt_status st = from == to ? VKT_OK : view_dtype_check(src, dtype, ratio, up);
  if (st)
    return st;
  vkt_tensor_share(out, src);
  out->dtype = dtype;
  if (from == to)
    return VKT_OK;
  /* offsets and strides count elements: the same bytes are ratio times more (or fewer) of the new ones */
  for (int d = 0; d < src->ndim - 1; d++)
    out->strides[d] = up ? src->strides[d] / ratio : src->strides[d] * ratio;
  out->shape[src->ndim - 1] = up ? src->shape[src->ndim - 1] / ratio : src->shape[src->ndim - 1] * ratio;
  out->offset = up ? src->offset / ratio : src->offset * ratio;
  return VKT_OK;
}

vkt_status vkt_transpose(vkt_tensor *out, const vkt_tensor *src, int64_t d0, int64_t d1) {
  int a = 0, b = 0;
  vkt_status st;
  if ((st = vkt_dim_wrap(d0, src->ndim, &a)) || (st = vkt_dim_wrap(d1, src->ndim, &b)))
    return st;
  vkt_tensor_share(out, src);
  if (src->ndim == 0)
    return VKT_OK;
  out->shape[a] = src->shape[b], out->shape[b] = src->shape[a];
  out->strides[a] = src->strides[b], out->strides[b] = src->strides[a];
  return VKT_OK;
}

vkt_status vkt_permute(vkt_tensor *out, const vkt_tensor *src, int ndim, const int64_t *dims) {
  bool seen[VKT_MAX_DIMS] = {0};
  int d[VKT_MAX_DIMS];
  if (ndim != src->ndim)
    return vkt_fail(VKT_ERR_RUNTIME,
                    "permute(sparse_coo): number of dimensions in the tensor input does not "
                    "match the length of the desired ordering of dimensions i.e. input.dim() = "
                    "%d is not equal to len(dims) = %d",
                    src->ndim, ndim);
  for (int i = 0; i < ndim; i++) {
    vkt_status st = vkt_dim_wrap(dims[i], ndim, &d[i]);
    if (st)
      return st;
    if (seen[d[i]])
      return vkt_fail(VKT_ERR_RUNTIME, "permute(): duplicate dims are not allowed.");
    seen[d[i]] = true;
  }
  vkt_tensor_share(out, src);
  for (int i = 0; i < ndim; i++)
    out->shape[i] = src->shape[d[i]], out->strides[i] = src->strides[d[i]];
  return VKT_OK;
}

vkt_status vkt_expand(vkt_tensor *out, const vkt_tensor *src, int ndim, const int64_t *shape) {
  char a[512], b[512];
  if (ndim < src->ndim || ndim > VKT_MAX_DIMS) { /* PyTorch names the tensor by its CPU type: Bool has no legacy name */
    vkt_shape_str(src->ndim, src->shape, a, sizeof a);
    vkt_shape_str(ndim, shape, b, sizeof b);
    return vkt_fail(VKT_ERR_RUNTIME,
                    "expand(%s%s%s{%s}, size=%s): the number of sizes provided (%d) must be greater or equal to "
                    "the number of dimensions in the tensor (%d)",
                    src->dtype == VKT_BOOL ? "CPU" : "torch.", vkt_dtypes[src->dtype].torch_name,
                    src->dtype == VKT_BOOL ? "Type" : "Tensor", a, b, ndim, src->ndim);
  }
  vkt_tensor t = *src;
  t.ndim = ndim;
  for (int i = ndim - 1, j = src->ndim - 1; i >= 0; i--, j--) {
    int64_t have = j >= 0 ? src->shape[j] : 1, stride = j >= 0 ? src->strides[j] : 0;
    int64_t want = shape[i] == -1 && j >= 0 ? have : shape[i];
    if (want < 0 || (have != want && have != 1)) {
      vkt_shape_str(src->ndim, src->shape, a, sizeof a);
      vkt_shape_str(ndim, shape, b, sizeof b);
      return vkt_fail(VKT_ERR_RUNTIME,
                      "The expanded size of the tensor (%lld) must match the existing size "
                      "(%lld) at non-singleton dimension %d.  Target sizes: %s.  Tensor sizes: %s",
                      (long long)want, (long long)have, i, b, a);
    }
    t.shape[i] = want;
    t.strides[i] = have == want ? stride : 0;
  }
  vkt_tensor_share(out, &t);
  return VKT_OK;
}

vkt_status vkt_squeeze(vkt_tensor *out, const vkt_tensor *src, int ndims, const int64_t *dims) {
  bool drop[VKT_MAX_DIMS] = {0}, seen[VKT_MAX_DIMS] = {0};
  for (int i = 0; i < ndims; i++) {
    int d = 0;
    vkt_status st = vkt_dim_wrap(dims[i], src->ndim, &d);
    if (st)
      return st;
    if (seen[d])
      return vkt_fail(VKT_ERR_RUNTIME, "dim %d appears multiple times in the list of dims", d);
    seen[d] = true;
    drop[d] = src->ndim > 0 && src->shape[d] == 1;
  }
  vkt_tensor t = *src;
  t.ndim = 0;
  for (int i = 0; i < src->ndim; i++) {
    if (ndims < 0 ? src->shape[i] == 1 : drop[i])
      continue;
    t.shape[t.ndim] = src->shape[i];
    t.strides[t.ndim++] = src->strides[i];
  }
  vkt_tensor_share(out, &t);
  return VKT_OK;
}

vkt_status vkt_unsqueeze(vkt_tensor *out, const vkt_tensor *src, int64_t dim) {
  int d = 0;
  vkt_status st = vkt_dim_wrap(dim, src->ndim + 1, &d);
  if (st)
    return st;
  if (src->ndim >= VKT_MAX_DIMS)
    return vkt_fail(VKT_ERR_RUNTIME, "tensors have at most %d dimensions", VKT_MAX_DIMS);
  vkt_tensor t = *src;
  t.ndim = src->ndim + 1;
  for (int i = src->ndim; i > d; i--)
    t.shape[i] = src->shape[i - 1], t.strides[i] = src->strides[i - 1];
  t.shape[d] = 1;
  t.strides[d] = d < src->ndim ? src->shape[d] * src->strides[d] : 1;
  vkt_tensor_share(out, &t);
  return VKT_OK;
}

vkt_status vkt_select(vkt_tensor *out, const vkt_tensor *src, int64_t dim, int64_t index) {
  int d = 0;
  if (src->ndim == 0)
    return vkt_fail(VKT_ERR_INDEX, "invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
                                   "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number");
  vkt_status st = vkt_dim_wrap(dim, src->ndim, &d);
  if (st)
    return st;
  int64_t n = src->shape[d];
  if (index < -n || index >= n)
    return vkt_fail(VKT_ERR_INDEX, "index %lld is out of bounds for dimension %d with size %lld", (long long)index, d,
                    (long long)n);
  vkt_tensor t = *src;
  t.offset += (index < 0 ? index + n : index) * src->strides[d];
  t.ndim--;
  for (int i = d; i < t.ndim; i++)
    t.shape[i] = src->shape[i + 1], t.strides[i] = src->strides[i + 1];
  vkt_tensor_share(out, &t);
  return VKT_OK;
}

vkt_status vkt_unfold(vkt_tensor *out, const vkt_tensor *src, int64_t dim, int64_t size, int64_t step) {
  int d = 0;
  vkt_status st = vkt_dim_wrap(dim, src->ndim ? src->ndim : 1, &d); /* a 0-d tensor unfolds as one of one element */
  int64_t n = src->ndim ? src->shape[d] : 1, stride = src->ndim ? src->strides[d] : 1;
  if (st)
    return st;
  if (src->ndim == VKT_MAX_DIMS)
    return vkt_fail(VKT_ERR_RUNTIME, "unfold(): at most %d dims", VKT_MAX_DIMS);
  if (size > n)
    return vkt_fail(VKT_ERR_RUNTIME, "maximum size for tensor at dimension %d is %lld but size is %lld", d,
                    (long long)n, (long long)size);
  if (step <= 0)
    return vkt_fail(VKT_ERR_RUNTIME, "step is %lld but must be > 0", (long long)step);
  if (size < 0)
    return vkt_fail(VKT_ERR_RUNTIME, "size is %lld but must be >= 0", (long long)size);
  vkt_tensor t = *src;
  if (src->ndim) { /* dim d walks the windows, a new last dim each window's elements */
    t.shape[d] = (n - size) / step + 1;
    t.strides[d] = stride * step;
  }
  t.shape[t.ndim] = size;
  t.strides[t.ndim++] = stride;
  vkt_tensor_share(out, &t);
  return VKT_OK;
}

vkt_status vkt_as_strided(vkt_tensor *out, const vkt_tensor *src, int ndim, const int64_t *shape,
                          const int64_t *strides, int64_t offset) {
  char a[256], b[256];
  if (ndim > VKT_MAX_DIMS)
    return vkt_fail(VKT_ERR_RUNTIME, "tensors have at most %d dimensions, got %d", VKT_MAX_DIMS, ndim);
  vkt_tensor t = {.storage = src->storage, .dtype = src->dtype, .ndim = ndim, .offset = offset};
  bool negative = false;
  for (int i = 0; i < ndim; i++) {
    if (strides[i] < 0) {
      vkt_shape_str(ndim, strides, b, sizeof b);
      return vkt_fail(VKT_ERR_RUNTIME, "as_strided: Negative strides are not supported at the moment, got strides: %s",
                      b);
    }
    negative |= shape[i] < 0;
    t.shape[i] = shape[i], t.strides[i] = strides[i];
  }
  if (offset < 0)
    return vkt_fail(VKT_ERR_RUNTIME, "Tensor: invalid storage offset %lld", (long long)offset);
  if (negative) {
    vkt_shape_str(ndim, shape, a, sizeof a);
    vkt_shape_str(ndim, strides, b, sizeof b);
    return vkt_fail(VKT_ERR_RUNTIME, "Storage size calculation overflowed with sizes=%s and strides=%s", a, b);
  }
  int64_t lo, hi, size = vkt_dtype_size(src->dtype);
  vkt_tensor_extent(&t, &lo, &hi);
  if (vkt_tensor_numel(&t) > 0 && (uint64_t)(hi * size) > src->storage->nbytes) {
    vkt_shape_str(ndim, shape, a, sizeof a);
    vkt_shape_str(ndim, strides, b, sizeof b);
    return vkt_fail(VKT_ERR_RUNTIME,
                    "setStorage: sizes %s, strides %s, storage offset %lld, and itemsize %lld requiring a storage size "
                    "of %lld are out of bounds for storage of size %llu",
                    a, b, (long long)offset, (long long)size, (long long)(hi * size),
                    (unsigned long long)src->storage->nbytes);
  }
  vkt_tensor_share(out, &t);
  return VKT_OK;
}

vkt_status vkt_slice(vkt_tensor *out, const vkt_tensor *src, int64_t dim, int64_t start, int64_t stop, int64_t step) {
  int d = 0;
  vkt_status st = vkt_dim_wrap(dim, src->ndim, &d);
  if (st)
    return st;
  if (step <= 0)
    return vkt_fail(VKT_ERR_VALUE, "step must be greater than zero");
  int64_t n = src->shape[d];
  if (start < 0)
    start += n;
  if (stop < 0)
    stop += n;
  start = start < 0 ? 0 : start > n ? n : start;
  stop = stop < start ? start : stop > n ? n : stop;
  vkt_tensor t = *src;
  t.offset += start * src->strides[d];
  t.shape[d] = (stop - start + step - 1) / step;
  t.strides[d] = src->strides[d] * step;
  vkt_tensor_share(out, &t);
  return VKT_OK;
}

static bool range_valid(const vkt_tensor *t) {
  const vkt_storage *s = t->storage;
  return s->range_known && s->range_version == s->version && s->range_dtype == t->dtype;
}

bool vkt_tensor_known_within(const vkt_tensor *t, int64_t lo, int64_t hi) {
  return range_valid(t) && t->storage->range_lo >= lo && t->storage->range_hi < hi;
}

void vkt_tensor_take_range(const vkt_tensor *out, int n, const vkt_tensor *const *src) {
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (int k = 0; k < n; k++) {
    if (!range_valid(src[k]) || src[k]->dtype != out->dtype)
      return;
    lo = src[k]->storage->range_lo < lo ? src[k]->storage->range_lo : lo;
    hi = src[k]->storage->range_hi > hi ? src[k]->storage->range_hi : hi;
  }
  vkt_storage *o = out->storage;
  o->range_known = true, o->range_dtype = out->dtype, o->range_version = o->version;
  o->range_lo = lo, o->range_hi = hi;
}
