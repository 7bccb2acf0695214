/* reduce.h: the reduce family: sum, mean, prod, amax/amin (max/min with indices), argmax/argmin, var/std,
 * all, any and logsumexp over a set of dims, and softmax/log_softmax along one; and the index layout that its shader
 * launch and its CPU kernel share. */
#ifndef VKT_REDUCE_H
#define VKT_REDUCE_H

#include "table.h"

/* vkt_op_args.flags of VKT_OP_VAR: take the square root of the variance (std). */
#define VKT_REDUCE_SQRT 1u
/* The input is the first stage's grid of a split reduction: the span of a dense tensor read row by row. */
#define VKT_REDUCE_GRID 2u

typedef struct {
  const char *name;          /* the Python name for messages: "max", "amax", "std", ... */
  uint32_t dims;             /* bit d set: reduce input dim d */
  bool keepdim;              /* reduced dims stay as size 1 */
  int dtype;                 /* the dtype= argument (sum, prod, mean, softmax), or -1 */
  double correction;         /* var, std: divide by max(0, n - correction) */
  bool std;                  /* var: take the square root */
  bool all_dims;             /* dim=None: changes the wording of empty-input errors only */
  const vkt_tensor *grid_of; /* the input is a grid over the span of this dense tensor (VKT_REDUCE_GRID) */
} vkt_reduce_opts;

/* Reduces x over o->dims into a new *out (op id VKT_OP_SUM..VKT_OP_ANY). With indices non-NULL (amax or
 * amin only: max and min along a dim) the positions of the extremes go to a new int64 *indices too. */
vkt_status vkt_reduce(int id, const vkt_tensor *x, const vkt_reduce_opts *o, vkt_tensor *out, vkt_tensor *indices);
/* softmax or log_softmax of x along dim, computed in dtype (-1: x's dtype, which must be floating). */
vkt_status vkt_softmax(int id, const vkt_tensor *x, int64_t dim, int dtype, vkt_tensor *out);

/* The index space of a reduction split in two halves, kept dims and reduced dims (both in the input's dim
 * order, which makes the reduced index the row-major position argmax reports), each merged to the fewest
 * dims. Strides are elements: [0, VKT_MAX_DIMS) of the input, [VKT_MAX_DIMS, 2 * VKT_MAX_DIMS) of out. */
typedef struct {
  int krank, rrank;
  int64_t nout, nred; /* kept elements (output rows), elements reduced into each */
  int64_t kshape[VKT_MAX_DIMS], kstride[2 * VKT_MAX_DIMS];
  int64_t rshape[VKT_MAX_DIMS], rstride[2 * VKT_MAX_DIMS]; /* out's are 0 except for softmax */
} vkt_reduce_layout;

void vkt_reduce_layout_of(const vkt_op_args *a, vkt_reduce_layout *l);
/* How reduce.comp's invocations share layout l's rows: the #define line that says so, and in *rows the
 * rows a workgroup takes. The order a row's elements are merged in follows from it. */
const char *vkt_reduce_mode(const vkt_reduce_layout *l, uint64_t *rows);

/* The type the math of an op on dtype d runs in: float32 for float16, int32 for 8-bit types. */
vkt_dtype vkt_natural_compute(vkt_dtype d);
/* The #define lines LOAD(x): storage -> compute, STORE(v): compute -> storage, for a shader reading TI
 * (dtype in) and writing TO (dtype out) that names its compute type `type` ("C", or reduce.glsl's "A"); 8- and
 * 16-bit values convert only to and from 32-bit ones of their kind without the adapter's 8/16-bit arithmetic. */
int vkt_conversion_defines(char *buf, size_t n, const char *type, vkt_dtype in, vkt_dtype out, vkt_dtype compute);

/* ---- composite reductions (reduce_composite.c): other ops of vkt in sequence ---- */

/* sum (VKT_OP_SUM) or mean (VKT_OP_MEAN) of the non-NaN elements. */
vkt_status vkt_nan_reduce(int id, const vkt_tensor *x, const vkt_reduce_opts *o, vkt_tensor *out);
/* The int64 count of nonzero elements over o->dims (no keepdim). */
vkt_status vkt_count_nonzero(const vkt_tensor *x, const vkt_reduce_opts *o, vkt_tensor *out);
/* Whether any element of x is nonzero, read to the host (*out): a wait for the device. */
vkt_status vkt_any_read(const vkt_tensor *x, bool *out);
/* linalg.vector_norm: (sum |x|^ord)^(1/ord) over o->dims; ord inf/-inf: max/min |x|; 0: the nonzero count;
 * o->dtype casts x first. */
vkt_status vkt_vector_norm(const vkt_tensor *x, double ord, const vkt_reduce_opts *o, vkt_tensor *out);
/* linalg.matrix_norm over dims (d0, d1): fro (ord ignored), or ord 1, -1 (max/min column sum of |x|), inf,
 * -inf (max/min row sum). */
vkt_status vkt_matrix_norm(const vkt_tensor *x, bool fro, double ord, int64_t d0, int64_t d1, bool keepdim, int dtype,
                           vkt_tensor *out);

/* Offsets (elements) of element i (< the product of shape) of a merged half of a layout in the input (at[0]) and
 * the output (at[1]): the CPU kernels' walk over the kept or the reduced dims. What is left of i after the inner
 * dims is the outermost coordinate, with no division (a row's cost where rows are short). */
static inline void vkt_reduce_locate(int rank, const int64_t *shape, const int64_t *stride, int64_t i, int64_t at[2]) {
  at[0] = at[1] = 0;
  for (int d = rank - 1; d > 0; d--) {
    int64_t c = i % shape[d];
    i /= shape[d];
    at[0] += c * stride[d];
    at[1] += c * stride[VKT_MAX_DIMS + d];
  }
  if (rank > 0) {
    at[0] += i * stride[0];
    at[1] += i * stride[VKT_MAX_DIMS];
  }
}

#endif
