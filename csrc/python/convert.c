/* convert.c: Python data into tensors: NumPy arrays and other buffers (any strides), DLPack
 * capsules, scalars and nested sequences, with PyTorch's dtype inference. */
#include <stdlib.h>
#include <string.h>

#include "dlpack.h"
#include "py.h"

static const char supported[] =
    "The only supported types are: float64, float32, float16, int64, int32, uint8, and bool.";

/* NumPy's dtype kinds that vkt cannot hold, named in the error rather than misread. */
static int reject_numpy_dtype(PyObject *data) {
  PyObject *dtype = PyObject_GetAttrString(data, "dtype");
  if (!dtype) {
    PyErr_Clear();
    return 0;
  }
  PyObject *kind = PyObject_GetAttrString(dtype, "kind");
  int bad = 0;
  if (kind && PyUnicode_Check(kind)) {
    const char *k = PyUnicode_AsUTF8AndSize(kind, NULL);
    bad = k && strchr("cOSUVMma", k[0]) != NULL;
  }
  PyErr_Clear();
  if (bad)
    PyErr_Format(PyExc_TypeError, "can't convert np.ndarray of type numpy.%S. %s", dtype, supported);
  Py_XDECREF(kind);
  Py_DECREF(dtype);
  return bad ? -1 : 0;
}

static int format_dtype(const Py_buffer *b, vkt_dtype *out) {
  const char *f = b->format ? b->format : "B";
  if (*f == '@' || *f == '=' || *f == '<')
    f++;
  char c = f[1] == '\0' ? f[0] : '\0';
  Py_ssize_t n = b->itemsize;
  if (c == 'f' && n == 4)
    *out = VKT_FLOAT32;
  else if (c == 'd' && n == 8)
    *out = VKT_FLOAT64;
  else if (c == 'e' && n == 2)
    *out = VKT_FLOAT16;
  else if ((c == 'i' || c == 'l') && n == 4)
    *out = VKT_INT32;
  else if ((c == 'l' || c == 'q') && n == 8)
    *out = VKT_INT64;
  else if (c == 'B' && n == 1)
    *out = VKT_UINT8;
  else if (c == '?' && n == 1)
    *out = VKT_BOOL;
  else {
    PyErr_Format(PyExc_TypeError, "can't convert a buffer of format '%s' (%zd bytes per item). %s", b->format, n,
                 supported);
    return -1;
  }
  return 0;
}

/* A host view over a buffer's memory, which stays owned by the buffer. */
static int buffer_view(const Py_buffer *b, vkt_dtype dtype, vkt_storage *storage, vkt_tensor *out) {
  if (b->ndim > VKT_MAX_DIMS) {
    PyErr_Format(PyExc_ValueError, "arrays have at most %d dimensions here, got %d", VKT_MAX_DIMS, b->ndim);
    return -1;
  }
  *out = (vkt_tensor){.storage = storage, .dtype = dtype, .ndim = b->ndim};
  int64_t lo = 0, hi = b->itemsize, expected = b->itemsize;
  for (int i = b->ndim - 1; i >= 0; i--) {
    int64_t stride = b->strides ? b->strides[i] : expected;
    if (stride % b->itemsize) {
      PyErr_Format(PyExc_ValueError, "array strides must be multiples of the item size (%zd bytes)", b->itemsize);
      return -1;
    }
    out->shape[i] = b->shape[i];
    out->strides[i] = stride / b->itemsize;
    expected *= b->shape[i];
    if (b->shape[i] == 0)
      lo = hi = 0;
    else if (stride < 0)
      lo += stride * (b->shape[i] - 1);
    else
      hi += stride * (b->shape[i] - 1);
  }
  storage->host = (char *)b->buf + lo;
  storage->nbytes = (uint64_t)(hi - lo);
  out->offset = -lo / b->itemsize;
  return 0;
}

static int from_buffer(PyObject *data, vkt_dtype *dtype, bool dtype_given, int device, vkt_tensor *out) {
  Py_buffer b;
  vkt_dtype have;
  if (PyObject_GetBuffer(data, &b, PyBUF_RECORDS_RO) < 0)
    return -1;
  vkt_storage host = {.refcount = 1, .device = VKT_CPU};
  vkt_tensor src;
  int rc = -1;
  if (format_dtype(&b, &have) < 0 || buffer_view(&b, have, &host, &src) < 0)
    goto finish;
  if (!dtype_given)
    *dtype = have;
  vkt_status st = vkt_tensor_empty(out, device, *dtype, src.ndim, src.shape);
  if (!st && (st = vkt_copy_(out, &src)))
    vkt_tensor_release(out);
  rc = st ? (vkt_raise(st), -1) : 0;
finish:
  PyBuffer_Release(&b);
  return rc;
}

