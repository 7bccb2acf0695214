/* fuse.c: pending elementwise expressions and the kernels generated from them (fuse.h says when).
 *
 * A pending node is one op over up to three input views; an input whose storage is pending itself is an
 * edge of the expression when it reads that node's result as it was made (same view) in the same compute
 * type; any other pending input is computed first and read as a tensor (a "cut"). One kernel evaluates
 * the nodes in order per element, each value rounded through its result dtype as a stored value would
 * be, and stores the root and every node whose storage is referenced from outside the expression.
 *
 * A product (VKT_OP_MATMUL, see vkt_fuse_defer_matmul) is a pending node too, over its two operands. An
 * expression that reads it as made computes in the product's own kernel, as its epilogue: the product is
 * then the expression's last leaf, its value the sum the kernel has just made (MM_VALUE), and it is written
 * only where it is referenced. Anything else that needs it computes it alone, as without fusion. */
#include "fuse_internal.h"

#include "matmul.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define same_view vkt_fuse_same_view /* fuse_internal.h's, under their short names here */
#define add vkt_fuse_add

enum {
  MAX_PARAMS = 8, /* scalars in its push constants */
  MAX_RANK = 4,   /* elementwise.glsl's */
  /* Expressions nothing pending reads, waiting to be needed: past this many the oldest is computed, so the
   * GPU works while the host records more instead of idling until a read (H100, 50 calls of a 5-op chain
   * on 2^24 floats then synchronize: 0.064-0.072 ms a call with none computed before, the recording of
   * the whole loop exposed). */
  MAX_ROOTS = 4,
  MAX_KERNELS = 256, /* kernel_stats() rows */
  CACHE_SLOTS = 256, /* generated kernels remembered by structure */
  MAX_KEY = 512      /* bytes of a structure */
};

static node *live;
static int busy;
static int reducing; /* reductions being computed: what they compute first goes no other way (reduction_reading) */
static int enabled = -1; /* -1: VKT_FUSION not read yet */

bool vkt_fuse_busy(void) { return busy > 0; }

bool vkt_fuse_enabled(void) {
  if (enabled < 0) {
    const char *env = getenv("VKT_FUSION");
    enabled = !(env && strcmp(env, "0") == 0);
  }
  return enabled;
}

vkt_status vkt_fuse_set_enabled(bool on) {
  enabled = on;
  return on ? VKT_OK : vkt_fuse_flush();
}

/* ---- statistics ---- */

typedef struct {
  uint64_t hash, launches;
  char *ops;
} kernel_row;
static kernel_row kernels[MAX_KERNELS];
static int nkernels;
static uint64_t launches;

uint64_t vkt_fuse_launches(void) { return launches; }
int vkt_fuse_kernel_count(void) { return nkernels; }

const vkt_fuse_kernel_stat *vkt_fuse_kernel(int i) {
  static vkt_fuse_kernel_stat row;
  row = (vkt_fuse_kernel_stat){kernels[i].ops, kernels[i].launches};
  return &row;
}

void vkt_fuse_reset_stats(void) {
  for (int i = 0; i < nkernels; i++)
    free(kernels[i].ops);
  nkernels = 0;
  launches = 0;
}

/* The kernel_stats() row of a kernel's structure (hash), made on its first launch. */
static int stats_row(uint64_t hash, const char *ops) {
  for (int i = 0; i < nkernels; i++)
    if (kernels[i].hash == hash)
      return i;
  char *copy = nkernels < MAX_KERNELS ? strdup(ops) : NULL;
  if (!copy)
    return -1;
  kernels[nkernels] = (kernel_row){hash, 0, copy};
  return nkernels++;
}

/* ---- pending nodes ---- */

static void unlink_node(node *n) {
  if (n->prev)
    n->prev->next = n->next;
  else
    live = n->next;
  if (n->next)
    n->next->prev = n->prev;
}

/* Freed nodes, kept for the next pending ops: a training step makes and frees the same few each time, so
 * deferring an op costs no malloc. */
enum { MAX_SPARE = 64 };
static node *spare;
static int nspare;

static node *node_new(void) {
  node *n = spare;
  if (!n)
    return malloc(sizeof *n);
  spare = n->next;
  nspare--;
  return n;
}

static void release_node(node *n) {
  if (n->view2.storage) { /* computed: the second result holds its value, and the node lets go of the first */
    n->view2.storage->pending = NULL;
    vkt_storage_decref(n->view.storage);
  }
  for (int k = 0; k < n->nin; k++) {
    n->in[k].storage->readers--;
    vkt_tensor_release(&n->in[k]);
  }
  if (nspare == MAX_SPARE) {
    free(n);
    return;
  }
  n->next = spare;
  spare = n;
  nspare++;
}

/* A pending result's last reference is gone: nothing will read it. */
static void forget(void *pending) {
  node *n = pending;
  unlink_node(n);
  n->view.storage->pending = NULL;
  release_node(n);
}

/* A pending second result's last reference is gone: its node lets go of the first result, which forgets the node
 * where nothing else holds it. */
