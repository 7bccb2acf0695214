/* ops_index.c: Python bindings of advanced indexing: the keys of t[key] and t[key] = value that hold
 * tensors, lists, NumPy arrays or bools (with ints, slices, None and Ellipsis beside them), and
 * index_put_. Basic keys stay with Tensor.__getitem__ (tensor.c). */
#include <string.h>

#include "../autograd/shape.h"
#include "../autograd/write.h"
#include "../ops/shape.h"
#include "py.h"

#define KW(fn) (PyCFunction)(void (*)(void))(fn)

/* An int, or anything operator.index takes (NumPy's integer scalars and 0-d integer arrays): a select. */
static bool int_like(PyObject *o) {
  if (PyBool_Check(o) || vkt_is_tensor(o) || PyList_Check(o))
    return false;
  if (PyLong_Check(o))
    return true;
  PyObject *i = PyIndex_Check(o) ? PyNumber_Index(o) : NULL;
  PyErr_Clear(); /* not an index: an array of several, a NumPy bool */
  Py_XDECREF(i);
  return i != NULL;
}

/* Whether an item of a key makes it advanced: a tensor, a list, a range, a NumPy array (anything with a
 * buffer) or a bool. */
static bool is_advanced(PyObject *o) {
  return !int_like(o) &&
         (vkt_is_tensor(o) || PyList_Check(o) || PyRange_Check(o) || PyBool_Check(o) || PyObject_CheckBuffer(o));
}

/* A key taken apart: a view of self after its basic items, and an index (or NULL) per dim of the view. */
typedef struct {
  vkt_tensor view;
  int n;
  const vkt_tensor *indices[VKT_MAX_DIMS];
  vkt_tensor owned[VKT_MAX_DIMS]; /* lists and arrays converted to tensors */
} parsed_key;

static void parsed_release(parsed_key *k) {
  vkt_tensor_release(&k->view);
  for (int i = 0; i < VKT_MAX_DIMS; i++)
    vkt_tensor_release(&k->owned[i]);
}

/* The dims an item consumes of the tensor it indexes. */
static int consumes(PyObject *o) {
  if (o == Py_None || o == Py_Ellipsis || PyBool_Check(o))
    return 0;
  vkt_tensor *t = vkt_tensor_of(o);
  if (t && t->dtype == VKT_BOOL)
    return t->ndim;
  return 1;
}

/* An index item as a tensor: a tensor itself, else a conversion (an empty list is an int64 index). */
static int index_tensor(PyObject *o, vkt_tensor *owned, const vkt_tensor **out) {
  if ((*out = vkt_tensor_of(o)))
    return 0;
  if (vkt_from_data(o, Py_None, VKT_CPU, owned) < 0)
    return -1;
  if (vkt_tensor_numel(owned) == 0 && vkt_dtypes[owned->dtype].is_float) {
    vkt_tensor e;
    vkt_status st = vkt_tensor_empty(&e, VKT_CPU, VKT_INT64, owned->ndim, owned->shape);
    if (st)
      return vkt_raise(st), -1;
    vkt_tensor_release(owned);
    *owned = e;
  }
  if (owned->dtype != VKT_BOOL && owned->dtype != VKT_UINT8 && owned->dtype != VKT_INT32 && owned->dtype != VKT_INT64) {
    PyErr_SetString(PyExc_IndexError, "tensors used as indices must be long, int, byte or bool tensors");
    return -1;
  }
  *out = owned;
  return 0;
}

/* A bool (Python's, or a 0-d bool tensor) as an index, as PyTorch takes it: a new dim of size 1 in *cur, indexed by
 * the int64 tensor [0] where true and [] where false (*index, on the host), so that the result is a copy and its dims
 * fall where other advanced indices put theirs. */
static vkt_status bool_item(PyObject *o, vkt_tensor *cur, int dim, vkt_tensor *index) {
  vkt_tensor next;
  bool value = o == Py_True;
  vkt_tensor *t = vkt_tensor_of(o);
  vkt_status st = VKT_OK;
  if (t) {
    uint8_t b = 0;
    if ((st = vkt_read(t, &b)))
      return st;
    value = b != 0;
  }
  if ((st = vkt_unsqueeze(&next, cur, dim)))
    return st;
  vkt_tensor_release(cur);
  *cur = next;
  int64_t n = value;
  if (!(st = vkt_tensor_empty(index, VKT_CPU, VKT_INT64, 1, &n)) && value)
    st = vkt_fill_(index, (vkt_scalar){.i = 0});
  return st;
}

