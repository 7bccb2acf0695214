/* matmul.c: the matrix-product family: PyTorch's matmul rules in front (1-D operands, broadcast batch
 * dims, dtype and device checks), then one dispatch of the strided tiled shader (matmul.comp) or the
 * CPU kernel (cpu/matmul.c). mm, bmm, linear, addmm and the fused matmul_add_relu all reduce to it. */
#include <stdio.h>
#include <string.h>

#include "fuse.h"
#include "matmul.h"
#include "reduce.h"
#include "table.h"

static const vkt_scalar one = {false, 0, 1};

/* ---- checks ---- */

/* "2x3": the way PyTorch's mm messages write a shape. */
static void dims_str(const vkt_tensor *t, char *buf, size_t n) {
  int len = 0;
  buf[0] = '\0';
  for (int i = 0; i < t->ndim && (size_t)len < n; i++)
    len += snprintf(buf + len, n - (size_t)len, "%s%lld", i ? "x" : "", (long long)t->shape[i]);
}

static vkt_status shape_error(const vkt_tensor *a, const vkt_tensor *b) {
  char sa[256], sb[256];
  dims_str(a, sa, sizeof sa), dims_str(b, sb, sizeof sb);
  return vkt_fail(VKT_ERR_RUNTIME, "mat1 and mat2 shapes cannot be multiplied (%s and %s)", sa, sb);
}

/* matmul's first check, PyTorch's. */
static vkt_status scalar_operand(const vkt_tensor *a, const vkt_tensor *b) {
  if (a->ndim && b->ndim)
    return VKT_OK;
  return vkt_fail(VKT_ERR_RUNTIME, "both arguments to matmul need to be at least 1D, but they are %dD and %dD",
                  a->ndim, b->ndim);
}

static vkt_status check_operands(const vkt_tensor *a, const vkt_tensor *b, const vkt_tensor *bias) {
  vkt_status st = vkt_same_device(3, (const vkt_tensor *[]){a, b, bias}, NULL);
  if (st)
    return st;
  if (a->dtype != b->dtype)
    return vkt_fail(VKT_ERR_RUNTIME, "expected m1 and m2 to have the same dtype, but got: %s != %s",
                    vkt_dtypes[a->dtype].c10_name, vkt_dtypes[b->dtype].c10_name);
  if (bias && bias->dtype != a->dtype)
    return vkt_fail(VKT_ERR_RUNTIME, "expected bias to have the same dtype as m1 and m2, but got: %s != %s",
                    vkt_dtypes[bias->dtype].c10_name, vkt_dtypes[a->dtype].c10_name);
  if ((st = scalar_operand(a, b)))
    return st;
  /* PyTorch has no bool products: its refusal names the CPU kernel the operands' ranks take them to */
  if (a->dtype == VKT_BOOL)
    return vkt_fail(VKT_ERR_NOTIMPL, "\"%s\" not implemented for 'Bool'",
                    a->ndim == 1 && b->ndim == 1 ? "dot"
                    : b->ndim == 1               ? "addmv_impl_cpu"
                    : b->ndim >= 3               ? "bmm"
                                                 : "addmm_impl_cpu_");
  return VKT_OK;
}

/* addmm's dtype checks, PyTorch's (its CPU kernel's) order and words: input against mat2, then mat1 against mat2. Also
 * linear's with a bias (addmm there). */
vkt_status vkt_addmm_dtypes(const vkt_tensor *input, const vkt_tensor *m1, const vkt_tensor *m2) {
  const char *pair = input->dtype != m2->dtype ? "self" : m1->dtype != m2->dtype ? "mat1" : NULL;
  if (!pair)
    return VKT_OK;
  return vkt_fail(VKT_ERR_RUNTIME, "%s and mat2 must have the same dtype, but got %s and %s", pair,
                  vkt_dtypes[pair[0] == 's' ? input->dtype : m1->dtype].torch_name, vkt_dtypes[m2->dtype].torch_name);
}

/* bmm's and baddbmm's check of batch2 against batch1: PyTorch's words, its kernel's. */
static vkt_status batch_dtypes(const vkt_tensor *b1, const vkt_tensor *b2) {
  if (b1->dtype == b2->dtype)
    return VKT_OK;
  return vkt_fail(VKT_ERR_RUNTIME, "expected scalar type %s but found %s", vkt_dtypes[b1->dtype].torch_name,
                  vkt_dtypes[b2->dtype].torch_name);
}

/* What baddbmm checks before the batches' shapes, PyTorch's order and words (its meta function's): input
 * broadcasts to the result, then has batch1's dtype. The result's shape is known only for 3-D batches; the
 * others fail the shape checks next. */
static vkt_status baddbmm_input(const vkt_tensor *input, const vkt_tensor *b1, const vkt_tensor *b2) {
  vkt_tensor expanded = {0};
  if (b1->ndim == 3 && b2->ndim == 3) {
    vkt_status st = vkt_expand(&expanded, input, 3, (int64_t[]){b1->shape[0], b1->shape[1], b2->shape[2]});
    vkt_tensor_release(&expanded);
    if (st)
      return st;
  }
  if (input->dtype == b1->dtype)
    return VKT_OK;
  return vkt_fail(VKT_ERR_RUNTIME, "Input dtypes must be the same, got: input %s, batch1: %s, batch2: %s",
                  vkt_dtypes[input->dtype].c10_name, vkt_dtypes[b1->dtype].c10_name,
                  vkt_dtypes[b2->dtype].c10_name);
}

/* mv's and addmv's dtype check, PyTorch's words: its addmv kernel's, which mv calls with an input (its result) of
 * vec's dtype. */
static vkt_status addmv_dtypes(vkt_dtype input, const vkt_tensor *mat, const vkt_tensor *vec) {
  if (input == mat->dtype && mat->dtype == vec->dtype)
    return VKT_OK;
  return vkt_fail(VKT_ERR_RUNTIME, "addmv input tensors must have the same dtype, but got %s, %s, and %s",
                  vkt_dtypes[input].torch_name, vkt_dtypes[mat->dtype].torch_name, vkt_dtypes[vec->dtype].torch_name);
}

/* ---- the plan: PyTorch's matmul rules ---- */

typedef struct {
  int nbatch;                  /* broadcast batch dims */
  int64_t shape[VKT_MAX_DIMS]; /* the product's: batch..., M, N */
  int64_t k;
  int fndim; /* the result's: the product's less the dims 1-D operands brought */
  int64_t fshape[VKT_MAX_DIMS];
} mm_plan;

static vkt_status plan(const vkt_tensor *a, const vkt_tensor *b, mm_plan *p) {
  int na = a->ndim, nb = b->ndim, ba = na > 2 ? na - 2 : 0, bb = nb > 2 ? nb - 2 : 0;
  p->k = a->shape[na - 1];
  if (p->k != b->shape[nb == 1 ? 0 : nb - 2])
    return shape_error(a, b);
  p->nbatch = ba > bb ? ba : bb;
  for (int i = 0; i < p->nbatch; i++) {
    int ia = i - (p->nbatch - ba), ib = i - (p->nbatch - bb);
    int64_t sa = ia >= 0 ? a->shape[ia] : 1, sb = ib >= 0 ? b->shape[ib] : 1;
    if (sa != sb && sa != 1 && sb != 1)
      return shape_error(a, b);
    p->shape[i] = sa == 1 ? sb : sa;
  }
  p->shape[p->nbatch] = na == 1 ? 1 : a->shape[na - 2];
  p->shape[p->nbatch + 1] = nb == 1 ? 1 : b->shape[nb - 1];
  p->fndim = p->nbatch;
  memcpy(p->fshape, p->shape, sizeof *p->shape * (size_t)p->nbatch);
  if (na > 1)
    p->fshape[p->fndim++] = p->shape[p->nbatch];
  if (nb > 1)
    p->fshape[p->fndim++] = p->shape[p->nbatch + 1];
  return VKT_OK;
}

/* t as an operand of the product (a view): a 1-D t gets its missing dim at `at`, and the batch dims are
 * broadcast to the plan's. */
static vkt_status operand(const vkt_tensor *t, int64_t at, int64_t rows, int64_t cols, const mm_plan *p,
                          vkt_tensor *out) {
  vkt_tensor u = {0};
  int64_t shape[VKT_MAX_DIMS];
  vkt_status st = VKT_OK;
  memcpy(shape, p->shape, sizeof *shape * (size_t)p->nbatch);
  shape[p->nbatch] = rows, shape[p->nbatch + 1] = cols;
  if (t->ndim == 1 && !(st = vkt_unsqueeze(&u, t, at)))
    t = &u;
  if (!st)
    st = vkt_expand(out, t, p->nbatch + 2, shape);
  vkt_tensor_release(&u);
  return st;
}

/* The bias broadcast to the result's shape, then viewed with the product's (stride 0 for the dims
 * 1-D operands brought). */
static vkt_status bias_operand(const vkt_tensor *bias, const vkt_tensor *a, const vkt_tensor *b, const mm_plan *p,
                               vkt_tensor *out) {
  vkt_status st = vkt_expand(out, bias, p->fndim, p->fshape);
  if (st)
    return st;
  int64_t rs = a->ndim > 1 ? out->strides[p->nbatch] : 0, cs = b->ndim > 1 ? out->strides[p->fndim - 1] : 0;
  out->ndim = p->nbatch + 2;
  memcpy(out->shape, p->shape, sizeof *p->shape * (size_t)out->ndim);
  out->strides[p->nbatch] = rs, out->strides[p->nbatch + 1] = cs;
  return VKT_OK;
}

/* ---- the front-ends ---- */

/* What follows the product: out = alpha * (a @ b) + beta * bias, then relu when flags says so. */
typedef struct {
  const vkt_tensor *bias; /* NULL: none */
  vkt_scalar beta, alpha;
  unsigned flags;
} mm_epilogue;

static bool is_zero(vkt_scalar s) { return s.is_float ? s.f == 0 : s.i == 0; }

static vkt_dtype accumulator(vkt_dtype d) {
  return d == VKT_FLOAT16 ? VKT_FLOAT32 : vkt_dtypes[d].is_float ? d : VKT_INT64;
}

/* Split-K: a product with few output tiles and a long K leaves most of a GPU idle, so K is cut into
 * s slices, multiplied as s more batch matrices (strided views, no copy), and the partial products
 * summed. Only for float32 products without a bias or relu of their own (addmm, matmul_add_relu), which
 * the product's kernel adds to the total. Long products (K >= SPLIT_K_MIN) sum their slices with a
 * reduction; short ones (SHORT_SPLIT_K_MIN <= K, at most 4 slices) with adds, which fusion makes one kernel
 * with the ops that consume the product: the sum takes the epilogue. */
