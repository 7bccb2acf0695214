/* shape.h: the shape and indexing family: joining and splitting tensors, reordering elements, and
 * reading or writing through index tensors. Each works on tensors of any device, like ops.h. */
#ifndef VKT_SHAPE_H
#define VKT_SHAPE_H

#include "table.h"

/* Views of x along dim, one per size; the sizes must add up to x's size there. outs[n] are new
 * references owned by the caller. */
vkt_status vkt_split_with_sizes(const vkt_tensor *x, int64_t dim, int64_t n, const int64_t *sizes, vkt_tensor *outs);
/* The piece sizes of split(split_size) and chunk(chunks) along dim, as PyTorch picks them.
 * *sizes is malloc'd, owned by the caller; *n is its length. */
vkt_status vkt_split_sizes(const vkt_tensor *x, int64_t dim, int64_t split_size, int64_t **sizes, int64_t *n);
vkt_status vkt_chunk_sizes(const vkt_tensor *x, int64_t dim, int64_t chunks, int64_t **sizes, int64_t *n);

/* New tensors. cat promotes dtypes across inputs and skips 1-D empty inputs (PyTorch's legacy rule). */
vkt_status vkt_cat(int n, const vkt_tensor *const *ts, int64_t dim, vkt_tensor *out);
vkt_status vkt_stack(int n, const vkt_tensor *const *ts, int64_t dim, vkt_tensor *out);
/* dims: bit d set to flip dimension d. */
vkt_status vkt_flip(const vkt_tensor *x, uint32_t dims, vkt_tensor *out);
/* ndims == 0: roll the flattened tensor by shifts[0] and restore the shape. */
vkt_status vkt_roll(const vkt_tensor *x, int n, const int64_t *shifts, int ndims, const int64_t *dims, vkt_tensor *out);
vkt_status vkt_tri(const vkt_tensor *x, bool upper, int64_t diagonal, vkt_tensor *out);
vkt_status vkt_gather(const vkt_tensor *x, int64_t dim, const vkt_tensor *index, vkt_tensor *out);
vkt_status vkt_index_select(const vkt_tensor *x, int64_t dim, const vkt_tensor *index, vkt_tensor *out);
/* index_select of an index already checked and wrapped (by index_wrap): no error word read back. */
vkt_status vkt_index_select_trusted(const vkt_tensor *x, int64_t dim, const vkt_tensor *index, vkt_tensor *out);
/* value is a 0-d tensor (any device) or, when NULL, the number v. inplace: masked_fill_, writing x. */
vkt_status vkt_masked_fill(const vkt_tensor *x, const vkt_tensor *mask, const vkt_tensor *value, vkt_scalar v,
                           bool inplace, vkt_tensor *out);

/* A convolution's windows over three spatial dims (fewer: leading dims of kernel 1, stride 1, no padding). */
typedef struct {
  int64_t kernel[3], stride[3], pad[3], dilation[3];
} vkt_window;
/* im2col: x (N, C, *spatial), 1 to 3 spatial dims, as columns (N, C * prod(kernel), windows), each window's
 * elements in a column, zeros where it reaches into the padding. col2im, its adjoint: columns summed into an
 * image (N, C, *size) of nd spatial dims. The window's entries are for three dims, the leading ones of kernel 1,
 * stride 1 and no padding where x or the image has fewer. Any dtype but bool. */
vkt_status vkt_im2col(const vkt_tensor *x, const vkt_window *w, vkt_tensor *out);
vkt_status vkt_col2im(const vkt_tensor *cols, const vkt_window *w, int nd, const int64_t *size, vkt_tensor *out);

