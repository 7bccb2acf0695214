/* ops_linalg.c: vkt._C's linear-algebra bindings with torch.linalg's signatures: svd (a
 * vkt.return_types.linalg_svd (U, S, Vh)), svdvals, and the matrix norms of singular values that
 * linalg.matrix_norm hands over (ord 'nuc', 2, -2); lu_factor, solve, inv, det, slogdet, logdet, cholesky,
 * solve_triangular, and Tensor.inverse, det, slogdet, logdet; qr, eigh, eigvalsh, lu and the _ex functions
 * (their info tensors int32, no error unless check_errors=True). */
#include <string.h>

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

/* A named tuple of type *type (made from desc on first use) holding desc->n_in_sequence new vars (each released
 * here whatever happens). */
static PyObject *tuple_of(PyTypeObject **type, PyStructSequence_Desc *desc, vkt_var *outs) {
  PyObject *items[4] = {NULL, NULL, NULL, NULL}, *r = NULL;
  int n = desc->n_in_sequence, ok = 1;
  for (int k = 0; k < n; k++)
    ok &= (items[k] = vkt_wrap_var(&outs[k])) != NULL;
  if (!*type)
    *type = PyStructSequence_NewType(desc);
  if (ok && *type && (r = PyStructSequence_New(*type))) {
    for (int k = 0; k < n; k++)
      PyStructSequence_SetItem(r, k, items[k]);
    return r;
  }
  for (int k = 0; k < n; k++)
    Py_XDECREF(items[k]);
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
  vkt_status st = vkt_ag_lu_factor(a, VKT_LINALG_LU_FACTOR, &outs[0], &outs[1], NULL);
  return st ? vkt_raise(st) : tuple_of(&type, &desc, outs);
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
  return vkt_py_var_result(vkt_ag_linalg_solve(a, b, left, VKT_LINALG_SOLVE, NULL, &out), &out);
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
  return vkt_py_var_result(vkt_ag_cholesky(a, upper, VKT_LINALG_CHOLESKY, NULL, &out), &out);
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
  return st ? vkt_raise(st) : tuple_of(&type, &desc, outs);
}
static PyObject *f_slogdet(PyObject *m, PyObject *a, PyObject *k) {
  (void)m;
  return slogdet(NULL, a, k);
}

/* linalg.qr(A, mode='reduced') */
static PyObject *f_qr(PyObject *mod, PyObject *args, PyObject *kwargs) {
  (void)mod;
  static char *kw[] = {"A", "mode", NULL};
  static PyStructSequence_Field fields[] = {{"Q", NULL}, {"R", NULL}, {NULL, NULL}};
  static PyStructSequence_Desc desc = {"vkt.return_types.linalg_qr", "linalg.qr(A): (Q, R)", fields, 2};
  static PyTypeObject *type;
  static const char *const modes[] = {"reduced", "complete", "r"};
  PyObject *x;
  const char *mode_s = "reduced";
  int mode = 0;
  const vkt_var *a;
  vkt_var outs[2];
  if (!vkt_parse_args(args, kwargs, "O|s:linalg_qr", kw, &x, &mode_s) || !(a = matrix_arg(x, "linalg_qr")))
    return NULL;
  while (mode < 3 && strcmp(mode_s, modes[mode]))
    mode++;
  if (mode == 3)
    return PyErr_Format(PyExc_RuntimeError,
                        "qr received unrecognized mode '%s' but expected one of 'reduced' (default), 'r', or "
                        "'complete'",
                        mode_s);
  vkt_status st = vkt_ag_qr(a, mode, &outs[0], &outs[1]);
  return st ? vkt_raise(st) : tuple_of(&type, &desc, outs);
}

/* UPLO: 'L' or 'U' (either case), as 0 or 1; -1 with PyTorch's error. */
static int uplo_of(const char *s) {
  if ((s[0] == 'L' || s[0] == 'l' || s[0] == 'U' || s[0] == 'u') && !s[1])
    return s[0] == 'U' || s[0] == 'u';
  PyErr_Format(PyExc_RuntimeError, "Expected UPLO argument to be 'L' or 'U', but got %s", s);
  return -1;
}

