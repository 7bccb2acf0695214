/* tensor.h: storage (refcounted bytes on the host or in a device range) and views over it (dtype,
 * shape, strides and offset in elements). View operations here copy nothing. */
#ifndef VKT_TENSOR_H
#define VKT_TENSOR_H

#include "vk/runtime.h"
#include "vkt.h"

#define VKT_CPU (-1) /* device index of the host */

typedef struct {
  int refcount;    /* atomic: a DLPack deleter may drop a reference on another thread */
  int device;      /* VKT_CPU or a Vulkan adapter index */
  vkt_device *dev; /* NULL on the host */
  uint64_t nbytes;
  void *host;  /* host bytes, owned unless release is set */
  void *owner; /* keeps borrowed host bytes alive (a NumPy buffer, a DLPack tensor) */
  void (*release)(void *owner);
  vkt_alloc alloc;   /* device range */
  uint64_t last_use; /* newest batch that reads or writes the range */
  uint32_t version;  /* bumped by every write: autograd's check that a saved tensor is unchanged */
  /* version when Python first held a tensor over it: the writes before are the op's that filled its result, which
   * PyTorch's _version does not count (its kernels write outputs without a bump) */
  uint32_t version_shown;
  bool shown;
  bool inference;    /* made in inference mode: every tensor over it is an inference tensor (is_inference()) */
  /* An integer storage written whole from host memory (targets, indices: vkt_copy_ of host data) keeps its
   * values' range [range_lo, range_hi] while version is still range_version, so that an index check on the
   * device need not read its error word back: a read waits for all the work queued before it, which left a
   * training step's GPU idle while the host recorded the next one. */
  bool range_known;
  vkt_dtype range_dtype;
  uint32_t range_version;
  int64_t range_lo, range_hi;
  /* Fusion (csrc/ops/fuse.c): the pending expression whose value this storage will hold (its range is
   * then allocated only when it is computed), how many pending expressions read this storage, and what
   * drops the expression when the last reference goes. */
  void *pending;
  int readers;
  void (*forget)(void *pending);
} vkt_storage;

typedef struct {
  vkt_storage *storage; /* owned reference */
  vkt_dtype dtype;
  int ndim;
  int64_t shape[VKT_MAX_DIMS];
  int64_t strides[VKT_MAX_DIMS]; /* elements */
  int64_t offset;                /* elements */
} vkt_tensor;

/* Inference mode, per thread (PyTorch's): storages made while it is on are inference storages. */
void vkt_set_inference_mode(bool on);
bool vkt_inference_mode(void);

vkt_status vkt_storage_new(int device, uint64_t nbytes, vkt_storage **out);
/* A device storage whose range vkt_storage_allocate takes later (a pending result's). */
vkt_status vkt_storage_new_lazy(int device, uint64_t nbytes, vkt_storage **out);
vkt_status vkt_storage_allocate(vkt_storage *s);
vkt_status vkt_storage_borrow(void *host, uint64_t nbytes, void *owner, void (*release)(void *), vkt_storage **out);
void vkt_storage_incref(vkt_storage *s);
void vkt_storage_decref(vkt_storage *s);

/* A new contiguous tensor; shape is checked (no negative size, byte count fits). */
vkt_status vkt_tensor_empty(vkt_tensor *out, int device, vkt_dtype dtype, int ndim, const int64_t *shape);
/* The same over a lazy storage (vkt_storage_new_lazy) on a Vulkan device. */
vkt_status vkt_tensor_empty_lazy(vkt_tensor *out, int device, vkt_dtype dtype, int ndim, const int64_t *shape);
/* PyTorch's memory formats: how a new tensor made like another is laid out. */
typedef enum {
  VKT_PRESERVE_FORMAT,   /* the source's strides where it is dense, else dense in the order of its strides */
  VKT_CONTIGUOUS_FORMAT, /* row-major */
  VKT_CHANNELS_LAST,     /* rank 4, (N, C, H, W) stored as N, H, W, C */
  VKT_CHANNELS_LAST_3D,  /* rank 5, (N, C, D, H, W) stored as N, D, H, W, C */
} vkt_memory_format;

/* The strides (elements) of a dense tensor of src's shape laid out by fmt; an error where fmt needs
 * another rank. */
vkt_status vkt_format_strides(const vkt_tensor *src, vkt_memory_format fmt, int64_t *strides);
/* A new tensor of src's shape laid out by fmt: a transpose's copy under VKT_PRESERVE_FORMAT is a
 * transpose, as in PyTorch, so copies read and write in memory order. */
vkt_status vkt_tensor_empty_like(vkt_tensor *out, const vkt_tensor *src, int device, vkt_dtype dtype,
                                 vkt_memory_format fmt);
/* out becomes another reference to src's storage with src's view. */
void vkt_tensor_share(vkt_tensor *out, const vkt_tensor *src);
void vkt_tensor_release(vkt_tensor *t); /* also on {0}: cleanup paths need not check */

