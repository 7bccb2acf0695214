/* sort.c: sort, topk, kthvalue, median, nanmedian and mode: their front-ends (PyTorch's checks and shapes) and the
 * shader path, sort.comp's bitonic network. A row that fits a block is sorted by one workgroup in shared memory. A
 * longer one is padded to a power of two P, its blocks sorted, and the network finished by global compare-exchange
 * passes (steps wider than a block) and shared-memory passes (the rest of each stage). topk of a long row with k at
 * most 32 takes topk.comp, one read of the row; with k at most half a block, it sorts blocks and keeps each block's
 * best k, again and again until one block holds them all. The CPU kernel is cpu/sort.c. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "radix.h"
#include "reduce.h"
#include "scan.h"
#include "shape.h"

/* ---- front-ends ---- */

/* Runs the sort op from x into values and indices, allocated with x's shape but m entries along d. */
static vkt_status sort_into(const vkt_tensor *x, int d, int64_t m, bool descending, vkt_tensor *values,
                            vkt_tensor *indices) {
  int64_t shape[VKT_MAX_DIMS];
  memcpy(shape, x->shape, sizeof *shape * (size_t)x->ndim);
  if (x->ndim)
    shape[d] = m;
  int device = vkt_tensor_device(x);
  *values = *indices = (vkt_tensor){0};
  vkt_status st;
  if ((st = vkt_tensor_empty(values, device, x->dtype, x->ndim, shape)) ||
      (st = vkt_tensor_empty(indices, device, VKT_INT64, x->ndim, shape)))
    goto finish;
  vkt_op_args args = {.out = values,
                      .out2 = indices,
                      .in = {x},
                      .nin = 1,
                      .compute = vkt_natural_compute(x->dtype),
                      .dims = x->ndim ? 1u << d : 0,
                      .flags = descending ? VKT_SORT_DESCENDING : 0};
  if (vkt_tensor_numel(values) > 0)
    st = vkt_op_run(VKT_OP_SORT, &args);
finish:
  if (st) {
    vkt_tensor_release(values);
    vkt_tensor_release(indices);
  }
  return st;
}

static int64_t row_length(const vkt_tensor *x, int d) { return x->ndim ? x->shape[d] : 1; }

vkt_status vkt_sort(const vkt_tensor *x, int64_t dim, bool descending, vkt_tensor *values, vkt_tensor *indices) {
  int d;
  vkt_status st = vkt_dim_wrap(dim, x->ndim ? x->ndim : 1, &d);
  return st ? st : sort_into(x, d, row_length(x, d), descending, values, indices);
}

vkt_status vkt_topk(const vkt_tensor *x, int64_t k, int64_t dim, bool largest, vkt_tensor *values,
                    vkt_tensor *indices) {
  int d;
  vkt_status st = vkt_dim_wrap(dim, x->ndim ? x->ndim : 1, &d);
  if (st)
    return st;
  if (k < 0 || k > row_length(x, d))
    return vkt_fail(VKT_ERR_RUNTIME, "selected index k out of range");
  st = vkt_dtype_refusal(VKT_NOT_BOOL | VKT_REFUSED_RUNTIME, "topk does not support bool dtypes on CPU", x->dtype);
  if (st)
    return st;
  return sort_into(x, d, k, largest, values, indices);
}

