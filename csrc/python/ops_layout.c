/* ops_layout.c: Python bindings of the layout composites (narrow, movedim, swapaxes, unflatten, unbind,
 * diagonal, diag, diag_embed, trace, repeat, tile, repeat_interleave, rot90, fliplr, flipud,
 * broadcast_to, broadcast_tensors, atleast_Nd, hstack/vstack/dstack/column_stack), of take,
 * take_along_dim, masked_select, masked_scatter and index_fill, and the module-level forms of Tensor's
 * view methods (vkt.reshape(x, shape) is x.reshape(shape)). */
#include <stdlib.h>
#include <string.h>

#include "../autograd/shape.h"
#include "../autograd/write.h"
#include "../ops/reduce.h"
#include "../ops/shape.h"
#include "py.h"

#define KW(fn) (PyCFunction)(void (*)(void))(fn)

/* An int or a sequence of ints (at most VKT_MAX_DIMS) into v; -1 with an exception otherwise. */
static int int_list(PyObject *o, int *n, int64_t *v) {
  PyObject *args = PyTuple_Check(o) || PyList_Check(o) ? PySequence_Tuple(o) : PyTuple_Pack(1, o);
  int r = args ? vkt_parse_shape(args, n, v) : -1;
  Py_XDECREF(args);
  return r;
}

/* Sizes given as *args or as one sequence (repeat(2, 3) and repeat((2, 3))). */
static int sizes_arg(PyObject *args, int *n, int64_t *v) {
  if (PyTuple_Size(args) == 1)
    return int_list(PyTuple_GetItem(args, 0), n, v);
  return vkt_parse_shape(args, n, v);
}

static vkt_tensor *tensor_arg(PyObject *o, const char *op, const char *name) {
  vkt_tensor *t = o ? vkt_tensor_of(o) : NULL;
  if (!t)
    PyErr_Format(PyExc_TypeError, "%s(): argument '%s' must be Tensor", op, name);
  return t;
}

/* Methods take self; the functions call them with self NULL and input first among args. */
#define PARSE(fmt, mkw, fkw, ...)                                                                                      \
  (self ? vkt_parse_args(args, kwargs, fmt, mkw, __VA_ARGS__)                                                          \
        : vkt_parse_args(args, kwargs, "O" fmt, fkw, &x, __VA_ARGS__))
/* A view of input x that an op made (st its status, view stolen), recorded as kind. */
static PyObject *view_of(PyObject *x, vkt_status st, vkt_tensor *view, vkt_view_kind kind, const char *name) {
  vkt_var v;
  return st ? vkt_raise(st) : vkt_py_var_result(vkt_ag_view(vkt_var_of(x), view, kind, NULL, name, &v), &v);
}

/* The same for a strided view whose op made twin too, from x's index space, where x needs one (vkt_ag_view_indexed;
 * twin empty where not); both stolen. */
static PyObject *indexed_of(PyObject *x, vkt_status st, vkt_tensor *view, vkt_tensor *twin, const char *name) {
  vkt_var v;
  const vkt_tensor *used = twin->storage ? twin : NULL;
  PyObject *r = st ? vkt_raise(st) : vkt_py_var_result(vkt_ag_view_indexed(vkt_var_of(x), view, used, name, &v), &v);
  vkt_tensor_release(view);
  vkt_tensor_release(twin);
  return r;
}

#define FUNCTION(fn)                                                                                                   \
  static PyObject *f_##fn(PyObject *m, PyObject *a, PyObject *k) {                                                     \
    (void)m;                                                                                                           \
    return fn(NULL, a, k);                                                                                             \
  }

static PyObject *narrow(PyObject *self, PyObject *args, PyObject *kwargs) {
  static char *mkw[] = {"dim", "start", "length", NULL}, *fkw[] = {"input", "dim", "start", "length", NULL};
  PyObject *x = self;
  long long dim, start, length;
  vkt_tensor out = {0}, twin = {0}, space, *t;
  if (!PARSE("LLL", mkw, fkw, &dim, &start, &length) || !(t = tensor_arg(x, "narrow", "input")))
    return NULL;
  vkt_tensor_index_space(t, &space);
  vkt_status st = vkt_narrow(&out, t, dim, start, length);
  if (!st && vkt_ag_view_needs_twin(vkt_var_of(x)))
    st = vkt_narrow(&twin, &space, dim, start, length);
  vkt_tensor_release(&space);
  return indexed_of(x, st, &out, &twin, "SliceBackward0");
}
FUNCTION(narrow)

/* select(dim, index), with select()'s own errors (indexing's words differ). */
static PyObject *select_dim(PyObject *self, PyObject *args, PyObject *kwargs) {
  static char *mkw[] = {"dim", "index", NULL}, *fkw[] = {"input", "dim", "index", NULL};
  PyObject *x = self;
  long long dim, index;
  vkt_tensor out = {0}, twin = {0}, space, *t;
  int d;
  if (!PARSE("LL", mkw, fkw, &dim, &index) || !(t = tensor_arg(x, "select", "input")))
    return NULL;
  if (t->ndim == 0)
    return vkt_raise(vkt_fail(VKT_ERR_INDEX, "select() cannot be applied to a 0-dim tensor."));
  vkt_status st = vkt_dim_wrap(dim, t->ndim, &d);
  if (!st && (index < -t->shape[d] || index >= t->shape[d])) {
    char shape[96];
    vkt_shape_str(t->ndim, t->shape, shape, sizeof shape);
    st = vkt_fail(VKT_ERR_INDEX, "select(): index %lld out of range for tensor of size %s at dimension %d", index,
                  shape, d);
  }
  vkt_tensor_index_space(t, &space);
  if (!st && !(st = vkt_select(&out, t, d, index)) && vkt_ag_view_needs_twin(vkt_var_of(x)))
    st = vkt_select(&twin, &space, d, index);
  vkt_tensor_release(&space);
  return indexed_of(x, st, &out, &twin, "SelectBackward0");
}
FUNCTION(select_dim)

/* unfold(dimension, size, step): overlapping windows, whose gradients add up (the strided backward's). */
static PyObject *unfold(PyObject *self, PyObject *args, PyObject *kwargs) {
  static char *mkw[] = {"dimension", "size", "step", NULL};
  long long dim, size, step;
  vkt_tensor out = {0}, twin = {0}, space;
  if (!vkt_parse_args(args, kwargs, "LLL", mkw, &dim, &size, &step))
    return NULL;
  vkt_tensor_index_space(SELF_T, &space);
  vkt_status st = vkt_unfold(&out, SELF_T, dim, size, step);
  if (!st && vkt_ag_view_needs_twin(SELF_V))
    st = vkt_unfold(&twin, &space, dim, size, step);
  vkt_tensor_release(&space);
  return indexed_of(self, st, &out, &twin, "UnfoldBackward0");
}

