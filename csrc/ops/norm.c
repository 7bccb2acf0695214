/* norm.c: the front-end of layer_norm and rms_norm (PyTorch's checks and dtypes; operands made dense),
 * and their shader path, norm.comp: a row is normalized by W invocations (a workgroup for long rows,
 * several rows a workgroup for short ones), kept in registers where it fits; grad_weight and grad_bias are
 * summed per block of rows by one kernel and over the blocks by a column sum. */
#include <stdio.h>
#include <string.h>

#include "norm.h"
#include "reduce.h"

/* ---- the front-end ---- */

static int64_t row_length(const vkt_tensor *x, int nd) {
  int64_t n = 1;
  for (int d = x->ndim - nd; d < x->ndim; d++)
    n *= x->shape[d];
  return n;
}

static vkt_status shape_error(const char *name, const vkt_tensor *x, int nd, const int64_t *nshape) {
  char ns[256], xs[256];
  vkt_shape_str(nd, nshape, ns, sizeof ns);
  vkt_shape_str(x->ndim, x->shape, xs, sizeof xs);
  /* PyTorch's two ops word it differently: "[*, 3]" and "[*3]" */
  return vkt_fail(VKT_ERR_RUNTIME,
                  "Given normalized_shape=%s, expected input with shape [*%s%s, but got input of size%s", ns,
                  strcmp(name, "layer_norm") == 0 ? ", " : "", ns + 1, xs);
}

static vkt_status param_check(const char *what, const vkt_tensor *p, int nd, const int64_t *nshape) {
  if (!p || (p->ndim == nd && memcmp(p->shape, nshape, sizeof *nshape * (size_t)nd) == 0))
    return VKT_OK;
  char ps[256], ns[256];
  vkt_shape_str(p->ndim, p->shape, ps, sizeof ps);
  vkt_shape_str(nd, nshape, ns, sizeof ns);
  return vkt_fail(
      VKT_ERR_RUNTIME,
      "Expected %s to be of same shape as normalized_shape, but got %s of shape %s and normalized_shape = %s", what,
      what, ps, ns);
}

/* layer_norm takes parameters of the input's dtype, or float32 ones for a float16 input. */
static vkt_status dtype_check(const vkt_tensor *x, const vkt_tensor *w, const vkt_tensor *b) {
  const vkt_tensor *ps[2] = {w, b};
  for (int k = 0; k < 2; k++) {
    vkt_dtype d = ps[k] ? ps[k]->dtype : x->dtype;
    if (d == x->dtype || (x->dtype == VKT_FLOAT16 && d == VKT_FLOAT32))
      continue;
    return vkt_fail(VKT_ERR_RUNTIME, x->dtype == VKT_FLOAT64
                                         ? "mixed dtype (CPU): all inputs must share same datatype."
                                         : "mixed dtype (CPU): expect parameter to have scalar type of Float");
  }
  if (w && b && w->dtype != b->dtype)
    return vkt_fail(VKT_ERR_RUNTIME, "expected scalar type %s but found %s", vkt_dtypes[w->dtype].torch_name,
                    vkt_dtypes[b->dtype].torch_name);
  return VKT_OK;
}

vkt_status vkt_norm_check(const char *name, const vkt_tensor *x, int nd, const int64_t *nshape, const vkt_tensor *w,
                          const vkt_tensor *b) {
  bool layer = strcmp(name, "layer_norm") == 0;
  vkt_status st;
  if (nd < 1)
    return vkt_fail(VKT_ERR_RUNTIME, "Expected normalized_shape to be at least 1-dimensional, i.e., containing at "
                                     "least one element, but got normalized_shape = []");
  if ((st = param_check("weight", w, nd, nshape)) || (st = param_check("bias", b, nd, nshape)))
    return st;
  if (nd > x->ndim || memcmp(x->shape + x->ndim - nd, nshape, sizeof *nshape * (size_t)nd) != 0)
    return shape_error(name, x, nd, nshape);
  if (!vkt_dtypes[x->dtype].is_float)
    return vkt_fail(VKT_ERR_NOTIMPL, "\"%s\" not implemented for '%s'", layer ? "LayerNormKernelImpl" : "rms_norm",
                    vkt_dtypes[x->dtype].torch_name);
  if ((st = vkt_same_device(3, (const vkt_tensor *[]){x, w, b}, NULL)))
    return st;
  return layer ? dtype_check(x, w, b) : VKT_OK;
}

