/* tensor.c: the vkt.Tensor heap type: attributes, views, indexing, copies between devices and
 * dtypes. Each method parses its arguments and calls one function of the layers below. */
#include <stdio.h>
#include <string.h>

#include "py.h"
#include <structmember.h> /* PyMemberDef for __weaklistoffset__ */

/* v (stolen) as a new object of type, vkt.Tensor or a subclass of it. */
static PyObject *wrap_var_as(PyTypeObject *type, vkt_var *v) {
  vkt_status st = vkt_ag_error(); /* the op that made v refused to record it */
  if (st || vkt_py_pack_failed() < 0) { /* ... or saved a tensor whose pack hook raised */
    vkt_var_release(v);
    return st ? vkt_raise(st) : NULL;
  }
  vkt_py_tensor *o = (vkt_py_tensor *)((allocfunc)PyType_GetSlot(type, Py_tp_alloc))(type, 0);
  if (!o) {
    vkt_var_release(v);
    return NULL;
  }
  o->v = *v;
  *v = (vkt_var){0};
  vkt_storage *s = o->v.t.storage;
  if (s && !s->shown) {
    s->shown = true;
    s->version_shown = s->version;
  }
  if (o->v.ag && !o->v.ag->owner)
    o->v.ag->owner = o;
  return (PyObject *)o;
}

PyObject *vkt_wrap_var(vkt_var *v) { return wrap_var_as((PyTypeObject *)vkt_state->tensor_type, v); }

PyObject *vkt_wrap(vkt_tensor *t) {
  vkt_var v = {*t, NULL};
  *t = (vkt_tensor){0};
  return vkt_wrap_var(&v);
}

PyObject *vkt_py_var_result(vkt_status st, vkt_var *out) { return st ? vkt_raise(st) : vkt_wrap_var(out); }

PyObject *vkt_py_pair(PyStructSequence_Desc *desc, PyTypeObject **type, vkt_var *values, vkt_tensor *indices) {
  PyObject *v = vkt_wrap_var(values), *i = vkt_wrap(indices), *r = NULL;
  if (!*type)
    *type = PyStructSequence_NewType(desc);
  if (v && i && *type && (r = PyStructSequence_New(*type))) {
    PyStructSequence_SetItem(r, 0, v);
    PyStructSequence_SetItem(r, 1, i);
    return r;
  }
  Py_XDECREF(v);
  Py_XDECREF(i);
  return NULL;
}

#define SELF (&((vkt_py_tensor *)self)->v.t)

/* Wraps a view of self that an op made (out, stolen), recorded by autograd as kind (vkt_ag_view). */
static PyObject *view_result(PyObject *self, vkt_status st, vkt_tensor *out, vkt_view_kind kind, const int64_t *perm,
                             const char *name) {
  vkt_var v;
  PyObject *r = st ? vkt_raise(st) : vkt_py_var_result(vkt_ag_view(SELF_V, out, kind, perm, name, &v), &v);
  vkt_py_claim(self); /* the view made self's autograd state, where it had none */
  return r;
}

/* self.op_() of a view op: self itself takes the view's geometry (out, stolen), recorded as kind (vkt_ag_view_). */
static PyObject *view_inplace(PyObject *self, vkt_status st, vkt_tensor *out, vkt_view_kind kind, const int64_t *perm,
                              const char *name) {
  if (!st)
    st = vkt_ag_view_(SELF_V, out, kind, perm, name);
  vkt_py_claim(self);
  return st ? vkt_raise(st) : Py_NewRef(self);
}

static void tensor_dealloc(PyObject *self) {
  PyTypeObject *type = Py_TYPE(self);
  if (((vkt_py_tensor *)self)->weakrefs)
    PyObject_ClearWeakRefs(self);
  if (SELF_V->ag && SELF_V->ag->owner == self)
    SELF_V->ag->owner = NULL;
  vkt_var_release(SELF_V);
  freefunc free_self = (freefunc)PyType_GetSlot(type, Py_tp_free); /* a subclass (Parameter) may be GC-tracked */
  free_self(self);
  Py_DECREF(type);
}

static PyObject *shape_tuple(int ndim, const int64_t *v) {
  PyObject *t = PyTuple_New(ndim);
  for (int i = 0; t && i < ndim; i++)
    PyTuple_SetItem(t, i, PyLong_FromLongLong(v[i]));
  return t;
}

/* ---- attributes ---- */

static PyObject *get_shape(PyObject *self, void *c) {
  (void)c;
  return vkt_size_new(SELF->ndim, SELF->shape);
}

static PyObject *get_dtype(PyObject *self, void *c) {
  (void)c;
  return Py_NewRef(vkt_state->dtypes[SELF->dtype]);
}

static PyObject *get_device(PyObject *self, void *c) {
  (void)c;
  return vkt_device_new(vkt_tensor_device(SELF));
}

static PyObject *get_ndim(PyObject *self, void *c) {
  (void)c;
  return PyLong_FromLong(SELF->ndim);
}

static PyObject *get_T(PyObject *self, void *c) {
  (void)c;
  int64_t dims[VKT_MAX_DIMS];
  vkt_tensor out;
  for (int i = 0; i < SELF->ndim; i++)
    dims[i] = SELF->ndim - 1 - i;
  return view_result(self, vkt_permute(&out, SELF, SELF->ndim, dims), &out, VKT_VIEW_PERMUTE, dims, "PermuteBackward0");
}

static PyObject *get_mT(PyObject *self, void *c) {
  (void)c;
  if (SELF->ndim < 2)
    return vkt_raise(vkt_fail(VKT_ERR_RUNTIME,
                              "tensor.mT is only supported on matrices or batches of matrices. Got %d-D tensor.",
                              SELF->ndim));
  vkt_var v;
  PyObject *r = vkt_py_var_result(vkt_ag_transpose(SELF_V, -2, -1, &v), &v);
  vkt_py_claim(self);
  return r;
}

static PyObject *get_is_vulkan(PyObject *self, void *c) {
  (void)c;
  return PyBool_FromLong(vkt_tensor_device(SELF) != VKT_CPU);
}

static PyObject *get_is_cpu(PyObject *self, void *c) {
  (void)c;
  return PyBool_FromLong(vkt_tensor_device(SELF) == VKT_CPU);
}

static PyObject *get_is_cuda(PyObject *self, void *c) {
  (void)self, (void)c;
  Py_RETURN_FALSE; /* code written for torch asks; a vkt tensor is never on a CUDA device */
}

/* NumPy defers an operator between an array and an object of higher priority to that object:
 * array + t and array < t run Tensor's reflected operators, so the result stays a tensor on t's device
 * rather than becoming an array. */
static PyObject *get_array_priority(PyObject *self, void *closure) {
  (void)self, (void)closure;
  return PyFloat_FromDouble(1000.0);
}

static PyObject *python_property(PyObject *self, void *name);
#define PYTHON_PROPERTY(name, doc) {#name, python_property, NULL, doc, (void *)#name},

