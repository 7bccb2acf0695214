/* reduce.c: the reduce family's front-ends (result dtypes, output shapes, PyTorch's rules for empty
 * inputs) and its shader path: reduce.comp with the op's #define, one workgroup per output element
 * (or one invocation per element for short rows). The CPU kernel is cpu/reduce.c. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "fuse.h"
#include "reduce.h"

/* ---- front-ends ---- */

vkt_dtype vkt_natural_compute(vkt_dtype d) {
  if (d == VKT_FLOAT16)
    return VKT_FLOAT32;
  return d == VKT_UINT8 || d == VKT_BOOL ? VKT_INT32 : d;
}

static bool is_float(vkt_dtype d) { return vkt_dtypes[d].is_float; }

/* The result dtype of op id (named name in messages) on input dtype in (PyTorch's), and the dtype the math runs in;
 * or PyTorch's refusal of dtype in. */
static vkt_status result_dtype(int id, const char *name, vkt_dtype in, int given, vkt_dtype *out,
                               vkt_dtype *compute) {
  vkt_dtype d = given >= 0 ? (vkt_dtype)given : in;
  vkt_status st = vkt_op_check_dtype(&vkt_ops[id], in);
  if (st)
    return st;
  switch (id) {
  case VKT_OP_SUM:
  case VKT_OP_PROD: *out = given >= 0 || is_float(in) ? d : VKT_INT64; break;
  case VKT_OP_MEAN:
    if (!is_float(d))
      return vkt_fail(VKT_ERR_RUNTIME,
                      "mean(): could not infer output dtype. %s dtype must be either a floating point or complex "
                      "dtype. Got: %s",
                      given >= 0 ? "Optional" : "Input", vkt_dtypes[d].torch_name);
    *out = d;
    break;
  case VKT_OP_VAR:
    if (!is_float(in)) /* var_mean and std_mean say their own names */
      return vkt_fail(VKT_ERR_RUNTIME, "%s only support floating point and complex dtypes",
                      name && strstr(name, "_mean") ? name : "std and var");
    *out = in;
    break;
  case VKT_OP_ARGMAX:
  case VKT_OP_ARGMIN: *out = VKT_INT64; break;
  case VKT_OP_LOGSUMEXP: *out = is_float(in) ? in : vkt_default_float(); break;
  case VKT_OP_ALL:
  case VKT_OP_ANY: *out = in == VKT_UINT8 ? VKT_UINT8 : VKT_BOOL; break; /* uint8 stays uint8, as in PyTorch */
  default: *out = d; /* amax, amin; softmax and log_softmax, whose refusals vkt_softmax makes */
  }
  /* sum(dtype=...) and friends cast the input first: the math runs in the result's type */
  *compute = vkt_natural_compute(
      id == VKT_OP_ARGMAX || id == VKT_OP_ARGMIN || id == VKT_OP_ALL || id == VKT_OP_ANY ? in : *out);
  return VKT_OK;
}

/* max/min/amax/amin/argmax/argmin have no value for an empty reduction: PyTorch's errors. */
static vkt_status no_identity(const vkt_tensor *x, const vkt_reduce_opts *o) {
  int d = 0;
  while (!(o->dims >> d & 1) || x->shape[d] != 0) /* some reduced dim is empty, or nothing would be */
    d++;
  if (o->all_dims && strncmp(o->name, "arg", 3) == 0) /* PyTorch's argmax and argmin say less, as IndexError */
    return vkt_fail(VKT_ERR_INDEX, "%s(): Expected reduction dim to be specified for input.numel() == 0.", o->name);
  if (o->all_dims)
    return vkt_fail(VKT_ERR_RUNTIME,
                    "%s(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction "
                    "dim with the 'dim' argument.",
                    o->name);
  return vkt_fail(VKT_ERR_INDEX, "%s(): Expected reduction dim %d to have non-zero size.", o->name, d);
}

/* What a reduction over no elements gives: sum 0, prod 1, mean and var NaN, all true, any false, logsumexp
 * -inf (the log of an empty sum). */
