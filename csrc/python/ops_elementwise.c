/* ops_elementwise.c: Python bindings of the elementwise family: Tensor methods (with in-place
 * variants), vkt.<op> functions, and Tensor's number protocol and comparisons. */
#include <math.h>
#include <string.h>

#include "py.h"

static const vkt_scalar none = {false, 0, 0};

/* An in-place op on *dst (a Python tensor) recorded by autograd: the result r, computed and recorded out
 * of place, is copied into dst, which takes r's history, as PyTorch rebases an in-place op's. */
PyObject *vkt_py_inplace_result(PyObject *dst, vkt_status st, vkt_var *r) {
  vkt_var *d = vkt_var_of(dst);
  if (!st)
    st = vkt_ag_error(); /* recording refused an operand: dst stays as it was, as PyTorch's */
  /* r must have dst's shape (PyTorch checks shapes first) and be on its device: a 0-d cpu input may join a Vulkan
   * device's op, an output not. */
  if (!st && !(st = vkt_into_shape_check(&d->t, r->t.ndim, r->t.shape)))
    st = vkt_elementwise_device(1, (const vkt_tensor *[]){&r->t}, &d->t, 0, NULL);
  if (!st)
    st = vkt_inplace_keep_saved(d, r);
  if (!st)
    st = vkt_copy_(&d->t, &r->t);
  if (!st)
    vkt_inplace_rebase(d, r);
  vkt_var_release(r);
  return st ? vkt_raise(st) : vkt_py_pack_failed() < 0 ? NULL : Py_NewRef(dst);
}

/* Whether an in-place op on dst with these operands must be recorded; raises PyTorch's errors (-1). */
int vkt_py_inplace_records(const vkt_var *dst, const vkt_var *other) {
  bool records = vkt_grad_enabled() && (vkt_requires_grad(dst) || vkt_requires_grad(other));
  vkt_status st = dst ? vkt_inplace_check(dst, records) : VKT_OK;
  return st ? (vkt_raise(st), -1) : records;
}

/* The node name PyTorch gives op id's in-place form where it differs from the out-of-place one (these save
 * their result, not their input; polygamma_ is another overload), or NULL. */
static const char *inplace_name(int id) {
  switch (id) {
  case VKT_OP_POLYGAMMA: return "PolygammaBackward1";
  case VKT_OP_LEAKY_RELU: return "LeakyReluBackward1";
  case VKT_OP_ELU:
  case VKT_OP_SELU: return "EluBackward1";
  case VKT_OP_CELU: return "CeluBackward1";
  case VKT_OP_THRESHOLD: return "ThresholdBackward1";
  default: return NULL;
  }
}

/* op id on x, its node named `name` where not NULL (clamp_min's ClampMinBackward0). */
static PyObject *unary_named(PyObject *x, int id, vkt_scalar p0, vkt_scalar p1, bool inplace, const char *name) {
  vkt_var *v = vkt_var_of(x), out = {0};
  if (!v) {
    PyErr_Format(PyExc_TypeError, "%s(): argument 'input' must be Tensor, not %R", vkt_ops[id].name,
                 (PyObject *)Py_TYPE(x));
    return NULL;
  }
  if (inplace) {
    int records = vkt_py_inplace_records(v, NULL);
    vkt_status st = records > 0 ? vkt_ag_unary(id, v, p0, p1, &out) : VKT_OK;
    if (records > 0 && !st && (name || (name = inplace_name(id))))
      (id == VKT_OP_LEAKY_RELU ? vkt_ag_leaky_relu_inplace : vkt_ag_rename)(&out, name);
    if (records)
      return records < 0 ? NULL : vkt_py_inplace_result(x, st, &out);
    st = vkt_unary(id, &v->t, p0, p1, &v->t, NULL);
    return st ? vkt_raise(st) : Py_NewRef(x);
  }
  vkt_status st = vkt_ag_unary(id, v, p0, p1, &out);
  if (!st && name)
    vkt_ag_rename(&out, name);
  return vkt_py_var_result(st, &out);
}

PyObject *vkt_py_unary(PyObject *x, int id, vkt_scalar p0, vkt_scalar p1, bool inplace) {
  return unary_named(x, id, p0, p1, inplace, NULL);
}

/* sgn: sign for real tensors, its node named as PyTorch's */
static PyObject *m_sgn(PyObject *self, PyObject *unused) {
  (void)unused;
  return unary_named(self, VKT_OP_SIGN, none, none, false, "SgnBackward0");
}
static PyObject *m_sgn_(PyObject *self, PyObject *unused) {
  (void)unused;
  return unary_named(self, VKT_OP_SIGN, none, none, true, "SgnBackward0");
}
static PyObject *f_sgn(PyObject *mod, PyObject *x) {
  (void)mod;
  return m_sgn(x, NULL);
}

/* The ops without parameters, one row each: X(name, op, doc). UNARY_OPS are x.op(), x.op_() and
 * vkt.op(x); UNARY_TESTS (bool results) and angle, which have no in-place form, x.op() and vkt.op(x);
 * UNARY_FUNCTIONS (nn.functional's activations, which Tensor lacks in PyTorch) vkt.op(x) and vkt.op_(x). */
#define UNARY_OPS(X)                                                                                                   \
  X(relu, VKT_OP_RELU, "max(x, 0)")                                                                                    \
  X(silu, VKT_OP_SILU, "x * sigmoid(x)")                                                                               \
  X(sigmoid, VKT_OP_SIGMOID, "1 / (1 + exp(-x))")                                                                      \
  X(tanh, VKT_OP_TANH, "tanh(x)")                                                                                      \
  X(neg, VKT_OP_NEG, "-x")                                                                                             \
  X(negative, VKT_OP_NEG, "-x")                                                                                        \
  X(abs, VKT_OP_ABS, "|x|")                                                                                            \
  X(absolute, VKT_OP_ABS, "|x|")                                                                                       \
  X(exp, VKT_OP_EXP, "e^x")                                                                                            \
  X(log, VKT_OP_LOG, "natural log")                                                                                    \
  X(sqrt, VKT_OP_SQRT, "square root")                                                                                  \
  X(rsqrt, VKT_OP_RSQRT, "1 / sqrt(x)")                                                                                \
  X(sin, VKT_OP_SIN, "sine")                                                                                           \
  X(cos, VKT_OP_COS, "cosine")                                                                                         \
  X(square, VKT_OP_SQUARE, "x * x")                                                                                    \
  X(reciprocal, VKT_OP_RECIPROCAL, "1 / x")                                                                            \
  X(sign, VKT_OP_SIGN, "-1, 0 or 1")                                                                                   \
  X(floor, VKT_OP_FLOOR, "round down")                                                                                 \
  X(ceil, VKT_OP_CEIL, "round up")                                                                                     \
  X(logical_not, VKT_OP_LOGICAL_NOT, "x == 0")                                                                         \
  X(log1p, VKT_OP_LOG1P, "log(1 + x), accurate near 0")                                                                \
  X(expm1, VKT_OP_EXPM1, "e^x - 1, accurate near 0")                                                                   \
  X(log2, VKT_OP_LOG2, "base-2 log")                                                                                   \
  X(log10, VKT_OP_LOG10, "base-10 log")                                                                                \
  X(exp2, VKT_OP_EXP2, "2^x")                                                                                          \
  X(erf, VKT_OP_ERF, "error function")                                                                                 \
  X(erfc, VKT_OP_ERFC, "1 - erf(x), accurate for large x")                                                             \
  X(erfinv, VKT_OP_ERFINV, "inverse error function")                                                                   \
  X(tan, VKT_OP_TAN, "tangent")                                                                                        \
  X(asin, VKT_OP_ASIN, "arcsine")                                                                                      \
  X(arcsin, VKT_OP_ASIN, "arcsine")                                                                                    \
  X(acos, VKT_OP_ACOS, "arccosine")                                                                                    \
  X(arccos, VKT_OP_ACOS, "arccosine")                                                                                  \
  X(atan, VKT_OP_ATAN, "arctangent")                                                                                   \
  X(arctan, VKT_OP_ATAN, "arctangent")                                                                                 \
  X(sinh, VKT_OP_SINH, "hyperbolic sine")                                                                              \
  X(cosh, VKT_OP_COSH, "hyperbolic cosine")                                                                            \
  X(asinh, VKT_OP_ASINH, "inverse hyperbolic sine")                                                                    \
  X(arcsinh, VKT_OP_ASINH, "inverse hyperbolic sine")                                                                  \
  X(acosh, VKT_OP_ACOSH, "inverse hyperbolic cosine")                                                                  \
  X(arccosh, VKT_OP_ACOSH, "inverse hyperbolic cosine")                                                                \
  X(atanh, VKT_OP_ATANH, "inverse hyperbolic tangent")                                                                 \
  X(arctanh, VKT_OP_ATANH, "inverse hyperbolic tangent")                                                               \
  X(trunc, VKT_OP_TRUNC, "round toward zero")                                                                          \
  X(fix, VKT_OP_TRUNC, "round toward zero")                                                                            \
  X(frac, VKT_OP_FRAC, "x - trunc(x)")                                                                                 \
  X(deg2rad, VKT_OP_DEG2RAD, "degrees to radians")                                                                     \
  X(rad2deg, VKT_OP_RAD2DEG, "radians to degrees")                                                                     \
  X(bitwise_not, VKT_OP_BITWISE_NOT, "~x of integers, logical not of bools")                                           \
  X(lgamma, VKT_OP_LGAMMA, "log |Gamma(x)|")                                                                           \
  X(digamma, VKT_OP_DIGAMMA, "Gamma'(x) / Gamma(x)")                                                                   \
  X(i0, VKT_OP_I0, "the modified Bessel function I0")                                                                  \
  X(sinc, VKT_OP_SINC, "sin(pi x) / (pi x), 1 at 0")
