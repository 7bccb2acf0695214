/* ops_shape.c: Python bindings of the shape family (placeholder until it lands). */
#include "py.h"

PyMethodDef vkt_shape_methods[] = {{NULL, NULL, 0, NULL}};
PyMethodDef vkt_shape_functions[] = {{NULL, NULL, 0, NULL}};

int vkt_py_setitem(PyObject *self, PyObject *key, PyObject *value) {
  (void)self, (void)key, (void)value;
  PyErr_SetString(PyExc_TypeError, "item assignment is not supported yet");
  return -1;
}
