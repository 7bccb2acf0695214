/* types.c: vkt.dtype, vkt.device and vkt.memory_format, small immutable types that print and compare like
 * PyTorch's, and the default device (per thread) that vkt.device's with-blocks set. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "py.h"

vkt_py_state *vkt_state;

/* ---- dtype ---- */

static PyObject *dtype_repr(PyObject *self) {
  return PyUnicode_FromFormat("vkt.%s", vkt_dtypes[((vkt_py_dtype *)self)->dtype].name);
}

static PyObject *dtype_itemsize(PyObject *self, void *c) {
  (void)c;
  return PyLong_FromLong(vkt_dtype_size(((vkt_py_dtype *)self)->dtype));
}

static PyObject *dtype_is_float(PyObject *self, void *c) {
  (void)c;
  return PyBool_FromLong(vkt_dtypes[((vkt_py_dtype *)self)->dtype].is_float);
}

static PyObject *dtype_numpy(PyObject *self, void *c) {
  (void)c;
  return PyUnicode_FromString(vkt_dtypes[((vkt_py_dtype *)self)->dtype].np_name);
}

/* Pickles as the module attribute of its name: vkt.float32 unpickles to the same object. */
static PyObject *dtype_reduce(PyObject *self, PyObject *unused) {
  (void)unused;
  return PyUnicode_FromString(vkt_dtypes[((vkt_py_dtype *)self)->dtype].name);
}