static PyObject *movedim(PyObject *self, PyObject *args, PyObject *kwargs) {
  static char *mkw[] = {"source", "destination", NULL}, *fkw[] = {"input", "source", "destination", NULL};
  PyObject *x = self, *src_o, *dst_o;
  int64_t src[VKT_MAX_DIMS], dst[VKT_MAX_DIMS];
  int ns, nd;
  vkt_var out;
  vkt_tensor *t;
  if (!PARSE("OO", mkw, fkw, &src_o, &dst_o) || !(t = tensor_arg(x, "movedim", "input")) ||
      int_list(src_o, &ns, src) < 0 || int_list(dst_o, &nd, dst) < 0)
    return NULL;
  if (ns != nd)
    return vkt_raise(vkt_fail(VKT_ERR_RUNTIME,
                              "movedim: Invalid source or destination dims: source (%d dims) should contain the same "
                              "number of dims as destination (%d dims)",
                              ns, nd));
  return vkt_py_var_result(vkt_ag_movedim(vkt_var_of(x), ns, src, dst, &out), &out);
}
FUNCTION(movedim)

static PyObject *swapaxes(PyObject *self, PyObject *args, PyObject *kwargs) {
  static char *mkw[] = {"axis0", "axis1", NULL}, *fkw[] = {"input", "axis0", "axis1", NULL};
  PyObject *x = self;
  long long a, b;
  vkt_var out;
  if (!PARSE("LL", mkw, fkw, &a, &b) || !tensor_arg(x, "swapaxes", "input"))
    return NULL;
  return vkt_py_var_result(vkt_ag_transpose(vkt_var_of(x), a, b, &out), &out);
}
FUNCTION(swapaxes)

static PyObject *swapdims(PyObject *self, PyObject *args, PyObject *kwargs) {
  static char *mkw[] = {"dim0", "dim1", NULL}, *fkw[] = {"input", "dim0", "dim1", NULL};
  PyObject *x = self;
  long long a, b;
  vkt_var out;
  if (!PARSE("LL", mkw, fkw, &a, &b) || !tensor_arg(x, "swapdims", "input"))
    return NULL;
  return vkt_py_var_result(vkt_ag_transpose(vkt_var_of(x), a, b, &out), &out);
}
FUNCTION(swapdims)

static PyObject *unflatten(PyObject *self, PyObject *args, PyObject *kwargs) {
  static char *mkw[] = {"dim", "sizes", NULL}, *fkw[] = {"input", "dim", "sizes", NULL};
  PyObject *x = self, *sizes_o;
  long long dim;
  int64_t sizes[VKT_MAX_DIMS];
  int n;
  vkt_tensor out, *t;
  if (!PARSE("LO", mkw, fkw, &dim, &sizes_o) || !(t = tensor_arg(x, "unflatten", "input")) ||
      int_list(sizes_o, &n, sizes) < 0)
    return NULL;
  return view_of(x, vkt_unflatten(&out, t, dim, n, sizes), &out, VKT_VIEW_RESHAPE, "ViewBackward0");
}
FUNCTION(unflatten)

static PyObject *unbind(PyObject *self, PyObject *args, PyObject *kwargs) {
  static char *mkw[] = {"dim", NULL}, *fkw[] = {"input", "dim", NULL};
  PyObject *x = self;
  long long dim = 0;
  int d;
  vkt_tensor *t;
  if (!PARSE("|L", mkw, fkw, &dim) || !(t = tensor_arg(x, "unbind", "input")))
    return NULL;
  if (t->ndim == 0)
    return vkt_raise(vkt_fail(VKT_ERR_INDEX, "Dimension specified as 0 but tensor has no dimensions"));
  vkt_status st = vkt_dim_wrap(dim, t->ndim, &d);
  vkt_var *vs = st ? NULL : calloc((size_t)t->shape[d] + 1, sizeof *vs);
  if (st || !vs)
    return st ? vkt_raise(st) : PyErr_NoMemory();
  PyObject *r = (st = vkt_ag_split(vkt_var_of(x), d, t->shape[d], NULL, true, "UnbindBackward0", vs))
                    ? vkt_raise(st)
                    : PyTuple_New((Py_ssize_t)t->shape[d]);
  for (int64_t i = 0; !st && i < t->shape[d]; i++) {
    PyObject *o = r ? vkt_wrap_var(&vs[i]) : (vkt_var_release(&vs[i]), NULL);
    if (!o)
      Py_CLEAR(r);
    else
      PyTuple_SetItem(r, (Py_ssize_t)i, o);
  }
  free(vs);
  return r;
}
FUNCTION(unbind)

static PyObject *diagonal(PyObject *self, PyObject *args, PyObject *kwargs) {
  static char *mkw[] = {"offset", "dim1", "dim2", NULL}, *fkw[] = {"input", "offset", "dim1", "dim2", NULL};
  PyObject *x = self;
  long long offset = 0, d1 = 0, d2 = 1;
  vkt_tensor out = {0}, twin = {0}, space, *t;
  if (!PARSE("|LLL", mkw, fkw, &offset, &d1, &d2) || !(t = tensor_arg(x, "diagonal", "input")))
    return NULL;
  vkt_tensor_index_space(t, &space);
  vkt_status st = vkt_diagonal(&out, t, offset, d1, d2);
  if (!st && vkt_ag_view_needs_twin(vkt_var_of(x)))
    st = vkt_diagonal(&twin, &space, offset, d1, d2);
  vkt_tensor_release(&space);
  return indexed_of(x, st, &out, &twin, "DiagonalBackward0");
}
FUNCTION(diagonal)

/* x's diagonal (offset k, dims 0 and 1) as a recorded view. */
static vkt_status diagonal_recorded(const vkt_var *xv, int64_t k, vkt_var *out) {
  vkt_tensor view = {0}, twin = {0}, space;
  vkt_tensor_index_space(&xv->t, &space);
  vkt_status st = vkt_diagonal(&view, &xv->t, k, 0, 1);
  bool twinned = vkt_ag_view_needs_twin(xv);
  if (!st && !(st = twinned ? vkt_diagonal(&twin, &space, k, 0, 1) : VKT_OK))
    st = vkt_ag_view_indexed(xv, &view, twinned ? &twin : NULL, "DiagonalBackward0", out);
  vkt_tensor_release(&view);
  vkt_tensor_release(&twin);
  vkt_tensor_release(&space);
  return st;
}

/* diag_embed recorded: x written through the diagonal view of zeros (CopySlices), so its gradient is the
 * gradient's diagonal. */
