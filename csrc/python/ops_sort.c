/* ops_sort.c: Python bindings of the scan, sort and selection families: cumsum, cumprod (and their
 * in-place forms), cummax, cummin, sort, argsort, msort, topk, kthvalue, median, nanmedian, mode, nonzero, argwhere,
 * unique, unique_consecutive, with PyTorch's signatures. Ops that give (values, indices) return vkt.return_types.<name>
 * with those field names. */
#include "py.h"

#include <stdio.h>
#include <string.h>

#include "../ops/scan.h"

/* ---- shared ---- */

/* The tensor `input` of function `name`, or NULL with PyTorch's TypeError. */
static vkt_tensor *input_of(PyObject *o, const char *name) {
  vkt_tensor *t = vkt_tensor_of(o);
  if (!t)
    PyErr_Format(PyExc_TypeError, "%s(): argument 'input' (position 1) must be Tensor, not %R", name,
                 (PyObject *)Py_TYPE(o));
  return t;
}

/* An int argument (position pos, counting the input) into *v; -1 with PyTorch's TypeError. */
static int int_arg(PyObject *o, const char *name, const char *arg, int pos, int64_t *v) {
  if (!o || !PyIndex_Check(o) || PyBool_Check(o)) {
    if (!o)
      PyErr_Format(PyExc_TypeError, "%s() missing 1 required positional arguments: \"%s\"", name, arg);
    else
      PyErr_Format(PyExc_TypeError, "%s(): argument '%s' (position %d) must be int, not %s", name, arg, pos,
                   Py_TYPE(o) == &PyFloat_Type ? "float" : "object");
    return -1;
  }
  long long x = PyLong_AsLongLong(o);
  if (x == -1 && PyErr_Occurred())
    return -1;
  *v = x;
  return 0;
}

/* vkt.return_types.<name>(values, indices), its type made on first use and kept for the life of the
 * process (vkt has one module state per process, see py.h). Steals both references. */
enum {
  PAIR_CUMMAX,
  PAIR_CUMMIN,
  PAIR_SORT,
  PAIR_TOPK,
  PAIR_KTHVALUE,
  PAIR_MEDIAN,
  PAIR_NANMEDIAN,
  PAIR_MODE,
  PAIR_COUNT
};
/* The (values, indices) pair of x's op along dim; values are recorded by autograd as picked from x. */
static PyObject *pair(int which, PyObject *x, int64_t dim, bool dropped, vkt_tensor *values, vkt_tensor *indices) {
  static const char *const names[PAIR_COUNT] = {
      [PAIR_CUMMAX] = "CummaxBackward0",       [PAIR_CUMMIN] = "CumminBackward0",     [PAIR_SORT] = "SortBackward0",
      [PAIR_TOPK] = "TopkBackward0",           [PAIR_KTHVALUE] = "KthvalueBackward0", [PAIR_MEDIAN] = "MedianBackward1",
      [PAIR_NANMEDIAN] = "NanmedianBackward1", [PAIR_MODE] = "ModeBackward0"};
  static PyStructSequence_Field fields[] = {{"values", NULL}, {"indices", NULL}, {NULL, NULL}};
  static PyStructSequence_Desc descs[PAIR_COUNT] = {
      [PAIR_CUMMAX] = {"vkt.return_types.cummax", "cummax(dim): (values, indices)", fields, 2},
      [PAIR_CUMMIN] = {"vkt.return_types.cummin", "cummin(dim): (values, indices)", fields, 2},
      [PAIR_SORT] = {"vkt.return_types.sort", "sort(): (values, indices)", fields, 2},
      [PAIR_TOPK] = {"vkt.return_types.topk", "topk(k): (values, indices)", fields, 2},
      [PAIR_KTHVALUE] = {"vkt.return_types.kthvalue", "kthvalue(k): (values, indices)", fields, 2},
      [PAIR_MEDIAN] = {"vkt.return_types.median", "median(dim): (values, indices)", fields, 2},
      [PAIR_NANMEDIAN] = {"vkt.return_types.nanmedian", "nanmedian(dim): (values, indices)", fields, 2},
      [PAIR_MODE] = {"vkt.return_types.mode", "mode(dim): (values, indices)", fields, 2}};
  static PyTypeObject *types[PAIR_COUNT];
  vkt_var v;
  vkt_status st = vkt_ag_selected(vkt_var_of(x), dim, dropped, values, indices, names[which], &v);
  if (st) {
    vkt_var_release(&v);
    vkt_tensor_release(indices);
    return vkt_raise(st);
  }
  return vkt_py_pair(&descs[which], &types[which], &v, indices);
}

