/* ops_matmul.c: Python bindings of the matrix-product family: the `@` operator, matmul, mm, bmm, dot,
 * vdot, mv, linear, addmm, addmv, baddbmm, addbmm, matmul_add_relu and its composed reference. */
#include "py.h"
#include "amp.h"

#include <stdio.h>

#include "../ops/matmul.h"

typedef vkt_status (*mm_fn)(const vkt_tensor *, const vkt_tensor *, vkt_tensor *);
typedef vkt_status (*mm3_fn)(const vkt_var *, const vkt_var *, const vkt_var *, vkt_var *);

/* The tensor inside o, or NULL with PyTorch's TypeError for argument `name` of `fn`. */
static vkt_tensor *tensor_arg(PyObject *o, const char *fn, const char *name) {
  vkt_tensor *t = vkt_tensor_of(o);
  if (!t)
    PyErr_Format(PyExc_TypeError, "%s(): argument '%s' must be Tensor, not %R", fn, name, (PyObject *)Py_TYPE(o));
  return t;
}

static PyObject *call2(mm_fn fn, const char *name, PyObject *a, PyObject *b, const char *bname) {
  vkt_tensor *x = tensor_arg(a, name, "input"), *y = x ? tensor_arg(b, name, bname) : NULL;
  vkt_var out;
  if (!y)
    return NULL;
  return vkt_py_var_result(vkt_ag_product(fn, vkt_var_of(a), vkt_var_of(b), &out), &out);
}

PyObject *vkt_py_matmul(PyObject *a, PyObject *b) {
  if (!vkt_is_tensor(a) || !vkt_is_tensor(b))
    Py_RETURN_NOTIMPLEMENTED;
  if (vkt_amp_mask)
    return vkt_py_amp_matmul(a, b);
  return call2(vkt_matmul, "matmul", a, b, "other");
}