static vkt_scalar identity(int id) {
  switch (id) {
  case VKT_OP_LOGSUMEXP: return (vkt_scalar){true, -INFINITY, 0};
  case VKT_OP_PROD:
  case VKT_OP_ALL: return (vkt_scalar){false, 0, 1};
  case VKT_OP_MEAN:
  case VKT_OP_VAR: return (vkt_scalar){true, NAN, 0};
  default: return (vkt_scalar){false, 0, 0};
  }
}

/* A new tensor of the reduction's result shape in *t (lazy: its memory taken when it is computed), and in
 * *view the same storage shaped like the input with size-1 reduced dims, which is what the kernels index. */
static vkt_status alloc_out(const vkt_tensor *x, const vkt_reduce_opts *o, vkt_dtype dtype, int device, bool lazy,
                            vkt_tensor *t, vkt_tensor *view) {
  int64_t full[VKT_MAX_DIMS], kept[VKT_MAX_DIMS];
  int nkept = 0;
  for (int d = 0; d < x->ndim; d++) {
    bool reduced = o->dims >> d & 1;
    full[d] = reduced ? 1 : x->shape[d];
    if (!reduced || o->keepdim)
      kept[nkept++] = full[d];
  }
  vkt_status st = (lazy ? vkt_tensor_empty_lazy : vkt_tensor_empty)(t, device, dtype, nkept, kept);
  if (!st && (st = vkt_view(view, t, x->ndim, full)))
    vkt_tensor_release(t);
  return st;
}

static int64_t reduced_count(const vkt_tensor *x, uint32_t dims) {
  int64_t n = 1;
  for (int d = 0; d < x->ndim; d++)
    if (dims >> d & 1)
      n *= x->shape[d];
  return n;
}

/* A whole large tensor would be one workgroup's work; on a GPU it is split instead into P rows of
 * partial results (one workgroup each), then those are reduced. For dense tensors (in any order of their
 * dims) of at least 2^20 elements with a divisor P of the element count in [64, 1024]. The rows are
 * equally long, so a mean is the mean of the rows' means, and takes no third dispatch to divide a sum. */
#define SPLIT_MIN (1 << 20)

static int64_t split_rows(const vkt_tensor *x, const vkt_reduce_opts *o, int id) {
  int64_t n = vkt_tensor_numel(x);
  bool assoc = id == VKT_OP_SUM || id == VKT_OP_MEAN || id == VKT_OP_AMAX || id == VKT_OP_AMIN || id == VKT_OP_ALL ||
               id == VKT_OP_ANY || id == VKT_OP_LOGSUMEXP; /* not prod: its rounding errors compound across the two
                                                               stages */
  if (!assoc || vkt_tensor_device(x) == VKT_CPU || n < SPLIT_MIN || !vkt_tensor_is_dense(x) ||
      o->dims != (x->ndim ? (1u << x->ndim) - 1 : 0u))
    return 0;
  for (int64_t rows = 1024; rows >= 64; rows--)
    if (n % rows == 0)
      return rows;
  return 0;
}

static vkt_status reduce_split(int id, const vkt_tensor *x, const vkt_reduce_opts *o, int64_t rows, vkt_tensor *out) {
  vkt_tensor grid = {0}, part = {0}, total = {0};
  int64_t shape[2] = {rows, vkt_tensor_numel(x) / rows}, ones[VKT_MAX_DIMS];
  vkt_reduce_opts first = *o, second = *o;
  first.dims = 2u, first.keepdim = false, first.grid_of = x; /* each row of the grid */
  second.dims = 1u, second.keepdim = false;                  /* the partial results */
  /* x fills a span of its storage (in some order of its dims, which a whole-tensor reduction need not
   * follow): the grid reads that span row by row */
  int64_t lo, hi;
  vkt_tensor_extent(x, &lo, &hi);
  vkt_tensor_share(&grid, x);
  grid.ndim = 2, grid.offset = lo;
  grid.shape[0] = shape[0], grid.shape[1] = shape[1], grid.strides[0] = shape[1], grid.strides[1] = 1;
  vkt_status st = vkt_reduce(id, &grid, &first, &part, NULL);
  if (!st)
    st = vkt_reduce(id, &part, &second, &total, NULL);
  for (int d = 0; d < x->ndim; d++)
    ones[d] = 1;
  if (!st)
    st = o->keepdim ? vkt_view(out, &total, x->ndim, ones) : (vkt_tensor_share(out, &total), VKT_OK);
  vkt_tensor *tmp[] = {&grid, &part, &total};
  for (int k = 0; k < 3; k++)
    vkt_tensor_release(tmp[k]);
  return st;
}