static PyGetSetDef tensor_getset[] = {
    PYTHON_PROPERTY(itemsize, "bytes per element")
    PYTHON_PROPERTY(nbytes, "numel() * itemsize")
    PYTHON_PROPERTY(mH, "the conjugate transpose of the last two dims: mT for real tensors")
    PYTHON_PROPERTY(H, "the conjugate transpose of a matrix: t() for real tensors")
    PYTHON_PROPERTY(real, "the tensor itself (vkt's tensors are real)")
    PYTHON_PROPERTY(imag, "torch's error: real tensors have no imaginary part")
    PYTHON_PROPERTY(layout, "vkt.strided")
    PYTHON_PROPERTY(is_sparse, "False")
    PYTHON_PROPERTY(is_quantized, "False")
    PYTHON_PROPERTY(is_meta, "False")
    {"shape", get_shape, NULL, "the size of each dimension", NULL},
    {"dtype", get_dtype, NULL, "the element type", NULL},
    {"device", get_device, NULL, "where the tensor lives", NULL},
    {"ndim", get_ndim, NULL, "the number of dimensions", NULL},
    {"T", get_T, NULL, "the tensor with its dimensions reversed (a view)", NULL},
    {"mT", get_mT, NULL, "the last two dimensions swapped (a view)", NULL},
    {"is_vulkan", get_is_vulkan, NULL, "whether the tensor is on a Vulkan device", NULL},
    {"is_cpu", get_is_cpu, NULL, "whether the tensor is in host memory", NULL},
    {"is_cuda", get_is_cuda, NULL, "False: vkt has no CUDA device", NULL},
    {"__array_priority__", get_array_priority, NULL, "above NumPy's, so operators with arrays give tensors", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

/* ---- size and layout ---- */

/* A dim argument as PyTorch's parser takes it: an int (not a bool) or a 0-d integer tensor; -1 with its TypeError
 * naming fn otherwise. */
static int dim_arg(PyObject *o, const char *fn, long long *d) {
  if (!vkt_py_int_arg(o)) {
    PyObject *name = PyType_GetName(Py_TYPE(o));
    if (name)
      PyErr_Format(PyExc_TypeError, "%s(): argument 'dim' (position 1) must be int, not %U", fn, name);
    Py_XDECREF(name);
    return -1;
  }
  PyObject *i = PyNumber_Index(o);
  *d = i ? PyLong_AsLongLong(i) : -1;
  Py_XDECREF(i);
  return *d == -1 && PyErr_Occurred() ? -1 : 0;
}

/* size(dim) or stride(dim) (fn names which); without dim, all of them: a vkt.Size for size(), a tuple for
 * stride(). A 0-d tensor has no dim to name: PyTorch's IndexError, not the [-1, 0] range dim wrapping allows. */
static PyObject *dim_or_all(PyObject *self, PyObject *args, PyObject *kwargs, const char *fn, const int64_t *values) {
  static char *kw[] = {"dim", NULL};
  PyObject *dim = Py_None;
  if (!vkt_parse_args(args, kwargs, "|O", kw, &dim))
    return NULL;
  if (dim == Py_None)
    return values == SELF->shape ? vkt_size_new(SELF->ndim, values) : shape_tuple(SELF->ndim, values);
  long long d;
  int w;
  if (dim_arg(dim, fn, &d))
    return NULL;
  if (SELF->ndim == 0)
    return vkt_raise(vkt_fail(VKT_ERR_INDEX, "Dimension specified as %lld but tensor has no dimensions", d));
  vkt_status st = vkt_dim_wrap(d, SELF->ndim, &w);
  if (st)
    return vkt_raise(st);
  return PyLong_FromLongLong(values[w]);
}

static PyObject *t_size(PyObject *self, PyObject *args, PyObject *kwargs) {
  return dim_or_all(self, args, kwargs, "size", SELF->shape);
}

static PyObject *t_stride(PyObject *self, PyObject *args, PyObject *kwargs) {
  return dim_or_all(self, args, kwargs, "stride", SELF->strides);
}

static PyObject *t_dim(PyObject *self, PyObject *unused) {
  (void)unused;
  return PyLong_FromLong(SELF->ndim);
}

static PyObject *t_numel(PyObject *self, PyObject *unused) {
  (void)unused;
  return PyLong_FromLongLong(vkt_tensor_numel(SELF));
}

static PyObject *t_element_size(PyObject *self, PyObject *unused) {
  (void)unused;
  return PyLong_FromLong(vkt_dtype_size(SELF->dtype));
}

static PyObject *t_is_floating_point(PyObject *self, PyObject *unused) {
  (void)unused;
  return PyBool_FromLong(vkt_dtypes[SELF->dtype].is_float);
}

/* Whether t is laid out as a new tensor of fmt would be (dims of one element may have any stride). */
static bool in_format(const vkt_tensor *t, vkt_memory_format fmt) {
  int64_t strides[VKT_MAX_DIMS];
  if (fmt == VKT_PRESERVE_FORMAT || vkt_format_strides(t, fmt, strides))
    return false; /* no such layout for t's rank: not in it */
  for (int i = 0; i < t->ndim; i++)
    if (t->shape[i] > 1 && t->strides[i] != strides[i])
      return false;
  return true;
}

static PyObject *t_is_contiguous(PyObject *self, PyObject *args, PyObject *kwargs) {
  static char *kw[] = {"memory_format", NULL};
  PyObject *fmt_o = NULL;
  vkt_memory_format fmt;
  if (!vkt_parse_args(args, kwargs, "|O", kw, &fmt_o) || vkt_parse_memory_format(fmt_o, &fmt) < 0)
    return NULL;
  if (!fmt_o)
    fmt = VKT_CONTIGUOUS_FORMAT;
  if (fmt == VKT_PRESERVE_FORMAT)
    return vkt_raise(vkt_fail(VKT_ERR_RUNTIME, "is_contiguous() does not take preserve_format"));
  if (fmt == VKT_CONTIGUOUS_FORMAT)
    return PyBool_FromLong(vkt_tensor_is_contiguous(SELF));
  return PyBool_FromLong(in_format(SELF, fmt));
}

/* The address of element 0 on the cpu device. A Vulkan tensor has no address a program can use; its
 * number is still unique per storage and offset, so comparing two of them tells whether views share. */
static PyObject *t_data_ptr(PyObject *self, PyObject *unused) {
  (void)unused;
  const vkt_storage *s = SELF->storage;
  if (vkt_tensor_device(SELF) == VKT_CPU)
    return PyLong_FromVoidPtr(vkt_tensor_host(SELF));
  return PyLong_FromUnsignedLongLong((uint64_t)(uintptr_t)s + (uint64_t)SELF->offset * vkt_dtype_size(SELF->dtype));
}

static PyObject *t_storage_offset(PyObject *self, PyObject *unused) {
  (void)unused;
  return PyLong_FromLongLong(SELF->offset);
}

static Py_ssize_t t_len(PyObject *self) {
  if (SELF->ndim == 0) {
    PyErr_SetString(PyExc_TypeError, "len() of a 0-d tensor");
    return -1;
  }
  return (Py_ssize_t)SELF->shape[0];
}

/* x in t: (t == x).any(), as PyTorch's Tensor.__contains__; without it Python would compare row by row. */
static int t_contains(PyObject *self, PyObject *value) {
  if (!vkt_is_tensor(value) && !PyLong_Check(value) && !PyFloat_Check(value)) {
    PyErr_Format(PyExc_RuntimeError, "Tensor.__contains__ only supports Tensor or scalar, but you passed in a %R.",
                 (PyObject *)Py_TYPE(value));
    return -1;
  }
  PyObject *eq = PyObject_RichCompare(self, value, Py_EQ);
  PyObject *any = eq ? PyObject_CallMethod(eq, "any", NULL) : NULL;
  int r = any ? PyObject_IsTrue(any) : -1;
  Py_XDECREF(any);
  Py_XDECREF(eq);
  return r;
}

/* for row in t: the views t[0], t[1], ... (PyTorch iterates over unbind(0)). */
static PyObject *t_iter(PyObject *self) {
  if (SELF->ndim == 0) {
    PyErr_SetString(PyExc_TypeError, "iteration over a 0-d tensor");
    return NULL;
  }
  PyObject *rows = PyTuple_New((Py_ssize_t)SELF->shape[0]);
  for (int64_t i = 0; rows && i < SELF->shape[0]; i++) {
    vkt_tensor row;
    vkt_status st = vkt_select(&row, SELF, 0, i);
    PyObject *o = st ? vkt_raise(st) : vkt_wrap(&row);
    if (!o)
      Py_CLEAR(rows);
    else
      PyTuple_SetItem(rows, (Py_ssize_t)i, o);
  }
  PyObject *it = rows ? PyObject_GetIter(rows) : NULL;
  Py_XDECREF(rows);
  return it;
}

/* ---- views ---- */

/* view(dtype): no history, as PyTorch's view.dtype is not differentiable, and no view to autograd (_base is
 * None); the storage, and so the version counter, is shared. */
static PyObject *view_dtype(PyObject *self, PyObject *dtype) {
  vkt_dtype d;
  bool given;
  vkt_tensor out;
  if (vkt_parse_dtype(dtype, &d, &given) < 0)
    return NULL;
  if (!given) {
    PyErr_SetString(PyExc_TypeError, "view(): argument 'dtype' must be vkt.dtype, not NoneType");
    return NULL;
  }
  vkt_status st = vkt_view_dtype(&out, SELF, d);
  return st ? vkt_raise(st) : vkt_wrap(&out);
}

/* view(*shape), view(shape), view(size=shape), view(dtype) or view(dtype=dtype), as PyTorch's overloads. */
static PyObject *t_view(PyObject *self, PyObject *args, PyObject *kwargs) {
  int ndim;
  int64_t shape[VKT_MAX_DIMS];
  PyObject *dtype = kwargs ? PyDict_GetItemString(kwargs, "dtype") : NULL; /* borrowed */
  PyObject *size = kwargs ? PyDict_GetItemString(kwargs, "size") : NULL;   /* borrowed */
  Py_ssize_t nargs = PyTuple_Size(args), nkw = kwargs ? PyDict_Size(kwargs) : 0;
  PyObject *first = nargs == 1 ? PyTuple_GetItem(args, 0) : NULL; /* borrowed */
  if (!nkw && first && PyObject_TypeCheck(first, (PyTypeObject *)vkt_state->dtype_type))
    return view_dtype(self, first);
  if (nkw && (nargs || nkw > 1 || (!dtype && !size))) {
    PyErr_SetString(PyExc_TypeError, "view() received an invalid combination of arguments: "
                                     "expected one of (dtype dtype) or (tuple of ints size)");
    return NULL;
  }
  if (dtype)
    return view_dtype(self, dtype);
  PyObject *sizes = size ? PyTuple_Pack(1, size) : Py_NewRef(args);
  int parsed = sizes ? vkt_parse_shape(sizes, &ndim, shape) : -1;
  Py_XDECREF(sizes);
  if (parsed < 0)
    return NULL;
  vkt_var v;
  return vkt_py_var_result(vkt_ag_reshape(SELF_V, ndim, shape, true, &v), &v);
}

static PyObject *reshape(PyObject *self, int ndim, const int64_t *shape) {
  vkt_var v;
  return vkt_py_var_result(vkt_ag_reshape(SELF_V, ndim, shape, false, &v), &v);
}

static PyObject *t_view_as(PyObject *self, PyObject *other) {
  vkt_tensor *o = vkt_tensor_of(other);
  if (!o) {
    PyErr_Format(PyExc_TypeError, "view_as(): argument 'other' must be Tensor, not %R", (PyObject *)Py_TYPE(other));
    return NULL;
  }
  vkt_var v;
  return vkt_py_var_result(vkt_ag_reshape(SELF_V, o->ndim, o->shape, true, &v), &v);
}

static PyObject *t_reshape(PyObject *self, PyObject *args) {
  int ndim;
  int64_t shape[VKT_MAX_DIMS];
  if (vkt_parse_shape(args, &ndim, shape) < 0)
    return NULL;
  return reshape(self, ndim, shape);
}

static PyObject *t_flatten(PyObject *self, PyObject *args, PyObject *kwargs) {
  static char *kw[] = {"start_dim", "end_dim", NULL};
  long long s = 0, e = -1;
  int a, b;
  vkt_status st;
  if (!vkt_parse_args(args, kwargs, "|LL", kw, &s, &e))
    return NULL;
  if ((st = vkt_dim_wrap(s, SELF->ndim, &a)) || (st = vkt_dim_wrap(e, SELF->ndim, &b)))
    return vkt_raise(st);
  if (a > b)
    return vkt_raise(vkt_fail(VKT_ERR_RUNTIME, "flatten() has invalid args: start_dim cannot come after end_dim"));
  if (SELF->ndim == 0)
    return reshape(self, 1, (int64_t[]){1});
  if (a == b) /* nothing to merge: self itself, as PyTorch's (a leaf stays the leaf, with its .grad) */
    return Py_NewRef(self);
  int64_t shape[VKT_MAX_DIMS];
  int n = 0;
  for (int i = 0; i < a; i++)
    shape[n++] = SELF->shape[i];
  shape[n] = 1;
  for (int i = a; i <= b; i++)
    shape[n] *= SELF->shape[i];
  n++;
  for (int i = b + 1; i < SELF->ndim; i++)
    shape[n++] = SELF->shape[i];
  return reshape(self, n, shape);
}

/* A shape or strides given as one sequence argument. */
static int parse_sizes(PyObject *o, int *n, int64_t *v) {
  PyObject *args = PyTuple_Pack(1, o);
  int r = args ? vkt_parse_shape(args, n, v) : -1;
  Py_XDECREF(args);
  return r;
}

/* as_strided(size, stride, storage_offset=None), or as_strided_ (inplace): the offset stays self's where not given. */
static PyObject *as_strided(PyObject *self, PyObject *args, PyObject *kwargs, bool inplace) {
  static char *kw[] = {"size", "stride", "storage_offset", NULL};
  PyObject *size_o, *stride_o, *offset_o = Py_None;
  int n, ns;
  int64_t shape[VKT_MAX_DIMS], strides[VKT_MAX_DIMS];
  long long offset = SELF->offset;
  vkt_tensor out;
  if (!vkt_parse_args(args, kwargs, inplace ? "OO|O:as_strided_" : "OO|O:as_strided", kw, &size_o, &stride_o,
                      &offset_o) ||
      parse_sizes(size_o, &n, shape) < 0 || parse_sizes(stride_o, &ns, strides) < 0)
    return NULL;
  if (offset_o != Py_None && (offset = PyLong_AsLongLong(offset_o)) == -1 && PyErr_Occurred())
    return NULL;
  if (n != ns)
    return vkt_raise(vkt_fail(VKT_ERR_RUNTIME, "mismatch in length of strides and shape"));
  int64_t counted[VKT_MAX_DIMS]; /* PyTorch's in-place form checks strides and offset, then counts the elements */
  bool negative = false;
  for (int d = 0; d < n; d++)
    negative |= (counted[d] = shape[d] < 0 ? 0 : shape[d]) != shape[d];
  vkt_status st = vkt_as_strided(&out, SELF, n, inplace ? counted : shape, strides, offset);
  if (!st && inplace && negative) {
    vkt_tensor_release(&out);
    st = vkt_fail(VKT_ERR_RUNTIME, "numel: integer multiplication overflow");
  }
  if (inplace)
    return view_inplace(self, st, &out, VKT_VIEW_STRIDED, NULL, "AsStridedBackward1");
  return view_result(self, st, &out, VKT_VIEW_STRIDED, NULL, "AsStridedBackward0");
}
static PyObject *t_as_strided(PyObject *self, PyObject *args, PyObject *kwargs) {
  return as_strided(self, args, kwargs, false);
}
static PyObject *t_as_strided_(PyObject *self, PyObject *args, PyObject *kwargs) {
  return as_strided(self, args, kwargs, true);
}

static char *dims_kw[] = {"dim0", "dim1", NULL}, *axes_kw[] = {"axis0", "axis1", NULL};

/* transpose(dim0, dim1) and its aliases swapdims (the same keywords) and swapaxes (axis0, axis1; kw), in place with
 * inplace (PyTorch's TransposeBackward1). format: PyArg's, naming the method. */
static PyObject *transpose(PyObject *self, PyObject *args, PyObject *kwargs, char **kw, const char *format,
                           bool inplace) {
  long long d0, d1;
  vkt_var v;
  if (!vkt_parse_args(args, kwargs, format, kw, &d0, &d1))
    return NULL;
  if (inplace) {
    vkt_status st = vkt_ag_transpose_(SELF_V, d0, d1, "TransposeBackward1");
    return st ? vkt_raise(st) : Py_NewRef(self);
  }
  return vkt_py_var_result(vkt_ag_transpose(SELF_V, d0, d1, &v), &v);
}
static PyObject *t_transpose(PyObject *self, PyObject *args, PyObject *kwargs) {
  return transpose(self, args, kwargs, dims_kw, "LL:transpose", false);
}
static PyObject *t_transpose_(PyObject *self, PyObject *args, PyObject *kwargs) {
  return transpose(self, args, kwargs, dims_kw, "LL:transpose_", true);
}
static PyObject *t_swapdims_(PyObject *self, PyObject *args, PyObject *kwargs) {
  return transpose(self, args, kwargs, dims_kw, "LL:swapdims_", true);
}
static PyObject *t_swapaxes_(PyObject *self, PyObject *args, PyObject *kwargs) {
  return transpose(self, args, kwargs, axes_kw, "LL:swapaxes_", true);
}

/* t() and t_(): a transpose of a matrix, a vector or a number as it is. */
static PyObject *matrix_t(PyObject *self, bool inplace) {
  const char *name = inplace ? "t_" : "t";
  if (SELF->ndim > 2)
    return vkt_raise(vkt_fail(VKT_ERR_RUNTIME, "%s() expects a tensor with <= 2 dimensions, but self is %dD", name,
                              SELF->ndim));
  int d1 = SELF->ndim == 2 ? 1 : 0;
  if (inplace) {
    vkt_status st = vkt_ag_transpose_(SELF_V, 0, d1, "TBackward1");
    return st ? vkt_raise(st) : Py_NewRef(self);
  }
  vkt_var v;
  return vkt_py_var_result(vkt_ag_transpose_named(SELF_V, 0, d1, "TBackward0", &v), &v);
}
static PyObject *t_t(PyObject *self, PyObject *unused) {
  (void)unused;
  return matrix_t(self, false);
}
static PyObject *t_t_(PyObject *self, PyObject *unused) {
  (void)unused;
  return matrix_t(self, true);
}

static PyObject *t_permute(PyObject *self, PyObject *args) {
  int ndim;
  int64_t dims[VKT_MAX_DIMS];
  vkt_tensor out;
  if (vkt_parse_shape(args, &ndim, dims) < 0)
    return NULL;
  vkt_status st = vkt_permute(&out, SELF, ndim, dims);
  for (int d = 0; !st && d < ndim; d++)
    dims[d] = dims[d] < 0 ? dims[d] + ndim : dims[d];
  return view_result(self, st, &out, VKT_VIEW_PERMUTE, dims, "PermuteBackward0");
}

static PyObject *t_expand(PyObject *self, PyObject *args) {
  int ndim;
  int64_t shape[VKT_MAX_DIMS];
  vkt_tensor out;
  if (vkt_parse_shape(args, &ndim, shape) < 0)
    return NULL;
  return view_result(self, vkt_expand(&out, SELF, ndim, shape), &out, VKT_VIEW_EXPAND, NULL, "ExpandBackward0");
}

static PyObject *t_expand_as(PyObject *self, PyObject *other) {
  vkt_tensor out;
  if (!vkt_is_tensor(other)) {
    PyErr_SetString(PyExc_TypeError, "expand_as() expects a Tensor");
    return NULL;
  }
  vkt_tensor *o = &((vkt_py_tensor *)other)->v.t;
  return view_result(self, vkt_expand(&out, SELF, o->ndim, o->shape), &out, VKT_VIEW_EXPAND, NULL, "ExpandBackward0");
}

/* squeeze() / squeeze(dim) / squeeze(dims) (a tuple or list, or several ints), in place with inplace: PyTorch names
 * the three overloads' nodes SqueezeBackward0, 1 and 2, and the in-place ones' 3, 4 and 5. */
static PyObject *squeeze(PyObject *self, PyObject *args, PyObject *kwargs, bool inplace) {
  static char *kw[] = {"dim", NULL};
  static const char *names[] = {"SqueezeBackward0", "SqueezeBackward1", "SqueezeBackward2",
                                "SqueezeBackward3", "SqueezeBackward4", "SqueezeBackward5"};
  PyObject *dim = Py_None;
  int64_t dims[VKT_MAX_DIMS];
  int n = -1, form = 2; /* 0: every dim of size 1; 1: one dim; 2: the dims listed */
  vkt_tensor out;
  if (PyTuple_Size(args) > 1 && (!kwargs || !PyDict_Size(kwargs))) {
    if (vkt_parse_shape(args, &n, dims) < 0)
      return NULL;
  } else if (!vkt_parse_args(args, kwargs, inplace ? "|O:squeeze_" : "|O:squeeze", kw, &dim)) {
    return NULL;
  } else if (dim == Py_None) {
    form = 0;
  } else {
    bool listed = PyTuple_Check(dim) || PyList_Check(dim);
    PyObject *t = listed ? PySequence_Tuple(dim) : PyTuple_Pack(1, dim);
    int r = t ? vkt_parse_shape(t, &n, dims) : -1;
    Py_XDECREF(t);
    if (r < 0)
      return NULL;
    form = listed ? 2 : 1;
  }
  vkt_status st = vkt_squeeze(&out, SELF, n, dims);
  const char *name = names[form + (inplace ? 3 : 0)];
  if (inplace)
    return view_inplace(self, st, &out, VKT_VIEW_RESHAPE, NULL, name);
  return view_result(self, st, &out, VKT_VIEW_RESHAPE, NULL, name);
}
static PyObject *t_squeeze(PyObject *self, PyObject *args, PyObject *kwargs) {
  return squeeze(self, args, kwargs, false);
}
static PyObject *t_squeeze_(PyObject *self, PyObject *args, PyObject *kwargs) {
  return squeeze(self, args, kwargs, true);
}

static PyObject *unsqueeze(PyObject *self, PyObject *args, PyObject *kwargs, bool inplace) {
  static char *kw[] = {"dim", NULL};
  long long d;
  vkt_tensor out;
  if (!vkt_parse_args(args, kwargs, inplace ? "L:unsqueeze_" : "L:unsqueeze", kw, &d))
    return NULL;
  vkt_status st = vkt_unsqueeze(&out, SELF, d);
  if (inplace)
    return view_inplace(self, st, &out, VKT_VIEW_RESHAPE, NULL, "UnsqueezeBackward1");
  return view_result(self, st, &out, VKT_VIEW_RESHAPE, NULL, "UnsqueezeBackward0");
}
static PyObject *t_unsqueeze(PyObject *self, PyObject *args, PyObject *kwargs) {
  return unsqueeze(self, args, kwargs, false);
}
static PyObject *t_unsqueeze_(PyObject *self, PyObject *args, PyObject *kwargs) {
  return unsqueeze(self, args, kwargs, true);
}

/* resize_(*sizes, memory_format=None) and resize_as_(the_template, memory_format=None): vkt_ag_resize_. */
static PyObject *resize(PyObject *self, int ndim, const int64_t *shape, PyObject *format) {
  vkt_memory_format fmt;
  if (format && format != Py_None && vkt_parse_memory_format(format, &fmt) < 0)
    return NULL;
  vkt_status st = vkt_ag_resize_(SELF_V, ndim, shape, format && format != Py_None ? &fmt : NULL);
  return st ? vkt_raise(st) : Py_NewRef(self);
}

static PyObject *t_resize_(PyObject *self, PyObject *args, PyObject *kwargs) {
  PyObject *format = kwargs ? PyDict_GetItemString(kwargs, "memory_format") : NULL; /* borrowed */
  int ndim;
  int64_t shape[VKT_MAX_DIMS];
  if (kwargs && PyDict_Size(kwargs) > (format ? 1 : 0))
    return PyErr_Format(PyExc_TypeError, "resize_() takes sizes and memory_format= only");
  return vkt_parse_shape(args, &ndim, shape) < 0 ? NULL : resize(self, ndim, shape, format);
}

static PyObject *t_resize_as_(PyObject *self, PyObject *args, PyObject *kwargs) {
  static char *kw[] = {"the_template", "memory_format", NULL};
  PyObject *other, *format = Py_None;
  if (!vkt_parse_args(args, kwargs, "O|$O:resize_as_", kw, &other, &format))
    return NULL;
  vkt_tensor *t = vkt_tensor_of(other);
  PyObject *type = t ? NULL : PyType_GetName(Py_TYPE(other));
  if (type) {
    PyErr_Format(PyExc_TypeError, "resize_as_(): argument 'the_template' (position 1) must be Tensor, not %U", type);
    Py_DECREF(type);
  }
  return t ? resize(self, t->ndim, t->shape, format) : NULL;
}

/* ---- indexing: integers, slices with positive steps, None and Ellipsis ---- */

static PyObject *getitem(PyObject *self, PyObject *key) {
  PyObject *advanced = vkt_py_getitem_advanced(self, key); /* tensor keys: masks and index tensors */
  if (advanced || PyErr_Occurred())
    return advanced;
  PyObject *items = PyTuple_Check(key) ? Py_NewRef(key) : PyTuple_Pack(1, key);
  if (!items)
    return NULL;
  Py_ssize_t n = PyTuple_Size(items);
  int consumed = 0, ellipses = 0;
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *k = PyTuple_GetItem(items, i);
    if (k == Py_Ellipsis)
      ellipses++;
    else if (k != Py_None)
      consumed++;
  }
  vkt_tensor cur, next, twin = {0}, twin_next = {0}; /* the view, and the same steps in self's index space */
  vkt_status st = VKT_OK;
  if (ellipses > 1)
    st = vkt_fail(VKT_ERR_INDEX, "an index can only have a single ellipsis ('...')");
  else if (consumed > SELF->ndim)
    st = vkt_fail(VKT_ERR_INDEX, "too many indices for tensor of dimension %d", SELF->ndim);
  if (st) {
    Py_DECREF(items);
    return vkt_raise(st);
  }
  vkt_tensor_share(&cur, SELF);
  bool twinned = vkt_ag_view_needs_twin(SELF_V);
  if (twinned)
    vkt_tensor_index_space(SELF, &twin);
  int dim = 0;
  const char *name = "AliasBackward0"; /* autograd's name: PyTorch's for the last step */
  for (Py_ssize_t i = 0; i < n && !st; i++) {
    PyObject *k = PyTuple_GetItem(items, i);
    if (k == Py_None) {
      if (!(st = vkt_unsqueeze(&next, &cur, dim)) && twinned)
        st = vkt_unsqueeze(&twin_next, &twin, dim);
      dim++;
      name = "UnsqueezeBackward0";
    } else if (k == Py_Ellipsis) {
      dim = cur.ndim - consumed; /* skip what the indices after it do not consume */
      continue;
    } else if (PySlice_Check(k)) {
      Py_ssize_t start, stop, step;
      if (PySlice_Unpack(k, &start, &stop, &step) < 0) {
        vkt_tensor_release(&cur);
        vkt_tensor_release(&twin);
        Py_DECREF(items);
        return NULL;
      }
      if (step <= 0) {
        st = vkt_fail(VKT_ERR_VALUE, "step must be greater than zero");
        break;
      }
      PySlice_AdjustIndices((Py_ssize_t)cur.shape[dim], &start, &stop, step);
      if (!(st = vkt_slice(&next, &cur, dim, start, stop, step)) && twinned)
        st = vkt_slice(&twin_next, &twin, dim, start, stop, step);
      dim++;
      name = "SliceBackward0";
      consumed--;
    } else if (PyIndex_Check(k) && !PyBool_Check(k)) {
      Py_ssize_t idx = PyNumber_AsSsize_t(k, PyExc_IndexError);
      if (idx == -1 && PyErr_Occurred()) {
        vkt_tensor_release(&cur);
        vkt_tensor_release(&twin);
        Py_DECREF(items);
        return NULL;
      }
      if (!(st = vkt_select(&next, &cur, dim, idx)) && twinned)
        st = vkt_select(&twin_next, &twin, dim, idx);
      name = "SelectBackward0";
      consumed--;
    } else {
      st = vkt_fail(VKT_ERR_INDEX, "only integers, slices (`:`), ellipsis (`...`) and None are valid indices");
      break;
    }
    if (!st) {
      vkt_tensor_release(&cur);
      vkt_tensor_release(&twin);
      cur = next, twin = twin_next;
    }
  }
  Py_DECREF(items);
  vkt_var v;
  if (!st)
    st = vkt_ag_view_indexed(SELF_V, &cur, twinned ? &twin : NULL, name, &v);
  vkt_tensor_release(&cur);
  vkt_tensor_release(&twin);
  PyObject *r = st ? vkt_raise(st) : vkt_wrap_var(&v);
  vkt_py_claim(self); /* the view made self's autograd state, where it had none */
  return r;
}

static PyObject *t_getitem(PyObject *self, PyObject *key) {
  PyObject *k = vkt_py_index_key(key);
  PyObject *r = k ? getitem(self, k) : NULL;
  Py_XDECREF(k);
  return r;
}

/* ---- copies ---- */

static PyObject *t_contiguous(PyObject *self, PyObject *args, PyObject *kwargs) {
  static char *kw[] = {"memory_format", NULL};
  PyObject *fmt_o = NULL;
  vkt_memory_format fmt;
  if (!vkt_parse_args(args, kwargs, "|O", kw, &fmt_o) || vkt_parse_memory_format(fmt_o, &fmt) < 0)
    return NULL;
  if (!fmt_o)
    fmt = VKT_CONTIGUOUS_FORMAT;
  if (fmt == VKT_PRESERVE_FORMAT)
    return vkt_raise(vkt_fail(VKT_ERR_RUNTIME, "preserve memory format is unsupported by the contiguous operator"));
  if (fmt == VKT_CONTIGUOUS_FORMAT ? vkt_tensor_is_contiguous(SELF) : in_format(SELF, fmt))
    return Py_NewRef(self);
  vkt_var v;
  return vkt_py_var_result(vkt_ag_clone(SELF_V, fmt, &v), &v);
}

static PyObject *t_clone(PyObject *self, PyObject *args, PyObject *kwargs) {
  static char *kw[] = {"memory_format", NULL};
  PyObject *fmt_o = NULL;
  vkt_memory_format fmt;
  if (!vkt_parse_args(args, kwargs, "|$O", kw, &fmt_o) || vkt_parse_memory_format(fmt_o, &fmt) < 0)
    return NULL;
  vkt_var v;
  return vkt_py_var_result(vkt_ag_clone(SELF_V, fmt, &v), &v);
}

/* PyTorch's suggest_memory_format: channels_last where a rank-4 (or 5) tensor is laid out so and is not
 * also contiguous, else contiguous_format, whatever else the strides say. */
static vkt_memory_format suggested_format(const vkt_tensor *t) {
  if (!vkt_tensor_is_contiguous(t) && in_format(t, VKT_CHANNELS_LAST))
    return VKT_CHANNELS_LAST;
  if (!vkt_tensor_is_contiguous(t) && in_format(t, VKT_CHANNELS_LAST_3D))
    return VKT_CHANNELS_LAST_3D;
  return VKT_CONTIGUOUS_FORMAT;
}

/* self on device in dtype and laid out by fmt. Without copy, self itself where device and dtype match
 * and fmt is preserve_format or the one PyTorch suggests for self (so a transpose's
 * to(memory_format=contiguous_format) is the transpose, as in PyTorch). */
static PyObject *convert(PyObject *self, int device, vkt_dtype dtype, vkt_memory_format fmt, bool copy) {
  bool same = device == vkt_tensor_device(SELF) && dtype == SELF->dtype;
  if (!copy && same && (fmt == VKT_PRESERVE_FORMAT || fmt == suggested_format(SELF)))
    return Py_NewRef(self);
  vkt_var v;
  return vkt_py_var_result(vkt_ag_cast(SELF_V, device, dtype, fmt, true, &v), &v);
}

static PyObject *t_cpu(PyObject *self, PyObject *unused) {
  (void)unused;
  if (vkt_tensor_device(SELF) == VKT_CPU)
    return Py_NewRef(self);
  vkt_var v;
  return vkt_py_var_result(vkt_ag_cast(SELF_V, VKT_CPU, SELF->dtype, VKT_PRESERVE_FORMAT, false, &v), &v);
}

/* PyTorch's TypeError for arguments that fit none of to()'s forms, which it lists. */
static PyObject *to_signature_error(PyObject *args, PyObject *kwargs) {
  return vkt_py_signature_error("to", args, kwargs,
                                " * (vkt.device device = None, vkt.dtype dtype = None, bool non_blocking = False, "
                                "bool copy = False, *, vkt.memory_format memory_format = None)\n"
                                " * (vkt.dtype dtype, bool non_blocking = False, bool copy = False, *, "
                                "vkt.memory_format memory_format = None)\n"
                                " * (Tensor tensor, bool non_blocking = False, bool copy = False, *, "
                                "vkt.memory_format memory_format = None)\n");
}

/* Whether value's type fits to()'s keyword k, as PyTorch's parser takes it (a device as one, a string or an index;
 * None for the optional ones; bools as bools). */
static bool to_keyword_fits(const char *k, PyObject *value) {
  if (strcmp(k, "copy") == 0 || strcmp(k, "non_blocking") == 0)
    return PyBool_Check(value);
  if (value == Py_None)
    return strcmp(k, "device") == 0 || strcmp(k, "dtype") == 0 || strcmp(k, "memory_format") == 0;
  if (strcmp(k, "device") == 0)
    return PyUnicode_Check(value) || (PyLong_Check(value) && !PyBool_Check(value)) ||
           PyObject_TypeCheck(value, (PyTypeObject *)vkt_state->device_type);
  if (strcmp(k, "dtype") == 0)
    return PyObject_TypeCheck(value, (PyTypeObject *)vkt_state->dtype_type);
  return strcmp(k, "memory_format") == 0 && PyObject_TypeCheck(value, (PyTypeObject *)vkt_state->format_type);
}

/* to(device=None, dtype=None, non_blocking=False, copy=False), to(dtype, ...), to(other, ...); non_blocking is
 * taken and ignored (a copy to the host waits anyway, one to a device is recorded). */
static PyObject *t_to(PyObject *self, PyObject *args, PyObject *kwargs) {
  int device = vkt_tensor_device(SELF);
  vkt_dtype dtype = SELF->dtype;
  vkt_memory_format fmt = VKT_PRESERVE_FORMAT;
  bool copy = false, given;
  Py_ssize_t n = PyTuple_Size(args), flags = 1; /* where (non_blocking, copy) start */
  PyObject *first = n ? PyTuple_GetItem(args, 0) : NULL, *second = n > 1 ? PyTuple_GetItem(args, 1) : Py_None;
  bool is_dtype = first && PyObject_TypeCheck(first, (PyTypeObject *)vkt_state->dtype_type);
  if (is_dtype) {
    dtype = ((vkt_py_dtype *)first)->dtype;
  } else if (first && vkt_is_tensor(first)) {
    device = vkt_tensor_device(&((vkt_py_tensor *)first)->v.t);
    dtype = ((vkt_py_tensor *)first)->v.t.dtype;
  } else if (first && (PyFloat_Check(first) || PyBool_Check(first))) { /* PyTorch's `other` as a number's cpu tensor */
    device = VKT_CPU, dtype = PyBool_Check(first) ? VKT_BOOL : VKT_FLOAT64;
  } else if (first) { /* (device, dtype, ...) */
    flags = 2;
    if (first != Py_None && vkt_parse_device(first, &device) < 0)
      return NULL;
    if (PyObject_TypeCheck(second, (PyTypeObject *)vkt_state->dtype_type))
      dtype = ((vkt_py_dtype *)second)->dtype;
    else if (second != Py_None)
      return to_signature_error(args, kwargs);
  }
  for (Py_ssize_t i = flags; i < n; i++)
    if (!PyBool_Check(PyTuple_GetItem(args, i)) || i >= flags + 2)
      return to_signature_error(args, kwargs);
  if (n > flags + 1)
    copy = PyTuple_GetItem(args, flags + 1) == Py_True;
  if (kwargs) {
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(kwargs, &pos, &key, &value)) {
      const char *k = PyUnicode_AsUTF8AndSize(key, NULL);
      if (!to_keyword_fits(k, value))
        return to_signature_error(args, kwargs);
      if (strcmp(k, "device") == 0) {
        if (value != Py_None && vkt_parse_device(value, &device) < 0)
          return NULL;
      } else if (strcmp(k, "dtype") == 0) {
        if (vkt_parse_dtype(value, &dtype, &given) < 0)
          return NULL;
        if (!given)
          dtype = SELF->dtype;
      } else if (strcmp(k, "copy") == 0) {
        copy = PyObject_IsTrue(value);
      } else if (strcmp(k, "memory_format") == 0 && vkt_parse_memory_format(value, &fmt) < 0) {
        return NULL;
      }
    }
  }
  return convert(self, device, dtype, fmt, copy);
}

