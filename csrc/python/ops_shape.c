/* ops_shape.c: Python bindings of the shape family: cat, stack, split, chunk, flip, roll, tril/triu,
 * masked_fill, gather, index_select, and the writes copy_, fill_ and zero_. */
#include <stdlib.h>

#include "../autograd/shape.h"
#include "../ops/shape.h"
#include "py.h"

#define KW(fn) (PyCFunction)(void (*)(void))(fn)

/* The tensor argument `name` of `op`, or NULL with a TypeError. */
static vkt_tensor *tensor_arg(PyObject *o, const char *op, const char *name) {
  vkt_tensor *t = vkt_tensor_of(o);
  if (!t)
    PyErr_Format(PyExc_TypeError, "%s(): argument '%s' must be Tensor, not %R", op, name, (PyObject *)Py_TYPE(o));
  return t;
}

/* An int or a sequence of ints (at most VKT_MAX_DIMS) into v; -1 with an exception otherwise. */
static int int_list(PyObject *o, int *n, int64_t *v) {
  PyObject *args = PyTuple_Pack(1, o);
  int r = args ? vkt_parse_shape(args, n, v) : -1;
  Py_XDECREF(args);
  return r;
}

/* A tuple of n vars; steals their references (released on failure too). */
static PyObject *var_tuple(int64_t n, vkt_var *vs) {
  PyObject *r = PyTuple_New((Py_ssize_t)n);
  int64_t i = 0;
  for (; r && i < n; i++) {
    PyObject *o = vkt_wrap_var(&vs[i]); /* releases vs[i] when it fails */
    if (!o) {
      Py_CLEAR(r);
      i++;
      break;
    }
    PyTuple_SetItem(r, (Py_ssize_t)i, o);
  }
  for (; i < n; i++)
    vkt_var_release(&vs[i]);
  return r;
}

/* ---- cat and stack ---- */

static PyObject *join(PyObject *args, PyObject *kwargs, const char *name, bool stack) {
  static char *kw[] = {"tensors", "dim", NULL};
  PyObject *seq_o, *seq = NULL, *result = NULL;
  const vkt_var **ts = NULL;
  long long dim = 0;
  if (!vkt_parse_args(args, kwargs, "O|L", kw, &seq_o, &dim))
    return NULL;
  if (vkt_is_tensor(seq_o) || !(seq = PySequence_Tuple(seq_o))) {
    PyErr_Format(PyExc_TypeError, "%s(): argument 'tensors' must be tuple of Tensors, not %R", name,
                 (PyObject *)Py_TYPE(seq_o));
    goto finish;
  }
  Py_ssize_t n = PyTuple_Size(seq);
  if (!(ts = calloc((size_t)n + 1, sizeof *ts))) {
    PyErr_NoMemory();
    goto finish;
  }
  for (Py_ssize_t i = 0; i < n; i++)
    if (!(ts[i] = vkt_var_of(PyTuple_GetItem(seq, i)))) {
      PyErr_Format(PyExc_TypeError, "expected Tensor as element %zd in argument 0, but got %R", i,
                   (PyObject *)Py_TYPE(PyTuple_GetItem(seq, i)));
      goto finish;
    }
  vkt_var out;
  result = vkt_py_var_result(stack ? vkt_ag_stack((int)n, ts, dim, &out) : vkt_ag_cat((int)n, ts, dim, &out), &out);
finish:
  free(ts);
  Py_XDECREF(seq);
  return result;
}

static PyObject *f_cat(PyObject *m, PyObject *a, PyObject *k) {
  (void)m;
  return join(a, k, "cat", false);
}
static PyObject *f_stack(PyObject *m, PyObject *a, PyObject *k) {
  (void)m;
  return join(a, k, "stack", true);
}

/* ---- split and chunk ---- */

