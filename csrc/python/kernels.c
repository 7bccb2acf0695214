/* kernels.c: the C side of vkt.RawKernel and vkt.ElementwiseKernel (python/vkt/kernels.py builds the
 * GLSL and packs the scalars): compiling a source to a pipeline, and launching one over tensors. */
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

#include "../ops/user_kernel.h"
#include "py.h"

#define PIPELINE_CAPSULE "vkt.pipeline"
#define PUSH_MAX 256 /* bytes the fast path packs; a longer block takes the checked path, which names the limit */

/* _kernel_compile(device, source, nbindings, push_size): a capsule of the pipeline (it lives as long as
 * its device), or the compiler's log (a str) when the source does not compile. */
static PyObject *py_kernel_compile(PyObject *self, PyObject *args) {
  (void)self;
  int device, nbindings;
  unsigned int push_size;
  const char *source;
  if (!PyArg_ParseTuple(args, "isiI", &device, &source, &nbindings, &push_size))
    return NULL;
  vkt_pipeline *pipe = NULL;
  char *log = NULL;
  vkt_status st = vkt_kernel_compile(device, source, nbindings, push_size, &pipe, &log);
  if (log) {
    PyObject *text = PyUnicode_DecodeUTF8(log, (Py_ssize_t)strlen(log), "replace");
    free(log);
    return text;
  }
  return st ? vkt_raise(st) : PyCapsule_New(pipe, PIPELINE_CAPSULE, NULL);
}

/* The tensors of a tuple, borrowed from their Python objects. */
static int tensors_of(PyObject *tuple, const vkt_tensor **t) {
  Py_ssize_t n = PyTuple_Size(tuple);
  if (n < 0)
    return -1;
  if (n > VKT_MAX_BOUND)
    return PyErr_Format(PyExc_ValueError, "a kernel takes at most %d tensor arguments, got %zd", VKT_MAX_BOUND, n), -1;
  for (Py_ssize_t k = 0; k < n; k++) {
    PyObject *o = PyTuple_GetItem(tuple, k);
    if (!o || !vkt_is_tensor(o))
      return PyErr_SetString(PyExc_TypeError, "expected a tuple of tensors"), -1;
    t[k] = &((vkt_py_tensor *)o)->v.t;
  }
  return (int)n;
}

/* _kernel_launch(pipeline, tensors, writes, push, grid): records the kernel; bit k of writes marks
 * tensors[k] as written; push is the push-constant bytes; grid the workgroups (x, y, z). */
static PyObject *py_kernel_launch(PyObject *self, PyObject *args) {
  (void)self;
  PyObject *capsule, *tensors;
  unsigned int writes;
  const char *push;
  Py_ssize_t push_size;
  long long grid[3];
  if (!PyArg_ParseTuple(args, "OO!Iy#(LLL)", &capsule, &PyTuple_Type, &tensors, &writes, &push, &push_size, &grid[0],
                        &grid[1], &grid[2]))
    return NULL;
  vkt_pipeline *pipe = PyCapsule_GetPointer(capsule, PIPELINE_CAPSULE);
  const vkt_tensor *t[VKT_MAX_BOUND];
  int n = pipe ? tensors_of(tensors, t) : -1;
  if (n < 0)
    return NULL;
  int64_t g[3] = {grid[0], grid[1], grid[2]};
  vkt_status st = vkt_kernel_launch(pipe, n, t, writes, push, (uint32_t)push_size, g);
  return st ? vkt_raise(st) : Py_NewRef(Py_None);
}

/* Appends v to the push bytes as code says ('i' int, 'I' uint, 'f' float; 0: by v's type); false where v
 * does not fit it, which the caller leaves to the checked path. */
static bool push_scalar(PyObject *v, char code, unsigned char *push, size_t *len) {
  int overflow = 0;
  bool is_float = PyFloat_Check(v);
  if (!is_float && !PyLong_Check(v))
    return false;
  bool inferred = !code;
  if (inferred)
    code = is_float ? 'f' : 'i';
  if (*len + 4 > PUSH_MAX)
    return false;
  if (code == 'f') {
    float f = (float)PyFloat_AsDouble(v);
    if (f == -1.0f && PyErr_Occurred()) /* an int too large for a double */
      return PyErr_Clear(), false;
    memcpy(push + *len, &f, 4);
  } else {
    long long x = is_float ? 0 : PyLong_AsLongLongAndOverflow(v, &overflow);
    if (inferred && !overflow && x > INT32_MAX)
      code = 'I'; /* as RawKernel._push infers it */
    if (is_float || overflow || (code == 'i' ? x < INT32_MIN || x > INT32_MAX : x < 0 || x > (long long)UINT32_MAX))
      return false;
    uint32_t bits = (uint32_t)x;
    memcpy(push + *len, &bits, 4);
  }
  *len += 4;
  return true;
}

