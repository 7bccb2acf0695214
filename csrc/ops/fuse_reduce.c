/* fuse_reduce.c: a reduction whose input is a pending elementwise expression computes the expression in its
 * load (reduce.comp with shaders/reduce_fused.glsl), so the expression's value is never written nor allocated;
 * a scan does too (fuse_scan.c), through the same pending node, which this file computes.
 * The reduction is then pending itself, a node of fuse.c, until its value is needed: by then the Python
 * temporary that held the expression is gone, and what still references an intermediate is known. Such an
 * intermediate (the expression's value included) is written by the same load, in the reduction's first pass
 * over its row, as fused.comp writes it: the expression is read once. Each element's value and the order the
 * row merges them in are the unfused path's. */
#include <stdio.h>
#include <stdlib.h>

#include "fuse_internal.h"
#include "reduce.h"

enum {
  RED_RANK = 4,       /* reduce_fused.glsl's KRANK and RRANK at most */
  CACHE_SLOTS = 64,   /* generated reductions remembered by structure */
  MAX_KEY = 600,      /* bytes of a structure */
  MAX_PUSH_WORDS = 128 /* 16 for 8 scalars, 4, then at most 7 offsets, 4 + 8 * 4 kept and 4 + 8 * 4 reduced */
};

/* Whether every value of dtype d is exact in GLSL type c (a natural compute type): then the load converts the
 * expression's value to the reduction's type as it would the stored tensor's. */
static bool exact_in(vkt_dtype d, vkt_dtype c) {
  switch (d) {
  case VKT_BOOL:
  case VKT_UINT8: return true;
  case VKT_INT32: return c == VKT_INT32 || c == VKT_INT64 || c == VKT_FLOAT64;
  case VKT_FLOAT16:
  case VKT_FLOAT32: return c == VKT_FLOAT32 || c == VKT_FLOAT64;
  default: return c == d;
  }
}

bool vkt_fuse_loads(vkt_dtype d, vkt_dtype expr, vkt_dtype compute) {
  vkt_dtype c = vkt_natural_compute(expr);
  return c == compute || exact_in(d, c);
}

/* Whether reduction op writes every element of its input's shape (softmax), not one a row. */
static bool writes_every(int op) { return op == VKT_OP_SOFTMAX || op == VKT_OP_LOG_SOFTMAX; }

/* Where x is a pending reduction's result (the second stage of a split one) the reduction is pending too, so
 * that the first stage stays pending until the expression it reads is known to be held by nothing else. all and
 * any test each value against zero, which reads the same in any type: they take the expression's compute type
 * (*compute changes), so that `(x > 0).all()` reads x, not a bool tensor made first. */
bool vkt_fuse_reduce_wanted(int id, const vkt_tensor *x, vkt_dtype *compute) {
  node *e = x->storage->pending;
  bool op = vkt_fuse_is_reduction(id); /* every reduction and scan */
  if (!op || !e || !vkt_fuse_enabled() || vkt_tensor_numel(x) == 0)
    return false;
  if (vkt_fuse_is_reduction(e->op))
    return true;
  if (e->op >= VKT_OP_SUM || !vkt_fuse_reads_as_made(x, &e->view))
    return false;
  if (id == VKT_OP_ALL || id == VKT_OP_ANY)
    *compute = vkt_natural_compute(e->compute);
  return vkt_fuse_loads(x->dtype, e->compute, *compute);
}

/* The op's arguments as vkt_reduce made them. */
static vkt_op_args args_of(const node *r) {
  return (vkt_op_args){.out = &r->view,
                       .out2 = r->view2.storage ? &r->view2 : NULL,
                       .in = {&r->in[0]},
                       .nin = 1,
                       .compute = r->compute,
                       .param = {r->param[0], r->param[1]},
                       .dims = r->dims,
                       .flags = r->flags};
}

/* The index space over the expression's tensors (t: the intermediates it writes, then those it reads, all shaped
 * like the reduction's input) and the output, its kept and reduced halves each merged to the fewest dims.
 * Strides are elements, operand-major (k * VKT_MAX_DIMS + d): the tensors, then (kept half only) the output. */
