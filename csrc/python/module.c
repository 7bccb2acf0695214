/* module.c: the vkt._C extension module: multi-phase init, the status -> exception mapping, tensor
 * creation functions and the device functions behind vkt.vulkan. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ops/fuse.h"
#include "py.h"
#include "amp.h"

PyObject *vkt_raise(vkt_status st) {
  PyObject *type = PyExc_RuntimeError;
  if (st == VKT_ERR_PYTHON && PyErr_Occurred())
    return NULL;
  switch (st) {
  case VKT_ERR_VALUE: type = PyExc_ValueError; break;
  case VKT_ERR_TYPE: type = PyExc_TypeError; break;
  case VKT_ERR_INDEX: type = PyExc_IndexError; break;
  case VKT_ERR_OOM: type = vkt_state->oom_error; break;
  case VKT_ERR_LINALG: type = vkt_state->linalg_error; break;
  case VKT_ERR_NOMEM: type = PyExc_MemoryError; break;
  case VKT_ERR_NOTIMPL: type = PyExc_NotImplementedError; break;
  default: break;
  }
  PyErr_SetString(type, vkt_last_error());
  return NULL;
}

/* ---- creation ---- */

static PyObject *py_tensor(PyObject *self, PyObject *args, PyObject *kwargs) {
  static char *kw[] = {"data", "dtype", "device", "requires_grad", NULL};
  PyObject *data, *dtype = Py_None, *device_o = Py_None, *grad = Py_False;
  vkt_tensor t;
  int device;
  (void)self;
  if (!vkt_parse_args(args, kwargs, "O|$OOO", kw, &data, &dtype, &device_o, &grad) ||
      vkt_creation_device(device_o, &device) < 0)
    return NULL;
  return vkt_from_data(data, dtype, device, &t) < 0 ? NULL : vkt_wrap(&t);
}

/* What pickling a Tensor calls to rebuild it: its values (a NumPy array) on its device. */
static PyObject *py_rebuild_tensor(PyObject *self, PyObject *args) {
  PyObject *array, *device_o;
  vkt_tensor t;
  int device;
  (void)self;
  if (!PyArg_ParseTuple(args, "OO", &array, &device_o) || vkt_parse_device(device_o, &device) < 0)
    return NULL;
  return vkt_from_data(array, Py_None, device, &t) < 0 ? NULL : vkt_wrap(&t);
}

typedef struct {
  int ndim;
  int64_t shape[VKT_MAX_DIMS];
  vkt_dtype dtype;
  bool dtype_given;
  int device;
  const vkt_tensor *like;  /* the *_like functions' input (borrowed), else NULL */
  vkt_memory_format format; /* how a *_like result is laid out: preserve_format unless memory_format= says */
} creation;

/* Parses (*size, dtype=None, device=None) or, with like, (tensor, dtype=None, device=None,
 * memory_format=vkt.preserve_format). */
static int parse_creation(PyObject *args, PyObject *kwargs, bool like, creation *c) {
  PyObject *dtype = NULL, *device = NULL, *format = NULL;
  if (kwargs) {
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(kwargs, &pos, &key, &value)) {
      const char *k = PyUnicode_AsUTF8AndSize(key, NULL);
      if (strcmp(k, "dtype") == 0)
        dtype = value;
      else if (strcmp(k, "device") == 0)
        device = value;
      else if (strcmp(k, "memory_format") == 0 && like)
        format = value;
      else if (strcmp(k, "size") == 0 && !like && PyTuple_Size(args) == 0)
        args = value;
      else if (strcmp(k, "requires_grad") != 0) {
        PyErr_Format(PyExc_TypeError, "got an unexpected keyword argument '%s'", k);
        return -1;
      }
    }
  }
  c->dtype = vkt_default_float();
  if (like) {
    PyObject *t = PyTuple_GetItem(args, 0);
    if (!t || !vkt_is_tensor(t)) {
      PyErr_SetString(PyExc_TypeError, "expected a Tensor as the first argument");
      return -1;
    }
    vkt_tensor *src = &((vkt_py_tensor *)t)->v.t;
    c->ndim = src->ndim;
    memcpy(c->shape, src->shape, sizeof src->shape);
    c->dtype = src->dtype;
    c->device = vkt_tensor_device(src);
    c->like = src;
    if (vkt_parse_memory_format(format, &c->format) < 0)
      return -1;
  } else {
    PyObject *tuple = PyTuple_Check(args) ? Py_NewRef(args) : PyTuple_Pack(1, args);
    int r = tuple ? vkt_parse_shape(tuple, &c->ndim, c->shape) : -1;
    Py_XDECREF(tuple);
    if (r < 0)
      return -1;
    c->like = NULL;
  }
  if (vkt_parse_dtype(dtype, &c->dtype, &c->dtype_given) < 0)
    return -1;
  if (like ? device && device != Py_None && vkt_parse_device(device, &c->device) < 0
           : vkt_creation_device(device, &c->device) < 0)
    return -1;
  return 0;
}

/* The new tensor c describes: row-major, or laid out like c->like by c->format. */
static vkt_status creation_empty(const creation *c, vkt_dtype dtype, vkt_tensor *t) {
  return c->like ? vkt_tensor_empty_like(t, c->like, c->device, dtype, c->format)
                 : vkt_tensor_empty(t, c->device, dtype, c->ndim, c->shape);
}