/* ---- scans ---- */

typedef struct {
  const char *name;
  int id;
  bool in_place;
} scan_binding;

/* cumsum(input, dim, *, dtype=None), x.cumsum(dim, *, dtype=None), x.cumsum_(dim, *, dtype=None); cummax
 * and cummin without dtype, giving (values, indices). */
static PyObject *scan(PyObject *self, PyObject *args, PyObject *kwargs, const scan_binding *s) {
  static char *kw[] = {"input", "dim", "dtype", NULL}, *kw_pair[] = {"input", "dim", NULL};
  bool values_only = s->id == VKT_OP_CUMSUM || s->id == VKT_OP_CUMPROD;
  PyObject *x = self, *dim_o = NULL, *dtype_o = Py_None;
  char fmt[32];
  snprintf(fmt, sizeof fmt, "%s:%s", values_only ? "O|O$O" : "O|O", s->name);
  int ok = self ? vkt_parse_args(args, kwargs, fmt + 1, (values_only ? kw : kw_pair) + 1, &dim_o, &dtype_o)
                : vkt_parse_args(args, kwargs, fmt, values_only ? kw : kw_pair, &x, &dim_o, &dtype_o);
  vkt_tensor *t;
  int64_t dim;
  vkt_dtype dtype;
  bool given;
  if (!ok || !(t = input_of(x, s->name)) || int_arg(dim_o, s->name, "dim", self ? 1 : 2, &dim) < 0 ||
      vkt_parse_dtype(dtype_o, &dtype, &given) < 0)
    return NULL;
  if (s->in_place && given && dtype != t->dtype) {
    PyErr_Format(PyExc_RuntimeError, "Bad in-place call: input tensor dtype %s and output tensor dtype %s should match",
                 vkt_dtypes[t->dtype].c10_name, vkt_dtypes[dtype].c10_name);
    return NULL;
  }
  vkt_tensor out, indices;
  if (values_only) { /* recorded by autograd; in place where it must be, as PyTorch records cumsum_ */
    int records = s->in_place ? vkt_py_inplace_records(vkt_var_of(x), NULL) : 1;
    if (records < 0)
      return NULL;
    if (records) {
      vkt_var o;
      vkt_status st = (s->id == VKT_OP_CUMSUM ? vkt_ag_cumsum : vkt_ag_cumprod)(vkt_var_of(x), dim,
                                                                                given ? (int)dtype : -1, &o);
      return s->in_place ? vkt_py_inplace_result(x, st, &o) : vkt_py_var_result(st, &o);
    }
  }
  vkt_status st = vkt_scan(s->id, t, dim, given || s->in_place ? (int)(given ? dtype : t->dtype) : -1, &out,
                           values_only ? NULL : &indices);
  if (st)
    return vkt_raise(st);
  if (!values_only)
    return pair(s->id == VKT_OP_CUMMAX ? PAIR_CUMMAX : PAIR_CUMMIN, x, dim, false, &out, &indices);
  if (!s->in_place)
    return vkt_wrap(&out);
  st = vkt_copy_(t, &out);
  vkt_tensor_release(&out);
  return st ? vkt_raise(st) : Py_NewRef(self);
}

#define SCAN_METHOD(NAME, ID, IN_PLACE)                                                                                \
  static const scan_binding s_##NAME = {#NAME, ID, IN_PLACE};                                                          \
  static PyObject *m_##NAME(PyObject *self, PyObject *args, PyObject *kwargs) {                                        \
    return scan(self, args, kwargs, &s_##NAME);                                                                        \
  }
#define SCAN(NAME, ID)                                                                                                 \
  SCAN_METHOD(NAME, ID, false)                                                                                         \
  static PyObject *f_##NAME(PyObject *mod, PyObject *args, PyObject *kwargs) {                                         \
    (void)mod;                                                                                                         \
    return scan(NULL, args, kwargs, &s_##NAME);                                                                        \
  }
