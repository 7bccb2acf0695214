/* ops_linalg.c: vkt._C's linear-algebra bindings with torch.linalg's signatures: svd (a
 * vkt.return_types.linalg_svd (U, S, Vh)), svdvals, and the matrix norms of singular values that
 * linalg.matrix_norm hands over (ord 'nuc', 2, -2); lu_factor, solve, inv, det, slogdet, logdet, cholesky,
 * solve_triangular, and Tensor.inverse, det, slogdet, logdet. */
#include "../autograd/linalg.h"
#include "../ops/linalg.h"
#include "py.h"

#define KW (METH_VARARGS | METH_KEYWORDS)

static const vkt_var *matrix_arg(PyObject *o, const char *fn) {
  const vkt_var *v = vkt_var_of(o);
  PyObject *type = v ? NULL : PyType_GetName(Py_TYPE(o));
  if (type)
    PyErr_Format(PyExc_TypeError, "%s(): argument 'A' (position 1) must be Tensor, not %U", fn, type);
  Py_XDECREF(type);
  return v;
}

/* driver= selects a cuSOLVER algorithm in PyTorch; there is none to select here, as on PyTorch's CPU. */
static int no_driver(PyObject *driver, const char *name) {
  if (driver == Py_None)
    return 0;
  PyErr_Format(PyExc_RuntimeError,
               "%s: keyword argument `driver=` is only supported on CUDA inputs with cuSOLVER backend.", name);
  return -1;
}

/* linalg.svd(A, full_matrices=True, *, driver=None) */
static PyObject *f_svd(PyObject *mod, PyObject *args, PyObject *kwargs) {
  (void)mod;
  static char *kw[] = {"A", "full_matrices", "driver", NULL};
  static PyStructSequence_Field fields[] = {{"U", NULL}, {"S", NULL}, {"Vh", NULL}, {NULL, NULL}};
  static PyStructSequence_Desc desc = {"vkt.return_types.linalg_svd", "linalg.svd(A): (U, S, Vh)", fields, 3};
  static PyTypeObject *type;
  PyObject *x, *driver = Py_None, *items[3] = {NULL, NULL, NULL}, *r = NULL;
  int full = 1;
  const vkt_var *a;
  vkt_var outs[3];
  if (!vkt_parse_args(args, kwargs, "O|p$O:linalg_svd", kw, &x, &full, &driver) || !(a = matrix_arg(x, "linalg_svd")) ||
      no_driver(driver, "torch.linalg.svd") < 0)
    return NULL;
  vkt_status st = vkt_ag_svd(a, full, &outs[0], &outs[1], &outs[2]);
  if (st)
    return vkt_raise(st);
  for (int k = 0; k < 3; k++)
    items[k] = vkt_wrap_var(&outs[k]);
  if (!type)
    type = PyStructSequence_NewType(&desc);
  if (items[0] && items[1] && items[2] && type && (r = PyStructSequence_New(type))) {
    for (int k = 0; k < 3; k++)
      PyStructSequence_SetItem(r, k, items[k]);
    return r;
  }
  for (int k = 0; k < 3; k++)
    Py_XDECREF(items[k]);
  return NULL;
}

/* linalg.svdvals(A, *, driver=None) */
static PyObject *f_svdvals(PyObject *mod, PyObject *args, PyObject *kwargs) {
  (void)mod;
  static char *kw[] = {"A", "driver", NULL};
  PyObject *x, *driver = Py_None;
  const vkt_var *a;
  vkt_var out;
  if (!vkt_parse_args(args, kwargs, "O|$O:linalg_svdvals", kw, &x, &driver) || !(a = matrix_arg(x, "linalg_svdvals")) ||
      no_driver(driver, "torch.linalg.svd") < 0)
    return NULL;
  return vkt_py_var_result(vkt_ag_svdvals(a, &out), &out);
}

