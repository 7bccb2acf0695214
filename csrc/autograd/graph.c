/* graph.c: the autograd graph's pieces: grad mode, vars and their metas, nodes, saved tensors, hooks,
 * and the rules of in-place writes. The engine (engine.c) walks what is recorded here. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ops/ops.h"
#include "autograd.h"

static _Thread_local bool grad_disabled; /* per thread, as PyTorch's grad mode */
static uint64_t next_seq = 1;            /* atomic: graphs are built on many threads */

bool vkt_grad_enabled(void) { return !grad_disabled; }
void vkt_set_grad_enabled(bool on) { grad_disabled = !on; }

static bool anomaly_on, anomaly_nan = true; /* process-wide, as PyTorch's */
char *(*vkt_anomaly_stack)(void);

void vkt_set_anomaly(bool on, bool check_nan) {
  __atomic_store_n(&anomaly_nan, check_nan, __ATOMIC_RELAXED);
  __atomic_store_n(&anomaly_on, on, __ATOMIC_RELAXED);
}

bool vkt_anomaly(bool *check_nan) {
  if (check_nan)
    *check_nan = __atomic_load_n(&anomaly_nan, __ATOMIC_RELAXED);
  return __atomic_load_n(&anomaly_on, __ATOMIC_RELAXED);
}

/* ---- vars and metas ---- */

static void hooks_free(vkt_hook *h) {
  for (vkt_hook *next; h; h = next) {
    next = h->next;
    if (h->free)
      h->free(h->ctx);
    free(h);
  }
}

static void node_hooks_free(vkt_node_hook *h) {
  for (vkt_node_hook *next; h; h = next) {
    next = h->next;
    if (h->free)
      h->free(h->ctx);
    free(h);
  }
}

void vkt_meta_decref(vkt_meta *m) {
  if (!m || __atomic_sub_fetch(&m->refcount, 1, __ATOMIC_ACQ_REL) > 0)
    return;
  vkt_node *n = m->grad_fn.node;
  if (n && n->retains[m->grad_fn.nr] == m)
    n->retains[m->grad_fn.nr] = NULL;
  vkt_node_decref(n);
  vkt_var_release(&m->grad);
  vkt_meta_decref(m->base);
  hooks_free(m->hooks);
  hooks_free(m->post_hooks);
  free(m);
}

void vkt_var_release(vkt_var *v) {
  vkt_tensor_release(&v->t);
  vkt_meta_decref(v->ag);
  v->ag = NULL;
}

void vkt_var_share(vkt_var *out, const vkt_var *src) {
  vkt_tensor_share(&out->t, &src->t);
  out->ag = src->ag;
  if (out->ag)
    __atomic_add_fetch(&out->ag->refcount, 1, __ATOMIC_RELAXED);
}

vkt_meta *vkt_var_meta(vkt_var *v) {
  if (!v->ag && (v->ag = calloc(1, sizeof *v->ag)))
    v->ag->refcount = 1;
  return v->ag;
}

void vkt_detach(vkt_var *out, const vkt_var *src) {
  vkt_tensor_share(&out->t, &src->t);
  out->ag = NULL;
}

vkt_status vkt_set_requires_grad(vkt_var *v, bool on) {
  if (!vkt_is_leaf(v)) {
    if (on)
      return VKT_OK;
    return vkt_fail(VKT_ERR_RUNTIME,
                    "you can only change requires_grad flags of leaf variables. If you want to use a computed "
                    "variable in a subgraph that doesn't require differentiation use var_no_grad = var.detach().");
  }
  if (on && !vkt_dtypes[v->t.dtype].is_float)
    return vkt_fail(VKT_ERR_RUNTIME, "only Tensors of floating point and complex dtype can require gradients");
  if (on && v->t.storage->inference && !vkt_inference_mode())
    return vkt_fail(VKT_ERR_RUNTIME, "Setting requires_grad=True on inference tensor outside InferenceMode is not "
                    "allowed.");
  if (!on && !v->ag)
    return VKT_OK;
  vkt_meta *m = vkt_var_meta(v);
  if (!m)
    return vkt_fail(VKT_ERR_NOMEM, "out of host memory");
  m->requires_grad = on;
  return VKT_OK;
}