SCAN(cumsum, VKT_OP_CUMSUM)
SCAN(cumprod, VKT_OP_CUMPROD)
SCAN(cummax, VKT_OP_CUMMAX)
SCAN(cummin, VKT_OP_CUMMIN)
SCAN_METHOD(cumsum_, VKT_OP_CUMSUM, true)
SCAN_METHOD(cumprod_, VKT_OP_CUMPROD, true)

/* ---- sorting and selection ---- */

/* A bool argument as PyTorch takes it (any object's truth). */
static int bool_arg(PyObject *o, bool *v) {
  int r = PyObject_IsTrue(o);
  *v = r > 0;
  return r < 0 ? -1 : 0;
}

/* sort(input, dim=-1, descending=False, *, stable=False); argsort the same, giving the indices. */
static PyObject *sort_or_argsort(PyObject *self, PyObject *args, PyObject *kwargs, bool arg) {
  static char *kw[] = {"input", "dim", "descending", "stable", NULL};
  const char *name = arg ? "argsort" : "sort";
  PyObject *x = self, *dim_o = NULL, *desc_o = Py_False, *stable_o = Py_False;
  char fmt[32];
  snprintf(fmt, sizeof fmt, "O|OO$O:%s", name);
  int ok = self ? vkt_parse_args(args, kwargs, fmt + 1, kw + 1, &dim_o, &desc_o, &stable_o)
                : vkt_parse_args(args, kwargs, fmt, kw, &x, &dim_o, &desc_o, &stable_o);
  vkt_tensor *t;
  int64_t dim = -1;
  bool desc, stable;
  if (!ok || !(t = input_of(x, name)) || (dim_o && int_arg(dim_o, name, "dim", self ? 1 : 2, &dim) < 0) ||
      bool_arg(desc_o, &desc) < 0 || bool_arg(stable_o, &stable) < 0)
    return NULL;
  vkt_tensor values, indices;
  vkt_status st = vkt_sort(t, dim, desc, &values, &indices); /* always stable */
  if (st)
    return vkt_raise(st);
  if (!arg)
    return pair(PAIR_SORT, x, dim, false, &values, &indices);
  vkt_tensor_release(&values);
  return vkt_wrap(&indices);
}

static PyObject *m_sort(PyObject *self, PyObject *args, PyObject *kwargs) {
  return sort_or_argsort(self, args, kwargs, false);
}
static PyObject *f_sort(PyObject *mod, PyObject *args, PyObject *kwargs) {
  (void)mod;
  return sort_or_argsort(NULL, args, kwargs, false);
}
static PyObject *m_argsort(PyObject *self, PyObject *args, PyObject *kwargs) {
  return sort_or_argsort(self, args, kwargs, true);
}
static PyObject *f_argsort(PyObject *mod, PyObject *args, PyObject *kwargs) {
  (void)mod;
  return sort_or_argsort(NULL, args, kwargs, true);
}

/* msort(input): sort(dim=0).values */
static PyObject *msort(PyObject *x) {
  vkt_tensor *t = input_of(x, "msort"), values, indices;
  if (!t)
    return NULL;
  vkt_status st = vkt_sort(t, 0, false, &values, &indices);
  if (st)
    return vkt_raise(st);
  vkt_var v;
  st = vkt_ag_selected(vkt_var_of(x), 0, false, &values, &indices, "SortBackward0", &v);
  vkt_tensor_release(&indices);
  return vkt_py_var_result(st, &v);
}
static PyObject *m_msort(PyObject *self, PyObject *unused) {
  (void)unused;
  return msort(self);
}
static PyObject *f_msort(PyObject *mod, PyObject *x) {
  (void)mod;
  return msort(x);
}