vkt_status vkt_kthvalue(const vkt_tensor *x, int64_t k, int64_t dim, bool keepdim, vkt_tensor *values,
                        vkt_tensor *indices) {
  int d;
  vkt_tensor v = {0}, i = {0}, vs = {0}, is = {0};
  vkt_status st = vkt_dim_wrap(dim, x->ndim ? x->ndim : 1, &d);
  if (st)
    return st;
  if (k < 1 || k > row_length(x, d))
    return vkt_fail(VKT_ERR_RUNTIME, "kthvalue(): selected number k out of range for dimension %d", d);
  if (x->ndim && (st = vkt_dtype_refusal(VKT_NOT_BOOL, "kthvalue_cpu", x->dtype))) /* PyTorch copies a 0-d one */
    return st;
  if ((st = sort_into(x, d, k, false, &v, &i)))
    return st;
  if (x->ndim == 0) {
    vkt_tensor_share(values, &v), vkt_tensor_share(indices, &i);
  } else {
    if (keepdim)
      st = vkt_slice(&vs, &v, d, k - 1, k, 1), st = st ? st : vkt_slice(&is, &i, d, k - 1, k, 1);
    else
      st = vkt_select(&vs, &v, d, k - 1), st = st ? st : vkt_select(&is, &i, d, k - 1);
    /* new tensors of their own, as PyTorch's, not views into the k entries */
    if (!st && !(st = vkt_contiguous(values, &vs)) && (st = vkt_contiguous(indices, &is)))
      vkt_tensor_release(values);
  }
  vkt_tensor *tmp[] = {&v, &i, &vs, &is};
  for (int n = 0; n < 4; n++)
    vkt_tensor_release(tmp[n]);
  return st;
}

/* The position of each row's median in its sorted row, shaped like x with dim d of size 1: (n - 1) / 2;
 * for floats, with c the row's count of non-NaN values, median: c where c < n (the first NaN, which the
 * stable sort puts first of the NaNs), nanmedian: (c - 1) / 2, or (n - 1) / 2 where c is 0. */
static vkt_status median_position(const vkt_tensor *x, int d, bool ignore_nan, vkt_tensor *pos) {
  int64_t n = x->shape[d], shape[VKT_MAX_DIMS];
  vkt_scalar one = {false, 0, 1};
  vkt_operand xo = {.t = x};
  if (!vkt_dtypes[x->dtype].is_float) {
    memcpy(shape, x->shape, sizeof *shape * (size_t)x->ndim);
    shape[d] = 1;
    vkt_status st = vkt_tensor_empty(pos, vkt_tensor_device(x), VKT_INT64, x->ndim, shape);
    if (!st && (st = vkt_fill_(pos, (vkt_scalar){false, 0, (n - 1) / 2})))
      vkt_tensor_release(pos);
    return st;
  }
  vkt_tensor ok = {0}, c = {0}, t = {0}, u = {0}, all_nan = {0};
  vkt_reduce_opts sum = {.name = "sum", .dims = 1u << d, .keepdim = true, .dtype = -1};
  vkt_status st;
  if ((st = vkt_binary(VKT_OP_EQ, xo, xo, one, NULL, &ok)) || (st = vkt_reduce(VKT_OP_SUM, &ok, &sum, &c, NULL)))
    goto finish;
  vkt_operand co = {.t = &c};
  /* median: the first NaN where there is one (c < n); nanmedian: the middle of the c non-NaN values, or of
   * the NaNs where they are all (as PyTorch) */
  vkt_operand middle = {.s = {false, 0, (n - 1) / 2}};
  if (!ignore_nan) {
    if (!(st = vkt_binary(VKT_OP_EQ, co, (vkt_operand){.s = {false, 0, n}}, one, NULL, &t)))
      st = vkt_where(&t, middle, co, pos);
  } else if (!(st = vkt_binary(VKT_OP_SUB, co, (vkt_operand){.s = one}, one, NULL, &t)) &&
             !(st = vkt_binary(VKT_OP_DIV_FLOOR, (vkt_operand){.t = &t}, (vkt_operand){.s = {false, 0, 2}}, one, NULL,
                               &u)) &&
             !(st = vkt_binary(VKT_OP_EQ, co, (vkt_operand){.s = {false, 0, 0}}, one, NULL, &all_nan))) {
    st = vkt_where(&all_nan, middle, (vkt_operand){.t = &u}, pos);
  }
finish:
  vkt_tensor_release(&ok);
  vkt_tensor_release(&c);
  vkt_tensor_release(&t);
  vkt_tensor_release(&u);
  vkt_tensor_release(&all_nan);
  return st;
}

