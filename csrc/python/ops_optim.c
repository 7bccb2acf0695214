/* ops_optim.c: the binding of the fused optimizer step, vkt._C._optimizer_step_, which vkt.optim's
 * optimizers call once per parameter. It writes tensors directly, outside autograd (no graph, as under
 * no_grad), and bumps their version counters. */
#include <string.h>

#include "py.h"

static int algorithm(const char *name, vkt_optim_algo *out) {
  static const char *const names[] = {"sgd", "adam", "rmsprop", "adagrad"};
  for (int k = 0; k < 4; k++)
    if (strcmp(name, names[k]) == 0) {
      *out = (vkt_optim_algo)k;
      return 0;
    }
  PyErr_Format(PyExc_ValueError, "_optimizer_step_: unknown algorithm '%s'", name);
  return -1;
}

/* The tensors of a tuple or list (at most 3) into t. */
static int state_list(PyObject *o, int *n, const vkt_tensor **t) {
  PyObject *seq = PySequence_Tuple(o);
  if (!seq)
    return -1;
  int r = 0;
  *n = (int)PyTuple_Size(seq);
  if (*n > 3) {
    PyErr_SetString(PyExc_ValueError, "_optimizer_step_: at most 3 state tensors");
    r = -1;
  }
  for (int k = 0; k < *n && !r; k++)
    if (!(t[k] = vkt_tensor_of(PyTuple_GetItem(seq, k)))) {
      PyErr_SetString(PyExc_TypeError, "_optimizer_step_: state must hold Tensors");
      r = -1;
    }
  Py_DECREF(seq);
  return r;
}

static PyObject *optimizer_step(PyObject *m, PyObject *args, PyObject *kwargs) {
  static const char *const kw[] = {"lr",      "weight_decay", "momentum",  "dampening", "beta1",    "beta2",
                                   "eps",     "alpha",        "lr_decay",  "step",      "maximize", "nesterov",
                                   "amsgrad", "centered",     "decoupled", "first",     NULL};
  enum { NUMBERS = 10, FLAGS = 6 };
  (void)m;
  const char *name;
  PyObject *param_o, *grad_o, *state_o, *value[NUMBERS + FLAGS] = {NULL};
  vkt_optim_hyper h = {.beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .alpha = 0.99, .step = 1};
  double *number[NUMBERS] = {&h.lr,    &h.weight_decay, &h.momentum, &h.dampening, &h.beta1,
                             &h.beta2, &h.eps,          &h.alpha,    &h.lr_decay,  &h.step};
  static const unsigned bits[FLAGS] = {VKT_OPTIM_MAXIMIZE, VKT_OPTIM_NESTEROV,  VKT_OPTIM_AMSGRAD,
                                       VKT_OPTIM_CENTERED, VKT_OPTIM_DECOUPLED, VKT_OPTIM_FIRST};
  const vkt_tensor *state[3], *param, *grad;
  int nstate;
  if (!PyArg_ParseTuple(args, "sOOO:_optimizer_step_", &name, &param_o, &grad_o, &state_o) ||
      vkt_parse_keywords(kwargs, "_optimizer_step_", kw, value) < 0)
    return NULL;
  for (int k = 0; k < NUMBERS; k++) /* as PyArg's "d" */
    if (value[k] && (*number[k] = PyFloat_AsDouble(value[k])) == -1.0 && PyErr_Occurred())
      return NULL;
  for (int k = 0; k < FLAGS; k++) { /* as PyArg's "p" */
    int on = value[NUMBERS + k] ? PyObject_IsTrue(value[NUMBERS + k]) : 0;
    if (on < 0)
      return NULL;
    h.flags |= on ? bits[k] : 0;
  }
  if (algorithm(name, &h.algo) < 0 || state_list(state_o, &nstate, state) < 0)
    return NULL;
  if (!(param = vkt_tensor_of(param_o)) || !(grad = vkt_tensor_of(grad_o)))
    return PyErr_Format(PyExc_TypeError, "_optimizer_step_: param and grad must be Tensors");
  if (h.momentum != 0 && (h.algo == VKT_OPTIM_SGD || h.algo == VKT_OPTIM_RMSPROP))
    h.flags |= VKT_OPTIM_MOMENTUM;
  vkt_status st = vkt_optim_step(&h, param, grad, nstate, state);
  if (st)
    return vkt_raise(st);
  Py_RETURN_NONE;
}

PyMethodDef vkt_optim_functions[] = {
    {"_optimizer_step_", (PyCFunction)(void (*)(void))optimizer_step, METH_VARARGS | METH_KEYWORDS,
     "_optimizer_step_(algorithm, param, grad, state, /, *, lr, weight_decay=0, momentum=0, dampening=0, beta1=0.9, "
     "beta2=0.999, eps=1e-8, alpha=0.99, lr_decay=0, step=1, maximize=False, nesterov=False, amsgrad=False, "
     "centered=False, decoupled=False, first=False): one fused step of 'sgd', 'adam', 'rmsprop' or 'adagrad' on "
     "param in place, state (PyTorch's order, contiguous) updated in the same kernel"},
    {NULL, NULL, 0, NULL}};
