/* autograd.c (Python): Tensor's autograd attributes and methods, grad_fn objects, the functions behind
 * vkt.autograd (backward, grad, grad mode, hooks) and the node kind of vkt.autograd.Function, whose
 * backward calls the user's Python. */
#include <stdlib.h>
#include <string.h>

#include "../autograd/formula.h"
#include "py.h"

/* ---- grad_fn objects ---- */

typedef struct {
  PyObject_HEAD vkt_node *node;
} py_node;

static PyObject *node_type;

static PyObject *node_wrap(vkt_node *n) {
  if (!n)
    Py_RETURN_NONE;
  py_node *o = (py_node *)PyType_GenericAlloc((PyTypeObject *)node_type, 0);
  if (o) {
    vkt_node_incref(n);
    o->node = n;
  }
  return (PyObject *)o;
}

static void node_dealloc(PyObject *self) {
  PyTypeObject *type = Py_TYPE(self);
  vkt_node_decref(((py_node *)self)->node);
  PyObject_Free(self);
  Py_DECREF(type);
}

static PyObject *node_name(PyObject *self, PyObject *unused) {
  (void)unused;
  return PyUnicode_FromString(((py_node *)self)->node->fn->name);
}

static PyObject *node_next(PyObject *self, void *c) {
  (void)c;
  vkt_node *n = ((py_node *)self)->node;
  PyObject *t = PyTuple_New(n->nin);
  for (int i = 0; t && i < n->nin; i++) {
    PyObject *pair = Py_BuildValue("(Ni)", node_wrap(n->next[i].node), n->next[i].nr);
    if (!pair) {
      Py_DECREF(t);
      return NULL;
    }
    PyTuple_SetItem(t, i, pair);
  }
  return t;
}

static PyObject *node_variable(PyObject *self, void *c) {
  (void)c;
  vkt_meta *leaf = ((py_node *)self)->node->leaf;
  if (!leaf)
    return PyErr_Format(PyExc_AttributeError, "'%s' object has no attribute 'variable'",
                        ((py_node *)self)->node->fn->name);
  return Py_NewRef(leaf->owner ? (PyObject *)leaf->owner : Py_None);
}

static PyObject *node_repr(PyObject *self) {
  return PyUnicode_FromFormat("<%s object at %p>", ((py_node *)self)->node->fn->name, self);
}

static PyObject *node_eq(PyObject *a, PyObject *b, int op) {
  if (!PyObject_TypeCheck(b, (PyTypeObject *)node_type) || (op != Py_EQ && op != Py_NE))
    Py_RETURN_NOTIMPLEMENTED;
  bool same = ((py_node *)a)->node == ((py_node *)b)->node;
  return PyBool_FromLong(op == Py_EQ ? same : !same);
}

static Py_hash_t node_hash(PyObject *self) { return (Py_hash_t)(uintptr_t)((py_node *)self)->node >> 4; }

/* Gradients as a tuple for a node hook (None for undefined ones). */
static PyObject *grads_tuple(int n, const vkt_var *v) {
  PyObject *t = PyTuple_New(n);
  for (int i = 0; t && i < n; i++) {
    vkt_var g = {0};
    if (vkt_var_defined(&v[i]))
      vkt_var_share(&g, &v[i]);
    PyObject *o = vkt_var_defined(&g) ? vkt_wrap_var(&g) : Py_NewRef(Py_None);
    if (!o)
      Py_CLEAR(t);
    else
      PyTuple_SetItem(t, i, o);
  }
  return t;
}

/* A node hook's result r (None, or a tuple of tensors or None) put into v[0..n), with PyTorch's errors. */
static vkt_status hook_result(PyObject *fn, PyObject *r, int n, vkt_var *v) {
  PyObject *type = r && r != Py_None && !PyTuple_Check(r) ? PyType_GetName(Py_TYPE(r)) : NULL;
  PyObject *name = r && PyTuple_Check(r) && PyTuple_Size(r) != n ? PyObject_GetAttrString(fn, "__name__") : NULL;
  if (type)
    PyErr_Format(PyExc_TypeError, "expected tuple, but hook returned '%U'", type);
  else if (name)
    PyErr_Format(PyExc_RuntimeError, "hook '%U' has returned an incorrect number of values (got %zd, but expected %d)",
                 name, PyTuple_Size(r), n);
  for (int i = 0; r && !type && !name && PyTuple_Check(r) && i < n; i++) {
    PyObject *item = PyTuple_GetItem(r, i);
    if (item != Py_None && !vkt_var_of(item)) {
      PyErr_Format(PyExc_TypeError, "expected Variable or None (got %R)", (PyObject *)Py_TYPE(item));
      break;
    }
    vkt_var_release(&v[i]);
    if (item != Py_None)
      vkt_var_share(&v[i], vkt_var_of(item));
  }
  Py_XDECREF(type);
  Py_XDECREF(name);
  return PyErr_Occurred() ? VKT_ERR_PYTHON : VKT_OK;
}

/* Node.register_prehook's fn(grad_outputs), which may return new ones. */
static vkt_status call_node_prehook(void *ctx, int nin, vkt_var *ins, int nout, vkt_var *grads) {
  (void)nin, (void)ins;
  PyObject *go = grads_tuple(nout, grads), *r = go ? PyObject_CallFunctionObjArgs(ctx, go, NULL) : NULL;
  vkt_status st = r ? hook_result(ctx, r, nout, grads) : VKT_ERR_PYTHON;
  Py_XDECREF(go);
  Py_XDECREF(r);
  return st;
}