typedef struct {
  const vkt_tensor *t[MAX_OPERANDS];
  int n; /* tensors */
  int krank, rrank;
  int64_t kshape[VKT_MAX_DIMS], kstride[(MAX_OPERANDS + 1) * VKT_MAX_DIMS];
  int64_t rshape[VKT_MAX_DIMS], rstride[(MAX_OPERANDS + 1) * VKT_MAX_DIMS]; /* the output last (softmax) */
  int64_t nout, nred;
  const char *mode; /* reduce.glsl's #define of how invocations share rows */
  uint64_t rows;    /* rows a workgroup takes */
} fused_layout;

/* One half of the index space over the tensors seen in the input's shape (seen[k], l->t[k] reshaped where the
 * input is the expression's value reshaped) and the output. */
static int merge_half(const fused_layout *l, const vkt_tensor *seen, const node *r, bool reduced, int64_t *shape,
                      int64_t *stride) {
  vkt_tensor half[MAX_OPERANDS + 1];
  const vkt_tensor *t[MAX_OPERANDS + 1];
  int nops = l->n + (!reduced || writes_every(r->op)); /* the output last */
  const vkt_tensor *x = &r->in[0];
  for (int k = 0; k < nops; k++) {
    half[k].ndim = 0;
    t[k] = &half[k];
  }
  for (int d = 0; d < x->ndim; d++) {
    if ((bool)(r->dims >> d & 1) != reduced)
      continue;
    for (int k = 0; k < nops; k++) {
      half[k].shape[half[k].ndim] = x->shape[d];
      half[k].strides[half[k].ndim++] = k < l->n ? seen[k].strides[d] : r->view.strides[d];
    }
  }
  return vkt_merge_dims(nops, t, shape, stride);
}

/* A split reduction's first stage reads the span of the expression's dense value x as a grid of rows: element
 * f of the span (x's dims in memory order) is element f % cols of row f / cols. The tensors' dims, taken in
 * that order and merged, are cut where the rows start, splitting one dim if the cut falls inside it; false
 * where it falls where no dim can split there. */
static bool grid_halves(const plan *p, const node *r, fused_layout *l) {
  const vkt_tensor *x = &p->node[p->nnodes - 1]->view;
  int64_t cols = r->in[0].shape[1], shape[VKT_MAX_DIMS], stride[MAX_OPERANDS * VKT_MAX_DIMS];
  int order[VKT_MAX_DIMS];
  for (int d = 0; d < x->ndim; d++) { /* by descending stride: x is dense, so that is memory order */
    int i = d;
    for (; i > 0 && x->strides[order[i - 1]] < x->strides[d]; i--)
      order[i] = order[i - 1];
    order[i] = d;
  }
  vkt_tensor half[MAX_OPERANDS];
  const vkt_tensor *t[MAX_OPERANDS];
  for (int k = 0; k < l->n; k++) {
    half[k].ndim = x->ndim;
    for (int d = 0; d < x->ndim; d++)
      half[k].shape[d] = x->shape[order[d]], half[k].strides[d] = l->t[k]->strides[order[d]];
    t[k] = &half[k];
  }
  int rank = vkt_merge_dims(l->n, t, shape, stride), cut = rank;
  int64_t inner = 1;
  while (cut > 0 && cols % (inner * shape[cut - 1]) == 0)
    inner *= shape[--cut];
  int64_t q = cols / inner; /* of dim cut - 1, whose rest is kept */
  if ((q > 1 && (cut == 0 || shape[cut - 1] % q != 0)) || cut > RED_RANK || rank - cut + (q > 1) > RED_RANK)
    return false;
  l->krank = cut, l->rrank = rank - cut + (q > 1);
  for (int d = 0; d < l->krank; d++) {
    l->kshape[d] = d == cut - 1 ? shape[d] / q : shape[d];
    for (int k = 0; k < l->n; k++)
      l->kstride[k * VKT_MAX_DIMS + d] = stride[k * VKT_MAX_DIMS + d] * (d == cut - 1 ? q : 1);
  }
  for (int d = l->krank - 1, out = 1; d >= 0; out *= (int)l->kshape[d--]) /* the rows' results, in order */
    l->kstride[l->n * VKT_MAX_DIMS + d] = out * r->view.strides[0];
  for (int d = 0; d < l->rrank; d++) {
    int from = d + cut - (q > 1);
    l->rshape[d] = from == cut - 1 ? q : shape[from];
    for (int k = 0; k < l->n; k++)
      l->rstride[k * VKT_MAX_DIMS + d] = stride[k * VKT_MAX_DIMS + from];
  }
  return true;
}