#define SPLIT_K_MIN 4096 /* K */
#define SPLIT_K_TILES 16 /* fewer 64 x 64 output tiles than this */
/* A product whose 128 x 128 tiles number fewer than this, with K >= SPLIT_K_MIN, also splits on a GPU:
 * the weight gradient of a linear layer, lhs^T @ grad over 8192 rows into 1024 x 1024, ran its 64 wide
 * workgroups on half of an H100's 132 multiprocessors (0.78 ms alone, against 0.38 ms when two overlapped). */
#define SPLIT_K_WIDE_TILES 128
/* ... into at most this many slices: a weight's gradient over a batch of 16384 into 512 x 512 (16 wide tiles) took
 * 0.360 ms in 8 (128 workgroups), 65536 into 256 x 256 (4) 0.769 ms in 8 (32), against cuBLAS's 0.177 and 0.174
 * (H100); in 16 and 64 they make 256. */
#define SPLIT_K_MOST 64
/* Split-K in the product's kernel (matmul_wide.comp's PIECES): a float32 product on a GPU of KERNEL_SPLIT_TILES to
 * SPLIT_K_WIDE_TILES 128 x 128 tiles over K >= SPLIT_K_MIN takes the big tile, each tile summed by pieces (a power
 * of two towards 256 workgroups, each 1024 deep or more) that meet as a split last wave's do: the last to finish
 * adds the others' stored sums in order and stores the tile, through a bias, relu or fused epilogue as any product.
 * No tensor of slices and no reduction after it. H100, x^T @ g over 8192 rows, ms, as slices and their sum ->
 * so: into 768 x 1024 0.372 -> 0.300; into 1024 x 1024 0.364 -> 0.374 alone, but matmul_add_relu's forward +
 * backward at 8x1024^3, whose weight gradient it is, 1.200-1.253 -> 1.174-1.186. Fewer tiles split into more
 * slices summed by a reduction (k_slices): one workgroup adding many pieces is slower (512 x 16384 x 512, 16
 * tiles: 0.189 -> 0.196 in 16 pieces). The pieces, or 0. */
#define KERNEL_SPLIT_TILES 32
static int64_t kernel_split(const vkt_device *dev, int ndim, int64_t m, int64_t n, int64_t k, int64_t tiles) {
  if (!vkt_device_props(dev)->wide_split_k || k < SPLIT_K_MIN || m < 128 || n < 128 || ndim > 4 ||
      tiles < KERNEL_SPLIT_TILES || tiles >= SPLIT_K_WIDE_TILES)
    return 0;
  int64_t pieces = 16;
  while (pieces > 1 && (tiles * pieces > 256 || k / pieces < 1024))
    pieces /= 2;
  return pieces > 1 ? pieces : 0;
}
/* A shorter product of fewer 64 x 64 tiles than this (less than a workgroup per multiprocessor of an H100)
 * splits into slices 256 deep or more, up to 4, towards 256 workgroups: an MLP's 256 x 1024 x 1024 layer
 * made 64 workgroups, and its training step went 0.43 -> 0.37 ms on an H200. Products that do not wait on
 * each other lose by it, as their workgroups already share the GPU: 50 calls of 256 x 1024 x 1024 back to back
 * took 0.026 -> 0.028 ms a call, of 512^3 0.016 -> 0.027, so K starts at 768. */
#define SHORT_SPLIT_K_MIN 768
#define SHORT_SPLIT_TILES 128
/* A matrix-vector product (one row or column) splits only with K >= SPLIT_K_MIN and fewer outputs than this,
 * fewer than 8 of the matrix-vector shader's workgroups: it reads the matrix once either way, and with more its
 * workgroups already keep the memory busy. H100, ms, split as the rules above would / not split: 1x4096x4096
 * 0.031 / 0.013, 4096x4096x1 0.030 / 0.015, 1x32768x1024 0.074 / 0.028, 512x8192x1 0.009 / 0.005, 1x16384x256
 * 0.008 / 0.008; 1x65536x64 (2 workgroups) 0.009 split in 256 / 0.028. */
#define MATVEC_SPLIT_OUTPUTS 256

typedef struct {
  int64_t slices;
  bool adds; /* summed by adds (short), else by a reduction */
} k_split;

/* ndim: the product's */
static k_split k_slices(const vkt_tensor *x, const mm_epilogue *e, int ndim, int64_t m, int64_t n, int64_t k,
                        int64_t batch) {
  k_split none = {0, false};
  if (vkt_tensor_device(x) == VKT_CPU || x->dtype != VKT_FLOAT32 || e->bias || e->flags || k < SHORT_SPLIT_K_MIN ||
      x->ndim + 1 > VKT_MAX_DIMS)
    return none;
  int64_t tiles = (m + 63) / 64 * ((n + 63) / 64) * batch;
  if ((m == 1 || n == 1) && (k < SPLIT_K_MIN || m * n * batch >= MATVEC_SPLIT_OUTPUTS))
    return none; /* one row or column: the matrix-vector shader */
  if (k < SPLIT_K_MIN) {
    if (tiles >= SHORT_SPLIT_TILES)
      return none;
    for (int64_t s = 4; s >= 2; s--)
      if (k % s == 0 && k / s >= 256 && (s == 2 || tiles * s <= 2 * 256))
        return (k_split){s, true};
    return none;
  }
  if (tiles < SPLIT_K_TILES) {
    for (int64_t s = 256 / tiles; s >= 2; s--) /* about 256 workgroups: two per multiprocessor of a large GPU */
      if (k % s == 0 && k / s >= 256)
        return (k_split){s, false};
    return none;
  }
  int64_t wide = (m + 127) / 128 * ((n + 127) / 128) * batch;
  if (wide >= SPLIT_K_WIDE_TILES || !vkt_device_props(x->storage->dev)->wide_split_k ||
      kernel_split(x->storage->dev, ndim, m, n, k, wide))
    return none;
  int64_t most = (256 + wide - 1) / wide; /* about 256 tiles, at most SPLIT_K_MOST slices, each 1024 deep or more */
  for (int64_t s = most < SPLIT_K_MOST ? most : SPLIT_K_MOST; s >= 2; s--)
    if (k % s == 0 && k / s >= 1024)
      return (k_split){s, false};
  return none;
}

/* x's [..., rows, k] (k_dim = -1) or [..., k, cols] (k_dim = -2) seen as s matrices of k / s. */
static void slice_k(const vkt_tensor *x, int k_dim, int64_t s, vkt_tensor *out) {
  int d = x->ndim + k_dim;
  *out = *x;
  out->ndim = x->ndim + 1;
  out->shape[0] = s, out->strides[0] = x->shape[d] / s * x->strides[d];
  for (int i = 0; i < x->ndim; i++)
    out->shape[i + 1] = x->shape[i], out->strides[i + 1] = x->strides[i];
  out->shape[d + 1] = x->shape[d] / s;
}

/* part[0] + part[1] + ... in that order: elementwise, so pending under fusion. */
static vkt_status add_slices(const vkt_tensor *part, vkt_tensor *out) {
  vkt_tensor sum = {0}, next = {0}, slice = {0};
  vkt_status st = vkt_select(&sum, part, 0, 0);
  for (int64_t i = 1; i < part->shape[0] && !st; i++) {
    if (!(st = vkt_select(&slice, part, 0, i)))
      st = vkt_binary(VKT_OP_ADD, (vkt_operand){.t = &sum}, (vkt_operand){.t = &slice}, one, NULL, &next);
    vkt_tensor_release(&slice);
    vkt_tensor_release(&sum);
    sum = next, next = (vkt_tensor){0};
  }
  if (st)
    vkt_tensor_release(&sum);
  *out = sum;
  return st;
}

static vkt_status split_k(const vkt_tensor *a, const vkt_tensor *b, k_split split, const mm_epilogue *e,
                          vkt_tensor *out) {
  vkt_tensor sa, sb, part = {0};
  int64_t s = split.slices;
  slice_k(a, -1, s, &sa);
  slice_k(b, -2, s, &sb);
  int64_t shape[VKT_MAX_DIMS];
  shape[0] = s;
  for (int i = 0; i < a->ndim - 1; i++)
    shape[i + 1] = a->shape[i];
  shape[a->ndim] = b->shape[b->ndim - 1];
  vkt_status st = vkt_tensor_empty(&part, vkt_tensor_device(a), VKT_FLOAT32, a->ndim + 1, shape);
  if (st)
    return st;
  vkt_op_args args = {.out = &part,
                      .in = {&sa, &sb},
                      .nin = 3,
                      .compute = VKT_FLOAT32,
                      .param = {e->beta, e->alpha},
                      .flags = split.adds ? VKT_MATMUL_SMALL_TILE : 0};
  vkt_reduce_opts sum = {.name = "sum", .dims = 1u, .dtype = -1};
  if (!(st = vkt_op_run(VKT_OP_MATMUL, &args)))
    st = split.adds ? add_slices(&part, out) : vkt_reduce(VKT_OP_SUM, &part, &sum, out, NULL);
  vkt_tensor_release(&part);
  return st;
}

static vkt_status product(const vkt_tensor *a, const vkt_tensor *b, const mm_epilogue *e, vkt_tensor *result) {
  vkt_tensor v[4] = {0}; /* a, b, bias as operands, and the product */
  mm_plan p;
  vkt_status st;
  if ((st = check_operands(a, b, e->bias)) || (st = plan(a, b, &p)))
    return st;
  int64_t m = p.shape[p.nbatch], n = p.shape[p.nbatch + 1];
  if ((st = operand(a, 0, m, p.k, &p, &v[0])) || (st = operand(b, -1, p.k, n, &p, &v[1])))
    goto finish;
  if (e->bias && (st = bias_operand(e->bias, a, b, &p, &v[2])))
    goto finish;
  int64_t batch = vkt_tensor_numel(&v[0]) ? 1 : 0;
  for (int d = 0; d < p.nbatch; d++)
    batch *= p.shape[d];
  k_split split = k_slices(a, e, p.nbatch + 2, m, n, p.k, batch);
  if (split.slices) {
    if (!(st = split_k(&v[0], &v[1], split, e, &v[3])))
      st = vkt_view(result, &v[3], p.fndim, p.fshape);
    goto finish;
  }
  /* A plain product on a Vulkan device may be pending (fuse.h), its consumers becoming its epilogue. */
  bool lazy = vkt_tensor_device(a) != VKT_CPU && vkt_fuse_enabled() && !e->bias && !e->flags && batch * m * n > 0;
  if ((st = (lazy ? vkt_tensor_empty_lazy : vkt_tensor_empty)(&v[3], vkt_tensor_device(a), a->dtype, p.nbatch + 2,
                                                              p.shape)))
    goto finish;
  vkt_op_args args = {.out = &v[3],
                      .in = {&v[0], &v[1], e->bias && !is_zero(e->beta) ? &v[2] : NULL},
                      .nin = 3,
                      .compute = accumulator(a->dtype),
                      .param = {e->beta, e->alpha},
                      .flags = e->flags};
  if (lazy)
    st = vkt_fuse_defer_matmul(&args);
  else if (vkt_tensor_numel(&v[3]) > 0)
    st = vkt_op_run(VKT_OP_MATMUL, &args);
  if (st)
    goto finish;
  st = vkt_view(result, &v[3], p.fndim, p.fshape);
finish:
  for (int k = 0; k < 4; k++)
    vkt_tensor_release(&v[k]);
  return st;
}