/* Node.register_hook's fn(grad_inputs, grad_outputs), which may return new grad_inputs. */
static vkt_status call_node_posthook(void *ctx, int nin, vkt_var *ins, int nout, vkt_var *grads) {
  PyObject *gi = grads_tuple(nin, ins), *go = gi ? grads_tuple(nout, grads) : NULL;
  PyObject *r = go ? PyObject_CallFunctionObjArgs(ctx, gi, go, NULL) : NULL;
  vkt_status st = r ? hook_result(ctx, r, nin, ins) : VKT_ERR_PYTHON;
  Py_XDECREF(gi);
  Py_XDECREF(go);
  Py_XDECREF(r);
  return st;
}

static void drop_node_hook(void *ctx) { Py_DECREF((PyObject *)ctx); }

static PyObject *node_add_hook(PyObject *self, PyObject *args) {
  PyObject *fn;
  int post;
  if (!PyArg_ParseTuple(args, "Op", &fn, &post))
    return NULL;
  vkt_node_hook *h = calloc(1, sizeof *h);
  if (!h)
    return PyErr_NoMemory();
  *h = (vkt_node_hook){
      .post = post, .fn = post ? call_node_posthook : call_node_prehook, .ctx = Py_NewRef(fn), .free = drop_node_hook};
  return PyLong_FromLongLong(vkt_node_add_hook(((py_node *)self)->node, h));
}

static PyObject *node_remove_hook(PyObject *self, PyObject *id) {
  long long k = PyLong_AsLongLong(id);
  if (k == -1 && PyErr_Occurred())
    return NULL;
  return PyBool_FromLong(vkt_node_remove_hook(((py_node *)self)->node, k));
}

static PyMethodDef node_methods[] = {
    {"name", node_name, METH_NOARGS, "the node's PyTorch name, e.g. MulBackward0"},
    {"_add_hook", node_add_hook, METH_VARARGS, "_add_hook(fn, post): a pre or post hook's id"},
    {"_remove_hook", node_remove_hook, METH_O, "_remove_hook(id)"},
    {NULL},
};
static PyGetSetDef node_getset[] = {
    {"next_functions", node_next, NULL, "((node or None, output index), ...) of the inputs", NULL},
    {"variable", node_variable, NULL, "AccumulateGrad: the leaf tensor it accumulates into", NULL},
    {NULL},
};
static PyType_Slot node_slots[] = {
    {Py_tp_dealloc, node_dealloc},
    {Py_tp_methods, node_methods},
    {Py_tp_getset, node_getset},
    {Py_tp_repr, node_repr},
    {Py_tp_richcompare, node_eq},
    {Py_tp_hash, node_hash},
    {Py_tp_doc, "A node of the autograd graph: how a tensor was made (Tensor.grad_fn)."},
    {0, NULL},
};
static PyType_Spec node_spec = {"vkt.autograd.Node", sizeof(py_node), 0, Py_TPFLAGS_DEFAULT, node_slots};

/* ---- Tensor attributes ---- */

static PyObject *get_requires_grad(PyObject *self, void *c) {
  (void)c;
  return PyBool_FromLong(vkt_requires_grad(SELF_V));
}

static int set_requires_grad(PyObject *self, PyObject *value, void *c) {
  (void)c;
  int on = value ? PyObject_IsTrue(value) : 0;
  if (on < 0)
    return -1;
  vkt_status st = vkt_set_requires_grad(SELF_V, on);
  if (!st && SELF_V->ag && !SELF_V->ag->owner)
    SELF_V->ag->owner = self;
  return st ? (vkt_raise(st), -1) : 0;
}

static PyObject *get_grad(PyObject *self, void *c) {
  (void)c;
  vkt_meta *m = SELF_V->ag;
  if (!m || !vkt_var_defined(&m->grad))
    Py_RETURN_NONE;
  vkt_var g;
  vkt_var_share(&g, &m->grad);
  return vkt_wrap_var(&g);
}

static int set_grad(PyObject *self, PyObject *value, void *c) {
  (void)c;
  vkt_var *v = SELF_V, *g = value ? vkt_var_of(value) : NULL;
  if (value && value != Py_None && !g) {
    PyErr_SetString(PyExc_TypeError, "assigned grad expected to be a Tensor or None");
    return -1;
  }
  if (g) {
    char a[96], b[96];
    if (g->t.ndim != v->t.ndim || memcmp(g->t.shape, v->t.shape, (size_t)v->t.ndim * sizeof(int64_t))) {
      vkt_shape_str(g->t.ndim, g->t.shape, a, sizeof a);
      vkt_shape_str(v->t.ndim, v->t.shape, b, sizeof b);
      PyErr_Format(PyExc_RuntimeError, "assigned grad has data of a different size: %s, expected %s", a, b);
      return -1;
    }
    if (g->t.dtype != v->t.dtype) {
      PyErr_SetString(PyExc_TypeError, "assigned grad has data of a different type");
      return -1;
    }
    if (vkt_tensor_device(&g->t) != vkt_tensor_device(&v->t)) {
      PyErr_SetString(PyExc_RuntimeError, "assigned grad has data located on a different device");
      return -1;
    }
  }
  vkt_meta *m = g || v->ag ? vkt_var_meta(v) : NULL;
  if (!m)
    return g ? (PyErr_NoMemory(), -1) : 0;
  vkt_var_release(&m->grad);
  if (g)
    vkt_var_share(&m->grad, g);
  return 0;
}

static PyObject *get_grad_fn(PyObject *self, void *c) {
  (void)c;
  vkt_status st = vkt_view_current(SELF_V);
  vkt_meta *m = SELF_V->ag;
  return st ? vkt_raise(st) : node_wrap(m ? m->grad_fn.node : NULL);
}