static bool layout_of(const plan *p, const node *r, fused_layout *l) {
  l->n = vkt_fuse_operands(p, l->t);
  if (r->flags & VKT_REDUCE_GRID) {
    if (!grid_halves(p, r, l))
      return false;
  } else {
    vkt_tensor seen[MAX_OPERANDS];
    const vkt_tensor *x = &r->in[0];
    bool reshaped = !vkt_fuse_same_view(x, &p->node[p->nnodes - 1]->view);
    for (int k = 0; k < l->n; k++) {
      seen[k] = *l->t[k]; /* a copy of the view, not a reference */
      if (!reshaped)
        continue;
      seen[k].ndim = x->ndim;
      memcpy(seen[k].shape, x->shape, sizeof *x->shape * (size_t)x->ndim);
      if (!vkt_view_strides(l->t[k], x->ndim, x->shape, seen[k].strides))
        return false;
    }
    l->krank = merge_half(l, seen, r, false, l->kshape, l->kstride);
    l->rrank = merge_half(l, seen, r, true, l->rshape, l->rstride);
  }
  /* the rows are shared out as the unfused launch would, so each row merges in the same order */
  vkt_op_args a = args_of(r);
  vkt_reduce_layout unfused;
  vkt_reduce_layout_of(&a, &unfused);
  l->nout = unfused.nout, l->nred = unfused.nred;
  l->mode = vkt_reduce_mode(&unfused, &l->rows);
  return l->krank <= RED_RANK && l->rrank <= RED_RANK;
}

/* reduce_fused.glsl's push constants: the scalars, nout, nred, correction, the offsets (the output's, the
 * indices' where it has them, the tensors'), then each half's shape and strides at the ranks the kernel was made
 * for. Returns the bytes. */
static uint32_t push_of(const plan *p, const node *r, const fused_layout *l, uint32_t *w) {
  uint32_t n = vkt_fuse_scalar_words(p, w);
  float correction = (float)r->param[0].f;
  w[n++] = (uint32_t)l->nout, w[n++] = (uint32_t)l->nred;
  memcpy(&w[n++], &correction, sizeof correction);
  w[n++] = (uint32_t)r->view.offset;
  if (r->view2.storage)
    w[n++] = (uint32_t)r->view2.offset;
  for (int j = 0; j < l->n; j++)
    w[n++] = (uint32_t)l->t[j]->offset;
  for (int d = 0; d < l->krank; d++)
    w[n++] = (uint32_t)l->kshape[d];
  for (int k = 0; k <= l->n; k++)
    for (int d = 0; d < l->krank; d++)
      w[n++] = (uint32_t)l->kstride[k * VKT_MAX_DIMS + d];
  for (int d = 0; d < l->rrank; d++)
    w[n++] = (uint32_t)l->rshape[d];
  for (int k = 0; k < l->n + writes_every(r->op); k++)
    for (int d = 0; d < l->rrank; d++)
      w[n++] = (uint32_t)l->rstride[k * VKT_MAX_DIMS + d];
  return 4 * n;
}

int vkt_fuse_result_operands(const plan *p, const node *r, const vkt_tensor **t) {
  if (r->view2.storage && memcmp(r->view.strides, r->view2.strides, sizeof *r->view.strides * (size_t)r->view.ndim))
    return -1;
  int n = vkt_fuse_operands(p, t);
  t[n] = &r->view, t[n + 1] = &r->view2;
  return n;
}

/* Whether plan p's expression can be r's load: what the unfused kernels would read, bindable, within the
 * shader's ranks and the adapter's push constants. */