int64_t vkt_tensor_numel(const vkt_tensor *t);
bool vkt_tensor_is_contiguous(const vkt_tensor *t);
/* Whether every value of integer tensor t is known on the host (vkt_storage.range_known) to lie in [lo, hi). */
bool vkt_tensor_known_within(const vkt_tensor *t, int64_t lo, int64_t hi);
/* out, a new tensor whose whole storage an op has just filled with values taken from n tensors src (a gather, a
 * concatenation), knows the union of their ranges where each is known: a batch of targets drawn from targets
 * uploaded whole is checked without a wait too. */
void vkt_tensor_take_range(const vkt_tensor *out, int n, const vkt_tensor *const *src);
/* The order of t's dims from its largest stride to its smallest (stable; dims of one element first), or
 * false where t is broadcast along a dim or walks one backwards. */
bool vkt_tensor_stride_order(const vkt_tensor *t, int *order);
/* Whether t's elements fill a span of its storage, each once, in some order of its dims (a transpose or
 * a permute of a contiguous tensor is dense). */
bool vkt_tensor_is_dense(const vkt_tensor *t);
/* Dense strides for shape, its dims ordered as PyTorch orders them (the insertion sort of infer_dense_strides and of
 * TensorIterator's reorder_dimensions): from row-major, each dim moves outside those inner to it while outer(ctx,
 * inner one, it) > 0, past ties (0), until one is < 0. */
typedef int (*vkt_dim_order_fn)(const void *ctx, int a, int b);
void vkt_sorted_dense_strides(int ndim, const int64_t *shape, vkt_dim_order_fn outer, const void *ctx,
                              int64_t *strides);
static inline int vkt_tensor_device(const vkt_tensor *t) { return t->storage->device; }
/* Host address of element 0 of a host tensor. */
static inline char *vkt_tensor_host(const vkt_tensor *t) {
  return (char *)t->storage->host + t->offset * vkt_dtype_size(t->dtype);
}
/* Lowest and one-past-highest element reachable through the view, relative to the storage. */
void vkt_tensor_extent(const vkt_tensor *t, int64_t *lo, int64_t *hi);
/* t's shape laid out row-major from offset 0 over t's storage (a new reference): no tensor to read (an expanded t's
 * reaches past its storage) but a probe, whose views made by the ops that made views of t count positions in t's own
 * index space, where an expanded t's storage cannot tell its elements apart. */
void vkt_tensor_index_space(const vkt_tensor *t, vkt_tensor *out);
/* Formats a shape like PyTorch: "[2, 3]". */
void vkt_shape_str(int ndim, const int64_t *shape, char *buf, size_t n);

vkt_status vkt_dim_wrap(int64_t dim, int ndim, int *out); /* IndexError when out of range */

/* Views: out shares src's storage. */
vkt_status vkt_view(vkt_tensor *out, const vkt_tensor *src, int ndim, const int64_t *shape);
/* The strides src seen as shape (of its element count) would have as a view, as vkt_view makes them; false
 * where no view exists. */
bool vkt_view_strides(const vkt_tensor *src, int ndim, const int64_t *shape, int64_t *strides);
vkt_status vkt_infer_shape(int64_t numel, int ndim, int64_t *shape); /* resolves one -1 */
/* src's bytes seen as dtype (Tensor.view(dtype)): the last dim scales by the ratio of element sizes, which
 * must then divide it, the offset and the other strides (PyTorch's rules and errors). */
vkt_status vkt_view_dtype(vkt_tensor *out, const vkt_tensor *src, vkt_dtype dtype);
vkt_status vkt_transpose(vkt_tensor *out, const vkt_tensor *src, int64_t d0, int64_t d1);
vkt_status vkt_permute(vkt_tensor *out, const vkt_tensor *src, int ndim, const int64_t *dims);
vkt_status vkt_expand(vkt_tensor *out, const vkt_tensor *src, int ndim, const int64_t *shape);
vkt_status vkt_squeeze(vkt_tensor *out, const vkt_tensor *src, int ndims, const int64_t *dims); /* ndims<0: all */
vkt_status vkt_unsqueeze(vkt_tensor *out, const vkt_tensor *src, int64_t dim);
vkt_status vkt_select(vkt_tensor *out, const vkt_tensor *src, int64_t dim, int64_t index);
/* Any view of src's storage (strides >= 0, elements), checked to stay inside it. */
vkt_status vkt_as_strided(vkt_tensor *out, const vkt_tensor *src, int ndim, const int64_t *shape,
                          const int64_t *strides, int64_t offset);
vkt_status vkt_slice(vkt_tensor *out, const vkt_tensor *src, int64_t dim, int64_t start, int64_t stop, int64_t step);
/* Windows of size elements every step along dim, in a new last dim (Tensor.unfold): they may overlap. */
vkt_status vkt_unfold(vkt_tensor *out, const vkt_tensor *src, int64_t dim, int64_t size, int64_t step);

#endif
