/* ops_elementwise.c: Python bindings of the elementwise family: Tensor methods (with in-place
 * variants), vkt.<op> functions, and Tensor's number protocol and comparisons. */
#include <math.h>
#include <string.h>

#include "py.h"

static const vkt_scalar none = {false, 0, 0};

static PyObject *unary(PyObject *x, int id, vkt_scalar p0, vkt_scalar p1, bool inplace) {
  vkt_tensor *t = vkt_tensor_of(x), out;
  if (!t) {
    PyErr_Format(PyExc_TypeError, "%s(): argument 'input' must be Tensor, not %R", vkt_ops[id].name,
                 (PyObject *)Py_TYPE(x));
    return NULL;
  }
  if (inplace) {
    vkt_status st = vkt_unary(id, t, p0, p1, t, NULL);
    return st ? vkt_raise(st) : Py_NewRef(x);
  }
  return vkt_py_result(vkt_unary(id, t, p0, p1, NULL, &out), &out);
}

/* Ops without parameters: x.op(), x.op_(), vkt.op(x). */
#define UNARY(name, ID)                                                                                                \
  static PyObject *m_##name(PyObject *self, PyObject *unused) {                                                        \
    (void)unused;                                                                                                      \
    return unary(self, ID, none, none, false);                                                                         \
  }                                                                                                                    \
  static PyObject *m_##name##_(PyObject *self, PyObject *unused) {                                                     \
    (void)unused;                                                                                                      \
    return unary(self, ID, none, none, true);                                                                          \
  }                                                                                                                    \
  static PyObject *f_##name(PyObject *mod, PyObject *x) {                                                              \
    (void)mod;                                                                                                         \
    return unary(x, ID, none, none, false);                                                                            \
  }
UNARY(relu, VKT_OP_RELU)
UNARY(silu, VKT_OP_SILU)
UNARY(sigmoid, VKT_OP_SIGMOID)
UNARY(tanh, VKT_OP_TANH)
UNARY(neg, VKT_OP_NEG)
UNARY(abs, VKT_OP_ABS)
UNARY(exp, VKT_OP_EXP)
UNARY(log, VKT_OP_LOG)
UNARY(sqrt, VKT_OP_SQRT)
UNARY(rsqrt, VKT_OP_RSQRT)
UNARY(sin, VKT_OP_SIN)
UNARY(cos, VKT_OP_COS)
UNARY(square, VKT_OP_SQUARE)
UNARY(reciprocal, VKT_OP_RECIPROCAL)
UNARY(sign, VKT_OP_SIGN)
UNARY(floor, VKT_OP_FLOOR)
UNARY(ceil, VKT_OP_CEIL)
UNARY(round, VKT_OP_ROUND)
UNARY(logical_not, VKT_OP_LOGICAL_NOT)

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
  int ok = self ? PyArg_ParseTupleAndKeywords(args, kwargs, "|$s", m_kw, &approx)
                : PyArg_ParseTupleAndKeywords(args, kwargs, "O|$s", f_kw, &c->x, &approx);
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
  int ok = self ? PyArg_ParseTupleAndKeywords(args, kwargs, n1 ? "|OO" : "|O", m_kw, &o0, &o1)
                : PyArg_ParseTupleAndKeywords(args, kwargs, n1 ? "O|OO" : "O|O", f_kw, &c->x, &o0, &o1);
  if (!ok)
    return -1;
  c->p0 = d0, c->p1 = d1;
  if ((o0 != Py_None && vkt_py_scalar(o0, &c->p0) < 0) || (o1 != Py_None && vkt_py_scalar(o1, &c->p1) < 0))
    return -1;
  return 0;
}

static const vkt_scalar minus_inf = {true, -INFINITY, 0}, plus_inf = {true, INFINITY, 0};

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
  default: /* clamp */
    if (parse_params(self, args, kwargs, c, "min", "max", minus_inf, plus_inf) < 0)
      return -1;
    if (isinf(c->p0.f) && c->p0.is_float && isinf(c->p1.f) && c->p1.is_float && c->p0.f < 0 && c->p1.f > 0) {
      PyErr_SetString(PyExc_RuntimeError, "torch.clamp: At least one of 'min' or 'max' must not be None");
      return -1;
    }
    return 0;
  }
}