/* median along dim d of a tensor with dims */
static vkt_status median_dim(const vkt_tensor *x, int d, bool keepdim, bool ignore_nan, vkt_tensor *values,
                             vkt_tensor *indices) {
  vkt_tensor sv = {0}, si = {0}, pos = {0}, v = {0}, i = {0};
  vkt_status st;
  if (x->shape[d] == 0)
    return vkt_fail(VKT_ERR_INDEX, "%s(): Expected reduction dim %d to have non-zero size.",
                    ignore_nan ? "nanmedian" : "median", d);
  if ((st = vkt_dtype_refusal(VKT_NOT_BOOL, "median_out", x->dtype)))
    return st;
  if ((st = sort_into(x, d, x->shape[d], false, &sv, &si)) || (st = median_position(x, d, ignore_nan, &pos)) ||
      (st = vkt_gather(&sv, d, &pos, &v)) || (st = vkt_gather(&si, d, &pos, &i)))
    goto finish;
  int64_t dims[1] = {d};
  if (keepdim) {
    vkt_tensor_share(values, &v), vkt_tensor_share(indices, &i);
  } else if (!(st = vkt_squeeze(values, &v, 1, dims)) && (st = vkt_squeeze(indices, &i, 1, dims))) {
    vkt_tensor_release(values);
  }
finish:
  vkt_tensor_release(&sv);
  vkt_tensor_release(&si);
  vkt_tensor_release(&pos);
  vkt_tensor_release(&v);
  vkt_tensor_release(&i);
  return st;
}

/* The median (and mode) of a 0-d tensor along its dim: the element itself, at position 0. */
static vkt_status element_itself(const vkt_tensor *x, vkt_tensor *values, vkt_tensor *indices) {
  vkt_status st = vkt_clone(values, x);
  if (!st && (st = vkt_tensor_empty(indices, vkt_tensor_device(x), VKT_INT64, 0, NULL)))
    vkt_tensor_release(values);
  return st ? st : vkt_fill_(indices, (vkt_scalar){false, 0, 0});
}

/* PyTorch's median of no elements: NaN, which its kernel converts to an integer dtype as x86 does: the lowest int32
 * or int64, that int32's low byte in uint8, and true. */
static vkt_scalar empty_median(vkt_dtype d) {
  switch (d) {
  case VKT_INT64: return (vkt_scalar){false, 0, INT64_MIN};
  case VKT_INT32: return (vkt_scalar){false, 0, INT32_MIN};
  case VKT_UINT8: return (vkt_scalar){false, 0, 0};
  case VKT_BOOL: return (vkt_scalar){false, 0, 1};
  default: return (vkt_scalar){true, NAN, 0};
  }
}

vkt_status vkt_median(const vkt_tensor *x, int64_t dim, bool all, bool keepdim, bool ignore_nan, vkt_tensor *values,
                      vkt_tensor *indices) {
  vkt_tensor flat = {0}, dense = {0}, i = {0};
  int d;
  vkt_status st;
  if (!all && (st = vkt_dim_wrap(dim, x->ndim ? x->ndim : 1, &d)))
    return st;
  int64_t n = vkt_tensor_numel(x);
  if (!all && x->ndim == 0)
    return (st = vkt_dtype_refusal(VKT_NOT_BOOL, "median_out", x->dtype)) ? st : element_itself(x, values, indices);
  if (!all)
    return median_dim(x, d, keepdim, ignore_nan, values, indices);
  if (n == 0) {
    if (!(st = vkt_tensor_empty(values, vkt_tensor_device(x), x->dtype, 0, NULL)) &&
        (st = vkt_fill_(values, empty_median(x->dtype))))
      vkt_tensor_release(values);
    return st;
  }
  if ((st = vkt_dtype_refusal(VKT_NOT_BOOL, "median_cpu", x->dtype)))
    return st;
  vkt_tensor v = {0};
  if (!(st = vkt_contiguous(&dense, x)) && !(st = vkt_view(&flat, &dense, 1, &n)) &&
      !(st = median_dim(&flat, 0, false, ignore_nan, &v, &i)))
    vkt_tensor_share(values, &v);
  vkt_tensor *tmp[] = {&flat, &dense, &i, &v};
  for (int k = 0; k < 4; k++)
    vkt_tensor_release(tmp[k]);
  return st;
}

/* flags[..., 0, ...] = true, flags[..., j, ...] = v[j] != v[j - 1] along d: where a run of equal values
 * starts in each (sorted) row */