/* topk(input, k, dim=-1, largest=True, sorted=True): always sorted, which sorted=False allows. */
static PyObject *topk(PyObject *self, PyObject *args, PyObject *kwargs) {
  static char *kw[] = {"input", "k", "dim", "largest", "sorted", NULL};
  PyObject *x = self, *k_o = NULL, *dim_o = NULL, *largest_o = Py_True, *sorted_o = Py_True;
  int ok = self ? vkt_parse_args(args, kwargs, "|OOOO:topk", kw + 1, &k_o, &dim_o, &largest_o, &sorted_o)
                : vkt_parse_args(args, kwargs, "O|OOOO:topk", kw, &x, &k_o, &dim_o, &largest_o, &sorted_o);
  vkt_tensor *t;
  int64_t k, dim = -1;
  bool largest, sorted;
  if (!ok || !(t = input_of(x, "topk")) || int_arg(k_o, "topk", "k", self ? 1 : 2, &k) < 0 ||
      (dim_o && int_arg(dim_o, "topk", "dim", self ? 2 : 3, &dim) < 0) || bool_arg(largest_o, &largest) < 0 ||
      bool_arg(sorted_o, &sorted) < 0)
    return NULL;
  vkt_tensor values, indices;
  vkt_status st = vkt_topk(t, k, dim, largest, &values, &indices);
  return st ? vkt_raise(st) : pair(PAIR_TOPK, x, dim, false, &values, &indices);
}
static PyObject *m_topk(PyObject *self, PyObject *args, PyObject *kwargs) { return topk(self, args, kwargs); }
static PyObject *f_topk(PyObject *mod, PyObject *args, PyObject *kwargs) {
  (void)mod;
  return topk(NULL, args, kwargs);
}

/* kthvalue(input, k, dim=-1, keepdim=False) */
static PyObject *kthvalue(PyObject *self, PyObject *args, PyObject *kwargs) {
  static char *kw[] = {"input", "k", "dim", "keepdim", NULL};
  PyObject *x = self, *k_o = NULL, *dim_o = NULL, *keep_o = Py_False;
  int ok = self ? vkt_parse_args(args, kwargs, "|OOO:kthvalue", kw + 1, &k_o, &dim_o, &keep_o)
                : vkt_parse_args(args, kwargs, "O|OOO:kthvalue", kw, &x, &k_o, &dim_o, &keep_o);
  vkt_tensor *t;
  int64_t k, dim = -1;
  bool keepdim;
  if (!ok || !(t = input_of(x, "kthvalue")) || int_arg(k_o, "kthvalue", "k", self ? 1 : 2, &k) < 0 ||
      (dim_o && int_arg(dim_o, "kthvalue", "dim", self ? 2 : 3, &dim) < 0) || bool_arg(keep_o, &keepdim) < 0)
    return NULL;
  vkt_tensor values, indices;
  vkt_status st = vkt_kthvalue(t, k, dim, keepdim, &values, &indices);
  return st ? vkt_raise(st) : pair(PAIR_KTHVALUE, x, dim, !keepdim, &values, &indices);
}
static PyObject *m_kthvalue(PyObject *self, PyObject *args, PyObject *kwargs) { return kthvalue(self, args, kwargs); }
static PyObject *f_kthvalue(PyObject *mod, PyObject *args, PyObject *kwargs) {
  (void)mod;
  return kthvalue(NULL, args, kwargs);
}

/* median(input) and median(input, dim, keepdim=False); nanmedian the same */
static PyObject *median(PyObject *self, PyObject *args, PyObject *kwargs, bool ignore_nan) {
  static char *kw[] = {"input", "dim", "keepdim", NULL};
  const char *name = ignore_nan ? "nanmedian" : "median";
  PyObject *x = self, *dim_o = Py_None, *keep_o = Py_False;
  char fmt[32];
  snprintf(fmt, sizeof fmt, "O|OO:%s", name);
  int ok = self ? vkt_parse_args(args, kwargs, fmt + 1, kw + 1, &dim_o, &keep_o)
                : vkt_parse_args(args, kwargs, fmt, kw, &x, &dim_o, &keep_o);
  vkt_tensor *t;
  int64_t dim = 0;
  bool keepdim;
  if (!ok || !(t = input_of(x, name)) || (dim_o != Py_None && int_arg(dim_o, name, "dim", self ? 1 : 2, &dim) < 0) ||
      bool_arg(keep_o, &keepdim) < 0)
    return NULL;
  vkt_tensor values, indices;
  vkt_status st = vkt_median(t, dim, dim_o == Py_None, keepdim, ignore_nan, &values, &indices);
  if (st)
    return vkt_raise(st);
  if (dim_o == Py_None) { /* no indices */
    vkt_var v;
    return vkt_py_var_result(vkt_ag_evenly(vkt_var_of(x), name, &values, &v), &v);
  }
  return pair(ignore_nan ? PAIR_NANMEDIAN : PAIR_MEDIAN, x, dim, !keepdim, &values, &indices);
}
static PyObject *m_median(PyObject *self, PyObject *args, PyObject *kwargs) {
  return median(self, args, kwargs, false);
}
static PyObject *f_median(PyObject *mod, PyObject *args, PyObject *kwargs) {
  (void)mod;
  return median(NULL, args, kwargs, false);
}
static PyObject *m_nanmedian(PyObject *self, PyObject *args, PyObject *kwargs) {
  return median(self, args, kwargs, true);
}
static PyObject *f_nanmedian(PyObject *mod, PyObject *args, PyObject *kwargs) {
  (void)mod;
  return median(NULL, args, kwargs, true);
}