static PyObject *embed_recorded(const vkt_var *xv, int64_t offset, int64_t d1, int64_t d2) {
  vkt_tensor shaped = {0}, view = {0};
  vkt_var z = {0}, r;
  vkt_status st = vkt_diag_embed(&shaped, &xv->t, offset, d1, d2); /* its errors, and the result's shape */
  if (!st)
    st = vkt_tensor_empty(&z.t, vkt_tensor_device(&shaped), shaped.dtype, shaped.ndim, shaped.shape);
  if (!st)
    st = vkt_fill_(&z.t, (vkt_scalar){false, 0, 0});
  if (!st)
    st = vkt_diagonal(&view, &z.t, offset, d1, d2);
  if (!st && !(st = vkt_ag_index_put(&z, &view, 0, NULL, xv, false, true, &r)))
    vkt_ag_rename(&r, "DiagEmbedBackward0");
  vkt_tensor_release(&shaped);
  vkt_tensor_release(&view);
  vkt_var_release(&z);
  return vkt_py_var_result(st, &r);
}

static PyObject *diag(PyObject *self, PyObject *args, PyObject *kwargs) {
  static char *mkw[] = {"diagonal", NULL}, *fkw[] = {"input", "diagonal", NULL};
  PyObject *x = self;
  long long k = 0;
  vkt_tensor out, *t;
  if (!PARSE("|L", mkw, fkw, &k) || !(t = tensor_arg(x, "diag", "input")))
    return NULL;
  vkt_var *xv = vkt_var_of(x);
  if (t->ndim == 2 && vkt_grad_enabled() && vkt_requires_grad(xv)) { /* the diagonal's view, copied */
    vkt_var dv = {0}, r;
    vkt_status st = diagonal_recorded(xv, k, &dv);
    if (!st && !(st = vkt_ag_clone(&dv, VKT_CONTIGUOUS_FORMAT, &r)))
      vkt_ag_rename(&r, "DiagonalBackward0_copy");
    vkt_var_release(&dv);
    return vkt_py_var_result(st, &r);
  }
  if (t->ndim == 1 && vkt_grad_enabled() && vkt_requires_grad(xv) && vkt_dtypes[t->dtype].is_float)
    return embed_recorded(xv, k, 0, 1);
  return vkt_py_result(vkt_diag(&out, t, k), &out);
}
FUNCTION(diag)

static PyObject *diag_embed(PyObject *self, PyObject *args, PyObject *kwargs) {
  static char *mkw[] = {"offset", "dim1", "dim2", NULL}, *fkw[] = {"input", "offset", "dim1", "dim2", NULL};
  PyObject *x = self;
  long long offset = 0, d1 = -2, d2 = -1;
  vkt_tensor out, *t;
  if (!PARSE("|LLL", mkw, fkw, &offset, &d1, &d2) || !(t = tensor_arg(x, "diag_embed", "input")))
    return NULL;
  vkt_var *xv = vkt_var_of(x);
  if (vkt_grad_enabled() && vkt_requires_grad(xv) && vkt_dtypes[t->dtype].is_float)
    return embed_recorded(xv, offset, d1, d2);
  return vkt_py_result(vkt_diag_embed(&out, t, offset, d1, d2), &out);
}
FUNCTION(diag_embed)

static PyObject *trace(PyObject *self, PyObject *args, PyObject *kwargs) {
  static char *mkw[] = {NULL}, *fkw[] = {"input", NULL};
  PyObject *x = self;
  vkt_tensor out, d = {0}, *t;
  if (!(self ? vkt_parse_args(args, kwargs, "", mkw) : vkt_parse_args(args, kwargs, "O", fkw, &x)) ||
      !(t = tensor_arg(x, "trace", "input")))
    return NULL;
  if (t->ndim != 2)
    return vkt_raise(vkt_fail(VKT_ERR_RUNTIME, "trace: expected a matrix, but got tensor with dim %d", t->ndim));
  vkt_var *xv = vkt_var_of(x);
  if (vkt_grad_enabled() && vkt_requires_grad(xv)) { /* the diagonal's view, summed: both recorded */
    vkt_var dv = {0}, r;
    vkt_status rs = diagonal_recorded(xv, 0, &dv);
    if (!rs && !(rs = vkt_ag_reduce(VKT_OP_SUM, &dv, 1u, false, -1, 0, false, "sum", true, &r)))
      vkt_ag_rename(&r, "TraceBackward0");
    vkt_var_release(&dv);
    return vkt_py_var_result(rs, &r);
  }
  vkt_reduce_opts o = {.name = "sum", .dims = 1u, .dtype = -1, .all_dims = true};
  vkt_status st = vkt_diagonal(&d, t, 0, 0, 1);
  if (!st)
    st = vkt_reduce(VKT_OP_SUM, &d, &o, &out, NULL);
  vkt_tensor_release(&d);
  return vkt_py_result(st, &out);
}
FUNCTION(trace)

static PyObject *repeat(PyObject *self, PyObject *args, PyObject *kwargs) {
  int64_t reps[VKT_MAX_DIMS];
  int n;
  vkt_var out;
  if (kwargs && PyDict_Size(kwargs)) {
    PyObject *r = PyDict_GetItemString(kwargs, "repeats");
    if (!r || PyDict_Size(kwargs) != 1 || PyTuple_Size(args))
      return PyErr_Format(PyExc_TypeError, "repeat() takes repeats as its arguments");
    if (int_list(r, &n, reps) < 0)
      return NULL;
  } else if (sizes_arg(args, &n, reps) < 0) {
    return NULL;
  }
  return vkt_py_var_result(vkt_ag_repeat(SELF_V, n, reps, false, &out), &out);
}

static PyObject *tile(PyObject *self, PyObject *args, PyObject *kwargs) {
  static char *mkw[] = {"dims", NULL}, *fkw[] = {"input", "dims", NULL};
  PyObject *x = self, *dims_o = NULL;
  int64_t reps[VKT_MAX_DIMS];
  int n;
  vkt_var out;
  if (self && PyTuple_Size(args) > 1) { /* tile(2, 3) */
    if (sizes_arg(args, &n, reps) < 0)
      return NULL;
    return vkt_py_var_result(vkt_ag_repeat(SELF_V, n, reps, true, &out), &out);
  }
  if (!PARSE("O", mkw, fkw, &dims_o) || !tensor_arg(x, "tile", "input") || int_list(dims_o, &n, reps) < 0)
    return NULL;
  return vkt_py_var_result(vkt_ag_repeat(vkt_var_of(x), n, reps, true, &out), &out);
}
FUNCTION(tile)

/* The result's length along the repeated dim against output_size (PyTorch's hint, checked here: vkt reads
 * the repeats' sum back either way). */
