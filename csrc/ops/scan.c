/* scan.c: the scan family's front-end (result dtypes, PyTorch's dims) and its shader path, scan.comp:
 * short rows take an invocation each; long ones are cut into blocks of SCAN_BLOCK elements, whose totals
 * (one workgroup a block) are scanned in turn by this same path, and then every block is scanned from the
 * total of the blocks before it. A pending expression it reads is computed in the passes' loads instead
 * (fuse_scan.c). */
#include <stdio.h>
#include <string.h>

#include "fuse.h"
#include "reduce.h"
#include "scan.h"

/* ---- the front-end ---- */

static bool has_indices(int id) { return id == VKT_OP_CUMMAX || id == VKT_OP_CUMMIN; }

vkt_status vkt_scan(int id, const vkt_tensor *x, int64_t dim, int dtype, vkt_tensor *out, vkt_tensor *indices) {
  int d;
  vkt_status st = vkt_dim_wrap(dim, x->ndim ? x->ndim : 1, &d);
  if (st)
    return st;
  vkt_dtype result = x->dtype;
  if (dtype >= 0)
    result = (vkt_dtype)dtype;
  else if (!has_indices(id) && !vkt_dtypes[x->dtype].is_float)
    result = VKT_INT64; /* PyTorch's integer cumsum and cumprod */
  if (vkt_tensor_numel(x) > 0 && (st = vkt_op_check_dtype(&vkt_ops[id], result))) /* an empty input runs no kernel */
    return st;
  int device = vkt_tensor_device(x);
  vkt_dtype compute = vkt_natural_compute(result);
  /* a pending expression it reads is computed in its load (fuse.h) */
  bool defer = vkt_tensor_numel(x) > 0 && vkt_fuse_reduce_wanted(id, x, &compute);
  vkt_status (*empty)(vkt_tensor *, int, vkt_dtype, int, const int64_t *) =
      defer ? vkt_tensor_empty_lazy : vkt_tensor_empty;
  *out = (vkt_tensor){0};
  if (indices)
    *indices = (vkt_tensor){0};
  if ((st = empty(out, device, result, x->ndim, x->shape)) ||
      (has_indices(id) && (st = empty(indices, device, VKT_INT64, x->ndim, x->shape))))
    goto finish;
  vkt_op_args args = {.out = out,
                      .out2 = has_indices(id) ? indices : NULL,
                      .in = {x},
                      .nin = 1,
                      .compute = compute,
                      .dims = x->ndim ? 1u << d : 0};
  if (defer)
    st = vkt_fuse_run_or_defer(id, &args);
  else if (vkt_tensor_numel(x) > 0)
    st = vkt_op_run(id, &args);
finish:
  if (st) {
    vkt_tensor_release(out);
    if (indices)
      vkt_tensor_release(indices);
  }
  return st;
}

/* ---- the shader path ---- */

#define SCAN_MAX_RANK 4
#define SCAN_BLOCK 2048       /* elements a workgroup scans: scan.comp's ITEMS * LOCAL_SIZE */
#define SCAN_SHORT_ROW 64     /* rows up to this long take an invocation each */
#define SCAN_APART_ROWS 16384 /* ... and any row of as many rows lying side by side (a column scan) */
#define SCAN_OWN_DEFINES 1024 /* bytes of a pass's own #define lines, after a load's */

typedef enum { SCAN_PER_THREAD, SCAN_REDUCE, SCAN_SCAN } scan_mode;

typedef struct {
  uint32_t nout, n, nblocks, krank;
  uint32_t in_offset, out_offset, idx_offset; /* elements */
  uint32_t rstride_in, rstride_out;           /* elements */
  uint32_t kshape[SCAN_MAX_RANK], kstride[2 * SCAN_MAX_RANK];
} scan_push;
static_assert(sizeof(scan_push) == 84, "scan_push must match shaders/scan.comp");

/* One pass: out (and idx) from in (and in_idx, the positions behind an aux tensor of totals), seeded
 * by the scanned block totals seed (and seed_idx) where given; with load, in is a pending expression's value
 * (for the layout only), computed by load. */
typedef struct {
  const vkt_tensor *out, *idx, *in, *in_idx, *seed, *seed_idx;
  vkt_dtype compute;
  uint32_t dims;
  vkt_scan_load *load;
} scan_job;

static void layout_of(const scan_job *j, vkt_reduce_layout *l) {
  vkt_op_args a = {.out = j->out, .in = {j->in}, .nin = 1, .dims = j->dims};
  vkt_reduce_layout_of(&a, l);
}

bool vkt_scan_supports(const vkt_op *op, const vkt_op_args *a, const char **why) {
  (void)op;
  const vkt_tensor *t[3] = {a->out, a->in[0], a->out2};
  if (!vkt_operands_fit(vkt_device_props(a->out->storage->dev), a->compute, a->out2 ? 3 : 2, t, why))
    return false;
  scan_job j = {.out = a->out, .in = a->in[0], .dims = a->dims};
  vkt_reduce_layout l;
  layout_of(&j, &l);
  *why = "more than 4 dimensions that cannot be merged";
  if (l.krank > SCAN_MAX_RANK)
    return false;
  *why = "more than 2^32 elements";
  return (uint64_t)l.nout * (uint64_t)l.nred <= UINT32_MAX - SCAN_BLOCK;
}