/* float(memory_format=preserve_format) and the other casts. */
static PyObject *cast(PyObject *self, PyObject *args, PyObject *kwargs, vkt_dtype dtype) {
  static char *kw[] = {"memory_format", NULL};
  PyObject *fmt_o = NULL;
  vkt_memory_format fmt;
  if (!vkt_parse_args(args, kwargs, "|$O", kw, &fmt_o) || vkt_parse_memory_format(fmt_o, &fmt) < 0)
    return NULL;
  return convert(self, vkt_tensor_device(SELF), dtype, fmt, false);
}

#define CAST_METHOD(fn, dt)                                                                                            \
  static PyObject *fn(PyObject *self, PyObject *args, PyObject *kwargs) { return cast(self, args, kwargs, dt); }
CAST_METHOD(t_float, VKT_FLOAT32)
CAST_METHOD(t_double, VKT_FLOAT64)
CAST_METHOD(t_half, VKT_FLOAT16)
CAST_METHOD(t_int, VKT_INT32)
CAST_METHOD(t_long, VKT_INT64)
CAST_METHOD(t_bool, VKT_BOOL)
CAST_METHOD(t_byte, VKT_UINT8)

static PyObject *t_type_as(PyObject *self, PyObject *other) {
  vkt_tensor *o = vkt_tensor_of(other);
  if (!o) {
    PyErr_Format(PyExc_TypeError, "type_as(): argument 'other' must be Tensor, not %R", (PyObject *)Py_TYPE(other));
    return NULL;
  }
  return convert(self, vkt_tensor_device(SELF), o->dtype, VKT_PRESERVE_FORMAT, false);
}

