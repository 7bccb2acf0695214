/* elementwise.c: the unary, binary and where families: type promotion and broadcasting in front,
 * then one strided shader (unary.comp, binary.comp, where.comp) or the CPU kernel per op row. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuse.h"

/* ---- type promotion ---- */

static int category(vkt_dtype d) { return d == VKT_BOOL ? 0 : vkt_dtypes[d].is_float ? 2 : 1; }

vkt_dtype vkt_promote_types(vkt_dtype a, vkt_dtype b) {
  if ((int)a < 0)
    return b;
  if ((int)b < 0 || a == b)
    return a;
  if (category(a) != category(b))
    return category(a) > category(b) ? a : b;
  return vkt_dtype_size(a) >= vkt_dtype_size(b) ? a : b;
}

static vkt_dtype combine(vkt_dtype higher, vkt_dtype lower) {
  if ((int)higher < 0)
    return lower;
  if (category(higher) == 2)
    return higher;
  if (higher == VKT_BOOL || ((int)lower >= 0 && category(lower) == 2))
    return vkt_promote_types(higher, lower);
  return higher;
}

vkt_dtype vkt_result_type(int n, const vkt_operand *ops) {
  vkt_dtype dim = (vkt_dtype)-1, zero = (vkt_dtype)-1, wrapped = (vkt_dtype)-1;
  for (int i = 0; i < n; i++) {
    const vkt_operand *o = &ops[i];
    if (!o->t)
      wrapped = vkt_promote_types(wrapped, o->s.is_float ? vkt_default_float() : o->is_bool ? VKT_BOOL : VKT_INT64);
    else if (o->t->ndim == 0)
      zero = vkt_promote_types(zero, o->t->dtype);
    else
      dim = vkt_promote_types(dim, o->t->dtype);
  }
  return combine(dim, combine(zero, wrapped));
}

vkt_status vkt_alpha_check(int id, vkt_operand a, vkt_operand b, vkt_operand alpha) {
  vkt_dtype dtype = vkt_result_type(2, (vkt_operand[]){a, b});
  bool bools = (a.t ? a.t->dtype == VKT_BOOL : a.is_bool) || (b.t ? b.t->dtype == VKT_BOOL : b.is_bool);
  if (id == VKT_OP_SUB && bools) /* sub's own error comes first */
    return VKT_OK;
  if (id == VKT_OP_SUB) /* PyTorch's sub is add of -alpha, negated as an int64 (-(-2^63) wraps) */
    alpha.s = alpha.s.is_float ? (vkt_scalar){true, -alpha.s.f, 0}
                               : (vkt_scalar){false, 0, (int64_t)(0 - (uint64_t)alpha.s.i)};
  if (alpha.is_bool && dtype != VKT_BOOL)
    return vkt_fail(VKT_ERR_RUNTIME, "Boolean alpha only supported for Boolean results.");
  if (alpha.s.is_float && !vkt_dtypes[dtype].is_float) /* the op's own error: no float alpha on integers */
    return VKT_OK;
  return vkt_scalar_check(dtype, alpha.s);
}

vkt_status vkt_broadcast_shape(int n, const vkt_tensor *const *t, int *ndim, int64_t *shape) {
  int r = 0;
  for (int k = 0; k < n; k++)
    if (t[k] && t[k]->ndim > r)
      r = t[k]->ndim;
  for (int i = 0; i < r; i++)
    shape[i] = 1;
  for (int k = 0; k < n; k++) {
    if (!t[k])
      continue;
    for (int i = 0; i < t[k]->ndim; i++) {
      int64_t *s = &shape[r - t[k]->ndim + i], v = t[k]->shape[i];
      if (v == *s || v == 1)
        continue;
      if (*s != 1) {
        char a[256], b[256];
        vkt_shape_str(t[0]->ndim, t[0]->shape, a, sizeof a);
        vkt_shape_str(t[k]->ndim, t[k]->shape, b, sizeof b);
        return vkt_fail(VKT_ERR_RUNTIME,
                        "The size of tensor a (%lld) must match the size of tensor b (%lld) at non-singleton "
                        "dimension %d: shapes %s and %s cannot be broadcast",
                        (long long)*s, (long long)v, i + r - t[k]->ndim, a, b);
      }
      *s = v;
    }
  }
  *ndim = r;
  return VKT_OK;
}

/* ---- checks shared by the front-ends ---- */

static bool can_cast(vkt_dtype from, vkt_dtype to) { return category(from) <= category(to); }