/* mode(input, dim=-1, keepdim=False) */
static PyObject *mode(PyObject *self, PyObject *args, PyObject *kwargs) {
  static char *kw[] = {"input", "dim", "keepdim", NULL};
  PyObject *x = self, *dim_o = NULL, *keep_o = Py_False;
  int ok = self ? vkt_parse_args(args, kwargs, "|OO:mode", kw + 1, &dim_o, &keep_o)
                : vkt_parse_args(args, kwargs, "O|OO:mode", kw, &x, &dim_o, &keep_o);
  vkt_tensor *t;
  int64_t dim = -1;
  bool keepdim;
  if (!ok || !(t = input_of(x, "mode")) || (dim_o && int_arg(dim_o, "mode", "dim", self ? 1 : 2, &dim) < 0) ||
      bool_arg(keep_o, &keepdim) < 0)
    return NULL;
  vkt_tensor values, indices;
  vkt_status st = vkt_mode(t, dim, keepdim, &values, &indices);
  return st ? vkt_raise(st) : pair(PAIR_MODE, x, dim, !keepdim, &values, &indices);
}
static PyObject *m_mode(PyObject *self, PyObject *args, PyObject *kwargs) { return mode(self, args, kwargs); }
static PyObject *f_mode(PyObject *mod, PyObject *args, PyObject *kwargs) {
  (void)mod;
  return mode(NULL, args, kwargs);
}

/* ---- compaction: nonzero, argwhere, unique, unique_consecutive ---- */

/* nonzero(input, *, as_tuple=False): [count, ndim] coordinates, or a tuple of one column per dim (a 0-d
 * input counts as 1-D there, as in PyTorch) */
static PyObject *nonzero(PyObject *self, PyObject *args, PyObject *kwargs, const char *name) {
  static char *kw[] = {"input", "as_tuple", NULL}, *kw_argwhere[] = {"input", NULL};
  PyObject *x = self, *as_tuple_o = Py_False;
  bool as_tuple = false, argwhere = strcmp(name, "argwhere") == 0;
  char fmt[32];
  snprintf(fmt, sizeof fmt, "%s:%s", argwhere ? "O" : "O|$O", name);
  char **k = argwhere ? kw_argwhere : kw;
  int ok = self ? vkt_parse_args(args, kwargs, fmt + 1, k + 1, &as_tuple_o)
                : vkt_parse_args(args, kwargs, fmt, k, &x, &as_tuple_o);
  vkt_tensor *t, coords;
  if (!ok || !(t = input_of(x, name)) || bool_arg(as_tuple_o, &as_tuple) < 0)
    return NULL;
  vkt_status st = vkt_nonzero(t, &coords);
  if (st)
    return vkt_raise(st);
  if (!as_tuple)
    return vkt_wrap(&coords);
  int cols = t->ndim ? t->ndim : 1;
  PyObject *r = PyTuple_New(cols);
  for (int d = 0; r && d < cols; d++) {
    vkt_tensor col = {0}, dense = {0};
    PyObject *o = NULL;
    if (t->ndim == 0) { /* the one element's position, 0, where it is nonzero */
      st = vkt_tensor_empty(&dense, vkt_tensor_device(t), VKT_INT64, 1, coords.shape);
      st = st ? st : vkt_fill_(&dense, (vkt_scalar){false, 0, 0});
    } else if (!(st = vkt_select(&col, &coords, 1, d))) {
      st = vkt_contiguous(&dense, &col);
    }
    vkt_tensor_release(&col);
    if (st || !(o = vkt_wrap(&dense))) {
      if (st)
        vkt_raise(st);
      Py_CLEAR(r);
      break;
    }
    PyTuple_SetItem(r, d, o);
  }
  vkt_tensor_release(&coords);
  return r;
}
static PyObject *m_nonzero(PyObject *self, PyObject *args, PyObject *kwargs) {
  return nonzero(self, args, kwargs, "nonzero");
}
static PyObject *f_nonzero(PyObject *mod, PyObject *args, PyObject *kwargs) {
  (void)mod;
  return nonzero(NULL, args, kwargs, "nonzero");
}
static PyObject *m_argwhere(PyObject *self, PyObject *args, PyObject *kwargs) {
  return nonzero(self, args, kwargs, "argwhere");
}
static PyObject *f_argwhere(PyObject *mod, PyObject *args, PyObject *kwargs) {
  (void)mod;
  return nonzero(NULL, args, kwargs, "argwhere");
}