/* new_zeros(size, dtype=None, device=None) and the others: the module's creation function fn with
 * self's dtype and device where the call gives none. */
static PyObject *new_like(PyObject *self, PyObject *args, PyObject *kwargs, const char *fn) {
  PyObject *f = PyObject_GetAttrString(PyType_GetModule((PyTypeObject *)vkt_state->tensor_type), fn);
  PyObject *kw = kwargs ? PyDict_Copy(kwargs) : PyDict_New(), *r = NULL;
  PyObject *device = vkt_device_new(vkt_tensor_device(SELF));
  const char *keys[] = {"dtype", "device"};
  PyObject *defaults[] = {vkt_state->dtypes[SELF->dtype], device};
  int ok = f && kw && device;
  for (int i = 0; ok && i < 2; i++) {
    PyObject *given = PyDict_GetItemString(kw, keys[i]); /* borrowed */
    if (!given || given == Py_None)
      ok = PyDict_SetItemString(kw, keys[i], defaults[i]) == 0;
  }
  if (ok)
    r = PyObject_Call(f, args, kw);
  Py_XDECREF(f);
  Py_XDECREF(kw);
  Py_XDECREF(device);
  return r;
}

#define NEW_METHOD(name, fn)                                                                                           \
  static PyObject *t_##name(PyObject *self, PyObject *args, PyObject *kwargs) {                                        \
    return new_like(self, args, kwargs, fn);                                                                           \
  }
