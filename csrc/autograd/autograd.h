/* autograd.h: reverse-mode automatic differentiation, recorded in C above the operators (DESIGN.md,
 * "Autograd"). A vkt_var is a tensor with its autograd state. The entry points (vkt_ag_*) run an op and,
 * when grad mode is on and an input requires grad, record a node: edges to the inputs' nodes, the tensors
 * and numbers its backward needs. Backward functions are written with the same entry points, so with
 * create_graph the backward pass is itself recorded and differentiable. */
#ifndef VKT_AUTOGRAD_H
#define VKT_AUTOGRAD_H

#include "../ops/table.h"

typedef struct vkt_node vkt_node;
typedef struct vkt_meta vkt_meta;

/* Where a gradient goes: output nr of node (node NULL: nowhere, the input needs no gradient). */
typedef struct {
  vkt_node *node;
  int nr;
} vkt_edge;

/* A tensor and its autograd state: ag NULL is a leaf that does not require grad. Owns a reference to
 * each. Two vars sharing ag are the same tensor to autograd. */
typedef struct {
  vkt_tensor t;
  vkt_meta *ag;
} vkt_var;

/* A tensor hook: may replace *grad (an owned var). VKT_ERR_PYTHON where the hook raised. */
typedef struct vkt_hook vkt_hook;
struct vkt_hook {
  vkt_hook *next;
  int64_t id;
  vkt_status (*fn)(void *ctx, vkt_var *grad);
  void *ctx;
  void (*free)(void *ctx);
};

/* A hook on a node (Node.register_prehook / register_hook): a pre hook may replace the node's output gradients
 * grads[0..nout) before its backward runs, a post hook its input gradients ins[0..nin) after (given the output
 * gradients it ran on). Undefined vars stand for None. VKT_ERR_PYTHON where the hook raised. */
typedef struct vkt_node_hook vkt_node_hook;
struct vkt_node_hook {
  vkt_node_hook *next;
  int64_t id;
  bool post;
  vkt_status (*fn)(void *ctx, int nin, vkt_var *ins, int nout, vkt_var *grads);
  void *ctx;
  void (*free)(void *ctx);
};

struct vkt_meta {
  int refcount;
  bool requires_grad; /* leaves: the user's flag; tensors with a grad_fn always require grad */
  bool is_view;       /* made by a view of a floating tensor (recorded or not) */
  bool multi_view;    /* ... by one that makes several (split, chunk, unbind): in-place writes are refused */
  bool no_grad_view;  /* ... in no_grad mode: refuses in-place writes that record */
  bool inference_view; /* ... of those, in inference mode: refused in PyTorch's inference-mode words */
  /* (a plain view of one of those two is one too; once its base is written, its history is refused: PyTorch's
   * creation_meta) */
  bool retains_grad;  /* a non-leaf that keeps its .grad (retain_grad()) */
  vkt_edge grad_fn;   /* non-leaves: the node that made this tensor */
  vkt_node *acc;      /* leaves: their AccumulateGrad node while one exists (weak) */
  vkt_var grad;       /* .grad: t.storage NULL for None */
  vkt_hook *hooks;    /* leaves' hooks; a non-leaf's live on its grad_fn */
  vkt_hook *post_hooks; /* leaves': run after .grad took a gradient (register_post_accumulate_grad_hook) */
  void *owner;        /* the binding's object that holds this tensor (weak): AccumulateGrad.variable */
  /* A view in the graph: the tensor it views (the first of a chain of views) and that tensor's geometry (its
   * storage borrowed: the view holds the same one, and a second reference would tell the allocator and fusion
   * that someone else holds the base). Its grad_fn holds while their storage is at base_version; after a write
   * to it (through the base, this view or another) the view is the base's current value seen through its
   * geometry, and its grad_fn is made again from the base's history (vkt_view_refresh), as PyTorch regenerates
   * a view's grad_fn. */
  vkt_meta *base;
  vkt_tensor base_t;
  uint32_t base_version;
  /* A tensor whose own geometry an in-place view op (t_(), squeeze_(), as_strided_()) changed: its geometry now, which
   * its views see it with in place of their base_t (the storage field unused). */
  bool regeometried;
  vkt_tensor geometry;
};