/* mv's and mm's size errors, PyTorch's words (mv's are addmv's, of an input with mat's rows). */
static vkt_status mv_sizes(int64_t rows, int64_t k, int64_t vec) {
  if (k == vec)
    return VKT_OK;
  return vkt_fail(VKT_ERR_RUNTIME, "size mismatch, got input (%lld), mat (%lldx%lld), vec (%lld)", (long long)rows,
                  (long long)rows, (long long)k, (long long)vec);
}

static vkt_status mm_sizes(int64_t r1, int64_t c1, int64_t r2, int64_t c2) {
  if (c1 == r2)
    return VKT_OK;
  return vkt_fail(VKT_ERR_RUNTIME, "mat1 and mat2 shapes cannot be multiplied (%lldx%lld and %lldx%lld)",
                  (long long)r1, (long long)c1, (long long)r2, (long long)c2);
}

/* dot's checks of two vectors, PyTorch's order: dtypes, then sizes. */
static vkt_status dot_checks(const vkt_tensor *a, const vkt_tensor *b) {
  if (a->dtype != b->dtype)
    return vkt_fail(VKT_ERR_RUNTIME, "dot : expected both vectors to have same dtype, but found %s and %s",
                    vkt_dtypes[a->dtype].torch_name, vkt_dtypes[b->dtype].torch_name);
  if (a->shape[0] != b->shape[0])
    return vkt_fail(VKT_ERR_RUNTIME,
                    "inconsistent tensor size, expected tensor [%lld] and src [%lld] to have the same number of "
                    "elements, but got %lld and %lld elements respectively",
                    (long long)a->shape[0], (long long)b->shape[0], (long long)a->shape[0], (long long)b->shape[0]);
  return VKT_OK;
}

/* matmul's checks up to rank 2, PyTorch's (_matmul_impl's): those of the op the ranks take it to, in its order:
 * dot's for two vectors; mv's (sizes, then dtypes) for a matrix and a vector; else mm's of a.unsqueeze(0) or a
 * (sizes here, dtypes in product()). *zeros: Bool operands with nothing to multiply, which PyTorch's mm and addmv
 * kernels return (zeros) before they refuse Bool. */
static vkt_status small_checks(const vkt_tensor *a, const vkt_tensor *b, bool *zeros) {
  int64_t rows = a->ndim == 2 ? a->shape[0] : 1, k = a->shape[a->ndim - 1], cols = b->ndim == 2 ? b->shape[1] : 1;
  vkt_status st;
  if (a->ndim == 1 && b->ndim == 1)
    return dot_checks(a, b);
  if (b->ndim == 1 && ((st = mv_sizes(rows, k, b->shape[0])) || (st = addmv_dtypes(b->dtype, a, b))))
    return st;
  if (b->ndim == 2 && (st = mm_sizes(rows, k, b->shape[0], cols)))
    return st;
  *zeros = a->dtype == VKT_BOOL && b->dtype == VKT_BOOL && (rows * cols == 0 || k == 0);
  return VKT_OK;
}

/* The result of a product with nothing to multiply, of the given dtype (PyTorch's bmm and baddbmm take batch2's,
 * addbmm input's): beta * input cast to it where input is given and beta is not 0, else zeros; a Bool one is input
 * (its beta cast to Bool is True). */
static vkt_status unmultiplied(const vkt_tensor *input, vkt_dtype dtype, int device, int ndim, const int64_t *shape,
                               vkt_scalar beta, vkt_tensor *result) {
  vkt_tensor ex = {0}, cast = {0};
  vkt_status st;
  int64_t numel = 1;
  for (int d = 0; d < ndim; d++)
    numel *= shape[d];
  if (!input || is_zero(beta) || numel == 0) {
    if (!(st = vkt_tensor_empty(result, device, dtype, ndim, shape)) &&
        (st = vkt_fill_(result, (vkt_scalar){false, 0, 0})))
      vkt_tensor_release(result);
    return st;
  }
  if (!(st = vkt_expand(&ex, input, ndim, shape)) && !(st = vkt_cast(&ex, dtype, &cast)))
    st = dtype == VKT_BOOL
             ? vkt_clone(result, &cast)
             : vkt_binary(VKT_OP_MUL, (vkt_operand){.t = &cast}, (vkt_operand){.s = beta}, one, NULL, result);
  vkt_tensor_release(&ex);
  vkt_tensor_release(&cast);
  return st;
}

/* Whether PyTorch's matmul folds a batch times a matrix or vector into one mm or mv (its should_fold, for operands
 * that do not require grad): where the larger one (b seen transposed) folds its batch dims into rows as a view. */
static bool folds(const vkt_tensor *a, const vkt_tensor *b) {
  bool a_larger = a->ndim >= b->ndim;
  const vkt_tensor *t = a_larger ? a : b;
  int nd = t->ndim;
  if (nd < 3 || (a_larger ? b->ndim : a->ndim) > 2 || a->ndim == 2)
    return false;
  if (vkt_tensor_numel(t) == 0)
    return true;
  for (int i = 0; i < nd - 2; i++) {
    int j = !a_larger && i + 1 == nd - 2 ? nd - 1 : i + 1; /* b's last two dims swapped */
    if (t->strides[i] != t->strides[j] * t->shape[j])
      return false;
  }
  return true;
}

/* matmul's errors past rank 2, PyTorch's (_matmul_impl's): a folded product's are mm's or mv's of the folded
 * shapes; otherwise the batch dims broadcast (infer_size's words) and one bmm of the flattened batches checks its
 * sizes, then, with products to take, its dtypes. *zeros: bmm has nothing to multiply and its operands' dtypes
 * differ (or are Bool): the result is zeros of b's dtype. */
static vkt_status batched_checks(const vkt_tensor *a, const vkt_tensor *b, bool *zeros) {
  int na = a->ndim, nb = b->ndim, ba = na > 2 ? na - 2 : 0, bb = nb > 2 ? nb - 2 : 0, nbatch = ba > bb ? ba : bb;
  int64_t n = na > 1 ? a->shape[na - 2] : 1, m1 = a->shape[na - 1], m2 = nb > 1 ? b->shape[nb - 2] : b->shape[0],
          p = nb > 1 ? b->shape[nb - 1] : 1, batch = 1;
  if (folds(a, b)) {
    bool t = nb > na; /* b folded as b.mT, times a.t() or a */
    const vkt_tensor *big = t ? b : a, *small = t ? a : b;
    int64_t rows = t ? p : 1, k = t ? m2 : m1;
    for (int d = 0; d < big->ndim - (t ? 2 : 1); d++)
      rows *= big->shape[d];
    vkt_status st;
    if (small->ndim == 1)
      return (st = mv_sizes(rows, k, small->shape[0])) ? st : addmv_dtypes(small->dtype, big, small);
    /* product()'s check words mm's dtype error */
    return mm_sizes(rows, k, t ? a->shape[1] : b->shape[0], t ? a->shape[0] : b->shape[1]);
  }
  for (int i = nbatch - 1; i >= 0; i--) {
    int ia = i - (nbatch - ba), ib = i - (nbatch - bb);
    int64_t sa = ia >= 0 ? a->shape[ia] : 1, sb = ib >= 0 ? b->shape[ib] : 1;
    if (sa != sb && sa != 1 && sb != 1)
      return vkt_fail(VKT_ERR_RUNTIME,
                      "The size of tensor a (%lld) must match the size of tensor b (%lld) at non-singleton "
                      "dimension %d",
                      (long long)sa, (long long)sb, i);
    batch *= sa == 1 ? sb : sa;
  }
  if (m1 != m2)
    return vkt_fail(VKT_ERR_RUNTIME,
                    "Expected size for first two dimensions of batch2 tensor to be: [%lld, %lld] but got: [%lld, "
                    "%lld].",
                    (long long)batch, (long long)m1, (long long)batch, (long long)m2);
  *zeros = (a->dtype != b->dtype || a->dtype == VKT_BOOL) && (batch * n * p == 0 || m1 == 0);
  return *zeros ? VKT_OK : batch_dtypes(a, b);
}

vkt_status vkt_matmul(const vkt_tensor *a, const vkt_tensor *b, vkt_tensor *result) {
  mm_plan p;
  bool zeros = false;
  vkt_status st = scalar_operand(a, b);
  if (!st)
    st = a->ndim > 2 || b->ndim > 2 ? batched_checks(a, b, &zeros) : small_checks(a, b, &zeros);
  if (st || !zeros)
    return st ? st : product(a, b, &(mm_epilogue){NULL, one, one, 0}, result);
  int device;
  if ((st = vkt_same_device(2, (const vkt_tensor *[]){a, b}, &device)) || (st = plan(a, b, &p)))
    return st;
  return unmultiplied(NULL, b->dtype, device, p.fndim, p.fshape, one, result);
}

vkt_status vkt_mm(const vkt_tensor *a, const vkt_tensor *b, vkt_tensor *result) {
  if (a->ndim != 2 || b->ndim != 2)
    return vkt_fail(VKT_ERR_RUNTIME, "%s must be a matrix", a->ndim != 2 ? "self" : "mat2");
  return vkt_matmul(a, b, result);
}

vkt_status vkt_linear(const vkt_tensor *x, const vkt_tensor *w, const vkt_tensor *bias, vkt_tensor *result) {
  vkt_tensor wt = {0};
  if (w->ndim != 1 && w->ndim != 2)
    return vkt_fail(VKT_ERR_RUNTIME, "linear(): weight must be 1-D or 2-D, got %d-D", w->ndim);
  vkt_status st = w->ndim == 2 ? vkt_transpose(&wt, w, 0, 1) : (vkt_tensor_share(&wt, w), VKT_OK);
  if (!st && bias && w->ndim == 2)
    st = vkt_addmm_dtypes(bias, x, w);
  if (!st)
    st = product(x, &wt, &(mm_epilogue){bias, one, one, 0}, result);
  vkt_tensor_release(&wt);
  return st;
}

/* PyTorch's kernels with nothing to multiply (k = 0, or no batch) scale a result of numel elements of dtype d in
 * place, result.mul_(beta), unless it is empty or beta is 0: mul_'s cast check refuses a float beta on an integer or
 * Bool result and an int one on a Bool result. (beta=True passes there; vkt's scalar does not keep that it was a
 * bool.) */