/* A reduction over the leading dims of a dense tensor into few outputs (a bias's gradient, [8192, 1024] summed
 * over its rows) is read by columns, 32 outputs a workgroup, each walking every row: 32 workgroups on an H200's
 * 132 multiprocessors, 103 us for 32 MiB. On a Vulkan device long columns are cut instead into P pieces of
 * rows, the tensor seen as [P, rows / P, cols] (a view), each piece reduced apart, then the P partial results:
 * about 1024 workgroups, so that each multiprocessor has enough reads in flight. Float32 sums, means (of equally
 * many elements), amax and amin. A pending expression is cut the same way: the first stage computes it in its
 * load through the view (fuse_reduce.c). H200, relu's backward summed into a bias's gradient at [8192, 1024],
 * us: one pass 436; 256 workgroups 59, 512 36, 1024 26 (against 27 + 26 for relu's backward written, then
 * summed by 256 workgroups). */
#define RED_SHORT_ROW 32 /* rows up to this long take one invocation each instead of a workgroup */
#define RED_COLUMNS 32   /* rows a workgroup takes by columns (reduce.glsl's COLS) */
#define COLUMN_SPLIT_WORKGROUPS 1024
#define COLUMN_SPLIT_MIN_ROWS 2048 /* shorter walks take a few microseconds */
#define COLUMN_SPLIT_MIN_PIECE 64  /* rows */

static int64_t column_pieces(const vkt_tensor *x, const vkt_reduce_opts *o, int id, int64_t *rows, int64_t *cols) {
  int lead = __builtin_popcount(o->dims);
  bool assoc = id == VKT_OP_SUM || id == VKT_OP_MEAN || id == VKT_OP_AMAX || id == VKT_OP_AMIN;
  bool wide_sum = o->dtype < 0 || o->dtype == VKT_FLOAT32 || o->dtype == VKT_FLOAT64; /* partials not rounded */
  if (!assoc || !wide_sum || vkt_tensor_device(x) == VKT_CPU || x->dtype != VKT_FLOAT32 ||
      lead == 0 || lead == x->ndim || o->dims != (1u << lead) - 1 || !vkt_tensor_is_contiguous(x) || o->grid_of)
    return 0;
  *rows = reduced_count(x, o->dims), *cols = vkt_tensor_numel(x) / (*rows ? *rows : 1);
  int64_t groups = (*cols + RED_COLUMNS - 1) / RED_COLUMNS;
  if (*rows < COLUMN_SPLIT_MIN_ROWS || *cols < 2 * RED_COLUMNS || groups * 2 > COLUMN_SPLIT_WORKGROUPS)
    return 0;
  for (int64_t p = COLUMN_SPLIT_WORKGROUPS / groups; p >= 2; p--)
    if (*rows % p == 0 && *rows / p >= COLUMN_SPLIT_MIN_PIECE)
      return p;
  return 0;
}

static vkt_status reduce_columns(int id, const vkt_tensor *x, const vkt_reduce_opts *o, int64_t pieces, int64_t rows,
                                 int64_t cols, vkt_tensor *out) {
  vkt_tensor cut = {0}, part = {0}, total = {0};
  vkt_reduce_opts first = *o, second = *o;
  first.dims = 2u, first.keepdim = false;   /* each piece's rows */
  second.dims = 1u, second.keepdim = false; /* the pieces' results */
  second.dtype = -1;
  int64_t shape[VKT_MAX_DIMS], nkept = 0;
  for (int d = 0; d < x->ndim; d++)
    if (!(o->dims >> d & 1) || o->keepdim)
      shape[nkept++] = o->dims >> d & 1 ? 1 : x->shape[d];
  vkt_status st = vkt_view(&cut, x, 3, (int64_t[]){pieces, rows / pieces, cols});
  if (!st)
    st = vkt_reduce(id, &cut, &first, &part, NULL);
  if (!st)
    st = vkt_reduce(id, &part, &second, &total, NULL);
  if (!st)
    st = vkt_view(out, &total, (int)nkept, shape);
  vkt_tensor *tmp[] = {&cut, &part, &total};
  for (int k = 0; k < 3; k++)
    vkt_tensor_release(tmp[k]);
  return st;
}