static void forget_second(void *pending) {
  node *n = pending;
  vkt_storage *first = n->view.storage;
  n->view2.storage = NULL;
  vkt_storage_decref(first);
}

static node *pending_of(const vkt_tensor *t) { return t->storage->pending; }

/* The op's GLSL, the part after "#define OP(x) " or "#define OP(x, y) "; where has none. */
static const char *glsl_of(vkt_op_id op) {
  const char *d = vkt_ops[op].define, *close = strchr(d, ')');
  return close ? close + 2 : "";
}

/* Bit p set when the op reads param[p]: in its GLSL, or as a number operand (the first number is param[0]). */
static unsigned params_used(vkt_op_id op, vkt_scalar_operands scalar) {
  static unsigned char known[VKT_OP_COUNT]; /* 4 | the bits of the op's GLSL, found once */
  if (!known[op]) {
    const char *g = glsl_of(op);
    known[op] = (unsigned char)(4u | (strstr(g, "P0") ? 1u : 0u) | (strstr(g, "P1") ? 2u : 0u));
  }
  return (known[op] & 3u) | ((1u << __builtin_popcount(scalar)) - 1u);
}

static void measure(node *n) {
  n->size = 1, n->leaves = 0, n->params = __builtin_popcount(n->uses);
  for (int k = 0; k < n->nin; k++) {
    node *m = pending_of(&n->in[k]);
    m = m && !vkt_fuse_is_reduction(m->op) ? m : NULL; /* read as a tensor */
    n->size += m ? m->size : 0;
    n->leaves += m ? m->leaves : 1;
    n->params += m ? m->params : 0;
  }
}

static vkt_status compute(vkt_storage *s);

/* Computes the largest pending inputs of n until the expression under n fits one kernel. */
static vkt_status fit(node *n) {
  vkt_status st = VKT_OK;
  for (measure(n); !st && (n->size > MAX_NODES || n->leaves > MAX_LEAVES || n->params > MAX_PARAMS); measure(n)) {
    node *big = NULL;
    for (int k = 0; k < n->nin; k++) {
      node *m = pending_of(&n->in[k]);
      if (m && (!big || m->size > big->size))
        big = m;
    }
    st = compute(big->view.storage);
  }
  return st;
}

/* Computes the oldest expression nothing pending reads when there are more than MAX_ROOTS. */
static vkt_status computed_oldest_root(void) {
  int roots = 0;
  node *oldest = NULL;
  for (node *n = live; n; n = n->next)
    if (n->view.storage->readers == 0)
      roots++, oldest = n;
  return roots > MAX_ROOTS ? compute(oldest->view.storage) : VKT_OK;
}

vkt_status vkt_fuse_defer(vkt_op_id id, const vkt_op_args *a) {
  node *n = node_new();
  if (!n)
    return vkt_fail(VKT_ERR_NOMEM, "out of host memory for a pending op");
  /* field by field: a compound literal would clear all 1.2 KB first (three input views), then copy */
  n->op = id, n->compute = a->compute, n->scalar = a->scalar, n->param[0] = a->param[0], n->param[1] = a->param[1];
  n->uses = params_used(id, a->scalar), n->nin = a->nin, n->view = *a->out, n->dims = a->dims, n->flags = a->flags;
  n->view2.storage = NULL, n->prev = NULL; /* fit() measures size, leaves and params; next is set below */
  for (int k = 0; k < a->nin; k++) {
    vkt_tensor_share(&n->in[k], a->in[k]);
    n->in[k].storage->readers++;
  }
  vkt_status st = fit(n);
  if (st) {
    release_node(n);
    return st;
  }
  vkt_storage *s = a->out->storage;
  s->pending = n;
  s->forget = forget;
  if (a->out2 && vkt_fuse_is_reduction(id)) { /* max/min's or cummax's indices: the same node's */
    n->view2 = *a->out2;
    a->out2->storage->pending = n;
    a->out2->storage->forget = forget_second;
    vkt_storage_incref(s);
  }
  n->next = live;
  if (live)
    live->prev = n;
  live = n;
  return computed_oldest_root();
}

vkt_status vkt_fuse_run_or_defer(vkt_op_id id, const vkt_op_args *a) {
  const vkt_op *op = &vkt_ops[id];
  const char *why;
  if (op->supports(op, a, &why))
    return vkt_fuse_defer(id, a);
  vkt_status st = vkt_storage_allocate(a->out->storage);
  if (!st && a->out2 && !a->out2->storage->alloc.segment)
    st = vkt_storage_allocate(a->out2->storage);
  return st ? st : vkt_op_run(id, a);
}

vkt_status vkt_fuse_defer_matmul(const vkt_op_args *a) {
  vkt_status st = VKT_OK;
  for (int k = 0; k < 2 && !st; k++)
    st = vkt_fuse_ready(a->in[k]->storage, false);
  if (st)
    return st;
  if (!vkt_matmul_defers(a))
    return (st = vkt_storage_allocate(a->out->storage)) ? st : vkt_op_run(VKT_OP_MATMUL, a);
  vkt_op_args b = *a;
  b.nin = 2; /* no bias */
  return vkt_fuse_defer(VKT_OP_MATMUL, &b);
}