/* 1 with k filled for an advanced key, 0 for a basic one, -1 on error. */
static int parse_key(const vkt_tensor *self, PyObject *key, parsed_key *k) {
  PyObject *items = PyTuple_Check(key) ? Py_NewRef(key) : PyTuple_Pack(1, key);
  if (!items)
    return -1;
  Py_ssize_t n = PyTuple_Size(items);
  int consumed = 0, ellipses = 0, advanced = 0, rc = -1;
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *o = PyTuple_GetItem(items, i);
    advanced += is_advanced(o) || (vkt_tensor_of(o) && vkt_tensor_of(o)->ndim == 0);
    ellipses += o == Py_Ellipsis;
    consumed += consumes(o);
  }
  *k = (parsed_key){0};
  if (!advanced) {
    Py_DECREF(items);
    return 0;
  }
  vkt_status st = VKT_OK;
  if (ellipses > 1)
    st = vkt_fail(VKT_ERR_INDEX, "an index can only have a single ellipsis ('...')");
  else if (consumed > self->ndim)
    st = vkt_fail(VKT_ERR_INDEX, "too many indices for tensor of dimension %d", self->ndim);
  vkt_tensor_share(&k->view, self);
  int dim = 0;
  for (Py_ssize_t i = 0; i < n && !st; i++) {
    PyObject *o = PyTuple_GetItem(items, i);
    vkt_tensor next = {0};
    vkt_tensor *t = vkt_tensor_of(o);
    if (o == Py_None) {
      st = vkt_unsqueeze(&next, &k->view, dim);
      k->indices[k->n++] = NULL, dim++;
    } else if (PyBool_Check(o) || (t && t->ndim == 0 && t->dtype == VKT_BOOL)) {
      st = bool_item(o, &k->view, dim, &k->owned[k->n]);
      k->indices[k->n] = &k->owned[k->n], k->n++, dim++;
      continue;
    } else if (o == Py_Ellipsis) {
      int skip = k->view.ndim - dim - consumed;
      for (int e = 0; e < skip; e++)
        k->indices[k->n++] = NULL, dim++;
      continue;
    } else if (PySlice_Check(o)) {
      Py_ssize_t start, stop, step;
      if (PySlice_Unpack(o, &start, &stop, &step) < 0)
        goto finish;
      if (step <= 0) {
        st = vkt_fail(VKT_ERR_VALUE, "step must be greater than zero");
        break;
      }
      PySlice_AdjustIndices((Py_ssize_t)k->view.shape[dim], &start, &stop, step);
      st = vkt_slice(&next, &k->view, dim, start, stop, step);
      k->indices[k->n++] = NULL, dim++, consumed--;
    } else if (int_like(o)) {
      Py_ssize_t idx = PyNumber_AsSsize_t(o, PyExc_IndexError);
      if (idx == -1 && PyErr_Occurred())
        goto finish;
      st = vkt_select(&next, &k->view, dim, idx);
      consumed--;
    } else if (is_advanced(o) || t) {
      const vkt_tensor *index;
      if (index_tensor(o, &k->owned[k->n], &index) < 0)
        goto finish;
      int m = index->dtype == VKT_BOOL || index->dtype == VKT_UINT8 ? index->ndim : 1;
      k->indices[k->n++] = index, dim += m, consumed -= m;
      continue;
    } else {
      st = vkt_fail(VKT_ERR_INDEX, "only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are "
                                   "valid indices");
      break;
    }
    if (!st) {
      vkt_tensor_release(&k->view);
      k->view = next;
    }
  }
  rc = st ? (vkt_raise(st), -1) : 1;
finish:
  Py_DECREF(items);
  if (rc < 0)
    parsed_release(k);
  return rc;
}

static bool same_view(const vkt_tensor *a, const vkt_tensor *b) {
  size_t dims = sizeof *a->shape * (size_t)a->ndim;
  return a->ndim == b->ndim && a->offset == b->offset && !memcmp(a->shape, b->shape, dims) &&
         !memcmp(a->strides, b->strides, dims);
}

PyObject *vkt_py_getitem_advanced(PyObject *self, PyObject *key) {
  parsed_key k;
  vkt_var view = {0}, out;
  vkt_tensor v;
  int r = parse_key(SELF_T, key, &k);
  if (r <= 0)
    return NULL;
  vkt_status st = VKT_OK;
  if (same_view(&k.view, SELF_T)) {
    vkt_var_share(&view, SELF_V);
  } else { /* the key's basic items: a view of self, recorded */
    vkt_tensor_share(&v, &k.view);
    st = vkt_ag_view(SELF_V, &v, VKT_VIEW_STRIDED, NULL, "SliceBackward0", &view);
  }
  if (!st)
    st = vkt_ag_index(&view, k.n, k.indices, &out);
  vkt_var_release(&view);
  parsed_release(&k);
  return vkt_py_var_result(st, &out);
}