/* ---- nodes ---- */

void vkt_node_incref(vkt_node *n) {
  if (n)
    __atomic_add_fetch(&n->refcount, 1, __ATOMIC_RELAXED);
}

/* Freed nodes, kept for the next ones with their arrays (linked through extra): a training step makes and frees
 * the same few dozen, and a node (1.6 KB, past glibc's per-thread cache) took about 1,500 instructions to calloc.
 * Graphs are built on many threads, hence the lock. */
enum { MAX_SPARE_NODES = 64 };
static vkt_node *spare_nodes;
static int nspare_nodes;
static pthread_mutex_t spare_lock = PTHREAD_MUTEX_INITIALIZER;

/* A node of zeros but for next, which points to `bytes` zeros for its arrays. */
static vkt_node *node_alloc(size_t bytes) {
  pthread_mutex_lock(&spare_lock);
  vkt_node *n = spare_nodes;
  if (n)
    spare_nodes = n->extra, nspare_nodes--;
  pthread_mutex_unlock(&spare_lock);
  void *arrays = n ? n->next : NULL;
  size_t room = n ? n->arrays_bytes : 0;
  if (n)
    memset(n, 0, sizeof *n);
  else if (!(n = calloc(1, sizeof *n)))
    return NULL;
  if (room >= bytes) {
    memset(arrays, 0, bytes);
  } else {
    free(arrays);
    if (!(arrays = calloc(1, room = bytes))) {
      free(n);
      return NULL;
    }
  }
  n->next = arrays;
  n->arrays_bytes = room;
  return n;
}

static void node_free(vkt_node *n) {
  pthread_mutex_lock(&spare_lock);
  bool kept = nspare_nodes < MAX_SPARE_NODES;
  if (kept)
    n->extra = spare_nodes, spare_nodes = n, nspare_nodes++;
  pthread_mutex_unlock(&spare_lock);
  if (!kept) {
    free(n->next);
    free(n);
  }
}

static void saved_clear(vkt_saved *s) {
  vkt_var_release(&s->v);
  if (s->handle)
    s->hooks->drop(s->handle);
  s->handle = NULL;
  s->hooks = NULL;
}

void vkt_node_release_saved(vkt_node *n) {
  for (int i = 0; i < n->nsaved; i++)
    saved_clear(&n->saved[i]);
}

void vkt_node_decref(vkt_node *n) {
  if (!n || __atomic_sub_fetch(&n->refcount, 1, __ATOMIC_ACQ_REL) > 0)
    return;
  /* A long chain would recurse once per node: unlink iteratively through a worklist. */
  vkt_node **stack = NULL;
  int depth = 0, cap = 0;
  for (;;) {
    vkt_node_release_saved(n);
    free(n->trace);
    node_hooks_free(n->hooks);
    if (n->extra_free)
      n->extra_free(n->extra);
    if (n->leaf) {
      n->leaf->acc = NULL;
      vkt_meta_decref(n->leaf);
    }
    for (int k = 0; k < n->nout; k++)
      hooks_free(n->pre_hooks[k]);
    for (int i = 0; i < n->nin; i++) {
      vkt_node *m = n->next[i].node;
      if (m && __atomic_sub_fetch(&m->refcount, 1, __ATOMIC_ACQ_REL) == 0) {
        if (depth == cap) {
          vkt_node **grown = realloc(stack, (size_t)(cap = cap ? cap * 2 : 64) * sizeof *stack);
          if (!grown)
            abort(); /* out of host memory while freeing: nothing sane remains */
          stack = grown;
        }
        stack[depth++] = m;
      }
    }
    node_free(n);
    if (!depth)
      break;
    n = stack[--depth];
  }
  free(stack);
}

