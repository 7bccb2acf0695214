/* engine.c: the backward pass. Collect the nodes the roots reach, order them newest first (a node's
 * inputs are always older, so that is a topological order), then walk them once: each node sums the
 * gradients that reached its outputs, runs its backward, and sends each input's gradient, reduced to the
 * input's shape and dtype, to the node that made that input. Leaves' AccumulateGrad nodes add into .grad. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ops/reduce.h"
#include "formula.h"

static _Thread_local bool plain_run; /* vkt_backward_plain's */
static _Thread_local int running;    /* vkt_backward_running's: backward runs nest (checkpoint) */

bool vkt_backward_plain(void) { return plain_run; }
bool vkt_backward_running(void) { return running > 0; }

static int newest_first(const void *a, const void *b) {
  uint64_t x = (*(vkt_node *const *)a)->seq, y = (*(vkt_node *const *)b)->seq;
  return x < y ? 1 : x > y ? -1 : 0;
}

/* One backward run's nodes, newest first, and a table from a node's address to its place there. The table is the
 * run's own, not a field of the node: runs on several threads, or one inside another's node (a checkpoint's
 * recomputation), reach the same nodes (a shared parameter's AccumulateGrad), and a run that stored its indices
 * in the nodes had another's overwrite them (wrong gradients with two threads and a Python backward). */
typedef struct {
  vkt_node **nodes;
  int count;
  vkt_node **keys; /* open addressing: cap a power of 2, at most half full */
  int *at;
  size_t cap;
} run;

static size_t probe(vkt_node *const *keys, size_t cap, const vkt_node *n) {
  size_t i = (size_t)(((uintptr_t)n >> 4) * 0x9E3779B97F4A7C15u) & (cap - 1);
  while (keys[i] && keys[i] != n)
    i = (i + 1) & (cap - 1);
  return i;
}

/* Node n's place in the run's order. */
static int index_of(const run *r, const vkt_node *n) { return r->at[probe(r->keys, r->cap, n)]; }

/* Adds n to the run's table: 1, or 0 where it is there already, -1 out of host memory. */
static int run_add(run *r, vkt_node *n) {
  if (2 * (size_t)(r->count + 1) > r->cap) {
    size_t cap = r->cap ? 2 * r->cap : 64;
    vkt_node **keys = calloc(cap, sizeof *keys);
    if (!keys)
      return -1;
    for (size_t i = 0; i < r->cap; i++)
      if (r->keys[i])
        keys[probe(keys, cap, r->keys[i])] = r->keys[i];
    free(r->keys);
    r->keys = keys, r->cap = cap;
  }
  size_t i = probe(r->keys, r->cap, n);
  if (r->keys[i])
    return 0;
  r->keys[i] = n;
  r->count++;
  return 1;
}

/* The backward running on this thread (the innermost, where runs nest), for vkt_backward_task_id and
 * vkt_backward_will_run. */
typedef struct {
  int64_t id;
  const run *r;
  const bool *needed; /* [r->count] */
  const vkt_backward_opts *o;
  const vkt_edge *targets; /* [o->ninputs] */
} task;

static _Thread_local const task *current;
static int64_t next_task_id; /* atomic: backward runs on many threads */

int64_t vkt_backward_task_id(void) { return current ? current->id : -1; }

static bool is_target(const task *t, const vkt_node *n) {
  for (int j = 0; j < t->o->ninputs; j++)
    if (t->targets[j].node == n)
      return true;
  return false;
}

vkt_status vkt_backward_will_run(const vkt_node *n, bool *out) {
  const task *t = current;
  if (!t) /* PyTorch's words */
    return vkt_fail(VKT_ERR_RUNTIME, "_get_should_execute_nodes should only be called during the backward pass");
  size_t i = t->r->cap ? probe(t->r->keys, t->r->cap, n) : 0;
  *out = t->r->cap && t->r->keys[i];
  if (!*out || !t->o->ninputs) /* backward() without inputs= runs every node it reaches */
    return VKT_OK;
  bool target = is_target(t, n);
  *out = t->needed[t->r->at[i]] || target;
  if (*out && n->leaf && target && !t->o->accumulate)
    return vkt_fail(VKT_ERR_RUNTIME, "A leaf node was passed to _will_engine_execute_node but we are currently "
                    "running autograd.grad(). This is currently not supported.");
  return VKT_OK;
}