static vkt_status beta_scales(vkt_dtype d, int64_t numel, vkt_scalar beta) {
  vkt_dtype scaled = beta.is_float && !vkt_dtypes[d].is_float ? vkt_default_float()
                     : !beta.is_float && d == VKT_BOOL      ? VKT_INT64
                                                            : d;
  if (numel == 0 || is_zero(beta) || scaled == d)
    return VKT_OK;
  return vkt_fail(VKT_ERR_RUNTIME, "result type %s can't be cast to the desired output type %s",
                  vkt_dtypes[scaled].torch_name, vkt_dtypes[d].torch_name);
}

/* A Bool product's result with nothing to multiply, of ndim dims of shape, on a's and b's device: PyTorch's kernels
 * return it before they refuse Bool (unmultiplied's). */
static vkt_status bool_unmultiplied(const vkt_tensor *input, const vkt_tensor *a, const vkt_tensor *b, int ndim,
                                    const int64_t *shape, vkt_scalar beta, vkt_tensor *result) {
  int device;
  vkt_status st = vkt_same_device(3, (const vkt_tensor *[]){input, a, b}, &device);
  return st ? st : unmultiplied(input, VKT_BOOL, device, ndim, shape, beta, result);
}

/* addmm with k = 0: input expands to the result first, then beta_scales; a Bool one, which has no kernel, is
 * zeros (beta 0) or empty. */
static vkt_status addmm_nothing(const vkt_tensor *input, const vkt_tensor *m1, const vkt_tensor *m2, vkt_scalar beta,
                                vkt_tensor *result, bool *done) {
  int64_t shape[2] = {m1->shape[0], m2->shape[1]};
  vkt_tensor ex = {0};
  vkt_status st = vkt_expand(&ex, input, 2, shape);
  vkt_tensor_release(&ex);
  if (st || (st = beta_scales(m2->dtype, shape[0] * shape[1], beta)) || m2->dtype != VKT_BOOL)
    return st;
  *done = true;
  return bool_unmultiplied(input, m1, m2, 2, shape, beta, result);
}

vkt_status vkt_addmm(const vkt_tensor *input, const vkt_tensor *m1, const vkt_tensor *m2, vkt_scalar beta,
                     vkt_scalar alpha, vkt_tensor *result) {
  if (m1->ndim != 2 || m2->ndim != 2)
    return vkt_fail(VKT_ERR_RUNTIME, "mat%d must be a matrix, got %d-D tensor", m1->ndim != 2 ? 1 : 2,
                    m1->ndim != 2 ? m1->ndim : m2->ndim);
  bool done = false;
  vkt_status st = vkt_addmm_dtypes(input, m1, m2);
  if (!st && m1->shape[1] == 0 && m2->shape[0] == 0) /* nothing to multiply */
    st = addmm_nothing(input, m1, m2, beta, result, &done);
  return st || done ? st : product(m1, m2, &(mm_epilogue){input, beta, alpha, 0}, result);
}

vkt_status vkt_matmul_add_relu(const vkt_tensor *lhs, const vkt_tensor *rhs, const vkt_tensor *bias,
                               vkt_tensor *result) {
  return product(lhs, rhs, &(mm_epilogue){bias, one, one, VKT_MATMUL_RELU}, result);
}

vkt_status vkt_matmul_add_relu_reference(const vkt_tensor *lhs, const vkt_tensor *rhs, const vkt_tensor *bias,
                                         vkt_tensor *result) {
  vkt_tensor mm = {0}, sum = {0};
  const vkt_scalar none = {false, 0, 0};
  vkt_status st = vkt_matmul(lhs, rhs, &mm);
  if (!st)
    st = vkt_binary(VKT_OP_ADD, (vkt_operand){.t = &mm}, (vkt_operand){.t = bias}, one, NULL, &sum);
  if (!st)
    st = vkt_unary(VKT_OP_RELU, &sum, none, none, NULL, result);
  vkt_tensor_release(&mm);
  vkt_tensor_release(&sum);
  return st;
}

/* ---- the shader path ---- */

/* The tile of out one workgroup computes, BK deep; each of its invocations (256, or bm * bn / (tm * tn) for
 * the wide kind) sums a TM x TN block. Large float32 products take a wide tile, which does 4 times the work
 * per shared-memory read, and the largest the one of 128 invocations that do 8 times (two of its
 * workgroups share a multiprocessor); the rest, and products with too few wide tiles to fill a GPU, take
 * the small one.
 * float16 products take the tensor-core shaders where the adapter has them: workgroup-scope matrices
 * (VK_NV_cooperative_matrix2) when the operands are dense along one dim each, else subgroup fragments
 * staged by the shader, with the wider tile when there are enough of them. */
typedef enum { MM_SMALL, MM_WIDE, MM_COOP, MM_COOP2, MM_MATVEC } mm_kind;

typedef struct {
  const char *shader;
  mm_kind kind;
  int bm, bn, bk, tm, tn; /* matvec: outputs per workgroup along bm or bn, the other 1 */
} mm_tile;

/* 32 deep, so that a workgroup has more loads in flight: an H100's split-K 64x65536x64 took 0.042 ms
 * against 0.048 with 16; the 16-deep one serves where that shared memory does not fit (float64 on
 * adapters with less than 34 KiB a workgroup). */
static const mm_tile small_tile = {"matmul.comp", MM_SMALL, 64, 64, 32, 4, 4};
static const mm_tile shallow_tile = {"matmul.comp", MM_SMALL, 64, 64, 16, 4, 4};
static const mm_tile wide_tile = {"matmul_wide.comp", MM_WIDE, 128, 128, 16, 8, 8};
static const mm_tile big_tile = {"matmul_wide.comp", MM_WIDE, 128, 128, 16, 16, 8};
/* 64 x 128 by 128 invocations of 8 x 8, for 64 to 127 rows (a convolution's 64 channels), which the small tile
 * otherwise takes. */
static const mm_tile low_tile = {"matmul_wide.comp", MM_WIDE, 64, 128, 16, 8, 8};
static const mm_tile coop_tile = {"matmul_coop.comp", MM_COOP, 128, 128, 32, 0, 0};
static const mm_tile coop_wide_tile = {"matmul_coop.comp", MM_COOP, 128, 256, 16, 0, 0};
/* 128 x 128, 64 deep, two slices a step: 0.50 ms for float16 4096^3 on an H100, against 0.53-0.61 for 32
 * deep (2, 4 or 8 slices a step), 0.74-0.79 for 16 deep, and 0.53-1.6 for 128 x 256 and 256 x 128 tiles. */
static const mm_tile coop2_tile = {"matmul_coop2.comp", MM_COOP2, 128, 128, 64, 0, 0};
#define COOP2_UNROLL 2
/* One column (N = 1) or one row (M = 1); 8 outputs a workgroup when the matrix is dense along k, else 32. */
static const mm_tile matvec_tiles[2][2] = {
    {{"matvec.comp", MM_MATVEC, 32, 1, 0, 0, 0}, {"matvec.comp", MM_MATVEC, 8, 1, 0, 0, 0}},
    {{"matvec.comp", MM_MATVEC, 1, 32, 0, 0, 0}, {"matvec.comp", MM_MATVEC, 1, 8, 0, 0, 0}}};
#define MM_WIDE_MIN_TILES 64 /* the wide tiles need this many workgroups, the big and wider ones more */

static int64_t tiles_of(const vkt_tensor *out, int bm, int bn) {
  int nd = out->ndim;
  int64_t t = (out->shape[nd - 2] + bm - 1) / bm * ((out->shape[nd - 1] + bn - 1) / bn);
  for (int d = 0; d < nd - 2; d++)
    t *= out->shape[d];
  return t;
}

/* The matrix-vector tile for a product with one column or one row, or NULL. */
static const mm_tile *matvec_tile(const vkt_op_args *a, const vkt_adapter_props *p) {
  int nd = a->out->ndim;
  int64_t m = a->out->shape[nd - 2], n = a->out->shape[nd - 1];
  if (m != 1 && n != 1)
    return NULL;
  bool row = m == 1 && n != 1; /* the matrix is b, seen as [n, k] */
  const vkt_tensor *mat = row ? a->in[1] : a->in[0];
  int64_t sk = row ? mat->strides[nd - 2] : mat->strides[nd - 1],
          si = row ? mat->strides[nd - 1] : mat->strides[nd - 2];
  const mm_tile *t = &matvec_tiles[row][sk <= si];
  return (uint64_t)((row ? n : m) + t->bm * t->bn - 1) / (uint64_t)(t->bm * t->bn) <=
                 p->max_workgroup_count[row ? 0 : 1]
             ? t
             : NULL;
}

/* The shared memory a tile's shader declares. */
static uint64_t shared_bytes(const mm_tile *t, vkt_dtype compute) {
  switch (t->kind) {
  case MM_COOP: /* two stages of float16 slices in padded rows, and one float32 fragment per subgroup */
    return 2 * 2 * ((uint64_t)t->bm * (t->bk + 8) + (uint64_t)t->bk * (t->bn + 8)) + 8 * 16 * 8 * 4;
  case MM_COOP2: return 0; /* the driver stages workgroup-scope matrices in memory it reserves */
  case MM_MATVEC: return 256 * vkt_dtype_size(compute);
  default: return (uint64_t)(t->bm + t->bn + 8) * t->bk * vkt_dtype_size(compute); /* + matmul_wide.comp's padding */
  }
}

/* Whether dim d of t is walked with stride 1 (or not walked). */
static bool unit_stride(const vkt_tensor *t, int d) { return t->shape[d] == 1 || t->strides[d] == 1; }

/* The dim along which a matrix operand's loads are contiguous: its last (a along k, b along n) where that
 * stride is the smaller or it has one row, else the one before. */
static int fast_dim(const vkt_tensor *t) {
  int nd = t->ndim;
  return t->shape[nd - 2] == 1 || t->strides[nd - 1] <= t->strides[nd - 2] ? nd - 1 : nd - 2;
}

/* The workgroup-scope shader: where the adapter has it and the tile is a multiple of its granularity; it
 * reads each operand through a tensor layout, dense along its fast dim. */
static bool coop2_fits(const vkt_op_args *a, const vkt_adapter_props *p) {
  const vkt_tensor *x = a->in[0], *y = a->in[1];
  if (x->dtype != VKT_FLOAT16 || y->dtype != VKT_FLOAT16 || !p->coop2 || coop2_tile.bm % p->coop2_granularity[0] ||
      coop2_tile.bn % p->coop2_granularity[1] || coop2_tile.bk % p->coop2_granularity[2])
    return false;
  return unit_stride(x, fast_dim(x)) && unit_stride(y, fast_dim(y));
}

