/* ops_elementwise_more.c: Python bindings of the elementwise composites (elementwise_more.c): lerp,
 * addcmul, addcdiv, nan_to_num, isclose, allclose and equal, as Tensor methods (with in-place
 * variants where PyTorch has them) and vkt.<op> functions. */
#include "py.h"

/* The tensor argument `name` of `fn`, or NULL with PyTorch's TypeError. */
static vkt_tensor *tensor_arg(PyObject *o, const char *fn, const char *name) {
  vkt_tensor *t = vkt_tensor_of(o);
  if (!t)
    PyErr_Format(PyExc_TypeError, "%s(): argument '%s' must be Tensor, not %R", fn, name, (PyObject *)Py_TYPE(o));
  return t;
}

/* Finishes an op that wrote into `into` (in-place: returns self) or into a new *out. */
static PyObject *done(vkt_status st, PyObject *self, bool inplace, vkt_tensor *out) {
  if (inplace)
    return st ? vkt_raise(st) : Py_NewRef(self);
  return vkt_py_result(st, out);
}

/* Whether the op on x goes through autograd's entry point: always out of place (which runs the fused kernel
 * when nothing records), in place only when it records; -1 with PyTorch's in-place refusals. */
static int recorded(PyObject *x, bool inplace, int n, PyObject *const *others) {
  const vkt_var *v = vkt_var_of(x), *other = NULL; /* an operand requiring grad records x's write too */
  for (int i = 0; i < n && !other; i++)
    other = vkt_requires_grad(vkt_var_of(others[i])) ? vkt_var_of(others[i]) : NULL;
  return inplace ? vkt_py_inplace_records(v, other) : 1;
}

/* Finishes a composite recorded by autograd: a new tensor, or (inplace) x overwritten with it. */
static PyObject *done_var(vkt_status st, PyObject *x, bool inplace, vkt_var *out) {
  return inplace ? vkt_py_inplace_result(x, st, out) : vkt_py_var_result(st, out);
}

/* lerp(end, weight) */
static PyObject *lerp(PyObject *self, PyObject *args, PyObject *kwargs, bool inplace) {
  static char *m_kw[] = {"end", "weight", NULL}, *f_kw[] = {"input", "end", "weight", NULL};
  PyObject *x = self, *e, *w;
  vkt_operand wo;
  vkt_tensor out, *tx, *te;
  int ok =
      self ? vkt_parse_args(args, kwargs, "OO", m_kw, &e, &w) : vkt_parse_args(args, kwargs, "OOO", f_kw, &x, &e, &w);
  if (!ok || !(tx = tensor_arg(x, "lerp", "input")) || !(te = tensor_arg(e, "lerp", "end")) ||
      vkt_py_operand(w, &wo) < 0)
    return NULL;
  int r = recorded(x, inplace, 2, (PyObject *[]){e, w});
  vkt_var v;
  if (r > 0)
    return done_var(vkt_ag_lerp(vkt_var_of(x), vkt_var_of(e), vkt_var_of(w), wo, &v), x, inplace, &v);
  return r < 0 ? NULL : done(vkt_lerp(tx, te, wo, tx, &out), x, inplace, &out);
}

/* addcmul(tensor1, tensor2, *, value=1), addcdiv likewise */
static PyObject *addc(PyObject *self, PyObject *args, PyObject *kwargs, bool div, bool inplace) {
  static char *m_kw[] = {"tensor1", "tensor2", "value", NULL}, *f_kw[] = {"input", "tensor1", "tensor2", "value", NULL};
  const char *fn = div ? "addcdiv" : "addcmul";
  PyObject *x = self, *a, *b, *v = NULL;
  vkt_scalar value = {false, 0, 1};
  vkt_tensor out, *tx, *ta, *tb;
  int ok = self ? vkt_parse_args(args, kwargs, "OO|$O", m_kw, &a, &b, &v)
                : vkt_parse_args(args, kwargs, "OOO|$O", f_kw, &x, &a, &b, &v);
  if (!ok || !(tx = tensor_arg(x, fn, "input")) || !(ta = tensor_arg(a, fn, "tensor1")) ||
      !(tb = tensor_arg(b, fn, "tensor2")) || (v && vkt_py_scalar(v, &value) < 0))
    return NULL;
  int r = recorded(x, inplace, 2, (PyObject *[]){a, b});
  vkt_var res;
  if (r > 0)
    return done_var(vkt_ag_addcmul(vkt_var_of(x), vkt_var_of(a), vkt_var_of(b), value, div, &res), x, inplace, &res);
  return r < 0 ? NULL : done(vkt_addcmul(tx, ta, tb, value, div, tx, &out), x, inplace, &out);
}