#define METHOD2(name, other)                                                                                           \
  static PyObject *m_##name(PyObject *self, PyObject *o) { return call2(vkt_##name, #name, self, o, other); }          \
  static PyObject *f_##name(PyObject *mod, PyObject *args, PyObject *kwargs) {                                         \
    static char *kw[] = {"input", other, NULL};                                                                        \
    PyObject *a, *b;                                                                                                   \
    (void)mod;                                                                                                         \
    if (!vkt_parse_args(args, kwargs, "OO:" #name, kw, &a, &b))                                                        \
      return NULL;                                                                                                     \
    return call2(vkt_##name, #name, a, b, other);                                                                      \
  }
METHOD2(matmul, "other")
METHOD2(mm, "mat2")
METHOD2(bmm, "mat2")
METHOD2(dot, "tensor")
METHOD2(mv, "vec")
METHOD2(vdot, "other")

/* fn(a, b, c) for three tensor arguments, c optional (None) when `optional`. */
static PyObject *call3(mm3_fn fn, const char *name, char **kw, PyObject *args, PyObject *kwargs, bool optional) {
  PyObject *o[3] = {NULL, NULL, Py_None};
  vkt_tensor *t[3] = {NULL, NULL, NULL};
  vkt_var out;
  char fmt[64];
  vkt_defines_cat(fmt, sizeof fmt, optional ? "OO|O:" : "OOO:", name, NULL); /* no snprintf: see vkt_defines_cat */
  if (!vkt_parse_args(args, kwargs, fmt, kw, &o[0], &o[1], &o[2]))
    return NULL;
  for (int k = 0; k < 3; k++)
    if (!(k == 2 && optional && o[k] == Py_None) && !(t[k] = tensor_arg(o[k], name, kw[k])))
      return NULL;
  return vkt_py_var_result(fn(vkt_var_of(o[0]), vkt_var_of(o[1]), t[2] ? vkt_var_of(o[2]) : NULL, &out), &out);
}

static PyObject *f_linear(PyObject *mod, PyObject *args, PyObject *kwargs) {
  static char *kw[] = {"input", "weight", "bias", NULL};
  (void)mod;
  return call3(vkt_ag_linear, "linear", kw, args, kwargs, true);
}

static PyObject *f_matmul_add_relu(PyObject *mod, PyObject *args, PyObject *kwargs) {
  static char *kw[] = {"lhs", "rhs", "bias", NULL};
  (void)mod;
  return call3(vkt_ag_matmul_add_relu, "matmul_add_relu", kw, args, kwargs, false);
}

static PyObject *f_matmul_add_relu_reference(PyObject *mod, PyObject *args, PyObject *kwargs) {
  static char *kw[] = {"lhs", "rhs", "bias", NULL};
  (void)mod;
  return call3(vkt_ag_matmul_add_relu_reference, "matmul_add_relu_reference", kw, args, kwargs, false);
}

typedef vkt_status (*addmm_fn)(const vkt_tensor *, const vkt_tensor *, const vkt_tensor *, vkt_scalar, vkt_scalar,
                               vkt_tensor *);

/* name(input, m1, m2, *, beta=1, alpha=1): addmm, addmv, baddbmm and addbmm, with the names of m1 and m2
 * in kw[1], kw[2]; a method when self is given. */
static PyObject *add_product(addmm_fn fn, mm_fn product, bool sum_batch, const char *name, char **kw, PyObject *self,
                             PyObject *args, PyObject *kwargs) {
  PyObject *o[3] = {self, NULL, NULL}, *beta_o = NULL, *alpha_o = NULL;
  vkt_scalar beta = {false, 0, 1}, alpha = {false, 0, 1};
  vkt_tensor *t[3];
  vkt_var out;
  char fmt[64];
  vkt_defines_cat(fmt, sizeof fmt, self ? "OO|$OO:" : "OOO|$OO:", name, NULL);
  int ok = self ? vkt_parse_args(args, kwargs, fmt, kw + 1, &o[1], &o[2], &beta_o, &alpha_o)
                : vkt_parse_args(args, kwargs, fmt, kw, &o[0], &o[1], &o[2], &beta_o, &alpha_o);
  if (!ok || (beta_o && vkt_py_scalar(beta_o, &beta) < 0) || (alpha_o && vkt_py_scalar(alpha_o, &alpha) < 0))
    return NULL;
  for (int k = 0; k < 3; k++)
    if (!(t[k] = tensor_arg(o[k], name, kw[k])))
      return NULL;
  return vkt_py_var_result(vkt_ag_add_product(fn, product, sum_batch, vkt_var_of(o[0]), vkt_var_of(o[1]),
                                              vkt_var_of(o[2]), beta, alpha, &out),
                           &out);
}

#define ADD_PRODUCT(name, m1, m2, product, sum_batch)                                                                  \
  static char *name##_kw[] = {"input", m1, m2, "beta", "alpha", NULL};                                                 \
  static PyObject *m_##name(PyObject *self, PyObject *args, PyObject *kwargs) {                                        \
    return add_product(vkt_##name, product, sum_batch, #name, name##_kw, self, args, kwargs);                          \
  }                                                                                                                    \
  static PyObject *f_##name(PyObject *mod, PyObject *args, PyObject *kwargs) {                                         \
    (void)mod;                                                                                                         \
    return add_product(vkt_##name, product, sum_batch, #name, name##_kw, NULL, args, kwargs);                          \
  }
ADD_PRODUCT(addmm, "mat1", "mat2", vkt_mm, false)
ADD_PRODUCT(addmv, "mat", "vec", vkt_mv, false)
ADD_PRODUCT(baddbmm, "batch1", "batch2", vkt_bmm, false)
ADD_PRODUCT(addbmm, "batch1", "batch2", vkt_bmm, true)

#define KW(f) (PyCFunction)(void (*)(void))(f), METH_VARARGS | METH_KEYWORDS

PyMethodDef vkt_matmul_methods[] = {
    {"matmul", m_matmul, METH_O, "matmul(other): self @ other with PyTorch's rules"},
    {"mm", m_mm, METH_O, "mm(mat2): product of two matrices"},
    {"bmm", m_bmm, METH_O, "bmm(mat2): product of two batches of matrices, [B, M, K] @ [B, K, N]"},
    {"addmm", KW(m_addmm), "addmm(mat1, mat2, *, beta=1, alpha=1): beta * self + alpha * (mat1 @ mat2)"},
    {"addmv", KW(m_addmv), "addmv(mat, vec, *, beta=1, alpha=1): beta * self + alpha * (mat @ vec)"},
    {"baddbmm", KW(m_baddbmm), "baddbmm(batch1, batch2, *, beta=1, alpha=1): beta * self + alpha * bmm(...)"},
    {"addbmm", KW(m_addbmm), "addbmm(batch1, batch2, *, beta=1, alpha=1): beta * self + alpha * sum of bmm(...)"},
    {"dot", m_dot, METH_O, "dot(tensor): the inner product of two 1-D tensors"},
    {"vdot", m_vdot, METH_O, "vdot(other): dot (vkt has no complex dtypes)"},
    {"mv", m_mv, METH_O, "mv(vec): matrix @ vector"},
    {NULL, NULL, 0, NULL},
};

PyMethodDef vkt_matmul_functions[] = {
    {"matmul", KW(f_matmul), "matmul(input, other): input @ other with PyTorch's rules"},
    {"mm", KW(f_mm), "mm(input, mat2): product of two matrices"},
    {"bmm", KW(f_bmm), "bmm(input, mat2): product of two batches of matrices"},
    {"linear", KW(f_linear), "linear(input, weight, bias=None): input @ weight.T + bias"},
    {"addmm", KW(f_addmm), "addmm(input, mat1, mat2, *, beta=1, alpha=1): beta * input + alpha * (mat1 @ mat2)"},
    {"addmv", KW(f_addmv), "addmv(input, mat, vec, *, beta=1, alpha=1): beta * input + alpha * (mat @ vec)"},
    {"baddbmm", KW(f_baddbmm), "baddbmm(input, batch1, batch2, *, beta=1, alpha=1)"},
    {"addbmm", KW(f_addbmm), "addbmm(input, batch1, batch2, *, beta=1, alpha=1): sums the batch's products"},
    {"dot", KW(f_dot), "dot(input, tensor): the inner product of two 1-D tensors"},
    {"vdot", KW(f_vdot), "vdot(input, other): dot (vkt has no complex dtypes)"},
    {"mv", KW(f_mv), "mv(input, vec): matrix @ vector"},
    {"matmul_add_relu", KW(f_matmul_add_relu), "matmul_add_relu(lhs, rhs, bias): relu(lhs @ rhs + bias), one kernel"},
    {"matmul_add_relu_reference", KW(f_matmul_add_relu_reference),
     "matmul_add_relu_reference(lhs, rhs, bias): relu(lhs @ rhs + bias) from the basic ops"},
    {NULL, NULL, 0, NULL},
};