#define UNARY_PARAMS(name, ID)                                                                                         \
  static PyObject *m_##name(PyObject *self, PyObject *args, PyObject *kwargs) {                                        \
    unary_call c;                                                                                                      \
    return parse_for(ID, self, args, kwargs, &c) < 0 ? NULL : unary(c.x, c.id, c.p0, c.p1, false);                     \
  }                                                                                                                    \
  static PyObject *m_##name##_(PyObject *self, PyObject *args, PyObject *kwargs) {                                     \
    unary_call c;                                                                                                      \
    return parse_for(ID, self, args, kwargs, &c) < 0 ? NULL : unary(c.x, c.id, c.p0, c.p1, true);                      \
  }                                                                                                                    \
  static PyObject *f_##name(PyObject *mod, PyObject *args, PyObject *kwargs) {                                         \
    unary_call c;                                                                                                      \
    (void)mod;                                                                                                         \
    return parse_for(ID, NULL, args, kwargs, &c) < 0 ? NULL : unary(c.x, c.id, c.p0, c.p1, false);                     \
  }
UNARY_PARAMS(gelu, VKT_OP_GELU)
UNARY_PARAMS(leaky_relu, VKT_OP_LEAKY_RELU)
UNARY_PARAMS(elu, VKT_OP_ELU)
UNARY_PARAMS(softplus, VKT_OP_SOFTPLUS)
UNARY_PARAMS(clamp, VKT_OP_CLAMP)

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
  if (!vkt_is_tensor(o) && other && is_ndarray(o)) {
    PyObject *device = vkt_device_new(vkt_tensor_device(other));
    int r = device ? vkt_from_data(o, Py_None, device, own) : -1;
    Py_XDECREF(device);
    *x = (vkt_operand){.t = own};
    return r;
  }
  return vkt_py_operand(o, x);
}

static PyObject *binary(PyObject *a, PyObject *b, int id, vkt_scalar alpha, bool inplace) {
  vkt_operand x, y;
  vkt_tensor out, own[2] = {{0}};
  PyObject *r = NULL;
  if (!vkt_is_tensor(a) && !vkt_is_tensor(b))
    Py_RETURN_NOTIMPLEMENTED;
  if (operand_of(a, vkt_tensor_of(b), &x, &own[0]) < 0 || operand_of(b, vkt_tensor_of(a), &y, &own[1]) < 0) {
    PyErr_Clear();
    r = Py_NewRef(Py_NotImplemented);
  } else if (inplace) {
    vkt_status st = x.t ? vkt_binary(id, x, y, alpha, x.t, NULL) : vkt_fail(VKT_ERR_TYPE, "in-place op on a number");
    r = st ? vkt_raise(st) : Py_NewRef(a);
  } else {
    r = vkt_py_result(vkt_binary(id, x, y, alpha, NULL, &out), &out);
  }
  vkt_tensor_release(&own[0]);
  vkt_tensor_release(&own[1]);
  return r;
}

/* PyTorch's add, sub, mul, div and floor_divide also take two numbers, giving a 0-d tensor on the
 * cpu: the first number becomes that tensor (of its own dtype, as vkt.tensor(number) makes it). */
static PyObject *numbers(PyObject *a, PyObject *b, int id, vkt_scalar alpha) {
  vkt_scalar s;
  vkt_tensor t;
  if (vkt_is_tensor(a) || vkt_is_tensor(b) || vkt_py_scalar(a, &s) < 0 || vkt_py_scalar(b, &s) < 0) {
    PyErr_Clear();
    return binary(a, b, id, alpha, false);
  }
  if (vkt_from_data(a, Py_None, Py_None, &t) < 0)
    return NULL;
  PyObject *x = vkt_wrap(&t), *r = x ? binary(x, b, id, alpha, false) : NULL;
  Py_XDECREF(x);
  return r;
}

/* NotImplemented from binary() becomes a TypeError when called as a method or function. */
static PyObject *strict(PyObject *r, PyObject *b) {
  if (r == Py_NotImplemented) {
    Py_DECREF(r);
    PyErr_Format(PyExc_TypeError, "expected a Tensor or a number, got %R", (PyObject *)Py_TYPE(b));
    return NULL;
  }
  return r;
}

static const vkt_scalar one = {false, 0, 1};

/* add(other, *, alpha=1), sub(other, *, alpha=1); functions take (input, other, *, alpha=1). */
static PyObject *add_sub(PyObject *self, PyObject *args, PyObject *kwargs, int id, bool inplace) {
  static char *m_kw[] = {"other", "alpha", NULL}, *f_kw[] = {"input", "other", "alpha", NULL};
  PyObject *a = self, *b, *alpha_o = NULL;
  vkt_scalar alpha = one;
  int ok = self ? PyArg_ParseTupleAndKeywords(args, kwargs, "O|$O", m_kw, &b, &alpha_o)
                : PyArg_ParseTupleAndKeywords(args, kwargs, "OO|$O", f_kw, &a, &b, &alpha_o);
  if (!ok || (alpha_o && vkt_py_scalar(alpha_o, &alpha) < 0))
    return NULL;
  return strict(self ? binary(a, b, id, alpha, inplace) : numbers(a, b, id, alpha), b);
}

