/* compact.c: nonzero, unique and unique_consecutive: a device-side flag per element, its inclusive scan
 * (the output position of every selected element), the count read back to the host to size the output
 * (as PyTorch does), then compact.comp writes the selected elements (or their coordinates, or positions)
 * to their places. unique(dim=) does the same over rows: the slices along dim sorted lexicographically,
 * each compared with the one before it. The CPU kernel is cpu/compact.c. */
#include <stdio.h>
#include <string.h>

#include "reduce.h"
#include "scan.h"
#include "shape.h"

static const vkt_scalar one = {false, 0, 1};

/* x's elements as a contiguous 1-D tensor (a 0-d x is one element). */
static vkt_status flat_of(const vkt_tensor *x, vkt_tensor *flat) {
  vkt_tensor dense = {0};
  int64_t n = vkt_tensor_numel(x);
  vkt_status st = vkt_contiguous(&dense, x);
  if (!st)
    st = vkt_view(flat, &dense, 1, &n);
  vkt_tensor_release(&dense);
  return st;
}

/* The last element of a 1-D int64 tensor, read back to the host; 0 when it is empty. */
static vkt_status last_count(const vkt_tensor *prefix, int64_t *count) {
  vkt_tensor last = {0};
  int64_t n = prefix->shape[0];
  *count = 0;
  if (n == 0)
    return VKT_OK;
  vkt_status st = vkt_slice(&last, prefix, 0, n - 1, n, 1);
  if (!st)
    st = vkt_read(&last, count);
  vkt_tensor_release(&last);
  return st;
}

/* Runs compact.comp (or its CPU kernel) in one of its modes. */
static vkt_status compact(int mode, const vkt_tensor *out, const vkt_tensor *in, const vkt_tensor *src) {
  vkt_op_args args = {.out = out, .in = {in, src}, .nin = src ? 2 : 1, .iparam = {mode}};
  return vkt_tensor_numel(in) > 0 ? vkt_op_run(VKT_OP_COMPACT, &args) : VKT_OK;
}

vkt_status vkt_nonzero(const vkt_tensor *x, vkt_tensor *out) {
  vkt_tensor nz = {0}, flat = {0}, prefix = {0}, shaped = {0};
  int64_t count, shape[2];
  vkt_operand xo = {.t = x}, zero = {.s = {false, 0, 0}};
  vkt_status st;
  *out = (vkt_tensor){0};
  if ((st = vkt_binary(VKT_OP_NE, xo, zero, one, NULL, &nz)) || (st = flat_of(&nz, &flat)) ||
      (st = vkt_scan(VKT_OP_CUMSUM, &flat, 0, VKT_INT64, &prefix, NULL)) || (st = last_count(&prefix, &count)))
    goto finish;
  shape[0] = count, shape[1] = x->ndim;
  if ((st = vkt_tensor_empty(out, vkt_tensor_device(x), VKT_INT64, 2, shape)))
    goto finish;
  if (count > 0 && x->ndim > 0 && !(st = vkt_view(&shaped, &prefix, x->ndim, x->shape)))
    st = compact(VKT_COMPACT_COORDS, out, &shaped, NULL);
  if (st)
    vkt_tensor_release(out);
finish:
  vkt_tensor_release(&nz);
  vkt_tensor_release(&flat);
  vkt_tensor_release(&prefix);
  vkt_tensor_release(&shaped);
  return st;
}

/* flags[0] = true, flags[i] = v[i] != v[i - 1]: where a new group starts in the (sorted or not) values. */
static vkt_status group_starts(const vkt_tensor *v, vkt_tensor *flags) {
  int64_t n = v->shape[0];
  vkt_tensor head = {0}, rest = {0}, a = {0}, b = {0};
  vkt_status st = vkt_tensor_empty(flags, vkt_tensor_device(v), VKT_BOOL, 1, &n);
  if (st || n == 0)
    return st;
  if (!(st = vkt_slice(&head, flags, 0, 0, 1, 1)) && !(st = vkt_fill_(&head, one)) &&
      !(st = vkt_slice(&rest, flags, 0, 1, n, 1)) && !(st = vkt_slice(&a, v, 0, 1, n, 1)) &&
      !(st = vkt_slice(&b, v, 0, 0, n - 1, 1)))
    st = vkt_binary(VKT_OP_NE, (vkt_operand){.t = &a}, (vkt_operand){.t = &b}, one, &rest, NULL);
  vkt_tensor_release(&head);
  vkt_tensor_release(&rest);
  vkt_tensor_release(&a);
  vkt_tensor_release(&b);
  if (st)
    vkt_tensor_release(flags);
  return st;
}