/* value as a tensor on dst's device: a tensor as it is, a number as a 0-d tensor of dst's dtype, else
 * whatever vkt.tensor() takes, in dst's dtype (PyTorch refuses lists and arrays). */
static int value_tensor(const vkt_tensor *dst, PyObject *value, vkt_tensor *out) {
  vkt_tensor *t = vkt_tensor_of(value), tmp = {0};
  vkt_scalar s;
  vkt_status st;
  if (t) {
    st = vkt_to(out, t, vkt_tensor_device(dst), t->dtype);
  } else if (PyLong_Check(value) || PyFloat_Check(value)) {
    if (vkt_py_item_number(value, &s) < 0)
      return -1;
    if (!(st = vkt_fill_check(dst->dtype, 1, s)) &&
        !(st = vkt_tensor_empty(out, vkt_tensor_device(dst), dst->dtype, 0, NULL)) && (st = vkt_fill_(out, s)))
      vkt_tensor_release(out);
  } else {
    if (vkt_from_data(value, Py_None, VKT_CPU, &tmp) < 0)
      return -1;
    st = vkt_to(out, &tmp, vkt_tensor_device(dst), dst->dtype); /* data is dst's values, as a number is */
    vkt_tensor_release(&tmp);
  }
  return st ? (vkt_raise(st), -1) : 0;
}

/* The view of c (a fresh row-major copy of self) that key's basic items make, with its advanced indices in
 * k (k->n 0 for a basic key); 1 where the key had basic items, 0 where not, -1 on error. */
static int key_view(vkt_tensor *c, PyObject *key, parsed_key *k) {
  int r = parse_key(c, key, k);
  if (r != 0)
    return r < 0 ? -1 : !same_view(&k->view, c);
  vkt_tensor share;
  vkt_tensor_share(&share, c);
  PyObject *whole = vkt_wrap(&share), *sub = whole ? PyObject_GetItem(whole, key) : NULL;
  if (sub)
    vkt_tensor_share(&k->view, vkt_tensor_of(sub));
  Py_XDECREF(whole);
  Py_XDECREF(sub);
  return sub ? 1 : -1;
}

/* self[key] = value where autograd records it: written out of place into a copy (CopySlices where the key
 * has basic items, else IndexPutBackward0), which self then becomes. */
static int setitem_recorded(PyObject *self, PyObject *key, PyObject *value) {
  vkt_var *vv = vkt_var_of(value), values = {0}, out = {0};
  vkt_tensor copy = {0};
  parsed_key k = {0};
  int device = vkt_tensor_device(SELF_T), rc = -1;
  vkt_status st = vkt_inplace_check(SELF_V, true);
  if (!st && vv && vkt_tensor_device(&vv->t) != device)
    st = vkt_ag_cast(vv, device, vv->t.dtype, VKT_PRESERVE_FORMAT, false, &values);
  else if (!st && vv)
    vkt_var_share(&values, vv);
  else if (!st && value_tensor(SELF_T, value, &values.t) < 0)
    return -1;
  if (!st)
    st = vkt_clone(&copy, SELF_T);
  if (st) {
    vkt_raise(st);
    goto finish;
  }
  int slices = key_view(&copy, key, &k);
  if (slices >= 0) {
    st = vkt_ag_index_put(SELF_V, &k.view, k.n, k.indices, &values, false, slices, &out);
    PyObject *r = vkt_py_inplace_result(self, st, &out);
    rc = r ? 0 : -1;
    Py_XDECREF(r);
    parsed_release(&k);
  }
finish:
  vkt_var_release(&values);
  vkt_tensor_release(&copy);
  return rc;
}

/* A 0-d integer tensor of a key as its number: PyTorch reads it (.item()) and selects, so x[t] is a view. */
static PyObject *scalar_item(PyObject *o) {
  vkt_tensor *t = vkt_is_tensor(o) ? vkt_tensor_of(o) : NULL;
  if (!t || t->ndim || vkt_dtypes[t->dtype].is_float || t->dtype == VKT_BOOL || t->dtype == VKT_UINT8)
    return Py_NewRef(o); /* a 0-d bool or uint8 is a mask */
  return PyObject_CallMethod(o, "item", NULL);
}

/* scalar_item on the key and on each item of a tuple key. */
static PyObject *scalar_items(PyObject *key) {
  if (!PyTuple_Check(key))
    return scalar_item(key);
  Py_ssize_t n = PyTuple_Size(key);
  PyObject *out = PyTuple_New(n);
  for (Py_ssize_t i = 0; out && i < n; i++) {
    PyObject *o = scalar_item(PyTuple_GetItem(key, i));
    if (!o)
      Py_CLEAR(out);
    else
      PyTuple_SetItem(out, i, o);
  }
  return out;
}

