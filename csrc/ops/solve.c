/* solve.c: the front-ends (PyTorch's checks and errors, the batch flattened) and the launches of lu.comp,
 * cholesky.comp and trsm.comp: one invocation a matrix (a right-hand column for trsm), which suits the many
 * small matrices of a batch, not one large matrix. The CPU kernels are cpu/solve.c. */
#include <stdio.h>
#include <stdlib.h>

#include "linalg.h"
#include "reduce.h"

vkt_status vkt_linalg_square_check(const vkt_tensor *a, const char *name) {
  if (a->ndim < 2)
    return vkt_fail(VKT_ERR_RUNTIME, "%s: The input tensor A must have at least 2 dimensions.", name);
  if (!vkt_dtypes[a->dtype].is_float || a->dtype == VKT_FLOAT16)
    return vkt_fail(VKT_ERR_RUNTIME, "%s: Expected a floating point or complex tensor as input. Got %s", name,
                    vkt_dtypes[a->dtype].torch_name);
  if (a->shape[a->ndim - 1] != a->shape[a->ndim - 2])
    return vkt_fail(VKT_ERR_RUNTIME, "%s: A must be batches of square matrices, but they are %lld by %lld matrices",
                    name, (long long)a->shape[a->ndim - 2], (long long)a->shape[a->ndim - 1]);
  return VKT_OK;
}

vkt_status vkt_linalg_info_check(const vkt_tensor *info, int kind, bool batched) {
  int64_t n = vkt_tensor_numel(info);
  int32_t *host = malloc(sizeof(int32_t) * (size_t)n + 1);
  if (!host)
    return vkt_fail(VKT_ERR_NOMEM, "out of host memory for %lld info words", (long long)n);
  vkt_status st = vkt_read(info, host);
  int64_t b = 0;
  while (!st && b < n && host[b] == 0)
    b++;
  int v = b < n ? host[b] : 0;
  free(host);
  if (st || !v)
    return st;
  char at[48] = "";
  const char *ex = (kind & VKT_LINALG_EX) ? "_ex" : "";
  if (batched)
    snprintf(at, sizeof at, "(Batch element %lld): ", (long long)b);
  switch (kind & ~VKT_LINALG_EX) {
  case VKT_LINALG_INV:
    return vkt_fail(VKT_ERR_LINALG,
                    "linalg.inv%s: %sThe diagonal element %d is zero, the inversion could not be completed because "
                    "the input matrix is singular.", ex, at, v);
  case VKT_LINALG_SOLVE:
    return vkt_fail(VKT_ERR_LINALG, "torch.linalg.solve%s: %sThe solver failed because the input matrix is singular.",
                    ex, at);
  case VKT_LINALG_LU_FACTOR:
    return vkt_fail(VKT_ERR_RUNTIME,
                    "torch.linalg.lu_factor%s: %sU[%d,%d] is zero and using it on lu_solve would result in a division "
                    "by zero. If you still want to perform the factorization, consider calling linalg.lu(A, pivot) or "
                    "linalg.lu_factor_ex(A, pivot)", ex, at, v, v);
  default:
    return vkt_fail(VKT_ERR_LINALG,
                    "linalg.cholesky%s: %sThe factorization could not be completed because the input is not "
                    "positive-definite (the leading minor of order %d is not positive-definite).", ex, at, v);
  }
}

/* a as a contiguous [batch, m, n] (batch: the product of its leading dims). */
static vkt_status flat3(const vkt_tensor *a, vkt_tensor *flat) {
  vkt_tensor dense = {0};
  int64_t shape[3] = {1, a->shape[a->ndim - 2], a->shape[a->ndim - 1]};
  for (int d = 0; d < a->ndim - 2; d++)
    shape[0] *= a->shape[d];
  vkt_status st = vkt_contiguous(&dense, a);
  if (!st)
    st = vkt_view(flat, &dense, 3, shape);
  vkt_tensor_release(&dense);
  return st;
}