static void shape_info(vkt_shape_info *s, const vkt_tensor *t) {
  s->dtype = t->dtype;
  s->device = vkt_tensor_device(t);
  s->ndim = t->ndim;
  memcpy(s->shape, t->shape, sizeof s->shape);
}

/* One allocation holds a node's arrays. */
static vkt_node *node_new(const vkt_fn *fn, int nin, int nout) {
  size_t bytes = (size_t)nin * (sizeof(vkt_edge) + sizeof(vkt_shape_info)) +
                 (size_t)nout * (sizeof(vkt_shape_info) + sizeof(vkt_hook *) + sizeof(vkt_meta *));
  vkt_node *n = node_alloc(bytes ? bytes : 1);
  if (!n)
    return NULL;
  n->refcount = 1;
  n->fn = fn;
  n->nin = nin;
  n->nout = nout;
  n->in_info = (vkt_shape_info *)(n->next + nin);
  n->out_info = n->in_info + nin;
  n->pre_hooks = (vkt_hook **)(n->out_info + nout);
  n->retains = (vkt_meta **)(n->pre_hooks + nout);
  return n;
}

static const vkt_fn accumulate_fn = {"AccumulateGrad", NULL};

typedef struct named_fn named_fn;
struct named_fn {
  vkt_fn fn;
  named_fn *next;
};

const vkt_fn *vkt_fn_named(const char *name, void (*backward)(vkt_bw *b)) {
  static named_fn *kinds;
  static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
  pthread_mutex_lock(&lock);
  named_fn *k = kinds;
  while (k && (k->fn.backward != backward || strcmp(k->fn.name, name)))
    k = k->next;
  char *copy = k ? NULL : strdup(name);
  if (copy && (k = malloc(sizeof *k)))
    *k = (named_fn){{copy, backward}, kinds}, kinds = k;
  else if (copy)
    free(copy);
  pthread_mutex_unlock(&lock);
  return k ? &k->fn : NULL;
}

void vkt_ag_rename(vkt_var *out, const char *name) {
  vkt_node *n = out->ag ? out->ag->grad_fn.node : NULL;
  const vkt_fn *fn = n ? vkt_fn_named(name, n->fn->backward) : NULL;
  if (fn)
    n->fn = fn;
}

void vkt_view_track(vkt_var *out, const vkt_var *x) {
  vkt_meta *m = out->ag, *xm = x->ag;
  if (!m || !xm || m->base)
    return;
  m->base = xm->base ? xm->base : xm;
  __atomic_add_fetch(&m->base->refcount, 1, __ATOMIC_RELAXED);
  m->base_t = xm->base ? xm->base_t : x->t; /* borrowed: the view holds the same storage */
  if (!xm->base && xm->regeometried) /* x's geometry now, which its older views see too (.data= may change it) */
    xm->geometry = x->t;
  m->base_version = out->t.storage->version;
  if (!m->no_grad_view && !m->multi_view) { /* a plain view of a special one is special too (PyTorch's creation_meta) */
    m->no_grad_view = xm->no_grad_view;
    m->inference_view = xm->inference_view;
    m->multi_view = xm->multi_view;
  }
}

/* x is the caller's own var (a Python tensor's, or a temporary it releases): its meta, made here where it has none,
 * is the one a later in-place write to x gives its history, which the view then takes. A backward's own views
 * (in the engine, without create_graph) stay plain: a gradient with a meta would be copied into .grad. Integer
 * views never take a history, but know their base too (_base, _is_view()). */
void vkt_view_unrecorded(vkt_var *out, const vkt_var *x, bool multi) {
  if ((!vkt_grad_enabled() && vkt_backward_running()) || !vkt_var_meta((vkt_var *)x) || !vkt_var_meta(out))
    return;
  out->ag->is_view = true;
  out->ag->multi_view = multi;
  out->ag->no_grad_view = !vkt_grad_enabled();
  out->ag->inference_view = vkt_inference_mode();
  vkt_view_track(out, x);
}