/* name: the node's (SplitBackward0 or SplitWithSizesBackward0). */
static PyObject *split_into(const vkt_var *x, int64_t dim, int64_t n, int64_t *sizes, const char *name) {
  PyObject *result = NULL;
  vkt_var *outs = calloc((size_t)n + 1, sizeof *outs);
  vkt_status st;
  if (!outs)
    PyErr_NoMemory();
  else if ((st = vkt_ag_split(x, dim, n, sizes, false, name, outs)))
    vkt_raise(st);
  else
    result = var_tuple(n, outs);
  free(outs);
  return result;
}

/* split with a sequence of section sizes. */
static PyObject *split_sections(const vkt_var *t, int64_t dim, PyObject *what) {
  PyObject *seq = PySequence_Tuple(what), *result = NULL;
  Py_ssize_t n = seq ? PyTuple_Size(seq) : 0;
  int64_t *sizes = seq ? calloc((size_t)n + 1, sizeof *sizes) : NULL;
  if (seq && !sizes)
    PyErr_NoMemory();
  for (Py_ssize_t i = 0; sizes && i < n && !PyErr_Occurred(); i++)
    sizes[i] = PyLong_AsLongLong(PyTuple_GetItem(seq, i));
  if (sizes && !PyErr_Occurred())
    result = split_into(t, dim, n, sizes, "SplitWithSizesBackward0");
  free(sizes);
  Py_XDECREF(seq);
  return result;
}

/* split(split_size_or_sections, dim=0); vkt.split(tensor, split_size_or_sections, dim=0) */
static PyObject *split(PyObject *self, PyObject *args, PyObject *kwargs) {
  static char *m_kw[] = {"split_size_or_sections", "dim", NULL};
  static char *f_kw[] = {"tensor", "split_size_or_sections", "dim", NULL};
  PyObject *x = self, *what, *result = NULL;
  long long dim = 0;
  int64_t *sizes = NULL, n = 0;
  int ok = self ? vkt_parse_args(args, kwargs, "O|L", m_kw, &what, &dim)
                : vkt_parse_args(args, kwargs, "OO|L", f_kw, &x, &what, &dim);
  vkt_tensor *t = ok ? tensor_arg(x, "split", "tensor") : NULL;
  if (!t)
    return NULL;
  if (PyIndex_Check(what)) {
    Py_ssize_t size = PyNumber_AsSsize_t(what, PyExc_OverflowError);
    vkt_status st = size == -1 && PyErr_Occurred() ? VKT_OK : vkt_split_sizes(t, dim, size, &sizes, &n);
    if (st)
      vkt_raise(st);
    if (sizes)
      result = split_into(vkt_var_of(x), dim, n, sizes, "SplitBackward0");
    free(sizes);
    return result;
  }
  return split_sections(vkt_var_of(x), dim, what);
}

/* chunk(chunks, dim=0); vkt.chunk(input, chunks, dim=0) */
static PyObject *chunk(PyObject *self, PyObject *args, PyObject *kwargs) {
  static char *m_kw[] = {"chunks", "dim", NULL}, *f_kw[] = {"input", "chunks", "dim", NULL};
  PyObject *x = self, *result = NULL;
  long long chunks, dim = 0;
  int64_t *sizes = NULL, n = 0;
  int ok = self ? vkt_parse_args(args, kwargs, "L|L", m_kw, &chunks, &dim)
                : vkt_parse_args(args, kwargs, "OL|L", f_kw, &x, &chunks, &dim);
  vkt_tensor *t = ok ? tensor_arg(x, "chunk", "input") : NULL;
  if (!t)
    return NULL;
  vkt_status st = vkt_chunk_sizes(t, dim, chunks, &sizes, &n);
  result = st ? vkt_raise(st) : split_into(vkt_var_of(x), dim, n, sizes, "SplitBackward0");
  free(sizes);
  return result;
}

/* ---- flip, roll, tril, triu ---- */

