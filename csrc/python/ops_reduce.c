/* ops_reduce.c: Python bindings of the reduce family: Tensor methods and vkt.<op> functions for sum, mean,
 * prod, max, min, argmax, argmin, amax, amin, var, std, all, any, softmax and log_softmax, with PyTorch's
 * signatures. max/min along a dim return vkt.return_types.max/min: (values, indices) with those names. */
#include "py.h"

#include <stdio.h>
#include <string.h>

#include "../ops/reduce.h"

/* How each binding parses and what it runs. */
enum { FORM_PLAIN, FORM_DTYPE, FORM_VAR, FORM_SOFTMAX };

typedef struct {
  const char *name;
  int id;          /* the op table row */
  int form;        /* the signature, below */
  bool single_dim; /* dim is an int or None, not a tuple */
  bool indices;    /* max, min: (values, indices) when dim is given, maximum/minimum for a Tensor */
} reduction;

typedef struct {
  PyObject *x, *dim, *dtype, *unbiased, *correction; /* borrowed */
  int keepdim;
} call;

/* Parses a method's arguments, or with self NULL a function's (the input first), in one of the forms
 * PLAIN (dim=None, keepdim=False), DTYPE (dim=None, keepdim=False, *, dtype=None),
 * VAR (dim=None, unbiased=None, keepdim=False, *, correction=None), SOFTMAX (dim, dtype=None). */
static int parse(PyObject *self, PyObject *args, PyObject *kwargs, const reduction *r, call *c) {
  static char *plain[] = {"input", "dim", "keepdim", NULL}, *dtype[] = {"input", "dim", "keepdim", "dtype", NULL},
              *var[] = {"input", "dim", "unbiased", "keepdim", "correction", NULL},
              *softmax[] = {"input", "dim", "dtype", NULL};
  static const char *const formats[] = {"O|Op", "O|Op$O", "O|OOp$O", "OO|O"};
  char **kws[] = {plain, dtype, var, softmax}, **kw = kws[r->form], fmt[32];
  snprintf(fmt, sizeof fmt, "%s:%s", formats[r->form], r->name);
  *c = (call){self, Py_None, Py_None, Py_None, Py_None, 0};
#define PARSE(...)                                                                                                     \
  (self ? vkt_parse_args(args, kwargs, fmt + 1, kw + 1, __VA_ARGS__)                                                   \
        : vkt_parse_args(args, kwargs, fmt, kw, &c->x, __VA_ARGS__))
  int ok;
  switch (r->form) {
  case FORM_PLAIN: ok = PARSE(&c->dim, &c->keepdim); break;
  case FORM_DTYPE: ok = PARSE(&c->dim, &c->keepdim, &c->dtype); break;
  case FORM_VAR: ok = PARSE(&c->dim, &c->unbiased, &c->keepdim, &c->correction); break;
  default: ok = PARSE(&c->dim, &c->dtype); break;
  }
#undef PARSE
  if (!ok)
    return -1;
  if (!vkt_is_tensor(c->x)) {
    PyErr_Format(PyExc_TypeError, "%s(): argument 'input' must be Tensor, not %R", r->name, (PyObject *)Py_TYPE(c->x));
    return -1;
  }
  return 0;
}

/* dim as a bit mask into o; an empty tuple means every dim, as None does. */
static int parse_dims(const reduction *r, const call *c, const vkt_tensor *t, vkt_reduce_opts *o) {
  PyObject *dim = c->dim;
  if ((PyTuple_Check(dim) || PyList_Check(dim)) && PyObject_Length(dim) == 0)
    dim = Py_None;
  if (r->single_dim && dim != Py_None && !PyIndex_Check(dim)) {
    PyErr_Format(PyExc_TypeError, "%s(): argument 'dim' must be int, not %R", r->name, (PyObject *)Py_TYPE(dim));
    return -1;
  }
  o->all_dims = dim == Py_None;
  return vkt_py_dims(dim, t->ndim, &o->dims);
}