static PyObject *create(PyObject *args, PyObject *kwargs, bool like, const vkt_scalar *fill, int random) {
  creation c;
  vkt_tensor t = {0};
  if (parse_creation(args, kwargs, like, &c) < 0)
    return NULL;
  if (random && !vkt_dtypes[c.dtype].is_float)
    return vkt_raise(vkt_fail(VKT_ERR_NOTIMPL, "\"%s\" not implemented for '%s'",
                              random == 1 ? "check_uniform_bounds" : "normal_kernel_cpu",
                              vkt_dtypes[c.dtype].torch_name));
  vkt_status st = creation_empty(&c, c.dtype, &t);
  if (!st && fill)
    st = vkt_fill_(&t, *fill);
  if (!st && random)
    st = vkt_random_(&t, random == 2);
  if (st) {
    vkt_tensor_release(&t);
    return vkt_raise(st);
  }
  return vkt_wrap(&t);
}

static const vkt_scalar zero = {false, 0, 0}, one = {false, 0, 1};

#define CREATION(name, like, fill, random)                                                                             \
  static PyObject *name(PyObject *self, PyObject *args, PyObject *kwargs) {                                            \
    (void)self;                                                                                                        \
    return create(args, kwargs, like, fill, random);                                                                   \
  }
CREATION(py_empty, false, NULL, 0)
CREATION(py_zeros, false, &zero, 0)
CREATION(py_ones, false, &one, 0)
CREATION(py_rand, false, NULL, 1)
CREATION(py_randn, false, NULL, 2)
CREATION(py_empty_like, true, NULL, 0)
CREATION(py_zeros_like, true, &zero, 0)
CREATION(py_ones_like, true, &one, 0)
CREATION(py_rand_like, true, NULL, 1)
CREATION(py_randn_like, true, NULL, 2)

static int number(PyObject *o, vkt_scalar *v, vkt_dtype *inferred) {
  if (PyBool_Check(o)) {
    *v = (vkt_scalar){false, 0, o == Py_True}, *inferred = VKT_BOOL;
  } else if (PyLong_Check(o) || (PyIndex_Check(o) && !vkt_is_tensor(o))) { /* NumPy's integers are ints too */
    *inferred = VKT_INT64;
    return vkt_py_scalar(o, v);
  } else if (vkt_is_tensor(o) && vkt_tensor_numel(&((vkt_py_tensor *)o)->v.t) == 1) {
    char bytes[8];
    vkt_tensor *t = &((vkt_py_tensor *)o)->v.t;
    vkt_status st = vkt_read(t, bytes);
    if (st)
      return vkt_raise(st), -1;
    *v = vkt_scalar_load(t->dtype, bytes), *inferred = t->dtype;
  } else {
    double f = PyFloat_AsDouble(o);
    if (f == -1.0 && PyErr_Occurred()) {
      PyErr_Format(PyExc_TypeError, "expected a number, got %R", o);
      return -1;
    }
    *v = (vkt_scalar){true, f, 0}, *inferred = vkt_default_float();
  }
  return PyErr_Occurred() ? -1 : 0;
}

/* full(size, fill_value, dtype=None, device=None) and full_like(t, fill_value, ...) */
static PyObject *full(PyObject *args, PyObject *kwargs, bool like) {
  PyObject *value = NULL, *rest;
  vkt_scalar v;
  vkt_dtype inferred;
  if (kwargs && (value = PyDict_GetItemString(kwargs, "fill_value"))) {
    Py_INCREF(value);
    PyDict_DelItemString(kwargs, "fill_value");
    rest = Py_NewRef(args);
  } else if (PyTuple_Size(args) == 2) {
    value = Py_NewRef(PyTuple_GetItem(args, 1));
    rest = PyTuple_GetSlice(args, 0, 1);
  } else {
    PyErr_SetString(PyExc_TypeError,
                    like ? "full_like(input, fill_value, *, dtype=None, device=None, memory_format=preserve_format)"
                         : "full(size, fill_value, *, dtype=None, device=None)");
    return NULL;
  }
  creation c;
  PyObject *r = NULL;
  if (rest && number(value, &v, &inferred) == 0 && parse_creation(rest, kwargs, like, &c) == 0) {
    vkt_tensor t;
    vkt_status st = creation_empty(&c, c.dtype_given || like ? c.dtype : inferred, &t);
    if (!st && ((st = vkt_fill_check(t.dtype, vkt_tensor_numel(&t), v)) || (st = vkt_fill_(&t, v))))
      vkt_tensor_release(&t);
    r = st ? vkt_raise(st) : vkt_wrap(&t);
  }
  Py_XDECREF(rest);
  Py_DECREF(value);
  return r;
}

static PyObject *py_full(PyObject *self, PyObject *args, PyObject *kwargs) {
  (void)self;
  return full(args, kwargs, false);
}

static PyObject *py_full_like(PyObject *self, PyObject *args, PyObject *kwargs) {
  (void)self;
  return full(args, kwargs, true);
}