/* A named tuple of type *type (made from desc on first use) holding two new vars. */
static PyObject *pair(PyTypeObject **type, PyStructSequence_Desc *desc, vkt_var *outs) {
  PyObject *items[2] = {vkt_wrap_var(&outs[0]), vkt_wrap_var(&outs[1])}, *r = NULL;
  if (!*type)
    *type = PyStructSequence_NewType(desc);
  if (items[0] && items[1] && *type && (r = PyStructSequence_New(*type))) {
    PyStructSequence_SetItem(r, 0, items[0]);
    PyStructSequence_SetItem(r, 1, items[1]);
    return r;
  }
  Py_XDECREF(items[0]);
  Py_XDECREF(items[1]);
  return NULL;
}

/* linalg.lu_factor(A, *, pivot=True) */
static PyObject *f_lu_factor(PyObject *mod, PyObject *args, PyObject *kwargs) {
  (void)mod;
  static char *kw[] = {"A", "pivot", NULL};
  static PyStructSequence_Field fields[] = {{"LU", NULL}, {"pivots", NULL}, {NULL, NULL}};
  static PyStructSequence_Desc desc = {"vkt.return_types.linalg_lu_factor", "linalg.lu_factor(A): (LU, pivots)",
                                       fields, 2};
  static PyTypeObject *type;
  PyObject *x;
  int pivot = 1;
  const vkt_var *a;
  vkt_var outs[2];
  if (!vkt_parse_args(args, kwargs, "O|$p:linalg_lu_factor", kw, &x, &pivot) ||
      !(a = matrix_arg(x, "linalg_lu_factor")))
    return NULL;
  if (!pivot) /* as PyTorch's CPU, which has no LU without pivoting */
    return PyErr_Format(PyExc_RuntimeError, "linalg.lu_factor: LU without pivoting is not implemented on the CPU");
  vkt_status st = vkt_ag_lu_factor(a, &outs[0], &outs[1]);
  return st ? vkt_raise(st) : pair(&type, &desc, outs);
}

/* Two tensor arguments A and B of fn. */
static int two_args(PyObject *x, PyObject *y, const char *fn, const vkt_var **a, const vkt_var **b) {
  PyObject *type = NULL;
  if (!(*a = matrix_arg(x, fn)))
    return -1;
  if ((*b = vkt_var_of(y)))
    return 0;
  if ((type = PyType_GetName(Py_TYPE(y))))
    PyErr_Format(PyExc_TypeError, "%s(): argument 'B' (position 2) must be Tensor, not %U", fn, type);
  Py_XDECREF(type);
  return -1;
}

/* linalg.solve(A, B, *, left=True) */
static PyObject *f_solve(PyObject *mod, PyObject *args, PyObject *kwargs) {
  (void)mod;
  static char *kw[] = {"A", "B", "left", NULL};
  PyObject *x, *y;
  int left = 1;
  const vkt_var *a, *b;
  vkt_var out;
  if (!vkt_parse_args(args, kwargs, "OO|$p:linalg_solve", kw, &x, &y, &left) || two_args(x, y, "linalg_solve", &a, &b))
    return NULL;
  return vkt_py_var_result(vkt_ag_linalg_solve(a, b, left, VKT_LINALG_SOLVE, &out), &out);
}

/* linalg.solve_triangular(A, B, *, upper, left=True, unitriangular=False) */
static PyObject *f_solve_triangular(PyObject *mod, PyObject *args, PyObject *kwargs) {
  (void)mod;
  static char *kw[] = {"A", "B", "upper", "left", "unitriangular", NULL};
  PyObject *x, *y, *upper_o = NULL;
  int upper, left = 1, unit = 0;
  const vkt_var *a, *b;
  vkt_var out;
  if (!vkt_parse_args(args, kwargs, "OO|$Opp:linalg_solve_triangular", kw, &x, &y, &upper_o, &left, &unit))
    return NULL;
  if (!upper_o) /* keyword-only and required, which PyArg_ParseTuple's formats cannot say */
    return PyErr_Format(PyExc_TypeError,
                        "linalg_solve_triangular() missing 1 required positional arguments: \"upper\"");
  if ((upper = PyObject_IsTrue(upper_o)) < 0 || two_args(x, y, "linalg_solve_triangular", &a, &b))
    return NULL;
  return vkt_py_var_result(vkt_ag_solve_triangular(a, b, upper, left, unit, &out), &out);
}