vkt_status vkt_lu_blocks(const vkt_tensor *a, const char *name, vkt_tensor *block, vkt_tensor *piv) {
  vkt_tensor flat = {0};
  *block = *piv = (vkt_tensor){0};
  if (a->ndim < 2)
    return vkt_fail(VKT_ERR_RUNTIME, "%s: The input tensor A must have at least 2 dimensions.", name);
  if (!vkt_dtypes[a->dtype].is_float || a->dtype == VKT_FLOAT16)
    return vkt_fail(VKT_ERR_RUNTIME, "%s: Expected a floating point or complex tensor as input. Got %s", name,
                    vkt_dtypes[a->dtype].torch_name);
  vkt_status st = flat3(a, &flat);
  int64_t m = a->shape[a->ndim - 2], n = a->shape[a->ndim - 1], k = m < n ? m : n, batch = st ? 0 : flat.shape[0];
  int64_t bs[2] = {batch, m * n + VKT_LU_EXTRA}, ps[2] = {batch, k + 1};
  if (st || (st = vkt_tensor_empty(block, vkt_tensor_device(a), a->dtype, 2, bs)) ||
      (st = vkt_tensor_empty(piv, vkt_tensor_device(a), VKT_INT32, 2, ps)))
    goto finish;
  if (batch > 0 && k > 0) {
    vkt_op_args args = {.out = block, .out2 = piv, .in = {&flat}, .nin = 1};
    st = vkt_op_run(VKT_OP_LU, &args);
  } else if (batch > 0) { /* nothing to factor: info 0 (det's empty product is its caller's) */
    st = vkt_fill_(piv, (vkt_scalar){false, 0, 0});
  }
finish:
  if (st) {
    vkt_tensor_release(block);
    vkt_tensor_release(piv);
  }
  vkt_tensor_release(&flat);
  return st;
}

vkt_status vkt_cholesky_blocks(const vkt_tensor *a, vkt_tensor *l, vkt_tensor *info) {
  vkt_tensor flat = {0};
  *l = *info = (vkt_tensor){0};
  vkt_status st = flat3(a, &flat);
  if (st || (st = vkt_tensor_empty(l, vkt_tensor_device(a), a->dtype, 3, flat.shape)) ||
      (st = vkt_tensor_empty(info, vkt_tensor_device(a), VKT_INT32, 1, flat.shape)))
    goto finish;
  if (flat.shape[0] > 0 && flat.shape[1] > 0) {
    vkt_op_args args = {.out = l, .out2 = info, .in = {&flat}, .nin = 1};
    st = vkt_op_run(VKT_OP_CHOLESKY, &args);
  } else {
    st = vkt_fill_(info, (vkt_scalar){false, 0, 0});
  }
finish:
  if (st) {
    vkt_tensor_release(l);
    vkt_tensor_release(info);
  }
  vkt_tensor_release(&flat);
  return st;
}

vkt_status vkt_trsm(const vkt_tensor *a, int64_t a_stride, const vkt_tensor *b, const vkt_tensor *piv, unsigned mode,
                    vkt_tensor *x) {
  vkt_tensor dense = {0};
  *x = (vkt_tensor){0};
  vkt_status st = vkt_contiguous(&dense, b);
  if (st || (st = vkt_tensor_empty(x, vkt_tensor_device(b), b->dtype, 3, b->shape)))
    goto finish;
  if (vkt_tensor_numel(x) > 0) {
    vkt_op_args args = {.out = x, .in = {a, &dense, piv}, .nin = piv ? 3 : 2, .iparam = {mode, a_stride}};
    st = vkt_op_run(VKT_OP_TRSM, &args);
  }
finish:
  if (st)
    vkt_tensor_release(x);
  vkt_tensor_release(&dense);
  return st;
}

