/* interop.c: tensors out to NumPy and friends: the buffer protocol and DLPack for host tensors,
 * __array__ for every device (a copy from the GPU), and .numpy(). */
#include <stdlib.h>
#include <string.h>

#include "dlpack.h"
#include "py.h"

static const char *const formats[VKT_DTYPE_COUNT] = {
    [VKT_FLOAT32] = "f", [VKT_FLOAT64] = "d", [VKT_FLOAT16] = "e", [VKT_INT32] = "i",
    [VKT_INT64] = "q",   [VKT_UINT8] = "B",   [VKT_BOOL] = "?",
};

static PyObject *not_on_host(const vkt_tensor *t, const char *what) {
  PyErr_Format(PyExc_TypeError,
               "can't convert vulkan:%d device type tensor to %s. Use Tensor.cpu() to copy the tensor to host memory "
               "first.",
               vkt_tensor_device(t), what);
  return NULL;
}

int vkt_tensor_getbuffer(PyObject *self, Py_buffer *view, int flags) {
  vkt_py_tensor *pt = (vkt_py_tensor *)self;
  vkt_tensor *t = &pt->v.t;
  if (vkt_tensor_device(t) != VKT_CPU) {
    PyErr_Format(PyExc_BufferError, "a vulkan:%d tensor has no host buffer; use Tensor.cpu() first",
                 vkt_tensor_device(t));
    return -1;
  }
  if ((flags & PyBUF_ND) != PyBUF_ND || ((flags & PyBUF_STRIDES) != PyBUF_STRIDES && !vkt_tensor_is_contiguous(t))) {
    PyErr_SetString(PyExc_BufferError, "this tensor's buffer needs strides: ask with PyBUF_STRIDES");
    return -1;
  }
  Py_ssize_t *dims = PyMem_Malloc(sizeof *dims * 2 * (size_t)(t->ndim ? t->ndim : 1));
  if (!dims) {
    PyErr_NoMemory();
    return -1;
  }
  int size = vkt_dtype_size(t->dtype);
  for (int i = 0; i < t->ndim; i++) {
    dims[i] = (Py_ssize_t)t->shape[i];
    dims[t->ndim + i] = (Py_ssize_t)(t->strides[i] * size);
  }
  *view = (Py_buffer){.buf = vkt_tensor_host(t),
                      .obj = Py_NewRef(self),
                      .len = (Py_ssize_t)(vkt_tensor_numel(t) * size),
                      .itemsize = size,
                      .readonly = 0,
                      .ndim = t->ndim,
                      .format = (flags & PyBUF_FORMAT) ? (char *)formats[t->dtype] : NULL,
                      .shape = dims,
                      .strides = (flags & PyBUF_STRIDES) ? dims + t->ndim : NULL,
                      .internal = dims};
  pt->exports++;
  return 0;
}

void vkt_tensor_releasebuffer(PyObject *self, Py_buffer *view) {
  PyMem_Free(view->internal);
  ((vkt_py_tensor *)self)->exports--;
}

/* ---- DLPack ---- */

typedef struct {
  DLManagedTensor managed;
  vkt_storage *storage; /* owned reference */
  int64_t shape[VKT_MAX_DIMS], strides[VKT_MAX_DIMS];
} dl_export;

static const DLDataType dl_types[VKT_DTYPE_COUNT] = {
    [VKT_FLOAT32] = {2, 32, 1}, [VKT_FLOAT64] = {2, 64, 1}, [VKT_FLOAT16] = {2, 16, 1}, [VKT_INT32] = {0, 32, 1},
    [VKT_INT64] = {0, 64, 1},   [VKT_UINT8] = {1, 8, 1},    [VKT_BOOL] = {6, 8, 1},
};

/* May run on any thread without the GIL: the storage's release takes it if it must. */
static void dl_delete(DLManagedTensor *m) {
  dl_export *e = m->manager_ctx;
  vkt_storage_decref(e->storage);
  free(e);
}

static void dl_capsule_destructor(PyObject *capsule) {
  if (PyCapsule_IsValid(capsule, "used_dltensor"))
    return;
  DLManagedTensor *m = PyCapsule_GetPointer(capsule, "dltensor");
  if (m)
    m->deleter(m);
  else
    PyErr_Clear();
}