/* unique's dim: an int, with PyTorch's errors (its unique(dim=) is unique_dim(input, dim, ...)) */
static int unique_dim_arg(PyObject *o, bool consecutive, int64_t *d) {
  if (PyIndex_Check(o) && !PyBool_Check(o)) {
    *d = PyLong_AsLongLong(o);
    return *d == -1 && PyErr_Occurred() ? -1 : 0;
  }
  PyObject *type = PyType_GetName(Py_TYPE(o));
  if (type)
    PyErr_Format(PyExc_TypeError, "%s must be int, not %U",
                 consecutive ? "unique_consecutive(): argument 'dim'" : "unique_dim(): argument 'dim' (position 2)",
                 type);
  Py_XDECREF(type);
  return -1;
}

/* unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None) and
 * unique_consecutive(input, return_inverse=False, return_counts=False, dim=None): the values, or a tuple
 * with the inverse and/or counts after them. Always sorted, which sorted=False allows; with dim, of the slices
 * along dim (sorted lexicographically). */
static PyObject *unique(PyObject *self, PyObject *args, PyObject *kwargs, bool consecutive) {
  static char *kw[] = {"input", "sorted", "return_inverse", "return_counts", "dim", NULL};
  static char *kw_c[] = {"input", "return_inverse", "return_counts", "dim", NULL};
  const char *name = consecutive ? "unique_consecutive" : "unique";
  PyObject *x = self, *sorted_o = Py_True, *inv_o = Py_False, *cnt_o = Py_False, *dim = Py_None;
  int ok;
  if (consecutive)
    ok = self ? vkt_parse_args(args, kwargs, "|OOO:unique_consecutive", kw_c + 1, &inv_o, &cnt_o, &dim)
              : vkt_parse_args(args, kwargs, "O|OOO:unique_consecutive", kw_c, &x, &inv_o, &cnt_o, &dim);
  else
    ok = self ? vkt_parse_args(args, kwargs, "|OOOO:unique", kw + 1, &sorted_o, &inv_o, &cnt_o, &dim)
              : vkt_parse_args(args, kwargs, "O|OOOO:unique", kw, &x, &sorted_o, &inv_o, &cnt_o, &dim);
  vkt_tensor *t;
  bool sorted, want_inv, want_cnt;
  if (!ok || !(t = input_of(x, name)) || bool_arg(sorted_o, &sorted) < 0 || bool_arg(inv_o, &want_inv) < 0 ||
      bool_arg(cnt_o, &want_cnt) < 0)
    return NULL;
  int64_t d = 0;
  if (dim != Py_None && unique_dim_arg(dim, consecutive, &d) < 0)
    return NULL;
  vkt_tensor values, inverse, counts;
  vkt_status st =
      dim == Py_None
          ? vkt_unique(t, consecutive, &values, want_inv ? &inverse : NULL, want_cnt ? &counts : NULL)
          : vkt_unique_dim(t, d, consecutive, &values, want_inv ? &inverse : NULL, want_cnt ? &counts : NULL);
  if (st)
    return vkt_raise(st);
  if (!want_inv && !want_cnt)
    return vkt_wrap(&values);
  PyObject *items[3] = {vkt_wrap(&values), want_inv ? vkt_wrap(&inverse) : NULL, want_cnt ? vkt_wrap(&counts) : NULL};
  PyObject *r = NULL;
  if (items[0] && (!want_inv || items[1]) && (!want_cnt || items[2]))
    r = want_inv && want_cnt ? PyTuple_Pack(3, items[0], items[1], items[2])
                             : PyTuple_Pack(2, items[0], want_inv ? items[1] : items[2]);
  for (int k = 0; k < 3; k++)
    Py_XDECREF(items[k]);
  return r;
}
static PyObject *m_unique(PyObject *self, PyObject *args, PyObject *kwargs) {
  return unique(self, args, kwargs, false);
}
static PyObject *f_unique(PyObject *mod, PyObject *args, PyObject *kwargs) {
  (void)mod;
  return unique(NULL, args, kwargs, false);
}
static PyObject *m_unique_consecutive(PyObject *self, PyObject *args, PyObject *kwargs) {
  return unique(self, args, kwargs, true);
}
static PyObject *f_unique_consecutive(PyObject *mod, PyObject *args, PyObject *kwargs) {
  (void)mod;
  return unique(NULL, args, kwargs, true);
}

