/* loss.c: cross_entropy and nll_loss: PyTorch's checks of shapes and dtypes, the forward (one kernel over the
 * rows, then two sums over them for mean and sum), the backward (one kernel writing every element of the input's
 * gradient), and their shader path: loss.comp, a workgroup a row where a row's elements are neighbours, else an
 * invocation a row. The CPU kernels are cpu/loss.c. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "loss.h"
#include "reduce.h"
#include "shape.h"

vkt_loss_shape vkt_loss_shape_of(const vkt_tensor *x) {
  vkt_loss_shape g = {1, x->ndim ? x->shape[x->ndim == 1 ? 0 : 1] : 1, 1, 0};
  if (x->ndim >= 2)
    g.n = x->shape[0];
  for (int d = 2; d < x->ndim; d++)
    g.s *= x->shape[d];
  g.r = g.n * g.s;
  return g;
}

void vkt_loss_saved_release(vkt_loss_saved *s) {
  vkt_tensor_release(&s->rows);
  vkt_tensor_release(&s->total);
}

/* ---- PyTorch's checks ---- */

static vkt_status check_weight(const vkt_tensor *x, const vkt_tensor *w, bool spatial) {
  int64_t c = vkt_loss_shape_of(x).c;
  char shape[96];
  if (!w)
    return VKT_OK;
  if (w->ndim != 1 || w->shape[0] != c) {
    if (spatial)
      return vkt_fail(VKT_ERR_RUNTIME, "weight tensor should be defined either for all or no classes");
    vkt_shape_str(w->ndim, w->shape, shape, sizeof shape);
    return vkt_fail(VKT_ERR_RUNTIME,
                    "weight tensor should be defined either for all %lld classes or no classes but got weight tensor "
                    "of shape: %s",
                    (long long)c, shape);
  }
  if (w->dtype != x->dtype)
    return vkt_fail(VKT_ERR_RUNTIME, "expected scalar type %s but found %s", vkt_dtypes[x->dtype].torch_name,
                    vkt_dtypes[w->dtype].torch_name);
  return VKT_OK;
}

/* nll_loss's rules for 1-D and 2-D inputs. */
static vkt_status check_flat(const vkt_tensor *x, const vkt_tensor *t) {
  char a[96], b[96];
  if (t->ndim > 1)
    return vkt_fail(VKT_ERR_RUNTIME, "0D or 1D target tensor expected, multi-target not supported");
  if (x->ndim == 1 && t->ndim == 1 && t->shape[0] != 1)
    return vkt_fail(VKT_ERR_VALUE, "For 1D input, 1D target must have size 1, but got target size: %lld",
                    (long long)t->shape[0]);
  if (x->ndim == 2 && (t->ndim == 0 || t->shape[0] != x->shape[0])) {
    vkt_shape_str(x->ndim, x->shape, a, sizeof a);
    vkt_shape_str(t->ndim, t->shape, b, sizeof b);
    return vkt_fail(VKT_ERR_RUNTIME, "size mismatch (got input: %s, target: %s)", a, b);
  }
  return VKT_OK;
}

/* The rules of nll_loss2d (4-D inputs) and of the other N-d ones, which PyTorch reshapes to 4-D. */
static vkt_status check_spatial(const vkt_tensor *x, const vkt_tensor *t) {
  char a[96], b[96];
  bool same = t->ndim == x->ndim - 1;
  for (int d = 1; d < t->ndim && same; d++)
    same = t->shape[d] == x->shape[d + 1];
  vkt_shape_str(x->ndim, x->shape, a, sizeof a);
  vkt_shape_str(t->ndim, t->shape, b, sizeof b);
  if (x->ndim == 4 && t->ndim != 3)
    return vkt_fail(VKT_ERR_RUNTIME,
                    "only batches of spatial targets supported (3D tensors) but got targets of dimension: %d", t->ndim);
  if (x->ndim == 4 && !same)
    return vkt_fail(VKT_ERR_RUNTIME, "size mismatch (got input: %s , target: %s", a, b);
  if (!same) {
    int64_t want[VKT_MAX_DIMS] = {x->shape[0]};
    for (int d = 2; d < x->ndim; d++)
      want[d - 1] = x->shape[d];
    vkt_shape_str(x->ndim - 1, want, a, sizeof a);
    return vkt_fail(VKT_ERR_RUNTIME, "Expected target size %s, got %s", a, b);
  }
  return VKT_OK;
}