static PyObject *m_add(PyObject *s, PyObject *a, PyObject *k) { return add_sub(s, a, k, VKT_OP_ADD, false); }
static PyObject *m_add_(PyObject *s, PyObject *a, PyObject *k) { return add_sub(s, a, k, VKT_OP_ADD, true); }
static PyObject *m_sub(PyObject *s, PyObject *a, PyObject *k) { return add_sub(s, a, k, VKT_OP_SUB, false); }
static PyObject *m_sub_(PyObject *s, PyObject *a, PyObject *k) { return add_sub(s, a, k, VKT_OP_SUB, true); }
static PyObject *f_add(PyObject *m, PyObject *a, PyObject *k) {
  (void)m;
  return add_sub(NULL, a, k, VKT_OP_ADD, false);
}
static PyObject *f_sub(PyObject *m, PyObject *a, PyObject *k) {
  (void)m;
  return add_sub(NULL, a, k, VKT_OP_SUB, false);
}

/* div(other, *, rounding_mode=None) */
static PyObject *div(PyObject *self, PyObject *args, PyObject *kwargs, bool inplace) {
  static char *m_kw[] = {"other", "rounding_mode", NULL}, *f_kw[] = {"input", "other", "rounding_mode", NULL};
  PyObject *a = self, *b, *mode = Py_None;
  int ok = self ? PyArg_ParseTupleAndKeywords(args, kwargs, "O|$O", m_kw, &b, &mode)
                : PyArg_ParseTupleAndKeywords(args, kwargs, "OO|$O", f_kw, &a, &b, &mode);
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
      PyErr_Format(PyExc_ValueError, "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found %R",
                   mode);
      return NULL;
    }
  }
  return strict(self ? binary(a, b, id, one, inplace) : numbers(a, b, id, one), b);
}

static PyObject *m_div(PyObject *s, PyObject *a, PyObject *k) { return div(s, a, k, false); }
static PyObject *m_div_(PyObject *s, PyObject *a, PyObject *k) { return div(s, a, k, true); }
static PyObject *f_div(PyObject *m, PyObject *a, PyObject *k) {
  (void)m;
  return div(NULL, a, k, false);
}

/* The rest take (other) as methods and (input, other) as functions. */
#define BINARY(name, ID)                                                                                               \
  static PyObject *m_##name(PyObject *self, PyObject *b) { return strict(binary(self, b, ID, one, false), b); }        \
  static PyObject *m_##name##_(PyObject *self, PyObject *b) { return strict(binary(self, b, ID, one, true), b); }      \
  static PyObject *f_##name(PyObject *mod, PyObject *args) {                                                           \
    PyObject *a, *b;                                                                                                   \
    (void)mod;                                                                                                         \
    if (!PyArg_ParseTuple(args, "OO", &a, &b))                                                                         \
      return NULL;                                                                                                     \
    return strict(binary(a, b, ID, one, false), b);                                                                    \
  }
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
BINARY(logical_and, VKT_OP_LOGICAL_AND)
BINARY(logical_or, VKT_OP_LOGICAL_OR)

/* Those that also take two numbers (numbers()). */
#define BINARY_NUMBERS(name, ID)                                                                                       \
  static PyObject *m_##name(PyObject *self, PyObject *b) { return strict(binary(self, b, ID, one, false), b); }        \
  static PyObject *m_##name##_(PyObject *self, PyObject *b) { return strict(binary(self, b, ID, one, true), b); }      \
  static PyObject *f_##name(PyObject *mod, PyObject *args) {                                                           \
    PyObject *a, *b;                                                                                                   \
    (void)mod;                                                                                                         \
    if (!PyArg_ParseTuple(args, "OO", &a, &b))                                                                         \
      return NULL;                                                                                                     \
    return strict(numbers(a, b, ID, one), b);                                                                          \
  }
BINARY_NUMBERS(mul, VKT_OP_MUL)
BINARY_NUMBERS(floor_divide, VKT_OP_DIV_FLOOR)