#define UNARY_TESTS(X)                                                                                                 \
  X(isnan, VKT_OP_ISNAN, "x is NaN")                                                                                   \
  X(isinf, VKT_OP_ISINF, "x is +-inf")                                                                                 \
  X(isfinite, VKT_OP_ISFINITE, "x is neither NaN nor +-inf")                                                           \
  X(isneginf, VKT_OP_ISNEGINF, "x is -inf")                                                                            \
  X(isposinf, VKT_OP_ISPOSINF, "x is +inf")                                                                           \
  X(angle, VKT_OP_ANGLE, "the argument of a real number: 0, pi below 0, NaN kept")
#define UNARY_FUNCTIONS(X)                                                                                             \
  X(hardsigmoid, VKT_OP_HARDSIGMOID, "clamp(x / 6 + 1 / 2, 0, 1)")                                                     \
  X(hardswish, VKT_OP_HARDSWISH, "x * hardsigmoid(x)")                                                                 \
  X(mish, VKT_OP_MISH, "x * tanh(softplus(x))")                                                                        \
  X(logsigmoid, VKT_OP_LOGSIGMOID, "log(sigmoid(x))")                                                                  \
  X(selu, VKT_OP_SELU, "scale * elu(x, alpha) with the self-normalizing constants")                                    \
  X(softsign, VKT_OP_SOFTSIGN, "x / (1 + |x|)")                                                                        \
  X(tanhshrink, VKT_OP_TANHSHRINK, "x - tanh(x)")
/* torch.special's own functions, which vkt.special names without the prefix */
#define SPECIAL_FUNCTIONS(X)                                                                                           \
  X(_special_entr, VKT_OP_ENTR, "-x log(x)")                                                                           \
  X(_special_ndtr, VKT_OP_NDTR, "the standard normal distribution function")                                           \
  X(_special_ndtri, VKT_OP_NDTRI, "ndtr's inverse")                                                                    \
  X(_special_log_ndtr, VKT_OP_LOG_NDTR, "log(ndtr(x)), accurate in the lower tail")                                    \
  X(_special_i0e, VKT_OP_I0E, "e^-|x| I0(x)")                                                                          \
  X(_special_i1, VKT_OP_I1, "the modified Bessel function I1")                                                         \
  X(_special_i1e, VKT_OP_I1E, "e^-|x| I1(x)")                                                                         \
  X(_special_erfcx, VKT_OP_ERFCX, "e^(x^2) erfc(x), without its overflow for large x")

#define DEFINE_METHOD(name, ID, doc)                                                                                   \
  static PyObject *m_##name(PyObject *self, PyObject *unused) {                                                        \
    (void)unused;                                                                                                      \
    return vkt_py_unary(self, ID, none, none, false);                                                                  \
  }
#define DEFINE_INPLACE(name, ID, doc)                                                                                  \
  static PyObject *m_##name##_(PyObject *self, PyObject *unused) {                                                     \
    (void)unused;                                                                                                      \
    return vkt_py_unary(self, ID, none, none, true);                                                                   \
  }
#define DEFINE_FUNCTION(name, ID, doc)                                                                                 \
  static PyObject *f_##name(PyObject *mod, PyObject *x) {                                                              \
    (void)mod;                                                                                                         \
    return vkt_py_unary(x, ID, none, none, false);                                                                     \
  }
#define DEFINE_INPLACE_FUNCTION(name, ID, doc)                                                                         \
  static PyObject *f_##name##_(PyObject *mod, PyObject *x) {                                                           \
    (void)mod;                                                                                                         \
    return vkt_py_unary(x, ID, none, none, true);                                                                      \
  }
UNARY_OPS(DEFINE_METHOD)
UNARY_OPS(DEFINE_INPLACE)
UNARY_OPS(DEFINE_FUNCTION)
UNARY_TESTS(DEFINE_METHOD)
UNARY_TESTS(DEFINE_FUNCTION)
UNARY_FUNCTIONS(DEFINE_FUNCTION)
UNARY_FUNCTIONS(DEFINE_INPLACE_FUNCTION)
SPECIAL_FUNCTIONS(DEFINE_FUNCTION)

/* Ops with parameters parse (input?, params...) the same way as methods and functions: with
 * `self` NULL the input is the first argument. */
typedef struct {
  PyObject *x;
  vkt_scalar p0, p1;
  int id;
} unary_call;

static int parse_gelu(PyObject *self, PyObject *args, PyObject *kwargs, unary_call *c) {
  static char *m_kw[] = {"approximate", NULL}, *f_kw[] = {"input", "approximate", NULL};
  const char *approx = "none";
  c->x = self;
  c->p0 = c->p1 = none; /* gelu takes no number parameters, but the kernels read both */
  int ok = self ? vkt_parse_args(args, kwargs, "|$s", m_kw, &approx)
                : vkt_parse_args(args, kwargs, "O|$s", f_kw, &c->x, &approx);
  if (!ok)
    return -1;
  if (strcmp(approx, "none") != 0 && strcmp(approx, "tanh") != 0) {
    PyErr_Format(PyExc_ValueError, "approximate argument must be either none or tanh, not '%s'", approx);
    return -1;
  }
  c->id = approx[0] == 't' ? VKT_OP_GELU_TANH : VKT_OP_GELU;
  return 0;
}

/* Two optional number parameters with defaults d0, d1. */
static int parse_params(PyObject *self, PyObject *args, PyObject *kwargs, unary_call *c, const char *n0, const char *n1,
                        vkt_scalar d0, vkt_scalar d1) {
  char *m_kw[] = {(char *)n0, (char *)n1, NULL}, *f_kw[] = {"input", (char *)n0, (char *)n1, NULL};
  PyObject *o0 = Py_None, *o1 = Py_None;
  c->x = self;
  int ok = self ? vkt_parse_args(args, kwargs, n1 ? "|OO" : "|O", m_kw, &o0, &o1)
                : vkt_parse_args(args, kwargs, n1 ? "O|OO" : "O|O", f_kw, &c->x, &o0, &o1);
  if (!ok)
    return -1;
  c->p0 = d0, c->p1 = d1;
  if ((o0 != Py_None && vkt_py_scalar(o0, &c->p0) < 0) || (o1 != Py_None && vkt_py_scalar(o1, &c->p1) < 0))
    return -1;
  return 0;
}

static const vkt_scalar minus_inf = {true, -INFINITY, 0}, plus_inf = {true, INFINITY, 0};

/* threshold(threshold, value): PyTorch converts value to x's dtype and threshold to its compute type
 * (float for float16), each checked for overflow. */
static int parse_threshold(PyObject *self, PyObject *args, PyObject *kwargs, unary_call *c) {
  if (parse_params(self, args, kwargs, c, "threshold", "value", none, none) < 0)
    return -1;
  const vkt_tensor *t = vkt_tensor_of(c->x);
  vkt_status st;
  if (t && ((st = vkt_scalar_check(t->dtype == VKT_FLOAT16 ? VKT_FLOAT32 : t->dtype, c->p0)) ||
            (st = vkt_scalar_check(t->dtype, c->p1))))
    return vkt_raise(st), -1;
  return 0;
}