/* The bit of each written tensor: every tensor without outputs, else those outputs names (tensors, or
 * indices of tensor arguments); -1 where outputs names something else. */
static long long writes_of(PyObject *outputs, PyObject *args, PyObject *const *tensors, int n) {
  if (outputs == Py_None)
    return (1ll << n) - 1;
  PyObject *seq = PyTuple_Check(outputs) || PyList_Check(outputs) ? outputs : NULL;
  Py_ssize_t count = seq ? PySequence_Size(seq) : 1;
  long long mask = 0;
  for (Py_ssize_t i = 0; i < count; i++) {
    PyObject *o = seq ? PySequence_GetItem(seq, i) : Py_NewRef(outputs);
    if (o && PyLong_Check(o) && !PyBool_Check(o)) {
      Py_ssize_t k = PyLong_AsSsize_t(o);
      Py_DECREF(o);
      o = k >= 0 && k < PyTuple_Size(args) ? Py_NewRef(PyTuple_GetItem(args, k)) : NULL;
    }
    int hit = -1;
    for (int k = 0; o && k < n && hit < 0; k++)
      hit = tensors[k] == o ? k : -1;
    Py_XDECREF(o);
    PyErr_Clear();
    if (hit < 0)
      return -1;
    mask |= 1ll << hit;
  }
  return mask;
}

/* grid as (x, y, z) workgroups from an int or 1 to 3 positive ints; false otherwise. */
static bool grid_of(PyObject *grid, int64_t g[3]) {
  g[0] = g[1] = g[2] = 1;
  if (PyLong_Check(grid) && !PyBool_Check(grid)) {
    g[0] = PyLong_AsLongLong(grid);
    PyErr_Clear(); /* an overflow reads as -1: the checked path names it */
    return g[0] >= 1;
  }
  Py_ssize_t n = PyTuple_Check(grid) ? PyTuple_Size(grid) : 0;
  for (Py_ssize_t i = 0; i < n && n <= 3; i++) {
    PyObject *v = PyTuple_GetItem(grid, i);
    if (!PyLong_Check(v) || PyBool_Check(v) || (g[i] = PyLong_AsLongLong(v)) < 1) {
      PyErr_Clear();
      return false;
    }
  }
  return n >= 1 && n <= 3;
}

/* _kernel_call(pipelines, args, grid, outputs, codes): RawKernel's launch when every argument is as
 * expected and the pipeline for (device, tensors, push bytes) is in the dict; else NotImplemented, and
 * the Python side checks the call (raising its errors) and compiles. One C call keeps a launch about as
 * cheap as a built-in op's. */
static PyObject *py_kernel_call(PyObject *self, PyObject *args) {
  (void)self;
  PyObject *pipelines, *call, *grid, *outputs, *codes, *key = NULL, *objects[VKT_MAX_BOUND];
  if (!PyArg_ParseTuple(args, "O!O!OOO", &PyDict_Type, &pipelines, &PyTuple_Type, &call, &grid, &outputs, &codes))
    return NULL;
  const char *code = codes == Py_None ? NULL : PyUnicode_AsUTF8AndSize(codes, NULL);
  const vkt_tensor *t[VKT_MAX_BOUND];
  unsigned char push[PUSH_MAX];
  size_t len = 0;
  int n = 0, nscalars = 0;
  int64_t g[3];
  for (Py_ssize_t i = 0; i < PyTuple_Size(call); i++) {
    PyObject *a = PyTuple_GetItem(call, i);
    if (vkt_is_tensor(a)) {
      if (n == VKT_MAX_BOUND)
        return Py_NewRef(Py_NotImplemented);
      objects[n] = a;
      t[n++] = &((vkt_py_tensor *)a)->v.t;
    } else if ((code && !code[nscalars]) || !push_scalar(a, code ? code[nscalars] : 0, push, &len)) {
      return Py_NewRef(Py_NotImplemented);
    } else {
      nscalars++;
    }
  }
  long long writes = n ? writes_of(outputs, call, objects, n) : -1;
  if ((code && code[nscalars]) || writes < 0 || !grid_of(grid, g) || vkt_tensor_device(t[0]) == VKT_CPU)
    return Py_NewRef(Py_NotImplemented);
  if (!(key = Py_BuildValue("(iin)", vkt_tensor_device(t[0]), n, (Py_ssize_t)len)))
    return NULL;
  PyObject *capsule = PyDict_GetItemWithError(pipelines, key); /* borrowed */
  Py_DECREF(key);
  if (!capsule)
    return PyErr_Occurred() ? NULL : Py_NewRef(Py_NotImplemented);
  vkt_pipeline *pipe = PyCapsule_GetPointer(capsule, PIPELINE_CAPSULE);
  if (!pipe)
    return NULL;
  vkt_status st = vkt_kernel_launch(pipe, n, t, (unsigned)writes, push, (uint32_t)len, g);
  return st ? vkt_raise(st) : Py_NewRef(Py_None);
}