static PyObject *get_is_leaf(PyObject *self, void *c) {
  (void)c;
  vkt_status st = vkt_view_current(SELF_V); /* PyTorch's reads the grad_fn */
  return st ? vkt_raise(st) : PyBool_FromLong(vkt_is_leaf(SELF_V));
}

/* Whether self is a view to autograd (PyTorch's _is_view()): made by a view op of another tensor, not detached; a
 * view of an inference tensor is none, as in PyTorch, which keeps no view metadata for those. */
static bool is_view(PyObject *self) {
  const vkt_meta *m = SELF_V->ag;
  return m && m->is_view && m->base && !SELF_T->storage->inference;
}

/* ._base: the tensor a view views (the first of a chain of views, as PyTorch's), else None; the Python object
 * that holds it while one does. */
static PyObject *get_base(PyObject *self, void *c) {
  (void)c;
  if (!is_view(self))
    Py_RETURN_NONE;
  vkt_meta *base = SELF_V->ag->base;
  if (base->owner)
    return Py_NewRef((PyObject *)base->owner);
  vkt_tensor now = vkt_view_base(SELF_V->ag); /* its geometry now, after an in-place view op on it */
  vkt_var b = {{0}, base};
  vkt_tensor_share(&b.t, &now);
  __atomic_add_fetch(&base->refcount, 1, __ATOMIC_RELAXED);
  return vkt_wrap_var(&b);
}

static PyObject *get_retains_grad(PyObject *self, void *c) {
  (void)c;
  return PyBool_FromLong(SELF_V->ag && SELF_V->ag->retains_grad && !vkt_is_leaf(SELF_V));
}

static PyObject *get_version(PyObject *self, void *c) {
  (void)c;
  return PyLong_FromUnsignedLong(SELF_T->storage->version - SELF_T->storage->version_shown);
}

static PyObject *get_data(PyObject *self, void *c) {
  (void)c;
  vkt_var d;
  vkt_detach(&d, SELF_V);
  return vkt_wrap_var(&d);
}

static int set_data(PyObject *self, PyObject *value, void *c) {
  (void)c;
  vkt_tensor *src = value ? vkt_tensor_of(value) : NULL;
  if (!src) {
    PyErr_SetString(PyExc_TypeError, "Tensor.data must be set to a Tensor");
    return -1;
  }
  vkt_tensor t;
  vkt_tensor_share(&t, src);
  vkt_meta *m = SELF_V->ag;
  if (m && m->base && t.storage != SELF_T->storage) { /* no longer a view of its base (whose storage it held) */
    vkt_meta_decref(m->base);
    m->base = NULL;
    m->base_t = (vkt_tensor){0};
  }
  vkt_tensor_release(SELF_T);
  *SELF_T = t;
  return 0;
}

PyGetSetDef vkt_autograd_getset[] = {
    {"requires_grad", get_requires_grad, set_requires_grad, "whether gradients are computed for this tensor", NULL},
    {"grad", get_grad, set_grad, "the gradient backward() accumulated (None before)", NULL},
    {"grad_fn", get_grad_fn, NULL, "the node that made this tensor (None for a leaf)", NULL},
    {"is_leaf", get_is_leaf, NULL, "made by the user, not by a recorded op", NULL},
    {"retains_grad", get_retains_grad, NULL, "a non-leaf whose .grad backward fills (retain_grad())", NULL},
    {"_base", get_base, NULL, "the tensor this view views (the first of a chain of views), else None", NULL},
    {"_version", get_version, NULL, "how many times the storage was written", NULL},
    {"data", get_data, set_data, "the tensor without its autograd history", NULL},
    {NULL},
};

/* ---- Tensor methods ---- */

static PyObject *t_requires_grad_(PyObject *self, PyObject *args, PyObject *kwargs) {
  static char *kw[] = {"requires_grad", NULL};
  int on = 1;
  if (!vkt_parse_args(args, kwargs, "|p", kw, &on))
    return NULL;
  vkt_status st = vkt_set_requires_grad(SELF_V, on);
  if (!st && SELF_V->ag && !SELF_V->ag->owner)
    SELF_V->ag->owner = self;
  return st ? vkt_raise(st) : Py_NewRef(self);
}

static PyObject *t_retain_grad(PyObject *self, PyObject *unused) {
  (void)unused;
  if (!vkt_requires_grad(SELF_V))
    return vkt_raise(vkt_fail(VKT_ERR_RUNTIME, "can't retain_grad on Tensor that has requires_grad=False"));
  vkt_status st = SELF_V->ag->grad_fn.node ? vkt_view_current(SELF_V) : VKT_OK; /* a no-op on leaves, unread */
  if (st)
    return vkt_raise(st);
  vkt_retain_grad(SELF_V);
  Py_RETURN_NONE;
}

static PyObject *t_is_view(PyObject *self, PyObject *unused) {
  (void)unused;
  return PyBool_FromLong(is_view(self));
}

static PyObject *t_is_inference(PyObject *self, PyObject *unused) {
  (void)unused;
  return PyBool_FromLong(SELF_T->storage->inference);
}

static PyObject *t_detach(PyObject *self, PyObject *unused) {
  (void)unused;
  vkt_var d;
  vkt_detach(&d, SELF_V);
  return vkt_wrap_var(&d);
}

static PyObject *t_detach_(PyObject *self, PyObject *unused) {
  (void)unused;
  vkt_var *v = SELF_V;
  if (v->ag && v->ag->is_view)
    return vkt_raise(vkt_fail(VKT_ERR_RUNTIME, "Can't detach views in-place. Use detach() instead."));
  vkt_node *n = v->ag ? v->ag->grad_fn.node : NULL;
  if (n && n->retains[v->ag->grad_fn.nr] == v->ag)
    n->retains[v->ag->grad_fn.nr] = NULL;
  if (v->ag) { /* a leaf now; its meta stays, which its views follow */
    vkt_node_decref(n);
    v->ag->grad_fn = (vkt_edge){0};
    v->ag->requires_grad = v->ag->retains_grad = false;
  }
  return Py_NewRef(self);
}