/* ---- searchsorted and bucketize ---- */

/* A values argument: the tensor itself (borrowed into *t), or a Python number as a new 0-d tensor in
 * *own, of its type promoted with seq's as PyTorch would. */
static int values_arg(PyObject *o, const vkt_tensor *seq, const char *name, vkt_tensor *own, const vkt_tensor **t) {
  vkt_operand ops[2] = {{.t = seq}, {0}};
  *t = vkt_tensor_of(o);
  if (*t)
    return 0;
  if (vkt_py_scalar(o, &ops[1].s) < 0) {
    PyErr_Clear();
    PyErr_Format(PyExc_TypeError, "%s(): argument 'input' must be Tensor or Number, not %R", name,
                 (PyObject *)Py_TYPE(o));
    return -1;
  }
  ops[1].is_bool = PyBool_Check(o);
  vkt_status st = vkt_tensor_empty(own, vkt_tensor_device(seq), vkt_result_type(2, ops), 0, NULL);
  if (!st && (st = vkt_fill_(own, ops[1].s)))
    vkt_tensor_release(own);
  if (st)
    return vkt_raise(st), -1;
  *t = own;
  return 0;
}

/* searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None, sorter=None) and
 * bucketize(input, boundaries, *, out_int32=False, right=False), which takes a 1-D sequence only */
static PyObject *search(PyObject *args, PyObject *kwargs, bool bucketize) {
  static char *kw[] = {"sorted_sequence", "input", "out_int32", "right", "side", "sorter", NULL};
  static char *kw_b[] = {"input", "boundaries", "out_int32", "right", NULL};
  PyObject *seq_o, *val_o, *int32_o = Py_False, *right_o = Py_False, *side = Py_None, *sorter_o = Py_None;
  int ok = bucketize ? vkt_parse_args(args, kwargs, "OO|$OO:bucketize", kw_b, &val_o, &seq_o, &int32_o, &right_o)
                     : vkt_parse_args(args, kwargs, "OO|$OOOO:searchsorted", kw, &seq_o, &val_o, &int32_o, &right_o,
                                      &side, &sorter_o);
  const char *name = bucketize ? "bucketize" : "searchsorted";
  bool out_int32, right;
  vkt_tensor *seq, own = {0};
  const vkt_tensor *values, *sorter = NULL;
  if (!ok || bool_arg(int32_o, &out_int32) < 0 || bool_arg(right_o, &right) < 0)
    return NULL;
  if (!(seq = vkt_tensor_of(seq_o)))
    return PyErr_Format(PyExc_TypeError, "%s(): argument '%s' must be Tensor, not %R", name,
                        bucketize ? "boundaries" : "sorted_sequence", (PyObject *)Py_TYPE(seq_o));
  if (bucketize && seq->ndim != 1)
    return PyErr_Format(PyExc_RuntimeError, "boundaries tensor must be 1 dimension, but got dim(%d)", seq->ndim);
  if (side != Py_None) {
    bool is_right = PyUnicode_Check(side) && PyUnicode_CompareWithASCIIString(side, "right") == 0;
    if (!is_right && !(PyUnicode_Check(side) && PyUnicode_CompareWithASCIIString(side, "left") == 0))
      return PyErr_Format(PyExc_RuntimeError, "torch.searchsorted(): side can only be 'left' or 'right' but got %S",
                          side);
    if (right && !is_right)
      return PyErr_Format(PyExc_RuntimeError, "torch.searchsorted(): side and right can't be set to opposites, got "
                                              "side of left while right was True");
    right = is_right;
  }
  if (sorter_o != Py_None && !(sorter = vkt_tensor_of(sorter_o)))
    return PyErr_Format(PyExc_TypeError, "searchsorted(): argument 'sorter' must be Tensor, not %R",
                        (PyObject *)Py_TYPE(sorter_o));
  if (values_arg(val_o, seq, name, &own, &values) < 0)
    return NULL;
  vkt_tensor out;
  vkt_status st = vkt_searchsorted(seq, values, right, sorter, out_int32, &out);
  vkt_tensor_release(&own);
  return vkt_py_result(st, &out);
}
static PyObject *f_searchsorted(PyObject *mod, PyObject *args, PyObject *kwargs) {
  (void)mod;
  return search(args, kwargs, false);
}
static PyObject *f_bucketize(PyObject *mod, PyObject *args, PyObject *kwargs) {
  (void)mod;
  return search(args, kwargs, true);
}

