/* scan.c: the scan family's front-end (result dtypes, PyTorch's dims) and its shader path, scan.comp:
 * short rows take an invocation each; long ones are cut into blocks of SCAN_BLOCK elements, whose totals
 * (one workgroup a block) are scanned in turn by this same path, and then every block is scanned from the
 * total of the blocks before it. */
#include <stdio.h>

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
  int device = vkt_tensor_device(x);
  *out = (vkt_tensor){0};
  if (indices)
    *indices = (vkt_tensor){0};
  if ((st = vkt_tensor_empty(out, device, result, x->ndim, x->shape)) ||
      (has_indices(id) && (st = vkt_tensor_empty(indices, device, VKT_INT64, x->ndim, x->shape))))
    goto finish;
  vkt_op_args args = {.out = out,
                      .out2 = has_indices(id) ? indices : NULL,
                      .in = {x},
                      .nin = 1,
                      .compute = vkt_natural_compute(result),
                      .dims = x->ndim ? 1u << d : 0};
  if (vkt_tensor_numel(x) > 0)
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

typedef enum { SCAN_PER_THREAD, SCAN_REDUCE, SCAN_SCAN } scan_mode;

typedef struct {
  uint32_t nout, n, nblocks, krank;
  uint32_t in_offset, out_offset, idx_offset; /* elements */
  uint32_t rstride_in, rstride_out;           /* elements */
  uint32_t kshape[SCAN_MAX_RANK], kstride[2 * SCAN_MAX_RANK];
} scan_push;
static_assert(sizeof(scan_push) == 84, "scan_push must match shaders/scan.comp");

/* One pass: out (and idx) from in (and in_idx, the positions behind an aux tensor of totals), seeded
 * by the scanned block totals seed (and seed_idx) where given. */
typedef struct {
  const vkt_tensor *out, *idx, *in, *in_idx, *seed, *seed_idx;
  vkt_dtype compute;
  uint32_t dims;
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
 * (the block, with a word of skew every 32, and the subgroups' totals fit the 16 KiB every adapter has). */
static bool subgroup_scan(const scan_job *j) {
  const vkt_adapter_props *p = vkt_device_props(j->out->storage->dev);
  return !j->idx && j->compute == VKT_FLOAT32 && p->subgroup_arithmetic;
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

static vkt_status dispatch(const vkt_op *op, const scan_job *j, scan_mode mode, const vkt_reduce_layout *l,
                           uint32_t nblocks) {
  static const char *const modes[] = {"#define PER_THREAD\n", "#define BLOCK_REDUCE\n", "#define BLOCK_SCAN\n"};
  const vkt_tensor *t[6] = {j->out, j->in};
  int n = 2, b_idx = 0, b_iidx = 0, b_seed = 0, b_sidx = 0;
  if (j->idx)
    b_idx = n, t[n++] = j->idx;
  if (j->in_idx)
    b_iidx = n, t[n++] = j->in_idx;
  if (j->seed)
    b_seed = n, t[n++] = j->seed;
  if (j->seed && j->seed_idx)
    b_sidx = n, t[n++] = j->seed_idx;
  char defines[1024];
  int len = vkt_type_defines(defines, sizeof defines, "TO", j->out->dtype);
  len += vkt_type_defines(defines + len, sizeof defines - (size_t)len, "TI", j->in->dtype);
  len += vkt_type_defines(defines + len, sizeof defines - (size_t)len, "C", j->compute);
  len += vkt_conversion_defines(defines + len, sizeof defines - (size_t)len, j->in->dtype, j->out->dtype, j->compute);
  snprintf(defines + len, sizeof defines - (size_t)len,
           "%s%s#define B_IDX %d\n#define B_IIDX %d\n#define B_SEED %d\n#define B_SIDX %d\n#define IDX_T %s\n%s%s%s%s",
           op->define, modes[mode], b_idx, b_iidx, b_seed, b_sidx,
           j->idx && j->idx->dtype == VKT_INT64 ? "int64_t" : "uint", j->idx ? "#define INDICES\n" : "",
           j->in_idx ? "#define IN_INDICES\n" : "", j->seed ? "#define SEED\n" : "",
           subgroup_scan(j) ? "#define SUBGROUP_SCAN\n" : "");
  scan_push push = push_of(j, l, nblocks);
  vkt_device *dev = j->out->storage->dev;
  vkt_pipeline *pipe;
  vkt_status st = vkt_pipeline_get(dev, op->shader, defines, n, sizeof push, &pipe);
  if (st)
    return st;
  vkt_binding b[6];
  for (int k = 0; k < n; k++)
    b[k] = (vkt_binding){&t[k]->storage->alloc, 0, t[k]->storage->alloc.size, k == 0 || t[k] == j->idx};
  uint32_t groups[3];
  uint64_t batch = 0;
  vkt_groups_for(dev, mode == SCAN_PER_THREAD ? (push.nout + 255) / 256 : (uint64_t)push.nout * nblocks, groups);
  if ((st = vkt_stream_dispatch(dev, pipe, b, n, &push, sizeof push, groups, &batch)))
    return st;
  for (int k = 0; k < n; k++)
    vkt_storage_touched(t[k]->storage, batch);
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
  scan_job totals = {&tot, j->idx ? &tot_idx : NULL, j->in, j->in_idx, NULL, NULL, j->compute, j->dims};
  scan_job prefix = {&pre, j->idx ? &pre_idx : NULL, &tot, j->idx ? &tot_idx : NULL, NULL, NULL, j->compute, 2u};
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
  scan_job j = {a->out, a->out2, a->in[0], NULL, NULL, NULL, a->compute, a->dims};
  return scan(op, &j);
}