static vkt_status run_starts(const vkt_tensor *v, int d, vkt_tensor *flags) {
  int64_t n = v->shape[d];
  vkt_tensor head = {0}, rest = {0}, a = {0}, b = {0};
  vkt_status st = vkt_tensor_empty(flags, vkt_tensor_device(v), VKT_BOOL, v->ndim, v->shape);
  if (!st && !(st = vkt_slice(&head, flags, d, 0, 1, 1)) && !(st = vkt_fill_(&head, (vkt_scalar){false, 0, 1})) &&
      !(st = vkt_slice(&rest, flags, d, 1, n, 1)) && !(st = vkt_slice(&a, v, d, 1, n, 1)) &&
      !(st = vkt_slice(&b, v, d, 0, n - 1, 1)))
    st = vkt_binary(VKT_OP_NE, (vkt_operand){.t = &a}, (vkt_operand){.t = &b}, (vkt_scalar){false, 0, 1}, &rest, NULL);
  vkt_tensor_release(&head);
  vkt_tensor_release(&rest);
  vkt_tensor_release(&a);
  vkt_tensor_release(&b);
  if (st && flags->storage)
    vkt_tensor_release(flags);
  return st;
}

/* The positions 0..n-1 along dim d of an ndim-dim tensor (size 1 elsewhere), int64. */
static vkt_status positions(int device, int ndim, int d, int64_t n, vkt_tensor *out) {
  vkt_tensor line = {0};
  int64_t shape[VKT_MAX_DIMS];
  for (int k = 0; k < ndim; k++)
    shape[k] = k == d ? n : 1;
  vkt_status st = vkt_arange(&line, device, VKT_INT64, (vkt_scalar){false, 0, 0}, (vkt_scalar){false, 0, n},
                             (vkt_scalar){false, 0, 1});
  if (!st)
    st = vkt_view(out, &line, ndim, shape);
  vkt_tensor_release(&line);
  return st;
}

/* Each row sorted; the end of its longest run of equal values (the first such run: the smallest value) is
 * where j - (the start of j's run) is largest; the stable sort put the last occurrence there. */
vkt_status vkt_mode(const vkt_tensor *x, int64_t dim, bool keepdim, vkt_tensor *values, vkt_tensor *indices) {
  int d;
  vkt_status st = vkt_dim_wrap(dim, x->ndim ? x->ndim : 1, &d);
  if (st)
    return st;
  if (x->ndim == 0)
    return element_itself(x, values, indices);
  if (x->shape[d] == 0)
    return vkt_fail(VKT_ERR_INDEX, "mode(): Expected reduction dim %d to have non-zero size.", d);
  vkt_tensor sv = {0}, si = {0}, flags = {0}, pos = {0}, starts = {0}, rs = {0}, rsi = {0}, len = {0}, best = {0},
             v = {0}, i = {0};
  vkt_reduce_opts argmax = {.name = "argmax", .dims = 1u << d, .keepdim = true, .dtype = -1};
  int64_t dims[1] = {d};
  if ((st = sort_into(x, d, x->shape[d], false, &sv, &si)) || (st = run_starts(&sv, d, &flags)) ||
      (st = positions(vkt_tensor_device(x), x->ndim, d, x->shape[d], &pos)) ||
      (st = vkt_where(&flags, (vkt_operand){.t = &pos}, (vkt_operand){.s = {false, 0, 0}}, &starts)) ||
      (st = vkt_scan(VKT_OP_CUMMAX, &starts, d, -1, &rs, &rsi)) ||
      (st = vkt_binary(VKT_OP_SUB, (vkt_operand){.t = &pos}, (vkt_operand){.t = &rs}, (vkt_scalar){false, 0, 1}, NULL,
                       &len)) ||
      (st = vkt_reduce(VKT_OP_ARGMAX, &len, &argmax, &best, NULL)) || (st = vkt_gather(&sv, d, &best, &v)) ||
      (st = vkt_gather(&si, d, &best, &i)))
    goto finish;
  if (keepdim)
    vkt_tensor_share(values, &v), vkt_tensor_share(indices, &i);
  else if (!(st = vkt_squeeze(values, &v, 1, dims)) && (st = vkt_squeeze(indices, &i, 1, dims)))
    vkt_tensor_release(values);
finish:;
  vkt_tensor *tmp[] = {&sv, &si, &flags, &pos, &starts, &rs, &rsi, &len, &best, &v, &i};
  for (int k = 0; k < 11; k++)
    vkt_tensor_release(tmp[k]);
  return st;
}