static PyObject *py_arange(PyObject *self, PyObject *args, PyObject *kwargs) {
  static char *kw[] = {"start", "end", "step", "dtype", "device", "requires_grad", NULL};
  PyObject *a = NULL, *b = Py_None, *s = NULL, *dtype_o = Py_None, *device_o = Py_None, *grad = NULL;
  (void)self;
  if (!vkt_parse_args(args, kwargs, "O|OO$OOO", kw, &a, &b, &s, &dtype_o, &device_o, &grad))
    return NULL;
  vkt_scalar start = {false, 0, 0}, end, step = {false, 0, 1};
  vkt_dtype k1 = VKT_INT64, k2, k3 = VKT_INT64, dtype;
  bool given;
  int device;
  if (b == Py_None) {
    if (number(a, &end, &k2) < 0)
      return NULL;
  } else if (number(a, &start, &k1) < 0 || number(b, &end, &k2) < 0) {
    return NULL;
  }
  if (s && number(s, &step, &k3) < 0)
    return NULL;
  if (vkt_parse_dtype(dtype_o, &dtype, &given) < 0 || vkt_creation_device(device_o, &device) < 0)
    return NULL;
  if (!given)
    dtype = start.is_float || end.is_float || step.is_float ? vkt_default_float() : VKT_INT64;
  vkt_tensor t;
  vkt_status st = vkt_arange(&t, device, dtype, start, end, step);
  return st ? vkt_raise(st) : vkt_wrap(&t);
}

/* set_default_dtype(d) with PyTorch's errors: only a float dtype may be the default. */
static PyObject *py_set_default_dtype(PyObject *self, PyObject *d) {
  (void)self;
  if (!PyObject_TypeCheck(d, (PyTypeObject *)vkt_state->dtype_type))
    return PyErr_Format(PyExc_TypeError, "invalid dtype object: only floating-point types are supported as the "
                                         "default type");
  vkt_dtype dtype = ((vkt_py_dtype *)d)->dtype;
  if (!vkt_dtypes[dtype].is_float)
    return PyErr_Format(PyExc_TypeError, "only floating-point types are supported as the default type");
  vkt_set_default_float(dtype);
  Py_RETURN_NONE;
}

static PyObject *py_get_default_dtype(PyObject *self, PyObject *unused) {
  (void)self, (void)unused;
  return Py_NewRef(vkt_state->dtypes[vkt_default_float()]);
}

static PyObject *py_manual_seed(PyObject *self, PyObject *seed) {
  (void)self;
  unsigned long long s = PyLong_AsUnsignedLongLongMask(seed);
  if (PyErr_Occurred())
    return NULL;
  vkt_manual_seed(s);
  Py_RETURN_NONE;
}

/* set(truth of flag): the flags a module function turns on and off */
static PyObject *set_flag(PyObject *flag, void (*set)(bool)) {
  int b = PyObject_IsTrue(flag);
  if (b < 0)
    return NULL;
  set(b);
  Py_RETURN_NONE;
}

static PyObject *py_set_deterministic(PyObject *self, PyObject *on) {
  (void)self;
  return set_flag(on, vkt_set_deterministic);
}

/* The random-stream functions' arguments: (first, device=None) or (device=None); cpu where device is None. */
static int rng_args(PyObject *args, PyObject **first, int *device) {
  PyObject *device_o = Py_None;
  if (first ? !PyArg_ParseTuple(args, "O|O", first, &device_o) : !PyArg_ParseTuple(args, "|O", &device_o))
    return -1;
  return vkt_parse_device(device_o, device);
}

static PyObject *py_rng_state(PyObject *self, PyObject *args) {
  (void)self;
  uint64_t state[VKT_RNG_STATE_WORDS];
  int device;
  if (rng_args(args, NULL, &device) < 0)
    return NULL;
  vkt_rng_get(device, state);
  return PyBytes_FromStringAndSize((const char *)state, sizeof state);
}

static PyObject *py_set_rng_state(PyObject *self, PyObject *args) {
  (void)self;
  uint64_t state[VKT_RNG_STATE_WORDS];
  PyObject *bytes;
  char *data;
  Py_ssize_t n;
  int device;
  if (rng_args(args, &bytes, &device) < 0 || PyBytes_AsStringAndSize(bytes, &data, &n) < 0)
    return NULL;
  if (n != (Py_ssize_t)sizeof state)
    return PyErr_Format(PyExc_RuntimeError, "Expected an RNG state of size %d but found the input RNG state size to "
                        "be %zd", (int)sizeof state, n);
  memcpy(state, data, sizeof state);
  vkt_rng_set(device, state);
  Py_RETURN_NONE;
}

/* _rng_seed(seed, device=None): seeds one device's stream, as torch.cuda.manual_seed. */
static PyObject *py_rng_seed(PyObject *self, PyObject *args) {
  (void)self;
  PyObject *seed;
  int device;
  if (rng_args(args, &seed, &device) < 0)
    return NULL;
  unsigned long long s = PyLong_AsUnsignedLongLongMask(seed);
  if (PyErr_Occurred())
    return NULL;
  vkt_rng_seed(device, s);
  Py_RETURN_NONE;
}

static PyObject *py_rng_initial_seed(PyObject *self, PyObject *args) {
  (void)self;
  int device;
  if (rng_args(args, NULL, &device) < 0)
    return NULL;
  return PyLong_FromUnsignedLongLong(vkt_rng_initial_seed(device));
}