static bool fits(const plan *p, const node *r, fused_layout *l) {
  const node *root = p->node[p->nnodes - 1];
  bool grid = r->flags & VKT_REDUCE_GRID, indices = r->view2.storage != NULL;
  const vkt_tensor *t[MAX_OPERANDS + 2];
  int n;
  if (!vkt_fuse_loads(r->in[0].dtype, p->compute, r->compute) ||
      (grid ? r->in[0].storage != root->view.storage : !vkt_fuse_reads_as_made(&r->in[0], &root->view)) ||
      (n = vkt_fuse_result_operands(p, r, t)) < 0)
    return false;
  const vkt_adapter_props *props = vkt_device_props(r->view.storage->dev);
  const char *why;
  if (n + 1 + indices > MAX_OPERANDS || !vkt_operands_fit(props, r->compute, n + 1 + indices, t, &why))
    return false;
  uint32_t w[MAX_PUSH_WORDS];
  return layout_of(p, r, l) && push_of(p, r, l, w) <= props->max_push_constants;
}

/* ---- the generated kernel ---- */

typedef struct {
  uint64_t hash;
  unsigned char key[MAX_KEY];
  size_t nkey;
  const vkt_device *dev;
  vkt_pipeline *pipe;
  char ops[512]; /* "mul sum" */
} cached_kernel;
static cached_kernel *cache[CACHE_SLOTS];

static size_t key_of(const plan *p, const node *r, const fused_layout *l, unsigned char *key) {
  size_t n = vkt_fuse_key(p, key, MAX_KEY - 8);
  if (!n)
    return 0;
  int more[] = {r->op, r->flags, r->view.dtype, l->krank, l->rrank, (int)l->rows, r->view2.storage != NULL};
  for (size_t i = 0; i < sizeof more / sizeof *more; i++)
    key[n++] = (unsigned char)more[i];
  return n;
}

static vkt_status generate(const plan *p, const node *r, const fused_layout *l, cached_kernel *k) {
  char buf[8192], line[512];
  text b = {buf, 0, sizeof buf, false}, ops = {k->ops, 0, sizeof k->ops, false};
  vkt_fuse_generate(p, &b, &ops);
  vkt_fuse_add(&ops, " %s", vkt_ops[r->op].name);
  vkt_type_defines(line, sizeof line, "TO", r->view.dtype);
  vkt_fuse_add(&b, "%s", line);
  vkt_type_defines(line, sizeof line, "A", r->compute); /* the reduction's type; the expression's is C */
  vkt_fuse_add(&b, "%s", line);
  vkt_conversion_defines(line, sizeof line, "A", r->in[0].dtype, r->view.dtype, r->compute);
  vkt_fuse_add(&b, "%s%s%s%s%s%s", line, vkt_ops[r->op].define, l->mode,
               r->flags & VKT_REDUCE_SQRT ? "#define TAKE_SQRT\n" : "",
               writes_every(r->op) ? "#define OUT_REDUCED\n" : "", r->view2.storage ? "#define WITH_INDICES\n" : "");
  vkt_fuse_add(&b, "#define FUSED\n#define KRANK %d\n#define RRANK %d\n#define FUSED_VALUE v%d\n", l->krank, l->rrank,
               p->nnodes - 1);
  if (b.full || ops.full)
    return vkt_fail(VKT_ERR_RUNTIME, "a fused reduction's source is longer than %zu bytes", sizeof buf);
  const char *debug = getenv("VKT_FUSION_DEBUG");
  if (debug && strcmp(debug, "1") == 0)
    fprintf(stderr, "vkt: fused kernel: %s\n%s\n", k->ops, buf);
  uint32_t w[MAX_PUSH_WORDS];
  return vkt_pipeline_get((vkt_device *)k->dev, "reduce.comp", buf, l->n + 1 + (r->view2.storage != NULL),
                          push_of(p, r, l, w), &k->pipe);
}