static void run_free(run *r) {
  free(r->nodes);
  free(r->keys);
  free(r->at);
}

/* The nodes reachable from the roots, newest first, each with its place in that order. */
static vkt_status collect(int n, const vkt_edge *roots, run *r) {
  int top = 0, scap = 64;
  vkt_node **stack = malloc(scap * sizeof *stack);
  bool ok = stack;
  for (int i = 0; ok && i < n; i++) {
    int added = roots[i].node ? run_add(r, roots[i].node) : 0;
    ok = added >= 0;
    if (added > 0)
      stack[top++] = roots[i].node;
    while (ok && top) {
      vkt_node *x = stack[--top];
      for (int k = 0; ok && k < x->nin; k++) {
        vkt_node *m = x->next[k].node;
        if (!m || !(added = run_add(r, m)))
          continue;
        if (added < 0 || (top == scap && !(stack = realloc(stack, (scap *= 2) * sizeof *stack))))
          ok = false;
        else
          stack[top++] = m;
      }
    }
  }
  free(stack);
  r->nodes = ok ? malloc((r->count ? r->count : 1) * sizeof *r->nodes) : NULL;
  r->at = r->nodes ? malloc((r->cap ? r->cap : 1) * sizeof *r->at) : NULL;
  if (!r->at)
    return vkt_fail(VKT_ERR_NOMEM, "out of host memory");
  int len = 0;
  for (size_t i = 0; i < r->cap; i++)
    if (r->keys[i])
      r->nodes[len++] = r->keys[i];
  qsort(r->nodes, len, sizeof *r->nodes, newest_first);
  for (int i = 0; i < len; i++)
    r->at[probe(r->keys, r->cap, r->nodes[i])] = i;
  return VKT_OK;
}

/* buf += g (g is consumed). */
static vkt_status add_into(vkt_var *buf, vkt_var *g) {
  if (!vkt_var_defined(buf)) {
    *buf = *g;
    *g = (vkt_var){0};
    return VKT_OK;
  }
  vkt_var sum = {0};
  vkt_status st = vkt_ag_binary(VKT_OP_ADD, buf, (vkt_scalar){0}, g, (vkt_scalar){0}, (vkt_scalar){false, 0, 1}, &sum);
  vkt_var_release(g);
  if (st)
    return st;
  vkt_var_release(buf);
  *buf = sum;
  return VKT_OK;
}

static vkt_status zeros(const vkt_shape_info *s, vkt_var *out) {
  *out = (vkt_var){0};
  vkt_status st = vkt_tensor_empty(&out->t, s->device, s->dtype, s->ndim, s->shape);
  return st ? st : vkt_fill_(&out->t, (vkt_scalar){false, 0, 0});
}

static bool same_shape(int n, const int64_t *a, int m, const int64_t *b) {
  return n == m && !memcmp(a, b, (size_t)n * sizeof *a);
}

/* A backward's gradient for input i brought to the input's shape (summing broadcast dims) and dtype. */
static vkt_status fit(vkt_node *n, int i, vkt_var *g) {
  const vkt_shape_info *want = &n->in_info[i];
  vkt_var fixed = {0};
  vkt_status st = VKT_OK;
  if (!same_shape(g->t.ndim, g->t.shape, want->ndim, want->shape)) {
    bool ok = g->t.ndim >= want->ndim;
    for (int d = 0; ok && d < want->ndim; d++) {
      int64_t have = g->t.shape[g->t.ndim - want->ndim + d];
      ok = want->shape[d] == have || want->shape[d] == 1;
    }
    if (!ok) {
      char got[96], exp[96];
      vkt_shape_str(g->t.ndim, g->t.shape, got, sizeof got);
      vkt_shape_str(want->ndim, want->shape, exp, sizeof exp);
      return vkt_fail(VKT_ERR_RUNTIME,
                      "Function %s returned an invalid gradient at index %d - got %s but expected shape compatible "
                      "with %s",
                      n->fn->name, i, got, exp);
    }
    if ((st = vkt_ag_sum_to(g, want->ndim, want->shape, &fixed)))
      return st;
    vkt_var_release(g);
    *g = fixed;
  }
  if (vkt_tensor_device(&g->t) != want->device && g->t.ndim != 0)
    return vkt_fail(VKT_ERR_RUNTIME, "Function %s returned an invalid gradient at index %d - wrong device", n->fn->name,
                    i);
  /* a 0-d cpu input of an op on a Vulkan device gets its 0-d gradient back on the cpu, as PyTorch's engine moves it */
  if (g->t.dtype != want->dtype || vkt_tensor_device(&g->t) != want->device) {
    if ((st = vkt_ag_cast(g, want->device, want->dtype, VKT_PRESERVE_FORMAT, false, &fixed)))
      return st;
    vkt_var_release(g);
    *g = fixed;
  }
  return VKT_OK;
}