static const mm_tile *small(const vkt_op_args *a, const vkt_adapter_props *p) {
  return shared_bytes(&small_tile, a->compute) <= p->max_shared_memory ? &small_tile : &shallow_tile;
}

static const mm_tile *tile_for(const vkt_op_args *a) {
  int nd = a->out->ndim;
  const vkt_adapter_props *p = vkt_device_props(a->out->storage->dev);
  if (!vkt_dtypes[a->compute].is_float || a->flags & VKT_MATMUL_SMALL_TILE)
    return small(a, p); /* the other shaders are written for float sums */
  const mm_tile *mv = matvec_tile(a, p);
  if (mv)
    return mv;
  if (coop2_fits(a, p))
    return &coop2_tile;
  if (a->in[0]->dtype == VKT_FLOAT16 && a->in[1]->dtype == VKT_FLOAT16 && p->coop_f16 && p->subgroup_size == 32) {
    /* the wider tile where there are enough of them; either where its shared memory fits */
    if (tiles_of(a->out, 128, 256) >= 2 * MM_WIDE_MIN_TILES &&
        shared_bytes(&coop_wide_tile, a->compute) <= p->max_shared_memory)
      return &coop_wide_tile;
    if (shared_bytes(&coop_tile, a->compute) <= p->max_shared_memory)
      return &coop_tile;
  }
  /* the wide tiles want K >= BK: only their first slice may be partial */
  if (a->compute != VKT_FLOAT32 || a->out->shape[nd - 2] < 64 || a->out->shape[nd - 1] < 128 ||
      a->in[0]->shape[nd - 1] < wide_tile.bk)
    return small(a, p);
  int64_t tiles = tiles_of(a->out, 128, 128);
  bool split = kernel_split(a->out->storage->dev, nd, a->out->shape[nd - 2], a->out->shape[nd - 1],
                            a->in[0]->shape[nd - 1], tiles);
  const mm_tile *t = a->out->shape[nd - 2] < 128 ? (tiles_of(a->out, 64, 128) >= MM_WIDE_MIN_TILES ? &low_tile : NULL)
                     : tiles >= 4 * MM_WIDE_MIN_TILES || split ? &big_tile
                     : tiles >= MM_WIDE_MIN_TILES     ? &wide_tile
                                                      : NULL;
  return t && shared_bytes(t, a->compute) <= p->max_shared_memory ? t : small(a, p);
}

typedef struct {
  uint32_t alpha[2], beta[2]; /* bits of the accumulator type */
  uint32_t m, n, k, z0;
  uint32_t offset[4];  /* elements: out, a, b, bias */
  uint32_t stride[6];  /* elements: rows and columns of a, b, bias */
  uint32_t batch[2];   /* the batch dims the shader walks: outer, inner */
  uint32_t bstride[6]; /* elements: a, b, bias along batch[0], batch[1] */
} mm_push;
static_assert(sizeof(mm_push) == 104, "mm_push must match shaders/matmul.comp");

/* The type the shader sums in: the compute dtype, but int32 for int32 and uint8 products, whose
 * results wrap the same in 32 bits as in 64 (as PyTorch's CPU results do), so they need no shaderInt64. */
static vkt_dtype shader_accumulator(const vkt_op_args *a) {
  if (a->compute == VKT_INT64 && a->out->dtype != VKT_INT64)
    return VKT_INT32;
  return a->compute;
}

/* The operands a launch binds: out, a, b, then the bias if there is one. */
static int operands(const vkt_op_args *a, const vkt_tensor **t) {
  t[0] = a->out, t[1] = a->in[0], t[2] = a->in[1], t[3] = a->in[2];
  return a->in[2] ? 4 : 3;
}

bool vkt_matmul_supports(const vkt_op *op, const vkt_op_args *a, const char **why) {
  const vkt_tensor *t[4];
  int n = operands(a, t), nd = a->out->ndim;
  const vkt_adapter_props *p = vkt_device_props(a->out->storage->dev);
  (void)op;
  if (!vkt_operands_fit(p, shader_accumulator(a), n, t, why))
    return false;
  *why = "more than 2^32 output elements";
  if (vkt_tensor_numel(a->out) > UINT32_MAX)
    return false;
  const mm_tile *tile = tile_for(a);
  *why = "more row or column tiles than maxComputeWorkGroupCount";
  if ((a->out->shape[nd - 1] + tile->bn - 1) / tile->bn > p->max_workgroup_count[0] ||
      (a->out->shape[nd - 2] + tile->bm - 1) / tile->bm > p->max_workgroup_count[1])
    return false;
  *why = "the tiles need more shared memory than the adapter has";
  return shared_bytes(tile, a->compute) <= p->max_shared_memory;
}

static void encode(vkt_dtype compute, vkt_scalar v, uint32_t out[2]) {
  double f = v.is_float ? v.f : (double)v.i;
  float g = (float)f;
  int64_t i = v.is_float ? (int64_t)v.f : v.i;
  out[1] = 0;
  if (compute == VKT_FLOAT64)
    memcpy(out, &f, 8);
  else if (!vkt_dtypes[compute].is_float)
    memcpy(out, &i, 8); /* little-endian: the low word first, as the shader's decode reads it */
  else
    memcpy(out, &g, 4);
}

/* The push constants but for offsets and z0, which each dispatch sets. */
static void fill_push(const vkt_op_args *a, int n, const int64_t *bshape, const int64_t *bstrides, int rank,
                      mm_push *push) {
  const vkt_tensor *t[4];
  int nd = a->out->ndim;
  operands(a, t);
  encode(shader_accumulator(a), a->param[1], push->alpha);
  encode(shader_accumulator(a), a->param[0], push->beta);
  push->m = (uint32_t)a->out->shape[nd - 2], push->n = (uint32_t)a->out->shape[nd - 1];
  push->k = (uint32_t)t[1]->shape[nd - 1];
  for (int k = 1; k < n; k++) {
    push->stride[2 * (k - 1)] = (uint32_t)t[k]->strides[nd - 2];
    push->stride[2 * (k - 1) + 1] = (uint32_t)t[k]->strides[nd - 1];
  }
  /* The shader walks the last two merged batch dims; a 1 stands in for missing ones. */
  for (int d = 0; d < 2; d++) {
    int r = rank - 2 + d;
    push->batch[d] = r >= 0 ? (uint32_t)bshape[r] : 1;
    for (int k = 1; k < n; k++)
      push->bstride[2 * (k - 1) + d] = r >= 0 ? (uint32_t)bstrides[k * VKT_MAX_DIMS + r] : 0;
  }
}

/* Whether t can move as 16-byte vectors of `unit` elements along dim `fast`: dense that way, that extent,
 * the offset and every other stride that is walked (dims longer than 1) multiples of unit. */
static bool moves_as_vectors(const vkt_tensor *t, int fast, int unit) {
  if (t->strides[fast] != 1 || t->shape[fast] % unit || t->offset % unit)
    return false;
  for (int d = 0; d < t->ndim; d++)
    if (d != fast && t->shape[d] > 1 && t->strides[d] % unit)
      return false;
  return true;
}

/* The tensor-core shader's 16-byte staging: a dense along k, b along n, in float16 (8 to a vector). */
static bool vec8(const vkt_op_args *a) {
  int nd = a->out->ndim;
  return moves_as_vectors(a->in[0], nd - 1, 8) && moves_as_vectors(a->in[1], nd - 1, 8);
}

/* The wide shader's 16-byte loads of operand k (0: a, 1: b) along its fast direction, in float32. */
static bool vec4(const vkt_op_args *a, int k, bool k_fast) {
  const vkt_tensor *t = a->in[k];
  int nd = t->ndim, fast = k == 0 ? (k_fast ? nd - 1 : nd - 2) : (k_fast ? nd - 2 : nd - 1);
  return t->dtype == VKT_FLOAT32 && moves_as_vectors(t, fast, 4);
}

#define MM_MAX_BINDINGS 8 /* VKT_MAX_BINDINGS */

/* vkt_matmul_variant.flags: the #defines a product's operands and tile ask for beyond their types. */
enum {
  MMV_A_K_FAST = 1 << 0,
  MMV_B_N_FAST = 1 << 1,
  MMV_ALIGNED = 1 << 2,
  MMV_ALIGNED_OUT = 1 << 3,
  MMV_VEC8 = 1 << 4,
  MMV_VEC4_A = 1 << 5,
  MMV_VEC4_B = 1 << 6,
  MMV_VEC4_OUT = 1 << 7,
  MMV_VEC4_C = 1 << 8,
  MMV_RELU = 1 << 9,
  MMV_EPILOGUE = 1 << 10,
  MMV_ROWS32 = 1 << 11,     /* matmul_wide.comp's EPILOGUE_ROWS */
  MMV_PIECES_SHIFT = 12,    /* 3 bits: log2 of the pieces of a split product's tiles (split_of()), or 0 */
  MMV_PIECES = 7 << 12
};

/* Tiles summed by pieces (matmul_wide.comp's PIECES): the last `tiles` of a product's tiles, each by `pieces`
 * workgroups, or none (pieces 0). */
typedef struct {
  uint32_t pieces, tiles;
} mm_split;

/* Which tiles of a's product on tile (nbound operands bound) are split: every one where kernel_split() says, else
 * the last wave's. The last wave split: where a product's 128 x 128 tiles on a GPU that runs G of the big tile's
 * workgroups at once (two a multiprocessor) leave the last wave mostly idle (R = T % G <= G / 2 tiles, and more
 * than a twentieth of the waves' places idle), each of the last R tiles is summed by pieces, as many as fit in G
 * (a power of two, at most 16, each at least two slices deep). Either needs every matrix in one dispatch (at most
 * two batch dims, which the shader walks) and two more bindings. */
static mm_split split_of(const vkt_op_args *a, const mm_tile *tile, int nbound) {
  const vkt_adapter_props *p = vkt_device_props(a->out->storage->dev);
  int nd = a->out->ndim;
  mm_split none = {0, 0};
  uint64_t g = p->product_slots, tiles = (uint64_t)tiles_of(a->out, tile->bm, tile->bn);
  uint64_t k = (uint64_t)a->in[0]->shape[nd - 1];
  if (tile != &big_tile || nd > 4 || nbound + 2 > MM_MAX_BINDINGS)
    return none;
  uint64_t pieces = (uint64_t)kernel_split(a->out->storage->dev, nd, a->out->shape[nd - 2], a->out->shape[nd - 1],
                                           (int64_t)k, (int64_t)tiles);
  if (pieces)
    return tiles * pieces <= p->max_workgroup_count[0] ? (mm_split){(uint32_t)pieces, (uint32_t)tiles} : none;
  uint64_t r = g ? tiles % g : 0, places = g ? (tiles + g - 1) / g * g : 0, slices = (k + tile->bk - 1) / tile->bk;
  if (g == 0 || tiles < g || r == 0 || 2 * r > g || (places - tiles) * 20 <= places || r > VKT_SYNC_WORDS / 64)
    return none;
  pieces = 16;
  while (pieces > 1 && (r * pieces > g || 2 * pieces > slices))
    pieces /= 2;
  return pieces > 1 && tiles + r * (pieces - 1) <= p->max_workgroup_count[0] ? (mm_split){(uint32_t)pieces, (uint32_t)r}
                                                                            : none;
}