static int parse_for(int id, PyObject *self, PyObject *args, PyObject *kwargs, unary_call *c) {
  c->id = id;
  switch (id) {
  case VKT_OP_GELU: return parse_gelu(self, args, kwargs, c);
  case VKT_OP_LEAKY_RELU:
    return parse_params(self, args, kwargs, c, "negative_slope", NULL, (vkt_scalar){true, 0.01, 0}, none);
  case VKT_OP_ELU: return parse_params(self, args, kwargs, c, "alpha", NULL, (vkt_scalar){true, 1.0, 0}, none);
  case VKT_OP_SOFTPLUS:
    return parse_params(self, args, kwargs, c, "beta", "threshold", (vkt_scalar){true, 1.0, 0},
                        (vkt_scalar){true, 20.0, 0});
  case VKT_OP_CELU: return parse_params(self, args, kwargs, c, "alpha", NULL, (vkt_scalar){true, 1.0, 0}, none);
  case VKT_OP_LOGIT: /* eps None is -1, as PyTorch's kernel takes any eps < 0 */
    return parse_params(self, args, kwargs, c, "eps", NULL, (vkt_scalar){true, -1.0, 0}, none);
  default: return parse_threshold(self, args, kwargs, c);
  }
}

#define UNARY_PARAMS(name, ID)                                                                                         \
  static PyObject *m_##name(PyObject *self, PyObject *args, PyObject *kwargs) {                                        \
    unary_call c;                                                                                                      \
    return parse_for(ID, self, args, kwargs, &c) < 0 ? NULL : vkt_py_unary(c.x, c.id, c.p0, c.p1, false);              \
  }                                                                                                                    \
  static PyObject *m_##name##_(PyObject *self, PyObject *args, PyObject *kwargs) {                                     \
    unary_call c;                                                                                                      \
    return parse_for(ID, self, args, kwargs, &c) < 0 ? NULL : vkt_py_unary(c.x, c.id, c.p0, c.p1, true);               \
  }                                                                                                                    \
  static PyObject *f_##name(PyObject *mod, PyObject *args, PyObject *kwargs) {                                         \
    unary_call c;                                                                                                      \
    (void)mod;                                                                                                         \
    return parse_for(ID, NULL, args, kwargs, &c) < 0 ? NULL : vkt_py_unary(c.x, c.id, c.p0, c.p1, false);              \
  }
UNARY_PARAMS(gelu, VKT_OP_GELU)
UNARY_PARAMS(leaky_relu, VKT_OP_LEAKY_RELU)
UNARY_PARAMS(elu, VKT_OP_ELU)
UNARY_PARAMS(softplus, VKT_OP_SOFTPLUS)
UNARY_PARAMS(celu, VKT_OP_CELU)
UNARY_PARAMS(threshold, VKT_OP_THRESHOLD)
UNARY_PARAMS(logit, VKT_OP_LOGIT)

/* polygamma(n, input), Tensor.polygamma(n), polygamma_(n): n an integer >= 0 */
static PyObject *polygamma(PyObject *self, PyObject *args, PyObject *kwargs, bool inplace) {
  static char *m_kw[] = {"n", NULL}, *f_kw[] = {"n", "input", NULL};
  PyObject *x = self;
  long long n;
  int ok = self ? vkt_parse_args(args, kwargs, "L", m_kw, &n) : vkt_parse_args(args, kwargs, "LO", f_kw, &n, &x);
  if (!ok)
    return NULL;
  if (n < 0)
    return PyErr_Format(PyExc_RuntimeError, "polygamma(n, x) does not support negative n.");
  return vkt_py_unary(x, VKT_OP_POLYGAMMA, (vkt_scalar){false, 0, n}, none, inplace);
}
static PyObject *m_polygamma(PyObject *s, PyObject *a, PyObject *k) { return polygamma(s, a, k, false); }
static PyObject *m_polygamma_(PyObject *s, PyObject *a, PyObject *k) { return polygamma(s, a, k, true); }
static PyObject *f_polygamma(PyObject *m, PyObject *a, PyObject *k) {
  (void)m;
  return polygamma(NULL, a, k, false);
}

/* PyTorch checks clamp's tensor bounds in its dispatcher (TensorIterator's cpu scalars are for clamp_min and
 * clamp_max): each on x's device, in the dispatcher's words. */
static int clamp_same_device(const vkt_tensor *x, const vkt_tensor *lo, const vkt_tensor *hi) {
  const vkt_tensor *bound[2] = {lo, hi};
  static const char *const names[2] = {"min", "max"};
  int dx = vkt_tensor_device(x);
  for (int k = 0; k < 2; k++) {
    if (!bound[k] || vkt_tensor_device(bound[k]) == dx)
      continue;
    PyObject *a = vkt_device_new(vkt_tensor_device(bound[k])), *b = vkt_device_new(dx);
    if (a && b)
      PyErr_Format(PyExc_RuntimeError,
                   "Expected all tensors to be on the same device, but got %s is on %S, different from other tensors "
                   "on %S (when checking argument in method wrapper_%s_clamp_Tensor)",
                   names[k], a, b, dx == VKT_CPU ? "CPU" : "Vulkan");
    Py_XDECREF(a);
    Py_XDECREF(b);
    return -1;
  }
  return 0;
}

/* clamp(min=None, max=None) and clip; clamp_min(min) and clamp_max(max) (`only` names the one bound).
 * Number bounds run the clamp row, tensor bounds the composite; PyTorch takes no mix of the two. */
static PyObject *clamp(PyObject *self, PyObject *args, PyObject *kwargs, bool inplace, const char *only) {
  static char *m_kw[] = {"min", "max", NULL}, *f_kw[] = {"input", "min", "max", NULL};
  char *m1[] = {(char *)only, NULL}, *f1[] = {"input", (char *)only, NULL};
  PyObject *x = self, *lo = Py_None, *hi = Py_None;
  PyObject **bound = only && strcmp(only, "max") == 0 ? &hi : &lo;
  int ok =
      only ? (self ? vkt_parse_args(args, kwargs, "O", m1, bound) : vkt_parse_args(args, kwargs, "OO", f1, &x, bound))
           : (self ? vkt_parse_args(args, kwargs, "|OO", m_kw, &lo, &hi)
                   : vkt_parse_args(args, kwargs, "O|OO", f_kw, &x, &lo, &hi));
  if (!ok)
    return NULL;
  vkt_tensor *t = vkt_tensor_of(x), *tlo = vkt_tensor_of(lo), *thi = vkt_tensor_of(hi);
  if (!t)
    return PyErr_Format(PyExc_TypeError, "clamp(): argument 'input' must be Tensor, not %R", (PyObject *)Py_TYPE(x));
  if (lo == Py_None && hi == Py_None)
    return PyErr_Format(PyExc_RuntimeError, "torch.clamp: At least one of 'min' or 'max' must not be None");
  if (tlo || thi) {
    if ((lo != Py_None && !tlo) || (hi != Py_None && !thi))
      return PyErr_Format(PyExc_TypeError, "clamp(): expected min and max both tensors or both numbers");
    if (!only && clamp_same_device(t, tlo, thi) < 0)
      return NULL;
    const vkt_var *v = vkt_var_of(x), *vlo = vkt_var_of(lo), *vhi = vkt_var_of(hi);
    const char *name = !only ? NULL : strcmp(only, "min") == 0 ? "ClampMinBackward1" : "ClampMaxBackward1";
    vkt_var r;
    if (!inplace)
      return vkt_py_var_result(vkt_ag_clamp_tensors(v, vlo, vhi, name, &r), &r);
    int records = vkt_py_inplace_records(v, vkt_requires_grad(vlo) ? vlo : vhi);
    if (records)
      return records < 0 ? NULL : vkt_py_inplace_result(x, vkt_ag_clamp_tensors(v, vlo, vhi, name, &r), &r);
    vkt_status st = vkt_clamp_tensors(t, tlo, thi, t, NULL);
    return st ? vkt_raise(st) : Py_NewRef(x);
  }
  vkt_operand b[2] = {{.s = minus_inf}, {.s = plus_inf}};
  if ((lo != Py_None && vkt_py_operand(lo, &b[0]) < 0) || (hi != Py_None && vkt_py_operand(hi, &b[1]) < 0))
    return NULL;
  vkt_dtype dtype;
  vkt_status st = vkt_clamp_scalar_type(t, lo != Py_None ? &b[0] : NULL, hi != Py_None ? &b[1] : NULL, inplace, &dtype);
  if (st)
    return vkt_raise(st);
  const char *name = !only ? NULL : strcmp(only, "min") == 0 ? "ClampMinBackward0" : "ClampMaxBackward0";
  if (dtype == t->dtype)
    return unary_named(x, VKT_OP_CLAMP, b[0].s, b[1].s, inplace, name);
  /* a bool or integer x that its bounds promote (it never requires grad): a copy in the result type, clamped */
  vkt_tensor cast;
  if ((st = vkt_to(&cast, t, vkt_tensor_device(t), dtype)))
    return vkt_raise(st);
  PyObject *c = vkt_wrap(&cast), *r = c ? unary_named(c, VKT_OP_CLAMP, b[0].s, b[1].s, false, name) : NULL;
  Py_XDECREF(c);
  return r;
}