/* linalg.cholesky(A, *, upper=False) */
static PyObject *f_cholesky(PyObject *mod, PyObject *args, PyObject *kwargs) {
  (void)mod;
  static char *kw[] = {"A", "upper", NULL};
  PyObject *x;
  int upper = 0;
  const vkt_var *a;
  vkt_var out;
  if (!vkt_parse_args(args, kwargs, "O|$p:linalg_cholesky", kw, &x, &upper) || !(a = matrix_arg(x, "linalg_cholesky")))
    return NULL;
  return vkt_py_var_result(vkt_ag_cholesky(a, upper, &out), &out);
}

/* One-matrix functions of A: inv, det, logdet (self: as a Tensor method). */
static PyObject *unary(PyObject *self, PyObject *args, PyObject *kwargs, const char *fn,
                       vkt_status (*f)(const vkt_var *, vkt_var *)) {
  static char *kw[] = {"A", NULL}, *none[] = {NULL};
  PyObject *x = self;
  const vkt_var *a;
  vkt_var out;
  if (!(self ? vkt_parse_args(args, kwargs, "", none) : vkt_parse_args(args, kwargs, "O", kw, &x)) ||
      !(a = matrix_arg(x, fn)))
    return NULL;
  return vkt_py_var_result(f(a, &out), &out);
}

static PyObject *f_inv(PyObject *m, PyObject *a, PyObject *k) {
  (void)m;
  return unary(NULL, a, k, "linalg_inv", vkt_ag_inv);
}
static PyObject *f_det(PyObject *m, PyObject *a, PyObject *k) {
  (void)m;
  return unary(NULL, a, k, "linalg_det", vkt_ag_det);
}
static PyObject *f_logdet(PyObject *m, PyObject *a, PyObject *k) {
  (void)m;
  return unary(NULL, a, k, "logdet", vkt_ag_logdet);
}
static PyObject *t_inverse(PyObject *s, PyObject *a, PyObject *k) { return unary(s, a, k, "inverse", vkt_ag_inv); }
static PyObject *t_det(PyObject *s, PyObject *a, PyObject *k) { return unary(s, a, k, "det", vkt_ag_det); }
static PyObject *t_logdet(PyObject *s, PyObject *a, PyObject *k) { return unary(s, a, k, "logdet", vkt_ag_logdet); }

/* linalg.slogdet(A): (sign, logabsdet) */
static PyObject *slogdet(PyObject *self, PyObject *args, PyObject *kwargs) {
  static char *kw[] = {"A", NULL}, *none[] = {NULL};
  static PyStructSequence_Field fields[] = {{"sign", NULL}, {"logabsdet", NULL}, {NULL, NULL}};
  static PyStructSequence_Desc desc = {"vkt.return_types.linalg_slogdet", "linalg.slogdet(A): (sign, logabsdet)",
                                       fields, 2};
  static PyTypeObject *type;
  PyObject *x = self;
  const vkt_var *a;
  vkt_var outs[2];
  if (!(self ? vkt_parse_args(args, kwargs, "", none) : vkt_parse_args(args, kwargs, "O", kw, &x)) ||
      !(a = matrix_arg(x, "linalg_slogdet")))
    return NULL;
  vkt_status st = vkt_ag_slogdet(a, &outs[0], &outs[1]);
  return st ? vkt_raise(st) : pair(&type, &desc, outs);
}
static PyObject *f_slogdet(PyObject *m, PyObject *a, PyObject *k) {
  (void)m;
  return slogdet(NULL, a, k);
}