static vkt_status check_output_size(vkt_status st, vkt_tensor *out, bool flat, long long dim, bool by_tensor,
                                    long long output_size) {
  if (st || output_size < 0)
    return st;
  int64_t got = out->shape[flat ? 0 : (dim < 0 ? dim + out->ndim : dim)];
  if (got == output_size)
    return VKT_OK;
  vkt_tensor_release(out);
  return by_tensor ? vkt_fail(VKT_ERR_RUNTIME, "allocated size does not match required size")
                   : vkt_fail(VKT_ERR_RUNTIME, "repeat_interleave: Invalid output_size, expected %lld but got %lld",
                              (long long)got, output_size);
}

/* An int repeat recorded as PyTorch composes it: x (flattened for dim=None) unsqueezed after dim, expanded there
 * to `repeats`, cloned contiguous and flattened back, so that its nodes (ViewBackward0 on CloneBackward0 on
 * ExpandBackward0 ...) and their gradients are PyTorch's. */
static vkt_status repeat_interleave_int(const vkt_var *x, int64_t repeats, bool flat, int64_t dim, vkt_var *out) {
  vkt_var src = {0}, one = {0}, wide = {0}, dense = {0};
  vkt_tensor u = {0};
  int64_t numel = vkt_tensor_numel(&x->t), shape[VKT_MAX_DIMS];
  int d = 0;
  vkt_status st = flat && x->t.ndim != 1 ? vkt_ag_reshape(x, 1, &numel, false, &src) : (vkt_var_share(&src, x), VKT_OK);
  if (!st && !(st = vkt_dim_wrap(flat ? 0 : dim, src.t.ndim, &d)) && !(st = vkt_unsqueeze(&u, &src.t, d + 1)))
    st = vkt_ag_view(&src, &u, VKT_VIEW_RESHAPE, NULL, "UnsqueezeBackward0", &one);
  if (!st) {
    memcpy(shape, one.t.shape, sizeof *shape * (size_t)one.t.ndim);
    shape[d + 1] = repeats;
    st = vkt_ag_expand(&one, one.t.ndim, shape, &wide);
  }
  if (!st && !(st = vkt_ag_clone(&wide, VKT_CONTIGUOUS_FORMAT, &dense))) {
    memcpy(shape, src.t.shape, sizeof *shape * (size_t)src.t.ndim);
    shape[d] *= repeats;
    st = vkt_ag_reshape(&dense, src.t.ndim ? src.t.ndim : 1, shape, false, out);
  }
  vkt_var_release(&src);
  vkt_var_release(&one);
  vkt_var_release(&wide);
  vkt_var_release(&dense);
  return st;
}

/* Whether o fits PyTorch's int parameter, or is None where it is optional. */
static bool int_or_none(PyObject *o, bool optional) { return (optional && o == Py_None) || vkt_py_int_arg(o); }

/* repeat_interleave's forms, as PyTorch's TypeError lists them. */
static const char method_forms[] = " * (Tensor repeats, int dim = None, *, int output_size = None)\n"
                                   " * (int repeats, int dim = None, *, int output_size = None)\n",
                  function_forms[] = " * (Tensor input, Tensor repeats, int dim = None, *, int output_size = None)\n"
                                     " * (Tensor repeats, *, int output_size = None)\n"
                                     " * (Tensor input, int repeats, int dim = None, *, int output_size = None)\n";

/* repeat_interleave(repeats, dim=None, *, output_size=None), repeats an int or a tensor;
 * vkt.repeat_interleave(repeats) alone. */
static PyObject *repeat_interleave(PyObject *self, PyObject *args, PyObject *kwargs) {
  static char *mkw[] = {"repeats", "dim", "output_size", NULL},
              *fkw[] = {"input", "repeats", "dim", "output_size", NULL};
  PyObject *x = self, *repeats_o = NULL, *dim_o = Py_None, *size_o = Py_None;
  vkt_tensor out, *t = NULL, *r;
  if (!self && PyTuple_Size(args) == 1 && !kwargs) { /* repeat_interleave(repeats) */
    PyObject *o = PyTuple_GetItem(args, 0), *type = (r = vkt_tensor_of(o)) ? NULL : PyType_GetName(Py_TYPE(o));
    if (type)
      PyErr_Format(PyExc_TypeError, "repeat_interleave(): argument 'repeats' (position 1) must be Tensor, not %U",
                   type);
    Py_XDECREF(type);
    return r ? vkt_py_result(vkt_repeat_interleave_by(&out, NULL, r, true, 0), &out) : NULL;
  }
  if (!PARSE("O|O$O", mkw, fkw, &repeats_o, &dim_o, &size_o) || !(t = tensor_arg(x, "repeat_interleave", "input")))
    return NULL;
  if ((!vkt_is_tensor(repeats_o) && !int_or_none(repeats_o, false)) || !int_or_none(dim_o, true) ||
      !int_or_none(size_o, true))
    return vkt_py_signature_error("repeat_interleave", args, kwargs, self ? method_forms : function_forms);
  long long output_size = size_o == Py_None ? -1 : PyLong_AsLongLong(size_o);
  if (output_size == -1 && PyErr_Occurred())
    return NULL;
  long long dim = dim_o == Py_None ? 0 : PyLong_AsLongLong(dim_o);
  if (dim == -1 && PyErr_Occurred())
    return NULL;
  r = vkt_tensor_of(repeats_o);
  long long repeats = r ? 0 : PyLong_AsLongLong(repeats_o);
  if (repeats == -1 && PyErr_Occurred())
    return NULL;
  vkt_status st = r ? vkt_repeat_interleave_by(&out, t, r, dim_o == Py_None, dim)
                    : vkt_repeat_interleave(&out, t, repeats, dim_o == Py_None, dim);
  st = check_output_size(st, &out, dim_o == Py_None, dim, r != NULL, output_size);
  vkt_var *xv = vkt_var_of(x);
  if (st || !vkt_grad_enabled() || !vkt_requires_grad(xv) || !vkt_dtypes[t->dtype].is_float)
    return vkt_py_result(st, &out);
  vkt_var src = {0}, res = {0};
  vkt_tensor_release(&out);
  if (!r)
    return vkt_py_var_result(repeat_interleave_int(xv, repeats, dim_o == Py_None, dim, &res), &res);
  /* recorded: x (flattened for dim=None) read through the index repeat_interleave(repeats) makes, whose
   * backward adds the gradient's repeats up */
  int64_t numel = vkt_tensor_numel(t);
  int d = 0;
  vkt_tensor idx = {0}, counts = {0};
  if (dim_o == Py_None)
    st = vkt_ag_reshape(xv, 1, &numel, false, &src);
  else if (!(st = vkt_dim_wrap(dim, t->ndim ? t->ndim : 1, &d)))
    vkt_var_share(&src, xv);
  if (!st) { /* one count for every index (or a 0-D one, which the counts alone refuse): spread over them */
    int64_t len = src.t.ndim ? src.t.shape[d] : 1, one1 = 1;
    vkt_tensor v1 = {0}, e = {0};
    if (vkt_tensor_numel(r) == 1 && (len != 1 || r->ndim != 1) && !(st = vkt_view(&v1, r, 1, &one1)) &&
        !(st = vkt_expand(&e, &v1, 1, &len)) && !(st = vkt_contiguous(&counts, &e)))
      r = &counts;
    vkt_tensor_release(&v1);
    vkt_tensor_release(&e);
    if (!st)
      st = vkt_repeat_interleave_by(&idx, NULL, r, true, 0);
  }
  if (!st)
    st = vkt_ag_index_select(&src, d, &idx, &res);
  vkt_var_release(&src);
  vkt_tensor_release(&idx);
  vkt_tensor_release(&counts);
  return vkt_py_var_result(st, &res);
}
FUNCTION(repeat_interleave)

