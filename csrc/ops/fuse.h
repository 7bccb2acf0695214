/* fuse.h: automatic fusion (DESIGN.md, "Fusion"). On a Vulkan device an elementwise op whose shader
 * can run it does not dispatch: its result's storage holds a pending expression over the op's inputs,
 * which may be pending themselves, and no memory. When anything needs the value (GPU work that reads or
 * writes the storage, a host read, synchronize) the whole pending expression under it becomes one
 * generated kernel (shaders/fused.comp), which also writes every pending intermediate still referenced
 * elsewhere; the others are never written nor allocated. */
#ifndef VKT_FUSE_H
#define VKT_FUSE_H

#include "table.h"

/* VKT_FUSION=0 at start-up, or vkt.vulkan.set_fusion(False), turns deferral off (pending results are
 * computed first). */
bool vkt_fuse_enabled(void);
vkt_status vkt_fuse_set_enabled(bool on);

/* Makes a->out, a lazy tensor (vkt_tensor_empty_lazy) whose op the shader supports, the pending result
 * of op id over a's inputs. */
vkt_status vkt_fuse_defer(vkt_op_id id, const vkt_op_args *a);

/* The same where op id's shader can run it; else a->out's memory is taken now and the op runs. */
vkt_status vkt_fuse_run_or_defer(vkt_op_id id, const vkt_op_args *a);

/* A product (VKT_OP_MATMUL's args, a->out lazy, no bias) on a Vulkan device, its pending inputs computed:
 * pending where its tile's shader takes a fused epilogue (fuse.c says how elementwise ops on its result
 * then run in its kernel), else run now. */
vkt_status vkt_fuse_defer_matmul(const vkt_op_args *a);

/* An in-place op whose output a->out is all of a pending result (its own view) becomes that storage's
 * pending value, reading the old one from a new storage: `y.mul_(2).add_(1)` stays one expression.
 * *deferred is false (and nothing changed) where it cannot: the op then runs as usual. */
vkt_status vkt_fuse_defer_into(vkt_op_id id, const vkt_op_args *a, bool *deferred);

/* Whether reduction id (computing in *compute) of x should be pending, to compute x's pending expression in
 * its load (fuse_reduce.c): sum, mean, amax, amin (max/min along a dim too), argmax, argmin, var/std, prod,
 * logsumexp, softmax of all of an expression's value, computed in its type; all and any, which then compute in
 * the expression's type (set in *compute); and the scans cumsum, cumprod, cummax, cummin (fuse_scan.c).
 * vkt_fuse_run_or_defer then makes a->out (a lazy tensor shaped like x), and a->out2 where there are indices
 * (lazy too), the pending results, or runs the op now where its shader cannot. */
bool vkt_fuse_reduce_wanted(int id, const vkt_tensor *x, vkt_dtype *compute);

/* Computes what GPU or host work on storage s needs first: s's own pending value, and before a write,
 * every pending expression that reads s. */
vkt_status vkt_fuse_compute(vkt_storage *s, bool write);
static inline vkt_status vkt_fuse_ready(vkt_storage *s, bool write) {
  return s->pending || (write && s->readers) ? vkt_fuse_compute(s, write) : VKT_OK;
}
/* Computes every pending expression (synchronize, flush). */
vkt_status vkt_fuse_flush(void);
/* Whether a fused kernel is being made: waits then keep the GIL, so no other thread sees it half made. */
bool vkt_fuse_busy(void);

/* kernel_stats(): fused launches, and each fused kernel's op list with its launch count. */
typedef struct {
  const char *ops; /* "mul add relu" */
  uint64_t launches;
} vkt_fuse_kernel_stat;
uint64_t vkt_fuse_launches(void);
int vkt_fuse_kernel_count(void);
const vkt_fuse_kernel_stat *vkt_fuse_kernel(int i);
void vkt_fuse_reset_stats(void);

#endif