vkt_status vkt_lu_permutation(const vkt_tensor *pivots, int64_t m, vkt_dtype dtype, vkt_tensor *out) {
  vkt_tensor range = {0}, idx = {0}, head = {0}, dense = {0}, src = {0}, e = {0}, fe = {0}, x = {0};
  *out = (vkt_tensor){0};
  int nb = pivots->ndim - 1, device = vkt_tensor_device(pivots);
  int64_t k = pivots->shape[nb], batch = 1, shape[VKT_MAX_DIMS];
  for (int d = 0; d < nb; d++)
    batch *= pivots->shape[d], shape[d] = pivots->shape[d];
  int64_t ishape[2] = {batch, m}, pshape[2] = {batch, k}, eshape[3] = {batch, m, m};
  vkt_status st = VKT_OK;
  if (k > m) /* more swaps than rows */
    st = vkt_fail(VKT_ERR_RUNTIME, "lu_unpack: expected at most %lld pivots a matrix, got %lld", (long long)m,
                  (long long)k);
  /* the swaps padded to m with rows that stay, then applied to the identity's rows */
  if (st || (st = vkt_arange(&range, device, VKT_INT32, (vkt_scalar){false, 0, 1}, (vkt_scalar){false, 0, m + 1},
                             (vkt_scalar){false, 0, 1})) ||
      (st = vkt_expand(&head, &range, 2, ishape)) || (st = vkt_contiguous(&idx, &head)))
    goto finish;
  vkt_tensor_release(&head);
  if ((st = vkt_slice(&head, &idx, 1, 0, k, 1)) || (st = vkt_contiguous(&dense, pivots)) ||
      (st = vkt_view(&src, &dense, 2, pshape)) || (st = vkt_copy_(&head, &src)))
    goto finish;
  vkt_tensor_release(&head);
  if ((st = vkt_eye(&e, device, dtype, m, m)) || (st = vkt_expand(&head, &e, 3, eshape)) ||
      (st = vkt_contiguous(&fe, &head)) || (st = vkt_trsm(&fe, 0, &fe, &idx, VKT_TRSM_PERMUTE, &x)))
    goto finish;
  shape[nb] = shape[nb + 1] = m;
  st = vkt_view(out, &x, nb + 2, shape);
finish:
  vkt_tensor_release(&range);
  vkt_tensor_release(&idx);
  vkt_tensor_release(&head);
  vkt_tensor_release(&dense);
  vkt_tensor_release(&src);
  vkt_tensor_release(&e);
  vkt_tensor_release(&fe);
  vkt_tensor_release(&x);
  return st;
}

/* ---- the shader paths ---- */

typedef struct {
  uint32_t batch, m, n, k;                  /* elements */
  uint32_t a_offset, out_offset, piv_offset; /* elements */
} lu_push;
static_assert(sizeof(lu_push) == 28, "lu_push must match shaders/lu.comp");

typedef struct {
  uint32_t batch, n;
  uint32_t a_offset, out_offset, info_offset; /* elements */
} cholesky_push;
static_assert(sizeof(cholesky_push) == 20, "cholesky_push must match shaders/cholesky.comp");

typedef struct {
  uint32_t batch, n, k, a_stride;                         /* elements */
  uint32_t a_offset, b_offset, out_offset, piv_offset; /* elements */
} trsm_push;
static_assert(sizeof(trsm_push) == 32, "trsm_push must match shaders/trsm.comp");

/* The most loop iterations one invocation runs: llvmpipe (lavapipe) ends every loop of a shader once 65535
 * iterations of them all have run (LP_MAX_TGSI_LOOP_ITERATIONS), so a larger matrix would come back wrong. */
static int64_t loop_iterations(vkt_op_id id, const vkt_op_args *a) {
  const vkt_tensor *x = id == VKT_OP_TRSM ? a->out : a->in[0];
  int64_t m = x->shape[1], n = id == VKT_OP_TRSM ? m : x->shape[2], k = m < n ? m : n;
  if (id == VKT_OP_LU)
    return m * n + k * (m + m * n) + 2 * k + 20;
  if (id == VKT_OP_CHOLESKY)
    return n * n + n * n * (n + 2);
  return 2 * n + n * (n + 1) * ((a->iparam[0] & VKT_TRSM_LU) ? 2 : 1);
}