static vkt_status check_index_target(const vkt_tensor *x, const vkt_tensor *t, const vkt_loss_opts *o) {
  vkt_status st;
  if (!o->nll && (o->label_smoothing < 0 || o->label_smoothing > 1))
    return vkt_fail(VKT_ERR_RUNTIME, "label_smoothing must be between 0.0 and 1.0. Got: %g", o->label_smoothing);
  if (x->ndim == 0)
    return vkt_fail(VKT_ERR_VALUE, "Expected 1 or more dimensions (got 0)");
  if (x->ndim != 1 && (t->ndim == 0 || x->shape[0] != t->shape[0])) /* a 0-d target's batch is 0, as PyTorch says */
    return vkt_fail(VKT_ERR_VALUE, "Expected input batch_size (%lld) to match target batch_size (%lld).",
                    (long long)x->shape[0], (long long)(t->ndim ? t->shape[0] : 0));
  if ((st = x->ndim <= 2 ? check_flat(x, t) : check_spatial(x, t)))
    return st;
  /* PyTorch takes int64 and uint8; vkt takes int32 too, the index type of its shaders without int64 */
  if (t->dtype != VKT_INT64 && t->dtype != VKT_INT32 && t->dtype != VKT_UINT8)
    return vkt_fail(VKT_ERR_RUNTIME, "expected target dtype to be Long or Byte, but got %s",
                    vkt_dtypes[t->dtype].torch_name);
  return check_weight(x, o->weight, x->ndim > 2);
}

static vkt_status check_prob_target(const vkt_tensor *x, const vkt_tensor *t, const vkt_loss_opts *o) {
  if (!vkt_dtypes[t->dtype].is_float)
    return vkt_fail(VKT_ERR_RUNTIME, "Expected floating point type for target with class probabilities, got %s",
                    vkt_dtypes[t->dtype].torch_name);
  if (o->ignore_index >= 0)
    return vkt_fail(VKT_ERR_RUNTIME, "ignore_index is not supported for floating point target");
  if (x->ndim == 0)
    return vkt_fail(VKT_ERR_VALUE, "Expected 1 or more dimensions (got 0)");
  if (t->dtype != x->dtype) /* the autograd entry point casts the two to their promoted dtype first */
    return vkt_fail(VKT_ERR_RUNTIME, "expected scalar type %s but found %s", vkt_dtypes[x->dtype].torch_name,
                    vkt_dtypes[t->dtype].torch_name);
  return check_weight(x, o->weight, false);
}

/* Whether target holds class probabilities (cross_entropy with a target shaped like the input), after
 * checking the pair as PyTorch does. */
static vkt_status check(const vkt_tensor *x, const vkt_tensor *t, const vkt_loss_opts *o, bool *prob) {
  vkt_status st = vkt_same_device(3, (const vkt_tensor *[]){x, t, o->weight}, NULL);
  if (st)
    return st;
  if (!vkt_dtypes[x->dtype].is_float)
    return vkt_fail(VKT_ERR_NOTIMPL, "\"%s\" not implemented for '%s'",
                    o->nll ? "nll_loss_out_frame" : "log_softmax_lastdim_kernel_impl", vkt_dtypes[x->dtype].torch_name);
  *prob = !o->nll && x->ndim == t->ndim && !memcmp(x->shape, t->shape, sizeof(int64_t) * (size_t)x->ndim);
  return *prob ? check_prob_target(x, t, o) : check_index_target(x, t, o);
}

/* ---- forward ---- */

/* The first target outside [0, C) that is not ignore_index: PyTorch's IndexError. */
static vkt_status bad_target(const vkt_tensor *flag, const vkt_tensor *target, int64_t classes, int64_t ignore) {
  int32_t set = 0;
  vkt_tensor h = {0};
  vkt_status st = vkt_read(flag, &set);
  if (st || !set || (st = vkt_host_view(target, &h)))
    return st;
  for (int64_t i = 0; i < vkt_tensor_numel(&h) && !st; i++) {
    int64_t k = vkt_scalar_load(h.dtype, vkt_tensor_host(&h) + i * vkt_dtype_size(h.dtype)).i;
    if (k != ignore && (k < 0 || k >= classes))
      st = vkt_fail(VKT_ERR_INDEX, "Target %lld is out of bounds.", (long long)k);
  }
  vkt_tensor_release(&h);
  return st;
}

