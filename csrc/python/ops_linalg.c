/* ops_linalg.c: vkt._C's linear-algebra bindings with torch.linalg's signatures: svd (a
 * vkt.return_types.linalg_svd (U, S, Vh)), svdvals, and the matrix norms of singular values that
 * linalg.matrix_norm hands over (ord 'nuc', 2, -2). */
#include "../autograd/linalg.h"
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
    {NULL, NULL, 0, NULL}};
