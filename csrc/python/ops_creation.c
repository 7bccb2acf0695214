/* ops_creation.c: Python bindings of the creation functions beyond module.c's: eye, linspace, logspace,
 * randint, randperm, tril_indices, triu_indices and meshgrid, with PyTorch's dtype and device keywords. */
#include <string.h>

#include "../ops/shape.h"
#include "py.h"

#define KW(fn) (PyCFunction)(void (*)(void))(fn)

/* dtype (def when None) and device (the default device when None) keywords. */
static int placement(PyObject *dtype_o, PyObject *device_o, vkt_dtype def, vkt_dtype *dtype, int *device) {
  bool given;
  *dtype = def;
  if (vkt_parse_dtype(dtype_o, dtype, &given) < 0 || vkt_creation_device(device_o, device) < 0)
    return -1;
  if (!given)
    *dtype = def;
  return 0;
}

static PyObject *py_eye(PyObject *m, PyObject *args, PyObject *kwargs) {
  static char *kw[] = {"n", "m", "dtype", "device", NULL};
  long long n, cols = -1;
  PyObject *m_o = Py_None, *dtype_o = Py_None, *device_o = Py_None;
  vkt_dtype dtype;
  int device;
  vkt_tensor out;
  (void)m;
  if (!vkt_parse_args(args, kwargs, "L|O$OO", kw, &n, &m_o, &dtype_o, &device_o) ||
      placement(dtype_o, device_o, vkt_default_float(), &dtype, &device) < 0)
    return NULL;
  if (m_o != Py_None && (cols = PyLong_AsLongLong(m_o)) == -1 && PyErr_Occurred())
    return NULL;
  return vkt_py_result(vkt_eye(&out, device, dtype, n, m_o == Py_None ? n : cols), &out);
}

static PyObject *spaced(PyObject *args, PyObject *kwargs, bool log) {
  static char *kw[] = {"start", "end", "steps", "dtype", "device", NULL};
  static char *log_kw[] = {"start", "end", "steps", "base", "dtype", "device", NULL};
  double start, end, base = 10.0;
  long long steps;
  PyObject *dtype_o = Py_None, *device_o = Py_None;
  vkt_dtype dtype;
  int device;
  vkt_tensor out;
  int ok = log ? vkt_parse_args(args, kwargs, "ddL|d$OO", log_kw, &start, &end, &steps, &base, &dtype_o, &device_o)
               : vkt_parse_args(args, kwargs, "ddL|$OO", kw, &start, &end, &steps, &dtype_o, &device_o);
  if (!ok || placement(dtype_o, device_o, vkt_default_float(), &dtype, &device) < 0)
    return NULL;
  return vkt_py_result(vkt_linspace(&out, device, dtype, start, end, steps, log, base), &out);
}

static PyObject *py_linspace(PyObject *m, PyObject *a, PyObject *k) {
  (void)m;
  return spaced(a, k, false);
}
static PyObject *py_logspace(PyObject *m, PyObject *a, PyObject *k) {
  (void)m;
  return spaced(a, k, true);
}

/* randint(high, size) or randint(low, high, size), *, dtype=int64, device=None. */
static PyObject *py_randint(PyObject *m, PyObject *args, PyObject *kwargs) {
  static char *kw3[] = {"low", "high", "size", "dtype", "device", NULL};
  static char *kw2[] = {"high", "size", "dtype", "device", NULL};
  long long low = 0, high;
  PyObject *size_o, *dtype_o = Py_None, *device_o = Py_None, *size_t_o = NULL;
  vkt_dtype dtype;
  int device, ndim;
  int64_t shape[VKT_MAX_DIMS];
  vkt_tensor out;
  (void)m;
  int three = PyTuple_Size(args) == 3 || (kwargs && PyDict_GetItemString(kwargs, "low"));
  int ok = three ? vkt_parse_args(args, kwargs, "LLO|$OO", kw3, &low, &high, &size_o, &dtype_o, &device_o)
                 : vkt_parse_args(args, kwargs, "LO|$OO", kw2, &high, &size_o, &dtype_o, &device_o);
  if (!ok || placement(dtype_o, device_o, VKT_INT64, &dtype, &device) < 0)
    return NULL;
  size_t_o = PySequence_Check(size_o) ? PySequence_Tuple(size_o) : NULL;
  int r = size_t_o ? vkt_parse_shape(size_t_o, &ndim, shape) : -1;
  Py_XDECREF(size_t_o);
  if (r < 0)
    return PyErr_Occurred() ? NULL : PyErr_Format(PyExc_TypeError, "randint(): argument 'size' must be tuple of ints");
  return vkt_py_result(vkt_randint(&out, device, dtype, low, high, ndim, shape), &out);
}

static PyObject *py_randperm(PyObject *m, PyObject *args, PyObject *kwargs) {
  static char *kw[] = {"n", "dtype", "device", NULL};
  long long n;
  PyObject *dtype_o = Py_None, *device_o = Py_None;
  vkt_dtype dtype;
  int device;
  vkt_tensor out;
  (void)m;
  if (!vkt_parse_args(args, kwargs, "L|$OO", kw, &n, &dtype_o, &device_o) ||
      placement(dtype_o, device_o, VKT_INT64, &dtype, &device) < 0)
    return NULL;
  return vkt_py_result(vkt_randperm(&out, device, dtype, n), &out);
}