static unsigned pieces_flags(uint32_t pieces) {
  unsigned log2 = 0;
  while (pieces >> (log2 + 1))
    log2++;
  return log2 << MMV_PIECES_SHIFT;
}

/* What a's kernel on tile (n operands bound) depends on; with a fused epilogue out is not stored (nor
 * read as vec4s). Cheap: no text is made, so a launch whose kernel is known costs no formatting. */
static void mm_variant_of(const vkt_op_args *a, const mm_tile *tile, int n, bool epilogue, vkt_matmul_variant *v) {
  const vkt_tensor *t[4];
  int nd = a->out->ndim;
  operands(a, t);
  memset(v, 0, sizeof *v);
  v->tile = tile, v->n = (uint8_t)n, v->acc = (uint8_t)shader_accumulator(a);
  for (int k = 0; k < n; k++)
    v->dtype[k] = (uint8_t)t[k]->dtype;
  const vkt_tensor *x = a->in[0], *y = a->in[1];
  bool a_k_fast = fast_dim(x) == nd - 1, b_n_fast = fast_dim(y) == nd - 1;
  unsigned f = (a_k_fast ? MMV_A_K_FAST : 0) | (b_n_fast ? MMV_B_N_FAST : 0) |
               (a->flags & VKT_MATMUL_RELU ? MMV_RELU : 0) | (epilogue ? MMV_EPILOGUE : 0);
  if (tile->kind == MM_COOP2) { /* ALIGNED(_OUT): operands (out) in rows of 8 elements, for unclamped layouts */
    v->local_size = vkt_device_props(a->out->storage->dev)->coop2_invocations;
    f |= (moves_as_vectors(x, fast_dim(x), 8) && moves_as_vectors(y, fast_dim(y), 8) ? MMV_ALIGNED : 0) |
         (moves_as_vectors(a->out, nd - 1, 8) ? MMV_ALIGNED_OUT : 0);
  }
  if (tile->kind == MM_COOP && vec8(a))
    f |= MMV_VEC8;
  if (tile->kind == MM_WIDE) { /* 16-byte loads where the operands allow, and stores and bias reads */
    bool out4 = !epilogue && a->out->dtype == VKT_FLOAT32 && moves_as_vectors(a->out, nd - 1, 4),
         bias4 = out4 && n == 4 && t[3]->dtype == VKT_FLOAT32 && moves_as_vectors(t[3], nd - 1, 4);
    f |= (vec4(a, 0, a_k_fast) ? MMV_VEC4_A : 0) | (vec4(a, 1, !b_n_fast) ? MMV_VEC4_B : 0) |
         (out4 ? MMV_VEC4_OUT : 0) | (bias4 ? MMV_VEC4_C : 0);
  }
  v->flags = (uint16_t)f;
}

/* The shader's #defines for variant v. */
static int mm_defines(const vkt_matmul_variant *v, char *buf, size_t size) {
  static const char *const names[] = {"TO", "TA", "TB", "TC"};
  const mm_tile *tile = v->tile;
  unsigned f = v->flags;
  int len = 0;
  if (f & MMV_PIECES) /* first, so that VKT_PROFILE's line shows it; its two buffers after the others */
    len += snprintf(buf + len, size - (size_t)len, "#define PIECES %u\n#define SPLIT_BINDING %d\n",
                    1u << ((f & MMV_PIECES) >> MMV_PIECES_SHIFT), f & MMV_EPILOGUE ? v->b_binding + 1 : v->n);
  for (int k = 0; k < v->n; k++)
    len += vkt_type_defines(buf + len, size - (size_t)len, names[k], v->dtype[k]);
  len += snprintf(buf + len, size - (size_t)len,
                  "#define BM %d\n#define BN %d\n#define BK %d\n#define TM %d\n"
                  "#define TN %d\n",
                  tile->bm, tile->bn, tile->bk, tile->tm, tile->tn);
  if (tile->kind == MM_MATVEC)
    len += snprintf(buf + len, size - (size_t)len, "#define ROWS %d\n#define KS %d\n%s", tile->bm * tile->bn,
                    256 / (tile->bm * tile->bn), tile->bm == 1 ? "#define MV_M1\n" : "");
  if (tile->kind == MM_COOP2)
    len += snprintf(buf + len, size - (size_t)len, "#define LOCAL_SIZE %u\n#define UNROLL %d\n%s%s", v->local_size,
                    COOP2_UNROLL, f & MMV_ALIGNED ? "#define ALIGNED\n" : "",
                    f & MMV_ALIGNED_OUT ? "#define ALIGNED_OUT\n" : "");
  if (f & MMV_VEC8)
    len += snprintf(buf + len, size - (size_t)len, "#define VEC8\n");
  if (tile->kind == MM_WIDE)
    len += snprintf(buf + len, size - (size_t)len, "#define LOCAL_SIZE %d\n%s%s%s%s",
                    tile->bm * tile->bn / (tile->tm * tile->tn), f & MMV_VEC4_A ? "#define VEC4_A\n" : "",
                    f & MMV_VEC4_B ? "#define VEC4_B\n" : "", f & MMV_VEC4_OUT ? "#define VEC4_OUT\n" : "",
                    f & MMV_VEC4_C ? "#define VEC4_C\n" : "");
  static const char *const acc[VKT_DTYPE_COUNT] = {[VKT_FLOAT32] = "#define ACC float\n",
                                                   [VKT_FLOAT64] = "#define ACC double\n#define ACC_FLOAT64\n",
                                                   [VKT_INT32] = "#define ACC int\n#define ACC_INT\n",
                                                   [VKT_INT64] = "#define ACC int64_t\n#define ACC_INT64\n"};
  len += snprintf(buf + len, size - (size_t)len, "%s%s%s%s%s", acc[v->acc], v->n == 4 ? "#define BIAS\n" : "",
                  f & MMV_RELU ? "#define RELU\n" : "", f & MMV_A_K_FAST ? "#define A_K_FAST\n" : "",
                  f & MMV_B_N_FAST ? "#define B_N_FAST\n" : "");
  if (f & MMV_EPILOGUE)
    len += snprintf(buf + len, size - (size_t)len,
                    "#define EPILOGUE\n#define NOUT %d\n#define NREAD %d\n#define A_BINDING %d\n#define B_BINDING %d\n",
                    v->nout, v->nread, v->a_binding, v->b_binding);
  if ((f & MMV_EPILOGUE) && tile->kind == MM_WIDE)
    len += snprintf(buf + len, size - (size_t)len, "#define EPILOGUE_ROWS %d\n", f & MMV_ROWS32 ? 32 : 16);
  return len;
}

/* Where a launch's dispatches differ: the offset (elements) of each of n operands, whose batch dims were
 * merged into bshape and bstrides, goes to offset[k] of the push constants, and the first matrix to *z0. */
typedef struct {
  const vkt_tensor *const *t;
  int n, rank;
  const int64_t *bshape, *bstrides;
  uint32_t *offset[MM_MAX_BINDINGS], *z0;
} mm_batches;

/* A product of this many multiply-adds or more goes to an idle GPU at once, so that it runs while the host
 * records what follows: softmax(x @ w).sum() forward + backward at 4096^2 spent 0.11-0.21 ms on the host before
 * anything ran, and went 9.38 -> 9.27 ms (H200, medians of 8 rounds each, alternated in one process). */
#define LONG_PRODUCT (1ull << 30)

/* Records the dispatches: one per index of the merged batch dims the shader does not walk, and per
 * maxComputeWorkGroupCount[2] matrices of those it does (inner of them), m x n x k each. The nb tensors bound
 * are written where their bit in writes is set. */
static vkt_status dispatch_batches(vkt_device *dev, vkt_pipeline *pipe, const mm_tile *tile,
                                   const vkt_tensor *const *bound, int nb, unsigned writes, const mm_batches *w,
                                   uint32_t m, uint32_t n, uint32_t k, uint64_t inner, const void *push,
                                   uint32_t push_size, mm_split sp) {
  vkt_binding b[MM_MAX_BINDINGS];
  for (int k = 0; k < nb; k++)
    b[k] = (vkt_binding){&bound[k]->storage->alloc, 0, bound[k]->storage->alloc.size, (writes >> k & 1u) != 0};
  uint64_t batch = 0, outer = 1;
  uint32_t maxz = vkt_device_props(dev)->max_workgroup_count[2];
  uint32_t tiles = (n + tile->bn - 1) / tile->bn * ((m + tile->bm - 1) / tile->bm) * (uint32_t)inner,
           pieces = sp.pieces, split = sp.tiles;
  vkt_tensor partial = {0}; /* the split tiles' pieces' sums */
  vkt_status st = VKT_OK;
  if (pieces) {
    int64_t size = (int64_t)split * pieces * tile->bm * tile->bn;
    if ((st = vkt_tensor_empty(&partial, vkt_tensor_device(bound[0]), VKT_FLOAT32, 1, &size)) ||
        (st = vkt_mem_sync_words(dev, split, &b[nb + 1])))
      goto finish;
    b[nb] = (vkt_binding){&partial.storage->alloc, 0, partial.storage->alloc.size, true};
  }
  for (int d = 0; d < w->rank - 2; d++)
    outer *= (uint64_t)w->bshape[d];
  for (uint64_t o = 0; o < outer && !st; o++) {
    for (int k = 0; k < w->n; k++) {
      int64_t off = w->t[k]->offset, rem = (int64_t)o;
      for (int d = w->rank - 3; d >= 0; d--) {
        off += rem % w->bshape[d] * w->bstrides[k * VKT_MAX_DIMS + d];
        rem /= w->bshape[d];
      }
      *w->offset[k] = (uint32_t)off;
    }
    for (uint64_t z0 = 0; z0 < inner && !st; z0 += maxz) {
      uint32_t groups[3] = {(n + tile->bn - 1) / tile->bn, (m + tile->bm - 1) / tile->bm,
                            (uint32_t)(inner - z0 < maxz ? inner - z0 : maxz)};
      if (pieces) /* split_of() asked for one dispatch of every matrix */
        groups[0] = tiles + split * (pieces - 1), groups[1] = groups[2] = 1;
      *w->z0 = (uint32_t)z0;
      st = vkt_stream_dispatch(dev, pipe, b, nb + (pieces ? 2 : 0), push, push_size, groups, &batch);
    }
  }
  for (int j = 0; j < nb && !st; j++)
    vkt_storage_touched(bound[j]->storage, batch);
  if (pieces && !st)
    vkt_storage_touched(partial.storage, batch);
  if (!st && (uint64_t)m * n * k * inner * outer >= LONG_PRODUCT)
    st = vkt_stream_flush_if_idle(dev);
finish:
  vkt_tensor_release(&partial);
  return st;
}