/* The geometry view m's base has now, over the base's storage (base_t, or what an in-place view op made of it). */
static inline vkt_tensor vkt_view_base(const vkt_meta *m) {
  vkt_tensor t = m->base->regeometried ? m->base->geometry : m->base_t;
  t.storage = m->base_t.storage;
  return t;
}

/* What a node knows of each input and output: enough to make zeros, check and reduce a gradient. */
typedef struct {
  vkt_dtype dtype;
  int device;
  int ndim;
  int64_t shape[VKT_MAX_DIMS];
} vkt_shape_info;

/* Saved-tensor hooks (PyTorch's saved_tensors_hooks), the binding's. While set on a thread, a tensor a node saves
 * there goes to pack, and the node keeps the handle pack returns instead of the tensor's memory (save_on_cpu's
 * point); backward gets the tensor back from unpack (which reports what pack met). NULL: out of host memory. */
typedef struct {
  void *(*pack)(const vkt_var *v);
  vkt_status (*unpack)(void *handle, vkt_var *out);
  void (*drop)(void *handle);
} vkt_saved_hooks;
void vkt_set_saved_hooks(const vkt_saved_hooks *h); /* this thread's; NULL: none */

/* A tensor a backward needs, kept with its storage's version at save time. An output of the node itself
 * is kept without its autograd state (which points back at the node) and given it again when unpacked. Saved
 * through hooks, v keeps only the autograd state (an input's), handle the hooks' handle. */
typedef struct {
  vkt_var v;
  uint32_t version;
  bool is_output;
  int output_nr;
  void *handle;
  const vkt_saved_hooks *hooks; /* that made handle */
} vkt_saved;
/* Whether slot s holds a value (a tensor or a hooks' handle). */
static inline bool vkt_saved_present(const vkt_saved *s) { return s->v.t.storage || s->hooks; }

typedef struct vkt_bw vkt_bw;

/* One kind of node: its PyTorch name ("MulBackward0") and its backward, which reads the output gradients
 * and saved values through vkt_bw and sets the input gradients. */
typedef struct {
  const char *name;
  void (*backward)(vkt_bw *b);
} vkt_fn;

#define VKT_AG_SAVED 4

struct vkt_node {
  int refcount;
  const vkt_fn *fn;
  uint64_t seq; /* creation order: a node's inputs are older, so newest first is a topological order */
  int nin, nout;
  vkt_edge *next;           /* [nin]; the start of one block for the arrays below, */
  size_t arrays_bytes;      /* of this many bytes (a freed node keeps it for the next one) */
  vkt_shape_info *in_info;  /* [nin] */
  vkt_shape_info *out_info; /* [nout] */
  vkt_hook **pre_hooks;     /* [nout]: hooks of the non-leaf outputs */
  vkt_meta **retains;       /* [nout]: an output's meta keeping its .grad (weak) */
  vkt_saved saved[VKT_AG_SAVED];
  int nsaved;
  bool released; /* backward freed the saved values */
  bool undefined_grads; /* its backward takes an output without a gradient as undefined, not zeros */
  /* The op and its numbers, as the backward needs them. */
  int id;
  vkt_scalar s[3];
  int64_t iv[VKT_MAX_DIMS + 4];
  uint32_t dims;
  bool flag;
  void *extra; /* a node kind's own state (an autograd.Function's ctx, cat's sizes) */
  void (*extra_free)(void *extra);
  vkt_meta *leaf; /* AccumulateGrad: the leaf (strong) */
  char *trace; /* in anomaly mode: the forward's stack where the node was made (vkt_anomaly_stack) */
  vkt_node_hook *hooks; /* its own pre and post hooks, in registration order */
};

/* ---- grad mode, per thread ---- */
bool vkt_grad_enabled(void);
void vkt_set_grad_enabled(bool on);