/* PyTorch's errors for a bad index, which differ by op. */
typedef enum {
  VKT_INDEX_ERR_BOUNDS,   /* RuntimeError "index k is out of bounds for dimension d with size n": gather, scatter */
  VKT_INDEX_ERR_SELF,     /* IndexError "index out of range in self": index_select */
  VKT_INDEX_ERR_INDEXING, /* IndexError "index k is out of bounds ...": t[index], index_put_, index_fill_ */
  VKT_INDEX_ERR_COPY,     /* IndexError "index_copy_(): index k is out of bounds ..." */
  VKT_INDEX_ERR_TAKE,     /* IndexError "out of range: tried to access index k on a tensor of n elements." */
} vkt_index_err;
vkt_status vkt_index_error(vkt_index_err style, int64_t k, int d, int64_t size);
/* What a shader's error word stands for: the index it checked (any device), the size it checked
 * against, the dim named in the error, which error it raises, and whether -size..-1 were allowed. */
typedef struct {
  const vkt_tensor *index;
  int64_t size;
  int dim;
  vkt_index_err style;
  bool negatives;
} vkt_index_check;
/* An int32 error word on like's device, zeroed ({0} on the cpu device, whose kernels raise). */
vkt_status vkt_index_flag_new(const vkt_tensor *like, vkt_tensor *flag);
/* Reads the word (a wait); when a shader set it, the first bad index of checks raises its error. */
vkt_status vkt_index_flag_check(const vkt_tensor *flag, int n, const vkt_index_check *checks);
/* Runs op id with an error word (a->out2) on the device; with check, reads it back (a wait) so that a bad
 * index raises at the op, as on the cpu device. */
vkt_status vkt_index_run_checked(vkt_op_id id, vkt_op_args *a, const vkt_index_check *check);

/* Advanced indexing (index.c), PyTorch's index and index_put_: indices[k] indexes dim k of x (NULL: the
 * whole dim; a bool or uint8 mask stands for as many dims as it has and is read to the host); int32 and
 * int64 indices may be negative. The indexed dims become the broadcast shape of the indices, in place of
 * the first of them when they are adjacent, else first. */
/* IndexError where a boolean mask indexing x from dim `at` does not match x's shape there. */
vkt_status vkt_check_mask(const vkt_tensor *x, const vkt_tensor *mask, int at);
vkt_status vkt_index(const vkt_tensor *x, int n, const vkt_tensor *const *indices, vkt_tensor *out);
/* x[indices] = values (broadcast to the indexing result), or += with accumulate (repeated indices add up). */
vkt_status vkt_index_put_(const vkt_tensor *x, int n, const vkt_tensor *const *indices, const vkt_tensor *values,
                          bool accumulate);
/* index_put_ for the backward of x[indices], whose forward checked them: no error word read back (no wait;
 * a bool mask is still read to the host). */
vkt_status vkt_index_put_trusted(const vkt_tensor *x, int n, const vkt_tensor *const *indices, const vkt_tensor *values,
                                 bool accumulate);

/* x[c with c[dim] = index[c]] = src[c] (add: +=, atomically) for every c of index's shape, which fits in
 * src's and (but along dim) in x's. vkt_scatter_add is the entry point for the backward of gather and
 * indexing: its indices were checked by the forward, so it reads no error word back (no wait); an index
 * out of range there is skipped. */
vkt_status vkt_scatter_(const vkt_tensor *x, int64_t dim, const vkt_tensor *index, const vkt_tensor *src, bool add);
vkt_status vkt_scatter_add(const vkt_tensor *x, int64_t dim, const vkt_tensor *index, const vkt_tensor *src);
/* scatter_reduce_: x's elements at index (as scatter) reduced with src's; include_self false: from the
 * reduction's identity instead of x's value (mean: over the values that arrived). */
typedef enum {
  VKT_SCATTER_SUM,
  VKT_SCATTER_PROD,
  VKT_SCATTER_MEAN,
  VKT_SCATTER_AMAX,
  VKT_SCATTER_AMIN
} vkt_scatter_reduce;
vkt_status vkt_scatter_reduce_(const vkt_tensor *x, int64_t dim, const vkt_tensor *index, const vkt_tensor *src,
                               vkt_scatter_reduce how, bool include_self);