vkt_status vkt_fuse_defer_into(vkt_op_id id, const vkt_op_args *a, bool *deferred) {
  vkt_storage *s = a->out->storage, *moved;
  node *old = s->pending;
  const vkt_op *op = &vkt_ops[id];
  const char *why;
  *deferred = false;
  if (s->readers > 0 || !same_view(a->out, &old->view) || old->view2.storage || !op->supports(op, a, &why))
    return VKT_OK;
  vkt_status st = vkt_storage_new_lazy(s->device, s->nbytes, &moved);
  if (st)
    return st;
  s->pending = NULL;
  old->view.storage = moved;
  moved->pending = old;
  moved->forget = forget;
  vkt_op_args b = *a;
  vkt_tensor in[3];
  for (int k = 0; k < a->nin; k++)
    if (a->in[k]->storage == s) {
      in[k] = *a->in[k];
      in[k].storage = moved;
      b.in[k] = &in[k];
    }
  s->version++;
  if ((st = vkt_fuse_defer(id, &b)) && moved->pending == old) { /* the old value stays where it was */
    moved->pending = NULL;
    old->view.storage = s;
    s->pending = old;
  }
  vkt_storage_decref(moved); /* the new op holds it where it reads the old value */
  *deferred = !st;
  return st;
}

/* ---- plans: the nodes, tensors and results of one kernel ---- */

static int node_index(const plan *p, const node *n) {
  for (int i = 0; i < p->nnodes; i++)
    if (p->node[i] == n)
      return i;
  return -1;
}

static int leaf_index(const plan *p, const vkt_tensor *t) {
  for (int j = 0; j < p->nleaves; j++)
    if (same_view(p->leaf[j], t))
      return j;
  return -1;
}

static void collect(plan *p, node *n) {
  for (int k = 0; k < n->nin && !p->cut; k++) {
    const vkt_tensor *in = &n->in[k];
    node *m = pending_of(in);
    if (m && m->op == VKT_OP_MATMUL) {
      if (!same_view(in, &m->view) || (p->mm && p->mm != m))
        p->cut = m;
      else if (!p->mm)
        p->mm = m, p->leaf[p->nleaves++] = in;
    } else if (!m) {
      if (leaf_index(p, in) < 0)
        p->leaf[p->nleaves++] = in; /* fit() keeps these within MAX_LEAVES */
    } else if (!same_view(in, &m->view) || m->compute != p->compute || vkt_fuse_is_reduction(m->op)) {
      p->cut = m;
    } else if (node_index(p, m) < 0) {
      collect(p, m);
    }
  }
  if (!p->cut)
    p->node[p->nnodes++] = n;
}

/* Whether a node's result is referenced from outside the plan: by a tensor the user holds, a saved
 * tensor, a view, or a pending node of another expression. */
static bool referenced(const plan *p, const node *n) {
  int edges = 0;
  for (int i = 0; i < p->nnodes; i++)
    for (int k = 0; k < p->node[i]->nin; k++)
      edges += p->node[i]->in[k].storage == n->view.storage;
  return n->view.storage->refcount > edges;
}

/* The node whose value t is in plan p, or NULL where t is a leaf (the product p->mm included). */
static node *edge_of(const plan *p, const vkt_tensor *t) {
  node *m = pending_of(t);
  return m == p->mm ? NULL : m;
}

int vkt_fuse_operands(const plan *p, const vkt_tensor **t) {
  int n = 0;
  for (int i = 0; i < p->nout; i++)
    t[n++] = &p->out[i]->view;
  for (int j = 0; j < p->nleaves; j++)
    t[n++] = p->leaf[j];
  return n;
}

/* The operands' layout after merging dimensions: dense when every operand is stride-1 over one dimension,
 * else one_dim (elementwise.glsl's ONE_DIM) when there is one dimension, else rows (ROWS) when the innermost
 * has VKT_ROWS_MIN elements or more: y * (g - s) over 4096 x 4096 with a broadcast row sum s (softmax's backward)
 * took 84 us on an H200 one element an invocation (a division each), 40 us with rows; a layer norm's
 * (x - mean) * rstd * g + b over 8192 x 1024 made its chain 0.118 -> 0.092 ms. */
typedef struct {
  const vkt_tensor *t[MAX_OPERANDS];
  int n, rank;
  int64_t shape[VKT_MAX_DIMS], strides[MAX_OPERANDS * VKT_MAX_DIMS];
  bool contiguous, one_dim, rows;
} layout;

static void layout_of(const plan *p, layout *l) {
  l->n = vkt_fuse_operands(p, l->t);
  l->rank = vkt_merge_in_out_order(l->n, l->t, l->shape, l->strides);
  l->contiguous = l->rank <= 1;
  for (int k = 0; k < l->n && l->contiguous; k++)
    l->contiguous = l->rank == 0 || l->strides[k * VKT_MAX_DIMS] == 1;
  l->one_dim = !l->contiguous && l->rank == 1;
  l->rows = l->rank >= 2 && l->shape[l->rank - 1] >= VKT_ROWS_MIN;
}