/* Runs the forward kernel into s->rows (x, target contiguous). */
static vkt_status run_rows(const vkt_tensor *x, const vkt_tensor *t, const vkt_tensor *w, const vkt_loss_opts *o,
                           bool prob, vkt_loss_saved *s) {
  vkt_loss_shape g = vkt_loss_shape_of(x);
  vkt_tensor flag = {0};
  int64_t shape[2] = {VKT_LOSS_ROWS, (g.r + VKT_LOSS_PAD - 1) / VKT_LOSS_PAD * VKT_LOSS_PAD};
  s->r = g.r;
  vkt_status st = vkt_tensor_empty(&s->rows, vkt_tensor_device(x), vkt_natural_compute(x->dtype), 2, shape);
  if (st || g.r == 0 || (st = vkt_index_flag_new(x, &flag)))
    return st;
  vkt_op_args a = {.out = &s->rows,
                   .out2 = flag.storage ? &flag : NULL,
                   .in = {x, t, w},
                   .nin = 3,
                   .param = {{true, o->label_smoothing, 0}},
                   .iparam = {o->ignore_index},
                   .flags = prob ? VKT_LOSS_PROB : 0};
  if (!(st = vkt_op_run(o->nll ? VKT_OP_NLL_LOSS : VKT_OP_CROSS_ENTROPY, &a)) && !prob && flag.storage &&
      !vkt_tensor_known_within(t, 0, g.c))
    st = bad_target(&flag, t, g.c, o->ignore_index);
  vkt_tensor_release(&flag);
  return st;
}

/* Rows k.. k + n - 1 of s->rows without their padding, viewed as (n, R). */
static vkt_status row_view(const vkt_loss_saved *s, int k, int n, vkt_tensor *out) {
  int64_t pad = s->rows.shape[1];
  return vkt_as_strided(out, &s->rows, 2, (const int64_t[]){n, s->r}, (const int64_t[]){pad, 1}, k * pad);
}

/* The per-row losses reduced as o asks, in dtype; s->total := the sum of the weights. */
static vkt_status reduce_rows(vkt_loss_saved *s, const vkt_loss_opts *o, vkt_dtype dtype, int ndim,
                              const int64_t *shape, vkt_tensor *loss) {
  vkt_tensor losses = {0}, shaped = {0}, both = {0}, part = {0}, sums = {0}, sum = {0}, mean = {0};
  vkt_reduce_opts sum_parts = {.name = "sum", .dims = 4u, .dtype = -1},
                  sum_rows = {.name = "sum", .dims = 2u, .dtype = -1};
  vkt_status st;
  if (o->reduction == VKT_REDUCTION_NONE) {
    if (!(st = row_view(s, VKT_LOSS_LOSS, 1, &losses)) && !(st = vkt_view(&shaped, &losses, ndim, shape)))
      st = vkt_copy_as(loss, &shaped, vkt_tensor_device(&shaped), dtype, VKT_CONTIGUOUS_FORMAT);
    goto finish;
  }
  /* rows 0 and 1 together, each cut into VKT_LOSS_PAD parts: (2, PAD, R / PAD), summed along the parts, then
   * along PAD: two dispatches of many workgroups each, where one workgroup a row would take all of R */
  int64_t parts[3] = {2, VKT_LOSS_PAD, s->rows.shape[1] / VKT_LOSS_PAD};
  if ((st = vkt_slice(&both, &s->rows, 0, 0, 2, 1)) || (st = vkt_view(&shaped, &both, 3, parts)) ||
      (st = vkt_reduce(VKT_OP_SUM, &shaped, &sum_parts, &part, NULL)) ||
      (st = vkt_reduce(VKT_OP_SUM, &part, &sum_rows, &sums, NULL)) || (st = vkt_select(&sum, &sums, 0, 0)) ||
      (st = vkt_select(&s->total, &sums, 0, 1)))
    goto finish;
  if (o->reduction == VKT_REDUCTION_SUM) {
    st = vkt_copy_as(loss, &sum, vkt_tensor_device(&sum), dtype, VKT_CONTIGUOUS_FORMAT);
    goto finish;
  }
  vkt_operand num = {.t = &sum}, den = {.t = &s->total};
  if (!(st = vkt_binary(VKT_OP_DIV, num, den, (vkt_scalar){false, 0, 1}, NULL, &mean)))
    st = vkt_to(loss, &mean, vkt_tensor_device(&mean), dtype);
finish:
  vkt_tensor *tmp[] = {&losses, &shaped, &both, &part, &sums, &sum, &mean};
  for (size_t k = 0; k < sizeof tmp / sizeof *tmp; k++)
    vkt_tensor_release(tmp[k]);
  return st;
}