/* nan_to_num(nan=0.0, posinf=None, neginf=None) */
static PyObject *nan_to_num(PyObject *self, PyObject *args, PyObject *kwargs, bool inplace) {
  static char *m_kw[] = {"nan", "posinf", "neginf", NULL}, *f_kw[] = {"input", "nan", "posinf", "neginf", NULL};
  PyObject *x = self, *n = Py_None, *p = Py_None, *q = Py_None;
  vkt_scalar nan = {true, 0, 0}, posinf, neginf;
  vkt_tensor out, *t;
  int ok = self ? vkt_parse_args(args, kwargs, "|OOO", m_kw, &n, &p, &q)
                : vkt_parse_args(args, kwargs, "O|OOO", f_kw, &x, &n, &p, &q);
  if (!ok || !(t = tensor_arg(x, "nan_to_num", "input")) || (n != Py_None && vkt_py_scalar(n, &nan) < 0) ||
      (p != Py_None && vkt_py_scalar(p, &posinf) < 0) || (q != Py_None && vkt_py_scalar(q, &neginf) < 0))
    return NULL;
  const vkt_scalar *pi = p != Py_None ? &posinf : NULL, *ni = q != Py_None ? &neginf : NULL;
  int r = recorded(x, inplace, 0, NULL);
  vkt_var v;
  if (r > 0)
    return done_var(vkt_ag_nan_to_num(vkt_var_of(x), nan, pi, ni, &v), x, inplace, &v);
  return r < 0 ? NULL : done(vkt_nan_to_num(t, nan, pi, ni, t, &out), x, inplace, &out);
}

/* isclose / allclose(other, rtol=1e-05, atol=1e-08, equal_nan=False) */
static PyObject *closeness(PyObject *self, PyObject *args, PyObject *kwargs, bool all) {
  static char *m_kw[] = {"other", "rtol", "atol", "equal_nan", NULL};
  static char *f_kw[] = {"input", "other", "rtol", "atol", "equal_nan", NULL};
  const char *fn = all ? "allclose" : "isclose";
  PyObject *x = self, *y;
  double rtol = 1e-05, atol = 1e-08;
  int equal_nan = 0;
  vkt_tensor out, *a, *b;
  int ok = self ? vkt_parse_args(args, kwargs, "O|ddp", m_kw, &y, &rtol, &atol, &equal_nan)
                : vkt_parse_args(args, kwargs, "OO|ddp", f_kw, &x, &y, &rtol, &atol, &equal_nan);
  if (!ok || !(a = tensor_arg(x, fn, "input")) || !(b = tensor_arg(y, fn, "other")))
    return NULL;
  if (!all)
    return vkt_py_result(vkt_isclose(a, b, rtol, atol, equal_nan, &out), &out);
  bool r;
  vkt_status st = vkt_allclose(a, b, rtol, atol, equal_nan, &r);
  return st ? vkt_raise(st) : PyBool_FromLong(r);
}

/* equal(other): same shape and values */
static PyObject *equal(PyObject *self, PyObject *args) {
  PyObject *x = self, *y;
  vkt_tensor *a, *b;
  bool r;
  int ok = self ? PyArg_ParseTuple(args, "O", &y) : PyArg_ParseTuple(args, "OO", &x, &y);
  if (!ok || !(a = tensor_arg(x, "equal", "input")) || !(b = tensor_arg(y, "equal", "other")))
    return NULL;
  vkt_status st = vkt_equal(a, b, &r);
  return st ? vkt_raise(st) : PyBool_FromLong(r);
}