static int params_of(const plan *p) {
  int n = 0;
  for (int i = 0; i < p->nnodes; i++)
    n += __builtin_popcount(p->node[i]->uses);
  return n;
}

/* Bytes of elementwise.glsl's push constants: n, rank, offset[nops], then unless dense shape[4] and
 * stride[nops * 4], then the scalars (at least one slot), 8-byte aligned. */
static uint32_t push_bytes(int nops, bool contiguous, int nparams) {
  uint32_t words = 2 + (uint32_t)nops + (contiguous ? 0 : MAX_RANK + MAX_RANK * (uint32_t)nops);
  return 4 * (words + words % 2) + 8 * (uint32_t)(nparams ? nparams : 1);
}

static void plan_epilogue(plan *p);

static void make_plan(plan *p, node *root) {
  p->compute = root->compute, p->nnodes = p->nleaves = p->nout = 0, p->cut = p->mm = NULL;
  if (vkt_fuse_is_reduction(root->op)) { /* fuse_reduce.c plans what it reads */
    p->out[p->nout++] = root;
    return;
  }
  collect(p, root);
  if (p->cut)
    return;
  p->out[p->nout++] = root;
  if (p->nnodes == 1 && !p->mm)
    return;
  for (int i = 0; i < p->nnodes - 1; i++)
    if (referenced(p, p->node[i]))
      p->out[p->nout++] = p->node[i];
  if (p->nout + p->nleaves > MAX_OPERANDS) {
    p->cut = p->nout > 1 ? p->out[1] : p->mm; /* written anyway: computed on its own, it is read as a tensor */
    return;
  }
  if (p->mm) {
    plan_epilogue(p);
    return;
  }
  layout l;
  layout_of(p, &l);
  uint32_t limit = vkt_device_props(root->view.storage->dev)->max_push_constants;
  if (l.rank > MAX_RANK || push_bytes(l.n, l.contiguous, params_of(p)) > limit)
    /* alone, an op's operands merge (its supports() said so) and its own shader's constants fit */
    p->cut = p->nout > 1 ? p->out[1] : p->node[p->nnodes - 2];
}

/* ---- matmul epilogues ---- */

/* What vkt_matmul_epilogue_shader and _launch take for plan p, and the arrays it points to. */
typedef struct {
  vkt_op_args mm;
  const vkt_tensor *out[MAX_OPERANDS], *read[MAX_LEAVES];
  uint32_t params[2 * MAX_PARAMS];
  vkt_matmul_epilogue e;
} epilogue;

static uint32_t param_words(const plan *p, uint32_t *w);

static void epilogue_of(const plan *p, epilogue *ep) {
  const node *m = p->mm;
  ep->mm = (vkt_op_args){.out = &m->view,
                         .in = {&m->in[0], &m->in[1]},
                         .nin = 2,
                         .compute = m->compute,
                         .param = {m->param[0], m->param[1]}};
  for (int o = 0; o < p->nout; o++)
    ep->out[o] = &p->out[o]->view;
  for (int j = 0; j < p->nleaves - 1; j++)
    ep->read[j] = p->leaf[j];
  int nparams = (int)param_words(p, ep->params) / 2;
  ep->e = (vkt_matmul_epilogue){.mm = &ep->mm,
                                .out = ep->out,
                                .read = ep->read,
                                .nout = p->nout,
                                .nread = p->nleaves - 1,
                                .nops = p->nnodes,
                                .keep = p->keep,
                                .params = ep->params,
                                .nparams = nparams};
}

/* The kernel of plan p over the pending product p->mm, where the expression is float (matmul.glsl's
 * ACC), its results are dense like the product, and the product's shader takes them; else the product is
 * computed first. */
static void plan_epilogue(plan *p) {
  int j = leaf_index(p, &p->mm->view);
  const vkt_tensor *product = p->leaf[j];
  memmove(&p->leaf[j], &p->leaf[j + 1], sizeof *p->leaf * (size_t)(p->nleaves - 1 - j));
  p->leaf[p->nleaves - 1] = product;
  p->keep = referenced(p, p->mm);
  bool fits = p->compute == VKT_FLOAT32 || p->compute == VKT_FLOAT16;
  for (int o = 0; o < p->nout && fits; o++)
    fits = p->out[o]->view.offset == 0 && vkt_tensor_is_contiguous(&p->out[o]->view);
  epilogue ep;
  if (fits) {
    epilogue_of(p, &ep);
    fits = vkt_matmul_epilogue_shader(&ep.e, &p->shader, &p->variant, &p->push_size);
  }
  if (!fits)
    p->cut = p->mm;
}

/* ---- the generated kernel ---- */

void vkt_fuse_add(text *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = b->full ? -1 : vsnprintf(b->text + b->len, b->cap - b->len, fmt, ap);
  va_end(ap);
  if (n < 0 || (size_t)n >= b->cap - b->len)
    b->full = true;
  else
    b->len += (size_t)n;
}

/* The GLSL of operand k of node n: a node's value, a tensor's loaded element, or one of the node's scalars
 * (slot[q] is the push constant of its param[q]). */