/* ---- nested sequences and scalars ---- */

/* The dimensions of an object that exports a buffer (a NumPy array or scalar), or -1 for any other object. */
static int buffer_ndim(PyObject *o) {
  Py_buffer b;
  if (PyBytes_Check(o) || PyByteArray_Check(o) || !PyObject_CheckBuffer(o))
    return -1;
  if (PyObject_GetBuffer(o, &b, PyBUF_RECORDS_RO) < 0) {
    PyErr_Clear();
    return -1;
  }
  int ndim = b.ndim;
  PyBuffer_Release(&b);
  return ndim;
}

static bool is_sequence(PyObject *o) {
  return (PyList_Check(o) || PyTuple_Check(o) || PyRange_Check(o)) ||
         (vkt_is_tensor(o) && ((vkt_py_tensor *)o)->v.t.ndim > 0) || buffer_ndim(o) > 0;
}

/* One number, and the dtype PyTorch infers from it promoted into *dtype: Python's bool, int and float give
 * bool, int64 and the default float dtype; a 0-d tensor or a NumPy scalar gives its own dtype. An int past int64
 * is PyTorch's ValueError, but a float where floats (the dtype asked for is a float one). */
static int leaf(PyObject *o, bool floats, vkt_scalar *v, vkt_dtype *dtype) {
  vkt_dtype have = vkt_default_float();
  if (PyBool_Check(o)) {
    *v = (vkt_scalar){false, 0, o == Py_True};
    have = VKT_BOOL;
  } else if (PyLong_Check(o)) {
    int overflow;
    long long i = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow && !floats) {
      PyErr_SetString(PyExc_ValueError, "Overflow when unpacking long long");
      return -1;
    }
    *v = overflow ? (vkt_scalar){true, PyLong_AsDouble(o), 0} : (vkt_scalar){false, 0, i};
    if (overflow && PyErr_Occurred())
      return -1;
    have = VKT_INT64;
  } else if (vkt_is_tensor(o)) {
    vkt_tensor *t = &((vkt_py_tensor *)o)->v.t;
    char bytes[8];
    vkt_status st = vkt_read(t, bytes);
    if (st) {
      vkt_raise(st);
      return -1;
    }
    *v = vkt_scalar_load(t->dtype, bytes);
    have = t->dtype;
  } else if (buffer_ndim(o) == 0) {
    Py_buffer b;
    if (PyObject_GetBuffer(o, &b, PyBUF_RECORDS_RO) < 0)
      return -1;
    int rc = format_dtype(&b, &have);
    if (rc == 0)
      *v = vkt_scalar_load(have, b.buf);
    PyBuffer_Release(&b);
    if (rc < 0)
      return -1;
  } else if (PyFloat_Check(o)) {
    *v = (vkt_scalar){true, PyFloat_AsDouble(o), 0};
  } else if (PyComplex_Check(o)) {
    PyErr_Format(PyExc_TypeError, "vkt cannot hold complex numbers (got %R)", o);
    return -1;
  } else if (PyIndex_Check(o)) {
    PyObject *i = PyNumber_Index(o);
    if (!i)
      return -1;
    int r = leaf(i, floats, v, dtype);
    Py_DECREF(i);
    return r;
  } else {
    double f = PyFloat_AsDouble(o);
    if (f == -1.0 && PyErr_Occurred()) {
      PyErr_Format(PyExc_TypeError, "Could not infer dtype of %R", (PyObject *)Py_TYPE(o));
      return -1;
    }
    *v = (vkt_scalar){true, f, 0};
  }
  *dtype = vkt_promote_types(*dtype, have);
  return 0;
}

typedef struct {
  int ndim;
  int64_t shape[VKT_MAX_DIMS];
  vkt_scalar *values;
  int64_t n;
  vkt_dtype dtype; /* inferred so far; negative before the first number */
  bool floats;     /* the dtype asked for is a float one */
} gather_state;

static int gather(PyObject *o, int depth, gather_state *g) {
  if (depth == g->ndim) {
    if (is_sequence(o)) {
      PyErr_Format(PyExc_TypeError, "expected a number at dim %d, got a sequence (the list is ragged)", depth);
      return -1;
    }
    return leaf(o, g->floats, &g->values[g->n++], &g->dtype);
  }
  if (!is_sequence(o)) {
    PyErr_Format(PyExc_TypeError, "expected sequence of length %lld at dim %d (got a scalar)",
                 (long long)g->shape[depth], depth);
    return -1;
  }
  Py_ssize_t n = PySequence_Size(o);
  if (n != g->shape[depth]) {
    PyErr_Format(PyExc_ValueError, "expected sequence of length %lld at dim %d (got %zd)", (long long)g->shape[depth],
                 depth, n);
    return -1;
  }
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *item = PySequence_GetItem(o, i);
    int r = item ? gather(item, depth + 1, g) : -1;
    Py_XDECREF(item);
    if (r < 0)
      return -1;
  }
  return 0;
}