/* float32 sums and products take scan.comp's SUBGROUP_SCAN blocks where the adapter has subgroup arithmetic
 * (the block, with a word of skew every 32, and the subgroups' totals fit the 16 KiB every adapter has); not
 * cummax and cummin, even where their indices are not wanted (a pending one's dropped). */
static bool subgroup_scan(const vkt_op *op, const scan_job *j) {
  const vkt_adapter_props *p = vkt_device_props(j->out->storage->dev);
  bool sum_or_prod = op == &vkt_ops[VKT_OP_CUMSUM] || op == &vkt_ops[VKT_OP_CUMPROD];
  return sum_or_prod && !j->idx && j->compute == VKT_FLOAT32 && p->subgroup_arithmetic;
}

static scan_push push_of(const scan_job *j, const vkt_reduce_layout *l, uint32_t nblocks) {
  scan_push p = {.nout = (uint32_t)l->nout,
                 .n = (uint32_t)l->nred,
                 .nblocks = nblocks,
                 .krank = (uint32_t)l->krank,
                 .in_offset = (uint32_t)j->in->offset,
                 .out_offset = (uint32_t)j->out->offset,
                 .idx_offset = j->idx ? (uint32_t)j->idx->offset : 0,
                 .rstride_in = l->rrank ? (uint32_t)l->rstride[0] : 0,
                 .rstride_out = l->rrank ? (uint32_t)l->rstride[VKT_MAX_DIMS] : 0};
  for (int d = 0; d < l->krank; d++) {
    p.kshape[d] = (uint32_t)l->kshape[d];
    p.kstride[d] = (uint32_t)l->kstride[d];
    p.kstride[SCAN_MAX_RANK + d] = (uint32_t)l->kstride[VKT_MAX_DIMS + d];
  }
  return p;
}

/* A pass's push constants into w: scan_push, or with a load scan_fused.glsl's (the load's head, scan.comp's own,
 * the load's tail). Returns the bytes. */
static uint32_t push_words(const scan_job *j, const vkt_reduce_layout *l, uint32_t nblocks, uint32_t *w) {
  const vkt_scan_load *f = j->load;
  if (!f) {
    scan_push push = push_of(j, l, nblocks);
    memcpy(w, &push, sizeof push);
    return sizeof push;
  }
  uint32_t n = f->nhead;
  memcpy(w, f->head, sizeof *w * n);
  w[n++] = (uint32_t)l->nout, w[n++] = (uint32_t)l->nred, w[n++] = nblocks;
  w[n++] = (uint32_t)j->out->offset, w[n++] = j->idx ? (uint32_t)j->idx->offset : 0;
  memcpy(w + n, f->tail, sizeof *w * f->ntail);
  return 4 * (n + f->ntail);
}

/* The tensors a pass binds, in binding order: with a load the expression's (its results first), then the output,
 * the input (without a load), and those of idx, in_idx, seed and seed_idx there are, whose binding numbers go to
 * at[0..3] (0: none). Returns the count. */
static int bound(const scan_job *j, const vkt_tensor **t, int *at) {
  const vkt_tensor *more[4] = {j->idx, j->in_idx, j->seed, j->seed ? j->seed_idx : NULL};
  int n = 0;
  for (; j->load && n < j->load->n; n++)
    t[n] = j->load->t[n];
  t[n++] = j->out;
  if (!j->load)
    t[n++] = j->in;
  for (int k = 0; k < 4; k++) {
    at[k] = more[k] ? n : 0;
    if (more[k])
      t[n++] = more[k];
  }
  return n;
}

/* A pass's #define lines; with a load its expression's first (C's among them), then the scan's own type, A. */
static vkt_status defines_of(const vkt_op *op, const scan_job *j, scan_mode mode, const int *at, char *buf,
                             size_t cap) {
  static const char *const modes[] = {"#define PER_THREAD\n", "#define BLOCK_REDUCE\n", "#define BLOCK_SCAN\n"};
  int len = j->load ? snprintf(buf, cap, "%s", j->load->defines) : 0;
  if ((size_t)len + SCAN_OWN_DEFINES > cap)
    return vkt_fail(VKT_ERR_RUNTIME, "a fused scan's source is longer than %zu bytes", cap - SCAN_OWN_DEFINES);
  len += vkt_type_defines(buf + len, cap - (size_t)len, "TO", j->out->dtype);
  if (!j->load) {
    len += vkt_type_defines(buf + len, cap - (size_t)len, "TI", j->in->dtype);
    len += vkt_type_defines(buf + len, cap - (size_t)len, "C", j->compute);
  }
  len += vkt_type_defines(buf + len, cap - (size_t)len, "A", j->compute);
  len += vkt_conversion_defines(buf + len, cap - (size_t)len, "A", j->in->dtype, j->out->dtype, j->compute);
  snprintf(buf + len, cap - (size_t)len,
           "%s%s#define B_IDX %d\n#define B_IIDX %d\n#define B_SEED %d\n#define B_SIDX %d\n#define IDX_T %s\n%s%s%s%s",
           op->define, modes[mode], at[0], at[1], at[2], at[3],
           j->idx && j->idx->dtype == VKT_INT64 ? "int64_t" : "uint", j->idx ? "#define INDICES\n" : "",
           j->in_idx ? "#define IN_INDICES\n" : "", j->seed ? "#define SEED\n" : "",
           subgroup_scan(op, j) ? "#define SUBGROUP_SCAN\n" : "");
  return VKT_OK;
}