static PyObject *py_rng_forbid(PyObject *self, PyObject *flag) {
  (void)self;
  return set_flag(flag, vkt_rng_forbid);
}

/* ---- devices: the functions behind vkt.vulkan ---- */

static PyObject *py_is_available(PyObject *self, PyObject *unused) {
  (void)self, (void)unused;
  return PyBool_FromLong(vkt_runtime_available());
}

static PyObject *py_unavailable_reason(PyObject *self, PyObject *unused) {
  (void)self, (void)unused;
  return PyUnicode_FromString(vkt_runtime_why());
}

static PyObject *py_device_count(PyObject *self, PyObject *unused) {
  (void)self, (void)unused;
  return PyLong_FromLong(vkt_adapter_count());
}

static int adapter_arg(PyObject *o, int *index) {
  if (!o || o == Py_None)
    return vkt_resolve_device(VKT_NO_INDEX, index);
  if (vkt_parse_device(o, index) < 0)
    return -1;
  if (*index == VKT_CPU) {
    PyErr_SetString(PyExc_ValueError, "expected a Vulkan device, got cpu");
    return -1;
  }
  return 0;
}

static PyObject *py_device_properties(PyObject *self, PyObject *args) {
  PyObject *o = NULL;
  int i;
  (void)self;
  if (!PyArg_ParseTuple(args, "|O", &o) || adapter_arg(o, &i) < 0)
    return NULL;
  const vkt_adapter_props *p = vkt_adapter_get(i);
  char api[32];
  snprintf(api, sizeof api, "%u.%u.%u", p->api_version >> 22, (p->api_version >> 12) & 0x3ff, p->api_version & 0xfff);
  return Py_BuildValue(
      "{s:s,s:s,s:s,s:s,s:I,s:I,s:K,s:I,s:K,s:I,s:O,s:O,s:z,s:O,s:O,s:O,s:O,s:O,s:O,s:O,s:O,s:O}", "name", p->name, "type",
      vkt_adapter_type_names[p->type], "api_version", api, "driver", p->driver, "vendor_id", p->vendor_id, "device_id",
      p->device_id, "total_memory", (unsigned long long)p->device_local_bytes, "subgroup_size", p->subgroup_size,
      "max_storage_buffer_range", (unsigned long long)p->max_storage_buffer_range, "max_shared_memory",
      p->max_shared_memory, "cooperative_matrix", p->cooperative_matrix ? Py_True : Py_False,
      "cooperative_matrix_float16", p->coop_f16 ? Py_True : Py_False, "cooperative_matrix_extension",
      !p->coop_f16  ? NULL
      : p->coop_khr ? "VK_KHR_cooperative_matrix"
                    : "VK_NV_cooperative_matrix",
      "cooperative_matrix2", p->coop2 ? Py_True : Py_False, "shader_float64", p->float64 ? Py_True : Py_False,
      "shader_int64", p->int64 ? Py_True : Py_False, "shader_float16", p->float16 ? Py_True : Py_False, "storage_8bit",
      p->int8_storage ? Py_True : Py_False, "push_descriptor", p->push_descriptor ? Py_True : Py_False,
      "float32_atomic_add", p->float32_atomic_add ? Py_True : Py_False, "int64_atomics",
      p->int64_atomics ? Py_True : Py_False, "float_controls", p->preserve_f32 ? Py_True : Py_False);
}

static PyObject *py_current_device(PyObject *self, PyObject *unused) {
  int i;
  (void)self, (void)unused;
  return adapter_arg(NULL, &i) < 0 ? NULL : PyLong_FromLong(i);
}

static PyObject *py_set_device(PyObject *self, PyObject *o) {
  int i;
  (void)self;
  if (adapter_arg(o, &i) < 0)
    return NULL;
  vkt_status st = vkt_set_default_adapter(i);
  if (st)
    return vkt_raise(st);
  Py_RETURN_NONE;
}

static PyObject *py_choice_reason(PyObject *self, PyObject *unused) {
  (void)self, (void)unused;
  return PyUnicode_FromString(vkt_adapter_choice_reason());
}

static PyObject *py_cache_dir(PyObject *self, PyObject *unused) {
  (void)self, (void)unused;
  return PyUnicode_FromString(vkt_cache_dir());
}

/* The device an allocator or stream function is about (the current adapter by default), created on
 * first use; NULL with an exception set. */
static vkt_device *device_arg(PyObject *args) {
  PyObject *o = NULL;
  int i;
  vkt_device *dev = NULL;
  if (!PyArg_ParseTuple(args, "|O", &o) || adapter_arg(o, &i) < 0)
    return NULL;
  vkt_status st = vkt_device_get(i, &dev);
  return st ? (vkt_raise(st), NULL) : dev;
}

static PyObject *py_synchronize(PyObject *self, PyObject *args) {
  (void)self;
  vkt_device *dev = device_arg(args);
  if (!dev)
    return NULL;
  vkt_status st = vkt_fuse_flush();
  if (st || (st = vkt_stream_synchronize(dev)))
    return vkt_raise(st);
  Py_RETURN_NONE;
}

