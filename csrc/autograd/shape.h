/* shape.h (autograd): the entry points of the shape and indexing family (shape.c): joining and splitting,
 * reordering, and reading or writing through index tensors, each recorded with its backward. Outputs are
 * new vars owned by the caller. */
#ifndef VKT_AG_SHAPE_H
#define VKT_AG_SHAPE_H

#include "../ops/shape.h"
#include "autograd.h"

/* cat and stack of xs[0..n) along dim (cat skips 1-D empty inputs, as the op does). */
vkt_status vkt_ag_cat(int n, const vkt_var *const *xs, int64_t dim, vkt_var *out);
vkt_status vkt_ag_stack(int n, const vkt_var *const *xs, int64_t dim, vkt_var *out);
/* Views of x along dim, one per size (unbind: selects of each index, sizes ignored), made by one node of
 * n outputs: SplitBackward0, or SplitWithSizesBackward0 where name says so. outs[0..n) are new vars. */
vkt_status vkt_ag_split(const vkt_var *x, int64_t dim, int64_t n, const int64_t *sizes, bool unbind, const char *name,
                        vkt_var *outs);
vkt_status vkt_ag_flip(const vkt_var *x, uint32_t dims, vkt_var *out);
vkt_status vkt_ag_roll(const vkt_var *x, int n, const int64_t *shifts, int ndims, const int64_t *dims, vkt_var *out);
vkt_status vkt_ag_tri(const vkt_var *x, bool upper, int64_t diagonal, vkt_var *out);
/* im2col and col2im (ops/shape.h), each the other's backward: Im2ColBackward0, Col2ImBackward0. */
vkt_status vkt_ag_im2col(const vkt_var *x, const vkt_window *w, vkt_var *out);
vkt_status vkt_ag_col2im(const vkt_var *cols, const vkt_window *w, int nd, const int64_t *size, vkt_var *out);
/* repeat (tile: reps may be shorter than x's dims, padded with leading 1s). */
vkt_status vkt_ag_repeat(const vkt_var *x, int n, const int64_t *reps, bool tile, vkt_var *out);
/* movedim and moveaxis: a permuting view. */
vkt_status vkt_ag_movedim(const vkt_var *x, int n, const int64_t *src, const int64_t *dst, vkt_var *out);
vkt_status vkt_ag_index_select(const vkt_var *x, int64_t dim, const vkt_tensor *index, vkt_var *out);
vkt_status vkt_ag_take_along_dim(const vkt_var *x, const vkt_tensor *index, bool flat, int64_t dim, vkt_var *out);
/* masked_fill with the number v, or the 0-d tensor value where it is not NULL. */
vkt_status vkt_ag_masked_fill(const vkt_var *x, const vkt_tensor *mask, const vkt_var *value, vkt_scalar v,
                              vkt_var *out);
/* x[indices] (vkt_index): indices[k] indexes dim k of x, NULL for the whole dim. */
vkt_status vkt_ag_index(const vkt_var *x, int n, const vkt_tensor *const *indices, vkt_var *out);
/* The out-of-place form of x[key] = values and index_put: view is a view of a fresh row-major copy of x
 * (its storage at offset 0) through the key's basic items; values are written through it and indices
 * (as vkt_index_put_ does, += with accumulate), and *out is the copy. slices: the key had basic items
 * (the node is PyTorch's CopySlices, else IndexPutBackward0). */
vkt_status vkt_ag_index_put(const vkt_var *x, const vkt_tensor *view, int n, const vkt_tensor *const *indices,
                            const vkt_var *values, bool accumulate, bool slices, vkt_var *out);

#endif