/* ---- anomaly mode (PyTorch's detect_anomaly), for the whole process ---- */
/* On: nodes keep the forward's stack where they were made, and with check_nan a backward returning NaN raises. */
void vkt_set_anomaly(bool on, bool check_nan);
bool vkt_anomaly(bool *check_nan);
/* Set by the binding: the caller's stack as text (malloc'd), for each node made in anomaly mode. */
extern char *(*vkt_anomaly_stack)(void);
/* In anomaly mode, after a backward failed on this thread: the failing node's name and forward stack as PyTorch
 * words its warning (malloc'd, the caller's), or NULL. */
char *vkt_anomaly_report(void);

/* ---- vars ---- */
void vkt_var_release(vkt_var *v);
void vkt_var_share(vkt_var *out, const vkt_var *src); /* the same tensor: storage and autograd state */
static inline bool vkt_var_defined(const vkt_var *v) { return v && v->t.storage; }
/* Brings a view's grad_fn up to date with its base's history before any read of it: after a write since, a plain
 * view's is made again from the base's (vkt_view_refresh); one made in no_grad mode or by an op that makes several
 * is refused from then on, where its base has a history (PyTorch's error). */
vkt_status vkt_view_current(const vkt_var *v);
/* The refusal an op met while recording (an input was such a view), which it raises before returning: once. */
vkt_status vkt_ag_error(void);
/* A view requires grad where its base does (PyTorch's rule), after taking the base's history if a write since has
 * made its own stale. */
static inline bool vkt_requires_grad(const vkt_var *v) {
  const vkt_meta *m = v ? v->ag : NULL;
  if (!m)
    return false;
  if (m->base && m->base_version != v->t.storage->version)
    (void)vkt_view_current(v); /* a refused view still requires grad, as PyTorch's */
  return m->requires_grad || m->grad_fn.node || (m->base && (m->base->requires_grad || m->base->grad_fn.node));
}
static inline bool vkt_is_leaf(const vkt_var *v) { return !v->ag || !v->ag->grad_fn.node; }
/* A var's meta, made on first need. */
vkt_meta *vkt_var_meta(vkt_var *v);
void vkt_meta_decref(vkt_meta *m);
/* requires_grad = on for a leaf, with PyTorch's errors (non-leaf, non-float dtype). */
vkt_status vkt_set_requires_grad(vkt_var *v, bool on);
/* The edge a gradient of v goes along, a new reference: its grad_fn, or its leaf's AccumulateGrad (made
 * here on first need). */
vkt_edge vkt_grad_edge(const vkt_var *v);
/* Marks out (just recorded as a view of x) as a view of x's base, or of x. */
void vkt_view_track(vkt_var *out, const vkt_var *x);
/* Marks out, a view of x that recorded no node (one of several where multi), as PyTorch marks such views (graph.c). */
void vkt_view_unrecorded(vkt_var *out, const vkt_var *x, bool multi);
/* Makes a view's grad_fn again from its base's history where a write since has made it stale (views.c). */
void vkt_view_refresh(vkt_meta *m, const vkt_tensor *t);
/* After an in-place op wrote *result into view t (meta m): its base takes the write into its history
 * (PyTorch's CopySlices), and the view's grad_fn is made again from that (views.c). */
void vkt_view_write(vkt_meta *m, const vkt_tensor *t, const vkt_var *result);
/* .detach(): the same storage and view, no autograd state. */
void vkt_detach(vkt_var *out, const vkt_var *src);

/* ---- recording (the entry points' side) ---- */
/* A node of fn over inputs in[0..nin) (NULL entries are numbers), or NULL where nothing is recorded: grad
 * mode off or no input requiring grad. */
vkt_node *vkt_node_begin(const vkt_fn *fn, int nin, const vkt_var *const *in, int nout);
/* The node kind named `name` (copied) with backward, one for the life of the process (nodes keep a pointer to
 * their kind): for kinds named at run time (a view's PyTorch name, an autograd.Function's class, a form of an op
 * PyTorch names otherwise). NULL: out of host memory. */