/* The shape of the unreduced loss: the target's (its batch and spatial dims), () for a 1-D input. */
static int loss_shape(const vkt_tensor *x, int64_t *shape) {
  if (x->ndim <= 1)
    return 0;
  shape[0] = x->shape[0];
  for (int d = 2; d < x->ndim; d++)
    shape[d - 1] = x->shape[d];
  return x->ndim - 1;
}

/* Contiguous copies (or references) of the operands the kernels read: uint8 targets as int32. */
static vkt_status operands(const vkt_tensor *x, const vkt_tensor *t, const vkt_tensor *w, vkt_tensor *xc,
                           vkt_tensor *tc, vkt_tensor *wc) {
  vkt_status st = vkt_contiguous(xc, x);
  if (!st)
    st = t->dtype == VKT_UINT8 ? vkt_copy_as(tc, t, vkt_tensor_device(t), VKT_INT32, VKT_CONTIGUOUS_FORMAT)
                               : vkt_contiguous(tc, t);
  if (!st && w)
    st = vkt_contiguous(wc, w);
  return st;
}

vkt_status vkt_cross_entropy(const vkt_tensor *x, const vkt_tensor *target, const vkt_loss_opts *o, vkt_tensor *loss,
                             vkt_loss_saved *saved) {
  vkt_tensor xc = {0}, tc = {0}, wc = {0};
  vkt_loss_saved s = {0};
  int64_t shape[VKT_MAX_DIMS];
  bool prob = false;
  vkt_status st = check(x, target, o, &prob);
  if (!st)
    st = operands(x, target, o->weight, &xc, &tc, &wc);
  if (!st)
    st = run_rows(&xc, &tc, o->weight ? &wc : NULL, o, prob, &s);
  if (!st)
    st = reduce_rows(&s, o, x->dtype, loss_shape(x, shape), shape, loss);
  if (!st && saved)
    *saved = s;
  else
    vkt_loss_saved_release(&s);
  vkt_tensor_release(&xc);
  vkt_tensor_release(&tc);
  vkt_tensor_release(&wc);
  return st;
}

/* ---- backward ---- */

/* The loss's gradient per row, written into dst (R): grad itself (none), or broadcast (sum), or divided by
 * the weights' total (mean). */
static vkt_status row_grads(const vkt_tensor *grad, const vkt_loss_opts *o, const vkt_loss_saved *s,
                            const vkt_tensor *dst) {
  vkt_tensor shaped = {0}, scaled = {0};
  vkt_status st;
  if (o->reduction == VKT_REDUCTION_NONE) {
    if (!(st = vkt_view(&shaped, dst, grad->ndim, grad->shape)))
      st = vkt_copy_(&shaped, grad);
  } else if (o->reduction == VKT_REDUCTION_SUM) {
    if (!(st = vkt_expand(&shaped, grad, 1, dst->shape)))
      st = vkt_copy_(dst, &shaped);
  } else {
    vkt_operand num = {.t = grad}, den = {.t = &s->total};
    if (!(st = vkt_binary(VKT_OP_DIV, num, den, (vkt_scalar){false, 0, 1}, NULL, &scaled)) &&
        !(st = vkt_expand(&shaped, &scaled, 1, dst->shape)))
      st = vkt_copy_(dst, &shaped);
  }
  vkt_tensor_release(&shaped);
  vkt_tensor_release(&scaled);
  return st;
}