/* Submits what the device has recorded without waiting for it: the DataLoader hands the GPU the step
 * recorded so far before it makes the next batch on the host. */
static PyObject *py_flush(PyObject *self, PyObject *args) {
  (void)self;
  vkt_device *dev = device_arg(args);
  if (!dev)
    return NULL;
  vkt_status st = vkt_fuse_flush();
  if (st || (st = vkt_stream_flush(dev)))
    return vkt_raise(st);
  Py_RETURN_NONE;
}

static PyObject *py_stream_state(PyObject *self, PyObject *args) {
  (void)self;
  vkt_device *dev = device_arg(args);
  if (!dev)
    return NULL;
  bool recording = vkt_stream_is_recording(dev), idle = vkt_stream_idle(dev);
  return Py_BuildValue("(OO)", recording ? Py_True : Py_False, idle ? Py_True : Py_False);
}

static PyObject *py_barriers(PyObject *self, PyObject *args) {
  (void)self;
  vkt_device *dev = device_arg(args);
  return dev ? PyLong_FromUnsignedLongLong(vkt_stream_barriers(dev)) : NULL;
}

static PyObject *py_set_fusion(PyObject *self, PyObject *on) {
  (void)self;
  int b = PyObject_IsTrue(on);
  if (b < 0)
    return NULL;
  vkt_status st = vkt_fuse_set_enabled(b);
  if (st)
    return vkt_raise(st);
  Py_RETURN_NONE;
}

static PyObject *py_fusion_enabled(PyObject *self, PyObject *args) {
  (void)self, (void)args;
  return PyBool_FromLong(vkt_fuse_enabled());
}

/* (the device's index, dispatches it recorded, fused launches, [(op list, launches) per fused kernel]) */
static PyObject *py_kernel_stats(PyObject *self, PyObject *args) {
  (void)self;
  vkt_device *dev = device_arg(args);
  if (!dev)
    return NULL;
  PyObject *kernels = PyList_New(0);
  for (int i = 0; kernels && i < vkt_fuse_kernel_count(); i++) {
    const vkt_fuse_kernel_stat *k = vkt_fuse_kernel(i);
    PyObject *row = Py_BuildValue("(sK)", k->ops, (unsigned long long)k->launches);
    if (!row || PyList_Append(kernels, row) < 0)
      Py_CLEAR(kernels);
    Py_XDECREF(row);
  }
  if (!kernels)
    return NULL;
  return Py_BuildValue("(iKKN)", vkt_device_index(dev), (unsigned long long)vkt_stream_dispatched(dev),
                       (unsigned long long)vkt_fuse_launches(), kernels);
}

static PyObject *py_reset_kernel_stats(PyObject *self, PyObject *args) {
  (void)self, (void)args;
  vkt_fuse_reset_stats();
  Py_RETURN_NONE;
}

static PyObject *py_memory_stats(PyObject *self, PyObject *args) {
  (void)self;
  vkt_device *dev = device_arg(args);
  if (!dev)
    return NULL;
  vkt_mem_stats s;
  vkt_mem_stats_get(dev, &s);
  return Py_BuildValue("{s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K}", "allocated_bytes.all.current",
                       (unsigned long long)s.allocated, "allocated_bytes.all.peak",
                       (unsigned long long)s.allocated_peak, "reserved_bytes.all.current",
                       (unsigned long long)s.reserved, "reserved_bytes.all.peak", (unsigned long long)s.reserved_peak,
                       "allocation.all.allocated", (unsigned long long)s.alloc_count, "allocation.all.freed",
                       (unsigned long long)s.free_count, "num_alloc_retries", (unsigned long long)s.retries, "num_ooms",
                       (unsigned long long)s.ooms, "segment.all.current", (unsigned long long)s.blocks, "limit_bytes",
                       (unsigned long long)vkt_mem_limit(dev));
}

static PyObject *py_empty_cache(PyObject *self, PyObject *args) {
  (void)self;
  vkt_device *dev = device_arg(args);
  if (!dev)
    return NULL;
  vkt_status st = vkt_mem_empty_cache(dev);
  if (st)
    return vkt_raise(st);
  Py_RETURN_NONE;
}

static PyObject *py_reset_peak(PyObject *self, PyObject *args) {
  (void)self;
  vkt_device *dev = device_arg(args);
  if (!dev)
    return NULL;
  vkt_mem_reset_peak(dev);
  Py_RETURN_NONE;
}

static PyObject *py_set_memory_limit(PyObject *self, PyObject *args) {
  PyObject *limit, *o = NULL;
  int i;
  vkt_device *dev;
  (void)self;
  if (!PyArg_ParseTuple(args, "O|O", &limit, &o) || adapter_arg(o, &i) < 0)
    return NULL;
  unsigned long long bytes = limit == Py_None ? 0 : PyLong_AsUnsignedLongLong(limit);
  if (PyErr_Occurred())
    return NULL;
  vkt_status st = vkt_device_get(i, &dev);
  if (!st)
    st = vkt_mem_set_limit(dev, bytes);
  if (st)
    return vkt_raise(st);
  Py_RETURN_NONE;
}