/* counts[g] = starts[g + 1] - starts[g], with n after the last group's start. */
static vkt_status group_counts(const vkt_tensor *prefix, int64_t groups, vkt_tensor *counts) {
  int64_t n = prefix->shape[0];
  vkt_tensor starts = {0}, a = {0}, b = {0}, c = {0};
  vkt_status st;
  if ((st = vkt_tensor_empty(&starts, vkt_tensor_device(prefix), VKT_INT64, 1, &groups)) ||
      (st = compact(VKT_COMPACT_INDEX, &starts, prefix, NULL)) ||
      (st = vkt_tensor_empty(counts, vkt_tensor_device(prefix), VKT_INT64, 1, &groups)) || groups == 0)
    goto finish;
  if (!(st = vkt_slice(&a, &starts, 0, 1, groups, 1)) && !(st = vkt_slice(&b, &starts, 0, 0, groups - 1, 1)) &&
      !(st = vkt_slice(&c, counts, 0, 0, groups - 1, 1)) &&
      !(st = vkt_binary(VKT_OP_SUB, (vkt_operand){.t = &a}, (vkt_operand){.t = &b}, one, &c, NULL))) {
    vkt_tensor_release(&a), vkt_tensor_release(&c);
    if (!(st = vkt_slice(&a, &starts, 0, groups - 1, groups, 1)) &&
        !(st = vkt_slice(&c, counts, 0, groups - 1, groups, 1)))
      st = vkt_binary(VKT_OP_SUB, (vkt_operand){.s = {false, 0, n}}, (vkt_operand){.t = &a}, one, &c, NULL);
  }
finish:
  if (st && counts->storage)
    vkt_tensor_release(counts);
  vkt_tensor_release(&starts);
  vkt_tensor_release(&a);
  vkt_tensor_release(&b);
  vkt_tensor_release(&c);
  return st;
}

vkt_status vkt_unique(const vkt_tensor *x, bool consecutive, vkt_tensor *values, vkt_tensor *inverse,
                      vkt_tensor *counts) {
  vkt_tensor flat = {0}, sv = {0}, si = {0}, flags = {0}, prefix = {0}, group = {0}, inv = {0};
  int64_t groups = 0, n = vkt_tensor_numel(x);
  int device = vkt_tensor_device(x);
  vkt_status st;
  *values = (vkt_tensor){0};
  if ((st = flat_of(x, &flat)))
    return st;
  if (consecutive)
    vkt_tensor_share(&sv, &flat);
  else if ((st = vkt_sort(&flat, 0, false, &sv, &si)))
    goto finish;
  if ((st = group_starts(&sv, &flags)) || (st = vkt_scan(VKT_OP_CUMSUM, &flags, 0, VKT_INT64, &prefix, NULL)) ||
      (st = last_count(&prefix, &groups)) || (st = vkt_tensor_empty(values, device, x->dtype, 1, &groups)) ||
      (st = compact(VKT_COMPACT_VALUES, values, &prefix, &sv)))
    goto finish;
  if (inverse) { /* each element's group: its prefix count less one, put back in x's order and shape */
    if ((st = vkt_binary(VKT_OP_SUB, (vkt_operand){.t = &prefix}, (vkt_operand){.s = one}, one, NULL, &group)))
      goto finish;
    if (consecutive)
      vkt_tensor_share(&inv, &group);
    else if (!(st = vkt_tensor_empty(&inv, device, VKT_INT64, 1, &n)))
      st = compact(VKT_COMPACT_SCATTER, &inv, &si, &group);
    if (st || (st = vkt_view(inverse, &inv, x->ndim, x->shape)))
      goto finish;
  }
  if (counts && (st = group_counts(&prefix, groups, counts)) && inverse)
    vkt_tensor_release(inverse);
finish:
  if (st)
    vkt_tensor_release(values);
  vkt_tensor *tmp[] = {&flat, &sv, &si, &flags, &prefix, &group, &inv};
  for (int k = 0; k < 7; k++)
    vkt_tensor_release(tmp[k]);
  return st;
}

/* ---- unique over slices (dim=): each slice along dim a row of a [n, m] matrix ---- */

/* The rows' lexicographic order: one stable sort per column from the last, each keeping the order the
 * later columns made (a least-significant-digit sort), so a row of m elements costs m sorts. */