#define MULTI_VIEWS                                                                                                    \
  "This view is the output of a function that returns multiple views. Such functions do not allow the output views " \
  "to be modified inplace. You should replace the inplace operation by an out-of-place one."
#define NO_GRAD_VIEWS(block)                                                                                           \
  "Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify your code by moving both " \
  "the view and the inplace either both inside the " block " block (if you don't want the inplace to be tracked) or " \
  "both outside (if you want the inplace to be tracked)."

/* PyTorch's refusal (handle_view_on_rebase) of a view made in no_grad mode or by an op that makes several, when it is
 * written (indirect false) or its history is read after a write to its base (true), in PyTorch's words: a node is
 * named without its "Backward0". */
static vkt_status view_rebase_fail(const vkt_meta *m, bool indirect) {
  const char *what = indirect ? "its base or another view of its base has been" : "is being";
  const vkt_node *n = m->grad_fn.node;
  const char *name = n ? n->fn->name : "";
  int len = (int)strlen(name) - (strstr(name, "Backward") ? (int)strlen("Backward0") : 0);
  char head[160] = "A view was created in";
  if (n && m->no_grad_view)
    snprintf(head, sizeof head, "Output %d of %.*s is a view of a view which was created in", m->grad_fn.nr, len,
             name);
  if (m->inference_view)
    return vkt_fail(VKT_ERR_RUNTIME, "%s inference mode and %s modified inplace in normal mode. %s", head, what,
                    NO_GRAD_VIEWS("inference_mode"));
  if (m->no_grad_view || !n)
    return vkt_fail(VKT_ERR_RUNTIME, "%s no_grad mode and %s modified inplace with grad mode enabled. %s", head, what,
                    m->no_grad_view ? NO_GRAD_VIEWS("no_grad") : MULTI_VIEWS);
  return vkt_fail(VKT_ERR_RUNTIME, "Output %d of %.*s is a view and %s modified inplace. %s", m->grad_fn.nr, len, name,
                  what, MULTI_VIEWS);
}

/* A refusal met where no status can return (recording an op), for vkt_ag_error: the first since the last call. */
static _Thread_local char pending_error[1024];

static void keep_pending(void) {
  if (!pending_error[0])
    snprintf(pending_error, sizeof pending_error, "%s", vkt_last_error());
}

vkt_status vkt_ag_error(void) {
  if (!pending_error[0])
    return VKT_OK;
  vkt_status st = vkt_fail(VKT_ERR_RUNTIME, "%s", pending_error);
  pending_error[0] = 0;
  return st;
}

vkt_status vkt_view_current(const vkt_var *v) {
  vkt_meta *m = v->ag;
  if (!m || !m->base || m->base_version == v->t.storage->version)
    return VKT_OK;
  if (!m->no_grad_view && !m->multi_view) {
    vkt_view_refresh(m, &v->t);
    return VKT_OK;
  }
  /* PyTorch never gives such a view the history of a write since: it refuses to read one, once there is one */
  if (m->grad_fn.node || m->base->requires_grad || m->base->grad_fn.node)
    return view_rebase_fail(m, true);
  return VKT_OK;
}