static void operand(text *b, const plan *p, const node *n, int k, const int *slot) {
  int before = vkt_scalars_before(n->scalar, k);
  if (n->scalar >> k & 1u) {
    add(b, "decode(p.param[%d])", slot[before]);
    return;
  }
  const vkt_tensor *in = &n->in[k - before];
  node *m = edge_of(p, in);
  if (m)
    add(b, "v%d", node_index(p, m));
  else
    add(b, "l%d[k]", leaf_index(p, in));
}

/* The GLSL that turns a stored value of dtype (a result, or a product's sums as stored) back into the compute
 * type, as the next op would read it from memory: a float16 value in float arithmetic goes through
 * rounded_half(), since NVIDIA's compiler drops a bare float -> float16 -> float round trip (half.glsl). */
static const char *read_back(vkt_dtype dtype, vkt_dtype compute) {
  return dtype == VKT_FLOAT16 && compute != VKT_FLOAT64 ? "rounded_half" : "C";
}

/* The #define lines of fused.comp (or with a product, of matmul.glsl's EPILOGUE) for plan p, its scalars
 * numbered in node order; the op names in ops. */
static void generate(const plan *p, int nparams, text *b, text *ops) {
  const vkt_tensor *t[MAX_OPERANDS];
  int n = vkt_fuse_operands(p, t), last = p->mm ? n - 1 : n; /* the product's leaf is last, a buffer only where kept */
  if (p->mm)
    add(ops, "matmul ");
  char line[512];
  vkt_type_defines(line, sizeof line, "C", p->compute);
  add(b, "%s#define OUT_BITS %d\n", line, 8 * (int)vkt_dtype_size(p->compute));
  add(b, "#define NOPS %d\n#define MAX_OPS %d\n#define NPARAMS %d\n", n, n, nparams ? nparams : 1);
  for (int i = 0; i < p->nnodes; i++) {
    const node *d = p->node[i];
    bool binary = vkt_operand_count(d->nin, d->scalar) == 2;
    if (d->op != VKT_OP_WHERE)
      add(b, "#define OP%d(x, %sP0, P1) %s", i, binary ? "y, " : "", glsl_of(d->op));
    char name[16];
    snprintf(name, sizeof name, "ST%d", i);
    vkt_store_define(line, sizeof line, name, vkt_storage_type(d->view.dtype),
                     (vkt_ops[d->op].flags & VKT_BOOL_OUT) != 0, d->compute, d->view.dtype);
    add(b, "%s", line);
    add(ops, "%s%s", i ? " " : "", vkt_ops[d->op].name);
  }
  add(b, "#define FUSED_BUFFERS");
  for (int k = 0; k < n; k++)
    if (k < last || p->keep)
      add(b, " layout(std430, binding = %d) %s restrict buffer B%d { %s b%d_[]; };", k,
          k < p->nout || k == last ? "writeonly" : "readonly", k, vkt_storage_type(t[k]->dtype), k);
  add(b, "\n#define FUSED_DECLARE");
  for (int j = 0; j < p->nleaves; j++)
    add(b, " C l%d[ELEMS];", j);
  add(b, "\n#define FUSED_LOAD(k)");
  for (int j = 0; j < p->nleaves; j++)
    if (p->nout + j < last)
      add(b, " l%d[k] = C(b%d_[idx[%d]]);", j, p->nout + j, p->nout + j);
    else
      add(b, " l%d[k] = %s(MM_VALUE(k));", j, read_back(p->mm->view.dtype, p->compute));
  add(b, "\n#define FUSED_VALUES(k)");
  for (int i = 0, slot = 0; i < p->nnodes; i++) {
    const node *d = p->node[i];
    int s[2] = {slot, slot + (d->uses & 1u)};
    add(b, " precise C v%d = %s(ST%d(", i, read_back(d->view.dtype, p->compute), i);
    if (d->op == VKT_OP_WHERE) {
      add(b, "(");
      operand(b, p, d, 0, s);
      add(b, ") != C(0) ? ");
      operand(b, p, d, 1, s);
      add(b, " : ");
      operand(b, p, d, 2, s);
    } else {
      add(b, "OP%d(", i);
      for (int k = 0; k < vkt_operand_count(d->nin, d->scalar); k++) {
        operand(b, p, d, k, s);
        add(b, ", ");
      }
      for (int q = 0; q < 2; q++) {
        if (d->uses >> q & 1u)
          add(b, "decode(p.param[%d])", s[q]);
        else
          add(b, "C(0)");
        add(b, q ? ")" : ", ");
      }
    }
    add(b, "));");
    slot += __builtin_popcount(d->uses);
  }
  add(b, "\n#define FUSED_STORES(k)");
  for (int o = 0; o < p->nout; o++)
    add(b, " b%d_[idx[%d]] = %s(v%d);", o, o, vkt_storage_type(p->out[o]->view.dtype), node_index(p, p->out[o]));
  if (p->mm && p->keep)
    add(b, " b%d_[idx[%d]] = %s(l%d[k]);", last, last, vkt_storage_type(p->mm->view.dtype), p->nleaves - 1);
  add(b, "\n#define FUSED_EVAL(k) FUSED_VALUES(k) FUSED_STORES(k)\n");
  if (p->mm) /* matmul_coop2.comp's: result 0's value and storage type (it stores the result as a tile) */
    add(b, "#define FUSED_RESULT v%d\n#define RESULT0_TYPE %s\n", node_index(p, p->out[0]),
        vkt_storage_type(p->out[0]->view.dtype));
  if (p->mm && p->keep)
    add(b, "#define MM_KEPT b%d_\n", last);
}