static PyObject *py_validation_messages(PyObject *self, PyObject *unused) {
  (void)self, (void)unused;
  int n = vkt_validation_count();
  PyObject *list = PyList_New(n);
  for (int i = 0; list && i < n; i++)
    PyList_SetItem(list, i, PyUnicode_FromString(vkt_validation_message(i)));
  vkt_validation_drop(n);
  return list;
}

static PyObject *py_validation_enabled(PyObject *self, PyObject *unused) {
  (void)self, (void)unused;
  vkt_runtime_init();
  return PyBool_FromLong(vkt_validation_enabled());
}

static PyObject *py_fallback_stats(PyObject *self, PyObject *args) {
  int by_reason = 0;
  (void)self;
  if (!PyArg_ParseTuple(args, "|p", &by_reason))
    return NULL;
  PyObject *d = PyDict_New();
  for (int i = 0; d && i < vkt_fallback_count(); i++) {
    const char *op, *reason;
    uint64_t count;
    vkt_fallback_get(i, &op, &reason, &count);
    PyObject *key = by_reason ? Py_BuildValue("(ss)", op, reason) : PyUnicode_FromString(op);
    PyObject *old = key ? PyDict_GetItemWithError(d, key) : NULL;
    PyObject *v = key && !PyErr_Occurred()
                      ? PyLong_FromUnsignedLongLong(count + (old ? PyLong_AsUnsignedLongLong(old) : 0))
                      : NULL;
    int r = v ? PyDict_SetItem(d, key, v) : -1;
    Py_XDECREF(key);
    Py_XDECREF(v);
    if (r < 0) {
      Py_DECREF(d);
      return NULL;
    }
  }
  return d;
}

static PyObject *py_reset_fallback_stats(PyObject *self, PyObject *unused) {
  (void)self, (void)unused;
  vkt_fallback_reset();
  Py_RETURN_NONE;
}

static PyObject *py_rank_adapters(PyObject *self, PyObject *list) {
  (void)self;
  vkt_adapter_type types[64];
  uint64_t local[64];
  int order[64];
  Py_ssize_t n = PySequence_Size(list);
  if (n < 0 || n > 64) {
    if (!PyErr_Occurred())
      PyErr_SetString(PyExc_ValueError, "at most 64 adapters");
    return NULL;
  }
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *item = PySequence_GetItem(list, i);
    const char *type;
    unsigned long long bytes;
    int ok = item && PyArg_ParseTuple(item, "sK", &type, &bytes);
    Py_XDECREF(item);
    if (!ok)
      return NULL;
    types[i] = VKT_ADAPTER_OTHER;
    for (int t = 0; t < VKT_ADAPTER_TYPE_COUNT; t++)
      if (strcmp(type, vkt_adapter_type_names[t]) == 0)
        types[i] = (vkt_adapter_type)t;
    local[i] = bytes;
  }
  vkt_adapters_rank(types, local, (int)n, order);
  PyObject *r = PyList_New(n);
  for (Py_ssize_t i = 0; r && i < n; i++)
    PyList_SetItem(r, i, PyLong_FromLong(order[i]));
  return r;
}

static PyObject *py_shader_spirv(PyObject *self, PyObject *args) {
  const char *shader, *defines;
  int khr;
  uint32_t *words;
  size_t n;
  (void)self;
  if (!PyArg_ParseTuple(args, "ssp", &shader, &defines, &khr))
    return NULL;
  vkt_status st = vkt_shader_spirv(shader, defines, khr, &words, &n);
  if (st)
    return vkt_raise(st);
  PyObject *r = PyBytes_FromStringAndSize((const char *)words, (Py_ssize_t)(n * 4));
  free(words);
  return r;
}

static PyObject *py_compiler_has_coop2(PyObject *self, PyObject *unused) {
  (void)self, (void)unused;
  return PyBool_FromLong(vkt_compiler_has_coop2());
}

static PyObject *py_shutdown(PyObject *self, PyObject *unused) {
  (void)self, (void)unused;
  vkt_runtime_shutdown();
  Py_RETURN_NONE;
}