int vkt_py_sv_ord(PyObject *ord) {
  if (PyUnicode_Check(ord))
    return PyUnicode_CompareWithASCIIString(ord, "nuc") == 0 ? VKT_SV_NUC : -1;
  if (!PyFloat_Check(ord) && !PyLong_Check(ord))
    return -1;
  double v = PyFloat_AsDouble(ord);
  if (v == -1.0 && PyErr_Occurred())
    return PyErr_Clear(), -1;
  return v == 2 ? VKT_SV_LARGEST : v == -2 ? VKT_SV_SMALLEST : -1;
}

PyObject *vkt_py_matrix_norm_sv(PyObject *args, PyObject *kwargs) {
  static char *kw[] = {"A", "ord", "dim", "keepdim", "dtype", NULL};
  PyObject *x, *ord_o, *dim = NULL, *dtype_o = Py_None;
  int keepdim = 0;
  long long d0 = -2, d1 = -1;
  vkt_dtype dtype;
  bool given;
  const vkt_var *a;
  vkt_var out;
  if (!vkt_parse_args(args, kwargs, "OO|Op$O:matrix_norm", kw, &x, &ord_o, &dim, &keepdim, &dtype_o) ||
      !(a = vkt_var_of(x)) || (dim && !PyArg_ParseTuple(dim, "LL:matrix_norm", &d0, &d1)) ||
      vkt_parse_dtype(dtype_o, &dtype, &given) < 0)
    return NULL;
  vkt_status st =
      vkt_ag_matrix_norm_sv(a, (vkt_sv_norm)vkt_py_sv_ord(ord_o), d0, d1, keepdim, given ? (int)dtype : -1, &out);
  return vkt_py_var_result(st, &out);
}

PyMethodDef vkt_linalg_functions[] = {
    {"_linalg_svd", (PyCFunction)(void (*)(void))f_svd, KW,
     "linalg.svd(A, full_matrices=True, *, driver=None): (U, S, Vh), a one-sided Jacobi SVD"},
    {"_linalg_svdvals", (PyCFunction)(void (*)(void))f_svdvals, KW,
     "linalg.svdvals(A, *, driver=None): the singular values, descending"},
    {"_linalg_lu_factor", (PyCFunction)(void (*)(void))f_lu_factor, KW,
     "linalg.lu_factor(A, *, pivot=True): (LU, pivots), partial pivoting, pivots 1-based int32"},
    {"_linalg_solve", (PyCFunction)(void (*)(void))f_solve, KW, "linalg.solve(A, B, *, left=True): A^-1 B or B A^-1"},
    {"_linalg_solve_triangular", (PyCFunction)(void (*)(void))f_solve_triangular, KW,
     "linalg.solve_triangular(A, B, *, upper, left=True, unitriangular=False)"},
    {"_linalg_cholesky", (PyCFunction)(void (*)(void))f_cholesky, KW, "linalg.cholesky(A, *, upper=False)"},
    {"_linalg_inv", (PyCFunction)(void (*)(void))f_inv, KW, "linalg.inv(A)"},
    {"_linalg_det", (PyCFunction)(void (*)(void))f_det, KW, "linalg.det(A)"},
    {"_linalg_slogdet", (PyCFunction)(void (*)(void))f_slogdet, KW, "linalg.slogdet(A): (sign, logabsdet)"},
    {"logdet", (PyCFunction)(void (*)(void))f_logdet, KW, "logdet(A): log det A, NaN where det A < 0"},
    {NULL, NULL, 0, NULL}};

PyMethodDef vkt_linalg_methods[] = {
    {"inverse", (PyCFunction)(void (*)(void))t_inverse, KW, "inverse(): linalg.inv"},
    {"det", (PyCFunction)(void (*)(void))t_det, KW, "det(): linalg.det"},
    {"logdet", (PyCFunction)(void (*)(void))t_logdet, KW, "logdet(): vkt.logdet"},
    {"slogdet", (PyCFunction)(void (*)(void))slogdet, KW, "slogdet(): linalg.slogdet"},
    {NULL, NULL, 0, NULL}};