vkt_edge vkt_grad_edge(const vkt_var *v) {
  if (vkt_view_current(v)) {
    keep_pending();
    return (vkt_edge){0};
  }
  vkt_meta *m = v->ag;
  if (!m || (!m->requires_grad && !m->grad_fn.node))
    return (vkt_edge){0};
  if (m->grad_fn.node) {
    vkt_node_incref(m->grad_fn.node);
    return m->grad_fn;
  }
  if (m->acc) {
    vkt_node_incref(m->acc);
    return (vkt_edge){m->acc, 0};
  }
  vkt_node *n = node_new(&accumulate_fn, 0, 1);
  if (!n)
    return (vkt_edge){0};
  shape_info(&n->out_info[0], &v->t);
  /* the leaf's layout, which its .grad follows (engine.c): dense (dims 1) and its strides */
  n->dims = vkt_tensor_is_dense(&v->t);
  memcpy(n->iv, v->t.strides, sizeof *v->t.strides * (size_t)v->t.ndim);
  n->leaf = m; /* strong: the leaf lives while a graph can reach it */
  __atomic_add_fetch(&m->refcount, 1, __ATOMIC_RELAXED);
  m->acc = n; /* weak: the edges that point at it own it */
  return (vkt_edge){n, 0};
}

vkt_node *vkt_node_begin(const vkt_fn *fn, int nin, const vkt_var *const *in, int nout) {
  if (!vkt_grad_enabled())
    return NULL;
  bool any = false;
  for (int i = 0; i < nin; i++)
    any |= vkt_requires_grad(in[i]);
  if (!any)
    return NULL;
  for (int i = 0; i < nin; i++) /* before this node's seq: the engine runs a node after every later one */
    if (in[i] && vkt_view_current(in[i])) {
      keep_pending(); /* the op raises it (vkt_ag_error), as PyTorch's does before it runs */
      return NULL;
    }
  vkt_node *n = node_new(fn, nin, nout);
  if (!n)
    return NULL; /* out of host memory: the result simply carries no history */
  n->seq = __atomic_fetch_add(&next_seq, 1, __ATOMIC_RELAXED);
  if (vkt_anomaly(NULL) && vkt_anomaly_stack)
    n->trace = vkt_anomaly_stack();
  for (int i = 0; i < nin; i++) {
    if (!in[i])
      continue;
    shape_info(&n->in_info[i], &in[i]->t);
    n->next[i] = vkt_grad_edge(in[i]);
  }
  return n;
}

/* m's grad_fn becomes e, whose reference m takes; a retained .grad moves with it, as PyTorch's follows the tensor
 * through an in-place op to its newest history. */
static void set_grad_fn(vkt_meta *m, vkt_edge e) {
  vkt_node *old = m->grad_fn.node;
  if (m->retains_grad && old && old->retains[m->grad_fn.nr] == m)
    old->retains[m->grad_fn.nr] = NULL;
  if (m->retains_grad)
    e.node->retains[e.nr] = m;
  vkt_node_decref(old);
  m->grad_fn = e;
  m->requires_grad = true;
}

void vkt_node_output(vkt_node *n, int k, vkt_var *out) {
  if (!n)
    return;
  vkt_meta *m = vkt_var_meta(out);
  if (!m)
    return;
  shape_info(&n->out_info[k], &out->t);
  vkt_node_incref(n);
  set_grad_fn(m, (vkt_edge){n, k});
}

static _Thread_local const vkt_saved_hooks *saved_hooks;

void vkt_set_saved_hooks(const vkt_saved_hooks *h) { saved_hooks = h; }

void vkt_node_save(vkt_node *n, int k, const vkt_var *v, bool is_output, int output_nr) {
  if (!n)
    return;
  if (v->t.storage->inference && !vkt_inference_mode()) { /* no version counter to check it by: the op raises it */
    vkt_fail(VKT_ERR_RUNTIME, "Inference tensors cannot be saved for backward. Please do not use Tensors created in "
             "inference mode in computation tracked by autograd. To work around this, you can make a clone to get a "
             "normal tensor and use it in autograd, or use `torch.no_grad()` instead of `torch.inference_mode()`.");
    keep_pending();
    return;
  }
  vkt_saved *s = &n->saved[k];
  saved_clear(s);
  if (k >= n->nsaved)
    n->nsaved = k + 1;
  if (is_output)
    vkt_detach(&s->v, v); /* its meta would point back at n */
  else
    vkt_var_share(&s->v, v);
  s->version = v->t.storage->version;
  s->is_output = is_output;
  s->output_nr = output_nr;
  if (saved_hooks) { /* the hooks take the tensor; an input's autograd state stays, for create_graph */
    s->hooks = saved_hooks;
    s->handle = saved_hooks->pack(&s->v);
    vkt_tensor_release(&s->v.t);
  }
}