/* var's correction: correction=, else unbiased= (True: 1, False: 0), else 1. A bool dim is unbiased. */
static int parse_correction(const reduction *r, call *c, vkt_reduce_opts *o) {
  if (PyBool_Check(c->dim) && c->unbiased == Py_None)
    c->unbiased = c->dim, c->dim = Py_None;
  o->correction = 1;
  if (c->unbiased != Py_None && c->correction != Py_None) {
    PyErr_Format(PyExc_RuntimeError, "%s(): cannot specify both unbiased and correction", r->name);
    return -1;
  }
  if (c->unbiased != Py_None) {
    if (!PyBool_Check(c->unbiased)) {
      PyErr_Format(PyExc_TypeError, "%s(): argument 'unbiased' must be bool, not %R", r->name,
                   (PyObject *)Py_TYPE(c->unbiased));
      return -1;
    }
    o->correction = c->unbiased == Py_True;
  } else if (c->correction != Py_None) {
    o->correction = PyFloat_AsDouble(c->correction);
    if (o->correction == -1.0 && PyErr_Occurred())
      return -1;
  }
  return 0;
}

/* vkt.return_types.max / .min, made on first use and kept for the life of the process (vkt has one
 * module state per process, see py.h). */
static PyObject *with_indices(int which, vkt_tensor *values, vkt_tensor *indices) {
  static PyStructSequence_Field fields[] = {
      {"values", "the largest (smallest) elements"}, {"indices", "their positions along dim"}, {NULL, NULL}};
  static PyStructSequence_Desc descs[2] = {{"vkt.return_types.max", "max(dim): (values, indices)", fields, 2},
                                           {"vkt.return_types.min", "min(dim): (values, indices)", fields, 2}};
  static PyTypeObject *types[2];
  PyObject *v = vkt_wrap(values), *i = vkt_wrap(indices), *r = NULL;
  if (!types[which])
    types[which] = PyStructSequence_NewType(&descs[which]);
  if (v && i && types[which] && (r = PyStructSequence_New(types[which]))) {
    PyStructSequence_SetItem(r, 0, v);
    PyStructSequence_SetItem(r, 1, i);
    return r;
  }
  Py_XDECREF(v);
  Py_XDECREF(i);
  return NULL;
}

/* max(other) and min(other): the elementwise forms. */
static PyObject *elementwise(const reduction *r, PyObject *x, PyObject *other) {
  vkt_operand a = {.t = vkt_tensor_of(x)}, b = {.t = vkt_tensor_of(other)};
  vkt_tensor out;
  int id = r->id == VKT_OP_AMAX ? VKT_OP_MAXIMUM : VKT_OP_MINIMUM;
  return vkt_py_result(vkt_binary(id, a, b, (vkt_scalar){false, 0, 1}, NULL, &out), &out);
}

static PyObject *reduce(PyObject *self, PyObject *args, PyObject *kwargs, const reduction *r) {
  call c;
  vkt_reduce_opts o = {.name = r->name, .dtype = -1, .correction = 1, .std = strcmp(r->name, "std") == 0};
  vkt_dtype dtype;
  bool given;
  if (parse(self, args, kwargs, r, &c) < 0)
    return NULL;
  if (r->indices && vkt_is_tensor(c.dim))
    return elementwise(r, c.x, c.dim);
  const vkt_tensor *t = vkt_tensor_of(c.x);
  if ((r->form == FORM_VAR && parse_correction(r, &c, &o) < 0) || parse_dims(r, &c, t, &o) < 0 ||
      vkt_parse_dtype(c.dtype, &dtype, &given) < 0)
    return NULL;
  o.keepdim = c.keepdim, o.dtype = given ? (int)dtype : -1;
  vkt_tensor out, indices;
  if (r->indices && !o.all_dims) {
    vkt_status st = vkt_reduce(r->id, t, &o, &out, &indices);
    return st ? vkt_raise(st) : with_indices(r->id == VKT_OP_AMIN, &out, &indices);
  }
  return vkt_py_result(vkt_reduce(r->id, t, &o, &out, NULL), &out);
}

static PyObject *softmax(PyObject *self, PyObject *args, PyObject *kwargs, const reduction *r) {
  call c;
  vkt_dtype dtype;
  bool given;
  if (parse(self, args, kwargs, r, &c) < 0 || vkt_parse_dtype(c.dtype, &dtype, &given) < 0)
    return NULL;
  if (!PyIndex_Check(c.dim)) {
    PyErr_Format(PyExc_TypeError, "%s(): argument 'dim' must be int, not %R", r->name, (PyObject *)Py_TYPE(c.dim));
    return NULL;
  }
  long long dim = PyLong_AsLongLong(c.dim);
  if (dim == -1 && PyErr_Occurred())
    return NULL;
  vkt_tensor out;
  return vkt_py_result(vkt_softmax(r->id, vkt_tensor_of(c.x), dim, given ? (int)dtype : -1, &out), &out);
}