/* flip(*dims) as a method; vkt.flip(input, dims) */
static PyObject *flip(PyObject *self, PyObject *args, PyObject *kwargs) {
  static char *f_kw[] = {"input", "dims", NULL};
  PyObject *x = self, *dims = NULL;
  uint32_t mask;
  vkt_var out;
  if (self) {
    if (kwargs && !vkt_parse_args(args, kwargs, "|O", f_kw + 1, &dims))
      return NULL;
    if (!dims && PyTuple_Size(args) == 0) {
      PyErr_SetString(PyExc_TypeError, "flip() missing required argument 'dims'");
      return NULL;
    }
    dims = dims ? dims : PyTuple_Size(args) == 1 ? PyTuple_GetItem(args, 0) : args;
  } else if (!vkt_parse_args(args, kwargs, "OO", f_kw, &x, &dims)) {
    return NULL;
  }
  vkt_tensor *t = tensor_arg(x, "flip", "input");
  if (!t || vkt_py_dims(dims, t->ndim, &mask) < 0)
    return NULL;
  return vkt_py_var_result(vkt_ag_flip(vkt_var_of(x), mask, &out), &out);
}

/* roll(shifts, dims=None); vkt.roll(input, shifts, dims=None) */
static PyObject *roll(PyObject *self, PyObject *args, PyObject *kwargs) {
  static char *m_kw[] = {"shifts", "dims", NULL}, *f_kw[] = {"input", "shifts", "dims", NULL};
  PyObject *x = self, *shifts_o, *dims_o = Py_None;
  int64_t shifts[VKT_MAX_DIMS], dims[VKT_MAX_DIMS];
  int n, ndims = 0;
  vkt_var out;
  int ok = self ? vkt_parse_args(args, kwargs, "O|O", m_kw, &shifts_o, &dims_o)
                : vkt_parse_args(args, kwargs, "OO|O", f_kw, &x, &shifts_o, &dims_o);
  vkt_tensor *t = ok ? tensor_arg(x, "roll", "input") : NULL;
  if (!t || int_list(shifts_o, &n, shifts) < 0 || (dims_o != Py_None && int_list(dims_o, &ndims, dims) < 0))
    return NULL;
  return vkt_py_var_result(vkt_ag_roll(vkt_var_of(x), n, shifts, ndims, dims, &out), &out);
}

static PyObject *tri(PyObject *self, PyObject *args, PyObject *kwargs, bool upper) {
  static char *m_kw[] = {"diagonal", NULL}, *f_kw[] = {"input", "diagonal", NULL};
  PyObject *x = self;
  long long diagonal = 0;
  vkt_var out;
  int ok = self ? vkt_parse_args(args, kwargs, "|L", m_kw, &diagonal)
                : vkt_parse_args(args, kwargs, "O|L", f_kw, &x, &diagonal);
  vkt_tensor *t = ok ? tensor_arg(x, upper ? "triu" : "tril", "input") : NULL;
  return t ? vkt_py_var_result(vkt_ag_tri(vkt_var_of(x), upper, diagonal, &out), &out) : NULL;
}

static PyObject *f_split(PyObject *m, PyObject *a, PyObject *k) {
  (void)m;
  return split(NULL, a, k);
}
static PyObject *f_chunk(PyObject *m, PyObject *a, PyObject *k) {
  (void)m;
  return chunk(NULL, a, k);
}
static PyObject *f_flip(PyObject *m, PyObject *a, PyObject *k) {
  (void)m;
  return flip(NULL, a, k);
}
static PyObject *f_roll(PyObject *m, PyObject *a, PyObject *k) {
  (void)m;
  return roll(NULL, a, k);
}
static PyObject *tril(PyObject *s, PyObject *a, PyObject *k) { return tri(s, a, k, false); }
static PyObject *triu(PyObject *s, PyObject *a, PyObject *k) { return tri(s, a, k, true); }
static PyObject *f_tril(PyObject *m, PyObject *a, PyObject *k) {
  (void)m;
  return tri(NULL, a, k, false);
}
static PyObject *f_triu(PyObject *m, PyObject *a, PyObject *k) {
  (void)m;
  return tri(NULL, a, k, true);
}