/* The batch dims of n operands (their shapes' all but the last two), merged. */
static int merge_batches(int n, const vkt_tensor *const *t, int64_t *bshape, int64_t *bstrides) {
  const vkt_tensor *views[MM_MAX_BINDINGS];
  vkt_tensor bt[MM_MAX_BINDINGS];
  for (int k = 0; k < n; k++) {
    bt[k] = *t[k];
    bt[k].ndim = t[0]->ndim - 2;
    views[k] = &bt[k];
  }
  return vkt_merge_dims(n, views, bshape, bstrides);
}

/* Products' pipelines remembered by variant (a slot each, the last one in it), so that a launch whose kernel
 * is known neither formats its #defines nor hashes them. */
enum { MM_CACHE_SLOTS = 64 };
typedef struct {
  const vkt_device *dev;
  vkt_matmul_variant v;
  vkt_pipeline *pipe;
} mm_cached;
static mm_cached mm_cache[MM_CACHE_SLOTS];

static vkt_status pipeline_of(vkt_device *dev, const vkt_matmul_variant *v, uint32_t push_size, vkt_pipeline **pipe) {
  mm_cached *slot = &mm_cache[vkt_fnv1a(v, sizeof *v, VKT_FNV_SEED) % MM_CACHE_SLOTS];
  if (slot->pipe && slot->dev == dev && memcmp(&slot->v, v, sizeof *v) == 0) {
    *pipe = slot->pipe;
    return VKT_OK;
  }
  char defines[512];
  mm_defines(v, defines, sizeof defines);
  vkt_status st = vkt_pipeline_get(dev, ((const mm_tile *)v->tile)->shader, defines,
                                   v->n + vkt_matmul_extra_bindings(v), push_size, pipe);
  if (!st)
    *slot = (mm_cached){dev, *v, *pipe};
  return st;
}

vkt_status vkt_matmul_launch(const vkt_op *op, const vkt_op_args *a) {
  const vkt_tensor *t[4], *bound[4];
  int n = operands(a, t);
  int64_t bshape[VKT_MAX_DIMS], bstrides[4 * VKT_MAX_DIMS];
  int rank = merge_batches(n, t, bshape, bstrides);
  mm_push push = {0};
  fill_push(a, n, bshape, bstrides, rank, &push);
  const mm_tile *tile = tile_for(a);
  vkt_matmul_variant v;
  mm_variant_of(a, tile, n, false, &v);
  mm_split split = split_of(a, tile, n);
  v.flags |= pieces_flags(split.pieces);
  vkt_device *dev = a->out->storage->dev;
  vkt_pipeline *pipe;
  (void)op;
  vkt_status st = pipeline_of(dev, &v, sizeof push, &pipe);
  if (st)
    return st;
  for (int k = 0; k < n; k++) /* K == 0 leaves a and b without memory: bind out, which is not read */
    bound[k] = vkt_tensor_numel(t[k]) ? t[k] : a->out;
  mm_batches w = {
      t, n, rank, bshape, bstrides, {&push.offset[0], &push.offset[1], &push.offset[2], &push.offset[3]}, &push.z0};
  return dispatch_batches(dev, pipe, tile, bound, n, 1u, &w, push.m, push.n, push.k,
                          (uint64_t)push.batch[0] * push.batch[1], &push, sizeof push, split);
}

/* ---- fused epilogues ---- */

/* Every tile's shader takes an epilogue, float sums only. */
bool vkt_matmul_defers(const vkt_op_args *a) {
  const char *why;
  int nd = a->out->ndim;
  return a->compute == VKT_FLOAT32 && !a->in[2] && !a->flags && a->in[0]->shape[nd - 1] > 0 &&
         vkt_matmul_supports(NULL, a, &why);
}

/* The push constants of a fused epilogue's kernel: these, then the tensors read (5 words each, see
 * matmul.glsl), then the expression's scalars (8-byte aligned). */
typedef struct {
  uint32_t alpha; /* bits of float */
  uint32_t m, n, k, z0;
  uint32_t offset[3];  /* elements: the results, a, b */
  uint32_t stride[4];  /* elements: rows and columns of a, of b */
  uint32_t batch[2];   /* the batch dims the shader walks: outer, inner */
  uint32_t bstride[4]; /* elements: a, b along batch[0], batch[1] */
} mm_epilogue_push;
static_assert(sizeof(mm_epilogue_push) == 72, "mm_epilogue_push must match shaders/matmul.glsl");
#define EPILOGUE_MAX_WORDS 64 /* 256 bytes, an H100's limit */

static uint32_t epilogue_words(const vkt_matmul_epilogue *e) {
  uint32_t words = sizeof(mm_epilogue_push) / 4 + 5 * (uint32_t)e->nread;
  return words + words % 2 + 2 * (uint32_t)(e->nparams ? e->nparams : 1);
}

/* The tensors a launch binds, in binding order: results, tensors read, the product kept, a, b. */
static int epilogue_bound(const vkt_matmul_epilogue *e, const vkt_tensor **t, unsigned *writes) {
  int n = 0;
  for (int k = 0; k < e->nout; k++)
    t[n++] = e->out[k];
  for (int j = 0; j < e->nread; j++)
    t[n++] = e->read[j];
  if (e->keep)
    t[n++] = e->mm->out;
  *writes = ((1u << e->nout) - 1) | (e->keep ? 1u << (n - 1) : 0);
  t[n++] = e->mm->in[0];
  t[n++] = e->mm->in[1];
  return n;
}

bool vkt_matmul_epilogue_shader(const vkt_matmul_epilogue *e, const char **shader, vkt_matmul_variant *v,
                                uint32_t *push_size) {
  const vkt_tensor *t[MM_MAX_BINDINGS];
  const vkt_adapter_props *p = vkt_device_props(e->mm->out->storage->dev);
  const char *why;
  unsigned writes;
  if (e->nout + e->nread + e->keep + 2 > MM_MAX_BINDINGS)
    return false;
  int n = epilogue_bound(e, t, &writes);
  *push_size = 4 * epilogue_words(e);
  if (*push_size > p->max_push_constants || !vkt_operands_fit(p, VKT_FLOAT32, n, t, &why))
    return false;
  const mm_tile *tile = tile_for(e->mm);
  /* matmul_coop2.comp makes its one result per element of the workgroup's matrix of sums, where the driver
   * repeats the expression's code for each element an invocation holds (128) and runs it at the product's
   * occupancy: one op is faster than its own kernel (H200, float16 x @ w + b at 8x1024^3: 0.107-0.113 ms
   * against 0.127-0.136), two or more are slower (relu(x @ w + b) 0.144 against 0.134-0.138, gelu 0.156-0.166
   * against 0.143-0.147), and so are computed apart. The result is a float tile. */
  if (tile->kind == MM_COOP2 &&
      (e->nops > 1 || e->nout > 1 || (e->out[0]->dtype != VKT_FLOAT16 && e->out[0]->dtype != VKT_FLOAT32)))
    return false;
  mm_variant_of(e->mm, tile, 3, true, v);
  v->nout = (uint8_t)e->nout, v->nread = (uint8_t)e->nread, v->a_binding = (uint8_t)(n - 2),
  v->b_binding = (uint8_t)(n - 1);
  /* the wide tile's epilogue stages 32 rows of sums at a time where shared memory has room, else 16 */
  if (tile->kind == MM_WIDE && shared_bytes(tile, VKT_FLOAT32) + 32 * 128 * 4 <= p->max_shared_memory)
    v->flags |= MMV_ROWS32;
  v->flags |= pieces_flags(split_of(e->mm, tile, n).pieces);
  *shader = tile->shader;
  return true;
}

int vkt_matmul_defines(const vkt_matmul_variant *v, char *defines, size_t size) { return mm_defines(v, defines, size); }

int vkt_matmul_extra_bindings(const vkt_matmul_variant *v) { return v->flags & MMV_PIECES ? 2 : 0; }

vkt_status vkt_matmul_epilogue_launch(const vkt_matmul_epilogue *e, vkt_pipeline *pipe) {
  const vkt_op_args *a = e->mm;
  const vkt_tensor *bound[MM_MAX_BINDINGS], *t[MM_MAX_BINDINGS] = {a->out, a->in[0], a->in[1]};
  unsigned writes;
  int nb = epilogue_bound(e, bound, &writes), n = 3 + e->nread, nd = a->out->ndim;
  for (int j = 0; j < e->nread; j++)
    t[3 + j] = e->read[j];
  int64_t bshape[VKT_MAX_DIMS], bstrides[(MM_MAX_BINDINGS)*VKT_MAX_DIMS];
  int rank = merge_batches(n, t, bshape, bstrides);
  uint32_t words[EPILOGUE_MAX_WORDS] = {0};
  mm_epilogue_push *push = (mm_epilogue_push *)words;
  uint32_t *read = words + sizeof *push / 4, *param = read + 5 * e->nread + e->nread % 2;
  uint32_t alpha[2];
  encode(VKT_FLOAT32, a->param[1], alpha);
  push->alpha = alpha[0];
  push->m = (uint32_t)a->out->shape[nd - 2], push->n = (uint32_t)a->out->shape[nd - 1];
  push->k = (uint32_t)a->in[0]->shape[nd - 1];
  mm_batches w = {t, n, rank, bshape, bstrides, {&push->offset[0], &push->offset[1], &push->offset[2]}, &push->z0};
  for (int d = 0; d < 2; d++) /* the shader walks the last two merged batch dims; a 1 stands in for missing ones */
    push->batch[d] = rank - 2 + d >= 0 ? (uint32_t)bshape[rank - 2 + d] : 1;
  for (int k = 1; k < n; k++) { /* a, b, then the tensors read: rows, columns, then batch[0], batch[1] */
    uint32_t *s = k < 3 ? &push->stride[2 * (k - 1)] : &read[5 * (k - 3) + 1];
    s[0] = (uint32_t)t[k]->strides[nd - 2], s[1] = (uint32_t)t[k]->strides[nd - 1];
    for (int d = 0; d < 2; d++) {
      int r = rank - 2 + d;
      *(k < 3 ? &push->bstride[2 * (k - 1) + d] : &s[2 + d]) = r >= 0 ? (uint32_t)bstrides[k * VKT_MAX_DIMS + r] : 0;
    }
    if (k >= 3)
      w.offset[k] = &read[5 * (k - 3)];
  }
  memcpy(param, e->params, 8 * (size_t)e->nparams);
  return dispatch_batches(a->out->storage->dev, pipe, tile_for(a), bound, nb, writes, &w, push->m, push->n, push->k,
                          (uint64_t)push->batch[0] * push->batch[1], words, 4 * epilogue_words(e),
                          split_of(a, tile_for(a), nb));
}

