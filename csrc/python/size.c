/* size.c: vkt.Size, the type of Tensor.shape and Tensor.size(): a tuple of ints as torch.Size, whose slices, sums
 * and products are Sizes. A heap subtype of tuple; its instances are made by tuple's own tp_new, so they are real
 * tuples (hash, equality with tuples, unpacking) on every Python the abi3 build runs on. */
#include "py.h"

static PyObject *tuple_slot_new(PyTypeObject *type, PyObject *items) {
  newfunc tuple_new = (newfunc)PyType_GetSlot(&PyTuple_Type, Py_tp_new);
  PyObject *args = PyTuple_Pack(1, items), *r = args ? tuple_new(type, args, NULL) : NULL;
  Py_XDECREF(args);
  return r;
}

/* A Size with items's values (a tuple), or NULL where items is NULL. */
static PyObject *size_of(PyObject *items) {
  PyObject *r = items ? tuple_slot_new((PyTypeObject *)vkt_state->size_type, items) : NULL;
  Py_XDECREF(items);
  return r;
}

PyObject *vkt_size_new(int ndim, const int64_t *shape) {
  PyObject *t = PyTuple_New(ndim);
  for (int i = 0; t && i < ndim; i++)
    PyTuple_SetItem(t, i, PyLong_FromLongLong(shape[i]));
  return size_of(t);
}

/* Size(sizes=()) with torch's checks: an iterable of ints (or objects with __index__ but floats) in int64. */
static PyObject *size_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
  if (kwargs && PyDict_Size(kwargs))
    return PyErr_Format(PyExc_TypeError, "tuple() takes no keyword arguments");
  Py_ssize_t nargs = PyTuple_Size(args);
  if (nargs > 1)
    return PyErr_Format(PyExc_TypeError, "tuple expected at most 1 argument, got %zd", nargs);
  PyObject *given = nargs ? PySequence_Tuple(PyTuple_GetItem(args, 0)) : PyTuple_New(0), *items = NULL, *r = NULL;
  Py_ssize_t n = given ? PyTuple_Size(given) : 0;
  if (!given || !(items = PyTuple_New(n)))
    goto finish;
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *v = PyTuple_GetItem(given, i), *name;
    if (PyFloat_Check(v) || !PyIndex_Check(v)) {
      if ((name = PyType_GetName(Py_TYPE(v))))
        PyErr_Format(PyExc_TypeError, "vkt.Size() takes an iterable of 'int' (item %zd is '%U')", i, name);
      Py_XDECREF(name);
      goto finish;
    }
    PyObject *index = PyNumber_Index(v);
    long long value = index ? PyLong_AsLongLong(index) : -1;
    if (value == -1 && PyErr_Occurred()) {
      if (PyErr_ExceptionMatches(PyExc_OverflowError)) {
        PyErr_Clear();
        PyErr_SetString(PyExc_ValueError, "Overflow when unpacking long long");
      }
      Py_XDECREF(index);
      goto finish;
    }
    Py_DECREF(index);
    PyTuple_SetItem(items, i, PyLong_FromLongLong(value));
  }
  r = tuple_slot_new(type, items);
finish:
  Py_XDECREF(given);
  Py_XDECREF(items);
  return r;
}

static PyObject *size_repr(PyObject *self) {
  PyObject *list = PySequence_List(self), *r = list ? PyUnicode_FromFormat("vkt.Size(%R)", list) : NULL;
  Py_XDECREF(list);
  return r;
}

/* s[i] is tuple's; s[a:b] is a Size. */
static PyObject *size_subscript(PyObject *self, PyObject *key) {
  binaryfunc tuple_subscript = (binaryfunc)PyType_GetSlot(&PyTuple_Type, Py_mp_subscript);
  PyObject *r = tuple_subscript(self, key);
  return r && PySlice_Check(key) ? size_of(r) : r;
}

static bool is_size(PyObject *o) { return PyObject_TypeCheck(o, (PyTypeObject *)vkt_state->size_type); }

/* Size + tuple and tuple + Size are Sizes; Size + anything else is torch's TypeError. */
static PyObject *size_add(PyObject *a, PyObject *b) {
  if (!PyTuple_Check(a))
    Py_RETURN_NOTIMPLEMENTED;
  if (!PyTuple_Check(b)) {
    PyObject *name = PyType_GetName(Py_TYPE(b));
    if (name)
      PyErr_Format(PyExc_TypeError, "can only concatenate tuple (not %U) to vkt.Size", name);
    Py_XDECREF(name);
    return NULL;
  }
  binaryfunc concat = (binaryfunc)PyType_GetSlot(&PyTuple_Type, Py_sq_concat);
  return size_of(concat(a, b));
}

static PyObject *size_multiply(PyObject *a, PyObject *b) {
  PyObject *self = is_size(a) ? a : b, *count = self == a ? b : a;
  if (!PyIndex_Check(count))
    Py_RETURN_NOTIMPLEMENTED;
  Py_ssize_t n = PyNumber_AsSsize_t(count, PyExc_OverflowError);
  if (n == -1 && PyErr_Occurred())
    return NULL;
  ssizeargfunc repeat = (ssizeargfunc)PyType_GetSlot(&PyTuple_Type, Py_sq_repeat);
  return size_of(repeat(self, n));
}

static PyObject *size_numel(PyObject *self, PyObject *unused) {
  (void)unused;
  long long n = 1;
  for (Py_ssize_t i = 0; i < PyTuple_Size(self); i++)
    n *= PyLong_AsLongLong(PyTuple_GetItem(self, i));
  return PyLong_FromLongLong(n);
}

static PyObject *size_reduce(PyObject *self, PyObject *unused) {
  (void)unused;
  PyObject *items = PySequence_Tuple(self);
  PyObject *r = items ? Py_BuildValue("(O(O))", (PyObject *)Py_TYPE(self), items) : NULL;
  Py_XDECREF(items);
  return r;
}

static int size_traverse(PyObject *self, visitproc visit, void *arg) {
  Py_VISIT(Py_TYPE(self));
  traverseproc tuple_traverse = (traverseproc)PyType_GetSlot(&PyTuple_Type, Py_tp_traverse);
  return tuple_traverse(self, visit, arg);
}

static PyMethodDef size_methods[] = {
    {"numel", size_numel, METH_NOARGS, "the number of elements of a tensor of this size: the product (1 for [])"},
    {"__reduce__", size_reduce, METH_NOARGS, "pickles as vkt.Size(tuple(self))"},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot size_slots[] = {
    {Py_tp_new, size_new},
    {Py_tp_repr, size_repr},
    {Py_tp_traverse, size_traverse},
    {Py_mp_subscript, size_subscript},
    {Py_nb_add, size_add},
    {Py_nb_multiply, size_multiply},
    {Py_tp_methods, size_methods},
    {Py_tp_doc, "Size(sizes=()): the sizes of a tensor's dimensions, a tuple of ints."},
    {0, NULL},
};

/* basicsize and itemsize 0: tuple's, inherited; its own traverse, so it says it has GC. */
static PyType_Spec size_spec = {"vkt.Size", 0, 0, Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE | Py_TPFLAGS_HAVE_GC,
                                size_slots};

int vkt_size_type_add(PyObject *module, vkt_py_state *state) {
  state->size_type = PyType_FromModuleAndSpec(module, &size_spec, (PyObject *)&PyTuple_Type);
  return state->size_type && PyModule_AddObjectRef(module, "Size", state->size_type) == 0 ? 0 : -1;
}