/* One row per binding: x.name(...) and vkt.name(input, ...). */
#define REDUCTION(NAME, RUN, ID, FORM, SINGLE, INDICES)                                                                \
  static const reduction r_##NAME = {#NAME, ID, FORM, SINGLE, INDICES};                                                \
  static PyObject *m_##NAME(PyObject *self, PyObject *args, PyObject *kwargs) {                                        \
    return RUN(self, args, kwargs, &r_##NAME);                                                                         \
  }                                                                                                                    \
  static PyObject *f_##NAME(PyObject *mod, PyObject *args, PyObject *kwargs) {                                         \
    (void)mod;                                                                                                         \
    return RUN(NULL, args, kwargs, &r_##NAME);                                                                         \
  }
REDUCTION(sum, reduce, VKT_OP_SUM, FORM_DTYPE, false, false)
REDUCTION(mean, reduce, VKT_OP_MEAN, FORM_DTYPE, false, false)
REDUCTION(prod, reduce, VKT_OP_PROD, FORM_DTYPE, true, false)
REDUCTION(max, reduce, VKT_OP_AMAX, FORM_PLAIN, true, true)
REDUCTION(min, reduce, VKT_OP_AMIN, FORM_PLAIN, true, true)
REDUCTION(amax, reduce, VKT_OP_AMAX, FORM_PLAIN, false, false)
REDUCTION(amin, reduce, VKT_OP_AMIN, FORM_PLAIN, false, false)
REDUCTION(argmax, reduce, VKT_OP_ARGMAX, FORM_PLAIN, true, false)
REDUCTION(argmin, reduce, VKT_OP_ARGMIN, FORM_PLAIN, true, false)
REDUCTION(var, reduce, VKT_OP_VAR, FORM_VAR, false, false)
REDUCTION(std, reduce, VKT_OP_VAR, FORM_VAR, false, false)
REDUCTION(all, reduce, VKT_OP_ALL, FORM_PLAIN, false, false)
REDUCTION(any, reduce, VKT_OP_ANY, FORM_PLAIN, false, false)
REDUCTION(softmax, softmax, VKT_OP_SOFTMAX, FORM_SOFTMAX, true, false)
REDUCTION(log_softmax, softmax, VKT_OP_LOG_SOFTMAX, FORM_SOFTMAX, true, false)

#define KW (METH_VARARGS | METH_KEYWORDS)
#define M(NAME, DOC)                                                                                                   \
  { #NAME, (PyCFunction)(void (*)(void))m_##NAME, KW, DOC }
#define F(NAME, DOC)                                                                                                   \
  { #NAME, (PyCFunction)(void (*)(void))f_##NAME, KW, DOC }
#define BOTH(X)                                                                                                        \
  X(sum, "sum(dim=None, keepdim=False, *, dtype=None)"), X(mean, "mean(dim=None, keepdim=False, *, dtype=None)"),      \
      X(prod, "prod(dim=None, keepdim=False, *, dtype=None)"),                                                         \
      X(max, "max(): the largest element; max(dim, keepdim=False): (values, indices); max(other): maximum"),           \
      X(min, "min(): the smallest element; min(dim, keepdim=False): (values, indices); min(other): minimum"),          \
      X(amax, "amax(dim=(), keepdim=False)"), X(amin, "amin(dim=(), keepdim=False)"),                                  \
      X(argmax, "argmax(dim=None, keepdim=False): position of the first largest element"),                             \
      X(argmin, "argmin(dim=None, keepdim=False): position of the first smallest element"),                            \
      X(var, "var(dim=None, unbiased=None, keepdim=False, *, correction=1)"),                                          \
      X(std, "std(dim=None, unbiased=None, keepdim=False, *, correction=1)"), X(all, "all(dim=None, keepdim=False)"),  \
      X(any, "any(dim=None, keepdim=False)"), X(softmax, "softmax(dim, dtype=None): exp(x) / sum(exp(x)) along dim"),  \
      X(log_softmax, "log_softmax(dim, dtype=None): x - log(sum(exp(x))) along dim")

PyMethodDef vkt_reduce_methods[] = {BOTH(M), {NULL, NULL, 0, NULL}};
PyMethodDef vkt_reduce_functions[] = {BOTH(F), {NULL, NULL, 0, NULL}};