/* Writes the scalars of p's nodes, in node order, two words each, into w; returns the word count. */
static uint32_t param_words(const plan *p, uint32_t *w) {
  uint32_t n = 0;
  for (int i = 0; i < p->nnodes; i++)
    for (int q = 0; q < 2; q++)
      if (p->node[i]->uses >> q & 1u) {
        vkt_scalar_bits(p->node[i]->compute, p->node[i]->param[q], &w[n]);
        n += 2;
      }
  return n;
}

/* Writes elementwise.glsl's push constants (push_bytes() says which) into w; returns the byte count. */
static uint32_t push_words(const plan *p, const layout *l, uint32_t *w) {
  uint32_t n = 0;
  w[n++] = (uint32_t)vkt_tensor_numel(l->t[0]);
  w[n++] = (uint32_t)l->rank;
  for (int k = 0; k < l->n; k++)
    w[n++] = (uint32_t)l->t[k]->offset;
  if (!l->contiguous) {
    for (int d = 0; d < MAX_RANK; d++)
      w[n++] = d < l->rank ? (uint32_t)l->shape[d] : 1u;
    for (int k = 0; k < l->n; k++)
      for (int d = 0; d < MAX_RANK; d++)
        w[n++] = d < l->rank ? (uint32_t)l->strides[k * VKT_MAX_DIMS + d] : 0u;
  }
  if (n % 2)
    w[n++] = 0;
  uint32_t first = n;
  n += param_words(p, &w[n]);
  if (n == first)
    w[n++] = 0, w[n++] = 0;
  return 4 * n;
}

/* Elements a workgroup takes: LOCAL_SIZE (256) times fused.comp's ELEMS. */
static uint32_t per_group(const layout *l) { return 256 * (l->contiguous ? 8 : l->one_dim ? 4 : 1); }

/* One op alone runs its own shader, as without fusion. */
static vkt_status launch_alone(node *n) {
  const vkt_op *op = &vkt_ops[n->op];
  vkt_op_args a = {
      .out = &n->view, .nin = n->nin, .scalar = n->scalar, .compute = n->compute, .param = {n->param[0], n->param[1]}};
  for (int k = 0; k < n->nin; k++)
    a.in[k] = &n->in[k];
  return op->launch(op, &a);
}

/* What a generated kernel's GLSL depends on, as bytes: equal keys, equal kernels. The constants are not
 * in it (they are push constants), nor the sizes and strides. */
typedef struct {
  unsigned char b[MAX_KEY];
  size_t n;
} kernel_key;

static void key_add(kernel_key *k, int v) { k->b[k->n++] = (unsigned char)v; }

static void key_of(const plan *p, const layout *l, kernel_key *k) {
  k->n = 0;
  key_add(k, p->compute), key_add(k, p->nnodes), key_add(k, p->nout), key_add(k, p->nleaves);
  key_add(k, l ? l->contiguous + 2 * l->one_dim + 4 * l->rows : 0);
  for (int i = 0; i < p->nnodes; i++) {
    const node *d = p->node[i];
    key_add(k, d->op), key_add(k, d->op >> 8), key_add(k, d->scalar), key_add(k, (int)d->uses);
    key_add(k, d->nin), key_add(k, d->view.dtype);
    for (int j = 0; j < d->nin; j++) {
      node *m = edge_of(p, &d->in[j]);
      key_add(k, m ? node_index(p, m) : 128 + leaf_index(p, &d->in[j]));
    }
  }
  for (int o = 0; o < p->nout; o++)
    key_add(k, node_index(p, p->out[o]));
  for (int j = 0; j < p->nleaves; j++)
    key_add(k, p->leaf[j]->dtype);
  if (p->mm) { /* what the product's own #defines depend on */
    key_add(k, p->keep), key_add(k, p->mm->view.dtype);
    memcpy(&k->b[k->n], &p->variant, sizeof p->variant);
    k->n += sizeof p->variant;
  }
}

typedef struct {
  uint64_t hash;
  kernel_key key;
  const vkt_device *dev;
  vkt_pipeline *pipe;
} cached_kernel;
static cached_kernel *cache[CACHE_SLOTS];

/* The pipeline of plan p's kernel over layout l (NULL: a product's), which binds nbindings buffers:
 * remembered by structure, else generated (and printed under VKT_FUSION_DEBUG=1) and compiled through the
 * pipeline cache. */