static PyObject *m_clamp(PyObject *s, PyObject *a, PyObject *k) { return clamp(s, a, k, false, NULL); }
static PyObject *m_clamp_(PyObject *s, PyObject *a, PyObject *k) { return clamp(s, a, k, true, NULL); }
static PyObject *m_clamp_min(PyObject *s, PyObject *a, PyObject *k) { return clamp(s, a, k, false, "min"); }
static PyObject *m_clamp_min_(PyObject *s, PyObject *a, PyObject *k) { return clamp(s, a, k, true, "min"); }
static PyObject *m_clamp_max(PyObject *s, PyObject *a, PyObject *k) { return clamp(s, a, k, false, "max"); }
static PyObject *m_clamp_max_(PyObject *s, PyObject *a, PyObject *k) { return clamp(s, a, k, true, "max"); }
static PyObject *f_clamp(PyObject *m, PyObject *a, PyObject *k) {
  (void)m;
  return clamp(NULL, a, k, false, NULL);
}
/* _hardtanh(input, min_val, max_val, inplace): clamp, named as PyTorch names hardtanh's node */
static PyObject *f__hardtanh(PyObject *m, PyObject *args) {
  PyObject *x, *lo, *hi;
  int inplace;
  vkt_scalar p0, p1;
  (void)m;
  if (!PyArg_ParseTuple(args, "OOOp", &x, &lo, &hi, &inplace) || vkt_py_scalar(lo, &p0) < 0 ||
      vkt_py_scalar(hi, &p1) < 0)
    return NULL;
  return unary_named(x, VKT_OP_CLAMP, p0, p1, inplace, "HardtanhBackward0");
}
/* _rrelu_with_noise(input, noise, slope, inplace): rrelu, its node named as PyTorch's. In training noise holds the
 * slope drawn for each element (1 where it is above 0), which the gradient takes too; in evaluation it is None and
 * rrelu is leaky_relu with the mean slope. */
static PyObject *f__rrelu_with_noise(PyObject *m, PyObject *args) {
  PyObject *x, *noise;
  double slope;
  int inplace;
  (void)m;
  if (!PyArg_ParseTuple(args, "OOdp", &x, &noise, &slope, &inplace))
    return NULL;
  const char *name = inplace ? "RreluWithNoiseBackward1" : "RreluWithNoiseBackward0";
  if (noise == Py_None)
    return unary_named(x, VKT_OP_LEAKY_RELU, (vkt_scalar){true, slope, 0}, none, inplace, name);
  vkt_var *v = vkt_var_of(x), out = {0};
  vkt_tensor *slopes = vkt_tensor_of(noise);
  if (!v || !slopes)
    return PyErr_Format(PyExc_TypeError, "_rrelu_with_noise(): input and noise must be Tensors");
  if (!inplace)
    return vkt_py_var_result(vkt_ag_rrelu_noise(v, slopes, &out), &out);
  int records = vkt_py_inplace_records(v, NULL);
  vkt_status st = records > 0 ? vkt_ag_rrelu_noise(v, slopes, &out) : VKT_OK;
  if (records > 0 && !st)
    vkt_ag_rename(&out, name);
  if (records)
    return records < 0 ? NULL : vkt_py_inplace_result(x, st, &out);
  st = vkt_binary(VKT_OP_MUL, (vkt_operand){.t = &v->t}, (vkt_operand){.t = slopes}, (vkt_scalar){false, 0, 1}, &v->t,
                  NULL);
  return st ? vkt_raise(st) : Py_NewRef(x);
}
static PyObject *f_clamp_min(PyObject *m, PyObject *a, PyObject *k) {
  (void)m;
  return clamp(NULL, a, k, false, "min");
}
static PyObject *f_clamp_max(PyObject *m, PyObject *a, PyObject *k) {
  (void)m;
  return clamp(NULL, a, k, false, "max");
}

/* round(*, decimals=0) */
static PyObject *round_decimals(PyObject *self, PyObject *args, PyObject *kwargs, bool inplace) {
  static char *m_kw[] = {"decimals", NULL}, *f_kw[] = {"input", "decimals", NULL};
  PyObject *x = self;
  long long d = 0;
  vkt_tensor out;
  int ok = self ? vkt_parse_args(args, kwargs, "|$L", m_kw, &d) : vkt_parse_args(args, kwargs, "O|$L", f_kw, &x, &d);
  if (!ok)
    return NULL;
  vkt_tensor *t = vkt_tensor_of(x);
  if (!t)
    return PyErr_Format(PyExc_TypeError, "round(): argument 'input' must be Tensor, not %R", (PyObject *)Py_TYPE(x));
  const vkt_var *v = vkt_var_of(x);
  int records = inplace ? vkt_py_inplace_records(v, NULL) : 0;
  if (records < 0)
    return NULL;
  if (inplace && !records) {
    vkt_status st = vkt_round_decimals(t, d, t, NULL);
    return st ? vkt_raise(st) : Py_NewRef(x);
  }
  /* rounding's gradient is 0 almost everywhere: recorded as the round row's node */
  vkt_var r = {0};
  vkt_status st = vkt_round_decimals(t, d, NULL, &out);
  if (!st) {
    r.t = out;
    st = vkt_ag_record_unary(d ? VKT_OP_ROUND_DECIMALS : VKT_OP_ROUND, v, (vkt_scalar){0}, (vkt_scalar){0}, &r);
  }
  return inplace ? vkt_py_inplace_result(x, st, &r) : vkt_py_var_result(st, &r);
}

static PyObject *m_round(PyObject *s, PyObject *a, PyObject *k) { return round_decimals(s, a, k, false); }
static PyObject *m_round_(PyObject *s, PyObject *a, PyObject *k) { return round_decimals(s, a, k, true); }
static PyObject *f_round(PyObject *m, PyObject *a, PyObject *k) {
  (void)m;
  return round_decimals(NULL, a, k, false);
}

/* ---- binary ---- */

/* Whether o is a NumPy array (numpy is imported wherever one exists). */
static bool is_ndarray(PyObject *o) {
  PyObject *name = PyUnicode_FromString("numpy"), *np = name ? PyImport_GetModule(name) : NULL;
  PyObject *type = np ? PyObject_GetAttrString(np, "ndarray") : NULL;
  bool r = type && PyObject_TypeCheck(o, (PyTypeObject *)type);
  Py_XDECREF(type);
  Py_XDECREF(np);
  Py_XDECREF(name);
  PyErr_Clear();
  return r;
}

/* An operand of a binary op: a tensor, a number, or a NumPy array, which becomes a tensor (in *own)
 * on the device of the other operand, as PyTorch reads t + array. */
static int operand_of(PyObject *o, const vkt_tensor *other, vkt_operand *x, vkt_tensor *own) {
  if (other && !vkt_is_tensor(o) && !PyFloat_Check(o) && !PyLong_Check(o) && is_ndarray(o)) {
    int r = vkt_from_data(o, Py_None, vkt_tensor_device(other), own);
    *x = (vkt_operand){.t = own};
    return r;
  }
  return vkt_py_operand(o, x);
}