static vkt_status lex_order(const vkt_tensor *rows, vkt_tensor *perm) {
  vkt_tensor col = {0}, key = {0}, sv = {0}, si = {0}, next = {0};
  vkt_status st = vkt_arange(perm, vkt_tensor_device(rows), VKT_INT64, (vkt_scalar){false, 0, 0},
                             (vkt_scalar){false, 0, rows->shape[0]}, one);
  for (int64_t j = rows->shape[1] - 1; !st && j >= 0; j--) {
    if (!(st = vkt_select(&col, rows, 1, j)) && !(st = vkt_index_select_trusted(&col, 0, perm, &key)) &&
        !(st = vkt_sort(&key, 0, false, &sv, &si)) && !(st = vkt_index_select_trusted(perm, 0, &si, &next))) {
      vkt_tensor_release(perm);
      *perm = next, next = (vkt_tensor){0};
    }
    vkt_tensor *tmp[] = {&col, &key, &sv, &si};
    for (int k = 0; k < 4; k++)
      vkt_tensor_release(tmp[k]);
  }
  if (st)
    vkt_tensor_release(perm);
  return st;
}

/* flags[0] = true, flags[i] = any(rows[i] != rows[i - 1]): where a new group of equal rows starts. */
static vkt_status row_starts(const vkt_tensor *rows, vkt_tensor *flags) {
  int64_t n = rows->shape[0];
  vkt_tensor head = {0}, rest = {0}, a = {0}, b = {0}, ne = {0}, any = {0};
  vkt_reduce_opts o = {.name = "any", .dims = 2u, .dtype = -1};
  vkt_status st = vkt_tensor_empty(flags, vkt_tensor_device(rows), VKT_BOOL, 1, &n);
  if (st || n == 0)
    return st;
  if (!(st = vkt_slice(&head, flags, 0, 0, 1, 1)) && !(st = vkt_fill_(&head, one)) && n > 1 &&
      !(st = vkt_slice(&a, rows, 0, 1, n, 1)) && !(st = vkt_slice(&b, rows, 0, 0, n - 1, 1)) &&
      !(st = vkt_binary(VKT_OP_NE, (vkt_operand){.t = &a}, (vkt_operand){.t = &b}, one, NULL, &ne)) &&
      !(st = vkt_reduce(VKT_OP_ANY, &ne, &o, &any, NULL)) && !(st = vkt_slice(&rest, flags, 0, 1, n, 1)))
    st = vkt_copy_(&rest, &any);
  vkt_tensor *tmp[] = {&head, &rest, &a, &b, &ne, &any};
  for (int k = 0; k < 6; k++)
    vkt_tensor_release(tmp[k]);
  if (st)
    vkt_tensor_release(flags);
  return st;
}

/* x with dim moved first, as a contiguous [n, m] matrix (and the moved shape, for the way back). */
static vkt_status rows_of(const vkt_tensor *x, int dim, vkt_tensor *rows, int64_t *moved_shape) {
  vkt_tensor moved = {0}, dense = {0};
  int64_t src = dim, dst = 0, shape[2] = {x->shape[dim], 1};
  vkt_status st = vkt_movedim(&moved, x, 1, &src, &dst);
  for (int d = 0; !st && d < x->ndim; d++) {
    moved_shape[d] = moved.shape[d];
    shape[1] *= d > 0 ? moved.shape[d] : 1;
  }
  if (!st && !(st = vkt_contiguous(&dense, &moved)))
    st = vkt_view(rows, &dense, 2, shape);
  vkt_tensor_release(&moved);
  vkt_tensor_release(&dense);
  return st;
}

static vkt_status check_dim(const vkt_tensor *x, int64_t dim, int *d) {
  if (x->ndim == 0)
    return vkt_fail(VKT_ERR_INDEX, "Dimension specified as %lld but tensor has no dimensions", (long long)dim);
  vkt_status st = vkt_dim_wrap(dim, x->ndim, d);
  for (int k = 0; !st && k < x->ndim; k++)
    if (k != *d && x->shape[k] == 0)
      return vkt_fail(VKT_ERR_RUNTIME, "There are 0 sized dimensions, and they aren't selected, so unique cannot be "
                                       "applied");
  return st;
}

/* The distinct rows (first of each group, in group order) put back as slices along dim. */
static vkt_status group_values(const vkt_tensor *x, int dim, const vkt_tensor *sorted, const vkt_tensor *prefix,
                               int64_t groups, int64_t *moved_shape, vkt_tensor *values) {
  vkt_tensor starts = {0}, picked = {0}, shaped = {0}, back = {0};
  int64_t src = 0, dst = dim;
  moved_shape[0] = groups;
  vkt_status st = vkt_tensor_empty(&starts, vkt_tensor_device(x), VKT_INT64, 1, &groups);
  if (!st && !(st = compact(VKT_COMPACT_INDEX, &starts, prefix, NULL)) &&
      !(st = vkt_index_select_trusted(sorted, 0, &starts, &picked)) &&
      !(st = vkt_view(&shaped, &picked, x->ndim, moved_shape)) && !(st = vkt_movedim(&back, &shaped, 1, &src, &dst)))
    st = vkt_contiguous(values, &back);
  vkt_tensor *tmp[] = {&starts, &picked, &shaped, &back};
  for (int k = 0; k < 4; k++)
    vkt_tensor_release(tmp[k]);
  return st;
}

