/* fuse_internal.h: what fuse.c shares with fuse_reduce.c: a pending node, the plan of one generated
 * kernel, and the pieces of fuse.c that plan, generate and count an expression read by another kernel. */
#ifndef VKT_FUSE_INTERNAL_H
#define VKT_FUSE_INTERNAL_H

#include "fuse.h"

#include <string.h>

enum {
  MAX_NODES = 24,   /* ops in one kernel */
  MAX_OPERANDS = 8, /* buffers it binds: results written, then tensors read */
  MAX_LEAVES = 6    /* tensors an expression reads, repeats counted */
};

typedef struct node node;
struct node {
  vkt_op_id op;
  vkt_dtype compute;
  vkt_scalar_operands scalar;
  vkt_scalar param[2];
  unsigned uses; /* bit p: the op reads param[p] (in its GLSL, or as a number operand) */
  int nin;
  vkt_tensor in[3];         /* owned references */
  vkt_tensor view;          /* the result; its storage owns this node, so the reference is not counted */
  vkt_tensor view2;         /* a second result (max/min's or cummax's indices; storage NULL: none, or dropped):
                               its storage refers to this node too, not counted, and while it lives this node
                               holds a counted reference to view's storage, so that it lives while either does */
  uint32_t dims;            /* a reduction's (fuse_reduce.c): bit d set when dim d of in[0] is reduced */
  unsigned flags;           /* a reduction's vkt_op_args.flags */
  int size, leaves, params; /* over the expression under this node, repeats counted: the limits */
  node *prev, *next;        /* the live pending nodes */
};

/* A pending reduction or scan (fuse_reduce.c, fuse_scan.c) is a node too, whose view is its output shaped like its
 * input; an expression never reads one as a value of its own: it is computed first. */
static inline bool vkt_fuse_is_reduction(vkt_op_id op) { return op >= VKT_OP_SUM && op <= VKT_OP_CUMMIN; }

typedef struct {
  vkt_dtype compute;
  node *node[MAX_NODES]; /* inputs before the nodes that read them; the root last */
  int nnodes;
  const vkt_tensor *leaf[MAX_LEAVES];
  int nleaves;
  node *out[MAX_OPERANDS]; /* the root first */
  int nout;
  node *cut;                  /* set when this pending node must be computed first */
  node *mm;                   /* a pending product read, computed in the kernel: the last leaf (fuse.c says more) */
  bool keep;                  /* ... and written too */
  const char *shader;         /* with mm: the product's shader, */
  vkt_matmul_variant variant; /* what its #defines depend on */
  uint32_t push_size;         /* and push constant bytes */
} plan;

typedef struct {
  char *text;
  size_t len, cap;
  bool full;
} text;

void vkt_fuse_add(text *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static inline bool vkt_fuse_same_view(const vkt_tensor *a, const vkt_tensor *b) {
  return a->storage == b->storage && a->dtype == b->dtype && a->ndim == b->ndim && a->offset == b->offset &&
         memcmp(a->shape, b->shape, sizeof *a->shape * (size_t)a->ndim) == 0 &&
         memcmp(a->strides, b->strides, sizeof *a->strides * (size_t)a->ndim) == 0;
}

/* Whether a reduction or scan computing in `compute` can load the values (of dtype d) of an expression computing in
 * expr: in the same GLSL type, or (reduce.glsl's A and C) one where the values are exact, so that a comparison
 * counted by sum reads what it compares (fuse_reduce.c). */
bool vkt_fuse_loads(vkt_dtype d, vkt_dtype expr, vkt_dtype compute);

/* Whether a reduction's input x reads the result `made` as it was made: the same view, or that view in another
 * shape as vkt_view makes it (a column sum's rows cut into pieces, reduce.c). */
static inline bool vkt_fuse_reads_as_made(const vkt_tensor *x, const vkt_tensor *made) {
  int64_t strides[VKT_MAX_DIMS];
  return vkt_fuse_same_view(x, made) ||
         (x->storage == made->storage && x->dtype == made->dtype && x->offset == made->offset &&
          vkt_tensor_numel(x) == vkt_tensor_numel(made) && vkt_view_strides(made, x->ndim, x->shape, strides) &&
          memcmp(strides, x->strides, sizeof *strides * (size_t)x->ndim) == 0);
}

/* The plan of the expression under root for a kernel that reads its value in its load (a reduction): a
 * node whose result is referenced from anywhere but that kernel is a result the kernel writes too. */
void vkt_fuse_plan_read(plan *p, node *root);
/* Plan p's tensors in binding order: its results, then the tensors read; returns the count. */
int vkt_fuse_operands(const plan *p, const vkt_tensor **t);
/* Memory for plan p's results that have none yet. */
vkt_status vkt_fuse_allocate(const plan *p);
/* Plan p's results now hold their values (the kernel is recorded): their nodes go, and with them every
 * intermediate only they read. */
void vkt_fuse_finish(const plan *p);
/* fused.comp's #define lines of plan p (elementwise.glsl's C, the buffers, FUSED_DECLARE, FUSED_LOAD(k),
 * FUSED_EVAL(k)) into b, the op names into ops; and the bytes its GLSL depends on into key (n of them). */
void vkt_fuse_generate(const plan *p, text *b, text *ops);
size_t vkt_fuse_key(const plan *p, unsigned char *key, size_t cap);
/* The scalars of p's nodes as the bits decode() reads, two words each (at least one slot); returns the
 * word count. */
uint32_t vkt_fuse_scalar_words(const plan *p, uint32_t *w);
/* Counts a launch of the generated kernel with this structure hash in kernel_stats(), under ops. */
void vkt_fuse_count(uint64_t hash, const char *ops);

/* fuse_reduce.c: the tensors a reduction's or scan's load binds: the expression's (vkt_fuse_operands), then r's
 * result and its indices (view2; storage NULL where none), which the load indexes alike, so they must share strides.
 * Returns the expression's count, or -1 where the indices are laid out otherwise. */
int vkt_fuse_result_operands(const plan *p, const node *r, const vkt_tensor **t);

/* fuse_reduce.c: computes pending reduction or scan r (fuse.c then forgets its node). */
vkt_status vkt_fuse_reduce_launch(node *r);

/* fuse_scan.c: whether plan p's expression can be the load of pending scan r, and r's kernels with it as their
 * load, which also write the plan's results (they then hold their values). */
bool vkt_fuse_scan_fits(const plan *p, const node *r);
vkt_status vkt_fuse_scan_launch(const plan *p, node *r);

#endif