/* linalg.eigh(A, UPLO='L') and linalg.eigvalsh(A, UPLO='L') (values: the eigenvalues alone) */
static PyObject *eigh(PyObject *args, PyObject *kwargs, bool values) {
  static char *kw[] = {"A", "UPLO", NULL};
  static PyStructSequence_Field fields[] = {{"eigenvalues", NULL}, {"eigenvectors", NULL}, {NULL, NULL}};
  static PyStructSequence_Desc desc = {"vkt.return_types.linalg_eigh", "linalg.eigh(A): (eigenvalues, eigenvectors)",
                                       fields, 2};
  static PyTypeObject *type;
  const char *fn = values ? "linalg_eigvalsh" : "linalg_eigh";
  PyObject *x;
  const char *uplo_s = "L";
  int uplo;
  const vkt_var *a;
  vkt_var outs[2];
  if (!vkt_parse_args(args, kwargs, values ? "O|s:linalg_eigvalsh" : "O|s:linalg_eigh", kw, &x, &uplo_s) ||
      !(a = matrix_arg(x, fn)) || (uplo = uplo_of(uplo_s)) < 0)
    return NULL;
  vkt_status st = vkt_ag_eigh(a, uplo, "linalg.eigh", &outs[0], &outs[1]);
  if (st)
    return vkt_raise(st);
  if (!values)
    return tuple_of(&type, &desc, outs);
  vkt_var_release(&outs[1]);
  return vkt_wrap_var(&outs[0]);
}
static PyObject *f_eigh(PyObject *m, PyObject *a, PyObject *k) {
  (void)m;
  return eigh(a, k, false);
}
static PyObject *f_eigvalsh(PyObject *m, PyObject *a, PyObject *k) {
  (void)m;
  return eigh(a, k, true);
}

/* linalg.lu(A, *, pivot=True): (P, L, U) */
static PyObject *f_lu(PyObject *mod, PyObject *args, PyObject *kwargs) {
  (void)mod;
  static char *kw[] = {"A", "pivot", NULL};
  static PyStructSequence_Field fields[] = {{"P", NULL}, {"L", NULL}, {"U", NULL}, {NULL, NULL}};
  static PyStructSequence_Desc desc = {"vkt.return_types.linalg_lu", "linalg.lu(A): (P, L, U)", fields, 3};
  static PyTypeObject *type;
  PyObject *x;
  int pivot = 1;
  const vkt_var *a;
  vkt_var outs[3];
  if (!vkt_parse_args(args, kwargs, "O|$p:linalg_lu", kw, &x, &pivot) || !(a = matrix_arg(x, "linalg_lu")))
    return NULL;
  if (!pivot)
    return PyErr_Format(PyExc_RuntimeError, "linalg.lu_factor: LU without pivoting is not implemented on the CPU");
  vkt_status st = vkt_ag_lu(a, &outs[0], &outs[1], &outs[2]);
  return st ? vkt_raise(st) : tuple_of(&type, &desc, outs);
}

/* An info tensor as a var for a result tuple. */
static vkt_var info_var(vkt_tensor *info) {
  vkt_var v = {0};
  v.t = *info;
  return v;
}

/* linalg.lu_factor_ex(A, *, pivot=True, check_errors=False): (LU, pivots, info) */
static PyObject *f_lu_factor_ex(PyObject *mod, PyObject *args, PyObject *kwargs) {
  (void)mod;
  static char *kw[] = {"A", "pivot", "check_errors", NULL};
  static PyStructSequence_Field fields[] = {{"LU", NULL}, {"pivots", NULL}, {"info", NULL}, {NULL, NULL}};
  static PyStructSequence_Desc desc = {"vkt.return_types.linalg_lu_factor_ex",
                                       "linalg.lu_factor_ex(A): (LU, pivots, info)", fields, 3};
  static PyTypeObject *type;
  PyObject *x;
  int pivot = 1, check = 0;
  const vkt_var *a;
  vkt_var outs[3];
  vkt_tensor info = {0};
  if (!vkt_parse_args(args, kwargs, "O|$pp:linalg_lu_factor_ex", kw, &x, &pivot, &check) ||
      !(a = matrix_arg(x, "linalg_lu_factor_ex")))
    return NULL;
  if (!pivot)
    return PyErr_Format(PyExc_RuntimeError, "linalg.lu_factor: LU without pivoting is not implemented on the CPU");
  vkt_status st = vkt_ag_lu_factor(a, check ? VKT_LINALG_LU_FACTOR | VKT_LINALG_EX : -1, &outs[0], &outs[1], &info);
  if (st)
    return vkt_raise(st);
  outs[2] = info_var(&info);
  return tuple_of(&type, &desc, outs);
}