PyObject *vkt_py_binary(PyObject *a, PyObject *b, int id, vkt_scalar alpha, bool inplace) {
  vkt_operand x, y;
  vkt_var out = {0}, own[2] = {{{0}, NULL}, {{0}, NULL}};
  PyObject *r = NULL;
  if (!vkt_is_tensor(a) && !vkt_is_tensor(b))
    Py_RETURN_NOTIMPLEMENTED;
  if (operand_of(a, vkt_tensor_of(b), &x, &own[0].t) < 0 || operand_of(b, vkt_tensor_of(a), &y, &own[1].t) < 0) {
    if (PyLong_Check(a) || PyLong_Check(b)) /* an int past int64: PyTorch's error, not another type's turn */
      goto finish;
    PyErr_Clear();
    r = Py_NewRef(Py_NotImplemented);
    goto finish;
  }
  /* The operands as vars: a Python tensor's own, an array's fresh one, or NULL for a number. */
  const vkt_var *va = vkt_is_tensor(a) ? vkt_var_of(a) : x.t ? &own[0] : NULL;
  const vkt_var *vb = vkt_is_tensor(b) ? vkt_var_of(b) : y.t ? &own[1] : NULL;
  if (inplace) {
    int records = va ? vkt_py_inplace_records(va, vb) : 0;
    bool compares = id == VKT_OP_EQ || id == VKT_OP_NE || id == VKT_OP_LT || id == VKT_OP_LE || id == VKT_OP_GT ||
                    id == VKT_OP_GE;
    if (records > 0) {
      r = vkt_py_inplace_result(a,
                                compares ? vkt_ag_compare_into(id, va, x, vb, y, &out)
                                         : vkt_ag_binary_operands(id, va, x, vb, y, alpha, &out),
                                &out);
    } else if (records == 0) {
      vkt_status st = x.t ? vkt_binary(id, x, y, alpha, x.t, NULL) : vkt_fail(VKT_ERR_TYPE, "in-place op on a number");
      r = st ? vkt_raise(st) : Py_NewRef(a);
    }
  } else {
    r = vkt_py_var_result(vkt_ag_binary_operands(id, va, x, vb, y, alpha, &out), &out);
  }
finish:
  vkt_var_release(&own[0]);
  vkt_var_release(&own[1]);
  return r;
}

/* vkt_py_binary for the methods and functions: NotImplemented where the op takes tensors only. */
static PyObject *call(PyObject *a, PyObject *b, int id, vkt_scalar alpha, bool inplace) {
  if ((vkt_ops[id].flags & VKT_TENSOR_OTHER) && (!vkt_is_tensor(a) || !vkt_is_tensor(b)))
    Py_RETURN_NOTIMPLEMENTED;
  return vkt_py_binary(a, b, id, alpha, inplace);
}

/* The function form of a binary op. PyTorch's add, sub, mul, div and floor_divide also take two
 * numbers, giving a 0-d tensor on the cpu: the first number becomes that tensor (of its own dtype, as
 * vkt.tensor(number) makes it). */
static PyObject *numbers(PyObject *a, PyObject *b, int id, vkt_scalar alpha) {
  vkt_scalar s;
  vkt_tensor t;
  bool takes_numbers = id == VKT_OP_ADD || id == VKT_OP_SUB || id == VKT_OP_MUL || id == VKT_OP_DIV ||
                       id == VKT_OP_DIV_TRUNC || id == VKT_OP_DIV_FLOOR;
  if (!takes_numbers || vkt_is_tensor(a) || vkt_is_tensor(b) || vkt_py_scalar(a, &s) < 0 || vkt_py_scalar(b, &s) < 0) {
    PyErr_Clear();
    return call(a, b, id, alpha, false);
  }
  if (vkt_from_data(a, Py_None, VKT_CPU, &t) < 0)
    return NULL;
  PyObject *x = vkt_wrap(&t), *r = x ? vkt_py_binary(x, b, id, alpha, false) : NULL;
  Py_XDECREF(x);
  return r;
}

/* NotImplemented from vkt_py_binary() becomes PyTorch's TypeError when called as a method or function, as
 * does a number where the op takes tensors only (VKT_TENSOR_OTHER). */
static PyObject *strict(PyObject *r, const char *name, PyObject *a, PyObject *b) {
  if (r == Py_NotImplemented) {
    Py_DECREF(r);
    bool first = !vkt_is_tensor(a);
    PyObject *type = PyType_GetName(Py_TYPE(first ? a : b));
    if (type)
      PyErr_Format(PyExc_TypeError, "%s(): argument '%s' (position %d) must be Tensor, not %U", name,
                   first ? "input" : "other", first ? 1 : 2, type);
    Py_XDECREF(type);
    return NULL;
  }
  return r;
}

static const vkt_scalar one = {false, 0, 1};

/* alpha checked in the result type of a and b; operands that are neither numbers nor tensors are the op's to refuse. */
static int alpha_check(int id, PyObject *a, PyObject *b, PyObject *alpha) {
  vkt_operand ops[3];
  if (vkt_py_operand(a, &ops[0]) < 0 || vkt_py_operand(b, &ops[1]) < 0) {
    PyErr_Clear();
    return 0;
  }
  if (vkt_py_operand(alpha, &ops[2]) < 0)
    return -1;
  vkt_status st = vkt_alpha_check(id, ops[0], ops[1], ops[2]);
  return st ? (vkt_raise(st), -1) : 0;
}

/* add(other, *, alpha=1), sub(other, *, alpha=1); functions take (input, other, *, alpha=1). name is the one
 * called (sub or its alias subtract), for the errors. */
static PyObject *add_sub(PyObject *self, PyObject *args, PyObject *kwargs, int id, bool inplace, const char *name) {
  static char *m_kw[] = {"other", "alpha", NULL}, *f_kw[] = {"input", "other", "alpha", NULL};
  PyObject *a = self, *b, *alpha_o = NULL;
  vkt_scalar alpha = one;
  int ok = self ? vkt_parse_args(args, kwargs, "O|$O", m_kw, &b, &alpha_o)
                : vkt_parse_args(args, kwargs, "OO|$O", f_kw, &a, &b, &alpha_o);
  if (!ok || (alpha_o && (vkt_py_scalar(alpha_o, &alpha) < 0 || alpha_check(id, a, b, alpha_o) < 0)))
    return NULL;
  return strict(self ? vkt_py_binary(a, b, id, alpha, inplace) : numbers(a, b, id, alpha), name, a, b);
}

static PyObject *m_add(PyObject *s, PyObject *a, PyObject *k) { return add_sub(s, a, k, VKT_OP_ADD, false, "add"); }
static PyObject *m_add_(PyObject *s, PyObject *a, PyObject *k) { return add_sub(s, a, k, VKT_OP_ADD, true, "add"); }
static PyObject *m_sub(PyObject *s, PyObject *a, PyObject *k) { return add_sub(s, a, k, VKT_OP_SUB, false, "sub"); }
static PyObject *m_sub_(PyObject *s, PyObject *a, PyObject *k) { return add_sub(s, a, k, VKT_OP_SUB, true, "sub"); }
static PyObject *m_subtract(PyObject *s, PyObject *a, PyObject *k) {
  return add_sub(s, a, k, VKT_OP_SUB, false, "subtract");
}
static PyObject *m_subtract_(PyObject *s, PyObject *a, PyObject *k) {
  return add_sub(s, a, k, VKT_OP_SUB, true, "subtract");
}
static PyObject *f_add(PyObject *m, PyObject *a, PyObject *k) {
  (void)m;
  return add_sub(NULL, a, k, VKT_OP_ADD, false, "add");
}
static PyObject *f_sub(PyObject *m, PyObject *a, PyObject *k) {
  (void)m;
  return add_sub(NULL, a, k, VKT_OP_SUB, false, "sub");
}
static PyObject *f_subtract(PyObject *m, PyObject *a, PyObject *k) {
  (void)m;
  return add_sub(NULL, a, k, VKT_OP_SUB, false, "subtract");
}