NEW_METHOD(new_zeros, "zeros")
NEW_METHOD(new_ones, "ones")
NEW_METHOD(new_empty, "empty")
NEW_METHOD(new_full, "full")
NEW_METHOD(new_tensor, "tensor")

/* Pickling and copy.copy: the values as a NumPy array, rebuilt on the same device. */
static PyObject *t_reduce_ex(PyObject *self, PyObject *protocol) {
  (void)protocol;
  PyObject *rebuild =
      PyObject_GetAttrString(PyType_GetModule((PyTypeObject *)vkt_state->tensor_type), "_rebuild_tensor");
  PyObject *args = PyTuple_New(0), *kwargs = Py_BuildValue("{s:O}", "copy", Py_True);
  PyObject *array = args && kwargs ? vkt_tensor_array(self, args, kwargs) : NULL;
  PyObject *device = vkt_device_new(vkt_tensor_device(SELF));
  PyObject *r = rebuild && array && device ? Py_BuildValue("(O(OO))", rebuild, array, device) : NULL;
  Py_XDECREF(rebuild);
  Py_XDECREF(args);
  Py_XDECREF(kwargs);
  Py_XDECREF(array);
  Py_XDECREF(device);
  return r;
}

/* As PyTorch: a copy of the whole storage, seen through the same view (offset, strides). */
static PyObject *t_deepcopy(PyObject *self, PyObject *memo) {
  (void)memo;
  vkt_tensor whole = *SELF, copy;
  whole.ndim = 1;
  whole.shape[0] = (int64_t)(SELF->storage->nbytes / (uint64_t)vkt_dtype_size(SELF->dtype));
  whole.strides[0] = 1;
  whole.offset = 0;
  vkt_status st = vkt_clone(&copy, &whole);
  if (st)
    return vkt_raise(st);
  vkt_tensor out = *SELF;
  out.storage = copy.storage; /* copy's reference moves to out */
  return vkt_wrap(&out);
}

/* Methods whose op is composed in Python (python/vkt/functional.py, as torch.functional): self.name(...)
 * is vkt.functional.name(self, ...); and the autograd methods that take Python objects (autograd.py). */
static PyObject *python_method(PyObject *self, PyObject *args, PyObject *kwargs, const char *where, const char *name) {
  PyObject *module = PyImport_ImportModule(where);
  PyObject *f = module ? PyObject_GetAttrString(module, name) : NULL, *r = NULL;
  Py_ssize_t n = PyTuple_Size(args);
  PyObject *all = f ? PyTuple_New(n + 1) : NULL;
  if (all) {
    PyTuple_SetItem(all, 0, Py_NewRef(self));
    for (Py_ssize_t i = 0; i < n; i++)
      PyTuple_SetItem(all, i + 1, Py_NewRef(PyTuple_GetItem(args, i)));
    r = PyObject_Call(f, all, kwargs);
  }
  Py_XDECREF(all);
  Py_XDECREF(f);
  Py_XDECREF(module);
  return r;
}

#define PYTHON_METHOD(name)                                                                                            \
  static PyObject *t_##name(PyObject *self, PyObject *args, PyObject *kwargs) {                                        \
    return python_method(self, args, kwargs, "vkt.functional", #name);                                                 \
  }
#define AUTOGRAD_METHOD(name)                                                                                          \
  static PyObject *t_##name(PyObject *self, PyObject *args, PyObject *kwargs) {                                        \
    return python_method(self, args, kwargs, "vkt.autograd", "_tensor_" #name);                                        \
  }
#define RANDOM_METHOD(name)                                                                                            \
  static PyObject *t_##name(PyObject *self, PyObject *args, PyObject *kwargs) {                                        \
    return python_method(self, args, kwargs, "vkt.random", #name);                                                     \
  }
RANDOM_METHOD(uniform_)
RANDOM_METHOD(normal_)
RANDOM_METHOD(log_normal_)
RANDOM_METHOD(exponential_)
RANDOM_METHOD(cauchy_)
RANDOM_METHOD(geometric_)
RANDOM_METHOD(random_)
RANDOM_METHOD(bernoulli_)
RANDOM_METHOD(bernoulli)
RANDOM_METHOD(multinomial)
AUTOGRAD_METHOD(backward)
AUTOGRAD_METHOD(register_hook)
AUTOGRAD_METHOD(register_post_accumulate_grad_hook)
PYTHON_METHOD(outer)
PYTHON_METHOD(ger)
PYTHON_METHOD(inner)
PYTHON_METHOD(kron)
PYTHON_METHOD(cross)
PYTHON_METHOD(diff)
PYTHON_METHOD(bincount)
PYTHON_METHOD(histc)
PYTHON_METHOD(histogram)
PYTHON_METHOD(logcumsumexp)
PYTHON_METHOD(cov)
PYTHON_METHOD(corrcoef)