static vkt_status run_hooks(vkt_hook *h, vkt_var *g) {
  for (; h; h = h->next) {
    vkt_status st = h->fn(h->ctx, g);
    if (st)
      return st;
  }
  return VKT_OK;
}

/* A non-leaf's retained .grad: a copy of what reached it, summed over backward calls. */
static vkt_status retain(vkt_meta *m, const vkt_var *g, bool create_graph) {
  vkt_var copy = {0};
  vkt_status st = create_graph ? (vkt_var_share(&copy, g), VKT_OK) : vkt_clone(&copy.t, &g->t);
  return st ? st : add_into(&m->grad, &copy);
}

/* PyTorch's layout contract for .grad: a dense leaf's gradient has the leaf's strides (but along dims of one
 * element), any other leaf's is contiguous. acc is the leaf's AccumulateGrad node, which keeps its layout. */
static bool obeys_layout(const vkt_node *acc, const vkt_tensor *g) {
  if (!acc->dims)
    return vkt_tensor_is_contiguous(g);
  for (int d = 0; d < g->ndim; d++)
    if (g->shape[d] > 1 && g->strides[d] != acc->iv[d])
      return false;
  return true;
}

/* A copy of g laid out as the contract says. */
static vkt_status clone_for_leaf(const vkt_node *acc, const vkt_tensor *g, vkt_tensor *out) {
  if (!acc->dims)
    return vkt_clone(out, g);
  vkt_tensor like = *g;
  memcpy(like.strides, acc->iv, sizeof *like.strides * (size_t)like.ndim);
  vkt_status st = vkt_tensor_empty_like(out, &like, vkt_tensor_device(g), g->dtype, VKT_PRESERVE_FORMAT);
  if (!st && (st = vkt_copy_(out, g)))
    vkt_tensor_release(out);
  return st;
}

/* .grad += g, for AccumulateGrad node acc. A gradient nobody else holds, laid out as the leaf is, is kept as it
 * is; anything else is copied first, so a later in-place update of .grad touches nothing else. */
static vkt_status add_to_grad(const vkt_node *acc, vkt_var *g, bool create_graph) {
  vkt_meta *m = acc->leaf;
  if (!vkt_var_defined(&m->grad)) {
    if (create_graph || (g->t.storage->refcount == 1 && obeys_layout(acc, &g->t) && !g->ag)) {
      m->grad = *g;
      *g = (vkt_var){0};
      return VKT_OK;
    }
    return clone_for_leaf(acc, &g->t, &m->grad.t);
  }
  if (create_graph || vkt_requires_grad(&m->grad))
    return add_into(&m->grad, g);
  return vkt_binary(VKT_OP_ADD, (vkt_operand){.t = &m->grad.t}, (vkt_operand){.t = &g->t}, (vkt_scalar){false, 0, 1},
                    &m->grad.t, NULL);
}

static vkt_status run_node_hooks(vkt_node *x, bool post, vkt_var *ins, vkt_var *grads);

/* The tensor hooks of node x's outputs (a leaf's own, for AccumulateGrad) on the gradients that reached them. */
static vkt_status tensor_hooks(vkt_node *x, vkt_var *grads) {
  if (x->leaf)
    return run_hooks(x->leaf->hooks, &grads[0]);
  vkt_status st = VKT_OK;
  for (int k = 0; !st && k < x->nout; k++)
    if (vkt_var_defined(&grads[k]))
      st = run_hooks(x->pre_hooks[k], &grads[k]);
  return st;
}