/* ---- the shader path ---- */

#define SORT_MAX_RANK 4
#define SORT_MAX_BLOCK 2048u /* entries a workgroup sorts in shared memory, at most */

typedef enum { SORT_LOCAL, SORT_MERGE_GLOBAL, SORT_MERGE_GLOBAL2, SORT_MERGE_LOCAL } sort_mode;

typedef struct {
  uint32_t nout, n, in_row, out_row, keep, m, nblocks, k, j, krank;
  uint32_t rstride_in, rstride_out, in_offset, out_offset, idx_offset; /* elements */
  uint32_t kshape[SORT_MAX_RANK], kstride[2 * SORT_MAX_RANK];
} sort_push;
static_assert(sizeof(sort_push) == 108, "sort_push must match shaders/sort.comp");

/* One launch: from the user's tensor (in) or a temp row (tv, ti), to a temp row (ov, oi) or the user's
 * outputs (out, idx: FINAL). */
typedef struct {
  const vkt_op_args *a;
  vkt_reduce_layout l;
  int d;          /* the sorted dim of the user's tensors */
  uint32_t block; /* entries a workgroup sorts */
  const vkt_tensor *tv, *ti, *ov, *oi;
} sort_ctx;

static uint32_t local_size(const sort_ctx *c) { return c->block / 2 < 256 ? c->block / 2 : 256; }

static uint32_t pow2_at_least(uint64_t n) {
  uint32_t p = 1;
  while (p < n)
    p <<= 1;
  return p;
}

/* The largest block (a power of two, at most SORT_MAX_BLOCK) whose entries fit shared memory. */
static uint32_t max_block(const vkt_op_args *a) {
  uint32_t entry = (uint32_t)vkt_dtype_size(a->compute) + 4, b = SORT_MAX_BLOCK;
  while (b > 2 && b * entry > vkt_device_props(a->out->storage->dev)->max_shared_memory)
    b >>= 1;
  return b;
}

bool vkt_sort_supports(const vkt_op *op, const vkt_op_args *a, const char **why) {
  (void)op;
  const vkt_tensor *t[3] = {a->out, a->in[0], a->out2};
  if (!vkt_operands_fit(vkt_device_props(a->out->storage->dev), a->compute, 3, t, why))
    return false;
  vkt_reduce_layout l;
  vkt_reduce_layout_of(a, &l);
  *why = "more than 4 dimensions that cannot be merged";
  if (l.krank > SORT_MAX_RANK)
    return false;
  *why = "more than 2^31 entries after padding rows to a power of two"; /* a row's pairs index a uint */
  return (uint64_t)l.nout * pow2_at_least((uint64_t)l.nred) <= (1ull << 31);
}

static sort_push push_of(const sort_ctx *c, uint32_t n, uint32_t in_row, uint32_t out_row, uint32_t keep,
                         uint32_t nblocks) {
  const vkt_op_args *a = c->a;
  bool has_dim = a->in[0]->ndim > 0;
  sort_push p = {.nout = (uint32_t)c->l.nout,
                 .n = n,
                 .in_row = in_row,
                 .out_row = out_row,
                 .keep = keep,
                 .m = has_dim ? (uint32_t)a->out->shape[c->d] : 1,
                 .nblocks = nblocks,
                 .krank = (uint32_t)c->l.krank,
                 .rstride_in = has_dim ? (uint32_t)a->in[0]->strides[c->d] : 0,
                 .rstride_out = has_dim ? (uint32_t)a->out->strides[c->d] : 0,
                 .in_offset = (uint32_t)a->in[0]->offset,
                 .out_offset = (uint32_t)a->out->offset,
                 .idx_offset = (uint32_t)a->out2->offset};
  for (int d = 0; d < c->l.krank; d++) {
    p.kshape[d] = (uint32_t)c->l.kshape[d];
    p.kstride[d] = (uint32_t)c->l.kstride[d];
    p.kstride[SORT_MAX_RANK + d] = (uint32_t)c->l.kstride[VKT_MAX_DIMS + d];
  }
  return p;
}