/* ---- hooks: Python callables run on a gradient ---- */

static vkt_status call_hook(void *ctx, vkt_var *grad) {
  vkt_var g;
  vkt_var_share(&g, grad);
  PyObject *arg = vkt_wrap_var(&g), *r = arg ? PyObject_CallFunctionObjArgs((PyObject *)ctx, arg, NULL) : NULL;
  Py_XDECREF(arg);
  if (!r)
    return VKT_ERR_PYTHON;
  if (r != Py_None) {
    vkt_var *nv = vkt_var_of(r);
    if (!nv) {
      Py_DECREF(r);
      PyErr_SetString(PyExc_TypeError, "a hook must return None or a Tensor");
      return VKT_ERR_PYTHON;
    }
    vkt_var_release(grad);
    vkt_var_share(grad, nv);
  }
  Py_DECREF(r);
  return VKT_OK;
}

static void drop_hook(void *ctx) { Py_DECREF((PyObject *)ctx); }

/* A post-accumulate hook: fn(the leaf's tensor), which must return None. */
typedef struct {
  PyObject *fn;
  vkt_meta *leaf; /* weak: the hook lives in it */
} post_hook;

static vkt_status call_post_hook(void *ctx, vkt_var *grad) {
  (void)grad;
  post_hook *p = ctx;
  if (!p->leaf->owner) /* the tensor is gone: nobody to hand */
    return VKT_OK;
  PyObject *r = PyObject_CallFunctionObjArgs(p->fn, (PyObject *)p->leaf->owner, NULL);
  PyObject *type = r && r != Py_None ? PyType_GetName(Py_TYPE(r)) : NULL;
  if (type) /* PyTorch's words */
    PyErr_Format(PyExc_TypeError, "expected Variable, but hook returned '%U'", type);
  Py_XDECREF(type);
  bool ok = r == Py_None;
  Py_XDECREF(r);
  return ok ? VKT_OK : VKT_ERR_PYTHON;
}

static void drop_post_hook(void *ctx) {
  post_hook *p = ctx;
  Py_DECREF(p->fn);
  free(p);
}

/* _add_hook(tensor, fn, post=False): fn(grad) as Tensor.register_hook, or with post fn(leaf) after .grad took a
 * gradient (register_post_accumulate_grad_hook); the hook's id. */
static PyObject *py_add_hook(PyObject *m, PyObject *args) {
  PyObject *t, *fn;
  int post = 0;
  (void)m;
  if (!PyArg_ParseTuple(args, "OO|p", &t, &fn, &post) || !vkt_var_of(t))
    return NULL;
  vkt_var *v = vkt_var_of(t);
  if (!vkt_requires_grad(v))
    return vkt_raise(vkt_fail(VKT_ERR_RUNTIME, "cannot register a hook on a tensor that doesn't require gradient"));
  vkt_status st = vkt_view_current(v);
  if (st)
    return vkt_raise(st);
  if (post && !vkt_is_leaf(v))
    return vkt_raise(vkt_fail(VKT_ERR_RUNTIME, "post accumulate grad hooks cannot be registered on non-leaf tensors"));
  vkt_hook *h = calloc(1, sizeof *h);
  post_hook *p = post ? malloc(sizeof *p) : NULL;
  if (!h || (post && !p)) {
    free(h), free(p);
    return PyErr_NoMemory();
  }
  if (!post) {
    *h = (vkt_hook){.fn = call_hook, .ctx = Py_NewRef(fn), .free = drop_hook};
    return PyLong_FromLongLong(vkt_add_hook(v, h));
  }
  *p = (post_hook){Py_NewRef(fn), v->ag};
  if (!v->ag->owner)
    v->ag->owner = t;
  *h = (vkt_hook){.fn = call_post_hook, .ctx = p, .free = drop_post_hook};
  return PyLong_FromLongLong(vkt_add_post_hook(v, h));
}

static PyObject *py_remove_hook(PyObject *m, PyObject *args) {
  PyObject *t;
  long long id;
  (void)m;
  if (!PyArg_ParseTuple(args, "OL", &t, &id) || !vkt_var_of(t))
    return NULL;
  vkt_meta *meta = vkt_var_of(t)->ag;
  bool removed = meta && vkt_remove_hook(meta, meta->grad_fn.node, meta->grad_fn.nr, id);
  return PyBool_FromLong(removed);
}

/* ---- backward and grad ---- */

/* A sequence of tensors (or one tensor) as vars, borrowed; -1 with TypeError naming what. */
static int vars_of(PyObject *seq, const char *what, bool allow_none, vkt_var **out, Py_ssize_t *n) {
  PyObject *fast = vkt_is_tensor(seq) || seq == Py_None ? PyTuple_Pack(1, seq) : PySequence_Tuple(seq);
  if (!fast)
    return -1;
  *n = PyTuple_Size(fast);
  *out = PyMem_Calloc(*n ? *n : 1, sizeof **out);
  for (Py_ssize_t i = 0; *out && i < *n; i++) {
    PyObject *o = PyTuple_GetItem(fast, i);
    if (o == Py_None && allow_none)
      continue;
    vkt_var *v = vkt_var_of(o);
    if (!v) {
      PyErr_Format(PyExc_TypeError, "%s must be Tensors%s, not %R", what, allow_none ? " or None" : "",
                   (PyObject *)Py_TYPE(o));
      PyMem_Free(*out);
      Py_DECREF(fast);
      return -1;
    }
    (*out)[i] = *v; /* borrowed: the tuple keeps it alive */
  }
  Py_DECREF(fast);
  return *out ? 0 : (PyErr_NoMemory(), -1);
}