static PyObject *tri_indices(PyObject *args, PyObject *kwargs, bool upper) {
  static char *kw[] = {"row", "col", "offset", "dtype", "device", NULL};
  long long row, col, offset = 0;
  PyObject *dtype_o = Py_None, *device_o = Py_None;
  vkt_dtype dtype;
  int device;
  vkt_tensor out;
  if (!vkt_parse_args(args, kwargs, "LL|L$OO", kw, &row, &col, &offset, &dtype_o, &device_o) ||
      placement(dtype_o, device_o, VKT_INT64, &dtype, &device) < 0)
    return NULL;
  return vkt_py_result(vkt_tri_indices(&out, device, dtype, row, col, offset, upper), &out);
}

static PyObject *py_tril_indices(PyObject *m, PyObject *a, PyObject *k) {
  (void)m;
  return tri_indices(a, k, false);
}
static PyObject *py_triu_indices(PyObject *m, PyObject *a, PyObject *k) {
  (void)m;
  return tri_indices(a, k, true);
}

/* meshgrid(*tensors, indexing='ij'), or meshgrid(sequence of tensors, ...). */
static PyObject *py_meshgrid(PyObject *m, PyObject *args, PyObject *kwargs) {
  PyObject *indexing = kwargs ? PyDict_GetItemString(kwargs, "indexing") : NULL, *r = NULL;
  const vkt_tensor *ts[VKT_MAX_DIMS];
  vkt_tensor outs[VKT_MAX_DIMS];
  (void)m;
  if (kwargs && PyDict_Size(kwargs) > (indexing ? 1 : 0))
    return PyErr_Format(PyExc_TypeError, "meshgrid() takes only the keyword argument 'indexing'");
  const char *ix = indexing && indexing != Py_None ? PyUnicode_AsUTF8AndSize(indexing, NULL) : "ij";
  if (!ix)
    return NULL;
  if (strcmp(ix, "ij") != 0 && strcmp(ix, "xy") != 0)
    return vkt_raise(
        vkt_fail(VKT_ERR_RUNTIME, "torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but received: %s", ix));
  PyObject *seq = PyTuple_Size(args) == 1 && !vkt_is_tensor(PyTuple_GetItem(args, 0))
                      ? PySequence_Tuple(PyTuple_GetItem(args, 0))
                      : Py_NewRef(args);
  if (!seq)
    return NULL;
  Py_ssize_t n = PyTuple_Size(seq);
  if (n == 0 || n > VKT_MAX_DIMS) {
    vkt_raise(vkt_fail(VKT_ERR_RUNTIME, "torch.meshgrid: Expected 1 to %d tensors, got %zd", VKT_MAX_DIMS, n));
    goto finish;
  }
  for (Py_ssize_t i = 0; i < n; i++)
    if (!(ts[i] = vkt_tensor_of(PyTuple_GetItem(seq, i)))) {
      PyErr_Format(PyExc_TypeError, "meshgrid(): expected Tensor as element %zd", i);
      goto finish;
    }
  vkt_status st = vkt_meshgrid((int)n, ts, ix[0] == 'x', outs);
  if (st) {
    vkt_raise(st);
    goto finish;
  }
  r = PyTuple_New(n);
  for (Py_ssize_t i = 0; i < n; i++) {
    /* autograd: each output is its input as a line along one dim, broadcast (a view and an expand) */
    const vkt_var *x = vkt_var_of(PyTuple_GetItem(seq, i));
    int at = ix[0] == 'x' && n > 1 && i < 2 ? 1 - (int)i : (int)i; /* as vkt_meshgrid places it */
    int64_t line[VKT_MAX_DIMS], full[VKT_MAX_DIMS];
    for (int d = 0; d < (int)n; d++)
      full[d] = outs[i].shape[d], line[d] = d == at ? full[d] : 1;
    vkt_var lined = {0}, v = {outs[i], NULL};
    outs[i] = (vkt_tensor){0};
    if (vkt_grad_enabled() && vkt_requires_grad(x)) {
      vkt_var_release(&v);
      vkt_status s2 = vkt_ag_reshape(x, (int)n, line, false, &lined);
      if (!s2)
        s2 = vkt_ag_expand(&lined, (int)n, full, &v);
      vkt_var_release(&lined);
      if (s2) {
        vkt_raise(s2);
        Py_CLEAR(r);
      }
    }
    PyObject *o = r ? vkt_wrap_var(&v) : (vkt_var_release(&v), NULL);
    if (r && !o)
      Py_CLEAR(r);
    else if (r)
      PyTuple_SetItem(r, i, o);
  }
finish:
  Py_DECREF(seq);
  return r;
}

#define MK(name, fn, doc)                                                                                              \
  { name, KW(fn), METH_VARARGS | METH_KEYWORDS, doc }

PyMethodDef vkt_creation_functions[] = {
    MK("eye", py_eye, "eye(n, m=None, *, dtype=None, device=None)"),
    MK("linspace", py_linspace, "linspace(start, end, steps, *, dtype=None, device=None)"),
    MK("logspace", py_logspace, "logspace(start, end, steps, base=10.0, *, dtype=None, device=None)"),
    MK("randint", py_randint, "randint(low=0, high, size, *, dtype=int64, device=None)"),
    MK("randperm", py_randperm, "randperm(n, *, dtype=int64, device=None)"),
    MK("tril_indices", py_tril_indices, "tril_indices(row, col, offset=0, *, dtype=int64, device=None)"),
    MK("triu_indices", py_triu_indices, "triu_indices(row, col, offset=0, *, dtype=int64, device=None)"),
    MK("meshgrid", py_meshgrid, "meshgrid(*tensors, indexing='ij')"),
    {NULL, NULL, 0, NULL},
};