static int from_sequence(PyObject *data, vkt_dtype *dtype, bool dtype_given, int device, vkt_tensor *out) {
  gather_state g = {.floats = dtype_given && vkt_dtypes[*dtype].is_float};
  int64_t numel = 1;
  PyObject *o = data;
  Py_INCREF(o);
  while (o && is_sequence(o)) { /* the shape is read off the first element at each depth */
    Py_ssize_t n = PySequence_Size(o);
    if (g.ndim == VKT_MAX_DIMS)
      PyErr_Format(PyExc_ValueError, "nested sequences deeper than %d dimensions", VKT_MAX_DIMS);
    if (n < 0 || g.ndim == VKT_MAX_DIMS) {
      Py_DECREF(o);
      return -1;
    }
    g.shape[g.ndim++] = n;
    numel *= n;
    PyObject *first = n > 0 ? PySequence_GetItem(o, 0) : NULL;
    Py_DECREF(o);
    o = first;
  }
  Py_XDECREF(o);
  if (PyErr_Occurred())
    return -1;
  g.dtype = numel == 0 ? vkt_default_float() : (vkt_dtype)-1;
  g.values = PyMem_Calloc((size_t)(numel ? numel : 1), sizeof *g.values);
  if (!g.values) {
    PyErr_NoMemory();
    return -1;
  }
  int rc = gather(data, 0, &g);
  if (rc == 0) {
    if (!dtype_given)
      *dtype = g.dtype;
    vkt_tensor h;
    vkt_status st = VKT_OK;
    for (int64_t i = 0; i < numel && !st; i++) /* torch checks each number, before anything is made */
      st = vkt_data_check(*dtype, g.values[i]);
    if (!st && !(st = vkt_tensor_empty(&h, VKT_CPU, *dtype, g.ndim, g.shape))) {
      char *p = (char *)h.storage->host;
      for (int64_t i = 0; i < numel; i++)
        vkt_scalar_store(*dtype, g.values[i], p + i * vkt_dtype_size(*dtype));
      st = vkt_to(out, &h, device, *dtype);
      vkt_tensor_release(&h);
    }
    rc = st ? (vkt_raise(st), -1) : 0;
  }
  PyMem_Free(g.values);
  return rc;
}

int vkt_from_data(PyObject *data, PyObject *dtype_o, int device, vkt_tensor *out) {
  vkt_dtype dtype = vkt_default_float();
  bool given;
  if (vkt_parse_dtype(dtype_o, &dtype, &given) < 0)
    return -1;
  if (vkt_is_tensor(data)) {
    vkt_tensor *src = &((vkt_py_tensor *)data)->v.t;
    vkt_status st = vkt_tensor_empty(out, device, given ? dtype : src->dtype, src->ndim, src->shape);
    if (!st && (st = vkt_copy_(out, src)))
      vkt_tensor_release(out);
    return st ? (vkt_raise(st), -1) : 0;
  }
  if (reject_numpy_dtype(data) < 0)
    return -1;
  if (PyUnicode_Check(data)) {
    PyErr_Format(PyExc_TypeError, "new(): invalid data type 'str'");
    return -1;
  }
  if (PyObject_CheckBuffer(data))
    return from_buffer(data, &dtype, given, device, out);
  return from_sequence(data, &dtype, given, device, out);
}

/* ---- sharing memory: from_numpy and from_dlpack ---- */

static void release_buffer(void *owner) {
  PyGILState_STATE g = PyGILState_Ensure();
  PyBuffer_Release(owner);
  free(owner);
  PyGILState_Release(g);
}