static int vkt_dim_wrap_u(int64_t d, int ndim) {
  int w = 0;
  return vkt_dim_wrap(d, ndim, &w) ? 0 : w;
}

static PyObject *rot90(PyObject *self, PyObject *args, PyObject *kwargs) {
  static char *mkw[] = {"k", "dims", NULL}, *fkw[] = {"input", "k", "dims", NULL};
  PyObject *x = self, *dims_o = NULL;
  long long k = 1;
  int64_t dims[VKT_MAX_DIMS] = {0, 1};
  int n = 2;
  vkt_tensor out, *t;
  if (!PARSE("|LO", mkw, fkw, &k, &dims_o) || !(t = tensor_arg(x, "rot90", "input")) ||
      (dims_o && int_list(dims_o, &n, dims) < 0))
    return NULL;
  if (n != 2)
    return vkt_raise(vkt_fail(VKT_ERR_RUNTIME, "expected total rotation dims == 2, but got dims = %d", n));
  vkt_status st = vkt_rot90(&out, t, k, dims[0], dims[1]);
  vkt_var *xv = vkt_var_of(x);
  if (st || !vkt_grad_enabled() || !vkt_requires_grad(xv))
    return vkt_py_result(st, &out);
  /* recorded as PyTorch composes it: flips and a transpose */
  vkt_tensor_release(&out);
  vkt_var f = {0}, r = {0};
  int q = (int)(((k % 4) + 4) % 4);
  uint32_t d0 = 1u << vkt_dim_wrap_u(dims[0], t->ndim), d1 = 1u << vkt_dim_wrap_u(dims[1], t->ndim);
  if (q == 0) {
    st = vkt_ag_clone(xv, VKT_PRESERVE_FORMAT, &r);
  } else if (!(st = vkt_ag_flip(xv, q == 1 ? d1 : q == 2 ? d0 | d1 : d0, &f)) && q == 2) {
    r = f, f = (vkt_var){0};
  } else if (!st) {
    st = vkt_ag_transpose(&f, dims[0], dims[1], &r);
  }
  vkt_var_release(&f);
  if (!st)
    vkt_ag_rename(&r, "Rot90Backward0");
  return vkt_py_var_result(st, &r);
}
FUNCTION(rot90)

static PyObject *flip_one(PyObject *self, PyObject *args, PyObject *kwargs, bool lr) {
  static char *mkw[] = {NULL}, *fkw[] = {"input", NULL};
  PyObject *x = self;
  vkt_var out;
  vkt_tensor *t;
  if (!(self ? vkt_parse_args(args, kwargs, "", mkw) : vkt_parse_args(args, kwargs, "O", fkw, &x)) ||
      !(t = tensor_arg(x, lr ? "fliplr" : "flipud", "input")))
    return NULL;
  if (t->ndim < (lr ? 2 : 1))
    return vkt_raise(vkt_fail(VKT_ERR_RUNTIME, "Input must be >= %d-d.", lr ? 2 : 1));
  return vkt_py_var_result(vkt_ag_flip(vkt_var_of(x), lr ? 2u : 1u, &out), &out);
}
static PyObject *fliplr(PyObject *s, PyObject *a, PyObject *k) { return flip_one(s, a, k, true); }
static PyObject *flipud(PyObject *s, PyObject *a, PyObject *k) { return flip_one(s, a, k, false); }
FUNCTION(fliplr)
FUNCTION(flipud)

static PyObject *broadcast_to(PyObject *self, PyObject *args, PyObject *kwargs) {
  static char *mkw[] = {"size", NULL}, *fkw[] = {"input", "size", NULL};
  PyObject *x = self, *size_o;
  int64_t shape[VKT_MAX_DIMS];
  int n;
  vkt_tensor out, *t;
  if (!PARSE("O", mkw, fkw, &size_o) || !(t = tensor_arg(x, "broadcast_to", "input")) ||
      int_list(size_o, &n, shape) < 0)
    return NULL;
  return view_of(x, vkt_expand(&out, t, n, shape), &out, VKT_VIEW_EXPAND, "ExpandBackward0");
}
FUNCTION(broadcast_to)

/* ---- take, take_along_dim, masked_select, masked_scatter, index_fill ---- */

static PyObject *take(PyObject *self, PyObject *args, PyObject *kwargs) {
  static char *mkw[] = {"index", NULL}, *fkw[] = {"input", "index", NULL};
  PyObject *x = self, *index_o;
  vkt_tensor out, *t, *index;
  if (!PARSE("O", mkw, fkw, &index_o) || !(t = tensor_arg(x, "take", "input")) ||
      !(index = tensor_arg(index_o, "take", "index")))
    return NULL;
  vkt_var r;
  (void)out;
  vkt_status st = vkt_ag_take(vkt_var_of(x), index, &r);
  if (!st)
    vkt_ag_rename(&r, "TakeBackward0");
  return vkt_py_var_result(st, &r);
}
FUNCTION(take)

static PyObject *take_along_dim(PyObject *self, PyObject *args, PyObject *kwargs) {
  static char *mkw[] = {"indices", "dim", NULL}, *fkw[] = {"input", "indices", "dim", NULL};
  PyObject *x = self, *index_o, *dim_o = Py_None;
  vkt_tensor *t, *index;
  vkt_var out;
  if (!PARSE("O|O", mkw, fkw, &index_o, &dim_o) || !(t = tensor_arg(x, "take_along_dim", "input")) ||
      !(index = tensor_arg(index_o, "take_along_dim", "indices")))
    return NULL;
  long long dim = dim_o == Py_None ? 0 : PyLong_AsLongLong(dim_o);
  if (dim == -1 && PyErr_Occurred())
    return NULL;
  return vkt_py_var_result(vkt_ag_take_along_dim(vkt_var_of(x), index, dim_o == Py_None, dim, &out), &out);
}
FUNCTION(take_along_dim)