/* PyTorch's legacy rule (NumPy's before 1.23): a list shorter than 32 that holds a sequence, a tensor, a slice,
 * None or Ellipsis is a tuple of indices (x[[rows, cols]] is x[rows, cols]), with PyTorch's warning. */
static PyObject *legacy_key(PyObject *key) {
  Py_ssize_t n = PyList_Check(key) ? PyList_Size(key) : 0;
  for (Py_ssize_t i = 0; i < n && n < 32; i++) {
    PyObject *o = PyList_GetItem(key, i);
    if (!vkt_is_tensor(o) && !PySequence_Check(o) && !PySlice_Check(o) && o != Py_None && o != Py_Ellipsis)
      continue;
    if (PyErr_WarnEx(PyExc_UserWarning,
                     "Using a non-tuple sequence for multidimensional indexing is deprecated; use x[tuple(seq)] "
                     "instead of x[seq]",
                     1) < 0)
      return NULL;
    return PyList_AsTuple(key);
  }
  return Py_NewRef(key);
}

PyObject *vkt_py_index_key(PyObject *key) {
  PyObject *k = legacy_key(key), *r = k ? scalar_items(k) : NULL;
  Py_XDECREF(k);
  return r;
}

static int setitem(PyObject *self, PyObject *key, PyObject *value) {
  parsed_key k;
  vkt_tensor v = {0};
  if (!value) {
    PyErr_SetString(PyExc_TypeError, "Tensor does not support item deletion");
    return -1;
  }
  if (vkt_grad_enabled() && (vkt_requires_grad(SELF_V) || vkt_requires_grad(vkt_var_of(value))))
    return setitem_recorded(self, key, value);
  vkt_status refused = vkt_inplace_check(SELF_V, false); /* an inference tensor outside inference mode */
  if (refused)
    return vkt_raise(refused), -1;
  int r = parse_key(SELF_T, key, &k);
  if (r == 1) {
    if (value_tensor(SELF_T, value, &v) < 0) {
      r = -1;
    } else {
      vkt_status st = vkt_index_put_(&k.view, k.n, k.indices, &v, false);
      r = st ? (vkt_raise(st), -1) : 0;
    }
    vkt_tensor_release(&v);
    parsed_release(&k);
    return r;
  }
  if (r < 0)
    return -1;
  PyObject *view = PyObject_GetItem(self, key); /* basic indexing: a view sharing self's storage */
  if (!view)
    return -1;
  r = vkt_py_write_value(vkt_tensor_of(view), value);
  Py_DECREF(view);
  return r;
}

int vkt_py_setitem(PyObject *self, PyObject *key, PyObject *value) {
  PyObject *k = vkt_py_index_key(key);
  int r = k ? setitem(self, k, value) : -1;
  Py_XDECREF(k);
  return r;
}

/* ---- index_put_ and index_put ---- */

int vkt_py_no_backward(const char *op, PyObject *x, PyObject *other, bool inplace) {
  vkt_var *xv = vkt_var_of(x), *ov = other ? vkt_var_of(other) : NULL;
  int records = inplace && xv ? vkt_py_inplace_records(xv, ov)
                              : vkt_grad_enabled() && (vkt_requires_grad(xv) || vkt_requires_grad(ov));
  if (records > 0)
    PyErr_Format(PyExc_RuntimeError,
                 "vkt: %s has no backward formula yet, so it cannot take part in autograd; call it under "
                 "vkt.no_grad() or on .detach()ed tensors",
                 op);
  return records ? -1 : 0;
}

/* A tuple or list of tensors (None for a whole dim) into indices; -1 with TypeError otherwise. */
static int tensor_list(PyObject *o, const char *op, int *n, const vkt_tensor **indices) {
  PyObject *seq = PySequence_Check(o) && !vkt_is_tensor(o) ? PySequence_Tuple(o) : NULL;
  Py_ssize_t len = seq ? PyTuple_Size(seq) : -1;
  int rc = seq && len <= VKT_MAX_DIMS ? 0 : -1;
  for (Py_ssize_t i = 0; !rc && i < len; i++) {
    PyObject *item = PyTuple_GetItem(seq, i);
    indices[i] = item == Py_None ? NULL : vkt_tensor_of(item);
    rc = item == Py_None || indices[i] ? 0 : -1;
  }
  *n = (int)len;
  Py_XDECREF(seq);
  if (rc < 0)
    PyErr_Format(PyExc_TypeError, "%s(): argument 'indices' must be tuple of Tensors", op);
  return rc;
}

