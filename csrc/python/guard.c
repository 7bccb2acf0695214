/* guard.c: no gradient is dropped silently. Every Tensor method and vkt function is called through a
 * trampoline that, in grad mode, looks at the result: a new floating-point tensor without autograd history
 * made from an input that requires grad means the op has no backward yet, and PyTorch would have given
 * one, so the call raises instead of returning a tensor that silently stops the gradient. Ops whose
 * float results are rightly outside the graph (detach, new_*, *_like, random draws) are listed. The trampoline
 * also makes each tensor argument the owner of autograd state the op made for it (vkt_py_claim). */
#include <string.h>

#include "py.h"
#include "amp.h"

#define MAX_GUARDED 1024

static PyMethodDef originals[MAX_GUARDED];
static int nguarded;
static signed char policies[MAX_GUARDED]; /* autocast's, by vkt.amp; 0: none */

static const char *const outside_graph[] = {"detach",
                                            "new_zeros",
                                            "new_ones",
                                            "new_empty",
                                            "new_empty_strided",
                                            "new_full",
                                            "new_tensor",
                                            "zeros_like",
                                            "ones_like",
                                            "empty_like",
                                            "rand_like",
                                            "randn_like",
                                            "full_like",
                                            "randint_like",
                                            "bernoulli",
                                            "multinomial",
                                            "normal",
                                            "poisson",
                                            "_run_backward",
                                            "_function_record",
                                            "tensor",
                                            "as_tensor",
                                            "from_numpy",
                                            "from_dlpack",
                                            /* one result rightly without a gradient (P; mode='r''s empty Q),
                                               the others recorded: */
                                            "_linalg_lu",
                                            "_linalg_qr",
                                            /* their tensor argument gives only a shape or dtype: */ "expand_as",
                                            "view_as",
                                            "reshape_as",
                                            "type_as",
                                            NULL};

static bool requires_grad_in(PyObject *o, int depth) {
  if (vkt_is_tensor(o))
    return vkt_requires_grad(vkt_var_of(o));
  bool tuple = PyTuple_Check(o);
  if (depth > 0 && (tuple || PyList_Check(o))) {
    Py_ssize_t n = tuple ? PyTuple_Size(o) : PyList_Size(o);
    for (Py_ssize_t i = 0; i < n; i++)
      if (requires_grad_in(tuple ? PyTuple_GetItem(o, i) : PyList_GetItem(o, i), depth - 1))
        return true;
  }
  return false;
}

/* A floating-point tensor in r (or in a tuple r) that is not one of the inputs and carries no history. */
static bool detached_result(PyObject *r, PyObject *self, PyObject *args) {
  if (PyTuple_Check(r)) {
    for (Py_ssize_t i = 0; i < PyTuple_Size(r); i++)
      if (detached_result(PyTuple_GetItem(r, i), self, args))
        return true;
    return false;
  }
  if (!vkt_is_tensor(r) || r == self)
    return false;
  vkt_var *v = vkt_var_of(r);
  if (!vkt_dtypes[v->t.dtype].is_float || vkt_requires_grad(v))
    return false;
  if (args && PyTuple_Check(args))
    for (Py_ssize_t i = 0; i < PyTuple_Size(args); i++)
      if (PyTuple_GetItem(args, i) == r)
        return false;
  return true;
}

/* view(dtype) rightly carries no history: PyTorch's view.dtype is not differentiable, while view(*shape) is. */
static bool view_of_dtype(const PyMethodDef *m, PyObject *args, PyObject *kwargs) {
  PyObject *dtype = kwargs ? PyDict_GetItemString(kwargs, "dtype") : NULL; /* borrowed */
  if (!dtype && args && PyTuple_Check(args) && PyTuple_Size(args) == 1)
    dtype = PyTuple_GetItem(args, 0);
  return !strcmp(m->ml_name, "view") && dtype && PyObject_TypeCheck(dtype, (PyTypeObject *)vkt_state->dtype_type);
}

static PyObject *call_original(const PyMethodDef *m, PyObject *self, PyObject *args, PyObject *kwargs) {
  int flags = m->ml_flags & (METH_NOARGS | METH_O | METH_VARARGS | METH_KEYWORDS);
  if (flags == (METH_VARARGS | METH_KEYWORDS))
    return ((PyCFunctionWithKeywords)(void (*)(void))m->ml_meth)(self, args, kwargs);
  if (kwargs && PyDict_Size(kwargs) > 0)
    return PyErr_Format(PyExc_TypeError, "%s() takes no keyword arguments", m->ml_name);
  if (flags == METH_VARARGS)
    return m->ml_meth(self, args);
  Py_ssize_t n = PyTuple_Size(args);
  if (flags == METH_NOARGS) {
    if (n != 0)
      return PyErr_Format(PyExc_TypeError, "%s() takes no arguments (%zd given)", m->ml_name, n);
    return m->ml_meth(self, NULL);
  }
  if (n != 1)
    return PyErr_Format(PyExc_TypeError, "%s() takes exactly one argument (%zd given)", m->ml_name, n);
  return m->ml_meth(self, PyTuple_GetItem(args, 0));
}