static vkt_dtype compute_of(vkt_dtype d) { return d == VKT_FLOAT64 ? VKT_FLOAT64 : VKT_FLOAT32; }

/* src itself where it is row-major in dtype, else a row-major copy in dtype. */
static vkt_status dense(const vkt_tensor *src, vkt_dtype dtype, vkt_tensor *out) {
  if (src->dtype == dtype && vkt_tensor_is_contiguous(src)) {
    vkt_tensor_share(out, src);
    return VKT_OK;
  }
  return vkt_copy_as(out, src, vkt_tensor_device(src), dtype, VKT_CONTIGUOUS_FORMAT);
}

/* The dtype the kernels read a parameter in: the input's, or float32 kept for a float16 input. */
static vkt_dtype param_dtype(const vkt_tensor *x, const vkt_tensor *p) {
  return x->dtype == VKT_FLOAT16 && p->dtype == VKT_FLOAT32 ? VKT_FLOAT32 : x->dtype;
}

vkt_status vkt_norm_forward(bool rms, const vkt_tensor *x, int nd, const vkt_tensor *w, const vkt_tensor *b, double eps,
                            vkt_tensor *y, vkt_tensor *stats) {
  vkt_tensor xd = {0}, wd = {0}, bd = {0};
  int64_t n = row_length(x, nd), shape[2] = {n ? vkt_tensor_numel(x) / n : 0, 2};
  int device = vkt_tensor_device(x);
  *y = *stats = (vkt_tensor){0};
  vkt_status st = dense(x, x->dtype, &xd);
  if (!st && w)
    st = dense(w, param_dtype(x, w), &wd);
  if (!st && b)
    st = dense(b, param_dtype(x, b), &bd);
  if (st || (st = vkt_tensor_empty(y, device, x->dtype, x->ndim, x->shape)) ||
      (st = vkt_tensor_empty(stats, device, compute_of(x->dtype), 2, shape)))
    goto finish;
  vkt_op_args args = {.out = y,
                      .out2 = stats,
                      .in = {&xd, w ? &wd : NULL, b ? &bd : NULL},
                      .nin = 3,
                      .compute = compute_of(x->dtype),
                      .param = {{true, eps, 0}},
                      .iparam = {n}};
  if (vkt_tensor_numel(y) > 0)
    st = vkt_op_run(rms ? VKT_OP_RMS_NORM : VKT_OP_LAYER_NORM, &args);
finish:
  vkt_tensor_release(&xd);
  vkt_tensor_release(&wd);
  vkt_tensor_release(&bd);
  if (st) {
    vkt_tensor_release(y);
    vkt_tensor_release(stats);
  }
  return st;
}

vkt_status vkt_norm_backward_input(bool rms, const vkt_tensor *g, const vkt_tensor *x, const vkt_tensor *stats, int nd,
                                   const vkt_tensor *w, vkt_tensor *gx) {
  vkt_tensor gd = {0}, xd = {0}, wd = {0};
  *gx = (vkt_tensor){0};
  vkt_status st = dense(g, x->dtype, &gd);
  if (!st)
    st = dense(x, x->dtype, &xd);
  if (!st && w)
    st = dense(w, param_dtype(x, w), &wd);
  if (st || (st = vkt_tensor_empty(gx, vkt_tensor_device(x), x->dtype, x->ndim, x->shape)))
    goto finish;
  vkt_op_args args = {.out = gx,
                      .in = {&gd, &xd, stats, w ? &wd : NULL},
                      .nin = 4,
                      .compute = compute_of(x->dtype),
                      .iparam = {row_length(x, nd)}};
  if (vkt_tensor_numel(gx) > 0)
    st = vkt_op_run(rms ? VKT_OP_RMS_NORM_BACKWARD : VKT_OP_LAYER_NORM_BACKWARD, &args);
finish:
  vkt_tensor_release(&gd);
  vkt_tensor_release(&xd);
  vkt_tensor_release(&wd);
  if (st)
    vkt_tensor_release(gx);
  return st;
}

/* Blocks of rows whose sums the columns kernel writes: enough workgroups to fill a GPU (about 2048, of
 * 32 columns each) with at least 8 rows a block; one block on the host. */
static int64_t column_blocks(const vkt_tensor *x, int64_t rows, int64_t n) {
  if (vkt_tensor_device(x) == VKT_CPU)
    return 1;
  int64_t tiles = (n + 31) / 32, want = (2048 + tiles - 1) / tiles, most = (rows + 7) / 8;
  return want < most ? want : most;
}