vkt_status vkt_into_shape_check(const vkt_tensor *into, int ndim, const int64_t *shape) {
  char a[256], b[256];
  if (into->ndim == ndim && memcmp(into->shape, shape, sizeof *shape * (size_t)ndim) == 0)
    return VKT_OK;
  vkt_shape_str(into->ndim, into->shape, a, sizeof a);
  vkt_shape_str(ndim, shape, b, sizeof b);
  return vkt_fail(VKT_ERR_RUNTIME, "output with shape %s doesn't match the broadcast shape %s", a, b);
}

static vkt_status check_into(const vkt_tensor *into, vkt_dtype result, int ndim, const int64_t *shape) {
  vkt_status st = vkt_into_shape_check(into, ndim, shape);
  if (st)
    return st;
  for (int i = 0; i < into->ndim; i++)
    if (into->strides[i] == 0 && into->shape[i] > 1 && vkt_tensor_numel(into) > 0) /* an empty one writes nothing */
      return vkt_fail(VKT_ERR_RUNTIME, "unsupported operation: more than one element of the written-to tensor "
                                       "refers to a single memory location. Please clone() the tensor before "
                                       "performing the operation.");
  if (!can_cast(result, into->dtype))
    return vkt_fail(VKT_ERR_RUNTIME, "result type %s can't be cast to the desired output type %s",
                    vkt_dtypes[result].torch_name, vkt_dtypes[into->dtype].torch_name);
  return VKT_OK;
}

/* Whether an op writing into `into` reads x's elements where it may already have written them: x shares into's
 * memory in another layout (x.t(), a shifted slice, a broadcast row of into). The op then computes into a
 * temporary first, as t[...] = s copies s first: the answer is what it would be with x read before any write.
 * (PyTorch refuses most of these; the shader and the CPU kernel each gave a different wrong answer.) */
static bool reads_written(const vkt_tensor *into, const vkt_tensor *x) {
  if (!x || x->storage != into->storage || vkt_tensor_numel(into) == 0 || vkt_tensor_numel(x) == 0)
    return false;
  if (x->offset == into->offset && x->ndim == into->ndim && x->dtype == into->dtype &&
      !memcmp(x->shape, into->shape, sizeof *x->shape * (size_t)x->ndim) &&
      !memcmp(x->strides, into->strides, sizeof *x->strides * (size_t)x->ndim))
    return false; /* each element read once, at the place it is written */
  int64_t a, a_end, b, b_end, sa = vkt_dtype_size(into->dtype), sb = vkt_dtype_size(x->dtype);
  vkt_tensor_extent(into, &a, &a_end);
  vkt_tensor_extent(x, &b, &b_end);
  return a * sa < b_end * sb && b * sb < a_end * sa;
}

/* Whether t is dense in channels-last order (4-D), its dims of one element aside: PyTorch's
 * is_contiguous(memory_format=torch.channels_last). */
static bool channels_last(const vkt_tensor *t) {
  static const int inner_first[] = {1, 3, 2, 0};
  int64_t expected = 1;
  for (int k = 0; t->ndim == 4 && k < 4; k++) {
    int d = inner_first[k];
    if (t->shape[d] != 1 && t->strides[d] != expected)
      return false;
    expected *= t->shape[d] != 1 ? t->shape[d] : 1;
  }
  return t->ndim == 4;
}

/* The operands and the result's shape, for outer_dim. */
typedef struct {
  const vkt_op_args *args;
  int ndim;
  const int64_t *shape;
} result_of;

/* PyTorch's should_swap (TensorIterator's reorder_dimensions): whether dim a goes outside dim b (1), inside (-1), or
 * either (0), by the first operand whose strides there tell (a dim of stride 0 tells nothing), a tie of equal strides
 * putting the longer dim outside. PyTorch has no negative strides; here a stride's size counts. */
static int outer_dim(const void *ctx, int a, int b) {
  const result_of *r = ctx;
  for (int k = 0; k < r->args->nin; k++) {
    const vkt_tensor *t = r->args->in[k];
    int64_t sa = llabs(t->strides[a]), sb = llabs(t->strides[b]);
    if (t->ndim != r->ndim || sa == 0 || sb == 0)
      continue;
    if (sa != sb)
      return sa > sb ? 1 : -1;
    if (r->shape[a] > r->shape[b])
      return 1;
  }
  return 0;
}