static PyMethodDef dtype_methods[] = {
    {"__reduce__", dtype_reduce, METH_NOARGS, "pickles as vkt.<name>"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef dtype_getset[] = {
    {"itemsize", dtype_itemsize, NULL, "bytes per element", NULL},
    {"is_floating_point", dtype_is_float, NULL, "whether the dtype is a float type", NULL},
    {"numpy_name", dtype_numpy, NULL, "NumPy's name for the dtype", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot dtype_slots[] = {
    {Py_tp_repr, dtype_repr},
    {Py_tp_getset, dtype_getset},
    {Py_tp_methods, dtype_methods},
    {Py_tp_doc, "A tensor element type, e.g. vkt.float32."},
    {0, NULL},
};

static PyType_Spec dtype_spec = {"vkt.dtype", sizeof(vkt_py_dtype), 0,
                                 Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE | Py_TPFLAGS_DISALLOW_INSTANTIATION,
                                 dtype_slots};

/* ---- device ---- */

static int parse_device_string(const char *s, int *index) {
  if (strcmp(s, "cpu") == 0 || strcmp(s, "cpu:0") == 0) {
    *index = VKT_CPU;
    return 0;
  }
  if (strcmp(s, "vulkan") == 0) {
    *index = VKT_NO_INDEX;
    return 0;
  }
  if (strncmp(s, "vulkan:", 7) == 0 && s[7]) {
    char *end;
    long i = strtol(s + 7, &end, 10);
    if (*end == '\0' && s[7] >= '0' && s[7] <= '9' && i < 1 << 20) {
      *index = (int)i;
      return 0;
    }
    PyErr_Format(PyExc_RuntimeError, "Invalid device string: '%s'", s);
    return -1;
  }
  PyErr_Format(PyExc_RuntimeError, "Expected one of cpu, vulkan device type at start of device string: %s", s);
  return -1;
}

PyObject *vkt_device_new(int index) {
  PyTypeObject *type = (PyTypeObject *)vkt_state->device_type;
  vkt_py_device *d = (vkt_py_device *)PyType_GenericAlloc(type, 0);
  if (d)
    d->index = index;
  return (PyObject *)d;
}

static PyObject *device_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
  static char *kw[] = {"type", "index", NULL};
  PyObject *what, *index = Py_None;
  int i;
  (void)type;
  if (!vkt_parse_args(args, kwargs, "O|O", kw, &what, &index))
    return NULL;
  if (PyObject_TypeCheck(what, (PyTypeObject *)vkt_state->device_type) && index == Py_None) {
    Py_INCREF(what);
    return what;
  }
  if (!PyUnicode_Check(what)) {
    PyErr_Format(PyExc_TypeError, "device() expects a string such as 'vulkan:0', got %R", what);
    return NULL;
  }
  if (parse_device_string(PyUnicode_AsUTF8AndSize(what, NULL), &i) < 0)
    return NULL;
  if (index != Py_None) {
    long n = PyLong_AsLong(index);
    if (n == -1 && PyErr_Occurred())
      return NULL;
    if (i != VKT_NO_INDEX || n < 0) {
      PyErr_Format(PyExc_RuntimeError, "device(%R, %R): type must be 'vulkan' without an index and the index >= 0",
                   what, index);
      return NULL;
    }
    i = (int)n;
  }
  return vkt_device_new(i);
}

static PyObject *device_type_get(PyObject *self, void *c) {
  (void)c;
  return PyUnicode_FromString(((vkt_py_device *)self)->index == VKT_CPU ? "cpu" : "vulkan");
}

static PyObject *device_index_get(PyObject *self, void *c) {
  (void)c;
  int i = ((vkt_py_device *)self)->index;
  if (i < 0)
    Py_RETURN_NONE;
  return PyLong_FromLong(i);
}

static PyObject *device_str(PyObject *self) {
  int i = ((vkt_py_device *)self)->index;
  if (i == VKT_CPU)
    return PyUnicode_FromString("cpu");
  if (i == VKT_NO_INDEX)
    return PyUnicode_FromString("vulkan");
  return PyUnicode_FromFormat("vulkan:%d", i);
}

static PyObject *device_repr(PyObject *self) {
  int i = ((vkt_py_device *)self)->index;
  if (i < 0)
    return PyUnicode_FromFormat("device(type='%s')", i == VKT_CPU ? "cpu" : "vulkan");
  return PyUnicode_FromFormat("device(type='vulkan', index=%d)", i);
}

static PyObject *device_richcompare(PyObject *a, PyObject *b, int op) {
  if (!PyObject_TypeCheck(b, (PyTypeObject *)vkt_state->device_type) || (op != Py_EQ && op != Py_NE))
    Py_RETURN_NOTIMPLEMENTED;
  bool eq = ((vkt_py_device *)a)->index == ((vkt_py_device *)b)->index;
  return PyBool_FromLong(op == Py_EQ ? eq : !eq);
}

static Py_hash_t device_hash(PyObject *self) { return ((vkt_py_device *)self)->index + 1000003; }

static PyObject *device_reduce(PyObject *self, PyObject *unused) {
  (void)unused;
  PyObject *s = device_str(self), *r = s ? Py_BuildValue("(O(O))", (PyObject *)Py_TYPE(self), s) : NULL;
  Py_XDECREF(s);
  return r;
}

/* ---- the default device: where creation functions make tensors when no device= is given. Per thread, as
 * PyTorch's (a TorchFunctionMode there): set_default_device sets it, `with vkt.device(...)` sets it until the block
 * ends. Each thread's saved values for its nested with-blocks are a list in its thread-state dict. */

static _Thread_local int default_device = VKT_CPU; /* a device index, VKT_NO_INDEX for "vulkan" */

int vkt_creation_device(PyObject *o, int *out) {
  return o && o != Py_None ? vkt_parse_device(o, out) : vkt_resolve_device(default_device, out);
}

/* This thread's defaults that its open with-blocks replaced, innermost last (borrowed: its thread-state dict's). */
static PyObject *saved_defaults(void) {
  PyObject *dict = PyThreadState_GetDict(), *list;
  if (!dict)
    return PyErr_Format(PyExc_RuntimeError, "no thread state");
  if ((list = PyDict_GetItemString(dict, "vkt.device")))
    return list;
  list = PyList_New(0);
  int r = list ? PyDict_SetItemString(dict, "vkt.device", list) : -1;
  Py_XDECREF(list); /* the dict holds it */
  return r < 0 ? NULL : list;
}

static PyObject *device_enter(PyObject *self, PyObject *unused) {
  (void)unused;
  PyObject *saved = saved_defaults(), *value = saved ? PyLong_FromLong(default_device) : NULL;
  int r = value ? PyList_Append(saved, value) : -1;
  Py_XDECREF(value);
  if (r < 0)
    return NULL;
  default_device = ((vkt_py_device *)self)->index;
  return Py_NewRef(self);
}

static PyObject *device_exit(PyObject *self, PyObject *args) {
  (void)self, (void)args;
  PyObject *saved = saved_defaults();
  Py_ssize_t n = saved ? PyList_Size(saved) : -1;
  if (n <= 0)
    return n < 0 ? NULL : PyErr_Format(PyExc_RuntimeError, "trying to pop from empty mode stack");
  default_device = (int)PyLong_AsLong(PyList_GetItem(saved, n - 1));
  if (PyList_SetSlice(saved, n - 1, n, NULL) < 0)
    return NULL;
  Py_RETURN_NONE;
}

/* _set_default_device(device or None): None is cpu. */
PyObject *vkt_py_set_default_device(PyObject *self, PyObject *device) {
  (void)self;
  if (device == Py_None) {
    default_device = VKT_CPU;
    Py_RETURN_NONE;
  }
  if (!PyObject_TypeCheck(device, (PyTypeObject *)vkt_state->device_type))
    return PyErr_Format(PyExc_TypeError, "expected a vkt.device, got %R", device);
  default_device = ((vkt_py_device *)device)->index;
  Py_RETURN_NONE;
}

/* _default_device(): the default device, "vulkan" resolved to the current adapter. */
PyObject *vkt_py_default_device(PyObject *self, PyObject *unused) {
  (void)self, (void)unused;
  int index;
  return vkt_resolve_device(default_device, &index) < 0 ? NULL : vkt_device_new(index);
}

static PyMethodDef device_methods[] = {
    {"__reduce__", device_reduce, METH_NOARGS, "pickles as vkt.device(str(self))"},
    {"__enter__", device_enter, METH_NOARGS, "makes this device the default of creation functions until __exit__"},
    {"__exit__", device_exit, METH_VARARGS, "puts back the default device that __enter__ replaced"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef device_getset[] = {
    {"type", device_type_get, NULL, "'cpu' or 'vulkan'", NULL},
    {"index", device_index_get, NULL, "the adapter index, or None", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot device_slots[] = {
    {Py_tp_new, device_new},
    {Py_tp_repr, device_repr},
    {Py_tp_str, device_str},
    {Py_tp_richcompare, device_richcompare},
    {Py_tp_hash, device_hash},
    {Py_tp_getset, device_getset},
    {Py_tp_methods, device_methods},
    {Py_tp_doc, "device(type_or_string, index=None): where a tensor lives: 'cpu', 'vulkan' or 'vulkan:N'."},
    {0, NULL},
};

static PyType_Spec device_spec = {"vkt.device", sizeof(vkt_py_device), 0, Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE,
                                  device_slots};

/* ---- memory_format ---- */

static const char *const format_names[] = {"preserve_format", "contiguous_format", "channels_last", "channels_last_3d"};

static PyObject *format_repr(PyObject *self) {
  return PyUnicode_FromFormat("vkt.%s", format_names[((vkt_py_format *)self)->format]);
}

static PyObject *format_reduce(PyObject *self, PyObject *unused) {
  (void)unused;
  return PyUnicode_FromString(format_names[((vkt_py_format *)self)->format]);
}

static PyMethodDef format_methods[] = {
    {"__reduce__", format_reduce, METH_NOARGS, "pickles as vkt.<name>"},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot format_slots[] = {
    {Py_tp_repr, format_repr},
    {Py_tp_methods, format_methods},
    {Py_tp_doc, "How a copy is laid out: vkt.preserve_format, contiguous_format, channels_last, channels_last_3d."},
    {0, NULL},
};

static PyType_Spec format_spec = {"vkt.memory_format", sizeof(vkt_py_format), 0,
                                  Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE | Py_TPFLAGS_DISALLOW_INSTANTIATION,
                                  format_slots};

static int formats_add(PyObject *module, vkt_py_state *state) {
  state->format_type = PyType_FromModuleAndSpec(module, &format_spec, NULL);
  if (!state->format_type || PyModule_AddObjectRef(module, "memory_format", state->format_type) < 0)
    return -1;
  for (int i = 0; i < 4; i++) {
    vkt_py_format *f = (vkt_py_format *)PyType_GenericAlloc((PyTypeObject *)state->format_type, 0);
    if (!f)
      return -1;
    f->format = (vkt_memory_format)i;
    int r = PyModule_AddObjectRef(module, format_names[i], (PyObject *)f);
    Py_DECREF(f);
    if (r < 0)
      return -1;
  }
  return 0;
}

int vkt_parse_memory_format(PyObject *o, vkt_memory_format *out) {
  if (!o || o == Py_None) {
    *out = VKT_PRESERVE_FORMAT;
    return 0;
  }
  if (!PyObject_TypeCheck(o, (PyTypeObject *)vkt_state->format_type)) {
    PyErr_Format(PyExc_TypeError, "memory_format must be a vkt.memory_format such as vkt.contiguous_format, not %R", o);
    return -1;
  }
  *out = ((vkt_py_format *)o)->format;
  return 0;
}

int vkt_types_add(PyObject *module, vkt_py_state *state) {
  if (formats_add(module, state) < 0)
    return -1;
  state->dtype_type = PyType_FromModuleAndSpec(module, &dtype_spec, NULL);
  state->device_type = PyType_FromModuleAndSpec(module, &device_spec, NULL);
  if (!state->dtype_type || !state->device_type || PyModule_AddObjectRef(module, "dtype", state->dtype_type) < 0 ||
      PyModule_AddObjectRef(module, "device", state->device_type) < 0)
    return -1;
  for (int i = 0; i < VKT_DTYPE_COUNT; i++) {
    vkt_py_dtype *d = (vkt_py_dtype *)PyType_GenericAlloc((PyTypeObject *)state->dtype_type, 0);
    if (!d)
      return -1;
    d->dtype = (vkt_dtype)i;
    state->dtypes[i] = (PyObject *)d;
    if (PyModule_AddObjectRef(module, vkt_dtypes[i].name, (PyObject *)d) < 0)
      return -1;
  }
  return 0;
}

/* ---- argument parsing ---- */

/* An argument's type as PyTorch's signature errors name it (a new reference; NULL with an error set). */
static PyObject *arg_type_name(PyObject *a) {
  if (vkt_is_tensor(a))
    return PyUnicode_FromString("Tensor");
  if (PyObject_TypeCheck(a, (PyTypeObject *)vkt_state->dtype_type))
    return PyUnicode_FromString("vkt.dtype");
  if (PyObject_TypeCheck(a, (PyTypeObject *)vkt_state->device_type))
    return PyUnicode_FromString("vkt.device");
  return PyObject_GetAttrString((PyObject *)Py_TYPE(a), "__name__");
}

/* PyTorch lists the keywords last to first, and ends with ", " where no positional argument came before them. */
PyObject *vkt_py_signature_error(const char *fn, PyObject *args, PyObject *kwargs, const char *forms) {
  PyObject *got = PyUnicode_FromString(""), *items = kwargs ? PyDict_Items(kwargs) : PyList_New(0), *name;
  Py_ssize_t n = PyTuple_Size(args), nk = items ? PyList_Size(items) : 0;
  if (!items)
    Py_CLEAR(got);
  for (Py_ssize_t i = 0; got && i < n + nk; i++) {
    PyObject *was = got, *kv = i < n ? NULL : PyList_GetItem(items, n + nk - 1 - i);
    name = arg_type_name(kv ? PyTuple_GetItem(kv, 1) : PyTuple_GetItem(args, i));
    got = !name ? NULL
          : kv  ? PyUnicode_FromFormat("%U%s%U=%U%s", was, i ? ", " : "", PyTuple_GetItem(kv, 0), name,
                                       n == 0 && i == nk - 1 ? ", " : "")
                : PyUnicode_FromFormat("%U%s%U", was, i ? ", " : "", name);
    Py_XDECREF(name);
    Py_DECREF(was);
  }
  Py_XDECREF(items);
  if (got)
    PyErr_Format(PyExc_TypeError,
                 "%s() received an invalid combination of arguments - got (%U), but expected one of:\n%s", fn, got,
                 forms);
  Py_XDECREF(got);
  return NULL;
}

bool vkt_py_int_arg(PyObject *o) {
  const vkt_tensor *t = vkt_tensor_of(o);
  if (t)
    return t->ndim == 0 && !vkt_dtypes[t->dtype].is_float && t->dtype != VKT_BOOL;
  return PyIndex_Check(o) && !PyBool_Check(o);
}

/* PyTorch's argument parser takes NumPy's names for two parameters: axis for dim, keepdims for keepdim. */
static const char *const aliases[][2] = {{"axis", "dim"}, {"keepdims", "keepdim"}};

static bool takes(char **kwlist, const char *name) {
  for (; *kwlist; kwlist++)
    if (strcmp(*kwlist, name) == 0)
      return true;
  return false;
}

int vkt_parse_args(PyObject *args, PyObject *kwargs, const char *format, char **kwlist, ...) {
  PyObject *renamed = NULL;
  for (size_t i = 0; kwargs && i < sizeof aliases / sizeof *aliases; i++) {
    PyObject *value = PyDict_GetItemString(kwargs, aliases[i][0]); /* borrowed */
    if (!value || !takes(kwlist, aliases[i][1]) || takes(kwlist, aliases[i][0]))
      continue;
    if (!renamed && !(renamed = PyDict_Copy(kwargs))) /* the caller's dict stays as it was */
      return 0;
    if (PyDict_GetItemString(renamed, aliases[i][1])) {
      PyErr_Format(PyExc_TypeError, "got both '%s' and its alias '%s'", aliases[i][1], aliases[i][0]);
      Py_DECREF(renamed);
      return 0;
    }
    if (PyDict_SetItemString(renamed, aliases[i][1], value) < 0 || PyDict_DelItemString(renamed, aliases[i][0]) < 0) {
      Py_DECREF(renamed);
      return 0;
    }
  }
  va_list va;
  va_start(va, kwlist);
  int ok = PyArg_VaParseTupleAndKeywords(args, renamed ? renamed : kwargs, format, kwlist, va);
  va_end(va);
  Py_XDECREF(renamed);
  return ok;
}

int vkt_parse_keywords(PyObject *kwargs, const char *function, const char *const *kwlist, PyObject **values) {
  PyObject *key, *value;
  Py_ssize_t pos = 0;
  while (kwargs && PyDict_Next(kwargs, &pos, &key, &value)) {
    const char *name = PyUnicode_Check(key) ? PyUnicode_AsUTF8AndSize(key, NULL) : NULL;
    if (!name) {
      if (!PyErr_Occurred())
        PyErr_Format(PyExc_TypeError, "keywords must be strings");
      return -1;
    }
    int k = 0;
    while (kwlist[k] && (kwlist[k][0] != name[0] || strcmp(kwlist[k], name) != 0))
      k++;
    if (!kwlist[k]) {
      PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument '%s'", function, name);
      return -1;
    }
    values[k] = value;
  }
  return 0;
}

int vkt_parse_dtype(PyObject *o, vkt_dtype *out, bool *given) {
  *given = o && o != Py_None;
  if (!*given)
    return 0;
  if (!PyObject_TypeCheck(o, (PyTypeObject *)vkt_state->dtype_type)) {
    PyErr_Format(PyExc_TypeError, "dtype must be a vkt.dtype such as vkt.float32, not %R", o);
    return -1;
  }
  *out = ((vkt_py_dtype *)o)->dtype;
  return 0;
}

int vkt_parse_device(PyObject *o, int *out) {
  if (!o || o == Py_None) {
    *out = VKT_CPU;
    return 0;
  }
  if (PyObject_TypeCheck(o, (PyTypeObject *)vkt_state->device_type))
    return vkt_resolve_device(((vkt_py_device *)o)->index, out);
  if (PyUnicode_Check(o)) {
    int i;
    if (parse_device_string(PyUnicode_AsUTF8AndSize(o, NULL), &i) < 0)
      return -1;
    return vkt_resolve_device(i, out);
  }
  if (PyLong_Check(o)) {
    long i = PyLong_AsLong(o);
    if (i < 0 && !PyErr_Occurred())
      PyErr_Format(PyExc_RuntimeError, "Device index must not be negative");
    return PyErr_Occurred() ? -1 : vkt_resolve_device((int)i, out);
  }
  PyErr_Format(PyExc_TypeError, "device must be a string or vkt.device, not %R", o);
  return -1;
}

int vkt_resolve_device(int index, int *out) {
  vkt_status st = VKT_OK;
  if (index == VKT_NO_INDEX)
    st = vkt_default_adapter(&index);
  else if (index >= 0 && !vkt_runtime_available())
    st = vkt_fail(VKT_ERR_RUNTIME, "Vulkan is not available: %s", vkt_runtime_why());
  else if (index >= vkt_adapter_count())
    st = vkt_fail(VKT_ERR_RUNTIME, "invalid device vulkan:%d: there are %d Vulkan adapter(s)", index,
                  vkt_adapter_count());
  if (st) {
    vkt_raise(st);
    return -1;
  }
  *out = index;
  return 0;
}

int vkt_parse_shape(PyObject *args, int *ndim, int64_t *shape) {
  PyObject *seq = args;
  Py_ssize_t n = PyTuple_Size(args);
  if (n == 1 && !PyLong_Check(PyTuple_GetItem(args, 0)) && PySequence_Check(PyTuple_GetItem(args, 0))) {
    seq = PyTuple_GetItem(args, 0);
    n = PySequence_Size(seq);
    if (n < 0)
      return -1;
  }
  if (n > VKT_MAX_DIMS) {
    PyErr_Format(PyExc_RuntimeError, "tensors have at most %d dimensions, got %zd", VKT_MAX_DIMS, n);
    return -1;
  }
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *item = PySequence_GetItem(seq, i);
    if (!item)
      return -1;
    PyObject *index = PyNumber_Index(item);
    if (!index)
      PyErr_Format(PyExc_TypeError, "sizes must be integers, got %R", item);
    Py_DECREF(item);
    if (!index)
      return -1;
    shape[i] = PyLong_AsLongLong(index);
    Py_DECREF(index);
    if (shape[i] == -1 && PyErr_Occurred())
      return -1;
  }
  *ndim = (int)n;
  return 0;
}

int vkt_py_scalar(PyObject *o, vkt_scalar *out) {
  if (PyBool_Check(o)) {
    *out = (vkt_scalar){false, 0, o == Py_True};
  } else if (PyLong_Check(o)) {
    int overflow;
    long long i = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow) { /* PyTorch takes [2^63, 2^64) as uint64, which vkt has not: int64's overflow, as its fills */
      unsigned long long u = PyLong_AsUnsignedLongLong(o);
      if (u == (unsigned long long)-1 && PyErr_Occurred()) /* OverflowError: "int too big to convert", ... */
        return -1;
      PyErr_SetString(PyExc_RuntimeError, "value cannot be converted to type int64_t without overflow");
      return -1;
    }
    *out = (vkt_scalar){false, 0, i};
  } else if (PyFloat_Check(o)) {
    *out = (vkt_scalar){true, PyFloat_AsDouble(o), 0};
  } else if (PyIndex_Check(o) && !vkt_is_tensor(o)) { /* NumPy integers */
    PyObject *i = PyNumber_Index(o);
    int r = i ? vkt_py_scalar(i, out) : -1;
    Py_XDECREF(i);
    return r;
  } else {
    double f = vkt_is_tensor(o) || PyComplex_Check(o) ? -1.0 : PyFloat_AsDouble(o);
    if (f == -1.0 && (vkt_is_tensor(o) || PyComplex_Check(o) || PyErr_Occurred())) {
      PyErr_Clear();
      PyErr_Format(PyExc_TypeError, "expected a number (bool, int or float), got %R", (PyObject *)Py_TYPE(o));
      return -1;
    }
    *out = (vkt_scalar){true, f, 0};
  }
  return 0;
}

int vkt_py_item_number(PyObject *o, vkt_scalar *out) {
  int overflow = 0;
  if (PyLong_Check(o) && !PyBool_Check(o))
    PyLong_AsLongLongAndOverflow(o, &overflow);
  if (overflow)
    return PyErr_SetString(PyExc_ValueError, "Overflow when unpacking long long"), -1;
  return vkt_py_scalar(o, out);
}

int vkt_py_operand(PyObject *o, vkt_operand *out) {
  *out = (vkt_operand){.t = vkt_tensor_of(o), .is_bool = PyBool_Check(o)};
  return out->t ? 0 : vkt_py_scalar(o, &out->s);
}

PyObject *vkt_py_result(vkt_status st, vkt_tensor *out) { return st ? vkt_raise(st) : vkt_wrap(out); }

int vkt_py_dims(PyObject *o, int ndim, uint32_t *mask) {
  *mask = 0;
  if (!o || o == Py_None) {
    *mask = ndim ? (1u << ndim) - 1 : 0;
    return 0;
  }
  PyObject *seq = PyLong_Check(o) || PyIndex_Check(o) ? PyTuple_Pack(1, o) : PySequence_Tuple(o);
  if (!seq)
    return -1;
  Py_ssize_t n = PyTuple_Size(seq);
  int rc = 0;
  for (Py_ssize_t i = 0; i < n && rc == 0; i++) {
    long long d = PyLong_AsLongLong(PyTuple_GetItem(seq, i));
    int w;
    if (d == -1 && PyErr_Occurred()) {
      rc = -1;
    } else if (vkt_dim_wrap(d, ndim, &w)) {
      vkt_raise(VKT_ERR_INDEX);
      rc = -1;
    } else if (ndim && (*mask & (1u << w))) {
      PyErr_Format(PyExc_RuntimeError, "dim %d appears multiple times in the list of dims", w);
      rc = -1;
    } else if (ndim) {
      *mask |= 1u << w;
    }
  }
  Py_DECREF(seq);
  return rc;
}