/* _run_backward(tensors, grad_tensors, keep_graph, create_graph, inputs, allow_unused, accumulate) */
static PyObject *py_run_backward(PyObject *m, PyObject *args) {
  PyObject *tensors, *grads, *inputs;
  int keep, create, allow_unused, accumulate;
  (void)m;
  if (!PyArg_ParseTuple(args, "OOppOpp", &tensors, &grads, &keep, &create, &inputs, &allow_unused, &accumulate))
    return NULL;
  vkt_var *roots = NULL, *gs = NULL, *ins = NULL, *captured = NULL;
  Py_ssize_t n = 0, ng = 0, ni = 0;
  PyObject *r = NULL;
  if (vars_of(tensors, "outputs", false, &roots, &n) < 0 || vars_of(grads, "grad_outputs", true, &gs, &ng) < 0)
    goto finish;
  if (ng != n) {
    PyErr_Format(PyExc_RuntimeError,
                 "grad can be implicitly created only for scalar outputs"
                 " (got %zd gradients for %zd outputs)",
                 ng, n);
    goto finish;
  }
  if (inputs != Py_None && vars_of(inputs, "inputs", false, &ins, &ni) < 0)
    goto finish;
  if (inputs != Py_None && ni == 0) {
    PyErr_SetString(PyExc_RuntimeError, accumulate ? "'inputs' argument to backward() cannot be empty."
                                                   : "grad requires non-empty inputs.");
    goto finish;
  }
  if (!(captured = PyMem_Calloc(ni ? ni : 1, sizeof *captured))) {
    PyErr_NoMemory();
    goto finish;
  }
  vkt_backward_opts o = {keep, create, accumulate, (int)ni, ins, captured};
  vkt_status st = vkt_backward((int)n, roots, gs, &o);
  char *report = st ? vkt_anomaly_report() : NULL;
  if (report) { /* PyTorch warns where the failing node was made, then raises */
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    int failed = PyErr_WarnEx(PyExc_UserWarning, report, 1);
    free(report);
    if (failed) {
      Py_XDECREF(type), Py_XDECREF(value), Py_XDECREF(tb);
      goto finish;
    }
    PyErr_Restore(type, value, tb);
  }
  if (st) {
    vkt_raise(st);
    goto finish;
  }
  if (accumulate) {
    r = Py_NewRef(Py_None);
    goto finish;
  }
  r = PyTuple_New(ni);
  for (Py_ssize_t j = 0; r && j < ni; j++) {
    if (!vkt_var_defined(&captured[j])) {
      if (!allow_unused) {
        PyErr_Format(PyExc_RuntimeError, "The differentiated Tensor at index %zd appears to not have been used in the "
                     "graph. Set allow_unused=True if this is the desired behavior.", j);
        Py_CLEAR(r);
        break;
      }
      PyTuple_SetItem(r, j, Py_NewRef(Py_None));
      continue;
    }
    if (!create && captured[j].ag) { /* without create_graph the results carry no history */
      vkt_meta_decref(captured[j].ag);
      captured[j].ag = NULL;
    }
    PyTuple_SetItem(r, j, vkt_wrap_var(&captured[j]));
  }
finish:
  for (Py_ssize_t j = 0; captured && j < ni; j++)
    vkt_var_release(&captured[j]);
  PyMem_Free(captured);
  PyMem_Free(roots);
  PyMem_Free(gs);
  PyMem_Free(ins);
  return r;
}

static PyObject *py_is_grad_enabled(PyObject *m, PyObject *unused) {
  (void)m, (void)unused;
  return PyBool_FromLong(vkt_grad_enabled());
}

static PyObject *py_set_grad_enabled(PyObject *m, PyObject *on) {
  (void)m;
  int v = PyObject_IsTrue(on);
  if (v < 0)
    return NULL;
  vkt_set_grad_enabled(v);
  Py_RETURN_NONE;
}

/* _current_graph_task_id(): the backward running on this thread (-1: none), for register_multi_grad_hook */
static PyObject *py_current_graph_task_id(PyObject *m, PyObject *unused) {
  (void)m, (void)unused;
  return PyLong_FromLongLong(vkt_backward_task_id());
}

/* _will_engine_execute_node(node): whether the backward running on this thread runs node (or takes its value) */
static PyObject *py_will_engine_execute_node(PyObject *m, PyObject *node) {
  (void)m;
  if (!PyObject_TypeCheck(node, (PyTypeObject *)node_type))
    return PyErr_Format(PyExc_TypeError, "_will_engine_execute_node expects a grad_fn, got %R", Py_TYPE(node));
  bool runs = false;
  vkt_status st = vkt_backward_will_run(((py_node *)node)->node, &runs);
  return st ? vkt_raise(st) : PyBool_FromLong(runs);
}

static PyObject *py_is_inference_mode_enabled(PyObject *m, PyObject *unused) {
  (void)m, (void)unused;
  return PyBool_FromLong(vkt_inference_mode());
}

static PyObject *py_set_inference_mode(PyObject *m, PyObject *on) {
  (void)m;
  int v = PyObject_IsTrue(on);
  if (v < 0)
    return NULL;
  vkt_set_inference_mode(v);
  Py_RETURN_NONE;
}

/* ---- saved-tensor hooks (vkt.autograd.graph.saved_tensors_hooks) ---- */