/* The strides of a new result of shape, as PyTorch's TensorIterator lays it out, so that an op reads and writes in
 * memory order (a relu of a transpose ran at 0.30 of PyTorch's speed on an H100 into a row-major result). Where no
 * operand (broadcast to shape) is broadcast and all are contiguous, it is contiguous: false, strides not written; all
 * channels-last, channels-last; all dense with the same strides, those strides (dims of one element included:
 * fast_set_up); else dense in the order reorder_dimensions sorts the dims into by the operands' strides. */
static bool result_strides(const vkt_op_args *args, int ndim, const int64_t *shape, int64_t *strides) {
  bool whole = !args->scalar, contiguous = true; /* a number is a 0-d operand to PyTorch */
  for (int k = 0; k < args->nin; k++) {
    const vkt_tensor *t = args->in[k];
    whole &= t->ndim == ndim;
    for (int d = 0; d < t->ndim; d++)
      whole &= t->strides[d] != 0;
    contiguous = contiguous && vkt_tensor_is_contiguous(t);
  }
  if (args->nin == 0 || (whole && contiguous))
    return false;
  bool last = whole, same = whole;
  for (int k = 0; k < args->nin && (last || same); k++) {
    const vkt_tensor *t = args->in[k];
    last = last && channels_last(t);
    same = same && vkt_tensor_is_dense(t) && !memcmp(t->strides, args->in[0]->strides, sizeof *strides * (size_t)ndim);
  }
  if (last) {
    vkt_tensor like = {.ndim = ndim};
    memcpy(like.shape, shape, sizeof *shape * (size_t)ndim);
    vkt_format_strides(&like, VKT_CHANNELS_LAST, strides);
  } else if (same) {
    memcpy(strides, args->in[0]->strides, sizeof *strides * (size_t)ndim);
  } else {
    vkt_sorted_dense_strides(ndim, shape, outer_dim, &(result_of){args, ndim, shape}, strides);
  }
  return true;
}

/* A cast is Tensor.to(dtype), which PyTorch makes as empty_like(x, memory_format=preserve_format), not by the rules
 * above: an empty or a contiguous x with odd strides on dims of one element keeps x's strides. */
static vkt_status new_result(int id, const vkt_op_args *args, int device, vkt_dtype dtype, int ndim,
                             const int64_t *shape, bool lazy, vkt_tensor *out) {
  int64_t strides[VKT_MAX_DIMS];
  bool cast = id == VKT_OP_CAST && args->nin == 1 && args->in[0]->ndim == ndim;
  bool strided = cast ? !vkt_format_strides(args->in[0], VKT_PRESERVE_FORMAT, strides)
                      : result_strides(args, ndim, shape, strides);
  vkt_status st = (lazy ? vkt_tensor_empty_lazy : vkt_tensor_empty)(out, device, dtype, ndim, shape);
  if (!st && strided)
    memcpy(out->strides, strides, sizeof *strides * (size_t)ndim);
  return st;
}

/* Runs the op into `into` when given, else into a new tensor; casts through a temporary when the
 * op's result dtype differs from into's. args.in[] are already broadcast to shape. */
static vkt_status run_into(int id, vkt_op_args *args, int device, vkt_dtype out_dtype, int ndim, const int64_t *shape,
                           const vkt_tensor *into, vkt_tensor *result) {
  vkt_tensor out = {0};
  vkt_status st;
  bool overlap = false;
  for (int k = 0; into && k < args->nin; k++)
    overlap |= reads_written(into, args->in[k]);
  if (into && into->dtype == out_dtype && !overlap) {
    args->out = into;
    if (vkt_tensor_numel(into) == 0) { /* nothing to run on an empty one (a launch of 0 crashed); still a write,
                                        * which autograd's check of a saved tensor counts, as PyTorch's does */
      into->storage->version++;
      return VKT_OK;
    }
    bool deferred = false;
    if (into->storage->pending && (st = vkt_fuse_defer_into(id, args, &deferred)))
      return st;
    return deferred ? VKT_OK : vkt_op_run(id, args);
  }
  bool defer = !into && device != VKT_CPU && vkt_fuse_enabled();
  if ((st = new_result(id, args, device, out_dtype, ndim, shape, defer, &out)))
    return st;
  args->out = &out;
  if (vkt_tensor_numel(&out) > 0)
    st = defer ? vkt_fuse_run_or_defer(id, args) : vkt_op_run(id, args);
  if (!st && into)
    st = vkt_copy_(into, &out);
  if (st || into)
    vkt_tensor_release(&out);
  else
    *result = out;
  return st;
}

/* ---- 0-d cpu tensors on a Vulkan device's op ---- */

