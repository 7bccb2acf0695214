/* amp.c: autocast's dispatch, as torch.autocast's dispatch key: the per-thread switch, and the call into
 * vkt.amp's policy (python/vkt/amp/_policy.py), which casts an op's tensor arguments before the op runs. */
#include "amp.h"

_Thread_local int vkt_amp_mask;
static PyObject *cast_hook; /* vkt.amp's caster, set at its import; owned */

PyObject *vkt_py_amp_call(int policy, const char *name, PyObject *self, PyObject *args, PyObject *kwargs,
                          vkt_amp_body body, int i) {
  PyObject *cast = NULL, *r = NULL;
  int mask = vkt_amp_mask;
  if (!cast_hook)
    return PyErr_Format(PyExc_RuntimeError, "vkt: autocast is on but vkt.amp is not imported");
  cast = PyObject_CallFunction(cast_hook, "isOOO", policy, name, self ? self : Py_None, args ? args : Py_None,
                               kwargs ? kwargs : Py_None);
  if (!cast)
    goto finish;
  if (cast != Py_None) { /* None: nothing to cast */
    if (!PyTuple_Check(cast) || PyTuple_Size(cast) != 3) {
      PyErr_SetString(PyExc_TypeError, "vkt: the autocast caster must return (self, args, kwargs) or None");
      goto finish;
    }
    self = PyTuple_GetItem(cast, 0);
    args = PyTuple_GetItem(cast, 1);
    kwargs = PyTuple_GetItem(cast, 2) == Py_None ? NULL : PyTuple_GetItem(cast, 2);
  }
  vkt_amp_mask = 0; /* the op runs on what it was given, as torch excludes its autocast key inside an op */
  r = body(i, self, args, kwargs);
  vkt_amp_mask = mask;
finish:
  Py_XDECREF(cast);
  return r;
}

static PyObject *matmul_body(int i, PyObject *self, PyObject *args, PyObject *kwargs) {
  (void)i, (void)kwargs;
  return vkt_py_matmul(self, PyTuple_GetItem(args, 0));
}

PyObject *vkt_py_amp_matmul(PyObject *a, PyObject *b) {
  PyObject *args = PyTuple_Pack(1, b);
  PyObject *r = args ? vkt_py_amp_call(VKT_AMP_LOWER, "matmul", a, args, NULL, matmul_body, 0) : NULL;
  Py_XDECREF(args);
  return r;
}

/* _amp_set_mask(mask) -> the previous mask */
static PyObject *py_amp_set_mask(PyObject *mod, PyObject *arg) {
  (void)mod;
  long mask = PyLong_AsLong(arg);
  if (mask == -1 && PyErr_Occurred())
    return NULL;
  int old = vkt_amp_mask;
  vkt_amp_mask = (int)mask;
  return PyLong_FromLong(old);
}

static PyObject *py_amp_get_mask(PyObject *mod, PyObject *unused) {
  (void)mod, (void)unused;
  return PyLong_FromLong(vkt_amp_mask);
}

static PyObject *py_amp_set_hook(PyObject *mod, PyObject *fn) {
  (void)mod;
  PyObject *old = cast_hook;
  cast_hook = Py_NewRef(fn);
  Py_XDECREF(old);
  Py_RETURN_NONE;
}

static PyObject *py_amp_set_policy(PyObject *mod, PyObject *args) {
  const char *name;
  int policy;
  (void)mod;
  if (!PyArg_ParseTuple(args, "si:_amp_set_policy", &name, &policy))
    return NULL;
  return PyLong_FromLong(vkt_guard_set_policy(name, policy));
}

PyMethodDef vkt_amp_functions[] = {
    {"_amp_set_mask", py_amp_set_mask, METH_O, "sets this thread's autocast devices (1 cpu, 2 vulkan); the old mask"},
    {"_amp_get_mask", py_amp_get_mask, METH_NOARGS, "this thread's autocast devices (1 cpu, 2 vulkan)"},
    {"_amp_set_hook", py_amp_set_hook, METH_O, "the caster: (policy, name, self, args, kwargs) -> triple or None"},
    {"_amp_set_policy", py_amp_set_policy, METH_VARARGS,
     "(name, policy): the autocast policy of the ops called name; how many there are"},
    {NULL, NULL, 0, NULL},
};