static PyObject *index_put(PyObject *self, PyObject *args, PyObject *kwargs, bool inplace) {
  static char *m_kw[] = {"indices", "values", "accumulate", NULL};
  static char *f_kw[] = {"input", "indices", "values", "accumulate", NULL};
  const char *name = inplace ? "index_put_" : "index_put";
  PyObject *x = self, *indices_o, *values_o;
  int accumulate = 0, n;
  const vkt_tensor *indices[VKT_MAX_DIMS];
  vkt_tensor *t, *values, out;
  int ok = self ? vkt_parse_args(args, kwargs, "OO|p", m_kw, &indices_o, &values_o, &accumulate)
                : vkt_parse_args(args, kwargs, "OOO|p", f_kw, &x, &indices_o, &values_o, &accumulate);
  if (!ok || !(t = vkt_tensor_of(x)) || tensor_list(indices_o, name, &n, indices) < 0)
    return ok && !PyErr_Occurred() ? PyErr_Format(PyExc_TypeError, "%s(): argument 'input' must be Tensor", name)
                                   : NULL;
  if (!(values = vkt_tensor_of(values_o)))
    return PyErr_Format(PyExc_TypeError, "%s(): argument 'values' must be Tensor", name);
  vkt_var *xv = vkt_var_of(x), *vv = vkt_var_of(values_o), r = {0};
  int records =
      inplace ? vkt_py_inplace_records(xv, vv) : vkt_grad_enabled() && (vkt_requires_grad(xv) || vkt_requires_grad(vv));
  if (records < 0)
    return NULL;
  if (records) { /* written into a copy, recorded */
    vkt_status st = vkt_clone(&out, t);
    if (!st)
      st = vkt_ag_index_put(xv, &out, n, indices, vv, accumulate, false, &r);
    vkt_tensor_release(&out);
    return inplace ? vkt_py_inplace_result(x, st, &r) : vkt_py_var_result(st, &r);
  }
  if (inplace) {
    vkt_status st = vkt_index_put_(t, n, indices, values, accumulate);
    return st ? vkt_raise(st) : Py_NewRef(x);
  }
  vkt_status st = vkt_clone(&out, t);
  if (!st && (st = vkt_index_put_(&out, n, indices, values, accumulate)))
    vkt_tensor_release(&out);
  return vkt_py_result(st, &out);
}

static PyObject *m_index_put_(PyObject *s, PyObject *a, PyObject *k) { return index_put(s, a, k, true); }
static PyObject *m_index_put(PyObject *s, PyObject *a, PyObject *k) { return index_put(s, a, k, false); }
static PyObject *f_index_put(PyObject *m, PyObject *a, PyObject *k) {
  (void)m;
  return index_put(NULL, a, k, false);
}
static PyObject *f_index_put_(PyObject *m, PyObject *a, PyObject *k) {
  (void)m;
  return index_put(NULL, a, k, true);
}

/* ---- scatter, scatter_add, index_copy, index_add: methods (in place with _) and functions ---- */

/* Whether a write of src into x (in place or not) must be recorded; -1 with PyTorch's errors. */
static int write_records(PyObject *x, PyObject *src_o, bool inplace) {
  vkt_var *xv = vkt_var_of(x), *sv = src_o ? vkt_var_of(src_o) : NULL;
  return inplace ? vkt_py_inplace_records(xv, sv)
                 : vkt_grad_enabled() && (vkt_requires_grad(xv) || vkt_requires_grad(sv));
}

/* The recorded write (computed out of place), x then taking it in place. */
static PyObject *write_recorded(PyObject *x, vkt_status st, vkt_var *r, bool inplace) {
  return inplace ? vkt_py_inplace_result(x, st, r) : vkt_py_var_result(st, r);
}

/* A reduce= argument: scatter's "add"/"multiply" (legacy), or scatter_reduce's names; -1 with an error. */
static int reduce_arg(PyObject *o, bool legacy, vkt_scatter_reduce *how) {
  static const char *names[] = {"sum", "prod", "mean", "amax", "amin"};
  const char *s = o && PyUnicode_Check(o) ? PyUnicode_AsUTF8AndSize(o, NULL) : NULL;
  for (int k = 0; s && !legacy && k < 5; k++)
    if (strcmp(s, names[k]) == 0)
      return *how = (vkt_scatter_reduce)k, 0;
  if (s && legacy && (strcmp(s, "add") == 0 || strcmp(s, "multiply") == 0))
    return *how = s[0] == 'a' ? VKT_SCATTER_SUM : VKT_SCATTER_PROD, 0;
  if (!PyErr_Occurred())
    PyErr_Format(PyExc_RuntimeError,
                 legacy ? "reduce argument must be either add or multiply, got %R"
                        : "reduce argument must be either sum, prod, mean, amax or amin, got %R",
                 o);
  return -1;
}