/* Whether t is a 0-d cpu tensor that vkt_elementwise_device let join an op on another device. */
static bool cpu_scalar(const vkt_tensor *t, int device) { return t && vkt_tensor_device(t) != device; }

/* Its value, read on the host: nothing waits. */
static vkt_scalar host_value(const vkt_tensor *t) { return vkt_scalar_load(t->dtype, vkt_tensor_host(t)); }

/* Whether t is a 0-d host tensor of an integer dtype wider than the op's integer compute type (an int64 one with a
 * uint8 x): PyTorch casts its value first (2^40 as uint8 is 0, -1 is 255), as the number of a cpu_scalar is. */
static bool narrowed(const vkt_tensor *t, vkt_dtype compute) {
  return t && t->ndim == 0 && vkt_tensor_device(t) == VKT_CPU && !vkt_dtypes[compute].is_float &&
         vkt_promote_types(t->dtype, compute) != compute;
}

/* A number as the integer dtype an op computes in, wrapped as PyTorch casts it (uint8: x < -3 is x < 253). */
static vkt_scalar scalar_as(vkt_dtype compute, vkt_scalar s) {
  char bytes[8];
  if (vkt_dtypes[compute].is_float || compute == VKT_BOOL || s.is_float)
    return s;
  vkt_scalar_store(compute, s, bytes);
  return vkt_scalar_load(compute, bytes);
}

/* A copy on device, filled with that value: one recorded fill where the dtype's value repeats in a 32-bit word
 * (bool, float32, int32), where an upload would wait for its staging buffer. For operands that cannot be numbers
 * in push constants: where's condition, isclose's (whose push constants hold its tolerances). */
static vkt_status scalar_on(const vkt_tensor *t, int device, vkt_tensor *out) {
  vkt_status st = vkt_tensor_empty(out, device, t->dtype, 0, NULL);
  if (!st && (st = vkt_fill_(out, host_value(t))))
    vkt_tensor_release(out);
  return st;
}

/* nextafter's float16 steps: the shaders compute float16 in float, so P1 says whose steps to take, and a number y
 * (a 0-d cpu tensor's value) is rounded to float16 first, as PyTorch's kernel reads it. */
static void nextafter_params(vkt_op_args *a) {
  bool half = a->compute == VKT_FLOAT16;
  a->param[1] = (vkt_scalar){false, 0, half};
  if (half && a->scalar)
    a->param[0] = (vkt_scalar){true, (double)(_Float16)(a->param[0].is_float ? a->param[0].f : a->param[0].i), 0};
}

/* ---- front-ends ---- */

/* neg, relu and sub refuse bool operands (Python's True included) whatever the result type; tanhshrink, which
 * PyTorch computes as x - tanh(x), refuses a bool x as its subtraction does. */
static vkt_status bool_refused(const vkt_op *op, int nbool) {
  if (strcmp(op->name, "relu") == 0)
    return vkt_fail(VKT_ERR_RUNTIME, "Boolean inputs not supported for relu");
  if (strcmp(op->name, "neg") == 0)
    return vkt_fail(VKT_ERR_RUNTIME, "Negation, the `-` operator, on a bool tensor is not supported. If you are "
                                     "trying to invert a mask, use the `~` or `logical_not()` operator instead.");
  if (nbool == 2)
    return vkt_fail(VKT_ERR_RUNTIME, "Subtraction, the `-` operator, with two bool tensors is not supported. Use "
                                     "the `^` or `logical_xor()` operator instead.");
  return vkt_fail(VKT_ERR_RUNTIME, "Subtraction, the `-` operator, with a bool tensor is not supported. If you are "
                                   "trying to invert a mask, use the `~` or `logical_not()` operator instead.");
}

/* Ops that leave integers as they are: a copy (PyTorch's floor, ceil, round, trunc and nan_to_num of
 * an integer tensor). */
static bool identity_on_integers(int id) {
  return id == VKT_OP_FLOOR || id == VKT_OP_CEIL || id == VKT_OP_ROUND || id == VKT_OP_TRUNC ||
         id == VKT_OP_NAN_TO_NUM || id == VKT_OP_NEGINF_TO_NUM;
}

/* A cast of integers or bools to a float type computes in that type: its input converts where it is loaded, so that
 * the cast fuses with the float ops that read it, and reads a pending comparison (bool) made in float (fuse.c).
 * Between float types the cast computes in its source's, as a store to the target would convert: float16 and float32
 * computing in one kernel would see a GPU's own NaN where memory gives back another (half.glsl's rounded_half). */