static vkt_status pipeline_of(const plan *p, const layout *l, vkt_device *dev, int nbindings, uint32_t push_size,
                              vkt_pipeline **pipe, uint64_t *hash) {
  kernel_key key;
  key_of(p, l, &key);
  *hash = vkt_fnv1a(key.b, key.n, VKT_FNV_SEED);
  cached_kernel **slot = &cache[*hash % CACHE_SLOTS];
  if (*slot && (*slot)->hash == *hash && (*slot)->dev == dev && (*slot)->key.n == key.n &&
      memcmp((*slot)->key.b, key.b, key.n) == 0) {
    *pipe = (*slot)->pipe;
    return VKT_OK;
  }
  int nparams = params_of(p);
  char defines_buf[8192], ops_buf[512] = "";
  text defines = {defines_buf, 0, sizeof defines_buf, false}, ops = {ops_buf, 0, sizeof ops_buf, false};
  if (p->mm)
    defines.len = (size_t)vkt_matmul_defines(&p->variant, defines_buf, sizeof defines_buf);
  generate(p, nparams, &defines, &ops);
  if (l && l->contiguous)
    add(&defines, "#define CONTIGUOUS\n#define COMPACT_PUSH\n");
  if (l && l->one_dim)
    add(&defines, "#define ONE_DIM\n");
  if (l && l->rows)
    add(&defines, "#define ROWS\n");
  if (defines.full)
    return vkt_fail(VKT_ERR_RUNTIME, "a fused kernel's source is longer than %zu bytes", sizeof defines_buf);
  const char *debug = getenv("VKT_FUSION_DEBUG");
  if (debug && strcmp(debug, "1") == 0)
    fprintf(stderr, "vkt: fused kernel: %s\n%s\n", ops_buf, defines_buf);
  vkt_status st = vkt_pipeline_get(dev, p->mm ? p->shader : "fused.comp", defines_buf, nbindings, push_size, pipe);
  if (st)
    return st;
  if (!*slot)
    *slot = malloc(sizeof **slot);
  if (*slot)
    **slot = (cached_kernel){*hash, key, dev, *pipe};
  stats_row(*hash, ops_buf);
  return VKT_OK;
}

/* Counts a launch of the kernel with this structure hash in kernel_stats(). */
static void count_launch(const plan *p, uint64_t hash) {
  char ops[512];
  int row = -1;
  for (int i = 0; i < nkernels && row < 0; i++)
    row = kernels[i].hash == hash ? i : -1;
  if (row < 0) { /* a kernel compiled before reset_kernel_stats() */
    text t = {ops, 0, sizeof ops, false};
    add(&t, "%s", p->mm ? "matmul " : "");
    for (int i = 0; i < p->nnodes; i++)
      add(&t, "%s%s", i ? " " : "", vkt_ops[p->node[i]->op].name);
    row = stats_row(hash, ops);
  }
  launches++;
  if (row >= 0)
    kernels[row].launches++;
}

void vkt_fuse_count(uint64_t hash, const char *ops) {
  int row = stats_row(hash, ops);
  launches++;
  if (row >= 0)
    kernels[row].launches++;
}

/* The product's kernel with the expression as its epilogue. */
static vkt_status launch_epilogue(const plan *p) {
  epilogue ep;
  vkt_pipeline *pipe;
  uint64_t hash;
  vkt_storage *s = p->mm->view.storage;
  vkt_status st = p->keep && !s->alloc.segment ? vkt_storage_allocate(s) : VKT_OK;
  int nbindings = p->nout + p->nleaves - 1 + p->keep + 2 + vkt_matmul_extra_bindings(&p->variant);
  if (st || (st = pipeline_of(p, NULL, s->dev, nbindings, p->push_size, &pipe, &hash)))
    return st;
  epilogue_of(p, &ep);
  vkt_stream_count_ops(s->dev, (uint32_t)p->nnodes); /* the product and each node */
  if ((st = vkt_matmul_epilogue_launch(&ep.e, pipe)))
    return st;
  count_launch(p, hash);
  return VKT_OK;
}

vkt_status vkt_fuse_allocate(const plan *p) {
  vkt_status st = VKT_OK;
  for (int o = 0; o < p->nout && !st; o++)
    if (!p->out[o]->view.storage->alloc.segment)
      st = vkt_storage_allocate(p->out[o]->view.storage);
  return st;
}

static vkt_status launch(const plan *p) {
  vkt_status st = vkt_fuse_allocate(p);
  if (!st && p->mm)
    return launch_epilogue(p);
  if (st || p->nnodes == 1)
    return st ? st : launch_alone(p->node[0]);
  layout l;
  layout_of(p, &l);
  uint32_t words[128];
  uint32_t push_size = push_words(p, &l, words);
  vkt_device *dev = l.t[0]->storage->dev;
  vkt_pipeline *pipe;
  uint64_t hash;
  if ((st = pipeline_of(p, &l, dev, l.n, push_size, &pipe, &hash)))
    return st;
  vkt_binding b[MAX_OPERANDS];
  for (int k = 0; k < l.n; k++)
    b[k] = (vkt_binding){&l.t[k]->storage->alloc, 0, l.t[k]->storage->alloc.size, k < p->nout};
  uint32_t groups[3];
  uint64_t batch = 0;
  if (l.rows)
    vkt_groups_for_rows(dev, (uint64_t)l.shape[l.rank - 1], words[0] / (uint64_t)l.shape[l.rank - 1], VKT_ROWS_RUN,
                        groups);
  else
    vkt_groups_for(dev, (words[0] + per_group(&l) - 1) / per_group(&l), groups);
  vkt_stream_count_ops(dev, (uint32_t)p->nnodes - 1);
  if ((st = vkt_stream_dispatch(dev, pipe, b, l.n, words, push_size, groups, &batch)))
    return st;
  for (int k = 0; k < l.n; k++)
    vkt_storage_touched(l.t[k]->storage, batch);
  count_launch(p, hash);
  return VKT_OK;
}