/* scatter(dim, index, src) or scatter(dim, index, value), scatter_add and index_copy: (dim, index, tensor, or
 * a number for scatter); scatter also takes reduce="add" or "multiply". */
static PyObject *write_along(PyObject *self, PyObject *args, PyObject *kwargs, const char *name, bool index_form,
                             bool add, bool inplace) {
  static char *m_kw[] = {"dim", "index", "src", "reduce", NULL};
  static char *f_kw[] = {"input", "dim", "index", "src", "reduce", NULL};
  static char *m_kw1[] = {"dim", "index", "src", NULL}, *f_kw1[] = {"input", "dim", "index", "src", NULL};
  static char *m_kw2[] = {"dim", "index", "source", NULL}, *f_kw2[] = {"input", "dim", "index", "source", NULL};
  PyObject *x = self, *index_o, *src_o, *reduce_o = Py_None;
  long long dim;
  vkt_scatter_reduce how = VKT_SCATTER_SUM;
  vkt_tensor *t, *index, out = {0}, value = {0}, spread = {0};
  bool can_reduce = !index_form && !add;
  int ok = self ? vkt_parse_args(args, kwargs, can_reduce ? "LOO|$O" : "LOO",
                                 index_form   ? m_kw2
                                 : can_reduce ? m_kw
                                              : m_kw1,
                                 &dim, &index_o, &src_o, &reduce_o)
                : vkt_parse_args(args, kwargs, can_reduce ? "OLOO|$O" : "OLOO",
                                 index_form   ? f_kw2
                                 : can_reduce ? f_kw
                                              : f_kw1,
                                 &x, &dim, &index_o, &src_o, &reduce_o);
  if (!ok || (reduce_o != Py_None && reduce_arg(reduce_o, true, &how) < 0))
    return NULL;
  vkt_tensor *src = vkt_tensor_of(src_o);
  if (index_form) { /* PyTorch's parser's words, which count the function's input as argument 1 */
    PyObject *args3[] = {x, index_o, src_o};
    const char *names[] = {"input", "index", "source"};
    for (int k = self ? 1 : 0; k < 3; k++) {
      PyObject *type = vkt_is_tensor(args3[k]) ? NULL : PyType_GetName(Py_TYPE(args3[k]));
      if (type) {
        PyErr_Format(PyExc_TypeError, "%s(): argument '%s' (position %d) must be Tensor, not %U", name, names[k],
                     k + (self ? 0 : 1) + (k > 0), type);
        Py_DECREF(type);
      }
      if (PyErr_Occurred())
        return NULL;
    }
  }
  if (!(t = vkt_tensor_of(x)) || !(index = vkt_tensor_of(index_o)))
    return PyErr_Format(PyExc_TypeError, "%s(): expected Tensor arguments for input and index", name);
  vkt_scalar v = {0};
  vkt_status st = VKT_OK;
  int records = write_records(x, src_o, inplace);
  if (records && reduce_o != Py_None)
    return records < 0 ? NULL
                       : PyErr_Format(PyExc_RuntimeError,
                                      "vkt: %s with reduce=%R has no backward (as in PyTorch); call it under "
                                      "vkt.no_grad() or on .detach()ed tensors",
                                      name, reduce_o);
  if (records < 0 || (records && !src && (index_form || add || vkt_py_scalar(src_o, &v) < 0)))
    return PyErr_Occurred() ? NULL : PyErr_Format(PyExc_TypeError, "%s(): argument 'src' must be Tensor", name);
  if (records && !src && (st = vkt_scalar_check(t->dtype, v)))
    return vkt_raise(st);
  if (records) {
    vkt_var r;
    vkt_write_kind kind = index_form ? VKT_WRITE_INDEX_COPY : add ? VKT_WRITE_SCATTER_ADD : VKT_WRITE_SCATTER;
    return write_recorded(x, vkt_ag_write(kind, vkt_var_of(x), dim, index, vkt_var_of(src_o), v, true, &r), &r,
                          inplace);
  }
  if (!src) { /* scatter(dim, index, value): the number broadcast over index's shape */
    if (index_form || add || vkt_py_scalar(src_o, &v) < 0)
      return PyErr_Occurred() ? NULL : PyErr_Format(PyExc_TypeError, "%s(): argument 'src' must be Tensor", name);
    if (!(st = vkt_scalar_check(t->dtype, v)) &&
        !(st = vkt_tensor_empty(&value, vkt_tensor_device(t), t->dtype, 0, NULL)) && !(st = vkt_fill_(&value, v)))
      st = vkt_expand(&spread, &value, index->ndim, index->shape);
    src = &spread;
  }
  const vkt_tensor *target = t;
  if (!st && !inplace && !(st = vkt_clone(&out, t)))
    target = &out;
  if (!st && reduce_o != Py_None)
    st = vkt_scatter_reduce_(target, dim, index, src, how, true);
  else if (!st)
    st = index_form ? vkt_index_copy_(target, dim, index, src, add) : vkt_scatter_(target, dim, index, src, add);
  vkt_tensor_release(&value);
  vkt_tensor_release(&spread);
  if (st) {
    vkt_tensor_release(&out);
    return vkt_raise(st);
  }
  return inplace ? Py_NewRef(x) : vkt_wrap(&out);
}