vkt_status vkt_cast(const vkt_tensor *x, vkt_dtype dtype, vkt_tensor *result) {
  bool to_float = vkt_dtypes[dtype].is_float && !vkt_dtypes[x->dtype].is_float;
  vkt_op_args args = {.in = {x}, .nin = 1, .compute = to_float ? dtype : x->dtype};
  return run_into(VKT_OP_CAST, &args, vkt_tensor_device(x), dtype, x->ndim, x->shape, NULL, result);
}

vkt_status vkt_unary(int id, const vkt_tensor *x, vkt_scalar p0, vkt_scalar p1, const vkt_tensor *into,
                     vkt_tensor *result) {
  const vkt_op *op = &vkt_ops[id];
  vkt_dtype compute = x->dtype, out_dtype;
  vkt_status st;
  if ((op->flags & VKT_NO_BOOL) && x->dtype == VKT_BOOL)
    return bool_refused(op, 1);
  if ((st = vkt_op_check_dtype(op, x->dtype)))
    return st;
  if (id == VKT_OP_BITWISE_NOT && x->dtype == VKT_BOOL) /* ~ of 0/1 in an int is not 1/0 */
    op = &vkt_ops[id = VKT_OP_LOGICAL_NOT];
  if ((op->flags & VKT_FLOAT_ONLY) && !vkt_dtypes[compute].is_float)
    compute = vkt_default_float();
  if (id == VKT_OP_SQUARE && compute == VKT_BOOL) /* PyTorch's square is pow(x, 2): bool ** int is int64 */
    compute = VKT_INT64;
  out_dtype = op->flags & VKT_BOOL_OUT ? VKT_BOOL : compute;
  bool identity = identity_on_integers(id) && !vkt_dtypes[compute].is_float;
  bool float_bound = (p0.is_float && isfinite(p0.f)) || (p1.is_float && isfinite(p1.f));
  if (id == VKT_OP_CLAMP && !vkt_dtypes[compute].is_float && float_bound) /* PyTorch: int clamped to 2.5 is float */
    compute = out_dtype = vkt_default_float();
  if (id == VKT_OP_CLAMP && !vkt_dtypes[compute].is_float) { /* missing bounds: the type's limits */
    int64_t lo = compute == VKT_INT64 ? INT64_MIN : INT32_MIN, hi = compute == VKT_INT64 ? INT64_MAX : INT32_MAX;
    p0 = p0.is_float && isinf(p0.f) ? (vkt_scalar){false, 0, lo} : scalar_as(compute, p0); /* uint8: -1 is 255 */
    p1 = p1.is_float && isinf(p1.f) ? (vkt_scalar){false, 0, hi} : scalar_as(compute, p1);
  }
  if (into && (st = vkt_elementwise_device(1, &x, into, 0, NULL)))
    return st;
  if (into && (st = check_into(into, out_dtype, x->ndim, x->shape)))
    return st;
  vkt_op_args args = {.in = {x}, .nin = 1, .compute = compute, .param = {p0, p1}};
  return run_into(identity ? VKT_OP_CAST : id, &args, vkt_tensor_device(x), out_dtype, x->ndim, x->shape, into, result);
}

vkt_status vkt_binary(int id, vkt_operand a, vkt_operand b, vkt_scalar alpha, const vkt_tensor *into,
                      vkt_tensor *result) {
  return vkt_binary_params(id, a, b, (vkt_scalar){0}, alpha, into, result);
}

