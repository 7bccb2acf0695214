/* decompose.c: linalg.qr's and linalg.eigh's front-ends (PyTorch's checks, the batch flattened, the results as
 * views of or copies from the one block the kernel writes) and the launches of qr.comp and eigh.comp: one
 * invocation a matrix, which suits the many small matrices of a batch, not one large matrix. The CPU kernels
 * are cpu/decompose.c. */
#include <stdio.h>

#include "linalg.h"
#include "reduce.h"
#include "shape.h"

/* PyTorch's checks: qr says a non-float dtype is wrong, eigh that its kernel lacks it (eigh: any_dtype). */
static vkt_status check(const vkt_tensor *a, const char *name, const char *kernel, bool any_dtype) {
  if (a->ndim < 2)
    return vkt_fail(VKT_ERR_RUNTIME, "%s: The input tensor A must have at least 2 dimensions.", name);
  if (a->dtype == VKT_FLOAT16 || (any_dtype && !vkt_dtypes[a->dtype].is_float))
    return vkt_fail(VKT_ERR_NOTIMPL, "\"%s\" not implemented for '%s'", kernel, vkt_dtypes[a->dtype].torch_name);
  if (!vkt_dtypes[a->dtype].is_float)
    return vkt_fail(VKT_ERR_RUNTIME, "%s: Expected a floating point or complex tensor as input. Got %s", name,
                    vkt_dtypes[a->dtype].torch_name);
  return VKT_OK;
}

/* The kernel's blocks ([batch, size]) for a, its batch flattened; size of an m x n matrix; a copy of a's
 * data only where the kernel has something to do. */
static vkt_status run_blocks(const vkt_tensor *a, vkt_op_id id, int64_t size, int64_t iparam, vkt_tensor *out) {
  vkt_tensor dense = {0}, flat = {0};
  int64_t m = a->shape[a->ndim - 2], n = a->shape[a->ndim - 1], shape[3] = {1, m, n};
  for (int d = 0; d < a->ndim - 2; d++)
    shape[0] *= a->shape[d];
  int64_t dims[2] = {shape[0], size};
  vkt_status st = vkt_tensor_empty(out, vkt_tensor_device(a), a->dtype, 2, dims);
  if (st || shape[0] * m * n == 0) /* nothing to factor: the caller fills what there is */
    return st;
  if (!(st = vkt_contiguous(&dense, a)) && !(st = vkt_view(&flat, &dense, 3, shape))) {
    vkt_op_args args = {.out = out, .in = {&flat}, .nin = 1, .iparam = {iparam}};
    st = vkt_op_run(id, &args);
  }
  vkt_tensor_release(&dense);
  vkt_tensor_release(&flat);
  if (st)
    vkt_tensor_release(out);
  return st;
}

/* The [rows, cols] matrix at element `at` of each block (row length ld), with a's batch dims: a strided view. */
static vkt_status block_view(const vkt_tensor *a, const vkt_tensor *blocks, int64_t at, int64_t rows, int64_t cols,
                             int64_t ld, int extra, vkt_tensor *out) {
  int nb = a->ndim - 2;
  int64_t shape[VKT_MAX_DIMS], strides[VKT_MAX_DIMS], step = blocks->shape[1];
  for (int d = nb - 1; d >= 0; d--)
    shape[d] = a->shape[d], strides[d] = step, step *= a->shape[d];
  shape[nb] = rows, strides[nb] = extra == 2 ? ld : 1;
  shape[nb + 1] = cols, strides[nb + 1] = 1;
  return vkt_as_strided(out, blocks, nb + extra, shape, strides, blocks->offset + at);
}

vkt_status vkt_qr(const vkt_tensor *a, int mode, vkt_tensor *q, vkt_tensor *r) {
  vkt_tensor blocks = {0}, w = {0}, qv = {0};
  *q = *r = (vkt_tensor){0};
  vkt_status st = check(a, "linalg.qr", "geqrf_cpu", false);
  if (st)
    return st;
  int64_t m = a->shape[a->ndim - 2], n = a->shape[a->ndim - 1], k = m < n ? m : n, rr = mode == 1 ? m : k;
  int64_t cq = mode == 2 ? 0 : mode == 1 ? m : k;
  if ((st = run_blocks(a, VKT_OP_QR, vkt_qr_size(m, n, cq), cq, &blocks)))
    return st;
  if (cq > 0 && (m == 0 || n == 0 || blocks.shape[0] == 0)) /* no reflectors: Q is the identity's columns */
    st = vkt_fill_(&blocks, (vkt_scalar){false, 0, 0});
  if (!st && cq > 0 && (m == 0 || n == 0) && blocks.shape[0] > 0) {
    int64_t shape[2] = {blocks.shape[0], cq < m ? cq : m}, strides[2] = {blocks.shape[1], cq + 1};
    if (!(st = vkt_as_strided(&qv, &blocks, 2, shape, strides, blocks.offset + m * n + k)))
      st = vkt_fill_(&qv, (vkt_scalar){false, 0, 1});
    vkt_tensor_release(&qv);
  }
  /* R: triu of W's first rr rows (the reflectors below the diagonal zeroed), as a new tensor */
  if (!st && !(st = block_view(a, &blocks, 0, rr, n, n, 2, &w)))
    st = vkt_tri(&w, true, 0, r);
  if (!st && mode != 2 && !(st = block_view(a, &blocks, m * n + k, m, cq, cq, 2, &qv)))
    st = vkt_contiguous(q, &qv);
  if (!st && mode == 2) {
    int64_t zero = 0;
    st = vkt_tensor_empty(q, vkt_tensor_device(a), a->dtype, 1, &zero);
  }
  if (st) {
    vkt_tensor_release(q);
    vkt_tensor_release(r);
  }
  vkt_tensor_release(&blocks);
  vkt_tensor_release(&w);
  vkt_tensor_release(&qv);
  return st;
}