const vkt_fn *vkt_fn_named(const char *name, void (*backward)(vkt_bw *b));
/* out's grad_fn takes the name where PyTorch names a form of an op otherwise than its row (clamp_min's
 * ClampMinBackward0, leaky_relu_'s LeakyReluBackward1), with the same backward. */
void vkt_ag_rename(vkt_var *out, const char *name);
/* out, leaky_relu's node of an in-place write (leaky_relu_, rrelu_ in evaluation), named `name`: with a negative
 * slope its backward refuses, as PyTorch's. */
void vkt_ag_leaky_relu_inplace(vkt_var *out, const char *name);
/* Makes *out output k of n (n may be NULL: then nothing). */
void vkt_node_output(vkt_node *n, int k, vkt_var *out);
/* Saves v as saved value k for the backward (is_output: v is output output_nr of n itself). */
void vkt_node_save(vkt_node *n, int k, const vkt_var *v, bool is_output, int output_nr);
/* Saves what the gradients n needs read, as PyTorch's derivatives save: in[k] in slot k and out in slot nin, where
 * need[i] has bit k (bit nin: out) for what input i's gradient reads, for each input i n needs a gradient of. */
void vkt_node_save_needed(vkt_node *n, int nin, const vkt_var *const *in, const unsigned char *need,
                          const vkt_var *out);
/* Frees what n saved (after its backward, without retain_graph). */
void vkt_node_release_saved(vkt_node *n);
void vkt_node_incref(vkt_node *n);
void vkt_node_decref(vkt_node *n);
/* A tensor hook added to v (its meta for a leaf, its grad_fn for a non-leaf); returns the hook's id. */
int64_t vkt_add_hook(vkt_var *v, vkt_hook *h);
/* A hook run after leaf v's .grad took a gradient; returns its id. */
int64_t vkt_add_post_hook(vkt_var *v, vkt_hook *h);
bool vkt_remove_hook(vkt_meta *m, vkt_node *n, int nr, int64_t id);
/* A pre or post hook added to node n; returns its id. */
int64_t vkt_node_add_hook(vkt_node *n, vkt_node_hook *h);
bool vkt_node_remove_hook(vkt_node *n, int64_t id);
void vkt_retain_grad(vkt_var *v);

/* Before an in-place write that records (grad mode on, dst or an operand requiring grad): refuses what PyTorch
 * refuses (a leaf requiring grad, a view of one, an output of split/chunk/unbind, a view made in no_grad mode).
 * The write itself bumps the storage's version (vkt_storage.version). */
vkt_status vkt_inplace_check(const vkt_var *dst, bool records);
/* Before dst is overwritten in place with the values of *result (recorded out of place): where result's
 * node saved dst itself (sin_ needs x), the node keeps a copy of it instead, with dst's history as it was,
 * as PyTorch keeps an in-place op's original self; the write would otherwise fail its backward. */
vkt_status vkt_inplace_keep_saved(const vkt_var *dst, vkt_var *result);
/* After dst was overwritten in place with the values of *result (recorded out of place): dst takes
 * result's history. */
void vkt_inplace_rebase(vkt_var *dst, vkt_var *result);
/* After an in-place view op (t_(), transpose_(), squeeze_(), unsqueeze_(), as_strided_(), resize_()) made *result, a
 * view of dst: dst takes its geometry (and its storage: resize_'s may be new) and, where it recorded, its grad_fn, as
 * PyTorch's set_history (no CopySlices: nothing was written); bump: the version too, as PyTorch's. Consumes *result. */
void vkt_inplace_view(vkt_var *dst, vkt_var *result, bool bump);

/* ---- the engine ---- */
typedef struct {
  bool keep_graph;
  bool create_graph;
  bool accumulate; /* into .grad (backward), else into captured[] (autograd.grad) */
  int ninputs;     /* 0: every leaf (backward only) */
  const vkt_var *inputs;
  vkt_var *captured; /* [ninputs], autograd.grad's results (undefined where unused) */
} vkt_backward_opts;

/* Whether the backward running on this thread (if any) is backward() into every leaf's .grad: no inputs=, not
 * autograd.grad (a reentrant checkpoint needs one). */