/* div(other, *, rounding_mode=None), and its alias divide; torch names div in the rounding_mode error of both. */
static PyObject *div(PyObject *self, PyObject *args, PyObject *kwargs, bool inplace, const char *name) {
  static char *m_kw[] = {"other", "rounding_mode", NULL}, *f_kw[] = {"input", "other", "rounding_mode", NULL};
  PyObject *a = self, *b, *mode = Py_None;
  int ok = self ? vkt_parse_args(args, kwargs, "O|$O", m_kw, &b, &mode)
                : vkt_parse_args(args, kwargs, "OO|$O", f_kw, &a, &b, &mode);
  if (!ok)
    return NULL;
  int id = VKT_OP_DIV;
  if (mode != Py_None) {
    const char *m = PyUnicode_Check(mode) ? PyUnicode_AsUTF8AndSize(mode, NULL) : "";
    if (strcmp(m, "trunc") == 0)
      id = VKT_OP_DIV_TRUNC;
    else if (strcmp(m, "floor") == 0)
      id = VKT_OP_DIV_FLOOR;
    else {
      PyErr_Format(PyExc_RuntimeError,
                   "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found %R", mode);
      return NULL;
    }
  }
  return strict(self ? vkt_py_binary(a, b, id, one, inplace) : numbers(a, b, id, one), name, a, b);
}

static PyObject *m_div(PyObject *s, PyObject *a, PyObject *k) { return div(s, a, k, false, "div"); }
static PyObject *m_div_(PyObject *s, PyObject *a, PyObject *k) { return div(s, a, k, true, "div"); }
static PyObject *m_divide(PyObject *s, PyObject *a, PyObject *k) { return div(s, a, k, false, "divide"); }
static PyObject *m_divide_(PyObject *s, PyObject *a, PyObject *k) { return div(s, a, k, true, "divide"); }
static PyObject *f_div(PyObject *m, PyObject *a, PyObject *k) {
  (void)m;
  return div(NULL, a, k, false, "div");
}
static PyObject *f_divide(PyObject *m, PyObject *a, PyObject *k) {
  (void)m;
  return div(NULL, a, k, false, "divide");
}

/* The rest take (other) as methods and (input, other) as functions. */
#define BINARY(name, ID)                                                                                               \
  static PyObject *m_##name(PyObject *self, PyObject *b) {                                                             \
    return strict(call(self, b, ID, one, false), #name, self, b);                                                      \
  }                                                                                                                    \
  static PyObject *m_##name##_(PyObject *self, PyObject *b) {                                                          \
    return strict(call(self, b, ID, one, true), #name "_", self, b);                                                   \
  }                                                                                                                    \
  static PyObject *f_##name(PyObject *mod, PyObject *args) {                                                           \
    PyObject *a, *b;                                                                                                   \
    (void)mod;                                                                                                         \
    if (!PyArg_ParseTuple(args, "OO", &a, &b))                                                                         \
      return NULL;                                                                                                     \
    return strict(numbers(a, b, ID, one), #name, a, b);                                                                \
  }
BINARY(mul, VKT_OP_MUL)
BINARY(multiply, VKT_OP_MUL)
BINARY(floor_divide, VKT_OP_DIV_FLOOR)
BINARY(pow, VKT_OP_POW)
BINARY(maximum, VKT_OP_MAXIMUM)
BINARY(minimum, VKT_OP_MINIMUM)
BINARY(remainder, VKT_OP_REMAINDER)
BINARY(eq, VKT_OP_EQ)
BINARY(ne, VKT_OP_NE)
BINARY(lt, VKT_OP_LT)
BINARY(le, VKT_OP_LE)
BINARY(gt, VKT_OP_GT)
BINARY(ge, VKT_OP_GE)
BINARY(not_equal, VKT_OP_NE)
BINARY(less, VKT_OP_LT)
BINARY(less_equal, VKT_OP_LE)
BINARY(greater, VKT_OP_GT)
BINARY(greater_equal, VKT_OP_GE)
BINARY(logical_and, VKT_OP_LOGICAL_AND)
BINARY(logical_or, VKT_OP_LOGICAL_OR)
BINARY(logical_xor, VKT_OP_LOGICAL_XOR)
BINARY(atan2, VKT_OP_ATAN2)
BINARY(arctan2, VKT_OP_ATAN2)
BINARY(fmod, VKT_OP_FMOD)
BINARY(hypot, VKT_OP_HYPOT)
BINARY(copysign, VKT_OP_COPYSIGN)
BINARY(logaddexp, VKT_OP_LOGADDEXP)
BINARY(bitwise_and, VKT_OP_BITWISE_AND)
BINARY(bitwise_or, VKT_OP_BITWISE_OR)
BINARY(bitwise_xor, VKT_OP_BITWISE_XOR)
BINARY(bitwise_left_shift, VKT_OP_LSHIFT)
BINARY(bitwise_right_shift, VKT_OP_RSHIFT)
BINARY(xlogy, VKT_OP_XLOGY)
BINARY(nextafter, VKT_OP_NEXTAFTER)
BINARY(igamma, VKT_OP_IGAMMA)
BINARY(igammac, VKT_OP_IGAMMAC)
/* torch.special's only: no method */
#define SPECIAL_BINARY(name, ID)                                                                                       \
  static PyObject *f__special_##name(PyObject *mod, PyObject *args) {                                                  \
    PyObject *a, *b;                                                                                                   \
    (void)mod;                                                                                                         \
    if (!PyArg_ParseTuple(args, "OO", &a, &b))                                                                         \
      return NULL;                                                                                                     \
    return strict(numbers(a, b, ID, one), "special_" #name, a, b);                                                     \
  }
SPECIAL_BINARY(xlog1py, VKT_OP_XLOG1PY)
SPECIAL_BINARY(zeta, VKT_OP_ZETA)

/* where(condition, input, other); where(condition) alone is nonzero(condition, as_tuple=True). */
static PyObject *f_where(PyObject *mod, PyObject *args) {
  PyObject *c, *a, *b;
  vkt_operand x, y;
  vkt_var out;
  if (mod && PyTuple_Size(args) == 1) {
    PyObject *nonzero = PyObject_GetAttrString(mod, "nonzero"), *kw = Py_BuildValue("{s:O}", "as_tuple", Py_True);
    PyObject *r = nonzero && kw ? PyObject_Call(nonzero, args, kw) : NULL;
    Py_XDECREF(nonzero);
    Py_XDECREF(kw);
    return r;
  }
  if (!PyArg_ParseTuple(args, "OOO", &c, &a, &b) || vkt_py_operand(a, &x) < 0 || vkt_py_operand(b, &y) < 0)
    return NULL;
  if (!vkt_is_tensor(c)) {
    PyErr_SetString(PyExc_TypeError, "where(): argument 'condition' must be Tensor");
    return NULL;
  }
  return vkt_py_var_result(vkt_ag_where_operands(vkt_tensor_of(c), vkt_var_of(a), x, vkt_var_of(b), y, &out), &out);
}

static PyObject *m_where(PyObject *self, PyObject *args) {
  PyObject *c, *b;
  if (!PyArg_ParseTuple(args, "OO", &c, &b))
    return NULL;
  PyObject *all = Py_BuildValue("(OOO)", c, self, b);
  PyObject *r = all ? f_where(NULL, all) : NULL;
  Py_XDECREF(all);
  return r;
}

#define METHOD(name, ID, doc) {#name, m_##name, METH_NOARGS, doc},
#define INPLACE(name, ID, doc) {#name "_", m_##name##_, METH_NOARGS, "in-place " doc},
#define FUNCTION(name, ID, doc) {#name, f_##name, METH_O, doc},
#define INPLACE_FUNCTION(name, ID, doc) {#name "_", f_##name##_, METH_O, "in-place " doc},
#define MK(name, doc)                                                                                                  \
  {#name, (PyCFunction)(void (*)(void))m_##name, METH_VARARGS | METH_KEYWORDS, doc}, {                                 \
#name "_", (PyCFunction)(void (*)(void))m_##name##_, METH_VARARGS | METH_KEYWORDS, "in-place " doc                 \
  }
