/* cpu.c: the cpu device's settings as PyTorch names them (set_num_threads, get_num_threads), and the
 * BLAS library its matrix products open: scipy-openblas32's, located at import without importing it. */
#include <glob.h>
#include <stdio.h>

#include "../ops/cpu/blas.h"
#include "../ops/cpu/threads.h"
#include "py.h"

static PyObject *py_set_num_threads(PyObject *self, PyObject *arg) {
  (void)self;
  long n = PyLong_AsLong(arg);
  if (n == -1 && PyErr_Occurred())
    return NULL;
  if (n <= 0)
    return PyErr_SetString(PyExc_RuntimeError, "set_num_threads expects a positive integer"), NULL;
  vkt_set_num_threads(n > 4096 ? 4096 : (int)n);
  Py_RETURN_NONE;
}

static PyObject *py_get_num_threads(PyObject *self, PyObject *unused) {
  (void)self, (void)unused;
  return PyLong_FromLong(vkt_get_num_threads());
}

static PyObject *py_blas_config(PyObject *self, PyObject *unused) {
  (void)self, (void)unused;
  const char *config = vkt_cpu_blas_config();
  return config ? PyUnicode_FromString(config) : Py_NewRef(Py_None);
}

PyMethodDef vkt_cpu_functions[] = {
    {"set_num_threads", py_set_num_threads, METH_O, "set_num_threads(n): the threads the cpu device's kernels use"},
    {"get_num_threads", py_get_num_threads, METH_NOARGS, "get_num_threads(): the threads the cpu device's kernels use"},
    {"_blas_config", py_blas_config, METH_NOARGS, "the BLAS library of the cpu device's products, or None"},
    {NULL, NULL, 0, NULL},
};

/* The package's folder from importlib's spec (finding it imports nothing), then its lib/libscipy_openblas*.so.
 * Without the package, products take vkt's C kernel. */
void vkt_cpu_locate_blas(void) {
  PyObject *util = PyImport_ImportModule("importlib.util"), *spec = NULL, *where = NULL, *dir = NULL;
  if (!util || !(spec = PyObject_CallMethod(util, "find_spec", "s", "scipy_openblas32")) || spec == Py_None ||
      !(where = PyObject_GetAttrString(spec, "submodule_search_locations")) || !PySequence_Check(where) ||
      PySequence_Size(where) < 1 || !(dir = PySequence_GetItem(where, 0)) || !PyUnicode_Check(dir))
    goto finish;
  const char *d = PyUnicode_AsUTF8AndSize(dir, NULL);
  char pattern[4096];
  glob_t found = {0};
  if (d && snprintf(pattern, sizeof pattern, "%s/lib/libscipy_openblas*.so", d) < (int)sizeof pattern &&
      glob(pattern, 0, NULL, &found) == 0 && found.gl_pathc > 0)
    vkt_cpu_blas_set_library(found.gl_pathv[0]);
  globfree(&found);
finish:
  PyErr_Clear(); /* a broken installation of the package leaves the C kernel, not a failed import */
  Py_XDECREF(dir);
  Py_XDECREF(where);
  Py_XDECREF(spec);
  Py_XDECREF(util);
}