/* ---- products built on the one above ---- */

vkt_status vkt_dot(const vkt_tensor *a, const vkt_tensor *b, vkt_tensor *result) {
  if (a->ndim != 1 || b->ndim != 1)
    return vkt_fail(VKT_ERR_RUNTIME, "1D tensors expected, but got %dD and %dD tensors", a->ndim, b->ndim);
  return vkt_matmul(a, b, result); /* dot_checks() there */
}

/* Its own function, the same as dot for real tensors, so that autograd names its node VdotBackward0 as PyTorch's. */
vkt_status vkt_vdot(const vkt_tensor *a, const vkt_tensor *b, vkt_tensor *result) { return vkt_dot(a, b, result); }

/* PyTorch's mv sizes its result by mat.size(0) before addmv checks the ranks: a 0-D mat fails there. */
vkt_status vkt_mv(const vkt_tensor *mat, const vkt_tensor *vec, vkt_tensor *result) {
  if (mat->ndim == 0)
    return vkt_fail(VKT_ERR_INDEX, "Dimension specified as 0 but tensor has no dimensions");
  if (mat->ndim != 2 || vec->ndim != 1)
    return vkt_fail(VKT_ERR_RUNTIME, "vector + matrix @ vector expected, got 1, %d, %d", mat->ndim, vec->ndim);
  return vkt_matmul(mat, vec, result); /* small_checks() there */
}

vkt_status vkt_addmv(const vkt_tensor *input, const vkt_tensor *mat, const vkt_tensor *vec, vkt_scalar beta,
                     vkt_scalar alpha, vkt_tensor *result) {
  if (mat->ndim != 2 || vec->ndim != 1 || input->ndim > 1)
    return vkt_fail(VKT_ERR_RUNTIME, "vector + matrix @ vector expected, got %d, %d, %d", input->ndim, mat->ndim,
                    vec->ndim);
  if (mat->shape[1] != vec->shape[0] || (input->ndim == 1 && input->shape[0] != 1 && input->shape[0] != mat->shape[0]))
    return vkt_fail(VKT_ERR_RUNTIME, "size mismatch, got input (%lld), mat (%lldx%lld), vec (%lld)",
                    (long long)(input->ndim ? input->shape[0] : 1), (long long)mat->shape[0], (long long)mat->shape[1],
                    (long long)vec->shape[0]);
  vkt_status st = addmv_dtypes(input->dtype, mat, vec);
  if (st || mat->dtype != VKT_BOOL || vkt_tensor_numel(mat)) /* PyTorch's kernel returns beta * input first */
    return st ? st : product(mat, vec, &(mm_epilogue){input, beta, alpha, 0}, result);
  return bool_unmultiplied(input, mat, vec, 1, mat->shape, beta, result);
}

/* The checks baddbmm and addbmm share: two batches of matrices that multiply. */
static vkt_status batches(const vkt_tensor *b1, const vkt_tensor *b2) {
  if (b1->ndim != 3 || b2->ndim != 3)
    return vkt_fail(VKT_ERR_RUNTIME, "batch%d must be a 3D tensor", b1->ndim != 3 ? 1 : 2);
  if (b1->shape[0] != b2->shape[0] || b1->shape[2] != b2->shape[1])
    return vkt_fail(VKT_ERR_RUNTIME,
                    "Expected size for first two dimensions of batch2 tensor to be: [%lld, %lld] but got: [%lld, "
                    "%lld].",
                    (long long)b1->shape[0], (long long)b1->shape[2], (long long)b2->shape[0], (long long)b2->shape[1]);
  return VKT_OK;
}

/* Whether two batches that multiply have no products to take (an empty result, or k = 0) where their dtypes differ
 * or are Bool: PyTorch's bmm and baddbmm kernels return then before they check dtypes. */
static bool no_products(const vkt_tensor *b1, const vkt_tensor *b2) {
  return (b1->dtype != b2->dtype || b1->dtype == VKT_BOOL) &&
         (b1->shape[0] * b1->shape[1] * b2->shape[2] == 0 || b1->shape[2] == 0);
}

/* bmm's and baddbmm's result then: of batch2's dtype. */
static vkt_status unmultiplied_batches(const vkt_tensor *input, const vkt_tensor *b1, const vkt_tensor *b2,
                                       vkt_scalar beta, vkt_tensor *result) {
  int device;
  vkt_status st = vkt_same_device(3, (const vkt_tensor *[]){b1, b2, input}, &device);
  return st ? st
            : unmultiplied(input, b2->dtype, device, 3, (int64_t[]){b1->shape[0], b1->shape[1], b2->shape[2]}, beta,
                           result);
}

vkt_status vkt_bmm(const vkt_tensor *a, const vkt_tensor *b, vkt_tensor *result) {
  if (a->ndim != 3 || b->ndim != 3)
    return vkt_fail(VKT_ERR_RUNTIME, "batch%d must be a 3D tensor, got %d-D tensor", a->ndim != 3 ? 1 : 2,
                    a->ndim != 3 ? a->ndim : b->ndim);
  vkt_status st = batches(a, b);
  if (st)
    return st;
  return no_products(a, b) ? unmultiplied_batches(NULL, a, b, one, result) : vkt_matmul(a, b, result);
}

/* baddbmm's kernel with k = 0 scales its result in place before it checks the batches' dtypes (beta_scales). */
static vkt_status scaled_in_place(const vkt_tensor *b1, const vkt_tensor *b2, vkt_scalar beta) {
  return b1->shape[2] ? VKT_OK : beta_scales(b2->dtype, b1->shape[0] * b1->shape[1] * b2->shape[2], beta);
}

vkt_status vkt_baddbmm(const vkt_tensor *input, const vkt_tensor *b1, const vkt_tensor *b2, vkt_scalar beta,
                       vkt_scalar alpha, vkt_tensor *result) {
  vkt_status st = baddbmm_input(input, b1, b2);
  if (!st)
    st = batches(b1, b2);
  if (!st)
    st = scaled_in_place(b1, b2, beta);
  if (!st && no_products(b1, b2))
    return unmultiplied_batches(input, b1, b2, beta, result);
  if (!st)
    st = batch_dtypes(b1, b2);
  if (!st && b1->dtype == VKT_BOOL)
    st = vkt_fail(VKT_ERR_NOTIMPL, "\"baddbmm\" not implemented for 'Bool'");
  return st ? st : product(b1, b2, &(mm_epilogue){input, beta, alpha, 0}, result);
}

/* t seen as a [rows, cols] matrix: a view where its strides allow, else a contiguous copy's view. */
static vkt_status as_matrix(const vkt_tensor *t, int64_t rows, int64_t cols, vkt_tensor *out) {
  vkt_tensor c = {0};
  int64_t shape[2] = {rows, cols};
  if (!vkt_view(out, t, 2, shape))
    return VKT_OK;
  vkt_status st = vkt_contiguous(&c, t);
  if (!st)
    st = vkt_view(out, &c, 2, shape);
  vkt_tensor_release(&c);
  return st;
}

/* addbmm's checks, PyTorch's order and words: input expands to [batch1.size(1), batch2.size(2)] (those dims must
 * exist), then its own checks of the batches, its sizes' before any dtype's. */
static vkt_status addbmm_checks(const vkt_tensor *input, const vkt_tensor *b1, const vkt_tensor *b2) {
  vkt_tensor ex = {0};
  int d;
  vkt_status st = vkt_dim_wrap(1, b1->ndim, &d);
  if (!st && !(st = vkt_dim_wrap(2, b2->ndim, &d)))
    st = vkt_expand(&ex, input, 2, (int64_t[]){b1->shape[1], b2->shape[2]});
  vkt_tensor_release(&ex);
  if (st)
    return st;
  if (b1->ndim != 3 || b2->ndim != 3)
    return vkt_fail(VKT_ERR_RUNTIME, "batch%d must be a 3D tensor", b1->ndim != 3 ? 1 : 2);
  if (b1->shape[0] != b2->shape[0])
    return vkt_fail(VKT_ERR_RUNTIME, "batch1 and batch2 must have same number of batches, got %lld and %lld",
                    (long long)b1->shape[0], (long long)b2->shape[0]);
  if (b1->shape[2] != b2->shape[1])
    return vkt_fail(VKT_ERR_RUNTIME, "Incompatible matrix sizes for bmm (%lldx%lld and %lldx%lld)",
                    (long long)b1->shape[1], (long long)b1->shape[2], (long long)b2->shape[1],
                    (long long)b2->shape[2]);
  return VKT_OK;
}

/* beta * input + alpha * sum over the batch of b1[i] @ b2[i]: one product of b1 as [n, batch * m] (its
 * batch dim moved next to m) and b2 as [batch * m, p], each a view where its strides allow. With no batch, PyTorch
 * multiplies nothing and checks no dtype: beta * input in input's dtype, or zeros. */
vkt_status vkt_addbmm(const vkt_tensor *input, const vkt_tensor *b1, const vkt_tensor *b2, vkt_scalar beta,
                      vkt_scalar alpha, vkt_tensor *result) {
  vkt_tensor moved = {0}, x = {0}, y = {0};
  vkt_status st = addbmm_checks(input, b1, b2);
  if (st)
    return st;
  int64_t bs = b1->shape[0], n = b1->shape[1], m = b1->shape[2], p = b2->shape[2];
  int device;
  if (bs == 0 && (b1->dtype != b2->dtype || input->dtype != b2->dtype || b1->dtype == VKT_BOOL))
    return (st = beta_scales(input->dtype, n * p, beta)) ||
                   (st = vkt_same_device(3, (const vkt_tensor *[]){input, b1, b2}, &device))
               ? st
               : unmultiplied(input, input->dtype, device, 2, (int64_t[]){n, p}, beta, result);
  if (!(st = vkt_permute(&moved, b1, 3, (int64_t[]){1, 0, 2})) && !(st = as_matrix(&moved, n, bs * m, &x)) &&
      !(st = as_matrix(b2, bs * m, p, &y)))
    st = vkt_addmm(input, &x, &y, beta, alpha, result);
  vkt_tensor_release(&moved);
  vkt_tensor_release(&x);
  vkt_tensor_release(&y);
  return st;
}
