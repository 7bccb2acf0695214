/* ops_loss.c: Python bindings of the classification losses, vkt._C.cross_entropy_loss and vkt._C.nll_loss (what
 * F.cross_entropy, F.nll_loss and their modules call), with ATen's signatures; reduction is a name ("none",
 * "mean", "sum") or ATen's number for it (0, 1, 2). */
#include "py.h"

#include "../autograd/loss.h"

static int parse_reduction(PyObject *o, vkt_reduction *out) {
  static const char *const names[] = {
      [VKT_REDUCTION_NONE] = "none", [VKT_REDUCTION_MEAN] = "mean", [VKT_REDUCTION_SUM] = "sum"};
  if (!o)
    return *out = VKT_REDUCTION_MEAN, 0;
  if (PyLong_Check(o) && !PyBool_Check(o)) {
    long v = PyLong_AsLong(o);
    if (v >= 0 && v <= 2)
      return *out = (vkt_reduction[]){VKT_REDUCTION_NONE, VKT_REDUCTION_MEAN, VKT_REDUCTION_SUM}[v], 0;
  }
  for (int k = 0; PyUnicode_Check(o) && k < 3; k++)
    if (PyUnicode_CompareWithASCIIString(o, names[k]) == 0)
      return *out = (vkt_reduction)k, 0;
  if (!PyErr_Occurred())
    PyErr_Format(PyExc_ValueError, "%S is not a valid value for reduction", o);
  return -1;
}

static PyObject *loss(PyObject *args, PyObject *kwargs, bool nll) {
  static char *ce_kw[] = {"input", "target", "weight", "reduction", "ignore_index", "label_smoothing", NULL};
  static char *nll_kw[] = {"input", "target", "weight", "reduction", "ignore_index", NULL};
  const char *name = nll ? "nll_loss" : "cross_entropy_loss";
  PyObject *x, *t, *w = Py_None, *reduction = NULL;
  long long ignore = -100;
  double smoothing = 0;
  int ok = nll ? vkt_parse_args(args, kwargs, "OO|OOL:nll_loss", nll_kw, &x, &t, &w, &reduction, &ignore)
               : vkt_parse_args(args, kwargs, "OO|OOLd:cross_entropy_loss", ce_kw, &x, &t, &w, &reduction, &ignore,
                                &smoothing);
  vkt_loss_opts o = {.ignore_index = ignore, .label_smoothing = smoothing, .nll = nll};
  if (!ok || parse_reduction(reduction, &o.reduction) < 0)
    return NULL;
  PyObject *bad[] = {vkt_is_tensor(x) ? NULL : x, vkt_is_tensor(t) ? NULL : t,
                     w == Py_None || vkt_is_tensor(w) ? NULL : w};
  static const char *const what[] = {"'input' must be Tensor", "'target' must be Tensor", "'weight' must be Tensor"};
  for (int k = 0; k < 3; k++)
    if (bad[k])
      return PyErr_Format(PyExc_TypeError, "%s(): argument %s, not %R", name, what[k], (PyObject *)Py_TYPE(bad[k]));
  vkt_var out;
  return vkt_py_var_result(
      vkt_ag_cross_entropy(vkt_var_of(x), vkt_var_of(t), w == Py_None ? NULL : vkt_var_of(w), &o, &out), &out);
}

static PyObject *f_cross_entropy_loss(PyObject *mod, PyObject *args, PyObject *kwargs) {
  (void)mod;
  return loss(args, kwargs, false);
}

static PyObject *f_nll_loss(PyObject *mod, PyObject *args, PyObject *kwargs) {
  (void)mod;
  return loss(args, kwargs, true);
}

PyMethodDef vkt_loss_functions[] = {
    {"cross_entropy_loss", (PyCFunction)(void (*)(void))f_cross_entropy_loss, METH_VARARGS | METH_KEYWORDS,
     "cross_entropy_loss(input, target, weight=None, reduction='mean', ignore_index=-100, label_smoothing=0.0)"},
    {"nll_loss", (PyCFunction)(void (*)(void))f_nll_loss, METH_VARARGS | METH_KEYWORDS,
     "nll_loss(input, target, weight=None, reduction='mean', ignore_index=-100): input holds log-probabilities"},
    {NULL, NULL, 0, NULL}};