bool vkt_solve_supports(const vkt_op *op, const vkt_op_args *a, const char **why) {
  const vkt_tensor *t[4] = {a->out, a->out2 ? a->out2 : a->in[0], a->in[0], a->in[a->nin - 1]};
  const vkt_adapter_props *p = vkt_device_props(a->out->storage->dev);
  vkt_op_id id = (vkt_op_id)(op - vkt_ops);
  if (!vkt_operands_fit(p, a->out->dtype, 4, t, why))
    return false;
  *why = "lavapipe stops a shader after 65535 loop iterations, which a matrix this large can pass";
  if (p->type == VKT_ADAPTER_CPU && loop_iterations(id, a) > 65535)
    return false;
  *why = "more than 2^32 elements";
  for (int k = 0; k < 4; k++)
    if ((uint64_t)t[k]->storage->nbytes / vkt_dtype_size(t[k]->dtype) > UINT32_MAX)
      return false;
  return true;
}

static void type_defines(char *buf, size_t n, vkt_dtype d, const char *more) {
  bool f64 = d == VKT_FLOAT64;
  snprintf(buf, n, "#define T %s\n#define LN2 %s\n%s", f64 ? "double" : "float",
           f64 ? "0.6931471805599453094lf" : "0.6931471805599453", more);
}

vkt_status vkt_solve_launch(const vkt_op *op, const vkt_op_args *a) {
  vkt_op_id id = (vkt_op_id)(op - vkt_ops);
  char defines[160];
  const vkt_tensor *in = a->in[0];
  if (id == VKT_OP_LU) {
    const vkt_tensor *t[3] = {a->out, a->out2, in};
    uint32_t m = (uint32_t)in->shape[1], n = (uint32_t)in->shape[2];
    lu_push push = {(uint32_t)in->shape[0], m, n, m < n ? m : n, (uint32_t)in->offset, (uint32_t)a->out->offset,
                    (uint32_t)a->out2->offset};
    type_defines(defines, sizeof defines, in->dtype, "");
    return vkt_launch_flat(op->shader, defines, 3, t, 3u, &push, sizeof push, push.batch);
  }
  if (id == VKT_OP_CHOLESKY) {
    const vkt_tensor *t[3] = {a->out, a->out2, in};
    cholesky_push push = {(uint32_t)in->shape[0], (uint32_t)in->shape[1], (uint32_t)in->offset,
                          (uint32_t)a->out->offset, (uint32_t)a->out2->offset};
    type_defines(defines, sizeof defines, in->dtype, "");
    return vkt_launch_flat(op->shader, defines, 3, t, 3u, &push, sizeof push, push.batch);
  }
  const vkt_tensor *t[4] = {a->out, in, a->in[1], a->nin > 2 ? a->in[2] : NULL};
  unsigned mode = (unsigned)a->iparam[0];
  trsm_push push = {(uint32_t)a->out->shape[0], (uint32_t)a->out->shape[1], (uint32_t)a->out->shape[2],
                    (uint32_t)a->iparam[1], (uint32_t)in->offset, (uint32_t)a->in[1]->offset,
                    (uint32_t)a->out->offset, a->nin > 2 ? (uint32_t)a->in[2]->offset : 0u};
  type_defines(defines, sizeof defines, a->out->dtype,
               (mode & VKT_TRSM_LU)        ? "#define LU_SOLVE\n"
               : (mode & VKT_TRSM_PERMUTE) ? "#define PERMUTE\n"
               : (mode & VKT_TRSM_UPPER) ? ((mode & VKT_TRSM_UNIT) ? "#define UPPER\n#define UNIT true\n"
                                                                  : "#define UPPER\n#define UNIT false\n")
               : (mode & VKT_TRSM_UNIT) ? "#define UNIT true\n" : "#define UNIT false\n");
  return vkt_launch_flat(op->shader, defines, a->nin > 2 ? 4 : 3, t, 1u, &push, sizeof push,
                         (uint64_t)push.batch * push.k);
}