static PyObject *masked_select(PyObject *self, PyObject *args, PyObject *kwargs) {
  static char *mkw[] = {"mask", NULL}, *fkw[] = {"input", "mask", NULL};
  PyObject *x = self, *mask_o;
  vkt_tensor out, *t, *mask;
  if (!PARSE("O", mkw, fkw, &mask_o) || !(t = tensor_arg(x, "masked_select", "input")) ||
      !(mask = tensor_arg(mask_o, "masked_select", "mask")))
    return NULL;
  vkt_var r;
  (void)out;
  vkt_status st = vkt_ag_masked_select(vkt_var_of(x), mask, &r);
  if (!st)
    vkt_ag_rename(&r, "MaskedSelectBackward0");
  return vkt_py_var_result(st, &r);
}
FUNCTION(masked_select)

static PyObject *masked_scatter(PyObject *self, PyObject *args, PyObject *kwargs, bool inplace) {
  static char *mkw[] = {"mask", "source", NULL}, *fkw[] = {"input", "mask", "source", NULL};
  PyObject *x = self, *mask_o, *src_o;
  vkt_tensor out = {0}, *t, *mask, *src;
  if (!PARSE("OO", mkw, fkw, &mask_o, &src_o) || !(t = tensor_arg(x, "masked_scatter", "input")) ||
      !(mask = tensor_arg(mask_o, "masked_scatter", "mask")) || !(src = tensor_arg(src_o, "masked_scatter", "source")))
    return NULL;
  vkt_var *xv = vkt_var_of(x), *sv = vkt_var_of(src_o), r;
  int records =
      inplace ? vkt_py_inplace_records(xv, sv) : vkt_grad_enabled() && (vkt_requires_grad(xv) || vkt_requires_grad(sv));
  if (records < 0)
    return NULL;
  if (records) {
    vkt_status rs = vkt_ag_write(VKT_WRITE_MASKED_SCATTER, xv, 0, mask, sv, (vkt_scalar){0}, true, &r);
    return inplace ? vkt_py_inplace_result(x, rs, &r) : vkt_py_var_result(rs, &r);
  }
  vkt_status st = inplace ? VKT_OK : vkt_clone(&out, t);
  if (!st && (st = vkt_masked_scatter_(inplace ? t : &out, mask, src)))
    vkt_tensor_release(&out);
  if (inplace)
    return st ? vkt_raise(st) : Py_NewRef(x);
  return vkt_py_result(st, &out);
}
static PyObject *m_masked_scatter(PyObject *s, PyObject *a, PyObject *k) { return masked_scatter(s, a, k, false); }
static PyObject *m_masked_scatter_(PyObject *s, PyObject *a, PyObject *k) { return masked_scatter(s, a, k, true); }
static PyObject *f_masked_scatter(PyObject *m, PyObject *a, PyObject *k) {
  (void)m;
  return masked_scatter(NULL, a, k, false);
}

static PyObject *index_fill(PyObject *self, PyObject *args, PyObject *kwargs, bool inplace) {
  static char *mkw[] = {"dim", "index", "value", NULL}, *fkw[] = {"input", "dim", "index", "value", NULL};
  PyObject *x = self, *index_o, *value_o;
  long long dim;
  vkt_tensor out = {0}, v = {0}, *t, *index;
  vkt_scalar s = {0};
  if (!PARSE("LOO", mkw, fkw, &dim, &index_o, &value_o) || !(t = tensor_arg(x, "index_fill", "input")) ||
      !(index = tensor_arg(index_o, "index_fill", "index")))
    return NULL;
  vkt_tensor *value = vkt_tensor_of(value_o);
  if (!value && vkt_py_scalar(value_o, &s) < 0)
    return NULL;
  vkt_status st = value ? vkt_value_check(t->dtype, value) : vkt_scalar_check(t->dtype, s);
  if (st)
    return vkt_raise(st);
  vkt_var *xv = vkt_var_of(x), *vv = vkt_var_of(value_o), r;
  int records =
      inplace ? vkt_py_inplace_records(xv, vv) : vkt_grad_enabled() && (vkt_requires_grad(xv) || vkt_requires_grad(vv));
  if (records < 0)
    return NULL;
  if (records) {
    st = vkt_ag_write(VKT_WRITE_INDEX_FILL, xv, dim, index, vv, s, true, &r);
    return inplace ? vkt_py_inplace_result(x, st, &r) : vkt_py_var_result(st, &r);
  }
  if (!value) {
    if (!(st = vkt_tensor_empty(&v, VKT_CPU, t->dtype, 0, NULL)))
      vkt_cpu_fill(&v, s);
    value = &v;
  }
  if (!st && !inplace)
    st = vkt_clone(&out, t);
  if (!st && (st = vkt_index_fill_(inplace ? t : &out, dim, index, value)))
    vkt_tensor_release(&out);
  vkt_tensor_release(&v);
  if (inplace)
    return st ? vkt_raise(st) : Py_NewRef(x);
  return vkt_py_result(st, &out);
}
static PyObject *m_index_fill(PyObject *s, PyObject *a, PyObject *k) { return index_fill(s, a, k, false); }
static PyObject *m_index_fill_(PyObject *s, PyObject *a, PyObject *k) { return index_fill(s, a, k, true); }
static PyObject *f_index_fill(PyObject *m, PyObject *a, PyObject *k) {
  (void)m;
  return index_fill(NULL, a, k, false);
}

/* ---- functions over several tensors ---- */

/* The tensors of args: one sequence of tensors, or the tensors themselves. New list, or NULL. */
static PyObject *tensor_seq(PyObject *args, const char *op) {
  PyObject *seq = PyTuple_Size(args) == 1 && !vkt_is_tensor(PyTuple_GetItem(args, 0))
                      ? PySequence_List(PyTuple_GetItem(args, 0))
                      : PySequence_List(args);
  for (Py_ssize_t i = 0; seq && i < PyList_Size(seq); i++)
    if (!vkt_is_tensor(PyList_GetItem(seq, i))) {
      PyErr_Format(PyExc_TypeError, "%s(): expected Tensor as element %zd", op, i);
      Py_CLEAR(seq);
    }
  return seq;
}

static PyObject *broadcast_tensors(PyObject *m, PyObject *args) {
  (void)m;
  PyObject *seq = tensor_seq(args, "broadcast_tensors"), *r = NULL;
  const vkt_tensor *ts[64];
  int64_t shape[VKT_MAX_DIMS];
  int ndim, n = seq ? (int)PyList_Size(seq) : 0;
  if (!seq)
    return NULL;
  if (n > 64) {
    PyErr_SetString(PyExc_ValueError, "broadcast_tensors(): at most 64 tensors");
    goto finish;
  }
  for (int i = 0; i < n; i++)
    ts[i] = vkt_tensor_of(PyList_GetItem(seq, i));
  vkt_status st = vkt_broadcast_shape(n, ts, &ndim, shape);
  if (st) {
    vkt_raise(st);
    goto finish;
  }
  r = PyTuple_New(n);
  for (int i = 0; r && i < n; i++) {
    vkt_var e;
    PyObject *o =
        (st = vkt_ag_expand(vkt_var_of(PyList_GetItem(seq, i)), ndim, shape, &e)) ? vkt_raise(st) : vkt_wrap_var(&e);
    if (!o)
      Py_CLEAR(r);
    else
      PyTuple_SetItem(r, i, o);
  }
finish:
  Py_DECREF(seq);
  return r;
}