vkt_status vkt_unique_dim(const vkt_tensor *x, int64_t dim, bool consecutive, vkt_tensor *values, vkt_tensor *inverse,
                          vkt_tensor *counts) {
  vkt_tensor rows = {0}, perm = {0}, sorted = {0}, flags = {0}, prefix = {0}, group = {0};
  int64_t moved_shape[VKT_MAX_DIMS], groups = 0;
  int d;
  vkt_status st = check_dim(x, dim, &d);
  *values = (vkt_tensor){0};
  if (st || (st = rows_of(x, d, &rows, moved_shape)))
    return st;
  if (consecutive)
    vkt_tensor_share(&sorted, &rows);
  else if ((st = lex_order(&rows, &perm)) || (st = vkt_index_select_trusted(&rows, 0, &perm, &sorted)))
    goto finish;
  if ((st = row_starts(&sorted, &flags)) || (st = vkt_scan(VKT_OP_CUMSUM, &flags, 0, VKT_INT64, &prefix, NULL)) ||
      (st = last_count(&prefix, &groups)) || (st = group_values(x, d, &sorted, &prefix, groups, moved_shape, values)))
    goto finish;
  if (inverse) { /* each slice's group: its prefix count less one, put back in x's order */
    if ((st = vkt_binary(VKT_OP_SUB, (vkt_operand){.t = &prefix}, (vkt_operand){.s = one}, one, NULL, &group)))
      goto finish;
    if (consecutive)
      vkt_tensor_share(inverse, &group);
    else if (!(st = vkt_tensor_empty(inverse, vkt_tensor_device(x), VKT_INT64, 1, prefix.shape)))
      st = compact(VKT_COMPACT_SCATTER, inverse, &perm, &group);
    if (st)
      goto finish;
  }
  if (counts && (st = group_counts(&prefix, groups, counts)) && inverse)
    vkt_tensor_release(inverse);
finish:
  if (st)
    vkt_tensor_release(values);
  vkt_tensor *tmp[] = {&rows, &perm, &sorted, &flags, &prefix, &group};
  for (int k = 0; k < 6; k++)
    vkt_tensor_release(tmp[k]);
  return st;
}

/* ---- the shader path ---- */

#define COMPACT_MAX_RANK 8

typedef struct {
  uint32_t n, rank, out_offset, in_offset, src_offset; /* elements */
  uint32_t shape[COMPACT_MAX_RANK];
} compact_push;
static_assert(sizeof(compact_push) == 52, "compact_push must match shaders/compact.comp");

bool vkt_compact_supports(const vkt_op *op, const vkt_op_args *a, const char **why) {
  (void)op;
  const vkt_tensor *t[3] = {a->out, a->in[0], a->in[1]};
  if (!vkt_operands_fit(vkt_device_props(a->out->storage->dev), VKT_INT32, a->nin + 1, t, why))
    return false;
  *why = "more than 8 dimensions";
  if (a->in[0]->ndim > COMPACT_MAX_RANK)
    return false;
  *why = "more than 2^32 elements";
  return vkt_tensor_numel(a->in[0]) <= UINT32_MAX - 256 && vkt_tensor_numel(a->out) <= UINT32_MAX;
}

vkt_status vkt_compact_launch(const vkt_op *op, const vkt_op_args *a) {
  static const char *const modes[] = {"#define COORDS\n", "#define INDEX\n", "#define VALUES\n", "#define SCATTER\n"};
  const vkt_tensor *t[3] = {a->out, a->in[0], a->in[1]};
  int n = a->nin + 1;
  compact_push push = {.n = (uint32_t)vkt_tensor_numel(a->in[0]),
                       .rank = (uint32_t)a->in[0]->ndim,
                       .out_offset = (uint32_t)a->out->offset,
                       .in_offset = (uint32_t)a->in[0]->offset,
                       .src_offset = a->in[1] ? (uint32_t)a->in[1]->offset : 0};
  for (int d = 0; d < a->in[0]->ndim; d++)
    push.shape[d] = (uint32_t)a->in[0]->shape[d];
  char defines[128];
  snprintf(defines, sizeof defines, "#define ITEMSIZE %d\n%s", a->in[1] ? vkt_dtype_size(a->in[1]->dtype) : 8,
           modes[a->iparam[0]]);
  return vkt_launch_flat(op->shader, defines, n, t, 1u, &push, sizeof push, push.n);
}