/* Reduced dims in two groups with kept dims between them (a bias's gradient, [N, C, H, W] summed over N, H and W)
 * made one layout whose rows are few and long, read in strided pieces: 64 workgroups for [32, 64, 56, 56] on an
 * H100, 129 us for its 26 MB. On a Vulkan device the trailing group of a contiguous float32 tensor is reduced
 * first (rows over contiguous memory, one a kept element), then the rest, for 2^20 elements or more (a smaller one
 * is not worth a second dispatch). Sums, means (of equally many elements in each part), amax and amin. The mask of
 * those trailing dims, or 0. */
static uint32_t trailing_group(const vkt_tensor *x, const vkt_reduce_opts *o, int id) {
  bool assoc = id == VKT_OP_SUM || id == VKT_OP_MEAN || id == VKT_OP_AMAX || id == VKT_OP_AMIN;
  if (!assoc || vkt_tensor_device(x) == VKT_CPU || x->dtype != VKT_FLOAT32 || o->grid_of ||
      vkt_tensor_numel(x) < SPLIT_MIN || !vkt_tensor_is_contiguous(x))
    return 0;
  uint32_t inner = 0;
  for (int d = x->ndim - 1; d >= 0 && (o->dims >> d & 1); d--)
    inner |= 1u << d;
  return inner && inner != o->dims && reduced_count(x, inner) > 1 ? inner : 0;
}

static vkt_status reduce_trailing_first(int id, const vkt_tensor *x, const vkt_reduce_opts *o, uint32_t inner,
                                        vkt_tensor *out) {
  vkt_tensor part = {0};
  vkt_reduce_opts first = *o;
  first.dims = inner, first.keepdim = true;
  vkt_status st = vkt_reduce(id, x, &first, &part, NULL);
  if (!st)
    st = vkt_reduce(id, &part, o, out, NULL); /* the trailing dims are 1 now: only the rest reduce */
  vkt_tensor_release(&part);
  return st;
}

vkt_status vkt_reduce(int id, const vkt_tensor *x, const vkt_reduce_opts *o, vkt_tensor *out, vkt_tensor *indices) {
  vkt_tensor view = {0}, iview = {0}; /* out and indices shaped like x, for the kernels */
  int64_t rows = indices ? 0 : split_rows(x, o, id), cols, pieces;
  if (rows)
    return reduce_split(id, x, o, rows, out);
  uint32_t inner = indices ? 0 : trailing_group(x, o, id);
  if (inner)
    return reduce_trailing_first(id, x, o, inner, out);
  if (!indices && (pieces = column_pieces(x, o, id, &rows, &cols)))
    return reduce_columns(id, x, o, pieces, rows, cols, out);
  vkt_dtype dtype, compute;
  int64_t nred = reduced_count(x, o->dims);
  vkt_status st = result_dtype(id, o->name, x->dtype, o->dtype, &dtype, &compute);
  if (st)
    return st;
  if (nred == 0 && (id == VKT_OP_AMAX || id == VKT_OP_AMIN || id == VKT_OP_ARGMAX || id == VKT_OP_ARGMIN))
    return no_identity(x, o);
  *out = (vkt_tensor){0};
  if (indices)
    *indices = (vkt_tensor){0};
  /* a pending expression it reads is computed in its load (fuse.h), max/min's indices found there too */
  bool defer = nred > 0 && vkt_fuse_reduce_wanted(id, o->grid_of ? o->grid_of : x, &compute);
  if ((st = alloc_out(x, o, dtype, vkt_tensor_device(x), defer, out, &view)) ||
      (indices && (st = alloc_out(x, o, VKT_INT64, vkt_tensor_device(x), defer, indices, &iview))))
    goto finish;
  vkt_op_args args = {.out = &view,
                      .out2 = indices ? &iview : NULL,
                      .in = {x},
                      .nin = 1,
                      .compute = compute,
                      .param = {{true, o->correction, 0}},
                      .dims = o->dims,
                      .flags = (o->std ? VKT_REDUCE_SQRT : 0) | (o->grid_of ? VKT_REDUCE_GRID : 0)};
  if (defer)
    st = vkt_fuse_run_or_defer(id, &args);
  else if (vkt_tensor_numel(out) > 0)
    st = nred == 0 ? vkt_fill_(&view, identity(id)) : vkt_op_run(id, &args);
finish:
  vkt_tensor_release(&view);
  vkt_tensor_release(&iview);
  if (st && out->storage)
    vkt_tensor_release(out);
  if (st && indices && indices->storage)
    vkt_tensor_release(indices);
  return st;
}