/* torch's functions and methods composed in python/vkt/_composite.py (re-exported by vkt.functional). */
#define COMPOSITE_METHODS(X)                                                                                           \
  X(ravel, "ravel(): a 1-D view (a copy if not contiguous)")                                                           \
  X(reshape_as, "reshape_as(other): reshape(other.shape)")                                                             \
  X(tensor_split, "tensor_split(indices_or_sections, dim=0): views")                                                   \
  X(hsplit, "hsplit(indices_or_sections): tensor_split along dim 1 (0 for 1-D)")                                       \
  X(vsplit, "vsplit(indices_or_sections): tensor_split along dim 0")                                                   \
  X(dsplit, "dsplit(indices_or_sections): tensor_split along dim 2")                                                   \
  X(sum_to_size, "sum_to_size(*size): summed down to a size that broadcasts to self's")                                \
  X(adjoint, "adjoint(): the last two dims swapped (real tensors)")                                                    \
  X(diagflat, "diagflat(offset=0): vkt.diagflat")                                                                      \
  X(select_scatter, "select_scatter(src, dim, index): vkt.select_scatter")                                             \
  X(slice_scatter, "slice_scatter(src, dim=0, start=None, end=None, step=1): vkt.slice_scatter")                       \
  X(diagonal_scatter, "diagonal_scatter(src, offset=0, dim1=0, dim2=1): vkt.diagonal_scatter")                         \
  X(tril_, "tril_(diagonal=0): in place")                                                                              \
  X(triu_, "triu_(diagonal=0): in place")                                                                              \
  X(fill_diagonal_, "fill_diagonal_(fill_value, wrap=False): in place")                                                \
  X(positive, "positive(): self (an error for bool)")                                                                  \
  X(signbit, "signbit(): whether the sign bit is set")                                                                 \
  X(fmax, "fmax(other): maximum, NaN losing to a number")                                                              \
  X(fmin, "fmin(other): minimum, NaN losing to a number")                                                              \
  X(heaviside, "heaviside(values): vkt.heaviside")                                                                     \
  X(heaviside_, "heaviside_(values): in place")                                                                        \
  X(float_power, "float_power(exponent): pow in float64")                                                              \
  X(float_power_, "float_power_(exponent): in place, self float64")                                                    \
  X(conj, "conj(): self (a real tensor)")                                                                              \
  X(conj_physical, "conj_physical(): self (a real tensor)")                                                            \
  X(conj_physical_, "conj_physical_(): in place, values unchanged (a real tensor)")                                    \
  X(resolve_conj, "resolve_conj(): self (a real tensor)")                                                              \
  X(resolve_neg, "resolve_neg(): self (a real tensor)")                                                                \
  X(is_conj, "is_conj(): False (a real tensor)")                                                                       \
  X(is_neg, "is_neg(): False (a real tensor)")                                                                         \
  X(ldexp, "ldexp(other): self * 2 ** other")                                                                          \
  X(logaddexp2, "logaddexp2(other): log2(2 ** self + 2 ** other)")                                                     \
  X(quantile, "quantile(q, dim=None, keepdim=False, *, interpolation='linear'): vkt.quantile")                         \
  X(nanquantile, "nanquantile(q, dim=None, keepdim=False, *, interpolation='linear'): vkt.nanquantile")                \
  X(isreal, "isreal(): all True for real tensors")                                                                     \
  X(gcd, "gcd(other): greatest common divisor (integers)")                                                             \
  X(lcm, "lcm(other): least common multiple (integers)")                                                               \
  X(rsub, "rsub(other, *, alpha=1): other - alpha * self")                                                             \
  X(is_signed, "is_signed(): False for uint8 and bool")                                                                \
  X(char, "char(): vkt has no int8 dtype (a TypeError)")                                                               \
  X(short, "short(): vkt has no int16 dtype (a TypeError)")                                                            \
  X(bfloat16, "bfloat16(): vkt has no bfloat16 dtype (a TypeError)")                                                   \
  X(cfloat, "cfloat(): vkt has no complex64 dtype (a TypeError)")                                                      \
  X(cdouble, "cdouble(): vkt has no complex128 dtype (a TypeError)")                                                   \
  X(chalf, "chalf(): vkt has no complex32 dtype (a TypeError)")                                                        \
  X(gcd_, "gcd_(other): in place")                                                                                     \
  X(lcm_, "lcm_(other): in place")                                                                                     \
  X(ldexp_, "ldexp_(other): in place")                                                                                 \
  X(is_nonzero, "is_nonzero(): the truth of a one-element tensor")                                                     \
  X(is_same_size, "is_same_size(other): whether the shapes are equal")                                                 \
  X(split_with_sizes, "split_with_sizes(split_sizes, dim=0): views")                                                   \
  X(unsafe_chunk, "unsafe_chunk(chunks, dim=0): chunk")                                                                \
  X(unsafe_split, "unsafe_split(split_size, dim=0): split")                                                            \
  X(unsafe_split_with_sizes, "unsafe_split_with_sizes(split_sizes, dim=0): split_with_sizes")                          \
  X(narrow_copy, "narrow_copy(dim, start, length): a copy of narrow")                                                  \
  X(new_empty_strided, "new_empty_strided(size, stride, *, dtype=None, device=None): self's dtype and device")         \
  X(dim_order, "dim_order(*, ambiguity_check=False): the dims from outermost to innermost in memory")                  \
  X(hardshrink, "hardshrink(lambd=0.5): nn.functional.hardshrink")                                                     \
  X(prelu, "prelu(weight): nn.functional.prelu")                                                                       \
  X(renorm_, "renorm_(p, dim, maxnorm): in place")                                                                     \
  X(addmm_, "addmm_(mat1, mat2, *, beta=1, alpha=1): in place")                                                        \
  X(addmv_, "addmv_(mat, vec, *, beta=1, alpha=1): in place")                                                          \
  X(addr_, "addr_(vec1, vec2, *, beta=1, alpha=1): in place")                                                          \
  X(baddbmm_, "baddbmm_(batch1, batch2, *, beta=1, alpha=1): in place")                                                \
  X(addbmm_, "addbmm_(batch1, batch2, *, beta=1, alpha=1): in place")                                                  \
  X(mvlgamma, "mvlgamma(p): the multivariate log-gamma function of dimension p")                                       \
  X(mvlgamma_, "mvlgamma_(p): in place")                                                                               \
  X(frexp, "frexp(): (mantissa, exponent), self = mantissa * 2 ** exponent")                                           \
  X(put, "put(index, source, accumulate=False): a copy with put_ applied")                                             \
  X(put_, "put_(index, source, accumulate=False): source into self's elements at flat indices")                        \
  X(index_reduce, "index_reduce(dim, index, source, reduce, *, include_self=True): vkt.index_reduce")                  \
  X(index_reduce_, "index_reduce_(dim, index, source, reduce, *, include_self=True): in place")                        \
  X(nonzero_static, "nonzero_static(*, size, fill_value=-1): nonzero, cut or padded to size rows")