#define MO(name, doc)                                                                                                  \
  {#name, m_##name, METH_O, doc}, { #name "_", m_##name##_, METH_O, "in-place " doc }

PyMethodDef vkt_elementwise_methods[] = {
    UNARY_OPS(METHOD) UNARY_OPS(INPLACE) UNARY_TESTS(METHOD) MK(round, "round(*, decimals=0): half to even"),
    MK(gelu, "gelu(approximate='none'|'tanh')"),
    MK(leaky_relu, "leaky_relu(negative_slope=0.01)"),
    MK(elu, "elu(alpha=1.0)"),
    MK(softplus, "softplus(beta=1, threshold=20)"),
    MK(celu, "celu(alpha=1.0) (nn.functional's)"),
    MK(threshold, "threshold(threshold, value): value where self <= threshold (nn.functional's)"),
    MK(logit, "logit(eps=None): log(x / (1 - x)), x clamped to [eps, 1 - eps] first"),
    MK(polygamma, "polygamma(n): the n-th derivative of digamma"),
    MK(clamp, "clamp(min=None, max=None): numbers or tensors"),
    {"clip", (PyCFunction)(void (*)(void))m_clamp, METH_VARARGS | METH_KEYWORDS, "clamp(min=None, max=None)"},
    {"clip_", (PyCFunction)(void (*)(void))m_clamp_, METH_VARARGS | METH_KEYWORDS, "in-place clamp"},
    MK(clamp_min, "clamp_min(min)"),
    MK(clamp_max, "clamp_max(max)"),
    MK(add, "add(other, *, alpha=1)"),
    MK(sub, "sub(other, *, alpha=1)"),
    MK(div, "div(other, *, rounding_mode=None)"),
    MK(divide, "divide(other, *, rounding_mode=None): div"),
    MK(subtract, "subtract(other, *, alpha=1): sub"),
    {"true_divide", (PyCFunction)(void (*)(void))m_div, METH_VARARGS | METH_KEYWORDS, "self / other"},
    {"true_divide_", (PyCFunction)(void (*)(void))m_div_, METH_VARARGS | METH_KEYWORDS, "self /= other"},
    {"sgn", m_sgn, METH_NOARGS, "sign for real tensors"},
    {"sgn_", m_sgn_, METH_NOARGS, "in-place sgn"},
    MO(mul, "self * other"),
    MO(pow, "self ** other"),
    MO(maximum, "elementwise max, NaN-propagating"),
    MO(minimum, "elementwise min, NaN-propagating"),
    MO(remainder, "Python's %"),
    MO(floor_divide, "self // other"),
    MO(eq, "=="),
    MO(ne, "!="),
    MO(lt, "<"),
    MO(le, "<="),
    MO(gt, ">"),
    MO(ge, ">="),
    MO(multiply, "mul"),
    MO(not_equal, "ne"),
    MO(less, "lt"),
    MO(less_equal, "le"),
    MO(greater, "gt"),
    MO(greater_equal, "ge"),
    MO(logical_and, "and"),
    MO(logical_or, "or"),
    MO(logical_xor, "xor of truth values"),
    MO(atan2, "atan2(self, other): the angle of (other, self)"),
    MO(arctan2, "atan2(self, other)"),
    MO(fmod, "C's fmod: the remainder with self's sign"),
    MO(hypot, "sqrt(self^2 + other^2) without overflow"),
    MO(copysign, "|self| with other's sign"),
    MO(logaddexp, "log(e^self + e^other)"),
    MO(bitwise_and, "&"),
    MO(bitwise_or, "|"),
    MO(bitwise_xor, "^"),
    MO(bitwise_left_shift, "<<"),
    MO(bitwise_right_shift, ">>"),
    MO(xlogy, "self * log(other), 0 where self is 0"),
    MO(nextafter, "the next float after self toward other"),
    MO(igamma, "the regularized lower incomplete gamma function P(self, other)"),
    MO(igammac, "the regularized upper incomplete gamma function Q(self, other)"),
    {"where", m_where, METH_VARARGS, "where(condition, other): self where condition, else other"},
    {NULL, NULL, 0, NULL},
};

#define FK(name, doc)                                                                                                  \
  { #name, (PyCFunction)(void (*)(void))f_##name, METH_VARARGS | METH_KEYWORDS, doc }
#define F2(name, doc)                                                                                                  \
  { #name, f_##name, METH_VARARGS, doc }

PyMethodDef vkt_elementwise_functions[] = {
    UNARY_OPS(FUNCTION) UNARY_TESTS(FUNCTION) UNARY_FUNCTIONS(FUNCTION) UNARY_FUNCTIONS(INPLACE_FUNCTION)
        SPECIAL_FUNCTIONS(FUNCTION)
        FK(round, "round(input, *, decimals=0)"),
    FK(gelu, "gelu(input, approximate='none')"),
    FK(leaky_relu, "leaky_relu(input, negative_slope=0.01)"),
    FK(elu, "elu(input, alpha=1.0)"),
    FK(celu, "celu(input, alpha=1.0)"),
    FK(threshold, "threshold(input, threshold, value): value where input <= threshold"),
    FK(softplus, "softplus(input, beta=1, threshold=20)"),
    FK(logit, "logit(input, eps=None): log(x / (1 - x)), x clamped to [eps, 1 - eps] first"),
    FK(polygamma, "polygamma(n, input): the n-th derivative of digamma"),
    FK(clamp, "clamp(input, min=None, max=None): numbers or tensors"),
    {"clip", (PyCFunction)(void (*)(void))f_clamp, METH_VARARGS | METH_KEYWORDS, "clamp(input, min=None, max=None)"},
    FK(clamp_min, "clamp_min(input, min)"),
    {"_hardtanh", f__hardtanh, METH_VARARGS, "_hardtanh(input, min_val, max_val, inplace): nn.functional.hardtanh"},
    {"_rrelu_with_noise", f__rrelu_with_noise, METH_VARARGS,
     "_rrelu_with_noise(input, noise, slope, inplace): nn.functional.rrelu (noise None in evaluation)"},
    FK(clamp_max, "clamp_max(input, max)"),
    FK(add, "add(input, other, *, alpha=1)"),
    FK(sub, "sub(input, other, *, alpha=1)"),
    FK(div, "div(input, other, *, rounding_mode=None)"),
    FK(divide, "divide(input, other, *, rounding_mode=None): div"),
    FK(subtract, "subtract(input, other, *, alpha=1): sub"),
    {"true_divide", (PyCFunction)(void (*)(void))f_div, METH_VARARGS | METH_KEYWORDS, "input / other"},
    F2(mul, "input * other"),
    F2(pow, "input ** other"),
    F2(maximum, "elementwise max"),
    F2(minimum, "elementwise min"),
    F2(remainder, "Python's %"),
    F2(floor_divide, "input // other"),
    F2(eq, "=="),
    F2(ne, "!="),
    F2(lt, "<"),
    F2(le, "<="),
    F2(gt, ">"),
    F2(ge, ">="),
    F2(multiply, "mul"),
    F2(not_equal, "ne"),
    F2(less, "lt"),
    F2(less_equal, "le"),
    F2(greater, "gt"),
    F2(greater_equal, "ge"),
    F2(logical_and, "and"),
    F2(logical_or, "or"),
    F2(logical_xor, "xor of truth values"),
    F2(atan2, "atan2(input, other): the angle of (other, input)"),
    F2(arctan2, "atan2(input, other)"),
    F2(fmod, "C's fmod: the remainder with input's sign"),
    F2(hypot, "sqrt(input^2 + other^2) without overflow"),
    F2(copysign, "|input| with other's sign"),
    F2(logaddexp, "log(e^input + e^other)"),
    F2(bitwise_and, "&"),
    F2(bitwise_or, "|"),
    F2(bitwise_xor, "^"),
    F2(bitwise_left_shift, "<<"),
    F2(bitwise_right_shift, ">>"),
    F2(xlogy, "input * log(other), 0 where input is 0"),
    F2(_special_xlog1py, "input * log1p(other), 0 where input is 0"),
    F2(_special_zeta, "the Hurwitz zeta function of (input, other)"),
    F2(nextafter, "the next float after input toward other"),
    F2(igamma, "the regularized lower incomplete gamma function P(input, other) (special.gammainc)"),
    F2(igammac, "the regularized upper incomplete gamma function Q(input, other) (special.gammaincc)"),
    {"sgn", f_sgn, METH_O, "sign for real tensors"},
    F2(where, "where(condition, input, other)"),
    {NULL, NULL, 0, NULL},
};

/* ---- the number protocol ---- */

static PyObject *nb_add(PyObject *a, PyObject *b) { return vkt_py_binary(a, b, VKT_OP_ADD, one, false); }
static PyObject *nb_sub(PyObject *a, PyObject *b) { return vkt_py_binary(a, b, VKT_OP_SUB, one, false); }
static PyObject *nb_mul(PyObject *a, PyObject *b) { return vkt_py_binary(a, b, VKT_OP_MUL, one, false); }
static PyObject *nb_div(PyObject *a, PyObject *b) { return vkt_py_binary(a, b, VKT_OP_DIV, one, false); }
static PyObject *nb_floordiv(PyObject *a, PyObject *b) { return vkt_py_binary(a, b, VKT_OP_DIV_FLOOR, one, false); }
static PyObject *nb_mod(PyObject *a, PyObject *b) { return vkt_py_binary(a, b, VKT_OP_REMAINDER, one, false); }
static PyObject *nb_iadd(PyObject *a, PyObject *b) { return vkt_py_binary(a, b, VKT_OP_ADD, one, true); }
static PyObject *nb_isub(PyObject *a, PyObject *b) { return vkt_py_binary(a, b, VKT_OP_SUB, one, true); }
static PyObject *nb_imul(PyObject *a, PyObject *b) { return vkt_py_binary(a, b, VKT_OP_MUL, one, true); }
static PyObject *nb_idiv(PyObject *a, PyObject *b) { return vkt_py_binary(a, b, VKT_OP_DIV, one, true); }
static PyObject *nb_ifloordiv(PyObject *a, PyObject *b) { return vkt_py_binary(a, b, VKT_OP_DIV_FLOOR, one, true); }
static PyObject *nb_imod(PyObject *a, PyObject *b) { return vkt_py_binary(a, b, VKT_OP_REMAINDER, one, true); }

static PyObject *nb_pow(PyObject *a, PyObject *b, PyObject *mod) {
  if (mod != Py_None)
    Py_RETURN_NOTIMPLEMENTED;
  return vkt_py_binary(a, b, VKT_OP_POW, one, false);
}

static PyObject *nb_ipow(PyObject *a, PyObject *b, PyObject *mod) {
  if (mod != Py_None)
    Py_RETURN_NOTIMPLEMENTED;
  return vkt_py_binary(a, b, VKT_OP_POW, one, true);
}

static PyObject *nb_and(PyObject *a, PyObject *b) { return vkt_py_binary(a, b, VKT_OP_BITWISE_AND, one, false); }
static PyObject *nb_or(PyObject *a, PyObject *b) { return vkt_py_binary(a, b, VKT_OP_BITWISE_OR, one, false); }
static PyObject *nb_xor(PyObject *a, PyObject *b) { return vkt_py_binary(a, b, VKT_OP_BITWISE_XOR, one, false); }
static PyObject *nb_lshift(PyObject *a, PyObject *b) { return vkt_py_binary(a, b, VKT_OP_LSHIFT, one, false); }
static PyObject *nb_rshift(PyObject *a, PyObject *b) { return vkt_py_binary(a, b, VKT_OP_RSHIFT, one, false); }
static PyObject *nb_iand(PyObject *a, PyObject *b) { return vkt_py_binary(a, b, VKT_OP_BITWISE_AND, one, true); }
static PyObject *nb_ior(PyObject *a, PyObject *b) { return vkt_py_binary(a, b, VKT_OP_BITWISE_OR, one, true); }
static PyObject *nb_ixor(PyObject *a, PyObject *b) { return vkt_py_binary(a, b, VKT_OP_BITWISE_XOR, one, true); }
static PyObject *nb_ilshift(PyObject *a, PyObject *b) { return vkt_py_binary(a, b, VKT_OP_LSHIFT, one, true); }
static PyObject *nb_irshift(PyObject *a, PyObject *b) { return vkt_py_binary(a, b, VKT_OP_RSHIFT, one, true); }

static PyObject *nb_neg(PyObject *x) { return vkt_py_unary(x, VKT_OP_NEG, none, none, false); }
static PyObject *nb_abs(PyObject *x) { return vkt_py_unary(x, VKT_OP_ABS, none, none, false); }
static PyObject *nb_pos(PyObject *x) { return Py_NewRef(x); }

static PyObject *nb_invert(PyObject *x) {
  if (vkt_dtypes[vkt_tensor_of(x)->dtype].is_float) {
    PyErr_SetString(PyExc_TypeError, "~ (operator.invert) is only implemented on integer and Boolean-type tensors");
    return NULL;
  }
  return vkt_py_unary(x, VKT_OP_BITWISE_NOT, none, none, false);
}

/* One element as a Python number, for bool(), int(), float() and operator.index(); other sizes raise what torch
 * raises for that caller. */
static PyObject *item(PyObject *x, const char *what) {
  vkt_tensor *t = vkt_tensor_of(x);
  char bytes[8];
  int64_t n = vkt_tensor_numel(t);
  if (n != 1) {
    if (strcmp(what, "Boolean") == 0)
      PyErr_Format(PyExc_RuntimeError, "Boolean value of Tensor with %s is ambiguous",
                   n ? "more than one value" : "no values");
    else if (strcmp(what, "Index") == 0)
      PyErr_SetString(PyExc_TypeError, "only integer tensors of a single element can be converted to an index");
    else
      PyErr_SetString(PyExc_ValueError, "only one element tensors can be converted to Python scalars");
    return NULL;
  }
  vkt_status st = vkt_read(t, bytes);
  if (st)
    return vkt_raise(st);
  vkt_scalar v = vkt_scalar_load(t->dtype, bytes);
  return v.is_float ? PyFloat_FromDouble(v.f) : PyLong_FromLongLong(v.i);
}

static int nb_bool(PyObject *x) {
  PyObject *v = item(x, "Boolean");
  int r = v ? PyObject_IsTrue(v) : -1;
  Py_XDECREF(v);
  return r;
}

static PyObject *nb_int(PyObject *x) {
  PyObject *v = item(x, "Integer");
  PyObject *r = v ? PyNumber_Long(v) : NULL;
  Py_XDECREF(v);
  return r;
}

static PyObject *nb_float(PyObject *x) {
  PyObject *v = item(x, "Float");
  PyObject *r = v ? PyNumber_Float(v) : NULL;
  Py_XDECREF(v);
  return r;
}

static PyObject *nb_index(PyObject *x) {
  if (vkt_dtypes[vkt_tensor_of(x)->dtype].is_float) {
    PyErr_SetString(PyExc_TypeError, "only integer tensors of a single element can be converted to an index");
    return NULL;
  }
  return item(x, "Index");
}

static PyObject *richcompare(PyObject *a, PyObject *b, int op) {
  static const int ids[] = {[Py_LT] = VKT_OP_LT, [Py_LE] = VKT_OP_LE, [Py_EQ] = VKT_OP_EQ,
                            [Py_NE] = VKT_OP_NE, [Py_GT] = VKT_OP_GT, [Py_GE] = VKT_OP_GE};
  return vkt_py_binary(a, b, ids[op], one, false);
}

/* Tensors define ==, so they hash by identity, as PyTorch's do. */
static Py_hash_t identity_hash(PyObject *x) { return (Py_hash_t)((uintptr_t)x >> 4); }

PyType_Slot vkt_number_slots[] = {
    {Py_nb_add, nb_add},
    {Py_nb_subtract, nb_sub},
    {Py_nb_multiply, nb_mul},
    {Py_nb_true_divide, nb_div},
    {Py_nb_floor_divide, nb_floordiv},
    {Py_nb_remainder, nb_mod},
    {Py_nb_power, nb_pow},
    {Py_nb_inplace_add, nb_iadd},
    {Py_nb_inplace_subtract, nb_isub},
    {Py_nb_inplace_multiply, nb_imul},
    {Py_nb_inplace_true_divide, nb_idiv},
    {Py_nb_inplace_floor_divide, nb_ifloordiv},
    {Py_nb_inplace_remainder, nb_imod},
    {Py_nb_inplace_power, nb_ipow},
    {Py_nb_and, nb_and},
    {Py_nb_or, nb_or},
    {Py_nb_xor, nb_xor},
    {Py_nb_lshift, nb_lshift},
    {Py_nb_rshift, nb_rshift},
    {Py_nb_inplace_and, nb_iand},
    {Py_nb_inplace_or, nb_ior},
    {Py_nb_inplace_xor, nb_ixor},
    {Py_nb_inplace_lshift, nb_ilshift},
    {Py_nb_inplace_rshift, nb_irshift},
    {Py_nb_negative, nb_neg},
    {Py_nb_positive, nb_pos},
    {Py_nb_absolute, nb_abs},
    {Py_nb_invert, nb_invert},
    {Py_nb_bool, nb_bool},
    {Py_nb_int, nb_int},
    {Py_nb_float, nb_float},
    {Py_nb_index, nb_index},
    {Py_nb_matrix_multiply, vkt_py_matmul},
    {Py_tp_richcompare, richcompare},
    {Py_tp_hash, identity_hash},
    {0, NULL},
};