vkt_status vkt_eigh(const vkt_tensor *a, bool upper, const char *name, vkt_tensor *w, vkt_tensor *v) {
  vkt_tensor blocks = {0};
  *w = *v = (vkt_tensor){0};
  vkt_status st = check(a, name, "linalg_eigh_cpu", true);
  if (!st && a->shape[a->ndim - 1] != a->shape[a->ndim - 2])
    st = vkt_fail(VKT_ERR_RUNTIME, "%s: A must be batches of square matrices, but they are %lld by %lld matrices",
                  name, (long long)a->shape[a->ndim - 2], (long long)a->shape[a->ndim - 1]);
  if (st)
    return st;
  int64_t n = a->shape[a->ndim - 1];
  if ((st = run_blocks(a, VKT_OP_EIGH, vkt_eigh_size(n), upper, &blocks)))
    return st;
  if (!(st = block_view(a, &blocks, n * n, n, 1, 1, 1, w)) &&
      (st = block_view(a, &blocks, n * n + n, n, n, n, 2, v)))
    vkt_tensor_release(w);
  vkt_tensor_release(&blocks);
  return st;
}

/* ---- the shader paths ---- */

typedef struct {
  uint32_t batch, m, n, k, cq, size; /* elements */
  uint32_t a_offset, out_offset;     /* elements */
} qr_push;
static_assert(sizeof(qr_push) == 32, "qr_push must match shaders/qr.comp");

typedef struct {
  uint32_t batch, n, size;       /* elements */
  uint32_t a_offset, out_offset; /* elements */
} eigh_push;
static_assert(sizeof(eigh_push) == 20, "eigh_push must match shaders/eigh.comp");

/* The most loop iterations one invocation runs (every sweep rotating every pair, for eigh): llvmpipe (lavapipe)
 * ends every loop of a shader once 65535 iterations of them all have run (LP_MAX_TGSI_LOOP_ITERATIONS). */
static int64_t loop_iterations(vkt_op_id id, const vkt_op_args *a) {
  int64_t m = a->in[0]->shape[1], n = a->in[0]->shape[2], k = m < n ? m : n, cq = a->iparam[0];
  if (id == VKT_OP_QR)
    return m * n + k * (m + n * (2 * m + 1)) + m * cq + k * cq * (2 * m + 1) + k + 20;
  return 2 * n * n + VKT_EIGH_MAX_SWEEPS * (n * (n - 1) / 2 * (n + 1) + n) + 3 * n * n + 2 * n + 20;
}

bool vkt_decompose_supports(const vkt_op *op, const vkt_op_args *a, const char **why) {
  const vkt_tensor *t[2] = {a->out, a->in[0]};
  const vkt_adapter_props *p = vkt_device_props(a->out->storage->dev);
  if (!vkt_operands_fit(p, a->out->dtype, 2, t, why))
    return false;
  *why = "lavapipe stops a shader after 65535 loop iterations, which a matrix this large can pass";
  if (p->type == VKT_ADAPTER_CPU && loop_iterations((vkt_op_id)(op - vkt_ops), a) > 65535)
    return false;
  *why = "more than 2^32 elements";
  return (uint64_t)a->out->storage->nbytes / vkt_dtype_size(a->out->dtype) <= UINT32_MAX &&
         (uint64_t)a->in[0]->storage->nbytes / vkt_dtype_size(a->in[0]->dtype) <= UINT32_MAX;
}

vkt_status vkt_decompose_launch(const vkt_op *op, const vkt_op_args *a) {
  const vkt_tensor *in = a->in[0], *t[2] = {a->out, in};
  bool f64 = a->out->dtype == VKT_FLOAT64;
  char defines[200];
  uint32_t batch = (uint32_t)in->shape[0], m = (uint32_t)in->shape[1], n = (uint32_t)in->shape[2];
  if (op == &vkt_ops[VKT_OP_QR]) {
    qr_push push = {batch, m, n, m < n ? m : n, (uint32_t)a->iparam[0], (uint32_t)a->out->shape[1],
                    (uint32_t)in->offset, (uint32_t)a->out->offset};
    snprintf(defines, sizeof defines, "#define T %s\n", f64 ? "double" : "float");
    return vkt_launch_flat(op->shader, defines, 2, t, 1u, &push, sizeof push, batch);
  }
  eigh_push push = {batch, n, (uint32_t)a->out->shape[1], (uint32_t)in->offset, (uint32_t)a->out->offset};
  snprintf(defines, sizeof defines, "#define T %s\n#define EPS %s\n#define MAX_SWEEPS %d\n%s", f64 ? "double" : "float",
           f64 ? "2.220446049250313e-16lf" : "1.1920929e-07", VKT_EIGH_MAX_SWEEPS,
           a->iparam[0] ? "#define UPPER\n" : "");
  return vkt_launch_flat(op->shader, defines, 2, t, 1u, &push, sizeof push, batch);
}