void vkt_node_save_needed(vkt_node *n, int nin, const vkt_var *const *in, const unsigned char *need,
                          const vkt_var *out) {
  unsigned mask = 0;
  for (int i = 0; i < nin; i++)
    mask |= n->next[i].node ? need[i] : 0;
  for (int k = 0; k < nin; k++)
    if (in[k] && (mask >> k & 1))
      vkt_node_save(n, k, in[k], false, 0);
  if (mask >> nin & 1)
    vkt_node_save(n, nin, out, true, 0);
}

/* ---- hooks ---- */

static int64_t next_hook_id = 1;

int64_t vkt_add_hook(vkt_var *v, vkt_hook *h) {
  h->id = __atomic_fetch_add(&next_hook_id, 1, __ATOMIC_RELAXED);
  vkt_view_current(v);
  vkt_meta *m = vkt_var_meta(v);
  vkt_hook **list = m->grad_fn.node ? &m->grad_fn.node->pre_hooks[m->grad_fn.nr] : &m->hooks;
  while (*list)
    list = &(*list)->next;
  *list = h;
  return h->id;
}

int64_t vkt_add_post_hook(vkt_var *v, vkt_hook *h) {
  h->id = __atomic_fetch_add(&next_hook_id, 1, __ATOMIC_RELAXED);
  vkt_hook **list = &vkt_var_meta(v)->post_hooks;
  while (*list)
    list = &(*list)->next;
  *list = h;
  return h->id;
}

int64_t vkt_node_add_hook(vkt_node *n, vkt_node_hook *h) {
  h->id = __atomic_fetch_add(&next_hook_id, 1, __ATOMIC_RELAXED);
  vkt_node_hook **list = &n->hooks;
  while (*list)
    list = &(*list)->next;
  *list = h;
  return h->id;
}

bool vkt_node_remove_hook(vkt_node *n, int64_t id) {
  for (vkt_node_hook **list = &n->hooks; *list; list = &(*list)->next)
    if ((*list)->id == id) {
      vkt_node_hook *h = *list;
      *list = h->next;
      h->next = NULL;
      node_hooks_free(h);
      return true;
    }
  return false;
}

static bool unlink_hook(vkt_hook **list, int64_t id) {
  for (; *list; list = &(*list)->next)
    if ((*list)->id == id) {
      vkt_hook *h = *list;
      *list = h->next;
      h->next = NULL;
      hooks_free(h);
      return true;
    }
  return false;
}

bool vkt_remove_hook(vkt_meta *m, vkt_node *n, int nr, int64_t id) {
  return unlink_hook(n ? &n->pre_hooks[nr] : &m->hooks, id) || unlink_hook(&m->post_hooks, id);
}

void vkt_retain_grad(vkt_var *v) {
  vkt_meta *m = v->ag;
  if (!m || !m->grad_fn.node)
    return; /* leaves keep their .grad anyway */
  m->retains_grad = true;
  m->grad_fn.node->retains[m->grad_fn.nr] = m;
}

/* ---- in-place writes ---- */