vkt_status vkt_binary_params(int id, vkt_operand a, vkt_operand b, vkt_scalar p0, vkt_scalar p1, const vkt_tensor *into,
                             vkt_tensor *result) {
  const vkt_op *op = &vkt_ops[id];
  vkt_operand ops[2] = {a, b};
  const vkt_tensor *t[2] = {a.t, b.t};
  int device, ndim;
  int64_t shape[VKT_MAX_DIMS];
  vkt_status st;
  if ((st = vkt_broadcast_shape(2, t, &ndim, shape)) || (st = vkt_elementwise_device(2, t, into, 1, &device)))
    return st;
  vkt_dtype compute = vkt_result_type(2, ops);
  int nbool = 0;
  for (int k = 0; k < 2; k++)
    nbool += t[k] ? t[k]->dtype == VKT_BOOL : ops[k].is_bool;
  if ((op->flags & VKT_NO_BOOL) && nbool)
    return bool_refused(op, nbool);
  if (id == VKT_OP_POW && compute == VKT_BOOL && a.t && !b.t) { /* x ** True is x, x ** False is True */
    vkt_operand not_e = {.s = {false, 0, !b.s.i}, .is_bool = true};
    return vkt_binary_params(VKT_OP_LOGICAL_OR, a, not_e, p0, p1, into, result);
  }
  if ((st = vkt_op_check_dtype(op, compute)))
    return st;
  if ((op->flags & VKT_FLOAT_ONLY) && !vkt_dtypes[compute].is_float)
    compute = vkt_default_float();
  if (!vkt_dtypes[compute].is_float && p1.is_float && (id == VKT_OP_ADD || id == VKT_OP_SUB)) /* p1: alpha */
    return vkt_fail(VKT_ERR_RUNTIME, "For integral input tensors, argument alpha must not be a floating point number.");
  if (compute == VKT_BOOL && (id == VKT_OP_ADD || id == VKT_OP_SUB)) /* PyTorch's alpha of bools is a bool: -1 is 1 */
    p1 = (vkt_scalar){false, 0, p1.is_float ? p1.f != 0 : p1.i != 0};
  if (id == VKT_OP_POW && !vkt_dtypes[compute].is_float && b.t == NULL && b.s.i < 0)
    return vkt_fail(VKT_ERR_RUNTIME, "Integers to negative integer powers are not allowed.");
  /* PyTorch converts a number exponent to x's type, checked, but to double for float and double */
  if (id == VKT_OP_POW && a.t && !b.t && compute != VKT_FLOAT32 && compute != VKT_FLOAT64 &&
      (st = vkt_scalar_check(compute, b.s)))
    return st;
  if (id == VKT_OP_POW && a.t && !b.t && vkt_dtypes[compute].is_float) {
    double e = b.s.is_float ? b.s.f : (double)b.s.i;
    if (e == 0.5 || e == -0.5) /* PyTorch's x ** 0.5 is sqrt(x), x ** -0.5 rsqrt(x): NaN at -inf, -0.0 kept */
      return vkt_unary(e > 0 ? VKT_OP_SQRT : VKT_OP_RSQRT, a.t, p0, p1, into, result);
  }
  vkt_dtype out_dtype = op->flags & VKT_BOOL_OUT ? VKT_BOOL : compute;
  if (into && (st = check_into(into, out_dtype, ndim, shape)))
    return st;
  /* A 0-d cpu tensor on a Vulkan device's op is a number in push constants, as CUDA's kernels take PyTorch's
   * cpu scalars, once its dtype has had its say in the result type; isclose's push constants hold its tolerances. */
  vkt_tensor ex[2] = {0}, moved[2] = {0};
  vkt_op_args args = {.nin = 0, .compute = compute, .param = {p0, p1}};
  for (int k = 0; k < 2 && !st; k++) {
    if (cpu_scalar(t[k], device) && strstr(op->define, "P0") && !(st = scalar_on(t[k], device, &moved[k])))
      t[k] = &moved[k];
    if (!st && (!t[k] || cpu_scalar(t[k], device) || (narrowed(t[k], compute) && !strstr(op->define, "P0")))) {
      args.scalar = k == 0 ? VKT_SCALAR_LHS : VKT_SCALAR_RHS;
      args.param[0] = scalar_as(compute, t[k] ? host_value(t[k]) : ops[k].s);
    } else if (!st && !(st = vkt_expand(&ex[k], t[k], ndim, shape))) {
      args.in[args.nin++] = &ex[k];
    }
  }
  if (id == VKT_OP_NEXTAFTER)
    nextafter_params(&args);
  if (!st)
    st = run_into(id, &args, device, out_dtype, ndim, shape, into, result);
  for (int k = 0; k < 2; k++) {
    vkt_tensor_release(&ex[k]);
    vkt_tensor_release(&moved[k]);
  }
  return st;
}

