/* scan.h: the scan family: cumsum, cumprod, cummax and cummin along one dim (scan.c, shaders/scan.comp;
 * the CPU kernel is cpu/scan.c); and sorting and selection along one dim (sort.c, shaders/sort.comp,
 * cpu/sort.c). */
#ifndef VKT_SCAN_H
#define VKT_SCAN_H

#include "table.h"

/* The scan (op id VKT_OP_CUMSUM..VKT_OP_CUMMIN) of x along dim into a new *out, in dtype (-1: PyTorch's
 * default: int64 for an integer cumsum/cumprod, else x's dtype). cummax and cummin also give the int64
 * positions of the running extremes in a new *indices. */
vkt_status vkt_scan(int id, const vkt_tensor *x, int64_t dim, int dtype, vkt_tensor *out, vkt_tensor *indices);

/* What a scan reads instead of its input tensor where that is a pending expression computed in its load
 * (fuse_scan.c, shaders/scan_fused.glsl): the expression's #define lines; the n tensors bound before the scan's
 * output, the nwritten results it writes first; its push constant words before scan.comp's own (head: the
 * scalars) and after them (tail: each tensor's offset and stride along the row, then the rows' merged shape and
 * strides). launches counts the kernels that read it. */
#define VKT_SCAN_LOAD_DEFINES 8192 /* bytes of a load's #define lines at most, with the terminating NUL */
typedef struct {
  const char *defines;
  const vkt_tensor *const *t;
  int n, nwritten;
  const uint32_t *head, *tail;
  uint32_t nhead, ntail; /* words */
  int launches;
} vkt_scan_load;

/* Runs scan op (a's args, a->in[0] the value the scan reads, for its layout) reading load instead of a->in[0]:
 * the same passes, rows and order as vkt_scan_launch's. */
vkt_status vkt_scan_launch_fused(const vkt_op *op, const vkt_op_args *a, vkt_scan_load *load);

/* vkt_op_args.flags of VKT_OP_SORT: descending (NaN first), else ascending (NaN last). */
#define VKT_SORT_DESCENDING 1u

/* x sorted along dim into new *values and int64 *indices (positions in x). Always stable: equal values
 * keep their order, which is also a valid answer of stable=False. */
vkt_status vkt_sort(const vkt_tensor *x, int64_t dim, bool descending, vkt_tensor *values, vkt_tensor *indices);
/* The k largest (smallest) along dim, sorted, with their positions. */
vkt_status vkt_topk(const vkt_tensor *x, int64_t k, int64_t dim, bool largest, vkt_tensor *values, vkt_tensor *indices);
/* The k-th smallest along dim (k from 1) and its position; keepdim keeps dim as size 1. */
vkt_status vkt_kthvalue(const vkt_tensor *x, int64_t k, int64_t dim, bool keepdim, vkt_tensor *values,
                        vkt_tensor *indices);
/* median (ignore_nan: nanmedian) along dim: the lower of the two middle values and its position; a row
 * with NaN gives its first NaN (nanmedian: the median of the rest). all: of every element (dim is
 * ignored), a 0-d value and no indices (indices may be NULL). */
vkt_status vkt_median(const vkt_tensor *x, int64_t dim, bool all, bool keepdim, bool ignore_nan, vkt_tensor *values,
                      vkt_tensor *indices);
/* mode along dim: the most frequent value of each row (the smallest of equally frequent ones; NaNs are
 * all distinct) and the position of its last occurrence, as PyTorch's. */
vkt_status vkt_mode(const vkt_tensor *x, int64_t dim, bool keepdim, vkt_tensor *values, vkt_tensor *indices);

/* ---- compaction (compact.c): outputs whose size depends on the values; the size is read back ---- */

/* vkt_op_args.iparam[0] of VKT_OP_COMPACT */
enum { VKT_COMPACT_COORDS, VKT_COMPACT_INDEX, VKT_COMPACT_VALUES, VKT_COMPACT_SCATTER };

/* The int64 [count, ndim] coordinates of x's nonzero elements in row-major order. */
vkt_status vkt_nonzero(const vkt_tensor *x, vkt_tensor *out);
/* The distinct values of x (consecutive: of its runs, unsorted) in ascending order, with the group of every
 * element (x's shape) and each value's count, each where asked for (inverse, counts non-NULL). */
vkt_status vkt_unique(const vkt_tensor *x, bool consecutive, vkt_tensor *values, vkt_tensor *inverse,
                      vkt_tensor *counts);
/* The same over the slices of x along dim (unique(dim=)): the distinct slices in lexicographic order (consecutive:
 * of runs of equal slices, in x's order), each slice's group (int64 [x.shape[dim]]) and each group's size. */
vkt_status vkt_unique_dim(const vkt_tensor *x, int64_t dim, bool consecutive, vkt_tensor *values, vkt_tensor *inverse,
                          vkt_tensor *counts);

/* ---- searchsorted and bucketize (search.c) ---- */

/* vkt_op_args.flags of VKT_OP_SEARCHSORTED: count the entries equal to a value as before it */
#define VKT_SEARCH_RIGHT 1u

/* For each of values, the number of entries of its row of seq that sort before it (right: at or before
 * it), seq's order given by sorter (int64, seq's shape) where non-NULL; int64, or int32 with out_int32. */
vkt_status vkt_searchsorted(const vkt_tensor *seq, const vkt_tensor *values, bool right, const vkt_tensor *sorter,
                            bool out_int32, vkt_tensor *out);
/* The layout search.comp and its CPU kernel share (contiguous operands: in[0] the sequence, in[1] the
 * values): entries a row of the sequence, its rows, values a row. */
void vkt_search_layout(const vkt_op_args *a, int64_t *slen, int64_t *rows, int64_t *vlast);

#endif