bool vkt_backward_plain(void);
/* Whether a backward is running on this thread. */
bool vkt_backward_running(void);
/* The backward running on this thread: an id of its own (-1 where none runs), and whether it runs node n or takes
 * autograd.grad's value from it (PyTorch's _current_graph_task_id and _will_engine_execute_node, which
 * register_multi_grad_hook asks; PyTorch's errors outside a backward, and for a leaf autograd.grad takes). */
int64_t vkt_backward_task_id(void);
vkt_status vkt_backward_will_run(const vkt_node *n, bool *out);
/* Backpropagates grads[k] (defined, or undefined for a scalar root: ones) from roots[k]. */
vkt_status vkt_backward(int n, const vkt_var *roots, const vkt_var *grads, const vkt_backward_opts *o);

/* ---- the backward functions' side ---- */
struct vkt_bw {
  vkt_node *n;
  vkt_var *grads; /* [n->nout] output gradients (zeros where none arrived) */
  vkt_var *out;   /* [n->nin] input gradients, set by the backward */
  vkt_status st;  /* the first failure; later steps do nothing */
  vkt_var *tmp[48];
  int ntmp;
};

/* ---- entry points: an op, recorded (outputs are new vars) ---- */
vkt_status vkt_ag_unary(int id, const vkt_var *x, vkt_scalar p0, vkt_scalar p1, vkt_var *out);
/* a or b may be a number (its var NULL, the number in sa / sb). */
vkt_status vkt_ag_binary(int id, const vkt_var *a, vkt_scalar sa, const vkt_var *b, vkt_scalar sb, vkt_scalar alpha,
                         vkt_var *out);
/* The same with the operands as the op takes them (a Python bool keeps its category); a and b are their
 * vars, NULL for numbers. */
vkt_status vkt_ag_binary_operands(int id, const vkt_var *a, vkt_operand x, const vkt_var *b, vkt_operand y,
                                  vkt_scalar alpha, vkt_var *out);
/* A comparison written into a (a.eq_(b)): 0 and 1 in a's dtype, recorded with zero gradients. */
vkt_status vkt_ag_compare_into(int id, const vkt_var *a, vkt_operand x, const vkt_var *b, vkt_operand y,
                               vkt_var *out);
vkt_status vkt_ag_where(const vkt_tensor *cond, const vkt_var *a, vkt_scalar sa, const vkt_var *b, vkt_scalar sb,
                        vkt_var *out);
vkt_status vkt_ag_where_operands(const vkt_tensor *cond, const vkt_var *a, vkt_operand x, const vkt_var *b,
                                 vkt_operand y, vkt_var *out);
vkt_status vkt_ag_cast(const vkt_var *x, int device, vkt_dtype dtype, vkt_memory_format fmt, bool copy, vkt_var *out);
vkt_status vkt_ag_clone(const vkt_var *x, vkt_memory_format fmt, vkt_var *out);
/* Records unary row id's node for out = id(x) that a composite computed. */
vkt_status vkt_ag_record_unary(int id, const vkt_var *x, vkt_scalar p0, vkt_scalar p1, vkt_var *out);
/* The composites of elementwise_more.c (composite.c); w is lerp's weight tensor or NULL (wo's number). */
vkt_status vkt_ag_lerp(const vkt_var *start, const vkt_var *end, const vkt_var *w, vkt_operand wo, vkt_var *out);
vkt_status vkt_ag_addcmul(const vkt_var *x, const vkt_var *t1, const vkt_var *t2, vkt_scalar value, bool div,
                          vkt_var *out);
/* clamp with tensor bounds (lo or hi NULL where not given); name: clamp_min's or clamp_max's node (two inputs), NULL
 * for clamp's (three). */
vkt_status vkt_ag_clamp_tensors(const vkt_var *x, const vkt_var *lo, const vkt_var *hi, const char *name,
                                vkt_var *out);