/* AccumulateGrad (node acc), in PyTorch's order: the leaf's tensor hooks, the node's pre hooks, .grad += g, the
 * leaf's post-accumulate hooks, the node's post hooks (given g: kept aside for them, where there are any). */
static vkt_status accumulate(vkt_node *acc, vkt_var *g, bool create_graph) {
  vkt_status st = run_hooks(acc->leaf->hooks, g);
  if (!st)
    st = run_node_hooks(acc, false, NULL, g);
  if (st || !vkt_var_defined(g))
    return st;
  bool post = false;
  for (vkt_node_hook *h = acc->hooks; h; h = h->next)
    post |= h->post;
  vkt_var seen = {0};
  if (post)
    vkt_var_share(&seen, g);
  if (!(st = add_to_grad(acc, g, create_graph)) && !(st = run_hooks(acc->leaf->post_hooks, &acc->leaf->grad)))
    st = run_node_hooks(acc, true, NULL, &seen);
  vkt_var_release(&seen);
  return st;
}

static _Thread_local char *anomaly_report; /* vkt_anomaly_report's */

char *vkt_anomaly_report(void) {
  char *r = anomaly_report;
  anomaly_report = NULL;
  return r;
}

/* Anomaly mode: where node x failed, what it was made by (PyTorch's warning). */
static void report_failure(const vkt_node *x) {
  const char *head = "Error detected in %s. Traceback of forward call that caused the error:\n%s";
  const char *trace = x->trace ? x->trace : "";
  size_t size = strlen(head) + strlen(x->fn->name) + strlen(trace);
  free(anomaly_report);
  if ((anomaly_report = malloc(size)))
    snprintf(anomaly_report, size, head, x->fn->name, trace);
}

/* Anomaly mode's NaN check of input gradient i of node x (a read to the host, as in PyTorch). */
static vkt_status check_nan(const vkt_node *x, int i, const vkt_var *g) {
  const vkt_scalar none = {false, 0, 0};
  vkt_tensor nan = {0};
  bool found = false;
  vkt_status st = vkt_unary(VKT_OP_ISNAN, &g->t, none, none, NULL, &nan);
  if (!st)
    st = vkt_any_read(&nan, &found);
  vkt_tensor_release(&nan);
  if (!st && found)
    st = vkt_fail(VKT_ERR_RUNTIME, "Function '%s' returned nan values in its %dth output.", x->fn->name, i);
  return st;
}

/* Node x's own pre hooks (post: its post hooks) on its output gradients (and input gradients ins). */
static vkt_status run_node_hooks(vkt_node *x, bool post, vkt_var *ins, vkt_var *grads) {
  for (vkt_node_hook *h = x->hooks; h; h = h->next)
    if (h->post == post) {
      vkt_status st = h->fn(h->ctx, post ? x->nin : 0, ins, x->nout, grads);
      if (st)
        return st;
    }
  return VKT_OK;
}

/* Runs node x on its summed output gradients; sends the input gradients on into bufs (of run r's nodes). */
static vkt_status run_node(const run *r, vkt_node *x, vkt_var *grads, vkt_var **bufs, bool create_graph) {
  for (int k = 0; k < x->nout; k++) {
    vkt_status st = run_hooks(x->pre_hooks[k], &grads[k]);
    if (!st && x->retains[k] && vkt_var_defined(&grads[k]))
      st = retain(x->retains[k], &grads[k], create_graph);
    if (st)
      return st;
  }
  vkt_status st = run_node_hooks(x, false, NULL, grads);
  if (st)
    return st;
  vkt_var out[x->nin > 0 ? x->nin : 1];
  memset(out, 0, sizeof out);
  vkt_bw b = {.n = x, .grads = grads, .out = out};
  x->fn->backward(&b);
  vkt_bw_end(&b);
  st = b.st;
  bool check = false, anomaly = vkt_anomaly(&check);
  for (int i = 0; i < x->nin; i++)
    if (!st && x->next[i].node && vkt_var_defined(&out[i]) && !(st = fit(x, i, &out[i])) && anomaly && check &&
        vkt_dtypes[out[i].t.dtype].is_float)
      st = check_nan(x, i, &out[i]);
  if (!st)
    st = run_node_hooks(x, true, out, grads);
  for (int i = 0; i < x->nin; i++) {
    if (!st && x->next[i].node && vkt_var_defined(&out[i]))
      st = add_into(&bufs[index_of(r, x->next[i].node)][x->next[i].nr], &out[i]);
    vkt_var_release(&out[i]);
  }
  return st;
}

