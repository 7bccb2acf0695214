/* linalg.c: linalg.svd's front-end (PyTorch's checks, the batch flattened, U, S and Vh as views of the
 * one block the kernel writes) and svd.comp's launch: one invocation a matrix, which suits the many small
 * matrices of matrix norms, not one large matrix. The CPU kernel is cpu/svd.c. */
#include <float.h>
#include <stdio.h>

#include "linalg.h"
#include "reduce.h"

void vkt_svd_layout_of(int64_t m, int64_t n, bool full, vkt_svd_layout *l) {
  l->m = m, l->n = n, l->k = m < n ? m : n;
  l->cu = full ? m : l->k, l->cv = full ? n : l->k;
  l->s_at = m * l->cu, l->v_at = l->s_at + l->k, l->size = l->v_at + n * l->cv;
}

static vkt_status check(const vkt_tensor *a) {
  if (a->ndim < 2)
    return vkt_fail(VKT_ERR_RUNTIME, "linalg.svd: The input tensor A must have at least 2 dimensions.");
  if (!vkt_dtypes[a->dtype].is_float)
    return vkt_fail(VKT_ERR_RUNTIME, "linalg.svd: Expected a floating point or complex tensor as input. Got %s",
                    vkt_dtypes[a->dtype].torch_name);
  if (a->dtype == VKT_FLOAT16)
    return vkt_fail(VKT_ERR_NOTIMPL, "\"linalg_svd_cpu\" not implemented for 'Half'");
  return VKT_OK;
}

/* Without singular values (an empty matrix) the kernel has nothing to do: U and V are zero-sized, or the
 * identity with full_matrices, as LAPACK's. */
static vkt_status identity_blocks(const vkt_tensor *out, const vkt_svd_layout *l, int64_t batch) {
  vkt_tensor diag = {0};
  vkt_status st = vkt_fill_(out, (vkt_scalar){false, 0, 0});
  int64_t at[2] = {0, l->v_at}, len[2] = {l->cu, l->cv};
  for (int u = 0; u < 2 && !st; u++) {
    int64_t shape[2] = {batch, len[u]}, strides[2] = {l->size, len[u] + 1};
    if (!(st = vkt_as_strided(&diag, out, 2, shape, strides, at[u])))
      st = vkt_fill_(&diag, (vkt_scalar){false, 0, 1});
    vkt_tensor_release(&diag);
  }
  return st;
}

/* The views of U, S, Vh over the block: each matrix's part at the same offset of its block. */
static vkt_status views(const vkt_tensor *a, const vkt_tensor *out, const vkt_svd_layout *l, vkt_tensor *u,
                        vkt_tensor *s, vkt_tensor *vh) {
  int nb = a->ndim - 2;
  int64_t shape[VKT_MAX_DIMS], strides[VKT_MAX_DIMS], step = l->size;
  for (int d = nb - 1; d >= 0; d--)
    shape[d] = a->shape[d], strides[d] = step, step *= a->shape[d];
  vkt_status st;
  shape[nb] = l->m, shape[nb + 1] = l->cu, strides[nb] = l->cu, strides[nb + 1] = 1;
  if ((st = vkt_as_strided(u, out, nb + 2, shape, strides, 0)))
    return st;
  shape[nb] = l->k, strides[nb] = 1;
  if ((st = vkt_as_strided(s, out, nb + 1, shape, strides, l->s_at)))
    return st;
  shape[nb] = l->cv, shape[nb + 1] = l->n, strides[nb] = 1, strides[nb + 1] = l->cv;
  return vkt_as_strided(vh, out, nb + 2, shape, strides, l->v_at);
}

