/* ops_nn.c: Python bindings of the single-kernel ops of neural networks: layer_norm, rms_norm, embedding and the
 * convolutions' im2col/col2im, with torch's signatures (vkt.nn.functional calls these). */
#include "py.h"

#include <stdio.h>

#include "../autograd/norm.h"
#include "../autograd/shape.h"

/* PyTorch's TypeError for an argument of the wrong type: "... must be <what>, not <type name>". */
static void type_error(PyObject *o, const char *fn, const char *arg, const char *what) {
  PyObject *tname = PyType_GetName(Py_TYPE(o));
  if (tname)
    PyErr_Format(PyExc_TypeError, "%s(): argument %s must be %s, not %U", fn, arg, what, tname);
  Py_XDECREF(tname);
}

/* The tensor inside o, or NULL with PyTorch's TypeError for argument `name` of `fn`; None is NULL with no
 * error where optional. */
static int tensor_arg(PyObject *o, const char *fn, const char *name, bool optional, vkt_var **out) {
  *out = NULL;
  if (optional && (!o || o == Py_None))
    return 0;
  if ((*out = vkt_var_of(o)))
    return 0;
  char arg[64];
  snprintf(arg, sizeof arg, "'%s'", name);
  type_error(o, fn, arg, "Tensor");
  return -1;
}

/* normalized_shape: a sequence of ints (torch refuses a bare int here). */
static int parse_normalized_shape(PyObject *o, const char *fn, int *nd, int64_t *shape) {
  if (PyLong_Check(o) || !PySequence_Check(o)) {
    type_error(o, fn, "'normalized_shape' (position 2)", "tuple of ints");
    return -1;
  }
  PyObject *args = PyTuple_Pack(1, o);
  int r = args ? vkt_parse_shape(args, nd, shape) : -1;
  Py_XDECREF(args);
  return r;
}

static PyObject *f_layer_norm(PyObject *mod, PyObject *args, PyObject *kwargs) {
  static char *kw[] = {"input", "normalized_shape", "weight", "bias", "eps", "cudnn_enable", NULL};
  PyObject *x = NULL, *shape = NULL, *w = NULL, *b = NULL;
  double eps = 1e-5;
  int cudnn = 1, nd = 0;
  int64_t nshape[VKT_MAX_DIMS];
  vkt_var *xv, *wv, *bv, out;
  (void)mod;
  if (!vkt_parse_args(args, kwargs, "OO|OOdp:layer_norm", kw, &x, &shape, &w, &b, &eps, &cudnn) ||
      tensor_arg(x, "layer_norm", "input", false, &xv) < 0 || tensor_arg(w, "layer_norm", "weight", true, &wv) < 0 ||
      tensor_arg(b, "layer_norm", "bias", true, &bv) < 0 ||
      parse_normalized_shape(shape, "layer_norm", &nd, nshape) < 0)
    return NULL;
  return vkt_py_var_result(vkt_ag_layer_norm(xv, nd, nshape, wv, bv, eps, &out), &out);
}

static PyObject *f_rms_norm(PyObject *mod, PyObject *args, PyObject *kwargs) {
  static char *kw[] = {"input", "normalized_shape", "weight", "eps", NULL};
  PyObject *x = NULL, *shape = NULL, *w = NULL, *eps_o = Py_None;
  double eps = 0;
  int nd = 0;
  int64_t nshape[VKT_MAX_DIMS];
  vkt_var *xv, *wv, out;
  (void)mod;
  if (!vkt_parse_args(args, kwargs, "OO|OO:rms_norm", kw, &x, &shape, &w, &eps_o) ||
      tensor_arg(x, "rms_norm", "input", false, &xv) < 0 || tensor_arg(w, "rms_norm", "weight", true, &wv) < 0 ||
      parse_normalized_shape(shape, "rms_norm", &nd, nshape) < 0)
    return NULL;
  if (eps_o != Py_None && (eps = PyFloat_AsDouble(eps_o)) == -1 && PyErr_Occurred())
    return NULL;
  return vkt_py_var_result(vkt_ag_rms_norm(xv, nd, nshape, wv, eps_o != Py_None, eps, &out), &out);
}