/* Records one pass. from_user: the input is the user's tensor, else the temp row tv/ti; final: the
 * outputs are the user's, else the temp row ov/oi (read too, in place, where no input is bound). */
static vkt_status pass(const sort_ctx *c, sort_mode mode, bool from_user, bool from_temp, bool final, bool global_dir,
                       const sort_push *push, uint64_t threads) {
  static const char *const modes[] = {"#define LOCAL\n", "#define MERGE_GLOBAL\n", "#define MERGE_GLOBAL2\n",
                                      "#define MERGE_LOCAL\n"};
  const vkt_op_args *a = c->a;
  const vkt_tensor *t[4] = {final ? a->out : c->ov, final ? a->out2 : c->oi, from_user ? a->in[0] : c->tv, c->ti};
  int n = from_user ? 3 : from_temp ? 4 : 2;
  char defines[1024];
  int len = vkt_type_defines(defines, sizeof defines, "TO", a->out->dtype);
  len += vkt_type_defines(defines + len, sizeof defines - (size_t)len, "TI", a->in[0]->dtype);
  len += vkt_type_defines(defines + len, sizeof defines - (size_t)len, "C", a->compute);
  len += vkt_conversion_defines(defines + len, sizeof defines - (size_t)len, "C", a->in[0]->dtype, a->out->dtype,
                                a->compute);
  snprintf(defines + len, sizeof defines - (size_t)len, "#define BLOCK %uu\n#define LOCAL_SIZE %u\n%s%s%s%s%s%s",
           c->block, local_size(c), modes[mode], n > 2 ? "#define HAS_IN\n" : "", from_temp ? "#define IN_TEMP\n" : "",
           final ? "#define FINAL\n" : "", global_dir ? "#define GLOBAL_DIR\n" : "",
           a->flags & VKT_SORT_DESCENDING ? "#define DESCENDING\n" : "");
  vkt_device *dev = a->out->storage->dev;
  vkt_pipeline *pipe;
  vkt_status st = vkt_pipeline_get(dev, "sort.comp", defines, n, sizeof *push, &pipe);
  if (st)
    return st;
  vkt_binding b[4];
  for (int k = 0; k < n; k++)
    b[k] = (vkt_binding){&t[k]->storage->alloc, 0, t[k]->storage->alloc.size, k < 2};
  uint32_t groups[3];
  uint64_t batch = 0;
  vkt_groups_for(dev,
                 mode == SORT_MERGE_GLOBAL || mode == SORT_MERGE_GLOBAL2 ? (threads + local_size(c) - 1) / local_size(c)
                                                                         : threads,
                 groups);
  if ((st = vkt_stream_dispatch(dev, pipe, b, n, push, sizeof *push, groups, &batch)))
    return st;
  for (int k = 0; k < n; k++)
    vkt_storage_touched(t[k]->storage, batch);
  return VKT_OK;
}

/* Temp rows [nout, len] of values (compute type) and positions (uint32). */
static vkt_status temp_rows(const sort_ctx *c, uint64_t len, vkt_tensor *v, vkt_tensor *i) {
  int64_t shape[2] = {c->l.nout, (int64_t)len};
  int dev = vkt_tensor_device(c->a->out);
  vkt_status st = vkt_tensor_empty(v, dev, c->a->compute, 2, shape);
  if (!st && (st = vkt_tensor_empty(i, dev, VKT_INT32, 2, shape)))
    vkt_tensor_release(v);
  return st;
}