vkt_status vkt_svd(const vkt_tensor *a, bool full, vkt_tensor *u, vkt_tensor *s, vkt_tensor *vh) {
  vkt_tensor dense = {0}, flat = {0}, out = {0};
  vkt_svd_layout l;
  vkt_status st = check(a);
  *u = *s = *vh = (vkt_tensor){0};
  if (st)
    return st;
  vkt_svd_layout_of(a->shape[a->ndim - 2], a->shape[a->ndim - 1], full, &l);
  int64_t batch = 1, dims[2];
  for (int d = 0; d < a->ndim - 2; d++)
    batch *= a->shape[d];
  dims[0] = batch, dims[1] = l.size;
  if ((st = vkt_tensor_empty(&out, vkt_tensor_device(a), a->dtype, 2, dims)))
    goto finish;
  if (l.k == 0 || batch == 0) {
    st = batch * l.size > 0 ? identity_blocks(&out, &l, batch) : VKT_OK;
  } else {
    int64_t shape[3] = {batch, l.m, l.n};
    if ((st = vkt_contiguous(&dense, a)) || (st = vkt_view(&flat, &dense, 3, shape)))
      goto finish;
    vkt_op_args args = {.out = &out, .in = {&flat}, .nin = 1, .iparam = {full}};
    st = vkt_op_run(VKT_OP_SVD, &args);
  }
  if (!st && (st = views(a, &out, &l, u, s, vh))) {
    vkt_tensor_release(u);
    vkt_tensor_release(s);
  }
finish:
  vkt_tensor_release(&dense);
  vkt_tensor_release(&flat);
  vkt_tensor_release(&out);
  return st;
}

/* ---- the shader path ---- */

typedef struct {
  uint32_t batch, m, n, k, cu, cv, s_at, v_at, size; /* elements */
  uint32_t a_offset, out_offset;                     /* elements */
} svd_push;
static_assert(sizeof(svd_push) == 44, "svd_push must match shaders/svd.comp");

/* The most loop iterations one invocation of svd.comp can run: every sweep rotating every pair, then the
 * norms, the sort and the completion of every column. */
static int64_t loop_iterations(const vkt_svd_layout *l) {
  int64_t r = l->m > l->n ? l->m : l->n, c = l->k, cl = l->m >= l->n ? l->cu : l->cv;
  int64_t sweep = c * (c - 1) / 2 * (2 * r + c + 1) + c;
  return VKT_SVD_MAX_SWEEPS * sweep + c * (2 * r + 2 * c) + cl * (3 * r * cl + 3 * r);
}

bool vkt_svd_supports(const vkt_op *op, const vkt_op_args *a, const char **why) {
  (void)op;
  const vkt_tensor *t[2] = {a->out, a->in[0]};
  const vkt_adapter_props *p = vkt_device_props(a->out->storage->dev);
  vkt_svd_layout l;
  vkt_svd_layout_of(a->in[0]->shape[1], a->in[0]->shape[2], a->iparam[0] != 0, &l);
  if (!vkt_operands_fit(p, a->out->dtype, 2, t, why))
    return false;
  /* llvmpipe (lavapipe) ends every loop of a shader once 65535 iterations of them all have run
   * (LP_MAX_TGSI_LOOP_ITERATIONS): a matrix that could need more (past about 8 x 8) would come back wrong */
  *why = "lavapipe stops a shader after 65535 loop iterations, which the SVD of a matrix this large can pass";
  if (p->type == VKT_ADAPTER_CPU && loop_iterations(&l) > 65535)
    return false;
  *why = "more than 2^32 elements";
  return vkt_tensor_numel(a->out) <= UINT32_MAX && vkt_tensor_numel(a->in[0]) <= UINT32_MAX;
}

vkt_status vkt_svd_launch(const vkt_op *op, const vkt_op_args *a) {
  const vkt_tensor *t[2] = {a->out, a->in[0]};
  vkt_svd_layout l;
  vkt_svd_layout_of(a->in[0]->shape[1], a->in[0]->shape[2], a->iparam[0] != 0, &l);
  svd_push push = {(uint32_t)a->in[0]->shape[0],
                   (uint32_t)l.m,
                   (uint32_t)l.n,
                   (uint32_t)l.k,
                   (uint32_t)l.cu,
                   (uint32_t)l.cv,
                   (uint32_t)l.s_at,
                   (uint32_t)l.v_at,
                   (uint32_t)l.size,
                   (uint32_t)a->in[0]->offset,
                   (uint32_t)a->out->offset};
  char defines[160];
  bool f64 = a->out->dtype == VKT_FLOAT64;
  snprintf(defines, sizeof defines, "#define T %s\n#define EPS %s\n#define MAX_SWEEPS %d\n", f64 ? "double" : "float",
           f64 ? "2.220446049250313e-16lf" : "1.1920929e-07", VKT_SVD_MAX_SWEEPS);
  return vkt_launch_flat(op->shader, defines, 2, t, 1u, &push, sizeof push, push.batch);
}