static _Thread_local PyObject *hooks_pair; /* this thread's (pack_hook, unpack_hook), or NULL */
static _Thread_local PyObject *pack_error;  /* what a pack hook raised, for vkt_py_pack_failed */

int vkt_py_pack_failed(void) {
  if (!pack_error)
    return 0;
  PyErr_SetObject((PyObject *)Py_TYPE(pack_error), pack_error);
  Py_CLEAR(pack_error);
  return -1;
}

/* A handle: (unpack_hook, what pack_hook returned), or (None, the exception pack_hook raised), which the backward
 * that needs the value raises. */
static const vkt_saved_hooks python_hooks;

static void *hooks_pack(const vkt_var *v) {
  PyGILState_STATE gil = PyGILState_Ensure();
  vkt_var shared;
  vkt_var_share(&shared, v);
  PyObject *pending = pack_error; /* an earlier save's failure waits for the op's result, not for this wrap */
  pack_error = NULL;
  PyObject *t = vkt_wrap_var(&shared), *handle = NULL;
  pack_error = pending;
  vkt_set_saved_hooks(NULL); /* what the hook saves is not packed again, as in PyTorch */
  PyObject *packed = t ? PyObject_CallFunctionObjArgs(PyTuple_GetItem(hooks_pair, 0), t, NULL) : NULL;
  vkt_set_saved_hooks(&python_hooks);
  if (packed) {
    handle = PyTuple_Pack(2, PyTuple_GetItem(hooks_pair, 1), packed);
  } else {
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    if (value && tb)
      PyException_SetTraceback(value, tb);
    handle = value ? PyTuple_Pack(2, Py_None, value) : NULL;
    if (value && !pack_error)
      pack_error = Py_NewRef(value);
    Py_XDECREF(type), Py_XDECREF(value), Py_XDECREF(tb);
  }
  PyErr_Clear();
  Py_XDECREF(packed);
  Py_XDECREF(t);
  PyGILState_Release(gil);
  return handle;
}

static vkt_status hooks_unpack(void *handle, vkt_var *out) {
  PyGILState_STATE gil = PyGILState_Ensure();
  PyObject *fn = PyTuple_GetItem(handle, 0), *obj = PyTuple_GetItem(handle, 1), *r = NULL;
  if (fn != Py_None) {
    vkt_set_saved_hooks(NULL);
    r = PyObject_CallFunctionObjArgs(fn, obj, NULL);
    vkt_set_saved_hooks(hooks_pair ? &python_hooks : NULL);
  }
  if (fn == Py_None) {
    PyErr_SetObject((PyObject *)Py_TYPE(obj), obj);
  } else if (r && !vkt_var_of(r)) {
    PyObject *type = PyType_GetName(Py_TYPE(r));
    if (type)
      PyErr_Format(PyExc_TypeError, "Output of saved tensor unpack_hook expected to be a Tensor but got result of "
                   "type %U", type);
    Py_XDECREF(type);
  } else if (r) {
    vkt_detach(out, vkt_var_of(r));
  }
  vkt_status st = vkt_var_defined(out) ? VKT_OK : VKT_ERR_PYTHON;
  Py_XDECREF(r);
  PyGILState_Release(gil);
  return st;
}

static void hooks_drop(void *handle) {
  PyGILState_STATE gil = PyGILState_Ensure();
  Py_DECREF((PyObject *)handle);
  PyGILState_Release(gil);
}

static const vkt_saved_hooks python_hooks = {hooks_pack, hooks_unpack, hooks_drop};

/* _set_saved_hooks((pack_hook, unpack_hook) or None): this thread's hooks */
static PyObject *py_set_saved_hooks(PyObject *m, PyObject *pair) {
  (void)m;
  if (pair != Py_None && (!PyTuple_Check(pair) || PyTuple_Size(pair) != 2))
    return PyErr_Format(PyExc_TypeError, "_set_saved_hooks: a (pack_hook, unpack_hook) pair or None");
  PyObject *old = hooks_pair;
  hooks_pair = pair == Py_None ? NULL : Py_NewRef(pair);
  Py_XDECREF(old);
  vkt_set_saved_hooks(hooks_pair ? &python_hooks : NULL);
  Py_RETURN_NONE;
}

/* ---- anomaly mode ---- */

/* The caller's Python stack, as traceback.format_stack() words it (vkt_anomaly_stack). */
static char *python_stack(void) {
  PyGILState_STATE gil = PyGILState_Ensure();
  char *text = NULL;
  PyObject *mod = PyImport_ImportModule("traceback");
  PyObject *lines = mod ? PyObject_CallMethod(mod, "format_stack", NULL) : NULL;
  PyObject *empty = lines ? PyUnicode_FromString("") : NULL, *joined = empty ? PyUnicode_Join(empty, lines) : NULL;
  const char *utf8 = joined ? PyUnicode_AsUTF8AndSize(joined, NULL) : NULL;
  if (utf8)
    text = strdup(utf8);
  PyErr_Clear(); /* without a stack the node just has none */
  Py_XDECREF(joined), Py_XDECREF(empty), Py_XDECREF(lines), Py_XDECREF(mod);
  PyGILState_Release(gil);
  return text;
}

static PyObject *py_set_anomaly_enabled(PyObject *m, PyObject *args, PyObject *kwargs) {
  static char *kw[] = {"enabled", "check_nan", NULL};
  int on, check_nan = 1;
  (void)m;
  if (!vkt_parse_args(args, kwargs, "p|p", kw, &on, &check_nan))
    return NULL;
  vkt_anomaly_stack = python_stack;
  vkt_set_anomaly(on, check_nan);
  Py_RETURN_NONE;
}

static PyObject *py_backward_plain(PyObject *m, PyObject *unused) {
  (void)m, (void)unused;
  return PyBool_FromLong(vkt_backward_plain());
}

