/* shape.h: the shape and indexing family: joining and splitting tensors, reordering elements, and
 * reading or writing through index tensors. Each works on tensors of any device, like ops.h. */
#ifndef VKT_SHAPE_H
#define VKT_SHAPE_H

#include "ops.h"

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
/* value is a 0-d tensor (any device) or, when NULL, the number v. inplace: masked_fill_, writing x. */
vkt_status vkt_masked_fill(const vkt_tensor *x, const vkt_tensor *mask, const vkt_tensor *value, vkt_scalar v,
                           bool inplace, vkt_tensor *out);

/* Advanced indexing (index.c): x[mask] (a 1-D run of the selected elements or rows; the mask is read
 * to the host), x[mask] = value, and x[index] for an int32/int64 index tensor along dim 0 (negative
 * indices count from the end). */
vkt_status vkt_index_mask(const vkt_tensor *x, const vkt_tensor *mask, vkt_tensor *out);
vkt_status vkt_index_mask_fill(const vkt_tensor *x, const vkt_tensor *mask, const vkt_tensor *value, vkt_scalar v);
vkt_status vkt_index_tensor(const vkt_tensor *x, const vkt_tensor *index, vkt_tensor *out);

/* dst[...] = src broadcast to dst's shape, cast to dst's dtype, from any device: Tensor.copy_ and
 * t[key] = tensor. A source overlapping dst's storage is cloned first. */
vkt_status vkt_assign(const vkt_tensor *dst, const vkt_tensor *src);

#endif
