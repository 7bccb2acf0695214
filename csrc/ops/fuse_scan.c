/* fuse_scan.c: a scan (cumsum, cumprod, cummax, cummin) whose input is a pending elementwise expression computes
 * the expression in its load (scan.comp with shaders/scan_fused.glsl), as fuse_reduce.c's reductions do: it is a
 * pending node until its value is needed (fuse_reduce.c computes it), then this file lays out the expression's
 * tensors along the scan's rows and scan.c runs its usual passes, those that read the row computing the
 * expression. Each element's value and the order a row combines them in are the unfused path's. A long row is
 * read twice (its blocks' totals, then their scans): the intermediates referenced elsewhere are written by the
 * second read, as fused.comp would write them. */
#include <stdio.h>
#include <stdlib.h>

#include "fuse_internal.h"
#include "reduce.h"
#include "scan.h"

enum {
  SCAN_RANK = 4,      /* scan_fused.glsl's KRANK at most */
  MAX_TAIL = 64,      /* words: NOPS offsets, NOPS + 1 strides along the row, then 4 + 4 * (NOPS + 1) kept */
  MAX_HEAD = 16,      /* words: 8 scalars */
  SCAN_OWN_WORDS = 5  /* nout, n, nblocks, out_offset, idx_offset */
};

/* The expression's tensors (t: the results it writes, then those it reads) seen in the shape of the scan's input,
 * and the tail of the push constants: each tensor's offset, each one's and the output's stride along the row,
 * and the rows' dims (the others) of the tensors and the output, merged. */
typedef struct {
  const vkt_tensor *t[MAX_OPERANDS];
  int n, krank;
  uint32_t tail[MAX_TAIL];
  uint32_t ntail;
} scan_layout;

static bool layout_of(const plan *p, const node *r, scan_layout *l) {
  const vkt_tensor *x = &r->in[0];
  bool reshaped = !vkt_fuse_same_view(x, &p->node[p->nnodes - 1]->view);
  int along = x->ndim ? __builtin_ctz(r->dims) : -1; /* the scanned dim */
  vkt_tensor rows[MAX_OPERANDS + 1];
  const vkt_tensor *rt[MAX_OPERANDS + 1];
  int64_t step[MAX_OPERANDS + 1], strides[VKT_MAX_DIMS];
  l->n = vkt_fuse_operands(p, l->t);
  for (int k = 0; k <= l->n; k++) { /* the output last */
    const vkt_tensor *t = k < l->n ? l->t[k] : &r->view;
    if (k == l->n || !reshaped)
      memcpy(strides, t->strides, sizeof *strides * (size_t)x->ndim);
    else if (!vkt_view_strides(t, x->ndim, x->shape, strides))
      return false;
    rows[k].ndim = 0;
    for (int d = 0; d < x->ndim; d++)
      if (d != along) {
        rows[k].shape[rows[k].ndim] = x->shape[d];
        rows[k].strides[rows[k].ndim++] = strides[d];
      }
    step[k] = along >= 0 ? strides[along] : 0;
    rt[k] = &rows[k];
  }
  int64_t shape[VKT_MAX_DIMS], kstride[(MAX_OPERANDS + 1) * VKT_MAX_DIMS];
  l->krank = vkt_merge_dims(l->n + 1, rt, shape, kstride);
  if (l->krank > SCAN_RANK)
    return false;
  uint32_t n = 0;
  for (int k = 0; k < l->n; k++)
    l->tail[n++] = (uint32_t)l->t[k]->offset;
  for (int k = 0; k <= l->n; k++)
    l->tail[n++] = (uint32_t)step[k];
  for (int d = 0; d < l->krank; d++)
    l->tail[n++] = (uint32_t)shape[d];
  for (int k = 0; k <= l->n; k++)
    for (int d = 0; d < l->krank; d++)
      l->tail[n++] = (uint32_t)kstride[k * VKT_MAX_DIMS + d];
  l->ntail = n;
  return true;
}

bool vkt_fuse_scan_fits(const plan *p, const node *r) {
  const node *root = p->node[p->nnodes - 1];
  bool indices = r->view2.storage != NULL;
  const vkt_tensor *t[MAX_OPERANDS + 2];
  int n;
  if (!vkt_fuse_loads(r->in[0].dtype, p->compute, r->compute) || !vkt_fuse_reads_as_made(&r->in[0], &root->view) ||
      (n = vkt_fuse_result_operands(p, r, t)) < 0)
    return false;
  const vkt_adapter_props *props = vkt_device_props(r->view.storage->dev);
  const char *why;
  /* bound past the expression's tensors, at most: the output, the indices, and the block totals (and their
   * positions) that a long row's blocks start from */
  if (n + 2 + 2 * indices > MAX_OPERANDS || !vkt_operands_fit(props, r->compute, n + 1 + indices, t, &why))
    return false;
  scan_layout l;
  uint32_t head[MAX_HEAD];
  return layout_of(p, r, &l) && 4 * (vkt_fuse_scalar_words(p, head) + SCAN_OWN_WORDS + l.ntail) <=
                                    props->max_push_constants;
}

vkt_status vkt_fuse_scan_launch(const plan *p, node *r) {
  char buf[VKT_SCAN_LOAD_DEFINES], ops[512];
  text b = {buf, 0, sizeof buf, false}, names = {ops, 0, sizeof ops, false};
  scan_layout l;
  uint32_t head[MAX_HEAD];
  if (!layout_of(p, r, &l))
    return vkt_fail(VKT_ERR_RUNTIME, "a fused scan's layout changed after it was planned");
  vkt_fuse_generate(p, &b, &names);
  vkt_fuse_add(&names, " %s", vkt_ops[r->op].name);
  vkt_fuse_add(&b, "#define FUSED\n#define KRANK %d\n#define FUSED_VALUE v%d\n", l.krank, p->nnodes - 1);
  if (b.full || names.full)
    return vkt_fail(VKT_ERR_RUNTIME, "a fused scan's source is longer than %zu bytes", sizeof buf);
  const char *debug = getenv("VKT_FUSION_DEBUG");
  if (debug && strcmp(debug, "1") == 0)
    fprintf(stderr, "vkt: fused kernel: %s\n%s\n", ops, buf);
  vkt_scan_load load = {.defines = buf, .t = l.t, .n = l.n, .nwritten = p->nout, .head = head, .tail = l.tail,
                        .nhead = vkt_fuse_scalar_words(p, head), .ntail = l.ntail};
  vkt_op_args a = {.out = &r->view,
                   .out2 = r->view2.storage ? &r->view2 : NULL,
                   .in = {&r->in[0]},
                   .nin = 1,
                   .compute = r->compute,
                   .dims = r->dims};
  vkt_status st = vkt_fuse_allocate(p);
  if (st)
    return st;
  vkt_stream_count_ops(r->view.storage->dev, (uint32_t)p->nnodes); /* the expression's nodes and the scan */
  st = vkt_scan_launch_fused(&vkt_ops[r->op], &a, &load);
  uint64_t hash = vkt_fnv1a(ops, strlen(ops), vkt_fnv1a(buf, b.len, VKT_FNV_SEED));
  for (int k = 0; k < load.launches; k++)
    vkt_fuse_count(hash, ops);
  if (!st)
    vkt_fuse_finish(p);
  return st;
}