/* _kernel_launch_elementwise(pipeline, tensors, nout): the outputs first, inputs already broadcast. */
static PyObject *py_kernel_launch_elementwise(PyObject *self, PyObject *args) {
  (void)self;
  PyObject *capsule, *tensors;
  int nout;
  if (!PyArg_ParseTuple(args, "OO!i", &capsule, &PyTuple_Type, &tensors, &nout))
    return NULL;
  vkt_pipeline *pipe = PyCapsule_GetPointer(capsule, PIPELINE_CAPSULE);
  const vkt_tensor *t[VKT_MAX_BOUND];
  int n = pipe ? tensors_of(tensors, t) : -1;
  if (n < 0)
    return NULL;
  vkt_status st = vkt_kernel_launch_elementwise(pipe, n, t, nout);
  return st ? vkt_raise(st) : Py_NewRef(Py_None);
}

static PyObject *py_kernel_elementwise_push_size(PyObject *self, PyObject *arg) {
  (void)self;
  long n = PyLong_AsLong(arg);
  if (n == -1 && PyErr_Occurred())
    return NULL;
  if (n < 1 || n > VKT_MAX_BOUND)
    return PyErr_Format(PyExc_ValueError, "an ElementwiseKernel has 1 to %d operands, got %ld", VKT_MAX_BOUND, n);
  return PyLong_FromUnsignedLong(vkt_kernel_elementwise_push_size((int)n));
}

/* _kernel_limits(device): what a kernel's header and checks need of the adapter. */
static PyObject *py_kernel_limits(PyObject *self, PyObject *arg) {
  (void)self;
  long device = PyLong_AsLong(arg);
  vkt_device *dev = NULL;
  if (device == -1 && PyErr_Occurred())
    return NULL;
  vkt_status st = vkt_device_get((int)device, &dev);
  if (st)
    return vkt_raise(st);
  const vkt_adapter_props *p = vkt_device_props(dev);
  return Py_BuildValue(
      "{s:(III),s:I,s:I,s:(III),s:O,s:O,s:O,s:O,s:O,s:O}", "max_workgroup_size", p->max_workgroup_size[0],
      p->max_workgroup_size[1], p->max_workgroup_size[2], "max_workgroup_invocations", p->max_workgroup_invocations,
      "max_push_constants", p->max_push_constants, "max_workgroup_count", p->max_workgroup_count[0],
      p->max_workgroup_count[1], p->max_workgroup_count[2], "int64", p->int64 ? Py_True : Py_False, "float64",
      p->float64 ? Py_True : Py_False, "float16", p->float16 ? Py_True : Py_False, "int8_storage",
      p->int8_storage ? Py_True : Py_False, "subgroup_arithmetic", p->subgroup_arithmetic ? Py_True : Py_False,
      "robust_buffer_access", p->robust_buffer_access ? Py_True : Py_False);
}

PyMethodDef vkt_kernel_functions[] = {
    {"_kernel_limits", py_kernel_limits, METH_O,
     "_kernel_limits(device): the adapter's limits and features for kernels"},
    {"_kernel_compile", py_kernel_compile, METH_VARARGS,
     "_kernel_compile(device, source, nbindings, push_size): a pipeline, or the compiler's log"},
    {"_kernel_call", py_kernel_call, METH_VARARGS, "_kernel_call(pipelines, args, grid, outputs, codes)"},
    {"_kernel_launch", py_kernel_launch, METH_VARARGS, "_kernel_launch(pipeline, tensors, writes, push, grid)"},
    {"_kernel_launch_elementwise", py_kernel_launch_elementwise, METH_VARARGS,
     "_kernel_launch_elementwise(pipeline, tensors, nout)"},
    {"_kernel_elementwise_push_size", py_kernel_elementwise_push_size, METH_O,
     "push-constant bytes of an ElementwiseKernel over n operands"},
    {NULL, NULL, 0, NULL},
};