static PyObject *py_is_anomaly_enabled(PyObject *m, PyObject *unused) {
  (void)m, (void)unused;
  return PyBool_FromLong(vkt_anomaly(NULL));
}

static PyObject *py_is_anomaly_check_nan_enabled(PyObject *m, PyObject *unused) {
  (void)m, (void)unused;
  bool check;
  vkt_anomaly(&check);
  return PyBool_FromLong(check);
}

/* ---- autograd.Function: a node whose backward is the user's Python ---- */

typedef struct {
  PyObject *backward; /* cls.backward */
  PyObject *ctx;
  int ntensors; /* how many of the inputs are tensors: gradients are returned for every input */
  int nargs;
} function_state;

static void function_free(void *p) {
  function_state *f = p;
  Py_XDECREF(f->backward);
  Py_XDECREF(f->ctx);
  PyMem_Free(f);
}

static void function_backward(vkt_bw *b) {
  function_state *f = b->n->extra;
  PyObject *args = PyTuple_New(b->n->nout + 1), *r = NULL;
  if (!args) {
    b->st = VKT_ERR_PYTHON;
    return;
  }
  PyTuple_SetItem(args, 0, Py_NewRef(f->ctx));
  for (int k = 0; k < b->n->nout; k++) { /* None where no gradient arrived (set_materialize_grads(False)) */
    vkt_var g = {0};
    if (vkt_var_defined(&b->grads[k]))
      vkt_var_share(&g, &b->grads[k]);
    PyTuple_SetItem(args, k + 1, vkt_var_defined(&g) ? vkt_wrap_var(&g) : Py_NewRef(Py_None));
  }
  r = PyObject_Call(f->backward, args, NULL);
  Py_DECREF(args);
  if (!r) {
    b->st = VKT_ERR_PYTHON;
    return;
  }
  PyObject *t = PyTuple_Check(r) ? Py_NewRef(r) : PyTuple_Pack(1, r);
  Py_DECREF(r);
  if (!t || PyTuple_Size(t) < b->n->nin) {
    if (t)
      PyErr_Format(PyExc_RuntimeError, "function %s returned an incorrect number of gradients (expected %d, got %zd)",
                   b->n->fn->name, f->nargs, PyTuple_Size(t));
    Py_XDECREF(t);
    b->st = VKT_ERR_PYTHON;
    return;
  }
  for (int i = 0; i < b->n->nin; i++) {
    PyObject *gi = PyTuple_GetItem(t, i);
    vkt_var *v = gi == Py_None ? NULL : vkt_var_of(gi);
    if (gi != Py_None && !v) {
      PyErr_Format(PyExc_TypeError, "function backward returned a gradient of type %R, not a Tensor or None",
                   (PyObject *)Py_TYPE(gi));
      b->st = VKT_ERR_PYTHON;
      break;
    }
    SET(b, i, v);
  }
  Py_DECREF(t);
}

/* _function_record(name, backward, ctx, inputs (the tensors), outputs (tuple), non_differentiable, dirty (tuples
 * of booleans), materialize_grads): the outputs as new Tensors sharing their storage, made outputs of one node;
 * a dirty output (an input the forward wrote in place, ctx.mark_dirty) is that input, which takes the node's
 * history as an in-place op's result does. */
static PyObject *py_function_record(PyObject *m, PyObject *args) {
  const char *name;
  PyObject *backward, *ctx, *inputs, *outputs, *nondiff, *dirty;
  int materialize = 1;
  (void)m;
  if (!PyArg_ParseTuple(args, "sOOO!O!O!O!p", &name, &backward, &ctx, &PyTuple_Type, &inputs, &PyTuple_Type,
                        &outputs, &PyTuple_Type, &nondiff, &PyTuple_Type, &dirty, &materialize))
    return NULL;
  Py_ssize_t nin = PyTuple_Size(inputs), nout = PyTuple_Size(outputs);
  const vkt_var **in = PyMem_Calloc(nin ? nin : 1, sizeof *in);
  if (!in)
    return PyErr_NoMemory();
  bool records = false;
  for (Py_ssize_t i = 0; i < nin; i++)
    records |= vkt_requires_grad(in[i] = vkt_var_of(PyTuple_GetItem(inputs, i)));
  records &= vkt_grad_enabled();
  for (Py_ssize_t k = 0; k < nout; k++) /* PyTorch refuses a dirty leaf or view of one */
    if (PyObject_IsTrue(PyTuple_GetItem(dirty, k)) == 1 && vkt_var_of(PyTuple_GetItem(outputs, k))) {
      vkt_status st = vkt_inplace_check(vkt_var_of(PyTuple_GetItem(outputs, k)), records);
      if (st) {
        PyMem_Free(in);
        return vkt_raise(st);
      }
    }
  const vkt_fn *kind = vkt_fn_named(name, function_backward); /* one a Function class */
  vkt_node *n = kind ? vkt_node_begin(kind, (int)nin, (const vkt_var *const *)in, (int)nout) : NULL;
  PyMem_Free(in);
  if (!kind)
    return PyErr_NoMemory();
  function_state *f = n ? PyMem_Calloc(1, sizeof *f) : NULL;
  if (n && !f) {
    vkt_node_decref(n);
    return PyErr_NoMemory();
  }
  if (f) {
    *f = (function_state){Py_NewRef(backward), Py_NewRef(ctx), (int)nin, (int)nin};
    n->extra = f;
    n->extra_free = function_free;
    n->undefined_grads = !materialize;
  }
  PyObject *r = PyTuple_New(nout);
  for (Py_ssize_t k2 = 0; r && k2 < nout; k2++) {
    PyObject *o = PyTuple_GetItem(outputs, k2);
    vkt_var *v = vkt_var_of(o);
    if (!v) {
      PyTuple_SetItem(r, k2, Py_NewRef(o));
      continue;
    }
    vkt_var out;
    vkt_detach(&out, v);
    if (PyObject_IsTrue(PyTuple_GetItem(nondiff, k2)) != 1 && vkt_dtypes[out.t.dtype].is_float)
      vkt_node_output(n, (int)k2, &out);
    if (PyObject_IsTrue(PyTuple_GetItem(dirty, k2)) == 1) {
      vkt_inplace_rebase(v, &out);
      vkt_var_release(&out);
      PyTuple_SetItem(r, k2, Py_NewRef(o));
      continue;
    }
    PyTuple_SetItem(r, k2, vkt_wrap_var(&out));
  }
  vkt_node_decref(n);
  return r;
}