/* rrelu in training: x * noise, noise holding the slope drawn for each element (1 where x > 0). */
vkt_status vkt_ag_rrelu_noise(const vkt_var *x, const vkt_tensor *noise, vkt_var *out);
vkt_status vkt_ag_nan_to_num(const vkt_var *x, vkt_scalar nan, const vkt_scalar *posinf, const vkt_scalar *neginf,
                             vkt_var *out);
/* sum (VKT_OP_SUM), mean, amax, amin, prod, var over dims; logsumexp */
vkt_status vkt_ag_reduce(int id, const vkt_var *x, uint32_t dims, bool keepdim, int dtype, double correction, bool std,
                         const char *name, bool all_dims, vkt_var *out);
/* max/min along a dim: values and indices. */
vkt_status vkt_ag_reduce_indices(int id, const vkt_var *x, int dim, bool keepdim, const char *name, vkt_var *values,
                                 vkt_tensor *indices);
/* nansum (VKT_OP_SUM) and nanmean (VKT_OP_MEAN): composed of where, sum and div when recording. */
vkt_status vkt_ag_nan_reduce(int id, const vkt_var *x, uint32_t dims, bool keepdim, int dtype, const char *name,
                             bool all_dims, vkt_var *out);
/* ||x||_ord over dims (linalg.vector_norm, norm); all_dims: dim=None, for the wording of errors. */
vkt_status vkt_ag_vector_norm(const vkt_var *x, double ord, uint32_t dims, bool keepdim, int dtype, const char *name,
                              bool all_dims, vkt_var *out);
vkt_status vkt_ag_softmax(int id, const vkt_var *x, int64_t dim, int dtype, vkt_var *out);
vkt_status vkt_ag_cumsum(const vkt_var *x, int64_t dim, int dtype, vkt_var *out);
vkt_status vkt_ag_cumprod(const vkt_var *x, int64_t dim, int dtype, vkt_var *out);
/* linalg.matrix_norm with ord 'fro' (fro true), ±1 or ±inf (ord), over dims d0 and d1. */
vkt_status vkt_ag_matrix_norm(const vkt_var *x, bool fro, double ord, int64_t d0, int64_t d1, bool keepdim, int dtype,
                              vkt_var *out);
/* A value computed from all of x (median(), nanmedian(): name), taken into out and recorded so that its
 * gradient is shared evenly among the elements of x equal to it. */
vkt_status vkt_ag_evenly(const vkt_var *x, const char *name, vkt_tensor *value, vkt_var *out);
/* Products with matmul's semantics (matmul, mm, bmm, dot, mv: fn checks its own rules). */
typedef vkt_status (*vkt_product_fn)(const vkt_tensor *, const vkt_tensor *, vkt_tensor *);
vkt_status vkt_ag_product(vkt_product_fn fn, const vkt_var *a, const vkt_var *b, vkt_var *out);
vkt_status vkt_ag_matmul(const vkt_var *a, const vkt_var *b, vkt_var *out);
vkt_status vkt_ag_matmul_add_relu(const vkt_var *lhs, const vkt_var *rhs, const vkt_var *bias, vkt_var *out);
vkt_status vkt_ag_matmul_add_relu_reference(const vkt_var *lhs, const vkt_var *rhs, const vkt_var *bias, vkt_var *out);
/* x @ w^T + bias (bias may be NULL). */
vkt_status vkt_ag_linear(const vkt_var *x, const vkt_var *w, const vkt_var *bias, vkt_var *out);
/* beta * input + alpha * product(m1, m2) (summed over the batch for addbmm): fn is the fused op, run when
 * nothing records; recorded, it is composed of product, mul and add. */
typedef vkt_status (*vkt_add_product_fn)(const vkt_tensor *, const vkt_tensor *, const vkt_tensor *, vkt_scalar,
                                         vkt_scalar, vkt_tensor *);
vkt_status vkt_ag_add_product(vkt_add_product_fn fn, vkt_product_fn product, bool sum_batch, const vkt_var *input,
                              const vkt_var *m1, const vkt_var *m2, vkt_scalar beta, vkt_scalar alpha, vkt_var *out);