/* t seen with at least n dims, as PyTorch's atleast_Nd: 1-D [k] becomes [1, k] and [1, k, 1]. */
static vkt_status atleast(const vkt_tensor *t, int n, vkt_tensor *out) {
  static const int64_t shapes[4][3] = {{0}, {1}, {1, 1}, {1, 1, 1}};
  int64_t shape[3];
  if (t->ndim >= n) {
    vkt_tensor_share(out, t);
    return VKT_OK;
  }
  memcpy(shape, shapes[n], sizeof shape);
  if (t->ndim == 1)
    shape[1] = t->shape[0];
  else if (t->ndim == 2)
    shape[0] = t->shape[0], shape[1] = t->shape[1];
  return vkt_view(out, t, n, shape);
}

/* The same for a var: a view recorded (a reshape), or x itself. */
static vkt_status atleast_var(const vkt_var *x, int n, bool column, vkt_var *out) {
  vkt_tensor v;
  *out = (vkt_var){0};
  vkt_status st = column && x->t.ndim <= 1 ? vkt_view(&v, &x->t, 2, (int64_t[]){vkt_tensor_numel(&x->t), 1})
                                           : atleast(&x->t, n, &v);
  if (st)
    return st;
  if (!column && x->t.ndim >= n) {
    vkt_tensor_release(&v);
    vkt_var_share(out, x);
    return VKT_OK;
  }
  return vkt_ag_view(x, &v, VKT_VIEW_RESHAPE, NULL, "ViewBackward0", out);
}

static PyObject *atleast_nd(PyObject *args, int n, const char *op) {
  bool one = PyTuple_Size(args) == 1 && vkt_is_tensor(PyTuple_GetItem(args, 0));
  PyObject *seq = tensor_seq(args, op), *r = NULL;
  if (!seq)
    return NULL;
  Py_ssize_t count = PyList_Size(seq);
  r = PyTuple_New(count);
  for (Py_ssize_t i = 0; r && i < count; i++) {
    vkt_var v;
    vkt_status st = atleast_var(vkt_var_of(PyList_GetItem(seq, i)), n, false, &v);
    PyObject *o = st ? vkt_raise(st) : vkt_wrap_var(&v);
    if (!o)
      Py_CLEAR(r);
    else
      PyTuple_SetItem(r, i, o);
  }
  Py_DECREF(seq);
  if (r && one) {
    PyObject *single = Py_NewRef(PyTuple_GetItem(r, 0));
    Py_DECREF(r);
    return single;
  }
  return r;
}

static PyObject *atleast_1d(PyObject *m, PyObject *a) {
  (void)m;
  return atleast_nd(a, 1, "atleast_1d");
}
static PyObject *atleast_2d(PyObject *m, PyObject *a) {
  (void)m;
  return atleast_nd(a, 2, "atleast_2d");
}
static PyObject *atleast_3d(PyObject *m, PyObject *a) {
  (void)m;
  return atleast_nd(a, 3, "atleast_3d");
}

/* hstack, vstack, dstack, column_stack: each tensor reshaped (kind), then cat along a dim. */
enum { H, V, D, COLUMN };
static PyObject *stack_kind(PyObject *args, PyObject *kwargs, int kind, const char *op) {
  static char *kw[] = {"tensors", NULL};
  PyObject *seq_o, *seq = NULL, *r = NULL;
  if (!vkt_parse_args(args, kwargs, "O", kw, &seq_o))
    return NULL;
  if (vkt_is_tensor(seq_o) || !(seq = PySequence_List(seq_o)))
    return PyErr_Format(PyExc_TypeError, "%s(): argument 'tensors' must be tuple of Tensors", op);
  Py_ssize_t n = PyList_Size(seq);
  vkt_var *parts = calloc((size_t)n + 1, sizeof *parts);
  const vkt_var **ps = calloc((size_t)n + 1, sizeof *ps);
  vkt_status st = VKT_OK;
  if (!parts || !ps) {
    PyErr_NoMemory();
    goto finish;
  }
  for (Py_ssize_t i = 0; i < n && !st; i++) {
    vkt_var *t = vkt_var_of(PyList_GetItem(seq, i));
    if (!t) {
      PyErr_Format(PyExc_TypeError, "expected Tensor as element %zd in argument 0", i);
      goto finish;
    }
    st = atleast_var(t, kind == H || kind == COLUMN ? 1 : kind == V ? 2 : 3, kind == COLUMN, &parts[i]);
    ps[i] = &parts[i];
  }
  int64_t dim = kind == V ? 0 : kind == D ? 2 : n && parts[0].t.ndim == 1 && kind == H ? 0 : 1;
  vkt_var out;
  if (st)
    vkt_raise(st);
  else
    r = vkt_py_var_result(vkt_ag_cat((int)n, ps, dim, &out), &out);
finish:
  for (Py_ssize_t i = 0; parts && i < n; i++)
    vkt_var_release(&parts[i]);
  free(parts);
  free(ps);
  Py_XDECREF(seq);
  return r;
}

static PyObject *hstack(PyObject *m, PyObject *a, PyObject *k) {
  (void)m;
  return stack_kind(a, k, H, "hstack");
}
static PyObject *vstack(PyObject *m, PyObject *a, PyObject *k) {
  (void)m;
  return stack_kind(a, k, V, "vstack");
}
static PyObject *dstack(PyObject *m, PyObject *a, PyObject *k) {
  (void)m;
  return stack_kind(a, k, D, "dstack");
}
static PyObject *column_stack(PyObject *m, PyObject *a, PyObject *k) {
  (void)m;
  return stack_kind(a, k, COLUMN, "column_stack");
}

/* vkt.<name>(input, *args, **kwargs) is input.<name>(*args, **kwargs): the view methods of Tensor. */
static PyObject *forward(const char *name, PyObject *args, PyObject *kwargs) {
  if (PyTuple_Size(args) < 1 || !vkt_is_tensor(PyTuple_GetItem(args, 0)))
    return PyErr_Format(PyExc_TypeError, "%s(): argument 'input' must be Tensor", name);
  PyObject *method = PyObject_GetAttrString(PyTuple_GetItem(args, 0), name);
  PyObject *rest = PyTuple_GetSlice(args, 1, PyTuple_Size(args));
  PyObject *r = method && rest ? PyObject_Call(method, rest, kwargs) : NULL;
  Py_XDECREF(method);
  Py_XDECREF(rest);
  return r;
}