/* The whole network over rows padded to P entries. */
static vkt_status full_sort(sort_ctx *c) {
  uint32_t n = (uint32_t)c->l.nred, P = pow2_at_least(n), nb = P / c->block;
  vkt_tensor v = {0}, i = {0};
  vkt_status st = temp_rows(c, P, &v, &i);
  if (st)
    return st;
  c->ov = &v, c->oi = &i;
  sort_push push = push_of(c, n, 0, P, c->block, nb);
  st = pass(c, SORT_LOCAL, true, false, false, true, &push, c->l.nout * nb);
  for (uint32_t k = 2 * c->block; k <= P && !st; k <<= 1) {
    push.k = k;
    for (uint32_t j = k / 2; j >= c->block && !st;) { /* two steps a pass while both are wider than a block */
      bool two = j / 2 >= c->block;
      push.j = j;
      st = pass(c, two ? SORT_MERGE_GLOBAL2 : SORT_MERGE_GLOBAL, false, false, false, false, &push,
                c->l.nout * (P / (two ? 4 : 2)));
      j >>= two ? 2 : 1;
    }
    if (st)
      break;
    bool final = k == P;
    c->tv = &v, c->ti = &i;
    sort_push last = push;
    last.n = last.in_row = P;
    st = pass(c, SORT_MERGE_LOCAL, false, final, final, false, final ? &last : &push, c->l.nout * nb);
  }
  vkt_tensor_release(&v);
  vkt_tensor_release(&i);
  return st;
}

/* Top m: each pass keeps the best m of every block until one block holds the survivors. */
static vkt_status select_best(sort_ctx *c, uint32_t m) {
  uint32_t len = (uint32_t)c->l.nred;
  vkt_tensor v[2] = {{0}}, i[2] = {{0}};
  vkt_status st = VKT_OK;
  bool from_user = true;
  int cur = 0;
  while (!st && len > c->block) {
    uint32_t nb = (len + c->block - 1) / c->block;
    if ((st = temp_rows(c, (uint64_t)nb * m, &v[cur], &i[cur])))
      break;
    c->ov = &v[cur], c->oi = &i[cur];
    sort_push push = push_of(c, len, len, nb * m, m, nb);
    st = pass(c, SORT_LOCAL, from_user, !from_user, false, false, &push, c->l.nout * nb);
    c->tv = &v[cur], c->ti = &i[cur];
    from_user = false, len = nb * m, cur ^= 1;
    vkt_tensor_release(&v[cur]); /* the pass before last's: its readers are recorded */
    vkt_tensor_release(&i[cur]);
  }
  sort_push push = push_of(c, len, len, 0, c->block, 1);
  if (!st)
    st = pass(c, SORT_LOCAL, from_user, !from_user, true, false, &push, c->l.nout);
  for (int k = 0; k < 2; k++)
    vkt_tensor_release(&v[k]), vkt_tensor_release(&i[k]);
  return st;
}

/* A few long rows of float32 or int32, each dense along the sorted dim, take the radix sort row by row:
 * four passes over memory each, where the network above makes about fifty over 2^24 elements. */
#define RADIX_MAX_ROWS 16

/* Row r of t (dim d of it), as a 1-D view: no reference taken, only for the radix sort's launch. */
static vkt_tensor row_of(const vkt_tensor *t, int d, int64_t r) {
  vkt_tensor v = *t;
  for (int k = t->ndim - 1; k >= 0; k--)
    if (k != d) {
      v.offset += r % t->shape[k] * t->strides[k];
      r /= t->shape[k];
    }
  v.ndim = 1, v.shape[0] = t->ndim ? t->shape[d] : 1, v.strides[0] = 1;
  return v;
}

static bool radix_takes(const vkt_op_args *a, int d, uint32_t n, uint32_t m, uint64_t rows) {
  const vkt_tensor *t[3] = {a->in[0], a->out, a->out2};
  const char *why;
  for (int k = 0; k < 3; k++)
    if (t[k]->ndim && t[k]->shape[d] > 1 && t[k]->strides[d] != 1)
      return false;
  vkt_tensor first = row_of(a->in[0], d, 0);
  return m == n && rows <= RADIX_MAX_ROWS && vkt_radix_fits(&first, &why);
}

static vkt_status radix_rows(const vkt_op_args *a, int d, uint64_t rows) {
  vkt_status st = VKT_OK;
  for (uint64_t r = 0; r < rows && !st; r++) {
    vkt_tensor x = row_of(a->in[0], d, (int64_t)r), v = row_of(a->out, d, (int64_t)r),
               i = row_of(a->out2, d, (int64_t)r);
    st = vkt_radix_sort(&x, a->flags & VKT_SORT_DESCENDING, &v, &i);
  }
  return st;
}