/* Views. view (stolen) is a view of x's storage that an op made; kind says what its backward is. */
typedef enum {
  VKT_VIEW_RESHAPE, /* the same elements in the same row-major order (view, squeeze, flatten, ...) */
  VKT_VIEW_PERMUTE, /* view dim d is x's dim perm[d] (transpose, permute, movedim, .T) */
  VKT_VIEW_EXPAND,  /* broadcast: the gradient is summed back */
  VKT_VIEW_STRIDED, /* anything else (slices, select, diagonal): backward writes into zeros through it */
} vkt_view_kind;
vkt_status vkt_ag_view(const vkt_var *x, vkt_tensor *view, vkt_view_kind kind, const int64_t *perm, const char *name,
                       vkt_var *out);
/* A strided view (slice, select, diagonal, ...) whose op made twin too, from vkt_tensor_index_space(x): recorded as
 * vkt_ag_view's STRIDED kind, but where x reaches a storage element twice (expanded), its gradient goes to the
 * positions in x that twin names, as PyTorch's slice and select backward put it, rather than shared among the elements
 * of x that share the storage (as_strided's backward, vkt_ag_view's, which only what x came from gets right). */
vkt_status vkt_ag_view_indexed(const vkt_var *x, vkt_tensor *view, const vkt_tensor *twin, const char *name,
                               vkt_var *out);
/* Whether a view of x will read its twin: x is recorded and reaches a storage element twice. Where not, the op makes
 * no twin and passes NULL (indexing and slicing run on the host for every view: the twin would double their work). */
bool vkt_ag_view_needs_twin(const vkt_var *x);
/* x.resize_(shape, memory_format=fmt) (fmt NULL: none given; vkt_resize), refused for a tensor that requires grad, as
 * PyTorch refuses it, in any grad mode; the version is bumped where the shape changes, as PyTorch's. */
vkt_status vkt_ag_resize_(vkt_var *x, int ndim, const int64_t *shape, const vkt_memory_format *fmt);
/* The in-place form (x.t_(), x.squeeze_()): x itself becomes the view, with PyTorch's refusals of an in-place op
 * (a leaf that requires grad, a view of one, ...); view is stolen. */
vkt_status vkt_ag_view_(vkt_var *x, vkt_tensor *view, vkt_view_kind kind, const int64_t *perm, const char *name);
/* reshape: a view where the strides allow, else a copy. */
vkt_status vkt_ag_reshape(const vkt_var *x, int ndim, const int64_t *shape, bool view_only, vkt_var *out);
vkt_status vkt_ag_transpose(const vkt_var *x, int64_t d0, int64_t d1, vkt_var *out);
/* The same, its node named `name` (t()'s TBackward0); and in place (transpose_(), t_(): vkt_ag_view_). */
vkt_status vkt_ag_transpose_named(const vkt_var *x, int64_t d0, int64_t d1, const char *name, vkt_var *out);
vkt_status vkt_ag_transpose_(vkt_var *x, int64_t d0, int64_t d1, const char *name);
vkt_status vkt_ag_expand(const vkt_var *x, int ndim, const int64_t *shape, vkt_var *out);
/* gather along dim, and its adjoint: zeros of shape with src added at index along dim. */
vkt_status vkt_ag_gather(const vkt_var *x, int64_t dim, const vkt_tensor *index, vkt_var *out);
/* values (stolen) that an op picked from x along dim at indices (dropped: the op dropped dim), recorded so
 * the gradient goes back to those positions (sort, topk, kthvalue, median, mode, cummax, cummin). */
vkt_status vkt_ag_selected(const vkt_var *x, int64_t dim, bool dropped, vkt_tensor *values, const vkt_tensor *indices,
                           const char *name, vkt_var *out);
vkt_status vkt_ag_scatter_add_zeros(const vkt_var *src, int64_t dim, const vkt_tensor *index, int ndim,
                                    const int64_t *shape, vkt_var *out);
/* sum x back to shape (the engine's reduction of broadcast gradients). */
vkt_status vkt_ag_sum_to(const vkt_var *x, int ndim, const int64_t *shape, vkt_var *out);

#endif