/* linalg.solve_ex(A, B, *, left=True, check_errors=False): (result, info) */
static PyObject *f_solve_ex(PyObject *mod, PyObject *args, PyObject *kwargs) {
  (void)mod;
  static char *kw[] = {"A", "B", "left", "check_errors", NULL};
  static PyStructSequence_Field fields[] = {{"result", NULL}, {"info", NULL}, {NULL, NULL}};
  static PyStructSequence_Desc desc = {"vkt.return_types.linalg_solve_ex", "linalg.solve_ex(A, B): (result, info)",
                                       fields, 2};
  static PyTypeObject *type;
  PyObject *x, *y;
  int left = 1, check = 0;
  const vkt_var *a, *b;
  vkt_var outs[2];
  vkt_tensor info = {0};
  if (!vkt_parse_args(args, kwargs, "OO|$pp:linalg_solve_ex", kw, &x, &y, &left, &check) ||
      two_args(x, y, "linalg_solve_ex", &a, &b))
    return NULL;
  vkt_status st = vkt_ag_linalg_solve(a, b, left, check ? VKT_LINALG_SOLVE | VKT_LINALG_EX : -1, &info, &outs[0]);
  if (st)
    return vkt_raise(st);
  outs[1] = info_var(&info);
  return tuple_of(&type, &desc, outs);
}

/* linalg.inv_ex(A, *, check_errors=False): (inverse, info) */
static PyObject *f_inv_ex(PyObject *mod, PyObject *args, PyObject *kwargs) {
  (void)mod;
  static char *kw[] = {"A", "check_errors", NULL};
  static PyStructSequence_Field fields[] = {{"inverse", NULL}, {"info", NULL}, {NULL, NULL}};
  static PyStructSequence_Desc desc = {"vkt.return_types.linalg_inv_ex", "linalg.inv_ex(A): (inverse, info)", fields,
                                       2};
  static PyTypeObject *type;
  PyObject *x;
  int check = 0;
  const vkt_var *a;
  vkt_var outs[2];
  vkt_tensor info = {0};
  if (!vkt_parse_args(args, kwargs, "O|$p:linalg_inv_ex", kw, &x, &check) || !(a = matrix_arg(x, "linalg_inv_ex")))
    return NULL;
  vkt_status st = vkt_ag_inv_ex(a, check ? VKT_LINALG_INV | VKT_LINALG_EX : -1, &info, &outs[0]);
  if (st)
    return vkt_raise(st);
  outs[1] = info_var(&info);
  return tuple_of(&type, &desc, outs);
}

/* linalg.cholesky_ex(A, *, upper=False, check_errors=False): (L, info) */
static PyObject *f_cholesky_ex(PyObject *mod, PyObject *args, PyObject *kwargs) {
  (void)mod;
  static char *kw[] = {"A", "upper", "check_errors", NULL};
  static PyStructSequence_Field fields[] = {{"L", NULL}, {"info", NULL}, {NULL, NULL}};
  static PyStructSequence_Desc desc = {"vkt.return_types.linalg_cholesky_ex", "linalg.cholesky_ex(A): (L, info)",
                                       fields, 2};
  static PyTypeObject *type;
  PyObject *x;
  int upper = 0, check = 0;
  const vkt_var *a;
  vkt_var outs[2];
  vkt_tensor info = {0};
  if (!vkt_parse_args(args, kwargs, "O|$pp:linalg_cholesky_ex", kw, &x, &upper, &check) ||
      !(a = matrix_arg(x, "linalg_cholesky_ex")))
    return NULL;
  vkt_status st = vkt_ag_cholesky(a, upper, check ? VKT_LINALG_CHOLESKY | VKT_LINALG_EX : -1, &info, &outs[0]);
  if (st)
    return vkt_raise(st);
  outs[1] = info_var(&info);
  return tuple_of(&type, &desc, outs);
}