#define FORWARD(fn)                                                                                                    \
  static PyObject *fw_##fn(PyObject *m, PyObject *a, PyObject *k) {                                                    \
    (void)m;                                                                                                           \
    return forward(#fn, a, k);                                                                                         \
  }
FORWARD(reshape)
FORWARD(transpose)
FORWARD(squeeze)
FORWARD(unsqueeze)
FORWARD(permute)
FORWARD(flatten)
FORWARD(t)
FORWARD(as_strided)
FORWARD(as_strided_)
FORWARD(resize_as_)

#define MK(name, fn, doc)                                                                                              \
  { name, KW(fn), METH_VARARGS | METH_KEYWORDS, doc }

PyMethodDef vkt_layout_methods[] = {
    MK("narrow", narrow, "narrow(dim, start, length): a view"),
    MK("select", select_dim, "select(dim, index): a view without dim"),
    MK("unfold", unfold, "unfold(dimension, size, step): a view of windows along dimension, in a new last dim"),
    MK("movedim", movedim, "movedim(source, destination): a view"),
    MK("moveaxis", movedim, "moveaxis(source, destination): a view"),
    MK("swapaxes", swapaxes, "swapaxes(axis0, axis1): a view"),
    MK("swapdims", swapdims, "swapdims(dim0, dim1): a view"),
    MK("unflatten", unflatten, "unflatten(dim, sizes): a view"),
    MK("unbind", unbind, "unbind(dim=0): a tuple of views"),
    MK("diagonal", diagonal, "diagonal(offset=0, dim1=0, dim2=1): a view"),
    MK("diag", diag, "diag(diagonal=0)"),
    MK("diag_embed", diag_embed, "diag_embed(offset=0, dim1=-2, dim2=-1)"),
    MK("trace", trace, "trace(): the sum of a matrix's diagonal"),
    MK("repeat", repeat, "repeat(*repeats)"),
    MK("tile", tile, "tile(dims)"),
    MK("repeat_interleave", repeat_interleave, "repeat_interleave(repeats, dim=None)"),
    MK("rot90", rot90, "rot90(k=1, dims=(0, 1))"),
    MK("fliplr", fliplr, "fliplr(): flip(1)"),
    MK("flipud", flipud, "flipud(): flip(0)"),
    MK("broadcast_to", broadcast_to, "broadcast_to(size): a view"),
    MK("take", take, "take(index): elements of the flattened tensor"),
    MK("take_along_dim", take_along_dim, "take_along_dim(indices, dim=None)"),
    MK("masked_select", masked_select, "masked_select(mask): a 1-D tensor"),
    MK("masked_scatter", m_masked_scatter, "masked_scatter(mask, source)"),
    MK("masked_scatter_", m_masked_scatter_, "in-place masked_scatter(mask, source)"),
    MK("index_fill", m_index_fill, "index_fill(dim, index, value)"),
    MK("index_fill_", m_index_fill_, "in-place index_fill(dim, index, value)"),
    {NULL, NULL, 0, NULL},
};

PyMethodDef vkt_layout_functions[] = {
    MK("narrow", f_narrow, "narrow(input, dim, start, length)"),
    MK("select", f_select_dim, "select(input, dim, index)"),
    MK("movedim", f_movedim, "movedim(input, source, destination)"),
    MK("moveaxis", f_movedim, "moveaxis(input, source, destination)"),
    MK("swapaxes", f_swapaxes, "swapaxes(input, axis0, axis1)"),
    MK("swapdims", f_swapdims, "swapdims(input, dim0, dim1)"),
    MK("unflatten", f_unflatten, "unflatten(input, dim, sizes)"),
    MK("unbind", f_unbind, "unbind(input, dim=0)"),
    MK("diagonal", f_diagonal, "diagonal(input, offset=0, dim1=0, dim2=1)"),
    MK("diag", f_diag, "diag(input, diagonal=0)"),
    MK("diag_embed", f_diag_embed, "diag_embed(input, offset=0, dim1=-2, dim2=-1)"),
    MK("trace", f_trace, "trace(input)"),
    MK("tile", f_tile, "tile(input, dims)"),
    MK("repeat_interleave", f_repeat_interleave, "repeat_interleave(input, repeats, dim=None)"),
    MK("rot90", f_rot90, "rot90(input, k=1, dims=(0, 1))"),
    MK("fliplr", f_fliplr, "fliplr(input)"),
    MK("flipud", f_flipud, "flipud(input)"),
    MK("broadcast_to", f_broadcast_to, "broadcast_to(input, size)"),
    MK("take", f_take, "take(input, index)"),
    MK("take_along_dim", f_take_along_dim, "take_along_dim(input, indices, dim=None)"),
    MK("masked_select", f_masked_select, "masked_select(input, mask)"),
    MK("masked_scatter", f_masked_scatter, "masked_scatter(input, mask, source)"),
    MK("index_fill", f_index_fill, "index_fill(input, dim, index, value)"),
    {"broadcast_tensors", broadcast_tensors, METH_VARARGS, "broadcast_tensors(*tensors): views of one shape"},
    {"atleast_1d", atleast_1d, METH_VARARGS, "atleast_1d(*tensors)"},
    {"atleast_2d", atleast_2d, METH_VARARGS, "atleast_2d(*tensors)"},
    {"atleast_3d", atleast_3d, METH_VARARGS, "atleast_3d(*tensors)"},
    MK("hstack", hstack, "hstack(tensors)"),
    MK("vstack", vstack, "vstack(tensors)"),
    MK("row_stack", vstack, "row_stack(tensors): vstack"),
    MK("dstack", dstack, "dstack(tensors)"),
    MK("column_stack", column_stack, "column_stack(tensors)"),
    MK("reshape", fw_reshape, "reshape(input, shape)"),
    MK("transpose", fw_transpose, "transpose(input, dim0, dim1)"),
    MK("squeeze", fw_squeeze, "squeeze(input, dim=None)"),
    MK("unsqueeze", fw_unsqueeze, "unsqueeze(input, dim)"),
    MK("permute", fw_permute, "permute(input, dims)"),
    MK("flatten", fw_flatten, "flatten(input, start_dim=0, end_dim=-1)"),
    MK("t", fw_t, "t(input)"),
    MK("as_strided", fw_as_strided, "as_strided(input, size, stride, storage_offset=None)"),
    MK("as_strided_", fw_as_strided_, "as_strided_(input, size, stride, storage_offset=None): in place"),
    MK("resize_as_", fw_resize_as_, "resize_as_(input, the_template, memory_format=None)"),
    {NULL, NULL, 0, NULL},
};