/* part [k, blocks, n] summed over the blocks into dtype: row k of it (k < 2) into outs[k], shaped as x's
 * last nd dims. Each is its own reduction, so that each gradient has a storage of its own, which the
 * engine can take as .grad without a copy. */
static vkt_status sum_blocks(const vkt_tensor *part, const vkt_tensor *x, int nd, vkt_dtype dtype, vkt_tensor *gw,
                             vkt_tensor *gb) {
  vkt_reduce_opts o = {.name = "sum", .dims = 1u, .dtype = (int)dtype};
  vkt_tensor *outs[2] = {gw, gb};
  vkt_status st = VKT_OK;
  for (int k = 0; k < 2 && !st; k++) {
    vkt_tensor row = {0}, total = {0};
    if (!outs[k])
      continue;
    if (!(st = vkt_select(&row, part, 0, k)) && !(st = vkt_reduce(VKT_OP_SUM, &row, &o, &total, NULL)))
      st = vkt_view(outs[k], &total, nd, x->shape + x->ndim - nd);
    vkt_tensor_release(&row);
    vkt_tensor_release(&total);
  }
  return st;
}

vkt_status vkt_norm_backward_weight(bool rms, const vkt_tensor *g, const vkt_tensor *x, const vkt_tensor *stats, int nd,
                                    vkt_dtype dtype, vkt_tensor *gw, vkt_tensor *gb) {
  vkt_tensor gd = {0}, xd = {0}, part = {0};
  int64_t n = row_length(x, nd), rows = n ? vkt_tensor_numel(x) / n : 0, blocks = column_blocks(x, rows, n);
  int64_t shape[3] = {rms ? 1 : 2, blocks, n};
  *gw = (vkt_tensor){0};
  if (gb)
    *gb = (vkt_tensor){0};
  vkt_status st = dense(g, x->dtype, &gd);
  if (!st)
    st = dense(x, x->dtype, &xd);
  if (st || (st = vkt_tensor_empty(&part, vkt_tensor_device(x), compute_of(x->dtype), 3, shape)))
    goto finish;
  vkt_op_args args = {.out = &part,
                      .in = {&gd, &xd, stats},
                      .nin = 3,
                      .compute = compute_of(x->dtype),
                      .iparam = {n, (blocks ? (rows + blocks - 1) / blocks : 0)}};
  if (vkt_tensor_numel(&part) > 0) /* no rows: sums of nothing, and nothing for a kernel to bind */
    st = rows ? vkt_op_run(rms ? VKT_OP_RMS_NORM_COLUMNS : VKT_OP_LAYER_NORM_COLUMNS, &args)
              : vkt_fill_(&part, (vkt_scalar){0});
  if (!st)
    st = sum_blocks(&part, x, nd, dtype, gw, rms ? NULL : gb);
finish:
  vkt_tensor_release(&gd);
  vkt_tensor_release(&xd);
  vkt_tensor_release(&part);
  if (st) {
    vkt_tensor_release(gw);
    if (gb)
      vkt_tensor_release(gb);
  }
  return st;
}

/* ---- the shader path ---- */

#define NORM_CACHE 8 /* elements an invocation keeps in registers: rows up to 8 * 256 are read once */

typedef struct {
  uint32_t rows, n, blocks, block_rows;
  uint32_t off[5]; /* elements */
  float eps;
} norm_push;
static_assert(sizeof(norm_push) == 40, "norm_push must match shaders/norm.comp");

static bool is_forward(const vkt_op *op) {
  return op == &vkt_ops[VKT_OP_LAYER_NORM] || op == &vkt_ops[VKT_OP_RMS_NORM];
}

/* The tensors a launch binds, in norm.comp's order; a missing weight or bias binds x in its place. */
static int bound(const vkt_op *op, const vkt_op_args *a, const vkt_tensor **t) {
  const vkt_tensor *x = a->in[0];
  if (is_forward(op)) {
    t[0] = a->out, t[1] = a->out2, t[2] = x, t[3] = a->in[1] ? a->in[1] : x, t[4] = a->in[2] ? a->in[2] : x;
    return 5;
  }
  t[0] = a->out, t[1] = a->in[0], t[2] = a->in[1], t[3] = a->in[2], t[4] = a->in[3] ? a->in[3] : x;
  return op == &vkt_ops[VKT_OP_LAYER_NORM_COLUMNS] || op == &vkt_ops[VKT_OP_RMS_NORM_COLUMNS] ? 4 : 5;
}