#define KW (PyCFunction)(void (*)(void))
static PyMethodDef module_methods[] = {
    {"tensor", KW py_tensor, METH_VARARGS | METH_KEYWORDS, "tensor(data, *, dtype=None, device=None): a copy of data"},
    {"_rebuild_tensor", py_rebuild_tensor, METH_VARARGS, "_rebuild_tensor(array, device): unpickles a Tensor"},
    {"from_numpy", vkt_py_from_numpy, METH_O, "from_numpy(array): a cpu tensor sharing the array's memory"},
    {"from_dlpack", vkt_py_from_dlpack, METH_O, "from_dlpack(obj): a cpu tensor sharing a DLPack producer's memory"},
    {"empty", KW py_empty, METH_VARARGS | METH_KEYWORDS, "empty(*size, dtype=None, device=None)"},
    {"zeros", KW py_zeros, METH_VARARGS | METH_KEYWORDS, "zeros(*size, dtype=None, device=None)"},
    {"ones", KW py_ones, METH_VARARGS | METH_KEYWORDS, "ones(*size, dtype=None, device=None)"},
    {"full", KW py_full, METH_VARARGS | METH_KEYWORDS, "full(size, fill_value, dtype=None, device=None)"},
    {"rand", KW py_rand, METH_VARARGS | METH_KEYWORDS, "rand(*size, dtype=None, device=None): uniform in [0, 1)"},
    {"randn", KW py_randn, METH_VARARGS | METH_KEYWORDS, "randn(*size, dtype=None, device=None): standard normal"},
    {"empty_like", KW py_empty_like, METH_VARARGS | METH_KEYWORDS,
     "empty_like(t, dtype=None, device=None, memory_format=preserve_format)"},
    {"zeros_like", KW py_zeros_like, METH_VARARGS | METH_KEYWORDS,
     "zeros_like(t, dtype=None, device=None, memory_format=preserve_format)"},
    {"ones_like", KW py_ones_like, METH_VARARGS | METH_KEYWORDS,
     "ones_like(t, dtype=None, device=None, memory_format=preserve_format)"},
    {"full_like", KW py_full_like, METH_VARARGS | METH_KEYWORDS,
     "full_like(t, fill_value, dtype=None, device=None, memory_format=preserve_format)"},
    {"rand_like", KW py_rand_like, METH_VARARGS | METH_KEYWORDS,
     "rand_like(t, dtype=None, device=None, memory_format=preserve_format)"},
    {"randn_like", KW py_randn_like, METH_VARARGS | METH_KEYWORDS,
     "randn_like(t, dtype=None, device=None, memory_format=preserve_format)"},
    {"arange", KW py_arange, METH_VARARGS | METH_KEYWORDS, "arange(start=0, end, step=1, dtype=None, device=None)"},
    {"manual_seed", py_manual_seed, METH_O, "manual_seed(seed): seeds rand and randn on every device"},
    {"_set_deterministic", py_set_deterministic, METH_O,
     "_set_deterministic(flag): whether the combining scatters take the sorted path (use_deterministic_algorithms)"},
    {"_set_default_dtype", py_set_default_dtype, METH_O, "_set_default_dtype(d): the float dtype factories make"},
    {"_get_default_dtype", py_get_default_dtype, METH_NOARGS, "the float dtype factories make"},
    {"_rng_state", py_rng_state, METH_VARARGS, "_rng_state(device=None): the state of a device's stream, as bytes"},
    {"_set_rng_state", py_set_rng_state, METH_VARARGS,
     "_set_rng_state(bytes, device=None): puts back a state _rng_state gave"},
    {"_set_default_device", vkt_py_set_default_device, METH_O,
     "_set_default_device(device or None): this thread's default device of creation functions (None: cpu)"},
    {"_default_device", vkt_py_default_device, METH_NOARGS, "this thread's default device, with its index"},
    {"_rng_seed", py_rng_seed, METH_VARARGS, "_rng_seed(seed, device=None): seeds one device's stream"},
    {"_rng_initial_seed", py_rng_initial_seed, METH_VARARGS,
     "_rng_initial_seed(device=None): the seed a device's stream was last given"},
    {"_rng_forbid", py_rng_forbid, METH_O, "_rng_forbid(flag): whether this thread's draws raise (vmap's 'error')"},
    {"_is_available", py_is_available, METH_NOARGS, NULL},
    {"_unavailable_reason", py_unavailable_reason, METH_NOARGS, NULL},
    {"_device_count", py_device_count, METH_NOARGS, NULL},
    {"_device_properties", py_device_properties, METH_VARARGS, NULL},
    {"_current_device", py_current_device, METH_NOARGS, NULL},
    {"_set_device", py_set_device, METH_O, NULL},
    {"_choice_reason", py_choice_reason, METH_NOARGS, NULL},
    {"_cache_dir", py_cache_dir, METH_NOARGS, NULL},
    {"_synchronize", py_synchronize, METH_VARARGS, NULL},
    {"_flush", py_flush, METH_VARARGS, NULL},
    {"_memory_stats", py_memory_stats, METH_VARARGS, NULL},
    {"_empty_cache", py_empty_cache, METH_VARARGS, NULL},
    {"_reset_peak_memory_stats", py_reset_peak, METH_VARARGS, NULL},
    {"_set_memory_limit", py_set_memory_limit, METH_VARARGS, NULL},
    {"_validation_messages", py_validation_messages, METH_NOARGS, NULL},
    {"_validation_enabled", py_validation_enabled, METH_NOARGS, NULL},
    {"_fallback_stats", py_fallback_stats, METH_VARARGS, NULL},
    {"_reset_fallback_stats", py_reset_fallback_stats, METH_NOARGS, NULL},
    {"_rank_adapters", py_rank_adapters, METH_O, "adapter indices best first, from (type, device-local bytes) pairs"},
    {"_shader_spirv", py_shader_spirv, METH_VARARGS,
     "SPIR-V of a shader: (name, defines, cooperative-matrix KHR form)"},
    {"_stream_state", py_stream_state, METH_VARARGS,
     "(a batch is being recorded, every batch has finished) of a device"},
    {"_barriers", py_barriers, METH_VARARGS, "the barriers a device's batches have recorded"},
    {"_set_fusion", py_set_fusion, METH_O, "turns the deferral of elementwise ops on or off"},
    {"_fusion_enabled", py_fusion_enabled, METH_NOARGS, NULL},
    {"_kernel_stats", py_kernel_stats, METH_VARARGS,
     "(device index, dispatches it recorded, fused launches, [(op list, launches) of each fused kernel])"},
    {"_reset_kernel_stats", py_reset_kernel_stats, METH_NOARGS, NULL},
    {"_compiler_has_coop2", py_compiler_has_coop2, METH_NOARGS, "whether glslang compiles GL_NV_cooperative_matrix2"},
    {"_shutdown", py_shutdown, METH_NOARGS, "destroys every Vulkan object; vkt is unusable afterwards"},
    {NULL, NULL, 0, NULL},
};