PyMethodDef vkt_autograd_methods[] = {
    {"requires_grad_", (PyCFunction)(void (*)(void))t_requires_grad_, METH_VARARGS | METH_KEYWORDS,
     "requires_grad_(requires_grad=True): sets requires_grad in place (leaves only); returns self"},
    {"retain_grad", t_retain_grad, METH_NOARGS, "keeps this non-leaf's .grad during backward()"},
    {"detach", t_detach, METH_NOARGS, "the same data, outside the autograd graph"},
    {"detach_", t_detach_, METH_NOARGS, "takes this tensor out of the autograd graph"},
    {"_is_view", t_is_view, METH_NOARGS, "whether this tensor is a view of another (its _base)"},
    {"is_inference", t_is_inference, METH_NOARGS, "whether this tensor was made in inference mode"},
    {NULL},
};

/* _make_subclass(cls, data, requires_grad=False): a leaf of the Tensor subclass cls (vkt.nn.Parameter) that
 * shares data's storage, outside data's graph; torch.Tensor._make_subclass. */
static PyObject *py_make_subclass(PyObject *module, PyObject *args) {
  (void)module;
  PyObject *cls, *data;
  int requires_grad = 0;
  if (!PyArg_ParseTuple(args, "OO|p:_make_subclass", &cls, &data, &requires_grad))
    return NULL;
  if (!PyType_Check(cls) || !PyType_IsSubtype((PyTypeObject *)cls, (PyTypeObject *)vkt_state->tensor_type))
    return PyErr_Format(PyExc_TypeError, "_make_subclass(): cls must be a subclass of vkt.Tensor");
  vkt_var *v = vkt_var_of(data);
  if (!v)
    return PyErr_Format(PyExc_TypeError, "_make_subclass(): argument 'data' must be Tensor, not %R", Py_TYPE(data));
  allocfunc alloc = (allocfunc)PyType_GetSlot((PyTypeObject *)cls, Py_tp_alloc);
  PyObject *self = alloc((PyTypeObject *)cls, 0);
  if (!self)
    return NULL;
  vkt_detach(SELF_V, v);
  if (requires_grad && set_requires_grad(self, Py_True, NULL) < 0)
    Py_CLEAR(self);
  return self;
}

PyMethodDef vkt_autograd_functions[] = {
    {"_make_subclass", py_make_subclass, METH_VARARGS, "_make_subclass(cls, data, requires_grad=False)"},
    {"_run_backward", py_run_backward, METH_VARARGS, "the engine behind vkt.autograd.backward and grad"},
    {"_add_hook", py_add_hook, METH_VARARGS, "_add_hook(tensor, fn, post=False): the hook's id"},
    {"_remove_hook", py_remove_hook, METH_VARARGS, "_remove_hook(tensor, id)"},
    {"_function_record", py_function_record, METH_VARARGS, "records an autograd.Function's node"},
    {"is_grad_enabled", py_is_grad_enabled, METH_NOARGS, "whether ops record gradients on this thread"},
    {"_set_grad_enabled", py_set_grad_enabled, METH_O, "turns recording on or off for this thread"},
    {"_current_graph_task_id", py_current_graph_task_id, METH_NOARGS, "the backward running here, or -1"},
    {"_will_engine_execute_node", py_will_engine_execute_node, METH_O,
     "_will_engine_execute_node(node): whether the backward running here runs node or takes its value"},
    {"is_inference_mode_enabled", py_is_inference_mode_enabled, METH_NOARGS, "whether inference mode is on here"},
    {"_set_inference_mode", py_set_inference_mode, METH_O,
     "inference mode on or off for this thread: tensors made while it is on are inference tensors"},
    {"set_anomaly_enabled", (PyCFunction)(void (*)(void))py_set_anomaly_enabled, METH_VARARGS | METH_KEYWORDS,
     "set_anomaly_enabled(enabled, check_nan=True): anomaly detection on or off, for the whole process"},
    {"is_anomaly_enabled", py_is_anomaly_enabled, METH_NOARGS, "whether anomaly detection is on"},
    {"_set_saved_hooks", py_set_saved_hooks, METH_O, "_set_saved_hooks((pack_hook, unpack_hook) or None)"},
    {"_backward_plain", py_backward_plain, METH_NOARGS,
     "whether the backward running on this thread is backward() into every leaf (no inputs=, not grad())"},
    {"is_anomaly_check_nan_enabled", py_is_anomaly_check_nan_enabled, METH_NOARGS,
     "whether anomaly detection raises where a backward returns NaN"},
    {NULL},
};

int vkt_autograd_add(PyObject *module) {
  node_type = PyType_FromModuleAndSpec(module, &node_spec, NULL);
  return node_type ? PyModule_AddObjectRef(module, "Node", node_type) : -1;
}
