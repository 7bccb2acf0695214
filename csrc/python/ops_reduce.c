/* ops_reduce.c: Python bindings of the reduce family: Tensor methods and vkt.<op> functions for sum, mean,
 * prod, max, min, argmax, argmin, amax, amin, var, std, all, any, softmax and log_softmax, and the composite
 * ones: nansum, nanmean, logsumexp, count_nonzero, aminmax, norm, var_mean, std_mean and vkt.linalg's
 * vector_norm and matrix_norm, with PyTorch's signatures. max/min along a dim return vkt.return_types.max/min: (values,
 * indices) with those names. */
#include "py.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../autograd/linalg.h"
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

/* dim=() or dim=[]: PyTorch reduces every dim then, as with None, but in all and any, which reduce none. */
static bool no_dims(PyObject *dim) { return (PyTuple_Check(dim) || PyList_Check(dim)) && PyObject_Length(dim) == 0; }

static int parse_dims(const reduction *r, const call *c, const vkt_tensor *t, vkt_reduce_opts *o) {
  PyObject *dim = c->dim;
  if (no_dims(dim) && r->id != VKT_OP_ALL && r->id != VKT_OP_ANY)
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
static PyObject *with_indices(int which, vkt_var *values, vkt_tensor *indices) {
  static PyStructSequence_Field fields[] = {
      {"values", "the largest (smallest) elements"}, {"indices", "their positions along dim"}, {NULL, NULL}};
  static PyStructSequence_Desc descs[2] = {{"vkt.return_types.max", "max(dim): (values, indices)", fields, 2},
                                           {"vkt.return_types.min", "min(dim): (values, indices)", fields, 2}};
  static PyTypeObject *types[2];
  return vkt_py_pair(&descs[which], &types[which], values, indices);
}

/* max(other) and min(other): the elementwise forms. */
static PyObject *elementwise(const reduction *r, PyObject *x, PyObject *other) {
  int id = r->id == VKT_OP_AMAX ? VKT_OP_MAXIMUM : VKT_OP_MINIMUM;
  return vkt_py_binary(x, other, id, (vkt_scalar){false, 0, 1}, false);
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
  vkt_var out;
  vkt_tensor indices;
  const vkt_var *v = vkt_var_of(c.x);
  if (r->indices && !o.all_dims) {
    int dim = 0;
    while (dim < t->ndim && !(o.dims >> dim & 1))
      dim++;
    vkt_status st = vkt_ag_reduce_indices(r->id, v, dim, o.keepdim, r->name, &out, &indices);
    return st ? vkt_raise(st) : with_indices(r->id == VKT_OP_AMIN, &out, &indices);
  }
  return vkt_py_var_result(
      vkt_ag_reduce(r->id, v, o.dims, o.keepdim, o.dtype, o.correction, o.std, o.name, o.all_dims, &out), &out);
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
  vkt_var out;
  return vkt_py_var_result(vkt_ag_softmax(r->id, vkt_var_of(c.x), dim, given ? (int)dtype : -1, &out), &out);
}

/* nansum and nanmean: reduce's signature (dim=None, keepdim=False, *, dtype=None) */
static PyObject *nan_reduce(PyObject *self, PyObject *args, PyObject *kwargs, const reduction *r) {
  call c;
  vkt_reduce_opts o = {.name = r->name, .dtype = -1};
  vkt_dtype dtype;
  bool given;
  if (parse(self, args, kwargs, r, &c) < 0)
    return NULL;
  const vkt_tensor *t = vkt_tensor_of(c.x);
  if (parse_dims(r, &c, t, &o) < 0 || vkt_parse_dtype(c.dtype, &dtype, &given) < 0)
    return NULL;
  vkt_var out;
  return vkt_py_var_result(
      vkt_ag_nan_reduce(r->id, vkt_var_of(c.x), o.dims, c.keepdim, given ? (int)dtype : -1, o.name, o.all_dims, &out),
      &out);
}

/* logsumexp(input, dim, keepdim=False): dim is required */
static PyObject *logsumexp(PyObject *self, PyObject *args, PyObject *kwargs, const reduction *r) {
  call c;
  vkt_reduce_opts o = {.name = r->name, .dtype = -1};
  if (parse(self, args, kwargs, r, &c) < 0)
    return NULL;
  if (c.dim == Py_None) {
    PyErr_Format(PyExc_TypeError, "logsumexp() missing 1 required positional arguments: \"dim\"");
    return NULL;
  }
  const vkt_tensor *t = vkt_tensor_of(c.x);
  if (parse_dims(r, &c, t, &o) < 0)
    return NULL;
  o.keepdim = c.keepdim;
  vkt_var out;
  return vkt_py_var_result(vkt_ag_reduce(r->id, vkt_var_of(c.x), o.dims, o.keepdim, -1, 0, false, o.name, false, &out),
                           &out);
}

/* A 2-tuple of new tensors (steals both references). */
static PyObject *tuple2(vkt_var *a, vkt_var *b) {
  PyObject *x = vkt_wrap_var(a), *y = vkt_wrap_var(b), *r = x && y ? PyTuple_Pack(2, x, y) : NULL;
  Py_XDECREF(x);
  Py_XDECREF(y);
  return r;
}

/* var_mean and std_mean: var's signature, giving (var or std, mean) */
static PyObject *var_mean(PyObject *self, PyObject *args, PyObject *kwargs, const reduction *r) {
  call c;
  vkt_reduce_opts o = {.name = r->name, .dtype = -1, .correction = 1, .std = r->name[0] == 's'};
  if (parse(self, args, kwargs, r, &c) < 0)
    return NULL;
  const vkt_tensor *t = vkt_tensor_of(c.x);
  if (parse_correction(r, &c, &o) < 0 || parse_dims(r, &c, t, &o) < 0)
    return NULL;
  const vkt_var *x = vkt_var_of(c.x);
  vkt_var v, m;
  vkt_status st = vkt_ag_reduce(VKT_OP_VAR, x, o.dims, c.keepdim, -1, o.correction, o.std, o.name, o.all_dims, &v);
  if (st)
    return vkt_raise(st);
  if ((st = vkt_ag_reduce(VKT_OP_MEAN, x, o.dims, c.keepdim, -1, 0, false, o.name, o.all_dims, &m))) {
    vkt_var_release(&v);
    return vkt_raise(st);
  }
  return tuple2(&v, &m);
}

/* One row per binding: x.name(...) and vkt.name(input, ...). */
#define REDUCTION_FUNCTION(NAME, RUN, ID, FORM, SINGLE, INDICES)                                                       \
  static const reduction r_##NAME = {#NAME, ID, FORM, SINGLE, INDICES};                                                \
  static PyObject *f_##NAME(PyObject *mod, PyObject *args, PyObject *kwargs) {                                         \
    (void)mod;                                                                                                         \
    return RUN(NULL, args, kwargs, &r_##NAME);                                                                         \
  }
#define REDUCTION(NAME, RUN, ID, FORM, SINGLE, INDICES)                                                                \
  REDUCTION_FUNCTION(NAME, RUN, ID, FORM, SINGLE, INDICES)                                                             \
  static PyObject *m_##NAME(PyObject *self, PyObject *args, PyObject *kwargs) {                                        \
    return RUN(self, args, kwargs, &r_##NAME);                                                                         \
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
/* composite reductions (reduce_composite.c) */
REDUCTION(nansum, nan_reduce, VKT_OP_SUM, FORM_DTYPE, false, false)
REDUCTION(nanmean, nan_reduce, VKT_OP_MEAN, FORM_DTYPE, false, false)
REDUCTION(logsumexp, logsumexp, VKT_OP_LOGSUMEXP, FORM_PLAIN, false, false)
REDUCTION_FUNCTION(var_mean, var_mean, VKT_OP_VAR, FORM_VAR, false, false)
REDUCTION_FUNCTION(std_mean, var_mean, VKT_OP_VAR, FORM_VAR, false, false)

/* count_nonzero(input, dim=None) */
static PyObject *count_nonzero(PyObject *self, PyObject *args, PyObject *kwargs) {
  static char *kw[] = {"input", "dim", NULL};
  PyObject *x = self, *dim = Py_None;
  int ok = self ? vkt_parse_args(args, kwargs, "|O:count_nonzero", kw + 1, &dim)
                : vkt_parse_args(args, kwargs, "O|O:count_nonzero", kw, &x, &dim);
  vkt_reduce_opts o = {.name = "count_nonzero", .dtype = -1};
  const vkt_tensor *t = ok ? vkt_tensor_of(x) : NULL;
  if (!ok)
    return NULL;
  if (!t)
    return PyErr_Format(PyExc_TypeError, "count_nonzero(): argument 'input' must be Tensor, not %R",
                        (PyObject *)Py_TYPE(x));
  if (vkt_py_dims(no_dims(dim) ? Py_None : dim, t->ndim, &o.dims) < 0)
    return NULL;
  vkt_tensor out;
  return vkt_py_result(vkt_count_nonzero(t, &o, &out), &out);
}
static PyObject *m_count_nonzero(PyObject *self, PyObject *args, PyObject *kwargs) {
  return count_nonzero(self, args, kwargs);
}
static PyObject *f_count_nonzero(PyObject *mod, PyObject *args, PyObject *kwargs) {
  (void)mod;
  return count_nonzero(NULL, args, kwargs);
}

/* aminmax(input, *, dim=None, keepdim=False): vkt.return_types.aminmax(min, max) */
static PyObject *aminmax(PyObject *self, PyObject *args, PyObject *kwargs) {
  static char *kw[] = {"input", "dim", "keepdim", NULL};
  static PyStructSequence_Field fields[] = {{"min", NULL}, {"max", NULL}, {NULL, NULL}};
  static PyStructSequence_Desc desc = {"vkt.return_types.aminmax", "aminmax(): (min, max)", fields, 2};
  static PyTypeObject *type;
  PyObject *x = self, *dim = Py_None;
  int keepdim = 0;
  int ok = self ? vkt_parse_args(args, kwargs, "|$Op:aminmax", kw + 1, &dim, &keepdim)
                : vkt_parse_args(args, kwargs, "O|$Op:aminmax", kw, &x, &dim, &keepdim);
  const vkt_tensor *t = ok ? vkt_tensor_of(x) : NULL;
  if (!ok)
    return NULL;
  if (!t)
    return PyErr_Format(PyExc_TypeError, "aminmax(): argument 'input' must be Tensor, not %R", (PyObject *)Py_TYPE(x));
  if (dim != Py_None && !PyIndex_Check(dim))
    return PyErr_Format(PyExc_TypeError, "aminmax(): argument 'dim' must be int, not %R", (PyObject *)Py_TYPE(dim));
  vkt_reduce_opts o = {.name = "aminmax", .keepdim = keepdim, .dtype = -1, .all_dims = dim == Py_None};
  if (vkt_py_dims(dim, t->ndim, &o.dims) < 0)
    return NULL;
  for (int d = 0; d < t->ndim; d++) {
    if (!(o.dims >> d & 1) || t->shape[d] != 0)
      continue;
    if (o.all_dims)
      return PyErr_Format(PyExc_RuntimeError, "aminmax(): cannot compute aminmax over an empty dimension as the "
                                              "operation has no identity.");
    return PyErr_Format(PyExc_IndexError, "aminmax: Expected reduction dim %d to have non-zero size.", d);
  }
  const vkt_var *v = vkt_var_of(x);
  vkt_var lo, hi;
  vkt_status st = vkt_ag_reduce(VKT_OP_AMIN, v, o.dims, keepdim, -1, 0, false, o.name, o.all_dims, &lo);
  if (st)
    return vkt_raise(st);
  if ((st = vkt_ag_reduce(VKT_OP_AMAX, v, o.dims, keepdim, -1, 0, false, o.name, o.all_dims, &hi))) {
    vkt_var_release(&lo);
    return vkt_raise(st);
  }
  PyObject *a = vkt_wrap_var(&lo), *b = vkt_wrap_var(&hi), *r = NULL;
  if (!type)
    type = PyStructSequence_NewType(&desc);
  if (a && b && type && (r = PyStructSequence_New(type))) {
    PyStructSequence_SetItem(r, 0, a);
    PyStructSequence_SetItem(r, 1, b);
    return r;
  }
  Py_XDECREF(a);
  Py_XDECREF(b);
  return NULL;
}
static PyObject *m_aminmax(PyObject *self, PyObject *args, PyObject *kwargs) { return aminmax(self, args, kwargs); }
static PyObject *f_aminmax(PyObject *mod, PyObject *args, PyObject *kwargs) {
  (void)mod;
  return aminmax(NULL, args, kwargs);
}

/* An ord / p argument: a number (inf included) into *v, or the string fro (*fro); the callers take nuc first. */
static int parse_ord(PyObject *o, const char *name, double *v, bool *fro) {
  *fro = false;
  if (PyUnicode_Check(o)) {
    if (PyUnicode_CompareWithASCIIString(o, "fro") == 0)
      return *fro = true, 0;
    return PyErr_Format(PyExc_RuntimeError, "%s: Order %U not supported.", name, o), -1;
  }
  *v = PyFloat_AsDouble(o);
  return *v == -1.0 && PyErr_Occurred() ? -1 : 0;
}

/* The dim and dtype arguments shared by the norms into o. */
static int norm_dims(PyObject *dim, PyObject *dtype_o, const vkt_tensor *t, vkt_reduce_opts *o) {
  vkt_dtype dtype;
  bool given;
  if (dim && no_dims(dim))
    dim = Py_None;
  if (vkt_py_dims(dim, t->ndim, &o->dims) < 0 || vkt_parse_dtype(dtype_o, &dtype, &given) < 0)
    return -1;
  o->dtype = given ? (int)dtype : -1;
  o->all_dims = dim == Py_None;
  return 0;
}

/* linalg.vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None) */
static PyObject *f_vector_norm(PyObject *mod, PyObject *args, PyObject *kwargs) {
  (void)mod;
  static char *kw[] = {"x", "ord", "dim", "keepdim", "dtype", NULL};
  PyObject *x, *ord_o = NULL, *dim = Py_None, *dtype_o = Py_None;
  int keepdim = 0;
  double ord = 2;
  bool fro;
  vkt_reduce_opts o = {.name = "linalg.vector_norm"};
  if (!vkt_parse_args(args, kwargs, "O|OOp$O:vector_norm", kw, &x, &ord_o, &dim, &keepdim, &dtype_o))
    return NULL;
  const vkt_tensor *t = vkt_tensor_of(x);
  if (!t)
    return PyErr_Format(PyExc_TypeError, "linalg_vector_norm(): argument 'input' must be Tensor, not %R",
                        (PyObject *)Py_TYPE(x));
  if ((ord_o && (PyUnicode_Check(ord_o)
                     ? (PyErr_Format(PyExc_TypeError, "linalg_vector_norm(): argument 'ord' must be Number"), -1)
                     : parse_ord(ord_o, o.name, &ord, &fro)) < 0) ||
      norm_dims(dim, dtype_o, t, &o) < 0)
    return NULL;
  vkt_var out;
  return vkt_py_var_result(vkt_ag_vector_norm(vkt_var_of(x), ord, o.dims, keepdim, o.dtype, o.name, o.all_dims, &out),
                           &out);
}

/* linalg.matrix_norm(A, ord='fro', dim=(-2, -1), keepdim=False, *, dtype=None) */
static PyObject *f_matrix_norm(PyObject *mod, PyObject *args, PyObject *kwargs) {
  (void)mod;
  static char *kw[] = {"A", "ord", "dim", "keepdim", "dtype", NULL};
  PyObject *x, *ord_o = NULL, *dim = NULL, *dtype_o = Py_None;
  int keepdim = 0;
  double ord = 0;
  bool fro = true;
  long long d0 = -2, d1 = -1;
  vkt_dtype dtype;
  bool given;
  if (!vkt_parse_args(args, kwargs, "O|OOp$O:matrix_norm", kw, &x, &ord_o, &dim, &keepdim, &dtype_o))
    return NULL;
  const vkt_tensor *t = vkt_tensor_of(x);
  if (!t)
    return PyErr_Format(PyExc_TypeError, "linalg_matrix_norm(): argument 'A' must be Tensor, not %R",
                        (PyObject *)Py_TYPE(x));
  if (ord_o && vkt_py_sv_ord(ord_o) >= 0)
    return vkt_py_matrix_norm_sv(args, kwargs);
  if (ord_o && parse_ord(ord_o, "linalg.matrix_norm", &ord, &fro) < 0)
    return NULL;
  if (!fro && !isinf(ord) && ord != 1 && ord != -1)
    return vkt_raise(vkt_fail(VKT_ERR_RUNTIME, "linalg.matrix_norm: Order %g not supported.", ord));
  if (dim && !PyArg_ParseTuple(dim, "LL:matrix_norm", &d0, &d1))
    return NULL;
  if (vkt_parse_dtype(dtype_o, &dtype, &given) < 0)
    return NULL;
  vkt_var out;
  return vkt_py_var_result(
      vkt_ag_matrix_norm(vkt_var_of(x), fro, ord, d0, d1, keepdim, given ? (int)dtype : -1, &out), &out);
}

/* norm(p='nuc'): linalg.matrix_norm over the two dims of dim (None: every dim), as torch.norm hands it over */
static PyObject *nuclear_norm(const vkt_var *x, PyObject *dim, int keepdim, PyObject *dtype_o) {
  uint32_t mask;
  vkt_dtype dtype;
  bool given;
  int64_t d[2];
  int n = 0;
  char got[64] = "";
  if (x->t.ndim < 2)
    return vkt_raise(
        vkt_fail(VKT_ERR_RUNTIME, "linalg.matrix_norm: The input tensor A must have at least 2 dimensions."));
  if (vkt_py_dims(dim, x->t.ndim, &mask) < 0 || vkt_parse_dtype(dtype_o, &dtype, &given) < 0)
    return NULL;
  for (int k = 0; k < x->t.ndim; k++)
    if (mask >> k & 1) {
      snprintf(got + strlen(got), sizeof got - strlen(got), n ? " %d" : "%d", k);
      if (n < 2)
        d[n] = k;
      n++;
    }
  if (n != 2)
    return vkt_raise(vkt_fail(VKT_ERR_RUNTIME, "linalg.matrix_norm: dim must be a 2-tuple. Got %s", got));
  vkt_var out;
  vkt_status st = vkt_ag_matrix_norm_sv(x, VKT_SV_NUC, d[0], d[1], keepdim, given ? (int)dtype : -1, &out);
  return vkt_py_var_result(st, &out);
}

/* norm(input, p='fro', dim=None, keepdim=False, dtype=None): fro is the 2-norm over dim; nuc the nuclear norm */
static PyObject *norm(PyObject *self, PyObject *args, PyObject *kwargs) {
  static char *kw[] = {"input", "p", "dim", "keepdim", "dtype", NULL};
  PyObject *x = self, *p = NULL, *dim = Py_None, *dtype_o = Py_None;
  int keepdim = 0;
  double ord = 2;
  bool fro = false;
  vkt_reduce_opts o = {.name = "linalg.vector_norm"};
  int ok = self ? vkt_parse_args(args, kwargs, "|OOpO:norm", kw + 1, &p, &dim, &keepdim, &dtype_o)
                : vkt_parse_args(args, kwargs, "O|OOpO:norm", kw, &x, &p, &dim, &keepdim, &dtype_o);
  const vkt_tensor *t = ok ? vkt_tensor_of(x) : NULL;
  if (!ok)
    return NULL;
  if (!t)
    return PyErr_Format(PyExc_TypeError, "norm(): argument 'input' must be Tensor, not %R", (PyObject *)Py_TYPE(x));
  if (p && PyUnicode_Check(p) && PyUnicode_CompareWithASCIIString(p, "nuc") == 0)
    return nuclear_norm(vkt_var_of(x), dim, keepdim, dtype_o);
  if ((p && p != Py_None && parse_ord(p, "norm", &ord, &fro) < 0) || norm_dims(dim, dtype_o, t, &o) < 0)
    return NULL;
  vkt_var out;
  return vkt_py_var_result(
      vkt_ag_vector_norm(vkt_var_of(x), fro ? 2 : ord, o.dims, keepdim, o.dtype, o.name, o.all_dims, &out), &out);
}
static PyObject *m_norm(PyObject *self, PyObject *args, PyObject *kwargs) { return norm(self, args, kwargs); }
static PyObject *f_norm(PyObject *mod, PyObject *args, PyObject *kwargs) {
  (void)mod;
  return norm(NULL, args, kwargs);
}

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
      X(log_softmax, "log_softmax(dim, dtype=None): x - log(sum(exp(x))) along dim"),                                  \
      X(nansum, "nansum(dim=None, keepdim=False, *, dtype=None): sum treating NaN as 0"),                              \
      X(nanmean, "nanmean(dim=None, keepdim=False, *, dtype=None): mean of the non-NaN elements"),                     \
      X(logsumexp, "logsumexp(dim, keepdim=False): log(sum(exp(x))) over dim, without overflow"),                      \
      X(count_nonzero, "count_nonzero(dim=None): the number of nonzero elements"),                                     \
      X(aminmax, "aminmax(*, dim=None, keepdim=False): (min, max)"),                                                   \
      X(norm, "norm(p='fro', dim=None, keepdim=False, dtype=None): the vector p-norm over dim")

PyMethodDef vkt_reduce_methods[] = {BOTH(M), {NULL, NULL, 0, NULL}};
PyMethodDef vkt_reduce_functions[] = {
    BOTH(F),
    F(var_mean, "var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=1): (var, mean)"),
    F(std_mean, "std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=1): (std, mean)"),
    {"_linalg_vector_norm", (PyCFunction)(void (*)(void))f_vector_norm, KW,
     "linalg.vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None)"},
    {"_linalg_matrix_norm", (PyCFunction)(void (*)(void))f_matrix_norm, KW,
     "linalg.matrix_norm(A, ord='fro', dim=(-2, -1), keepdim=False, *, dtype=None): fro, 1, -1, inf, -inf"},
    {NULL, NULL, 0, NULL}};