/* ---- gather, index_select, masked_fill ---- */

/* gather(dim, index) and index_select(dim, index); functions take input first. */
static PyObject *take(PyObject *self, PyObject *args, PyObject *kwargs, bool select) {
  static char *m_kw[] = {"dim", "index", NULL}, *f_kw[] = {"input", "dim", "index", NULL};
  const char *name = select ? "index_select" : "gather";
  PyObject *x = self, *index_o;
  long long dim;
  vkt_tensor *index;
  vkt_var out, *v;
  int ok = self ? vkt_parse_args(args, kwargs, "LO", m_kw, &dim, &index_o)
                : vkt_parse_args(args, kwargs, "OLO", f_kw, &x, &dim, &index_o);
  if (!ok || !tensor_arg(x, name, "input") || !(index = tensor_arg(index_o, name, "index")))
    return NULL;
  v = vkt_var_of(x);
  return vkt_py_var_result(select ? vkt_ag_index_select(v, dim, index, &out) : vkt_ag_gather(v, dim, index, &out),
                           &out);
}

static PyObject *gather(PyObject *s, PyObject *a, PyObject *k) { return take(s, a, k, false); }
static PyObject *index_select(PyObject *s, PyObject *a, PyObject *k) { return take(s, a, k, true); }
static PyObject *f_gather(PyObject *m, PyObject *a, PyObject *k) {
  (void)m;
  return take(NULL, a, k, false);
}
static PyObject *f_index_select(PyObject *m, PyObject *a, PyObject *k) {
  (void)m;
  return take(NULL, a, k, true);
}

static PyObject *masked_fill(PyObject *self, PyObject *args, PyObject *kwargs, bool inplace) {
  static char *m_kw[] = {"mask", "value", NULL}, *f_kw[] = {"input", "mask", "value", NULL};
  PyObject *x = self, *mask_o, *value_o;
  vkt_tensor *t, *mask;
  vkt_var out;
  vkt_scalar v = {0};
  int ok = self ? vkt_parse_args(args, kwargs, "OO", m_kw, &mask_o, &value_o)
                : vkt_parse_args(args, kwargs, "OOO", f_kw, &x, &mask_o, &value_o);
  if (!ok || !(t = tensor_arg(x, "masked_fill", "input")) || !(mask = tensor_arg(mask_o, "masked_fill", "mask")))
    return NULL;
  vkt_var *value = vkt_var_of(value_o);
  if (!value && vkt_py_scalar(value_o, &v) < 0)
    return NULL;
  if (!inplace)
    return vkt_py_var_result(vkt_ag_masked_fill(vkt_var_of(x), mask, value, v, &out), &out);
  int records = vkt_py_inplace_records(SELF_V, value);
  if (records)
    return records < 0 ? NULL : vkt_py_inplace_result(self, vkt_ag_masked_fill(SELF_V, mask, value, v, &out), &out);
  vkt_status st = vkt_masked_fill(t, mask, value ? &value->t : NULL, v, true, NULL);
  return st ? vkt_raise(st) : Py_NewRef(self);
}

static PyObject *m_masked_fill(PyObject *s, PyObject *a, PyObject *k) { return masked_fill(s, a, k, false); }
static PyObject *m_masked_fill_(PyObject *s, PyObject *a, PyObject *k) { return masked_fill(s, a, k, true); }
static PyObject *f_masked_fill(PyObject *m, PyObject *a, PyObject *k) {
  (void)m;
  return masked_fill(NULL, a, k, false);
}

/* ---- writes: copy_, fill_, zero_, t[key] = value ---- */