void vkt_fuse_finish(const plan *p) {
  node *done[MAX_OPERANDS + 1];
  int n = 0;
  for (int o = 0; o < p->nout; o++)
    done[n++] = p->out[o];
  if (p->mm && p->keep)
    done[n++] = p->mm;
  for (int o = 0; o < n; o++) {
    done[o]->view.storage->pending = NULL;
    unlink_node(done[o]);
  }
  for (int o = 0; o < n; o++)
    release_node(done[o]);
}

/* A pending reduction that reads s's expression (planned as p) as made, where no reduction is being computed:
 * computed first, it writes s in its load (fuse_reduce.c), so the expression is read once for both. A bias
 * gradient (the sum over the batch of relu's backward) and the products that read that backward are such a
 * pair. Not where s is a product's epilogue: the product would then be written and read back, and an MLP's
 * training step took 0.351 -> 0.368 ms so (H100, alternated rounds). */
static node *reduction_reading(const vkt_storage *s, const plan *p) {
  node *n = s->pending;
  if (reducing || s->readers == 0 || vkt_fuse_is_reduction(n->op) || n->op == VKT_OP_MATMUL || (p->mm && !p->cut))
    return NULL;
  for (node *r = live; r; r = r->next)
    if (vkt_fuse_is_reduction(r->op) && vkt_fuse_reads_as_made(&r->in[0], &n->view))
      return r;
  return NULL;
}

static vkt_status compute(vkt_storage *s) {
  vkt_status st = VKT_OK;
  busy++;
  vkt_storage_incref(s); /* a result only a second result's node holds goes with that node once computed */
  while (!st && s->pending) {
    plan p;
    make_plan(&p, s->pending);
    node *r = reduction_reading(s, &p);
    if (r) {
      st = compute(r->view.storage);
      continue;
    }
    if (p.nout && vkt_fuse_is_reduction(p.out[0]->op)) {
      reducing++;
      st = vkt_fuse_reduce_launch(p.out[0]);
      reducing--;
      if (!st)
        vkt_fuse_finish(&p);
    } else if (p.cut) {
      st = compute(p.cut->view.storage);
    } else if (!(st = launch(&p))) {
      vkt_fuse_finish(&p);
    }
  }
  vkt_storage_decref(s);
  busy--;
  return st;
}

vkt_status vkt_fuse_compute(vkt_storage *s, bool write) {
  vkt_status st = s->pending ? compute(s) : VKT_OK;
  while (!st && write && s->readers > 0) {
    node *r = live;
    while (r &&
           !(r->in[0].storage == s || (r->nin > 1 && r->in[1].storage == s) || (r->nin > 2 && r->in[2].storage == s)))
      r = r->next;
    st = compute(r->view.storage);
  }
  return st;
}

vkt_status vkt_fuse_flush(void) {
  vkt_status st = VKT_OK;
  while (!st && live) {
    node *root = live; /* one nothing pending reads: the top of an expression */
    while (root->next && root->view.storage->readers > 0)
      root = root->next;
    st = compute(root->view.storage);
  }
  return st;
}

/* ---- shared with fuse_reduce.c (fuse_internal.h) ---- */

void vkt_fuse_plan_read(plan *p, node *root) {
  p->compute = root->compute, p->nnodes = p->nleaves = p->nout = 0, p->cut = p->mm = NULL;
  collect(p, root);
  if (!p->cut && p->mm) /* a product read is computed alone first: a reduction has no epilogue of it */
    p->cut = p->mm;
  for (int i = 0; i < p->nnodes && !p->cut; i++) {
    node *n = p->node[i];
    /* the root's one expected reference is the reader's edge */
    if (n == root ? n->view.storage->refcount > 1 : referenced(p, n))
      p->out[p->nout++] = n;
  }
  if (!p->cut && p->nout + p->nleaves + 1 > MAX_OPERANDS) /* written anyway: computed on its own, then read */
    p->cut = p->out[0];
}

void vkt_fuse_generate(const plan *p, text *b, text *ops) { generate(p, params_of(p), b, ops); }

size_t vkt_fuse_key(const plan *p, unsigned char *key, size_t cap) {
  kernel_key k;
  key_of(p, NULL, &k);
  if (k.n > cap)
    return 0;
  memcpy(key, k.b, k.n);
  return k.n;
}

uint32_t vkt_fuse_scalar_words(const plan *p, uint32_t *w) {
  uint32_t n = param_words(p, w);
  if (n == 0)
    w[n++] = 0, w[n++] = 0;
  return n;
}
