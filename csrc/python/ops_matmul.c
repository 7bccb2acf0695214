/* ops_matmul.c: Python bindings of the matmul family (placeholder until it lands). */
#include "py.h"

PyMethodDef vkt_matmul_methods[] = {{NULL, NULL, 0, NULL}};
PyMethodDef vkt_matmul_functions[] = {{NULL, NULL, 0, NULL}};

PyObject *vkt_py_matmul(PyObject *a, PyObject *b) {
  (void)a, (void)b;
  Py_RETURN_NOTIMPLEMENTED;
}