static PyObject *f_where(PyObject *mod, PyObject *args) {
  PyObject *c, *a, *b;
  vkt_operand x, y;
  vkt_tensor out;
  (void)mod;
  if (!PyArg_ParseTuple(args, "OOO", &c, &a, &b) || vkt_py_operand(a, &x) < 0 || vkt_py_operand(b, &y) < 0)
    return NULL;
  if (!vkt_is_tensor(c)) {
    PyErr_SetString(PyExc_TypeError, "where(): argument 'condition' must be Tensor");
    return NULL;
  }
  return vkt_py_result(vkt_where(vkt_tensor_of(c), x, y, &out), &out);
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

#define M0(name, doc)                                                                                                  \
  {#name, m_##name, METH_NOARGS, doc}, { #name "_", m_##name##_, METH_NOARGS, "in-place " doc }
#define MK(name, doc)                                                                                                  \
  {#name, (PyCFunction)(void (*)(void))m_##name, METH_VARARGS | METH_KEYWORDS, doc}, {                                 \
#name "_", (PyCFunction)(void (*)(void))m_##name##_, METH_VARARGS | METH_KEYWORDS, "in-place " doc                 \
  }
#define MO(name, doc)                                                                                                  \
  {#name, m_##name, METH_O, doc}, { #name "_", m_##name##_, METH_O, "in-place " doc }

PyMethodDef vkt_elementwise_methods[] = {
    M0(relu, "max(x, 0)"),
    M0(silu, "x * sigmoid(x)"),
    M0(sigmoid, "1 / (1 + exp(-x))"),
    M0(tanh, "tanh(x)"),
    M0(neg, "-x"),
    M0(abs, "|x|"),
    M0(exp, "e^x"),
    M0(log, "natural log"),
    M0(sqrt, "square root"),
    M0(rsqrt, "1 / sqrt(x)"),
    M0(sin, "sine"),
    M0(cos, "cosine"),
    M0(square, "x * x"),
    M0(reciprocal, "1 / x"),
    M0(sign, "-1, 0 or 1"),
    M0(floor, "round down"),
    M0(ceil, "round up"),
    M0(round, "round half to even"),
    M0(logical_not, "x == 0"),
    {"negative", m_neg, METH_NOARGS, "-x"},
    MK(gelu, "gelu(approximate='none'|'tanh')"),
    MK(leaky_relu, "leaky_relu(negative_slope=0.01)"),
    MK(elu, "elu(alpha=1.0)"),
    MK(softplus, "softplus(beta=1, threshold=20)"),
    MK(clamp, "clamp(min=None, max=None)"),
    {"clip", (PyCFunction)(void (*)(void))m_clamp, METH_VARARGS | METH_KEYWORDS, "clamp(min=None, max=None)"},
    MK(add, "add(other, *, alpha=1)"),
    MK(sub, "sub(other, *, alpha=1)"),
    MK(div, "div(other, *, rounding_mode=None)"),
    {"true_divide", (PyCFunction)(void (*)(void))m_div, METH_VARARGS | METH_KEYWORDS, "self / other"},
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
    MO(logical_and, "and"),
    MO(logical_or, "or"),
    {"where", m_where, METH_VARARGS, "where(condition, other): self where condition, else other"},
    {NULL, NULL, 0, NULL},
};

#define F0(name, doc)                                                                                                  \
  { #name, f_##name, METH_O, doc }
#define FK(name, doc)                                                                                                  \
  { #name, (PyCFunction)(void (*)(void))f_##name, METH_VARARGS | METH_KEYWORDS, doc }
#define F2(name, doc)                                                                                                  \
  { #name, f_##name, METH_VARARGS, doc }

PyMethodDef vkt_elementwise_functions[] = {
    F0(relu, "max(x, 0)"),
    F0(silu, "x * sigmoid(x)"),
    F0(sigmoid, "1 / (1 + exp(-x))"),
    F0(tanh, "tanh(x)"),
    F0(neg, "-x"),
    {"negative", f_neg, METH_O, "-x"},
    F0(abs, "|x|"),
    F0(exp, "e^x"),
    F0(log, "natural log"),
    F0(sqrt, "square root"),
    F0(rsqrt, "1 / sqrt(x)"),
    F0(sin, "sine"),
    F0(cos, "cosine"),
    F0(square, "x * x"),
    F0(reciprocal, "1 / x"),
    F0(sign, "-1, 0 or 1"),
    F0(floor, "round down"),
    F0(ceil, "round up"),
    F0(round, "round half to even"),
    F0(logical_not, "x == 0"),
    FK(gelu, "gelu(input, approximate='none')"),
    FK(leaky_relu, "leaky_relu(input, negative_slope=0.01)"),
    FK(elu, "elu(input, alpha=1.0)"),
    FK(softplus, "softplus(input, beta=1, threshold=20)"),
    FK(clamp, "clamp(input, min=None, max=None)"),
    {"clip", (PyCFunction)(void (*)(void))f_clamp, METH_VARARGS | METH_KEYWORDS, "clamp(input, min=None, max=None)"},
    FK(add, "add(input, other, *, alpha=1)"),
    FK(sub, "sub(input, other, *, alpha=1)"),
    FK(div, "div(input, other, *, rounding_mode=None)"),
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
    F2(logical_and, "and"),
    F2(logical_or, "or"),
    F2(where, "where(condition, input, other)"),
    {NULL, NULL, 0, NULL},
};

/* ---- the number protocol ---- */

static PyObject *nb_add(PyObject *a, PyObject *b) { return binary(a, b, VKT_OP_ADD, one, false); }
static PyObject *nb_sub(PyObject *a, PyObject *b) { return binary(a, b, VKT_OP_SUB, one, false); }
static PyObject *nb_mul(PyObject *a, PyObject *b) { return binary(a, b, VKT_OP_MUL, one, false); }
static PyObject *nb_div(PyObject *a, PyObject *b) { return binary(a, b, VKT_OP_DIV, one, false); }
static PyObject *nb_floordiv(PyObject *a, PyObject *b) { return binary(a, b, VKT_OP_DIV_FLOOR, one, false); }
static PyObject *nb_mod(PyObject *a, PyObject *b) { return binary(a, b, VKT_OP_REMAINDER, one, false); }
static PyObject *nb_iadd(PyObject *a, PyObject *b) { return binary(a, b, VKT_OP_ADD, one, true); }
static PyObject *nb_isub(PyObject *a, PyObject *b) { return binary(a, b, VKT_OP_SUB, one, true); }
static PyObject *nb_imul(PyObject *a, PyObject *b) { return binary(a, b, VKT_OP_MUL, one, true); }
static PyObject *nb_idiv(PyObject *a, PyObject *b) { return binary(a, b, VKT_OP_DIV, one, true); }
static PyObject *nb_ifloordiv(PyObject *a, PyObject *b) { return binary(a, b, VKT_OP_DIV_FLOOR, one, true); }
static PyObject *nb_imod(PyObject *a, PyObject *b) { return binary(a, b, VKT_OP_REMAINDER, one, true); }

static PyObject *nb_pow(PyObject *a, PyObject *b, PyObject *mod) {
  if (mod != Py_None)
    Py_RETURN_NOTIMPLEMENTED;
  return binary(a, b, VKT_OP_POW, one, false);
}

static PyObject *nb_ipow(PyObject *a, PyObject *b, PyObject *mod) {
  if (mod != Py_None)
    Py_RETURN_NOTIMPLEMENTED;
  return binary(a, b, VKT_OP_POW, one, true);
}

static bool both_bool(PyObject *a, PyObject *b) {
  vkt_tensor *x = vkt_tensor_of(a), *y = vkt_tensor_of(b);
  return (!x || x->dtype == VKT_BOOL) && (!y || y->dtype == VKT_BOOL);
}

static PyObject *nb_and(PyObject *a, PyObject *b) {
  if (!both_bool(a, b))
    Py_RETURN_NOTIMPLEMENTED;
  return binary(a, b, VKT_OP_LOGICAL_AND, one, false);
}

static PyObject *nb_or(PyObject *a, PyObject *b) {
  if (!both_bool(a, b))
    Py_RETURN_NOTIMPLEMENTED;
  return binary(a, b, VKT_OP_LOGICAL_OR, one, false);
}

static PyObject *nb_neg(PyObject *x) { return unary(x, VKT_OP_NEG, none, none, false); }
static PyObject *nb_abs(PyObject *x) { return unary(x, VKT_OP_ABS, none, none, false); }
static PyObject *nb_pos(PyObject *x) { return Py_NewRef(x); }

static PyObject *nb_invert(PyObject *x) {
  if (vkt_tensor_of(x)->dtype != VKT_BOOL) {
    PyErr_SetString(PyExc_TypeError,
                    "~ is supported on bool tensors only (bitwise not of integers is not implemented)");
    return NULL;
  }
  return unary(x, VKT_OP_LOGICAL_NOT, none, none, false);
}

/* One element as a Python number, for bool(), int(), float() and operator.index(). */
static PyObject *item(PyObject *x, const char *what) {
  vkt_tensor *t = vkt_tensor_of(x);
  char bytes[8];
  int64_t n = vkt_tensor_numel(t);
  if (n != 1) {
    PyErr_Format(PyExc_RuntimeError, "%s value of Tensor with %s values is ambiguous", what,
                 n ? "more than one" : "no");
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
  return binary(a, b, ids[op], one, false);
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