static PyObject *copy_(PyObject *self, PyObject *args, PyObject *kwargs) {
  static char *kw[] = {"src", "non_blocking", NULL};
  PyObject *src_o, *non_blocking = Py_False;
  vkt_tensor *src;
  if (!vkt_parse_args(args, kwargs, "O|O", kw, &src_o, &non_blocking) || !(src = tensor_arg(src_o, "copy_", "src")))
    return NULL;
  /* src broadcasts to self's shape, PyTorch's rule: stricter than t[...] = src, which drops src's leading 1s */
  int ndim;
  int64_t shape[VKT_MAX_DIMS];
  vkt_status st = vkt_broadcast_shape(2, (const vkt_tensor *[]){SELF_T, src}, &ndim, shape);
  if (st || (st = vkt_into_shape_check(SELF_T, ndim, shape)))
    return vkt_raise(st);
  int records = vkt_py_inplace_records(SELF_V, vkt_var_of(src_o));
  if (records) /* recorded as self[...] = src */
    return records < 0 || vkt_py_setitem(self, Py_Ellipsis, src_o) < 0 ? NULL : Py_NewRef(self);
  st = vkt_assign(SELF_T, src);
  return st ? vkt_raise(st) : Py_NewRef(self);
}

int vkt_py_write_value(const vkt_tensor *dst, PyObject *value) {
  vkt_tensor *t = vkt_tensor_of(value), tmp = {0};
  vkt_scalar s;
  vkt_status st;
  if (t) {
    st = vkt_assign(dst, t);
  } else if (PyLong_Check(value) || PyFloat_Check(value)) {
    if (vkt_py_item_number(value, &s) < 0)
      return -1;
    if (!(st = vkt_fill_check(dst->dtype, 1, s))) /* PyTorch writes a number through a 0-d tensor */
      st = vkt_fill_(dst, s);
  } else {
    if (vkt_from_data(value, Py_None, VKT_CPU, &tmp) < 0)
      return -1;
    st = vkt_assign(dst, &tmp);
    vkt_tensor_release(&tmp);
  }
  return st ? (vkt_raise(st), -1) : 0;
}

/* fill_ (and zero_, `name` its node's) recorded as self[...] = value, its node named as PyTorch names it where
 * self is not a view (a view's write is its base's CopySlices). */
static PyObject *fill_recorded(PyObject *self, PyObject *value, const char *name) {
  if (vkt_py_setitem(self, Py_Ellipsis, value) < 0)
    return NULL;
  if (SELF_V->ag && !SELF_V->ag->base)
    vkt_ag_rename(SELF_V, name);
  return Py_NewRef(self);
}

static PyObject *fill_(PyObject *self, PyObject *value) {
  vkt_tensor *t = vkt_tensor_of(value);
  vkt_scalar s;
  vkt_status st;
  if (!t && vkt_py_scalar(value, &s) < 0)
    return NULL;
  if (!t && (st = vkt_fill_check(SELF_T->dtype, vkt_tensor_numel(SELF_T), s)))
    return vkt_raise(st);
  int records = t && t->ndim != 0 ? 0 : vkt_py_inplace_records(SELF_V, vkt_var_of(value));
  if (records)
    return records < 0 ? NULL : fill_recorded(self, value, t ? "FillBackward3" : "FillBackward2");
  if (t && t->ndim != 0)
    st = vkt_fail(VKT_ERR_RUNTIME, "fill_ only supports 0-dimension value tensor but got tensor with %d dimensions.",
                  t->ndim);
  else if (t)
    st = vkt_assign(SELF_T, t);
  else
    st = vkt_fill_(SELF_T, s);
  return st ? vkt_raise(st) : Py_NewRef(self);
}