/* The kernel of this structure: remembered, else generated and compiled through the pipeline cache. */
static vkt_status kernel_of(const plan *p, const node *r, const fused_layout *l, const cached_kernel **out) {
  cached_kernel k = {.dev = r->view.storage->dev};
  if (!(k.nkey = key_of(p, r, l, k.key)))
    return vkt_fail(VKT_ERR_RUNTIME, "a fused reduction's structure is longer than %d bytes", MAX_KEY);
  k.hash = vkt_fnv1a(k.key, k.nkey, VKT_FNV_SEED);
  cached_kernel **slot = &cache[k.hash % CACHE_SLOTS];
  if (*slot && (*slot)->hash == k.hash && (*slot)->dev == k.dev && (*slot)->nkey == k.nkey &&
      memcmp((*slot)->key, k.key, k.nkey) == 0) {
    *out = *slot;
    return VKT_OK;
  }
  vkt_status st = generate(p, r, l, &k);
  if (st)
    return st;
  if (!*slot && !(*slot = malloc(sizeof **slot)))
    return vkt_fail(VKT_ERR_NOMEM, "out of host memory for a fused reduction");
  **slot = k;
  *out = *slot;
  return VKT_OK;
}

/* The reduction's kernel, which also writes the plan's results; they then hold their values. It binds the
 * expression's tensors, the output, then the indices where there are. */
static vkt_status launch_fused(const plan *p, const node *r, const fused_layout *l) {
  const cached_kernel *k = NULL;
  vkt_status st = kernel_of(p, r, l, &k);
  if (st || (st = vkt_fuse_allocate(p)))
    return st;
  uint32_t w[MAX_PUSH_WORDS];
  uint32_t push_size = push_of(p, r, l, w);
  vkt_binding b[MAX_OPERANDS + 2];
  vkt_storage *s[MAX_OPERANDS + 2];
  int nb = l->n + 1 + (r->view2.storage != NULL);
  for (int j = 0; j < nb; j++) {
    s[j] = j < l->n ? l->t[j]->storage : j == l->n ? r->view.storage : r->view2.storage;
    b[j] = (vkt_binding){&s[j]->alloc, 0, s[j]->alloc.size, j < p->nout || j >= l->n};
  }
  vkt_device *dev = r->view.storage->dev;
  uint32_t groups[3];
  uint64_t batch = 0;
  vkt_groups_for(dev, ((uint64_t)l->nout + l->rows - 1) / l->rows, groups);
  vkt_stream_count_ops(dev, (uint32_t)p->nnodes); /* the expression's nodes and the reduction */
  if ((st = vkt_stream_dispatch(dev, k->pipe, b, nb, w, push_size, groups, &batch)))
    return st;
  for (int j = 0; j < nb; j++)
    vkt_storage_touched(s[j], batch);
  vkt_fuse_count(k->hash, k->ops);
  vkt_fuse_finish(p);
  return VKT_OK;
}

vkt_status vkt_fuse_reduce_launch(node *r) {
  vkt_status st = r->view.storage->alloc.segment ? VKT_OK : vkt_storage_allocate(r->view.storage);
  if (!st && r->view2.storage && !r->view2.storage->alloc.segment)
    st = vkt_storage_allocate(r->view2.storage);
  bool scan = r->op >= VKT_OP_CUMSUM;
  while (!st) {
    node *e = r->in[0].storage->pending;
    if (e && e->op >= VKT_OP_SUM) { /* not elementwise: the first stage of a split reduction */
      st = vkt_fuse_compute(e->view.storage, false);
      continue;
    }
    if (!e) { /* its input is a tensor: the op's own launch */
      vkt_op_args a = args_of(r);
      return vkt_ops[r->op].launch(&vkt_ops[r->op], &a);
    }
    plan p;
    fused_layout l;
    vkt_fuse_plan_read(&p, e);
    bool fit = !p.cut && (scan ? vkt_fuse_scan_fits(&p, r) : fits(&p, r, &l));
    node *first = p.cut ? p.cut : fit ? NULL : p.nout ? p.out[0] : e; /* then fewer buffers */
    if (!first)
      return scan ? vkt_fuse_scan_launch(&p, r) : launch_fused(&p, r, &l);
    st = vkt_fuse_compute(first->view.storage, false);
  }
  return st;
}