#define COMPOSITE_METHOD(name, doc) PYTHON_METHOD(name)
#define COMPOSITE_METHOD_DEF(name, doc)                                                                                \
  {#name, (PyCFunction)(void (*)(void))t_##name, METH_VARARGS | METH_KEYWORDS, doc},
COMPOSITE_METHODS(COMPOSITE_METHOD)

static PyObject *t_type(PyObject *self, PyObject *args, PyObject *kwargs) {
  return python_method(self, args, kwargs, "vkt.functional", "tensor_type");
}

/* -1 for the host, as torch's for cpu; a Vulkan tensor's adapter index, as torch's CUDA ordinal. */
static PyObject *t_get_device(PyObject *self, PyObject *unused) {
  (void)unused;
  return PyLong_FromLong(vkt_tensor_device(SELF));
}

/* reversed(t): t.flip(0), as torch's (a 0-d tensor is itself). */
static PyObject *t_reversed(PyObject *self, PyObject *unused) {
  (void)unused;
  return SELF->ndim == 0 ? Py_NewRef(self) : PyObject_CallMethod(self, "flip", "(i)", 0);
}

static PyObject *t_is_complex(PyObject *self, PyObject *unused) {
  (void)self, (void)unused;
  Py_RETURN_FALSE; /* vkt has no complex dtypes */
}

/* Properties computed in Python: closure is the name, looked up in vkt._composite._PROPERTIES. */
static PyObject *python_property(PyObject *self, void *name) {
  PyObject *module = PyImport_ImportModule("vkt._composite");
  PyObject *f = module ? PyObject_GetAttrString(module, "_tensor_property") : NULL;
  PyObject *r = f ? PyObject_CallFunction(f, "Os", self, (const char *)name) : NULL;
  Py_XDECREF(f);
  Py_XDECREF(module);
  return r;
}

/* The legacy torch.* linear algebra (torch.svd, torch.lu, ...) as methods: Python compositions of vkt.linalg in
 * vkt/_legacy_linalg.py; eig, symeig, lstsq and solve only raise torch's removal errors. */
#define LEGACY_LINALG_METHODS(X)                                                                                       \
  X(svd, "svd(some=True, compute_uv=True): vkt.svd")                                                                   \
  X(qr, "qr(some=True): vkt.qr")                                                                                       \
  X(cholesky, "cholesky(upper=False): vkt.cholesky")                                                                   \
  X(cholesky_solve, "cholesky_solve(input2, upper=False): vkt.cholesky_solve")                                         \
  X(cholesky_inverse, "cholesky_inverse(upper=False): vkt.cholesky_inverse")                                           \
  X(lu, "lu(pivot=True, get_infos=False): vkt.lu")                                                                     \
  X(lu_solve, "lu_solve(LU_data, LU_pivots): vkt.lu_solve")                                                            \
  X(triangular_solve, "triangular_solve(A, upper=True, transpose=False, unitriangular=False): vkt.triangular_solve")   \
  X(pinverse, "pinverse(rcond=1e-15): vkt.pinverse")                                                                   \
  X(matrix_power, "matrix_power(n): vkt.matrix_power")                                                                 \
  X(matrix_exp, "matrix_exp(): vkt.matrix_exp")                                                                        \
  X(geqrf, "geqrf(): vkt.geqrf")                                                                                       \
  X(orgqr, "orgqr(input2): vkt.orgqr")                                                                                 \
  X(ormqr, "ormqr(input2, input3, left=True, transpose=False): vkt.ormqr")                                             \
  X(addr, "addr(vec1, vec2, *, beta=1, alpha=1): vkt.addr")                                                            \
  X(renorm, "renorm(p, dim, maxnorm): vkt.renorm")                                                                     \
  X(dist, "dist(other, p=2): vkt.dist")                                                                                \
  X(eig, "removed from torch: raises its RuntimeError")                                                                \
  X(symeig, "removed from torch: raises its RuntimeError")                                                             \
  X(lstsq, "removed from torch: raises its RuntimeError")                                                              \
  X(solve, "removed from torch: raises its RuntimeError")
#define LEGACY_METHOD(name, doc) PYTHON_METHOD(name)
#define LEGACY_METHOD_DEF(name, doc) {#name, (PyCFunction)(void (*)(void))t_##name, METH_VARARGS | METH_KEYWORDS, doc},
LEGACY_LINALG_METHODS(LEGACY_METHOD)

static PyObject *scalar_object(vkt_dtype dtype, const void *bytes) {
  vkt_scalar v = vkt_scalar_load(dtype, bytes);
  if (dtype == VKT_BOOL)
    return PyBool_FromLong(v.i != 0);
  return v.is_float ? PyFloat_FromDouble(v.f) : PyLong_FromLongLong(v.i);
}

static PyObject *t_item(PyObject *self, PyObject *unused) {
  (void)unused;
  char bytes[8];
  int64_t n = vkt_tensor_numel(SELF);
  if (n != 1)
    return vkt_raise(
        vkt_fail(VKT_ERR_RUNTIME, "a Tensor with %lld elements cannot be converted to Scalar", (long long)n));
  vkt_status st = vkt_read(SELF, bytes);
  return st ? vkt_raise(st) : scalar_object(SELF->dtype, bytes);
}

static PyObject *t_tolist(PyObject *self, PyObject *unused) {
  (void)unused;
  PyObject *args = PyTuple_New(0);
  PyObject *kwargs = Py_BuildValue("{s:O}", "copy", Py_True);
  PyObject *arr = args && kwargs ? vkt_tensor_array(self, args, kwargs) : NULL;
  Py_XDECREF(args);
  Py_XDECREF(kwargs);
  if (!arr)
    return NULL;
  PyObject *r = PyObject_CallMethod(arr, "tolist", NULL);
  Py_DECREF(arr);
  return r;
}

static PyObject *t_repr(PyObject *self) {
  if (!vkt_state->format) {
    PyObject *m = PyImport_ImportModule("vkt._formatting");
    if (!m)
      return NULL;
    vkt_state->format = PyObject_GetAttrString(m, "tensor_repr");
    Py_DECREF(m);
    if (!vkt_state->format)
      return NULL;
  }
  return PyObject_CallFunctionObjArgs(vkt_state->format, self, NULL);
}

static PyMethodDef tensor_methods[] = {
    {"size", (PyCFunction)(void (*)(void))t_size, METH_VARARGS | METH_KEYWORDS, "size(dim=None)"},
    {"stride", (PyCFunction)(void (*)(void))t_stride, METH_VARARGS | METH_KEYWORDS, "stride(dim=None), in elements"},
    {"dim", t_dim, METH_NOARGS, "the number of dimensions"},
    {"numel", t_numel, METH_NOARGS, "the number of elements"},
    {"element_size", t_element_size, METH_NOARGS, "bytes per element"},
    {"nelement", t_numel, METH_NOARGS, "the number of elements (numel)"},
    {"ndimension", t_dim, METH_NOARGS, "the number of dimensions (dim)"},
    {"is_floating_point", t_is_floating_point, METH_NOARGS, "whether the dtype is a float type"},
    {"is_contiguous", (PyCFunction)(void (*)(void))t_is_contiguous, METH_VARARGS | METH_KEYWORDS,
     "is_contiguous(memory_format=vkt.contiguous_format): whether the elements are dense in that layout"},
    {"data_ptr", t_data_ptr, METH_NOARGS, "the address of element 0 (cpu); a number unique per storage and offset"},
    {"storage_offset", t_storage_offset, METH_NOARGS, "offset into the storage, in elements"},
    {"view", (PyCFunction)(void (*)(void))t_view, METH_VARARGS | METH_KEYWORDS,
     "view(*shape) or view(dtype): the same storage seen with another shape, or its bytes as another dtype"},
    {"view_as", t_view_as, METH_O, "view_as(other): view(other.shape)"},
    {"reshape", t_reshape, METH_VARARGS, "reshape(*shape): a view when possible, else a copy"},
    {"flatten", (PyCFunction)(void (*)(void))t_flatten, METH_VARARGS | METH_KEYWORDS,
     "flatten(start_dim=0, end_dim=-1)"},
    {"transpose", (PyCFunction)(void (*)(void))t_transpose, METH_VARARGS | METH_KEYWORDS,
     "transpose(dim0, dim1): a view"},
    {"as_strided", (PyCFunction)(void (*)(void))t_as_strided, METH_VARARGS | METH_KEYWORDS,
     "as_strided(size, stride, storage_offset=None): any view of the storage, in elements"},
    {"t", t_t, METH_NOARGS, "transpose of a matrix (a view)"},
    {"permute", t_permute, METH_VARARGS, "permute(*dims): a view"},
    {"expand", t_expand, METH_VARARGS, "expand(*sizes): a broadcast view (stride 0)"},
    {"expand_as", t_expand_as, METH_O, "expand_as(other)"},
    {"squeeze", (PyCFunction)(void (*)(void))t_squeeze, METH_VARARGS | METH_KEYWORDS, "squeeze(dim=None)"},
    {"unsqueeze", (PyCFunction)(void (*)(void))t_unsqueeze, METH_VARARGS | METH_KEYWORDS, "unsqueeze(dim)"},
    /* the in-place view ops: self itself takes the view's shape and strides (the same storage) */
    {"t_", t_t_, METH_NOARGS, "in-place t(): self becomes its transpose"},
    {"transpose_", (PyCFunction)(void (*)(void))t_transpose_, METH_VARARGS | METH_KEYWORDS,
     "in-place transpose(dim0, dim1)"},
    {"swapdims_", (PyCFunction)(void (*)(void))t_swapdims_, METH_VARARGS | METH_KEYWORDS,
     "in-place swapdims(dim0, dim1): transpose_"},
    {"swapaxes_", (PyCFunction)(void (*)(void))t_swapaxes_, METH_VARARGS | METH_KEYWORDS,
     "in-place swapaxes(axis0, axis1): transpose_"},
    {"squeeze_", (PyCFunction)(void (*)(void))t_squeeze_, METH_VARARGS | METH_KEYWORDS, "in-place squeeze(dim=None)"},
    {"unsqueeze_", (PyCFunction)(void (*)(void))t_unsqueeze_, METH_VARARGS | METH_KEYWORDS, "in-place unsqueeze(dim)"},
    {"as_strided_", (PyCFunction)(void (*)(void))t_as_strided_, METH_VARARGS | METH_KEYWORDS,
     "in-place as_strided(size, stride, storage_offset=None)"},
    {"resize_", (PyCFunction)(void (*)(void))t_resize_, METH_VARARGS | METH_KEYWORDS,
     "resize_(*sizes, memory_format=None): self with that shape over its storage, grown where too small"},
    {"resize_as_", (PyCFunction)(void (*)(void))t_resize_as_, METH_VARARGS | METH_KEYWORDS,
     "resize_as_(the_template, memory_format=None): resize_(the_template.shape)"},
    {"contiguous", (PyCFunction)(void (*)(void))t_contiguous, METH_VARARGS | METH_KEYWORDS,
     "contiguous(memory_format=vkt.contiguous_format): self if laid out so, else a copy that is"},
    {"clone", (PyCFunction)(void (*)(void))t_clone, METH_VARARGS | METH_KEYWORDS,
     "clone(*, memory_format=vkt.preserve_format): a copy (a dense tensor's copy keeps its strides)"},
    {"type_as", t_type_as, METH_O, "type_as(other): to(other.dtype)"},
    {"new_zeros", (PyCFunction)(void (*)(void))t_new_zeros, METH_VARARGS | METH_KEYWORDS,
     "new_zeros(*size, dtype=None, device=None): zeros with self's dtype and device by default"},
    {"new_ones", (PyCFunction)(void (*)(void))t_new_ones, METH_VARARGS | METH_KEYWORDS, "new_ones(*size, ...)"},
    {"new_empty", (PyCFunction)(void (*)(void))t_new_empty, METH_VARARGS | METH_KEYWORDS, "new_empty(*size, ...)"},
    {"new_full", (PyCFunction)(void (*)(void))t_new_full, METH_VARARGS | METH_KEYWORDS,
     "new_full(size, fill_value, ...)"},
    {"new_tensor", (PyCFunction)(void (*)(void))t_new_tensor, METH_VARARGS | METH_KEYWORDS,
     "new_tensor(data, dtype=None, device=None): a copy of data with self's dtype and device by default"},
    {"outer", (PyCFunction)(void (*)(void))t_outer, METH_VARARGS | METH_KEYWORDS, "outer(vec2): vkt.outer"},
    {"ger", (PyCFunction)(void (*)(void))t_ger, METH_VARARGS | METH_KEYWORDS, "ger(vec2): vkt.outer"},
    {"inner", (PyCFunction)(void (*)(void))t_inner, METH_VARARGS | METH_KEYWORDS, "inner(other): vkt.inner"},
    {"kron", (PyCFunction)(void (*)(void))t_kron, METH_VARARGS | METH_KEYWORDS, "kron(other): vkt.kron"},
    {"cross", (PyCFunction)(void (*)(void))t_cross, METH_VARARGS | METH_KEYWORDS, "cross(other, dim=None): vkt.cross"},
    {"diff", (PyCFunction)(void (*)(void))t_diff, METH_VARARGS | METH_KEYWORDS,
     "diff(n=1, dim=-1, prepend=None, append=None): vkt.diff"},
    {"bincount", (PyCFunction)(void (*)(void))t_bincount, METH_VARARGS | METH_KEYWORDS,
     "bincount(weights=None, minlength=0): vkt.bincount"},
    {"histc", (PyCFunction)(void (*)(void))t_histc, METH_VARARGS | METH_KEYWORDS,
     "histc(bins=100, min=0, max=0): vkt.histc"},
    {"histogram", (PyCFunction)(void (*)(void))t_histogram, METH_VARARGS | METH_KEYWORDS,
     "histogram(bins=100, *, range=None, weight=None, density=False): vkt.histogram"},
    {"logcumsumexp", (PyCFunction)(void (*)(void))t_logcumsumexp, METH_VARARGS | METH_KEYWORDS,
     "logcumsumexp(dim): vkt.logcumsumexp"},
    {"cov", (PyCFunction)(void (*)(void))t_cov, METH_VARARGS | METH_KEYWORDS,
     "cov(*, correction=1, fweights=None, aweights=None): vkt.cov"},
    {"corrcoef", (PyCFunction)(void (*)(void))t_corrcoef, METH_VARARGS | METH_KEYWORDS, "corrcoef(): vkt.corrcoef"},
    LEGACY_LINALG_METHODS(LEGACY_METHOD_DEF)
    COMPOSITE_METHODS(COMPOSITE_METHOD_DEF)
    {"type", (PyCFunction)(void (*)(void))t_type, METH_VARARGS | METH_KEYWORDS,
     "type(dtype=None): the type's name ('vkt.FloatTensor'), or a cast to a dtype or type name"},
    {"is_complex", t_is_complex, METH_NOARGS, "False: vkt has no complex dtypes"},
    {"__reversed__", t_reversed, METH_NOARGS, "reversed(t): t.flip(0)"},
    {"get_device", t_get_device, METH_NOARGS, "-1 on the cpu, else the Vulkan adapter's index"},
    {"__reduce_ex__", t_reduce_ex, METH_O, "pickling: the values, rebuilt on the same device"},
    {"__deepcopy__", t_deepcopy, METH_O, "a copy on the same device"},
    {"cpu", t_cpu, METH_NOARGS, "a copy in host memory (self if already there)"},
    {"to", (PyCFunction)(void (*)(void))t_to, METH_VARARGS | METH_KEYWORDS, "to(device=None, dtype=None, copy=False)"},
    {"float", (PyCFunction)(void (*)(void))t_float, METH_VARARGS | METH_KEYWORDS, "to(vkt.float32)"},
    {"double", (PyCFunction)(void (*)(void))t_double, METH_VARARGS | METH_KEYWORDS, "to(vkt.float64)"},
    {"half", (PyCFunction)(void (*)(void))t_half, METH_VARARGS | METH_KEYWORDS, "to(vkt.float16)"},
    {"int", (PyCFunction)(void (*)(void))t_int, METH_VARARGS | METH_KEYWORDS, "to(vkt.int32)"},
    {"long", (PyCFunction)(void (*)(void))t_long, METH_VARARGS | METH_KEYWORDS, "to(vkt.int64)"},
    {"bool", (PyCFunction)(void (*)(void))t_bool, METH_VARARGS | METH_KEYWORDS, "to(vkt.bool)"},
    {"byte", (PyCFunction)(void (*)(void))t_byte, METH_VARARGS | METH_KEYWORDS, "to(vkt.uint8)"},
#define RANDOM_ENTRY(name, doc) {#name, (PyCFunction)(void (*)(void))t_##name, METH_VARARGS | METH_KEYWORDS, doc}
    RANDOM_ENTRY(uniform_, "uniform_(from=0, to=1, *, generator=None): values drawn from U(from, to)"),
    RANDOM_ENTRY(normal_, "normal_(mean=0, std=1, *, generator=None): values drawn from N(mean, std^2)"),
    RANDOM_ENTRY(log_normal_, "log_normal_(mean=1, std=2, *, generator=None): exp of N(mean, std^2) draws"),
    RANDOM_ENTRY(exponential_, "exponential_(lambd=1, *, generator=None): draws of rate lambd"),
    RANDOM_ENTRY(cauchy_, "cauchy_(median=0, sigma=1, *, generator=None): Cauchy draws"),
    RANDOM_ENTRY(geometric_, "geometric_(p, *, generator=None): trials up to the first success"),
    RANDOM_ENTRY(random_, "random_(from=0, to=None, *, generator=None): integers from [from, to)"),
    RANDOM_ENTRY(bernoulli_, "bernoulli_(p=0.5, *, generator=None): 1 with probability p, else 0"),
    RANDOM_ENTRY(bernoulli, "bernoulli(p=None, *, generator=None): vkt.bernoulli(self, p)"),
    RANDOM_ENTRY(multinomial, "multinomial(num_samples, replacement=False, *, generator=None): indices drawn"),
#undef RANDOM_ENTRY
    {"backward", (PyCFunction)(void (*)(void))t_backward, METH_VARARGS | METH_KEYWORDS,
     "backward(gradient=None, retain_graph=None, create_graph=False, inputs=None): gradients into the leaves' .grad"},
    {"register_hook", (PyCFunction)(void (*)(void))t_register_hook, METH_VARARGS | METH_KEYWORDS,
     "register_hook(fn): fn(grad) runs when this tensor's gradient is computed; returns a handle with remove()"},
    {"register_post_accumulate_grad_hook",
     (PyCFunction)(void (*)(void))t_register_post_accumulate_grad_hook, METH_VARARGS | METH_KEYWORDS,
     "register_post_accumulate_grad_hook(fn): fn(tensor) runs after backward added into this leaf's .grad"},
    {"item", t_item, METH_NOARGS, "the value of a one-element tensor as a Python number"},
    {"tolist", t_tolist, METH_NOARGS, "nested Python lists"},
    {"numpy", vkt_tensor_numpy, METH_NOARGS, "a NumPy array sharing a host tensor's memory"},
    {"__array__", (PyCFunction)(void (*)(void))vkt_tensor_array, METH_VARARGS | METH_KEYWORDS, "NumPy conversion"},
    {"__dlpack__", (PyCFunction)(void (*)(void))vkt_tensor_dlpack, METH_VARARGS | METH_KEYWORDS, "DLPack export"},
    {"__dlpack_device__", vkt_tensor_dlpack_device, METH_NOARGS, "(device type, index)"},
    {NULL, NULL, 0, NULL},
};

/* ---- the constructor: PyTorch's legacy torch.Tensor(...) ---- */

/* Whether o is a size's entry: an integer, but not a bool, a tensor or an array (PyTorch takes True as data). */
static bool size_item(PyObject *o) {
  return PyIndex_Check(o) && !PyBool_Check(o) && !vkt_is_tensor(o) && !PySequence_Check(o); /* not an array */
}

/* PyTorch's refusal of arguments that match none of its forms, naming the types it got. */
static PyObject *no_form(PyObject *args, PyObject *kwargs) {
  PyObject *names = PyList_New(0), *sep = PyUnicode_FromString(", "), *key, *value, *got = NULL;
  Py_ssize_t pos = 0;
  for (Py_ssize_t i = 0; names && i < PyTuple_Size(args); i++) {
    PyObject *name = PyType_GetName(Py_TYPE(PyTuple_GetItem(args, i)));
    if (!name || PyList_Append(names, name) < 0)
      Py_CLEAR(names);
    Py_XDECREF(name);
  }
  while (names && kwargs && PyDict_Next(kwargs, &pos, &key, &value)) {
    PyObject *type = PyType_GetName(Py_TYPE(value)), *item = type ? PyUnicode_FromFormat("%U=%U", key, type) : NULL;
    if (!item || PyList_Append(names, item) < 0)
      Py_CLEAR(names);
    Py_XDECREF(type);
    Py_XDECREF(item);
  }
  if (names && sep && (got = PyUnicode_Join(sep, names)))
    PyErr_Format(PyExc_TypeError,
                 "new() received an invalid combination of arguments - got (%U), but expected one of:\n"
                 " * (*, torch.device device = None)\n * (torch.Storage storage)\n * (Tensor other)\n"
                 " * (tuple of ints size, *, torch.device device = None)\n * (object data, *, torch.device device = "
                 "None)\n",
                 got);
  Py_XDECREF(names);
  Py_XDECREF(sep);
  Py_XDECREF(got);
  return NULL;
}

/* PyTorch's TypeError naming o's type: format has one %U for it. */
static PyObject *type_error(const char *format, PyObject *o) {
  PyObject *name = PyType_GetName(Py_TYPE(o));
  if (name)
    PyErr_Format(PyExc_TypeError, format, name);
  Py_XDECREF(name);
  return NULL;
}

/* The form that args and kwargs (size= and data= besides device=) make: 0 sizes, 1 data, -1 with an error set. */
static int ctor_form(PyObject *args, PyObject *kwargs, PyObject **sizes, PyObject **data) {
  Py_ssize_t n = PyTuple_Size(args), nkw = kwargs ? PyDict_Size(kwargs) : 0;
  PyObject *size_kw = kwargs ? PyDict_GetItemString(kwargs, "size") : NULL;
  PyObject *data_kw = kwargs ? PyDict_GetItemString(kwargs, "data") : NULL;
  PyObject *device = kwargs ? PyDict_GetItemString(kwargs, "device") : NULL;
  if (nkw != (size_kw != NULL) + (data_kw != NULL) + (device != NULL) || (size_kw && data_kw) ||
      (n && (size_kw || data_kw)) || (size_kw && !PyTuple_Check(size_kw) && !PyList_Check(size_kw)))
    return no_form(args, kwargs), -1;
  if (size_kw || data_kw) {
    *sizes = size_kw, *data = data_kw;
    return data_kw != NULL;
  }
  if (n == 0 || (n == 1 && !size_item(PyTuple_GetItem(args, 0)))) {
    *sizes = n ? NULL : args, *data = n ? PyTuple_GetItem(args, 0) : NULL;
    return n != 0;
  }
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *o = PyTuple_GetItem(args, i);
    if (i == 0 && !size_item(o))
      return no_form(args, kwargs), -1;
    if (i > 0 && !PyIndex_Check(o)) {
      char format[192];
      snprintf(format, sizeof format,
               "new(): argument 'size' failed to unpack the object at pos %zd with error \"type must be tuple of "
               "ints,but got %%U\"",
               i + 1);
      return type_error(format, o), -1;
    }
  }
  *sizes = args;
  return 0;
}