#define WRITE_ALONG(fn, name, index_form, add)                                                                         \
  static PyObject *m_##fn(PyObject *s, PyObject *a, PyObject *k) {                                                     \
    return write_along(s, a, k, name, index_form, add, false);                                                         \
  }                                                                                                                    \
  static PyObject *m_##fn##_(PyObject *s, PyObject *a, PyObject *k) {                                                  \
    return write_along(s, a, k, name "_", index_form, add, true);                                                      \
  }                                                                                                                    \
  static PyObject *f_##fn(PyObject *m, PyObject *a, PyObject *k) {                                                     \
    (void)m;                                                                                                           \
    return write_along(NULL, a, k, name, index_form, add, false);                                                      \
  }
WRITE_ALONG(scatter, "scatter", false, false)
WRITE_ALONG(scatter_add, "scatter_add", false, true)
WRITE_ALONG(index_copy, "index_copy", true, false)

/* index_add(dim, index, source, *, alpha=1): source * alpha added at index. */
static PyObject *index_add(PyObject *self, PyObject *args, PyObject *kwargs, bool inplace) {
  static char *m_kw[] = {"dim", "index", "source", "alpha", NULL};
  static char *f_kw[] = {"input", "dim", "index", "source", "alpha", NULL};
  PyObject *x = self, *index_o, *src_o, *alpha_o = NULL;
  long long dim;
  vkt_scalar alpha = {false, 0, 1};
  vkt_tensor *t, *index, *src, out = {0}, scaled = {0};
  int ok = self ? vkt_parse_args(args, kwargs, "LOO|$O", m_kw, &dim, &index_o, &src_o, &alpha_o)
                : vkt_parse_args(args, kwargs, "OLOO|$O", f_kw, &x, &dim, &index_o, &src_o, &alpha_o);
  if (!ok || (alpha_o && vkt_py_scalar(alpha_o, &alpha) < 0))
    return NULL;
  if (!(t = vkt_tensor_of(x)) || !(index = vkt_tensor_of(index_o)) || !(src = vkt_tensor_of(src_o)))
    return PyErr_Format(PyExc_TypeError, "index_add(): expected Tensor arguments for input, index and source");
  int records = write_records(x, src_o, inplace);
  if (records < 0)
    return NULL;
  vkt_status st = VKT_OK;
  if (records && !(alpha.is_float && !vkt_dtypes[t->dtype].is_float)) {
    vkt_var r;
    return write_recorded(
        x, vkt_ag_write(VKT_WRITE_INDEX_ADD, vkt_var_of(x), dim, index, vkt_var_of(src_o), alpha, true, &r), &r,
        inplace);
  }
  if (alpha.is_float && !vkt_dtypes[t->dtype].is_float)
    st = vkt_fail(VKT_ERR_RUNTIME, "For integral input tensors, argument alpha must not be a floating point number.");
  else if (alpha.is_float ? alpha.f != 1 : alpha.i != 1) /* scaled keeps source's dtype */
    st = vkt_binary(VKT_OP_MUL, (vkt_operand){.t = src}, (vkt_operand){.s = alpha}, (vkt_scalar){false, 0, 1}, NULL,
                    &scaled);
  if (!st && !inplace)
    st = vkt_clone(&out, t);
  if (!st)
    st = vkt_index_copy_(inplace ? t : &out, dim, index, scaled.storage ? &scaled : src, true);
  vkt_tensor_release(&scaled);
  if (st) {
    vkt_tensor_release(&out);
    return vkt_raise(st);
  }
  return inplace ? Py_NewRef(x) : vkt_wrap(&out);
}
static PyObject *m_index_add(PyObject *s, PyObject *a, PyObject *k) { return index_add(s, a, k, false); }
static PyObject *m_index_add_(PyObject *s, PyObject *a, PyObject *k) { return index_add(s, a, k, true); }
static PyObject *f_index_add(PyObject *m, PyObject *a, PyObject *k) {
  (void)m;
  return index_add(NULL, a, k, false);
}

static const vkt_scalar one_ = {false, 0, 1};