/* _lu_permutation(pivots, m, dtype): P [..., m, m] of LU's pivots [..., k] (for lu_unpack and lu_solve) */
static PyObject *f_lu_permutation(PyObject *mod, PyObject *args, PyObject *kwargs) {
  (void)mod;
  static char *kw[] = {"pivots", "m", "dtype", NULL};
  PyObject *x, *dtype_o;
  long long m;
  vkt_dtype dtype;
  bool given;
  const vkt_var *piv;
  vkt_var out = {0};
  if (!vkt_parse_args(args, kwargs, "OLO:_lu_permutation", kw, &x, &m, &dtype_o) ||
      !(piv = matrix_arg(x, "_lu_permutation")) || vkt_parse_dtype(dtype_o, &dtype, &given) < 0)
    return NULL;
  if (piv->t.dtype != VKT_INT32 || piv->t.ndim < 1)
    return PyErr_Format(PyExc_RuntimeError, "_lu_permutation: pivots must be an int32 tensor of 1 or more dims");
  return vkt_py_var_result(vkt_lu_permutation(&piv->t, m, dtype, &out.t), &out);
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
    {"_linalg_qr", (PyCFunction)(void (*)(void))f_qr, KW, "linalg.qr(A, mode='reduced'): (Q, R), Householder"},
    {"_linalg_eigh", (PyCFunction)(void (*)(void))f_eigh, KW,
     "linalg.eigh(A, UPLO='L'): (eigenvalues ascending, eigenvectors), cyclic Jacobi"},
    {"_linalg_eigvalsh", (PyCFunction)(void (*)(void))f_eigvalsh, KW, "linalg.eigvalsh(A, UPLO='L')"},
    {"_linalg_lu", (PyCFunction)(void (*)(void))f_lu, KW, "linalg.lu(A, *, pivot=True): (P, L, U)"},
    {"_linalg_lu_factor_ex", (PyCFunction)(void (*)(void))f_lu_factor_ex, KW,
     "linalg.lu_factor_ex(A, *, pivot=True, check_errors=False): (LU, pivots, info)"},
    {"_linalg_solve_ex", (PyCFunction)(void (*)(void))f_solve_ex, KW,
     "linalg.solve_ex(A, B, *, left=True, check_errors=False): (result, info)"},
    {"_linalg_inv_ex", (PyCFunction)(void (*)(void))f_inv_ex, KW,
     "linalg.inv_ex(A, *, check_errors=False): (inverse, info)"},
    {"_linalg_cholesky_ex", (PyCFunction)(void (*)(void))f_cholesky_ex, KW,
     "linalg.cholesky_ex(A, *, upper=False, check_errors=False): (L, info)"},
    {"_lu_permutation", (PyCFunction)(void (*)(void))f_lu_permutation, KW,
     "_lu_permutation(pivots, m, dtype): the permutation matrix of LU's pivots"},
    {NULL, NULL, 0, NULL}};

PyMethodDef vkt_linalg_methods[] = {
    {"inverse", (PyCFunction)(void (*)(void))t_inverse, KW, "inverse(): linalg.inv"},
    {"det", (PyCFunction)(void (*)(void))t_det, KW, "det(): linalg.det"},
    {"logdet", (PyCFunction)(void (*)(void))t_logdet, KW, "logdet(): vkt.logdet"},
    {"slogdet", (PyCFunction)(void (*)(void))slogdet, KW, "slogdet(): linalg.slogdet"},
    {NULL, NULL, 0, NULL}};