static vkt_status check_root(int k, const vkt_var *root, const vkt_var *grad, vkt_var *seed) {
  if (!vkt_requires_grad(root))
    return vkt_fail(VKT_ERR_RUNTIME, "element %d of tensors does not require grad and does not have a grad_fn", k);
  if (!vkt_var_defined(grad)) {
    if (vkt_tensor_numel(&root->t) != 1)
      return vkt_fail(VKT_ERR_RUNTIME, "grad can be implicitly created only for scalar outputs");
    vkt_status st = vkt_tensor_empty(&seed->t, vkt_tensor_device(&root->t), root->t.dtype, root->t.ndim, root->t.shape);
    return st ? st : vkt_fill_(&seed->t, (vkt_scalar){false, 0, 1});
  }
  if (!same_shape(grad->t.ndim, grad->t.shape, root->t.ndim, root->t.shape)) {
    char g[96], r[96];
    vkt_shape_str(grad->t.ndim, grad->t.shape, g, sizeof g);
    vkt_shape_str(root->t.ndim, root->t.shape, r, sizeof r);
    return vkt_fail(VKT_ERR_RUNTIME,
                    "Mismatch in shape: grad_output[%d] has a shape of vkt.Size(%s) and output[%d] has a shape of "
                    "vkt.Size(%s).",
                    k, g, k, r);
  }
  if (vkt_tensor_device(&grad->t) != vkt_tensor_device(&root->t))
    return vkt_fail(VKT_ERR_RUNTIME, "invalid gradient at index %d - expected device %s but got %s", k,
                    vkt_tensor_device(&root->t) == VKT_CPU ? "cpu" : "vulkan",
                    vkt_tensor_device(&grad->t) == VKT_CPU ? "cpu" : "vulkan");
  if (!vkt_dtypes[grad->t.dtype].is_float)
    return vkt_fail(VKT_ERR_RUNTIME, "invalid gradient at index %d - expected a floating point dtype but got %s", k,
                    vkt_dtypes[grad->t.dtype].name);
  vkt_var_share(seed, grad);
  return VKT_OK;
}