vkt_status vkt_where(const vkt_tensor *cond, vkt_operand a, vkt_operand b, vkt_tensor *result) {
  vkt_operand ops[3] = {{.t = cond}, a, b};
  vkt_tensor ex[3] = {0};
  const vkt_tensor *t[3] = {cond, a.t, b.t};
  int device, ndim;
  int64_t shape[VKT_MAX_DIMS];
  vkt_status st;
  if (cond->dtype != VKT_BOOL)
    return vkt_fail(VKT_ERR_RUNTIME, "where expected condition to be a boolean tensor, but got a tensor with dtype %s",
                    vkt_dtypes[cond->dtype].name);
  if ((st = vkt_broadcast_shape(3, t, &ndim, shape)) || (st = vkt_elementwise_device(3, t, NULL, -1, &device)))
    return st;
  vkt_dtype dtype = vkt_result_type(2, &ops[1]);
  for (int k = 1; k < 3; k++) /* PyTorch makes a number a 0-d tensor of the result type: fill_'s check */
    if (!t[k] && (st = vkt_fill_check(dtype, 1, ops[k].s)))
      return st;
  vkt_op_args args = {.nin = 0, .compute = dtype};
  vkt_tensor moved = {0}; /* a 0-d cpu condition on device: where.comp reads the condition from a buffer */
  int nparam = 0;
  if (cpu_scalar(cond, device) && !(st = scalar_on(cond, device, &moved)))
    t[0] = &moved;
  for (int k = 0; k < 3 && !st; k++) {
    if (!t[k] || cpu_scalar(t[k], device)) { /* a number, or a 0-d cpu tensor's value */
      args.scalar |= 1u << k;
      args.param[nparam++] = t[k] ? host_value(t[k]) : ops[k].s;
    } else if (!(st = vkt_expand(&ex[k], t[k], ndim, shape))) {
      args.in[args.nin++] = &ex[k];
    }
  }
  if (!st)
    st = run_into(VKT_OP_WHERE, &args, device, dtype, ndim, shape, NULL, result);
  for (int k = 0; k < 3; k++)
    vkt_tensor_release(&ex[k]);
  vkt_tensor_release(&moved);
  return st;
}

/* ---- the shader path ---- */

#define EW_MAX_RANK 4
#define EW_MAX_OPS 4

typedef struct {
  uint32_t n, rank, offset[EW_MAX_OPS], shape[EW_MAX_RANK], stride[EW_MAX_OPS * EW_MAX_RANK];
  uint32_t param[2][2]; /* bits of the compute type */
} ew_push;
static_assert(sizeof(ew_push) == 120, "ew_push must match shaders/elementwise.glsl");

/* The operands a launch binds: the output, then the tensor inputs. */
static int operands(const vkt_op_args *a, const vkt_tensor **t) {
  t[0] = a->out;
  for (int k = 0; k < a->nin; k++)
    t[k + 1] = a->in[k];
  return a->nin + 1;
}

bool vkt_elementwise_supports(const vkt_op *op, const vkt_op_args *a, const char **why) {
  const vkt_tensor *t[EW_MAX_OPS];
  int n = operands(a, t);
  const vkt_adapter_props *p = vkt_device_props(a->out->storage->dev);
  (void)op; /* one rule for every row: float64 needs shaderFloat64, which vkt_operands_fit checks */
  if (!vkt_operands_fit(p, a->compute, n, t, why))
    return false;
  int64_t shape[VKT_MAX_DIMS], strides[EW_MAX_OPS * VKT_MAX_DIMS];
  *why = "more than 4 dimensions that cannot be merged";
  if (vkt_merge_in_out_order(n, t, shape, strides) > EW_MAX_RANK)
    return false;
  *why = "more than 2^32 elements";
  return vkt_tensor_numel(a->out) <= UINT32_MAX;
}

int vkt_store_define(char *buf, size_t n, const char *name, const char *type, bool bool_value, vkt_dtype compute,
                     vkt_dtype out) {
  if (bool_value)
    return vkt_defines_cat(buf, n, "#define ", name, "(v) ", type, "((v) ? 1 : 0)\n", NULL);
  if (out == VKT_BOOL)
    return vkt_defines_cat(buf, n, "#define ", name, "(v) ", type, "((v) != C(0) ? 1 : 0)\n", NULL);
  if (!vkt_dtypes[compute].is_float || vkt_dtypes[out].is_float)
    return vkt_defines_cat(buf, n, "#define ", name, "(v) ", type, "(v)\n", NULL);
  /* float -> integer: NaN, inf and out-of-range values become the most negative integer, as on the
   * CPU (cpu/copy.c), not whatever the adapter's conversion does; uint8 keeps int32's low byte. */
  if (out == VKT_INT64)
    return vkt_defines_cat(buf, n, "#define ", name, "(v) ", type,
                           "((v) >= C(-9223372036854775808.0) && (v) < C(9223372036854775808.0) ? "
                           "int64_t(v) : (int64_t(1) << 63))\n",
                           NULL);
  return vkt_defines_cat(buf, n, "#define ", name, "(v) ", type,
                         "((v) >= C(-2147483648.0) && (v) < C(2147483648.0) ? int(v) : int(0x80000000u))\n", NULL);
}