vkt_status vkt_softmax(int id, const vkt_tensor *x, int64_t dim, int dtype, vkt_tensor *out) {
  vkt_dtype result, compute;
  int d;
  vkt_status st;
  if ((st = vkt_dim_wrap(dim, x->ndim, &d)) || (st = result_dtype(id, NULL, x->dtype, dtype, &result, &compute)))
    return st;
  /* PyTorch's kernels, one for the last dim and one for the others, take floats only; an empty input runs none */
  if (!is_float(result) && vkt_tensor_numel(x) > 0)
    return vkt_fail(VKT_ERR_NOTIMPL, "\"%s_%skernel_impl\" not implemented for '%s'", vkt_ops[id].name,
                    d == x->ndim - 1 || x->ndim == 0 ? "lastdim_" : "", vkt_dtypes[result].torch_name);
  /* a pending expression it reads is computed in its load (fuse.h) */
  bool defer = vkt_tensor_numel(x) > 0 && vkt_fuse_reduce_wanted(id, x, &compute);
  if ((st = (defer ? vkt_tensor_empty_lazy : vkt_tensor_empty)(out, vkt_tensor_device(x), result, x->ndim, x->shape)))
    return st;
  vkt_op_args args = {.out = out, .in = {x}, .nin = 1, .compute = compute, .dims = x->ndim ? 1u << d : 0};
  if (defer)
    st = vkt_fuse_run_or_defer(id, &args);
  else if (vkt_tensor_numel(out) > 0)
    st = vkt_op_run(id, &args);
  if (st)
    vkt_tensor_release(out);
  return st;
}

/* ---- the index layout ---- */

/* Merges the dims of one half (reduced or kept) of the input and output into rank, shape and strides. */
static int merge_half(const vkt_op_args *a, bool reduced, int64_t *shape, int64_t *stride) {
  vkt_tensor in = {.ndim = 0}, out = {.ndim = 0};
  for (int d = 0; d < a->in[0]->ndim; d++) {
    if ((bool)(a->dims >> d & 1) != reduced)
      continue;
    in.shape[in.ndim] = out.shape[out.ndim] = a->in[0]->shape[d];
    in.strides[in.ndim++] = a->in[0]->strides[d];
    /* a reduction's output has size 1 where the input is reduced: stride 0 keeps it merging */
    out.strides[out.ndim++] = a->out->shape[d] == a->in[0]->shape[d] ? a->out->strides[d] : 0;
  }
  return vkt_merge_dims(2, (const vkt_tensor *[]){&in, &out}, shape, stride);
}

void vkt_reduce_layout_of(const vkt_op_args *a, vkt_reduce_layout *l) {
  l->krank = merge_half(a, false, l->kshape, l->kstride);
  l->rrank = merge_half(a, true, l->rshape, l->rstride);
  l->nout = l->nred = 1;
  for (int d = 0; d < l->krank; d++)
    l->nout *= l->kshape[d];
  for (int d = 0; d < l->rrank; d++)
    l->nred *= l->rshape[d];
}

/* ---- the shader path ---- */

#define RED_MAX_RANK 4