/* The backward kernel's per-row and per-class values in one tensor: lse[R], mass[R], grad[R], weight[C]. */
static vkt_status pack_new(const vkt_tensor *grad, const vkt_tensor *w, const vkt_loss_opts *o, const vkt_loss_saved *s,
                           vkt_tensor *pack) {
  int64_t r = s->r, n = 3 * r + (w ? w->shape[0] : 0);
  vkt_tensor part = {0}, src = {0}, both = {0};
  vkt_status st = vkt_tensor_empty(pack, vkt_tensor_device(&s->rows), s->rows.dtype, 1, &n);
  if (!st && !(st = vkt_slice(&part, pack, 0, 0, 2 * r, 1)) && !(st = row_view(s, VKT_LOSS_LSE, 2, &src)) &&
      !(st = vkt_view(&both, &part, 2, src.shape)))
    st = vkt_copy_(&both, &src);
  vkt_tensor_release(&part);
  vkt_tensor_release(&both);
  if (!st && !(st = vkt_slice(&part, pack, 0, 2 * r, 3 * r, 1)))
    st = row_grads(grad, o, s, &part);
  vkt_tensor_release(&part);
  if (!st && w && !(st = vkt_slice(&part, pack, 0, 3 * r, n, 1)))
    st = vkt_copy_(&part, w);
  vkt_tensor_release(&part);
  vkt_tensor_release(&src);
  if (st)
    vkt_tensor_release(pack);
  return st;
}

vkt_status vkt_cross_entropy_backward(const vkt_tensor *grad, const vkt_tensor *x, const vkt_tensor *target,
                                      const vkt_loss_opts *o, const vkt_loss_saved *s, vkt_tensor *out) {
  vkt_tensor xc = {0}, tc = {0}, wc = {0}, pack = {0};
  bool prob = vkt_dtypes[target->dtype].is_float; /* the forward checked the pair */
  vkt_status st = vkt_tensor_empty(out, vkt_tensor_device(x), x->dtype, x->ndim, x->shape);
  if (st || vkt_tensor_numel(out) == 0)
    return st;
  if (!(st = operands(x, target, o->weight, &xc, &tc, &wc)) &&
      !(st = pack_new(grad, o->weight ? &wc : NULL, o, s, &pack))) {
    vkt_op_args a = {.out = out,
                     .in = {&xc, &tc, &pack},
                     .nin = 3,
                     .param = {{true, o->label_smoothing, 0}},
                     .iparam = {o->ignore_index},
                     .flags = prob ? VKT_LOSS_PROB : 0};
    st = vkt_op_run(o->nll ? VKT_OP_NLL_LOSS_BACKWARD : VKT_OP_CROSS_ENTROPY_BACKWARD, &a);
  }
  vkt_tensor *tmp[] = {&xc, &tc, &wc, &pack};
  for (size_t k = 0; k < sizeof tmp / sizeof *tmp; k++)
    vkt_tensor_release(tmp[k]);
  if (st)
    vkt_tensor_release(out);
  return st;
}

/* ---- the shader path ---- */

typedef struct {
  uint32_t ignore[2];                        /* ignore_index's low and high words */
  uint32_t rows, row_stride, classes, inner; /* row_stride: the forward's output, elements */
  uint32_t offset[3];                        /* elements: input, target, weight */
  float smoothing;
  uint32_t smoothing64[2]; /* float64 inputs (F64) only: label_smoothing as a double's (low, high) words */
} loss_push;
static_assert(sizeof(loss_push) == 48, "loss_push must match shaders/loss.comp");

static bool backward_op(const vkt_op *op) {
  return op == &vkt_ops[VKT_OP_CROSS_ENTROPY_BACKWARD] || op == &vkt_ops[VKT_OP_NLL_LOSS_BACKWARD];
}

bool vkt_loss_supports(const vkt_op *op, const vkt_op_args *a, const char **why) {
  const vkt_adapter_props *p = vkt_device_props(a->out->storage->dev);
  const vkt_tensor *x = a->in[0];
  if (vkt_tensor_numel(x) == 0) { /* rows of no classes: every target is out of bounds, an error to raise */
    *why = "an input of no classes";
    return false;
  }
  if (!vkt_dtype_storable(p, x->dtype, why) || !vkt_bindable(a->out, why))
    return false;
  for (int k = 0; k < 3; k++)
    if (a->in[k] && !vkt_bindable(a->in[k], why))
      return false;
  (void)op; /* one rule for the four rows */
  *why = "more than 2^32 elements";
  return vkt_tensor_numel(x) < UINT32_MAX - 256;
}