/* scatter_reduce(dim, index, src, reduce, *, include_self=True) */
static PyObject *scatter_reduce(PyObject *self, PyObject *args, PyObject *kwargs, bool inplace) {
  static char *m_kw[] = {"dim", "index", "src", "reduce", "include_self", NULL};
  static char *f_kw[] = {"input", "dim", "index", "src", "reduce", "include_self", NULL};
  PyObject *x = self, *index_o, *src_o, *reduce_o;
  long long dim;
  int include_self = 1;
  vkt_scatter_reduce how;
  vkt_tensor *t, *index, *src, out = {0};
  int ok = self ? vkt_parse_args(args, kwargs, "LOOO|$p", m_kw, &dim, &index_o, &src_o, &reduce_o, &include_self)
                : vkt_parse_args(args, kwargs, "OLOOO|$p", f_kw, &x, &dim, &index_o, &src_o, &reduce_o, &include_self);
  if (!ok || reduce_arg(reduce_o, false, &how) < 0)
    return NULL;
  if (!(t = vkt_tensor_of(x)) || !(index = vkt_tensor_of(index_o)) || !(src = vkt_tensor_of(src_o)))
    return PyErr_Format(PyExc_TypeError, "scatter_reduce(): expected Tensor arguments for input, index and src");
  int records = write_records(x, src_o, inplace);
  if (records < 0)
    return NULL;
  if (records) {
    vkt_var r;
    return write_recorded(x,
                          vkt_ag_write(VKT_WRITE_REDUCE(how), vkt_var_of(x), dim, index, vkt_var_of(src_o), one_,
                                       include_self, &r),
                          &r, inplace);
  }
  vkt_status st = inplace ? VKT_OK : vkt_clone(&out, t);
  if (!st && (st = vkt_scatter_reduce_(inplace ? t : &out, dim, index, src, how, include_self)))
    vkt_tensor_release(&out);
  if (inplace)
    return st ? vkt_raise(st) : Py_NewRef(x);
  return vkt_py_result(st, &out);
}

static PyObject *m_scatter_reduce(PyObject *s, PyObject *a, PyObject *k) { return scatter_reduce(s, a, k, false); }
static PyObject *m_scatter_reduce_(PyObject *s, PyObject *a, PyObject *k) { return scatter_reduce(s, a, k, true); }
static PyObject *f_scatter_reduce(PyObject *m, PyObject *a, PyObject *k) {
  (void)m;
  return scatter_reduce(NULL, a, k, false);
}

#define MK(name, fn, doc)                                                                                              \
  { name, KW(fn), METH_VARARGS | METH_KEYWORDS, doc }

PyMethodDef vkt_index_methods[] = {
    MK("index_put_", m_index_put_, "index_put_(indices, values, accumulate=False): self[indices] = values (or +=)"),
    MK("index_put", m_index_put, "index_put(indices, values, accumulate=False): a copy with index_put_ applied"),
    MK("scatter", m_scatter, "scatter(dim, index, src or value)"),
    MK("scatter_", m_scatter_, "in-place scatter(dim, index, src or value)"),
    MK("scatter_add", m_scatter_add, "scatter_add(dim, index, src): repeated indices add up"),
    MK("scatter_add_", m_scatter_add_, "in-place scatter_add(dim, index, src)"),
    MK("scatter_reduce", m_scatter_reduce, "scatter_reduce(dim, index, src, reduce, *, include_self=True)"),
    MK("scatter_reduce_", m_scatter_reduce_, "in-place scatter_reduce(dim, index, src, reduce, *, include_self=True)"),
    MK("index_copy", m_index_copy, "index_copy(dim, index, source)"),
    MK("index_copy_", m_index_copy_, "in-place index_copy(dim, index, source)"),
    MK("index_add", m_index_add, "index_add(dim, index, source, *, alpha=1): repeated indices add up"),
    MK("index_add_", m_index_add_, "in-place index_add(dim, index, source, *, alpha=1)"),
    {NULL, NULL, 0, NULL},
};

PyMethodDef vkt_index_functions[] = {
    MK("index_put_", f_index_put_, "index_put_(input, indices, values, accumulate=False)"),
    MK("index_put", f_index_put, "index_put(input, indices, values, accumulate=False)"),
    MK("scatter", f_scatter, "scatter(input, dim, index, src or value)"),
    MK("scatter_add", f_scatter_add, "scatter_add(input, dim, index, src)"),
    MK("scatter_reduce", f_scatter_reduce, "scatter_reduce(input, dim, index, src, reduce, *, include_self=True)"),
    MK("index_copy", f_index_copy, "index_copy(input, dim, index, source)"),
    MK("index_add", f_index_add, "index_add(input, dim, index, source, *, alpha=1)"),
    {NULL, NULL, 0, NULL},
};