/* Small k of long rows: topk.comp, a workgroup a row, reads each row once. */
#define TOPK_MAX_K 32

typedef struct {
  uint32_t nout, n, krank;
  uint32_t rstride_in, rstride_out, in_offset, out_offset, idx_offset; /* elements */
  uint32_t kshape[SORT_MAX_RANK], kstride[2 * SORT_MAX_RANK];
} topk_push;
static_assert(sizeof(topk_push) == 80, "topk_push must match shaders/topk.comp");

static vkt_status topk_rows(const sort_ctx *c, uint32_t m) {
  const vkt_op_args *a = c->a;
  sort_push sp = push_of(c, (uint32_t)c->l.nred, 0, 0, 0, 1);
  topk_push push = {.nout = sp.nout,
                    .n = sp.n,
                    .krank = sp.krank,
                    .rstride_in = sp.rstride_in,
                    .rstride_out = sp.rstride_out,
                    .in_offset = sp.in_offset,
                    .out_offset = sp.out_offset,
                    .idx_offset = sp.idx_offset};
  memcpy(push.kshape, sp.kshape, sizeof push.kshape);
  memcpy(push.kstride, sp.kstride, sizeof push.kstride);
  char defines[1024];
  int len = vkt_type_defines(defines, sizeof defines, "TO", a->out->dtype);
  len += vkt_type_defines(defines + len, sizeof defines - (size_t)len, "TI", a->in[0]->dtype);
  len += vkt_type_defines(defines + len, sizeof defines - (size_t)len, "C", a->compute);
  len += vkt_conversion_defines(defines + len, sizeof defines - (size_t)len, "C", a->in[0]->dtype, a->out->dtype,
                                a->compute);
  snprintf(defines + len, sizeof defines - (size_t)len, "#define K %uu\n%s", m,
           a->flags & VKT_SORT_DESCENDING ? "#define DESCENDING\n" : "");
  const vkt_tensor *t[3] = {a->out, a->out2, a->in[0]};
  vkt_device *dev = a->out->storage->dev;
  vkt_pipeline *pipe;
  vkt_status st = vkt_pipeline_get(dev, "topk.comp", defines, 3, sizeof push, &pipe);
  if (st)
    return st;
  vkt_binding b[3];
  for (int k = 0; k < 3; k++)
    b[k] = (vkt_binding){&t[k]->storage->alloc, 0, t[k]->storage->alloc.size, k < 2};
  uint32_t groups[3];
  uint64_t batch = 0;
  vkt_groups_for(dev, push.nout, groups);
  if ((st = vkt_stream_dispatch(dev, pipe, b, 3, &push, sizeof push, groups, &batch)))
    return st;
  for (int k = 0; k < 3; k++)
    vkt_storage_touched(t[k]->storage, batch);
  return VKT_OK;
}

vkt_status vkt_sort_launch(const vkt_op *op, const vkt_op_args *a) {
  (void)op;
  sort_ctx c = {.a = a};
  vkt_reduce_layout_of(a, &c.l);
  c.d = 0;
  while (c.d < a->in[0]->ndim && !(a->dims >> c.d & 1))
    c.d++;
  uint32_t n = (uint32_t)c.l.nred, m = a->in[0]->ndim ? (uint32_t)a->out->shape[c.d] : 1, cap = max_block(a);
  c.block = pow2_at_least(n < 2 ? 2 : n);
  if (c.block <= cap) {
    sort_push push = push_of(&c, n, 0, 0, c.block, 1);
    return pass(&c, SORT_LOCAL, true, false, true, false, &push, c.l.nout);
  }
  if (m <= TOPK_MAX_K)
    return topk_rows(&c, m);
  if (radix_takes(a, c.d, n, m, c.l.nout))
    return radix_rows(a, c.d, c.l.nout);
  c.block = cap;
  return m <= cap / 2 ? select_best(&c, m) : full_sort(&c);
}