#define KW (METH_VARARGS | METH_KEYWORDS)
#define M(NAME, DOC)                                                                                                   \
  { #NAME, (PyCFunction)(void (*)(void))m_##NAME, KW, DOC }
#define F(NAME, DOC)                                                                                                   \
  { #NAME, (PyCFunction)(void (*)(void))f_##NAME, KW, DOC }
#define BOTH(X)                                                                                                        \
  X(cumsum, "cumsum(dim, *, dtype=None): running sums along dim"),                                                     \
      X(cumprod, "cumprod(dim, *, dtype=None): running products along dim"),                                           \
      X(cummax, "cummax(dim): (values, indices) of the running maximum along dim"),                                    \
      X(cummin, "cummin(dim): (values, indices) of the running minimum along dim"),                                    \
      X(sort,                                                                                                          \
        "sort(dim=-1, descending=False, *, stable=False): (values, indices), NaN as the largest; stable always"),      \
      X(argsort, "argsort(dim=-1, descending=False, *, stable=False): the indices of sort"),                           \
      X(topk, "topk(k, dim=-1, largest=True, sorted=True): (values, indices) of the k largest (smallest)"),            \
      X(kthvalue, "kthvalue(k, dim=-1, keepdim=False): (values, indices) of the k-th smallest"),                       \
      X(median, "median(): the lower median; median(dim, keepdim=False): (values, indices); NaN wins"),                \
      X(nanmedian, "nanmedian(): median ignoring NaN; nanmedian(dim, keepdim=False): (values, indices)"),              \
      X(mode, "mode(dim=-1, keepdim=False): (values, indices) of the most frequent value, its last position"),         \
      X(nonzero, "nonzero(*, as_tuple=False): the [count, ndim] coordinates of the nonzero elements"),                 \
      X(argwhere, "argwhere(): nonzero()"),                                                                            \
      X(unique, "unique(sorted=True, return_inverse=False, return_counts=False, dim=None): distinct values, sorted"),  \
      X(unique_consecutive, "unique_consecutive(return_inverse=False, return_counts=False, dim=None): runs' values")

PyMethodDef vkt_sort_methods[] = {BOTH(M),
                                  {"msort", m_msort, METH_NOARGS, "msort(): sort(dim=0).values"},
                                  M(cumsum_, "cumsum_(dim, *, dtype=None): cumsum in place"),
                                  M(cumprod_, "cumprod_(dim, *, dtype=None): cumprod in place"),
                                  {NULL, NULL, 0, NULL}};
PyMethodDef vkt_sort_functions[] = {
    BOTH(F),
    {"msort", f_msort, METH_O, "msort(input): sort(input, dim=0).values"},
    F(searchsorted, "searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None, sorter=None)"),
    F(bucketize, "bucketize(input, boundaries, *, out_int32=False, right=False)"),
    {NULL, NULL, 0, NULL}};