/* index_copy_ (add: index_add_): x's slices index[i] along dim become (add: gain) source's slice i. */
vkt_status vkt_index_copy_(const vkt_tensor *x, int64_t dim, const vkt_tensor *index, const vkt_tensor *source,
                           bool add);

/* take (x flattened, negative indices from the end), masked_select (x and mask broadcast), masked_scatter_
 * (mask read to the host), index_fill_ (value a 0-d tensor; negative indices from the end). */
vkt_status vkt_take(const vkt_tensor *x, const vkt_tensor *index, vkt_tensor *out);
vkt_status vkt_masked_select(const vkt_tensor *x, const vkt_tensor *mask, vkt_tensor *out);
/* flat: dim=None (both flattened). */
vkt_status vkt_take_along_dim(const vkt_tensor *x, const vkt_tensor *index, bool flat, int64_t dim, vkt_tensor *out);
vkt_status vkt_masked_scatter_(const vkt_tensor *x, const vkt_tensor *mask, const vkt_tensor *source);
vkt_status vkt_index_fill_(const vkt_tensor *x, int64_t dim, const vkt_tensor *index, const vkt_tensor *value);

/* Layout composites (layout.c), as PyTorch's: views where PyTorch returns views, else one copy. */
vkt_status vkt_narrow(vkt_tensor *out, const vkt_tensor *x, int64_t dim, int64_t start, int64_t length);
vkt_status vkt_movedim(vkt_tensor *out, const vkt_tensor *x, int n, const int64_t *src, const int64_t *dst);
vkt_status vkt_unflatten(vkt_tensor *out, const vkt_tensor *x, int64_t dim, int n, const int64_t *sizes);
vkt_status vkt_diagonal(vkt_tensor *out, const vkt_tensor *x, int64_t offset, int64_t dim1, int64_t dim2);
vkt_status vkt_repeat(vkt_tensor *out, const vkt_tensor *x, int n, const int64_t *reps);
vkt_status vkt_tile(vkt_tensor *out, const vkt_tensor *x, int n, const int64_t *reps);
/* flat: dim=None (x flattened first). */
vkt_status vkt_repeat_interleave(vkt_tensor *out, const vkt_tensor *x, int64_t repeats, bool flat, int64_t dim);
/* repeat_interleave with a tensor of counts (one, or one per element along dim; read to the host); x NULL:
 * the positions repeat_interleave(repeats) gives. */
vkt_status vkt_repeat_interleave_by(vkt_tensor *out, const vkt_tensor *x, const vkt_tensor *repeats, bool flat,
                                    int64_t dim);
vkt_status vkt_rot90(vkt_tensor *out, const vkt_tensor *x, int64_t k, int64_t dim0, int64_t dim1);
vkt_status vkt_diag_embed(vkt_tensor *out, const vkt_tensor *x, int64_t offset, int64_t dim1, int64_t dim2);
vkt_status vkt_diag(vkt_tensor *out, const vkt_tensor *x, int64_t diagonal);
/* PyTorch's resize_ of t, into out (t is not changed): shape over t's storage from t's offset, laid out as fmt where
 * given (NULL: t's strides where shape is t's, else row-major). Where t's storage is too small, out gets a larger
 * one holding its bytes (the rest uninitialised) and its version; only where t alone holds it (PyTorch grows the
 * storage under every tensor over it), and never one borrowed from another library (PyTorch's refusal). */
vkt_status vkt_resize(vkt_tensor *out, const vkt_tensor *t, int ndim, const int64_t *shape,
                      const vkt_memory_format *fmt);
/* meshgrid's n outputs (new references, broadcast views of the inputs); xy: indexing='xy'. */
vkt_status vkt_meshgrid(int n, const vkt_tensor *const *ts, bool xy, vkt_tensor *outs);

/* dst[...] = src broadcast to dst's shape, cast to dst's dtype, from any device: Tensor.copy_ and
 * t[key] = tensor. A source overlapping dst's storage is cloned first. */
vkt_status vkt_assign(const vkt_tensor *dst, const vkt_tensor *src);

#endif