vkt_status vkt_inplace_check(const vkt_var *dst, bool records) {
  const vkt_meta *m = dst->ag;
  if (dst->t.storage->inference && !vkt_inference_mode()) /* recorded or not: its version counter is not kept */
    return vkt_fail(VKT_ERR_RUNTIME, "Inplace update to inference tensor outside InferenceMode is not allowed.You can "
                    "make a clone to get a normal tensor before doing inplace update.See "
                    "https://github.com/pytorch/rfcs/pull/17 for more details.");
  if (!records || !m)
    return VKT_OK;
  if (m->no_grad_view || m->multi_view)
    return view_rebase_fail(m, false);
  /* PyTorch's rule: a view that requires grad, of a base that is a leaf (through any chain of views), whether the
   * base requires grad or the view was made a leaf that does (base[:, ::2].requires_grad_()) */
  if (m->base && !m->base->grad_fn.node && vkt_requires_grad(dst))
    return vkt_fail(VKT_ERR_RUNTIME, "a view of a leaf Variable that requires grad is being used in an in-place "
                    "operation.");
  if (m->requires_grad && !m->grad_fn.node)
    return vkt_fail(VKT_ERR_RUNTIME, "a leaf Variable that requires grad is being used in an in-place operation.");
  return VKT_OK;
}

vkt_status vkt_inplace_keep_saved(const vkt_var *dst, vkt_var *result) {
  vkt_node *n = result->ag ? result->ag->grad_fn.node : NULL;
  for (int k = 0; n && k < n->nsaved; k++) {
    vkt_saved *s = &n->saved[k];
    if (s->is_output || s->v.t.storage != dst->t.storage || !s->v.t.storage)
      continue;
    vkt_var copy = {0};
    vkt_status st = vkt_clone(&copy.t, &s->v.t);
    vkt_edge e = st ? (vkt_edge){0} : vkt_grad_edge(&s->v); /* its history, as it was */
    if (e.node && !vkt_var_meta(&copy)) {
      vkt_node_decref(e.node);
      st = vkt_fail(VKT_ERR_NOMEM, "out of host memory");
    } else if (e.node) {
      copy.ag->grad_fn = e;
      copy.ag->requires_grad = true;
    }
    if (st) {
      vkt_var_release(&copy);
      return st;
    }
    vkt_node_save(n, k, &copy, false, 0);
    vkt_var_release(&copy);
  }
  return VKT_OK;
}

void vkt_inplace_rebase(vkt_var *dst, vkt_var *result) {
  if (!result->ag || !result->ag->grad_fn.node)
    return;
  vkt_meta *m = vkt_var_meta(dst);
  if (!m)
    return;
  vkt_edge e = result->ag->grad_fn;
  /* dst now holds the node's output: a saved output (relu_'s) is dst itself, at the version the write gave it,
   * so result's memory goes (inplace=True's point) and a later write to dst is caught, as in PyTorch */
  for (int k = 0; k < e.node->nsaved; k++) {
    vkt_saved *s = &e.node->saved[k];
    if (s->is_output && s->v.t.storage == result->t.storage && s->v.t.dtype == dst->t.dtype) {
      vkt_tensor_release(&s->v.t);
      vkt_tensor_share(&s->v.t, &dst->t);
      s->version = dst->t.storage->version;
    }
  }
  if (m->base) { /* the base takes the write; this view's grad_fn is then made again from it */
    vkt_view_write(m, &dst->t, result);
    return;
  }
  vkt_node_incref(e.node);
  set_grad_fn(m, e);
}

void vkt_inplace_view(vkt_var *dst, vkt_var *result, bool bump) {
  vkt_tensor_release(&dst->t);
  dst->t = result->t;
  result->t = (vkt_tensor){0};
  dst->t.storage->version += bump;
  vkt_meta *m = dst->ag;
  if (m) { /* its views' history reads it through this geometry from now on, and its saved copies' errors name it */
    m->regeometried = true;
    m->geometry = dst->t;
  }
  vkt_edge e = result->ag ? result->ag->grad_fn : (vkt_edge){0};
  if (e.node && (m = vkt_var_meta(dst))) {
    vkt_node_incref(e.node);
    set_grad_fn(m, e);
    m->base_version = dst->t.storage->version; /* a view's grad_fn is this node now, not its base's history */
  }
  vkt_var_release(result);
}