static int add_functions(PyObject *module) {
  PyMethodDef *families[] = {vkt_elementwise_functions, vkt_reduce_functions,   vkt_matmul_functions,
                             vkt_shape_functions,       vkt_cpu_functions,      vkt_elementwise_more_functions,
                             vkt_sort_functions,        vkt_index_functions,    vkt_layout_functions,
                             vkt_creation_functions,    vkt_autograd_functions, vkt_nn_functions,
                             vkt_loss_functions,        vkt_optim_functions,    vkt_kernel_functions,
                             vkt_linalg_functions};
  if (PyModule_AddFunctions(module, vkt_amp_functions) < 0) /* unguarded: autocast's switches are no ops */
    return -1;
  for (size_t i = 0; i < sizeof families / sizeof *families; i++)
    if (vkt_guard_methods(families[i]) < 0 || PyModule_AddFunctions(module, families[i]) < 0)
      return -1;
  return 0;
}

/* VKT_WARN_FALLBACK=1: a Python warning the first time each op takes the CPU path for a reason. */
static void warn_fallback(const char *op, const char *reason) {
  if (getenv("VKT_WARN_FALLBACK") && strcmp(getenv("VKT_WARN_FALLBACK"), "0") != 0 &&
      PyErr_WarnFormat(PyExc_RuntimeWarning, 1, "vkt: %s ran on the CPU: %s", op, reason) < 0)
    PyErr_WriteUnraisable(NULL); /* the op itself goes on; it cannot fail halfway for a warning */
}

/* Waits on the GPU let other Python threads run. */
/* A fused kernel being made keeps the GIL through its waits: another thread would see it half made. */
static void *release_gil(void) { return vkt_fuse_busy() ? NULL : PyEval_SaveThread(); }
static void restore_gil(void *token) {
  if (token)
    PyEval_RestoreThread(token);
}

static int module_exec(PyObject *module) {
  vkt_py_state *state = PyModule_GetState(module);
  vkt_state = state;
  vkt_fallback_set_hook(warn_fallback);
  vkt_set_blocking_hooks(release_gil, restore_gil);
  vkt_cpu_locate_blas();
  if (add_functions(module) < 0)
    return -1;
  state->oom_error = PyErr_NewExceptionWithDoc(
      "vkt.OutOfMemoryError", "Device memory is exhausted (a RuntimeError, like torch's).", PyExc_RuntimeError, NULL);
  /* named as torch's, whose class is torch._C._LinAlgError, so errors compare by type name */
  state->linalg_error = PyErr_NewExceptionWithDoc(
      "vkt._LinAlgError", "A singular or not positive-definite matrix (a RuntimeError, like torch's).",
      PyExc_RuntimeError, NULL);
  if (!state->linalg_error || PyModule_AddObjectRef(module, "_LinAlgError", state->linalg_error) < 0)
    return -1;
  if (!state->oom_error || PyModule_AddObjectRef(module, "OutOfMemoryError", state->oom_error) < 0 ||
      vkt_types_add(module, state) < 0 || vkt_size_type_add(module, state) < 0 ||
      vkt_tensor_type_add(module, state) < 0 || vkt_autograd_add(module) < 0)
    return -1;
  return 0;
}

static int module_traverse(PyObject *module, visitproc visit, void *arg) {
  vkt_py_state *s = PyModule_GetState(module);
  Py_VISIT(s->tensor_type);
  Py_VISIT(s->dtype_type);
  Py_VISIT(s->device_type);
  Py_VISIT(s->format_type);
  Py_VISIT(s->size_type);
  Py_VISIT(s->oom_error);
  Py_VISIT(s->linalg_error);
  Py_VISIT(s->format);
  for (int i = 0; i < VKT_DTYPE_COUNT; i++)
    Py_VISIT(s->dtypes[i]);
  return 0;
}

static int module_clear(PyObject *module) {
  vkt_py_state *s = PyModule_GetState(module);
  Py_CLEAR(s->format);
  Py_CLEAR(s->oom_error);
  Py_CLEAR(s->linalg_error);
  for (int i = 0; i < VKT_DTYPE_COUNT; i++)
    Py_CLEAR(s->dtypes[i]);
  /* The types stay alive while tensors of them exist: vkt_state keeps pointing at live objects. */
  return 0;
}

static PyModuleDef_Slot module_slots[] = {{Py_mod_exec, module_exec}, {0, NULL}};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,          .m_name = "vkt._C",          .m_doc = "vkt's C core: tensors on Vulkan devices.",
    .m_size = sizeof(vkt_py_state), .m_methods = module_methods, .m_slots = module_slots,
    .m_traverse = module_traverse,  .m_clear = module_clear,
};

PyMODINIT_FUNC PyInit__C(void) { return PyModuleDef_Init(&module_def); }