static vkt_status dispatch(const vkt_op *op, const scan_job *j, scan_mode mode, const vkt_reduce_layout *l,
                           uint32_t nblocks) {
  const vkt_tensor *t[VKT_MAX_BOUND + 6];
  int at[4], n = bound(j, t, at), nwritten = j->load ? j->load->nwritten : 0;
  char defines[VKT_SCAN_LOAD_DEFINES + SCAN_OWN_DEFINES];
  uint32_t w[128], push_size = push_words(j, l, nblocks, w);
  vkt_device *dev = j->out->storage->dev;
  vkt_pipeline *pipe;
  vkt_status st = defines_of(op, j, mode, at, defines, sizeof defines);
  if (st || (st = vkt_pipeline_get(dev, op->shader, defines, n, push_size, &pipe)))
    return st;
  vkt_binding b[VKT_MAX_BOUND + 6];
  for (int k = 0; k < n; k++)
    b[k] = (vkt_binding){&t[k]->storage->alloc, 0, t[k]->storage->alloc.size,
                         k < nwritten || t[k] == j->out || t[k] == j->idx};
  uint32_t groups[3];
  uint64_t batch = 0, nout = (uint64_t)l->nout;
  vkt_groups_for(dev, mode == SCAN_PER_THREAD ? (nout + 255) / 256 : nout * nblocks, groups);
  if ((st = vkt_stream_dispatch(dev, pipe, b, n, w, push_size, groups, &batch)))
    return st;
  for (int k = 0; k < n; k++)
    vkt_storage_touched(t[k]->storage, batch);
  if (j->load)
    j->load->launches++;
  return VKT_OK;
}

/* Scans j: directly where rows are short or one block long, else blocks' totals, their scan, and the
 * blocks' scans from them. */
static vkt_status scan(const vkt_op *op, const scan_job *j) {
  vkt_reduce_layout l;
  layout_of(j, &l);
  bool apart = l.rrank && l.rstride[0] != 1 && l.nout >= SCAN_APART_ROWS;
  if (l.nred <= SCAN_SHORT_ROW || apart)
    return dispatch(op, j, SCAN_PER_THREAD, &l, 1);
  uint32_t nblocks = (uint32_t)((l.nred + SCAN_BLOCK - 1) / SCAN_BLOCK);
  if (nblocks == 1)
    return dispatch(op, j, SCAN_SCAN, &l, 1);
  vkt_tensor tot = {0}, tot_idx = {0}, pre = {0}, pre_idx = {0};
  int64_t shape[2] = {l.nout, nblocks};
  int dev = vkt_tensor_device(j->out);
  vkt_status st;
  if ((st = vkt_tensor_empty(&tot, dev, j->compute, 2, shape)) ||
      (st = vkt_tensor_empty(&pre, dev, j->compute, 2, shape)) ||
      (j->idx && ((st = vkt_tensor_empty(&tot_idx, dev, VKT_INT32, 2, shape)) ||
                  (st = vkt_tensor_empty(&pre_idx, dev, VKT_INT32, 2, shape)))))
    goto finish;
  scan_job totals = {&tot, j->idx ? &tot_idx : NULL, j->in, j->in_idx, NULL, NULL, j->compute, j->dims, j->load};
  scan_job prefix = {&pre, j->idx ? &pre_idx : NULL, &tot, j->idx ? &tot_idx : NULL, NULL, NULL, j->compute, 2u, NULL};
  scan_job blocks = *j;
  blocks.seed = &pre, blocks.seed_idx = j->idx ? &pre_idx : NULL;
  if (!(st = dispatch(op, &totals, SCAN_REDUCE, &l, nblocks)) && !(st = scan(op, &prefix)))
    st = dispatch(op, &blocks, SCAN_SCAN, &l, nblocks);
finish:
  vkt_tensor_release(&tot);
  vkt_tensor_release(&tot_idx);
  vkt_tensor_release(&pre);
  vkt_tensor_release(&pre_idx);
  return st;
}

vkt_status vkt_scan_launch(const vkt_op *op, const vkt_op_args *a) {
  scan_job j = {a->out, a->out2, a->in[0], NULL, NULL, NULL, a->compute, a->dims, NULL};
  return scan(op, &j);
}

vkt_status vkt_scan_launch_fused(const vkt_op *op, const vkt_op_args *a, vkt_scan_load *load) {
  scan_job j = {a->out, a->out2, a->in[0], NULL, NULL, NULL, a->compute, a->dims, load};
  return scan(op, &j);
}