typedef enum { RED_ROWS, RED_PER_THREAD, RED_BY_COLUMNS, RED_TEAMS } red_mode;
static const struct {
  const char *define;
  uint64_t rows; /* a workgroup takes */
} red_modes[] = {[RED_ROWS] = {"", 1},
                 [RED_PER_THREAD] = {"#define PER_THREAD\n", 256},
                 [RED_BY_COLUMNS] = {"#define COLUMNS\n", RED_COLUMNS},
                 [RED_TEAMS] = {"#define TEAMS\n", 256 / 32}};

/* Rows up to this long take a team of 32 invocations each (reduce.glsl's TEAMS), 8 rows a workgroup. On an
 * H200, sum / softmax / var of the last dim, us: 65536 x 64 128 / 175 / 225 -> 27 / 46 / 47, 32768 x 256
 * 85 / 129 / 151 -> 18 / 33 / 30, 8192 x 1024 26 / 44 / 47 -> 12 / 24 / 21. Longer rows keep a workgroup each:
 * softmax of 4096 x 4096 just made by a product took 52 us so, 66 us by teams. */
#define RED_TEAM_ROW 1024

/* How the shader's invocations share the rows: one each for short rows; 32 rows a workgroup where rows
 * start next to each other in memory but their own elements lie apart (a matrix's column sums), which a
 * workgroup on one row would read an element per memory transaction; a team of 32 invocations for rows up
 * to RED_TEAM_ROW; else a workgroup a row. */
static red_mode mode_of(const vkt_reduce_layout *l) {
  if (l->nred <= RED_SHORT_ROW)
    return RED_PER_THREAD;
  bool apart = l->krank > 0 && l->kstride[l->krank - 1] == 1 && l->nout >= 2 * RED_COLUMNS;
  for (int d = 0; d < l->rrank; d++)
    apart = apart && (l->rstride[d] != 1 || l->rshape[d] == 1);
  return apart ? RED_BY_COLUMNS : l->nred <= RED_TEAM_ROW && l->nout > 1 ? RED_TEAMS : RED_ROWS;
}

const char *vkt_reduce_mode(const vkt_reduce_layout *l, uint64_t *rows) {
  red_mode mode = mode_of(l);
  *rows = red_modes[mode].rows;
  return red_modes[mode].define;
}

typedef struct {
  uint32_t nout, nred, krank, rrank;
  uint32_t offset[3];                                       /* elements: input, output, indices */
  float correction;                                         /* var */
  uint32_t kshape[RED_MAX_RANK], kstride[2 * RED_MAX_RANK]; /* elements: input, then output */
  uint32_t rshape[RED_MAX_RANK], rstride[2 * RED_MAX_RANK];
} reduce_push;
static_assert(sizeof(reduce_push) == 128, "reduce_push must match shaders/reduce.glsl");

/* The operands a launch binds, in binding order: the output, the input, the indices if any. */
static int operands(const vkt_op_args *a, const vkt_tensor **t) {
  t[0] = a->out, t[1] = a->in[0], t[2] = a->out2;
  return a->out2 ? 3 : 2;
}

bool vkt_reduce_supports(const vkt_op *op, const vkt_op_args *a, const char **why) {
  const vkt_tensor *t[3];
  int n = operands(a, t);
  const vkt_adapter_props *p = vkt_device_props(a->out->storage->dev);
  (void)op; /* one rule for every row: float64 needs shaderFloat64, which vkt_operands_fit checks */
  if (!vkt_operands_fit(p, a->compute, n, t, why))
    return false;
  vkt_reduce_layout l;
  vkt_reduce_layout_of(a, &l);
  *why = "more than 4 kept or 4 reduced dimensions that cannot be merged";
  if (l.krank > RED_MAX_RANK || l.rrank > RED_MAX_RANK)
    return false;
  *why = "more than 2^32 elements"; /* less a workgroup, so the shader's row loops cannot wrap */
  return l.nout <= UINT32_MAX - 256 && l.nred <= UINT32_MAX - 256;
}