static PyObject *guarded(int i, PyObject *self, PyObject *args, PyObject *kwargs) {
  const PyMethodDef *m = &originals[i];
  if (vkt_amp_mask && policies[i])
    return vkt_py_amp_call(policies[i], m->ml_name, self, args, kwargs, guarded, i);
  PyObject *r = call_original(m, self, args, kwargs);
  vkt_py_claim(self);
  for (Py_ssize_t k = 0; args && PyTuple_Check(args) && k < PyTuple_Size(args); k++)
    vkt_py_claim(PyTuple_GetItem(args, k));
  if (!r || !vkt_grad_enabled() || !detached_result(r, self, args) || view_of_dtype(m, args, kwargs))
    return r;
  bool from_grad = (vkt_is_tensor(self) && requires_grad_in(self, 0)) || requires_grad_in(args, 2);
  if (kwargs) {
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (!from_grad && PyDict_Next(kwargs, &pos, &key, &value))
      from_grad = requires_grad_in(value, 1);
  }
  if (!from_grad)
    return r;
  Py_DECREF(r);
  return PyErr_Format(PyExc_RuntimeError,
                      "vkt: %s() has no backward yet: its result would silently carry no gradient. Run it under "
                      "vkt.no_grad(), or on .detach()ed inputs, if no gradient is wanted through it",
                      m->ml_name);
}

/* MAX_GUARDED trampolines, each knowing its index. The names are built by pasting base-4 digits after a
 * leading 1 (tramp_100000 ... tramp_133333); index_of() reads them back (the compiler folds it). */
static inline int index_of(int digits) {
  int v = 0, scale = 1;
  for (digits -= 100000; digits; digits /= 10, scale *= 4)
    v += digits % 10 * scale;
  return v;
}
#define T1(i)                                                                                                          \
  static PyObject *tramp_##i(PyObject *s, PyObject *a, PyObject *k) { return guarded(index_of(i), s, a, k); }
#define T4(i) T1(i##0) T1(i##1) T1(i##2) T1(i##3)
#define T16(i) T4(i##0) T4(i##1) T4(i##2) T4(i##3)
#define T64(i) T16(i##0) T16(i##1) T16(i##2) T16(i##3)
#define T256(i) T64(i##0) T64(i##1) T64(i##2) T64(i##3)
T256(10)
T256(11)
T256(12)
T256(13)
#define R1(i) tramp_##i,
#define R4(i) R1(i##0) R1(i##1) R1(i##2) R1(i##3)
#define R16(i) R4(i##0) R4(i##1) R4(i##2) R4(i##3)
#define R64(i) R16(i##0) R16(i##1) R16(i##2) R16(i##3)
#define R256(i) R64(i##0) R64(i##1) R64(i##2) R64(i##3)
static PyCFunctionWithKeywords trampolines[MAX_GUARDED] = {R256(10) R256(11) R256(12) R256(13)};

static bool listed(const char *name) {
  for (int i = 0; outside_graph[i]; i++)
    if (!strcmp(name, outside_graph[i]))
      return true;
  return false;
}

int vkt_guard_methods(PyMethodDef *defs) {
  for (PyMethodDef *m = defs; m->ml_name; m++) {
    if (listed(m->ml_name) || (m->ml_name[0] == '_' && m->ml_name[1] == '_'))
      continue; /* dunders: conversions and protocols, none makes a float result from a graph */
    if (nguarded == MAX_GUARDED) {
      PyErr_SetString(PyExc_SystemError, "vkt: raise MAX_GUARDED in csrc/python/guard.c");
      return -1;
    }
    originals[nguarded] = *m;
    m->ml_meth = (PyCFunction)(void (*)(void))trampolines[nguarded++];
    m->ml_flags = (m->ml_flags & ~(METH_NOARGS | METH_O)) | METH_VARARGS | METH_KEYWORDS;
  }
  return 0;
}

int vkt_guard_set_policy(const char *name, int policy) {
  int n = 0;
  for (int i = 0; i < nguarded; i++)
    if (!strcmp(originals[i].ml_name, name)) {
      policies[i] = (signed char)policy;
      n++;
    }
  return n;
}