bool vkt_norm_supports(const vkt_op *op, const vkt_op_args *a, const char **why) {
  const vkt_tensor *t[5];
  int nt = bound(op, a, t);
  if (!vkt_operands_fit(vkt_device_props(a->out->storage->dev), a->compute, nt, t, why))
    return false;
  *why = "more than 2^32 elements";
  for (int k = 0; k < nt; k++)
    if (t[k]->offset + vkt_tensor_numel(t[k]) > UINT32_MAX - 256)
      return false;
  return true;
}

/* Invocations a row: a power of two of at least a quarter of the row, at most a workgroup. */
static uint32_t row_width(int64_t n) {
  uint32_t w = 1;
  while (w < 256 && 4 * (int64_t)w < n)
    w *= 2;
  return w;
}

/* Whether the row kernels can move 4 elements a load: rows and every operand's offset multiples of 4. */
static bool vectorised(const vkt_op *op, const vkt_op_args *a, int nt, const vkt_tensor *const *t) {
  bool ok =
      a->iparam[0] % 4 == 0 && op != &vkt_ops[VKT_OP_LAYER_NORM_COLUMNS] && op != &vkt_ops[VKT_OP_RMS_NORM_COLUMNS];
  for (int k = 0; k < nt; k++)
    ok = ok && t[k]->offset % 4 == 0;
  return ok;
}

static const char *vec4_of(vkt_dtype d) { return d == VKT_FLOAT64 ? "dvec4" : d == VKT_FLOAT16 ? "f16vec4" : "vec4"; }

static void defines_of(const vkt_op *op, const vkt_op_args *a, uint32_t w, bool vec, char *buf, size_t size) {
  const vkt_adapter_props *p = vkt_device_props(a->out->storage->dev);
  bool forward = is_forward(op);
  const vkt_tensor *x = forward ? a->in[0] : a->in[1], *weight = forward ? a->in[1] : a->in[3];
  vkt_dtype wd = weight ? weight->dtype : x->dtype;
  int64_t v = vec ? 4 : 1, items = (a->iparam[0] / v + w - 1) / w; /* an invocation's loads a row */
  int len = vkt_type_defines(buf, size, "T", x->dtype);
  len += vkt_type_defines(buf + len, size - (size_t)len, "TW", wd);
  len += vkt_type_defines(buf + len, size - (size_t)len, "C", a->compute);
  len += snprintf(buf + len, size - (size_t)len, "%s#define W %uu\n", op->define, w);
  if (vec)
    len += snprintf(buf + len, size - (size_t)len, "#define VEC\n#define TV %s\n#define TWV %s\n#define CV %s\n",
                    vec4_of(x->dtype), vec4_of(wd), vec4_of(a->compute));
  if (items * v <= NORM_CACHE)
    len += snprintf(buf + len, size - (size_t)len, "#define CACHE %lld\n", (long long)items);
  if (w == 256 && p->subgroup_arithmetic && a->compute == VKT_FLOAT32)
    len += snprintf(buf + len, size - (size_t)len, "#define SUBGROUP\n");
  if (weight)
    len += snprintf(buf + len, size - (size_t)len, "#define HAS_WEIGHT\n");
  if (forward && a->in[2])
    snprintf(buf + len, size - (size_t)len, "#define HAS_BIAS\n");
}

vkt_status vkt_norm_launch(const vkt_op *op, const vkt_op_args *a) {
  const vkt_tensor *t[5];
  int nt = bound(op, a, t);
  bool columns = nt == 4;
  int64_t n = a->iparam[0], rows = vkt_tensor_numel(t[2]) / n; /* t[2] is x */
  uint32_t w = row_width(n);
  norm_push push = {.rows = (uint32_t)rows, .n = (uint32_t)n, .eps = (float)a->param[0].f};
  for (int k = 0; k < nt; k++)
    push.off[k] = (uint32_t)t[k]->offset;
  uint64_t groups = (uint64_t)(rows + 256 / w - 1) / (256 / w);
  if (columns) {
    push.blocks = (uint32_t)a->out->shape[1], push.block_rows = (uint32_t)a->iparam[1];
    groups = (uint64_t)push.blocks * (uint64_t)((n + 31) / 32);
  }
  char defines[512];
  defines_of(op, a, w, vectorised(op, a, nt, t), defines, sizeof defines);
  /* the forward writes y and stats; the backward's kernels their one output */
  return vkt_launch_flat(op->shader, defines, nt, t, is_forward(op) ? 3u : 1u, &push, sizeof push, groups * 256);
}