/* Rows of neighbouring elements, the input (and a probability target) at a multiple of 4 elements: the rows'
 * whole vec4s are read as such, and written so by the backward, whose output starts at 0 too. */
static bool vec4_rows(const vkt_op_args *a, const vkt_loss_shape *g) {
  bool prob = a->flags & VKT_LOSS_PROB;
  return g->s == 1 && a->in[0]->offset % 4 == 0 && (!prob || a->in[1]->offset % 4 == 0);
}

static void defines_of(const vkt_op *op, const vkt_op_args *a, const vkt_loss_shape *g, bool rows, char *buf,
                       size_t n) {
  static const char *const vec[VKT_DTYPE_COUNT] = {[VKT_FLOAT32] = "vec4", [VKT_FLOAT16] = "f16vec4"};
  const vkt_tensor *x = a->in[0], *t = a->in[1];
  bool backward = backward_op(op), prob = a->flags & VKT_LOSS_PROB, f64 = x->dtype == VKT_FLOAT64;
  bool vec4 = rows && vec4_rows(a, g) && !f64; /* float64 rows are read an element at a time: no dvec4 form */
  const char *target = prob ? "#define PROB\n" : t->dtype == VKT_INT64 ? "#define INDEX64\n" : "#define INDEX32\n";
  bool weight = backward ? vkt_tensor_numel(a->in[2]) > 3 * g->r : a->in[2] != NULL;
  int len = vkt_type_defines(buf, n, "TI", x->dtype);
  len += vkt_type_defines(buf + len, n - (size_t)len, "TO", a->out->dtype);
  vkt_defines_cat(buf + len, n - (size_t)len, "#define TI4 ", vec[x->dtype] ? vec[x->dtype] : "vec4", "\n#define TO4 ",
                  vec[a->out->dtype] ? vec[a->out->dtype] : "vec4", "\n", op->define, target,
                  weight ? "#define WEIGHT\n" : "", a->param[0].f > 0 ? "#define SMOOTH\n" : "",
                  rows ? "#define ROWS\n" : "", vec4 ? "#define VEC4\n" : "",
                  vkt_device_props(a->out->storage->dev)->subgroup_arithmetic ? "#define SUBGROUPS\n" : "",
                  backward ? "#define BACKWARD\n" : "", f64 ? "#define F64\n" : "", NULL);
}

vkt_status vkt_loss_launch(const vkt_op *op, const vkt_op_args *a) {
  vkt_loss_shape g = vkt_loss_shape_of(a->in[0]);
  bool nll_forward = op == &vkt_ops[VKT_OP_NLL_LOSS], rows = g.s == 1 && !nll_forward;
  uint64_t ignore = (uint64_t)a->iparam[0];
  loss_push push = {{(uint32_t)ignore, (uint32_t)(ignore >> 32)},
                    (uint32_t)g.r,
                    (uint32_t)a->out->shape[a->out->ndim - 1],
                    (uint32_t)g.c,
                    (uint32_t)g.s,
                    {(uint32_t)a->in[0]->offset, (uint32_t)a->in[1]->offset, a->in[2] ? (uint32_t)a->in[2]->offset : 0},
                    (float)a->param[0].f,
                    {0, 0}};
  bool f64 = a->in[0]->dtype == VKT_FLOAT64; /* only float64's pipelines read smoothing64 */
  memcpy(push.smoothing64, &a->param[0].f, sizeof push.smoothing64);
  char defines[1024];
  defines_of(op, a, &g, rows, defines, sizeof defines);
  const vkt_tensor *t[5] = {a->out, a->in[0], a->in[1], backward_op(op) ? a->in[2] : a->out2, a->in[2]};
  int nt = !backward_op(op) && a->in[2] ? 5 : 4;
  unsigned writes = backward_op(op) ? 1u : 1u | 8u;
  /* the forward writes the padding of its rows too (zeros) */
  uint64_t n = backward_op(op) ? (uint64_t)g.r : push.row_stride;
  uint32_t push_size = f64 ? sizeof push : offsetof(loss_push, smoothing64);
  return vkt_launch_flat(op->shader, defines, nt, t, writes, &push, push_size, n * (rows ? 256 : 1));
}