static PyObject *zero_(PyObject *self, PyObject *unused) {
  (void)unused;
  int records = vkt_py_inplace_records(SELF_V, NULL);
  if (records) {
    PyObject *z = records < 0 ? NULL : PyLong_FromLong(0), *r = z ? fill_recorded(self, z, "ZeroBackward0") : NULL;
    Py_XDECREF(z);
    return r;
  }
  vkt_status st = vkt_fill_(SELF_T, (vkt_scalar){false, 0, 0});
  return st ? vkt_raise(st) : Py_NewRef(self);
}

/* _overwrite(dst, src, name): src's values (a tensor without grad: fresh random draws) written into dst, recorded
 * where dst is in a graph as an in-place op named `name` whose gradient to dst's history is zero: uniform_, normal_,
 * bernoulli_ and the other random fills of vkt.random. */
static PyObject *f_overwrite(PyObject *m, PyObject *args) {
  PyObject *dst, *src;
  const char *name;
  (void)m;
  if (!PyArg_ParseTuple(args, "OOs", &dst, &src, &name) || !tensor_arg(dst, "_overwrite", "dst") ||
      !tensor_arg(src, "_overwrite", "src"))
    return NULL;
  int records = vkt_py_inplace_records(vkt_var_of(dst), NULL);
  if (records)
    return records < 0 ? NULL : fill_recorded(dst, src, name);
  vkt_status st = vkt_assign(&((vkt_py_tensor *)dst)->v.t, vkt_tensor_of(src));
  return st ? vkt_raise(st) : Py_NewRef(dst);
}

/* ---- tables ---- */

#define MK(name, fn, doc)                                                                                              \
  { name, KW(fn), METH_VARARGS | METH_KEYWORDS, doc }

PyMethodDef vkt_shape_methods[] = {
    MK("split", split, "split(split_size_or_sections, dim=0): views"),
    MK("chunk", chunk, "chunk(chunks, dim=0): views"),
    MK("flip", flip, "flip(*dims): a copy with the order of elements along dims reversed"),
    MK("roll", roll, "roll(shifts, dims=None)"),
    MK("tril", tril, "tril(diagonal=0): the lower triangle of the last two dims"),
    MK("triu", triu, "triu(diagonal=0): the upper triangle of the last two dims"),
    MK("gather", gather, "gather(dim, index)"),
    MK("index_select", index_select, "index_select(dim, index)"),
    MK("masked_fill", m_masked_fill, "masked_fill(mask, value)"),
    MK("masked_fill_", m_masked_fill_, "in-place masked_fill(mask, value)"),
    MK("copy_", copy_, "copy_(src): writes src (broadcast, cast, from any device) into self"),
    {"fill_", fill_, METH_O, "fill_(value): every element becomes value"},
    {"zero_", zero_, METH_NOARGS, "fill_(0)"},
    {NULL, NULL, 0, NULL},
};

PyMethodDef vkt_shape_functions[] = {
    MK("cat", f_cat, "cat(tensors, dim=0)"),
    MK("concat", f_cat, "cat(tensors, dim=0)"),
    MK("concatenate", f_cat, "cat(tensors, dim=0)"),
    MK("stack", f_stack, "stack(tensors, dim=0)"),
    MK("split", f_split, "split(tensor, split_size_or_sections, dim=0): views"),
    MK("chunk", f_chunk, "chunk(input, chunks, dim=0): views"),
    MK("flip", f_flip, "flip(input, dims)"),
    MK("roll", f_roll, "roll(input, shifts, dims=None)"),
    MK("tril", f_tril, "tril(input, diagonal=0)"),
    MK("triu", f_triu, "triu(input, diagonal=0)"),
    MK("gather", f_gather, "gather(input, dim, index)"),
    MK("index_select", f_index_select, "index_select(input, dim, index)"),
    MK("masked_fill", f_masked_fill, "masked_fill(input, mask, value)"),
    {"_overwrite", f_overwrite, METH_VARARGS, "_overwrite(dst, src, name): a random fill of dst, named `name`"},
    {NULL, NULL, 0, NULL},
};