vkt_status vkt_elementwise_launch(const vkt_op *op, const vkt_op_args *a) {
  const vkt_tensor *t[EW_MAX_OPS];
  int n = operands(a, t);
  int64_t shape[VKT_MAX_DIMS], strides[EW_MAX_OPS * VKT_MAX_DIMS];
  int rank = vkt_merge_in_out_order(n, t, shape, strides);
  ew_push push = {.n = (uint32_t)vkt_tensor_numel(a->out), .rank = (uint32_t)rank};
  bool contiguous = true;
  for (int d = 0; d < rank; d++) {
    push.shape[d] = (uint32_t)shape[d];
    for (int k = 0; k < n; k++) {
      push.stride[k * EW_MAX_RANK + d] = (uint32_t)strides[k * VKT_MAX_DIMS + d];
      contiguous = contiguous && rank == 1 && strides[k * VKT_MAX_DIMS + d] == 1;
    }
  }
  for (int k = 0; k < n; k++)
    push.offset[k] = (uint32_t)t[k]->offset;
  vkt_scalar_bits(a->compute, a->param[0], push.param[0]);
  vkt_scalar_bits(a->compute, a->param[1], push.param[1]);

  char defines[1024];
  static const char *const names[] = {"TO", "TA", "TB", "TC"};
  int len = 0;
  const vkt_tensor *typed[4] = {a->out, NULL, NULL, NULL};
  if (op->shader[0] == 'w') /* where: the condition has its own type; TA, TB are a's and b's, where tensors */
    for (int k = 1, in = 1; k < 3; k++)
      typed[k] = a->scalar >> k & 1u ? NULL : a->in[in++];
  else
    for (int k = 0; k < a->nin; k++)
      typed[k + 1] = a->in[k];
  for (int k = 0; k < 4; k++)
    if (typed[k])
      len += vkt_type_defines(defines + len, sizeof defines - (size_t)len, names[k], typed[k]->dtype);
  len += vkt_type_defines(defines + len, sizeof defines - (size_t)len, "C", a->compute);
  static const char *const out_bits[] = {"", "8", "16", "", "32", "", "", "", "64"}; /* by dtype size */
  bool bool_value = (op->flags & VKT_BOOL_OUT) != 0;
  len += vkt_defines_cat(defines + len, sizeof defines - (size_t)len, "#define OUT_BITS ",
                         out_bits[vkt_dtype_size(a->out->dtype)], "\n", NULL);
  len += vkt_store_define(defines + len, sizeof defines - (size_t)len, "STORE", "TO", bool_value, a->compute,
                          a->out->dtype);
  static const char *const scalar_defines[] = {"#define SCALAR0\n", "#define SCALAR1\n", "#define SCALAR2\n"};
  for (int k = 0; k < 3; k++)
    if (a->scalar >> k & 1u)
      len += vkt_defines_cat(defines + len, sizeof defines - (size_t)len, scalar_defines[k], NULL);
  bool one_dim = !contiguous && rank == 1, rows = rank >= 2 && shape[rank - 1] >= VKT_ROWS_MIN; /* elementwise.glsl */
  vkt_defines_cat(defines + len, sizeof defines - (size_t)len, "#define VT ", bool_value ? "bool" : "C", "\n",
                  op->define,
                  contiguous ? "#define CONTIGUOUS\n"
                  : one_dim  ? "#define ONE_DIM\n"
                  : rows     ? "#define ROWS\n"
                             : "",
                  NULL);
  vkt_device *dev = a->out->storage->dev;
  vkt_pipeline *pipe;
  vkt_status st = vkt_pipeline_get(dev, op->shader, defines, n, sizeof push, &pipe);
  if (st)
    return st;
  vkt_binding b[EW_MAX_OPS];
  for (int k = 0; k < n; k++)
    b[k] = (vkt_binding){&t[k]->storage->alloc, 0, t[k]->storage->alloc.size, k == 0};
  uint32_t groups[3];
  uint64_t batch = 0;
  uint32_t per_group = contiguous || one_dim ? 256 * 4 : 256; /* elementwise.glsl: LOCAL_SIZE * ELEMS */
  if (rows)
    vkt_groups_for_rows(dev, (uint64_t)shape[rank - 1], push.n / (uint64_t)shape[rank - 1], VKT_ROWS_RUN, groups);
  else
    vkt_groups_for(dev, (push.n + per_group - 1) / per_group, groups);
  if ((st = vkt_stream_dispatch(dev, pipe, b, n, &push, sizeof push, groups, &batch)))
    return st;
  for (int k = 0; k < n; k++)
    vkt_storage_touched(t[k]->storage, batch);
  return VKT_OK;
}