static PyObject *f_embedding(PyObject *mod, PyObject *args, PyObject *kwargs) {
  static char *kw[] = {"weight", "input", "padding_idx", "scale_grad_by_freq", "sparse", NULL};
  PyObject *w = NULL, *idx = NULL;
  long long padding_idx = -1;
  int scale = 0, sparse = 0;
  vkt_var *wv, *iv, out;
  (void)mod;
  if (!vkt_parse_args(args, kwargs, "OO|Lpp:embedding", kw, &w, &idx, &padding_idx, &scale, &sparse) ||
      tensor_arg(w, "embedding", "weight", false, &wv) < 0 || tensor_arg(idx, "embedding", "indices", false, &iv) < 0)
    return NULL;
  return vkt_py_var_result(vkt_ag_embedding(wv, &iv->t, padding_idx, scale, sparse, &out), &out);
}

/* _im2col(x, kernel, stride, padding, dilation) and _col2im(cols, size, kernel, stride, padding, dilation): each
 * geometry a 3-tuple, size the image's 1 to 3 spatial sizes (vkt.nn.functional's convolutions and unfold/fold
 * check their arguments first). */
static PyObject *f_im2col(PyObject *mod, PyObject *args) {
  PyObject *x = NULL;
  vkt_window w;
  vkt_var *xv, out;
  (void)mod;
  if (!PyArg_ParseTuple(args, "O(LLL)(LLL)(LLL)(LLL):_im2col", &x, &w.kernel[0], &w.kernel[1], &w.kernel[2],
                        &w.stride[0], &w.stride[1], &w.stride[2], &w.pad[0], &w.pad[1], &w.pad[2], &w.dilation[0],
                        &w.dilation[1], &w.dilation[2]) ||
      tensor_arg(x, "_im2col", "input", false, &xv) < 0)
    return NULL;
  return vkt_py_var_result(vkt_ag_im2col(xv, &w, &out), &out);
}

static PyObject *f_col2im(PyObject *mod, PyObject *args) {
  PyObject *x = NULL, *size_o = NULL;
  vkt_window w;
  int nd = 0;
  int64_t size[VKT_MAX_DIMS];
  vkt_var *xv, out;
  (void)mod;
  if (!PyArg_ParseTuple(args, "OO(LLL)(LLL)(LLL)(LLL):_col2im", &x, &size_o, &w.kernel[0], &w.kernel[1], &w.kernel[2],
                        &w.stride[0], &w.stride[1], &w.stride[2], &w.pad[0], &w.pad[1], &w.pad[2], &w.dilation[0],
                        &w.dilation[1], &w.dilation[2]) ||
      tensor_arg(x, "_col2im", "input", false, &xv) < 0 || vkt_parse_shape(size_o, &nd, size) < 0)
    return NULL;
  return vkt_py_var_result(vkt_ag_col2im(xv, &w, nd, size, &out), &out);
}

#define KW(f) (PyCFunction)(void (*)(void))(f), METH_VARARGS | METH_KEYWORDS

PyMethodDef vkt_nn_functions[] = {
    {"layer_norm", KW(f_layer_norm),
     "layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-05): normalizes the trailing dims"},
    {"rms_norm", KW(f_rms_norm),
     "rms_norm(input, normalized_shape, weight=None, eps=None): x / sqrt(mean(x^2) + eps) over the trailing dims"},
    {"embedding", KW(f_embedding),
     "embedding(weight, input, padding_idx=-1, scale_grad_by_freq=False, sparse=False): rows of weight at input"},
    {"_im2col", f_im2col, METH_VARARGS, "_im2col(x, kernel, stride, padding, dilation): x (N, C, d0, d1, d2) as columns"},
    {"_col2im", f_col2im, METH_VARARGS,
     "_col2im(cols, size, kernel, stride, padding, dilation): columns summed into an (N, C, *size) image"},
    {NULL, NULL, 0, NULL},
};