vkt_status vkt_backward(int n, const vkt_var *roots, const vkt_var *grads, const vkt_backward_opts *o) {
  bool was_enabled = vkt_grad_enabled();
  int nt = o->ninputs;
  run r = {0};
  vkt_edge edges[n > 0 ? n : 1], *targets = nt ? calloc(nt, sizeof *targets) : NULL;
  vkt_var seeds[n > 0 ? n : 1];
  vkt_var **bufs = NULL;
  bool *needed = NULL;
  memset(edges, 0, sizeof edges);
  memset(seeds, 0, sizeof seeds);
  vkt_status st = nt && !targets ? vkt_fail(VKT_ERR_NOMEM, "out of host memory") : VKT_OK;
  for (int k = 0; !st && k < n; k++) {
    if ((st = check_root(k, &roots[k], &grads[k], &seeds[k])) || (st = vkt_view_current(&roots[k])))
      break;
    /* a view made in no_grad mode requires grad (its base does) but has no edge to send one along: PyTorch's error */
    if (!(edges[k] = vkt_grad_edge(&roots[k])).node)
      st = vkt_fail(VKT_ERR_RUNTIME, "element %d of tensors does not require grad and does not have a grad_fn", k);
  }
  for (int j = 0; !st && j < nt; j++) {
    if (!vkt_requires_grad(&o->inputs[j]))
      st = vkt_fail(VKT_ERR_RUNTIME, "One of the differentiated Tensors does not require grad");
    else if (!(st = vkt_view_current(&o->inputs[j])))
      targets[j] = vkt_grad_edge(&o->inputs[j]);
  }
  if (!st)
    st = collect(n, edges, &r);
  int count = r.nodes ? r.count : 0;
  vkt_node **nodes = r.nodes;
  bool outer_plain = plain_run;
  plain_run = o->accumulate && !nt;
  running++;
  if (!st) {
    bufs = calloc(count ? count : 1, sizeof *bufs);
    needed = calloc(count ? count : 1, sizeof *needed);
    if (!bufs || !needed)
      st = vkt_fail(VKT_ERR_NOMEM, "out of host memory");
  }
  for (int i = 0; !st && i < count; i++)
    if (!(bufs[i] = calloc(nodes[i]->nout, sizeof(vkt_var))))
      st = vkt_fail(VKT_ERR_NOMEM, "out of host memory");
  /* Which nodes run: all of them, or (given inputs) those on a path to an input, oldest first. */
  for (int i = count - 1; !st && i >= 0; i--) {
    vkt_node *x = nodes[i];
    needed[i] = !nt;
    for (int k = 0; !needed[i] && k < x->nin; k++) {
      vkt_node *m = x->next[k].node;
      for (int j = 0; m && j < nt && !needed[i]; j++)
        needed[i] = targets[j].node == m;
      needed[i] |= m && needed[index_of(&r, m)];
    }
    if (nt && x->leaf && o->accumulate)
      for (int j = 0; j < nt; j++)
        needed[i] |= targets[j].node == x;
  }
  for (int k = 0; !st && k < n; k++)
    if (edges[k].node)
      st = add_into(&bufs[index_of(&r, edges[k].node)][edges[k].nr], &seeds[k]);
  const task t = {__atomic_fetch_add(&next_task_id, 1, __ATOMIC_RELAXED), &r, needed, o, targets};
  const task *outer = current;
  current = &t;
  vkt_set_grad_enabled(o->create_graph);
  for (int i = 0; !st && i < count; i++) {
    vkt_node *x = nodes[i];
    vkt_var *grads_i = bufs[i];
    bool any = false;
    for (int k = 0; k < x->nout; k++)
      any |= vkt_var_defined(&grads_i[k]);
    if (any && !needed[i] && is_target(&t, x)) /* a node that runs only for what it gives: its tensor hooks first */
      st = tensor_hooks(x, grads_i);
    for (int j = 0; !st && j < nt; j++) /* what autograd.grad returns, and backward(inputs=) of non-leaves */
      if (targets[j].node == x && vkt_var_defined(&grads_i[targets[j].nr])) {
        if (!o->accumulate)
          vkt_var_share(&o->captured[j], &grads_i[targets[j].nr]);
        else if (!x->leaf)
          st = retain(o->inputs[j].ag, &grads_i[targets[j].nr], o->create_graph);
      }
    if (st || !needed[i] || !any)
      continue;
    if (x->leaf) {
      if ((st = accumulate(x, &grads_i[0], o->create_graph)) && vkt_anomaly(NULL))
        report_failure(x);
    } else {
      for (int k = 0; !st && !x->undefined_grads && k < x->nout; k++)
        if (!vkt_var_defined(&grads_i[k]))
          st = zeros(&x->out_info[k], &grads_i[k]);
      if (!st)
        st = run_node(&r, x, grads_i, bufs, o->create_graph);
      if (st && vkt_anomaly(NULL))
        report_failure(x);
      if (!o->keep_graph) {
        vkt_node_release_saved(x);
        x->released = true;
      }
    }
    for (int k = 0; k < x->nout; k++)
      vkt_var_release(&grads_i[k]);
  }
  vkt_set_grad_enabled(was_enabled);
  current = outer;
  plain_run = outer_plain;
  running--;
  for (int i = 0; bufs && i < count; i++) {
    for (int k = 0; bufs[i] && k < nodes[i]->nout; k++)
      vkt_var_release(&bufs[i][k]);
    free(bufs[i]);
  }
  for (int k = 0; k < n; k++) {
    vkt_var_release(&seeds[k]);
    vkt_node_decref(edges[k].node);
  }
  for (int j = 0; j < nt; j++)
    vkt_node_decref(targets[j].node);
  free(bufs);
  free(needed);
  run_free(&r);
  free(targets);
  return st;
}