static reduce_push push_of(const vkt_op_args *a, const vkt_reduce_layout *l) {
  reduce_push p = {.nout = (uint32_t)l->nout,
                   .nred = (uint32_t)l->nred,
                   .krank = (uint32_t)l->krank,
                   .rrank = (uint32_t)l->rrank,
                   .offset = {(uint32_t)a->in[0]->offset, (uint32_t)a->out->offset},
                   .correction = (float)a->param[0].f};
  if (a->out2)
    p.offset[2] = (uint32_t)a->out2->offset;
  for (int k = 0; k < 2; k++) {
    for (int d = 0; d < l->krank; d++)
      p.kstride[k * RED_MAX_RANK + d] = (uint32_t)l->kstride[k * VKT_MAX_DIMS + d];
    for (int d = 0; d < l->rrank; d++)
      p.rstride[k * RED_MAX_RANK + d] = (uint32_t)l->rstride[k * VKT_MAX_DIMS + d];
  }
  for (int d = 0; d < l->krank; d++)
    p.kshape[d] = (uint32_t)l->kshape[d];
  for (int d = 0; d < l->rrank; d++)
    p.rshape[d] = (uint32_t)l->rshape[d];
  return p;
}

int vkt_conversion_defines(char *buf, size_t n, const char *type, vkt_dtype in, vkt_dtype out, vkt_dtype compute) {
  bool cf = vkt_dtypes[compute].is_float;
  const char *load = "(x)", *store = "TO(v)";
  if (in == VKT_UINT8 || in == VKT_BOOL)
    load = "(int(x))";
  else if (in == VKT_FLOAT16)
    load = "(float(x))";
  if (out == VKT_BOOL)
    return vkt_defines_cat(buf, n, "#define LOAD(x) ", type, load, "\n#define STORE(v) TO((v) != ", type,
                           "(0) ? 1 : 0)\n", NULL);
  if (out == VKT_UINT8)
    store = cf ? "TO(int(v))" : "TO(v)";
  else if (out == VKT_FLOAT16 && !cf)
    store = "TO(float(v))";
  return vkt_defines_cat(buf, n, "#define LOAD(x) ", type, load, "\n#define STORE(v) ", store, "\n", NULL);
}

static int shader_defines(char *buf, size_t n, const vkt_op *op, const vkt_op_args *a, const vkt_reduce_layout *l,
                          red_mode mode) {
  int len = vkt_type_defines(buf, n, "TO", a->out->dtype);
  len += vkt_type_defines(buf + len, n - (size_t)len, "TI", a->in[0]->dtype);
  len += vkt_type_defines(buf + len, n - (size_t)len, "C", a->compute);
  len += vkt_type_defines(buf + len, n - (size_t)len, "A", a->compute);
  len += vkt_conversion_defines(buf + len, n - (size_t)len, "A", a->in[0]->dtype, a->out->dtype, a->compute);
  return len + vkt_defines_cat(buf + len, n - (size_t)len, op->define, a->out2 ? "#define WITH_INDICES\n" : "",
                               red_modes[mode].define, l->rrank == 1 ? "#define ONE_REDUCED_DIM\n" : "",
                               a->flags & VKT_REDUCE_SQRT ? "#define TAKE_SQRT\n" : "", NULL);
}

vkt_status vkt_reduce_launch(const vkt_op *op, const vkt_op_args *a) {
  const vkt_tensor *t[3];
  int n = operands(a, t);
  vkt_reduce_layout l;
  vkt_reduce_layout_of(a, &l);
  reduce_push push = push_of(a, &l);
  red_mode mode = mode_of(&l);
  char defines[1024];
  shader_defines(defines, sizeof defines, op, a, &l, mode);
  vkt_device *dev = a->out->storage->dev;
  vkt_pipeline *pipe;
  vkt_status st = vkt_pipeline_get(dev, op->shader, defines, n, sizeof push, &pipe);
  if (st)
    return st;
  vkt_binding b[3];
  for (int k = 0; k < n; k++)
    b[k] = (vkt_binding){&t[k]->storage->alloc, 0, t[k]->storage->alloc.size, k != 1};
  uint32_t groups[3];
  uint64_t batch = 0;
  vkt_groups_for(dev, (l.nout + red_modes[mode].rows - 1) / red_modes[mode].rows, groups);
  if ((st = vkt_stream_dispatch(dev, pipe, b, n, &push, sizeof push, groups, &batch)))
    return st;
  for (int k = 0; k < n; k++)
    vkt_storage_touched(t[k]->storage, batch);
  return VKT_OK;
}