/* vkt.Tensor(...), PyTorch's torch.Tensor: () an empty 1-D tensor, (*sizes) or (size=) an uninitialized one (zeroed
 * here), (tensor) an alias of it, (data) a copy of a sequence or array in the default float dtype. As PyTorch's
 * legacy constructor, device= may only say cpu. */
static PyObject *tensor_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
  PyObject *sizes = NULL, *data = NULL, *device_o = kwargs ? PyDict_GetItemString(kwargs, "device") : NULL;
  int device = VKT_CPU, ndim;
  int64_t shape[VKT_MAX_DIMS];
  vkt_var v = {0};
  int form = ctor_form(args, kwargs, &sizes, &data);
  if (form < 0 || (device_o && vkt_parse_device(device_o, &device) < 0))
    return NULL;
  if (device != VKT_CPU)
    return PyErr_Format(PyExc_RuntimeError, "legacy constructor expects device type: cpu but device type: vulkan "
                                            "was passed");
  if (form == 1 && vkt_is_tensor(data)) {
    if (device_o && device_o != Py_None)
      return PyErr_Format(PyExc_RuntimeError,
                          "Legacy tensor constructor of the form torch.Tensor(tensor, device=device) is not "
                          "supported.  Use torch.tensor(...) or torch.as_tensor(...) instead.");
    vkt_tensor alias;
    vkt_tensor_share(&alias, vkt_tensor_of(data));
    vkt_status st = vkt_ag_view(vkt_var_of(data), &alias, VKT_VIEW_STRIDED, NULL, "AliasBackward0", &v);
    return st ? vkt_raise(st) : wrap_var_as(type, &v);
  }
  if (form == 1 && !PySequence_Check(data) && !PyObject_CheckBuffer(data) && !PyUnicode_Check(data))
    return type_error("new(): data must be a sequence (got %U)", data);
  if (form == 1)
    return vkt_from_data(data, vkt_state->dtypes[vkt_default_float()], VKT_CPU, &v.t) < 0 ? NULL
                                                                                          : wrap_var_as(type, &v);
  PyObject *tuple = PySequence_Tuple(sizes);
  int r = tuple ? vkt_parse_shape(tuple, &ndim, shape) : -1;
  Py_XDECREF(tuple);
  if (r < 0)
    return NULL;
  if (sizes == args && ndim == 0) /* Tensor(): empty, of one dim */
    ndim = 1, shape[0] = 0;
  vkt_status st = vkt_tensor_empty(&v.t, VKT_CPU, vkt_default_float(), ndim, shape);
  if (!st && (st = vkt_fill_(&v.t, (vkt_scalar){0})))
    vkt_tensor_release(&v.t);
  return st ? vkt_raise(st) : wrap_var_as(type, &v);
}

static PyMemberDef tensor_members[] = {
    {"__weaklistoffset__", T_PYSSIZET, offsetof(vkt_py_tensor, weakrefs), READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyType_Slot tensor_slots[] = {
    {Py_tp_new, tensor_new},
    {Py_tp_members, tensor_members},
    {Py_tp_dealloc, tensor_dealloc},
    {Py_tp_repr, t_repr},
    {Py_mp_subscript, t_getitem},
    {Py_mp_ass_subscript, vkt_py_setitem},
    {Py_mp_length, t_len},
    {Py_sq_contains, t_contains},
    {Py_tp_iter, t_iter},
    {Py_bf_getbuffer, vkt_tensor_getbuffer},
    {Py_bf_releasebuffer, vkt_tensor_releasebuffer},
    {Py_tp_doc, "A multi-dimensional array on the host (cpu) or a Vulkan device."},
};

/* Concatenates {NULL}-terminated arrays into one new one; the type keeps it for the process. */
static void *concat(size_t size, int n, void *const *arrays, const int *counts) {
  int total = 1;
  for (int i = 0; i < n; i++)
    total += counts[i];
  char *all = PyMem_Calloc((size_t)total, size), *p = all;
  for (int i = 0; all && i < n; i++) {
    memcpy(p, arrays[i], size * (size_t)counts[i]);
    p += size * (size_t)counts[i];
  }
  return all;
}

static int count_methods(const PyMethodDef *m) {
  int n = 0;
  while (m[n].ml_name)
    n++;
  return n;
}

static int count_slots(const PyType_Slot *s) {
  int n = 0;
  while (s[n].slot)
    n++;
  return n;
}

int vkt_tensor_type_add(PyObject *module, vkt_py_state *state) {
  PyMethodDef *families[] = {tensor_methods,     vkt_elementwise_methods,      vkt_reduce_methods, vkt_matmul_methods,
                             vkt_shape_methods,  vkt_elementwise_more_methods, vkt_sort_methods,   vkt_index_methods,
                             vkt_linalg_methods,
                             vkt_layout_methods, vkt_autograd_methods};
  enum { NFAMILIES = sizeof families / sizeof *families };
  int nm[NFAMILIES];
  for (int i = 0; i < NFAMILIES; i++)
    nm[i] = count_methods(families[i]);
  PyMethodDef *methods = concat(sizeof *methods, NFAMILIES, (void *const *)families, nm);
  if (methods && vkt_guard_methods(methods) < 0)
    return -1;
  int ng[2] = {(int)(sizeof tensor_getset / sizeof *tensor_getset) - 1, 0};
  while (vkt_autograd_getset[ng[1]].name)
    ng[1]++;
  PyGetSetDef *getset = concat(sizeof *getset, 2, (void *const[]){tensor_getset, vkt_autograd_getset}, ng);
  PyType_Slot extra[2] = {{Py_tp_methods, methods}, {Py_tp_getset, getset}};
  int ns[3] = {(int)(sizeof tensor_slots / sizeof *tensor_slots), count_slots(vkt_number_slots), 2};
  PyType_Slot *slots = concat(sizeof *slots, 3, (void *const[]){tensor_slots, vkt_number_slots, extra}, ns);
  if (!methods || !slots || !getset)
    return PyErr_NoMemory(), -1;
  PyType_Spec spec = {
      "vkt.Tensor", sizeof(vkt_py_tensor), 0,
      Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_IMMUTABLETYPE, slots};
  state->tensor_type = PyType_FromModuleAndSpec(module, &spec, NULL);
  return state->tensor_type ? PyModule_AddObjectRef(module, "Tensor", state->tensor_type) : -1;
}