PyObject *vkt_py_from_numpy(PyObject *self, PyObject *arr) {
  (void)self;
  vkt_dtype dtype;
  vkt_tensor t;
  if (reject_numpy_dtype(arr) < 0)
    return NULL;
  Py_buffer *b = malloc(sizeof *b);
  if (!b)
    return PyErr_NoMemory();
  if (PyObject_GetBuffer(arr, b, PyBUF_RECORDS) < 0 &&
      (PyErr_Clear(), PyObject_GetBuffer(arr, b, PyBUF_RECORDS_RO) < 0)) {
    free(b);
    return NULL;
  }
  vkt_storage tmp = {.refcount = 1, .device = VKT_CPU};
  if (format_dtype(b, &dtype) < 0 || buffer_view(b, dtype, &tmp, &t) < 0)
    goto fail;
  for (int i = 0; i < b->ndim; i++)
    if (t.strides[i] < 0) {
      PyErr_SetString(PyExc_ValueError, "At least one stride in the given numpy array is negative, and tensors with "
                                        "negative strides are not currently supported. (You can probably work "
                                        "around this by making a copy of your array  with array.copy().) ");
      goto fail;
    }
  vkt_status st = vkt_storage_borrow(tmp.host, tmp.nbytes, b, release_buffer, &t.storage);
  if (st) {
    vkt_raise(st);
    goto fail;
  }
  return vkt_wrap(&t);
fail:
  PyBuffer_Release(b);
  free(b);
  return NULL;
}

static void release_dlpack(void *owner) {
  DLManagedTensor *m = owner;
  if (m->deleter)
    m->deleter(m);
}

static int dl_dtype(DLDataType t, vkt_dtype *out) {
  static const struct {
    uint8_t code, bits;
    vkt_dtype dtype;
  } map[] = {{DL_FLOAT, 32, VKT_FLOAT32}, {DL_FLOAT, 64, VKT_FLOAT64}, {DL_FLOAT, 16, VKT_FLOAT16},
             {DL_INT, 32, VKT_INT32},     {DL_INT, 64, VKT_INT64},     {DL_UINT, 8, VKT_UINT8},
             {DL_BOOL, 8, VKT_BOOL}};
  for (size_t i = 0; i < sizeof map / sizeof *map; i++)
    if (map[i].code == t.code && map[i].bits == t.bits && t.lanes == 1) {
      *out = map[i].dtype;
      return 0;
    }
  PyErr_Format(PyExc_TypeError, "from_dlpack: unsupported DLPack dtype (code %d, %d bits, %d lanes). %s", t.code,
               t.bits, t.lanes, supported);
  return -1;
}

PyObject *vkt_py_from_dlpack(PyObject *self, PyObject *obj) {
  (void)self;
  PyObject *capsule;
  if (PyCapsule_CheckExact(obj)) {
    capsule = obj;
    Py_INCREF(capsule);
  } else {
    PyObject *dev = PyObject_CallMethod(obj, "__dlpack_device__", NULL);
    if (!dev)
      return NULL;
    long type = PyLong_AsLong(PyTuple_GetItem(dev, 0));
    Py_DECREF(dev);
    if (type != DL_CPU) {
      if (!PyErr_Occurred())
        PyErr_Format(PyExc_RuntimeError, "from_dlpack: only CPU tensors can be imported (DLPack device type %ld)",
                     type);
      return NULL;
    }
    capsule = PyObject_CallMethod(obj, "__dlpack__", NULL);
    if (!capsule)
      return NULL;
  }
  DLManagedTensor *m = PyCapsule_GetPointer(capsule, "dltensor");
  vkt_tensor t = {0};
  vkt_dtype dtype;
  if (!m || dl_dtype(m->dl_tensor.dtype, &dtype) < 0)
    goto fail;
  DLTensor *d = &m->dl_tensor;
  if (d->device.device_type != DL_CPU || d->ndim > VKT_MAX_DIMS) {
    PyErr_Format(PyExc_RuntimeError, "from_dlpack: only CPU tensors of at most %d dimensions can be imported",
                 VKT_MAX_DIMS);
    goto fail;
  }
  t.dtype = dtype;
  t.ndim = d->ndim;
  int64_t lo = 0, hi = 1, expected = 1;
  for (int i = d->ndim - 1; i >= 0; i--) {
    t.shape[i] = d->shape[i];
    t.strides[i] = d->strides ? d->strides[i] : expected;
    expected *= d->shape[i];
    if (d->shape[i] == 0)
      lo = hi = 0;
    else if (t.strides[i] < 0)
      lo += t.strides[i] * (d->shape[i] - 1);
    else
      hi += t.strides[i] * (d->shape[i] - 1);
  }
  int size = vkt_dtype_size(dtype);
  t.offset = -lo;
  char *base = (char *)d->data + d->byte_offset + lo * size;
  vkt_status st = vkt_storage_borrow(base, (uint64_t)(hi - lo) * size, m, release_dlpack, &t.storage);
  if (st) {
    vkt_raise(st);
    goto fail;
  }
  PyCapsule_SetName(capsule, "used_dltensor");
  Py_DECREF(capsule);
  return vkt_wrap(&t);
fail:
  Py_DECREF(capsule);
  return NULL;
}