#define KW (PyCFunction)(void (*)(void))
#define BOTH METH_VARARGS | METH_KEYWORDS
/* m_X(self, args, kwargs) for methods and f_X(module, args, kwargs) for functions of each binding. */
#define BINDINGS(name, call, icall)                                                                                    \
  static PyObject *m_##name(PyObject *s, PyObject *a, PyObject *k) { return call; }                                    \
  static PyObject *m_##name##_(PyObject *s, PyObject *a, PyObject *k) { return icall; }                                \
  static PyObject *f_##name(PyObject *m, PyObject *a, PyObject *k) {                                                   \
    PyObject *s = NULL;                                                                                                \
    (void)m;                                                                                                           \
    return call;                                                                                                       \
  }
BINDINGS(lerp, lerp(s, a, k, false), lerp(s, a, k, true))
BINDINGS(addcmul, addc(s, a, k, false, false), addc(s, a, k, false, true))
BINDINGS(addcdiv, addc(s, a, k, true, false), addc(s, a, k, true, true))
BINDINGS(nan_to_num, nan_to_num(s, a, k, false), nan_to_num(s, a, k, true))

static PyObject *m_isclose(PyObject *s, PyObject *a, PyObject *k) { return closeness(s, a, k, false); }
static PyObject *m_allclose(PyObject *s, PyObject *a, PyObject *k) { return closeness(s, a, k, true); }
static PyObject *f_isclose(PyObject *m, PyObject *a, PyObject *k) {
  (void)m;
  return closeness(NULL, a, k, false);
}
static PyObject *f_allclose(PyObject *m, PyObject *a, PyObject *k) {
  (void)m;
  return closeness(NULL, a, k, true);
}
static PyObject *f_equal(PyObject *m, PyObject *a) {
  (void)m;
  return equal(NULL, a);
}

PyMethodDef vkt_elementwise_more_methods[] = {
    {"lerp", KW m_lerp, BOTH, "lerp(end, weight): self + weight * (end - self)"},
    {"lerp_", KW m_lerp_, BOTH, "in-place lerp"},
    {"addcmul", KW m_addcmul, BOTH, "addcmul(tensor1, tensor2, *, value=1): self + value * tensor1 * tensor2"},
    {"addcmul_", KW m_addcmul_, BOTH, "in-place addcmul"},
    {"addcdiv", KW m_addcdiv, BOTH, "addcdiv(tensor1, tensor2, *, value=1): self + value * tensor1 / tensor2"},
    {"addcdiv_", KW m_addcdiv_, BOTH, "in-place addcdiv"},
    {"nan_to_num", KW m_nan_to_num, BOTH, "nan_to_num(nan=0.0, posinf=None, neginf=None)"},
    {"nan_to_num_", KW m_nan_to_num_, BOTH, "in-place nan_to_num"},
    {"isclose", KW m_isclose, BOTH, "isclose(other, rtol=1e-05, atol=1e-08, equal_nan=False)"},
    {"allclose", KW m_allclose, BOTH, "allclose(other, rtol=1e-05, atol=1e-08, equal_nan=False) -> bool"},
    {"equal", equal, METH_VARARGS, "equal(other) -> bool: same shape and values"},
    {NULL, NULL, 0, NULL},
};

PyMethodDef vkt_elementwise_more_functions[] = {
    {"lerp", KW f_lerp, BOTH, "lerp(input, end, weight)"},
    {"addcmul", KW f_addcmul, BOTH, "addcmul(input, tensor1, tensor2, *, value=1)"},
    {"addcdiv", KW f_addcdiv, BOTH, "addcdiv(input, tensor1, tensor2, *, value=1)"},
    {"nan_to_num", KW f_nan_to_num, BOTH, "nan_to_num(input, nan=0.0, posinf=None, neginf=None)"},
    {"isclose", KW f_isclose, BOTH, "isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False)"},
    {"allclose", KW f_allclose, BOTH, "allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False) -> bool"},
    {"equal", f_equal, METH_VARARGS, "equal(input, other) -> bool"},
    {NULL, NULL, 0, NULL},
};