PyObject *vkt_tensor_dlpack(PyObject *self, PyObject *args, PyObject *kwargs) {
  (void)args, (void)kwargs; /* stream, max_version, dl_device, copy: host tensors need none of them */
  vkt_tensor *t = &((vkt_py_tensor *)self)->v.t;
  if (vkt_tensor_device(t) != VKT_CPU) {
    PyErr_Format(PyExc_BufferError, "__dlpack__ exports host tensors only; this one is on vulkan:%d (use .cpu())",
                 vkt_tensor_device(t));
    return NULL;
  }
  dl_export *e = calloc(1, sizeof *e);
  if (!e)
    return PyErr_NoMemory();
  vkt_storage_incref(t->storage);
  e->storage = t->storage;
  for (int i = 0; i < t->ndim; i++)
    e->shape[i] = t->shape[i], e->strides[i] = t->strides[i];
  e->managed = (DLManagedTensor){.dl_tensor = {.data = t->storage->host,
                                               .device = {DL_CPU, 0},
                                               .ndim = t->ndim,
                                               .dtype = dl_types[t->dtype],
                                               .shape = e->shape,
                                               .strides = e->strides,
                                               .byte_offset = (uint64_t)(t->offset * vkt_dtype_size(t->dtype))},
                                 .manager_ctx = e,
                                 .deleter = dl_delete};
  PyObject *capsule = PyCapsule_New(&e->managed, "dltensor", dl_capsule_destructor);
  if (!capsule)
    dl_delete(&e->managed);
  return capsule;
}

PyObject *vkt_tensor_dlpack_device(PyObject *self, PyObject *unused) {
  (void)unused;
  int d = vkt_tensor_device(&((vkt_py_tensor *)self)->v.t);
  return d == VKT_CPU ? Py_BuildValue("(ii)", DL_CPU, 0) : Py_BuildValue("(ii)", DL_VULKAN, d);
}

/* ---- NumPy ---- */

static PyObject *numpy_call(const char *fn, PyObject *args, PyObject *kwargs) {
  PyObject *np = PyImport_ImportModule("numpy");
  if (!np)
    return NULL;
  PyObject *f = PyObject_GetAttrString(np, fn);
  Py_DECREF(np);
  if (!f)
    return NULL;
  PyObject *r = PyObject_Call(f, args, kwargs);
  Py_DECREF(f);
  return r;
}

/* A NumPy array sharing a host tensor's memory. */
static PyObject *shared_array(PyObject *self) {
  PyObject *mv = PyMemoryView_FromObject(self);
  if (!mv)
    return NULL;
  PyObject *args = PyTuple_Pack(1, mv);
  Py_DECREF(mv);
  if (!args)
    return NULL;
  PyObject *arr = numpy_call("asarray", args, NULL);
  Py_DECREF(args);
  return arr;
}

static PyObject *copied_array(vkt_tensor *t) {
  PyObject *shape = PyTuple_New(t->ndim);
  if (!shape)
    return NULL;
  for (int i = 0; i < t->ndim; i++)
    PyTuple_SetItem(shape, i, PyLong_FromLongLong(t->shape[i]));
  PyObject *args = Py_BuildValue("(Os)", shape, vkt_dtypes[t->dtype].np_name);
  Py_DECREF(shape);
  PyObject *arr = args ? numpy_call("empty", args, NULL) : NULL;
  Py_XDECREF(args);
  if (!arr)
    return NULL;
  Py_buffer b;
  if (PyObject_GetBuffer(arr, &b, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0) {
    Py_DECREF(arr);
    return NULL;
  }
  vkt_status st = vkt_read(t, b.buf);
  PyBuffer_Release(&b);
  if (st) {
    Py_DECREF(arr);
    return vkt_raise(st);
  }
  return arr;
}

PyObject *vkt_tensor_array(PyObject *self, PyObject *args, PyObject *kwargs) {
  static char *kw[] = {"dtype", "copy", NULL};
  PyObject *dtype = Py_None, *copy = Py_None;
  if (!vkt_parse_args(args, kwargs, "|OO", kw, &dtype, &copy))
    return NULL;
  vkt_tensor *t = &((vkt_py_tensor *)self)->v.t;
  bool on_host = vkt_tensor_device(t) == VKT_CPU;
  if (copy == Py_False && !on_host) {
    PyErr_SetString(PyExc_ValueError, "a vulkan tensor cannot be viewed as a NumPy array without a copy");
    return NULL;
  }
  PyObject *arr = on_host && copy != Py_True ? shared_array(self) : copied_array(t);
  if (!arr || dtype == Py_None)
    return arr;
  PyObject *r = PyObject_CallMethod(arr, "astype", "O", dtype);
  Py_DECREF(arr);
  return r;
}

PyObject *vkt_tensor_numpy(PyObject *self, PyObject *unused) {
  (void)unused;
  vkt_tensor *t = &((vkt_py_tensor *)self)->v.t;
  if (vkt_tensor_device(t) != VKT_CPU)
    return not_on_host(t, "numpy");
  return shared_array(self);
}
