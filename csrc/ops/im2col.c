/* im2col.c: a convolution's columns and their adjoint (shaders/im2col.comp), which conv, unfold and fold are
 * built on: the window positions are computed in the shader, not read from an index tensor, and the padding is
 * read as zeros instead of being copied in first. */
#include <stdio.h>
#include <string.h>

#include "shape.h"

typedef struct {
  uint32_t n, windows, volume, base;
  int32_t size[3], grid[3], pad[3];
} im2col_push;
static_assert(sizeof(im2col_push) == 52, "im2col_push must match shaders/im2col.comp");

/* The windows along each dim of an image of size[3]. */
static void grid_of(const vkt_window *w, const int64_t *size, int64_t *grid) {
  for (int d = 0; d < 3; d++)
    grid[d] = (size[d] + 2 * w->pad[d] - w->dilation[d] * (w->kernel[d] - 1) - 1) / w->stride[d] + 1;
}

static int64_t prod3(const int64_t *v) { return v[0] * v[1] * v[2]; }

/* The image is the 5-d one (N, C, d0, d1, d2): a's in[0] for im2col, out for col2im. */
static const vkt_tensor *image_of(const vkt_op_args *a, bool im2col) { return im2col ? a->in[0] : a->out; }

bool vkt_im2col_supports(const vkt_op *op, const vkt_op_args *a, const char **why) {
  (void)op;
  const vkt_adapter_props *p = vkt_device_props(a->out->storage->dev);
  *why = "more elements than 32-bit indices reach";
  return vkt_operands_fit(p, a->compute, 2, (const vkt_tensor *[]){a->out, a->in[0]}, why) &&
         vkt_tensor_numel(a->out) < UINT32_MAX && vkt_tensor_numel(a->in[0]) < UINT32_MAX;
}

/* Pipelines remembered by what their #defines say (a slot each, the last one in it), so that a launch whose kernel
 * is known formats no text: a training step launches these twice a convolution. */
typedef struct {
  const vkt_device *dev;
  const vkt_op *op;
  vkt_dtype dtype, compute;
  int64_t kernel[3], stride[3], dilation[3];
} im2col_key;
enum { IM2COL_CACHE_SLOTS = 32 };
static struct {
  im2col_key key;
  vkt_pipeline *pipe;
} im2col_cache[IM2COL_CACHE_SLOTS];

static vkt_status pipeline_of(vkt_device *dev, const vkt_op *op, const vkt_op_args *a, const vkt_window *w,
                              vkt_pipeline **pipe) {
  im2col_key key;
  memset(&key, 0, sizeof key); /* hashed and compared whole */
  key.dev = dev, key.op = op, key.dtype = a->out->dtype, key.compute = a->compute;
  memcpy(key.kernel, w->kernel, sizeof key.kernel);
  memcpy(key.stride, w->stride, sizeof key.stride);
  memcpy(key.dilation, w->dilation, sizeof key.dilation);
  __typeof__(im2col_cache[0]) *slot = &im2col_cache[vkt_fnv1a(&key, sizeof key, VKT_FNV_SEED) % IM2COL_CACHE_SLOTS];
  if (slot->pipe && memcmp(&slot->key, &key, sizeof key) == 0) {
    *pipe = slot->pipe;
    return VKT_OK;
  }
  char defines[512];
  int len = vkt_type_defines(defines, sizeof defines, "T", a->out->dtype);
  len += vkt_type_defines(defines + len, sizeof defines - (size_t)len, "C", a->compute);
  len += snprintf(defines + len, sizeof defines - (size_t)len, "#define KERNEL ivec3(%d, %d, %d)\n",
                  (int)w->kernel[0], (int)w->kernel[1], (int)w->kernel[2]);
  len += snprintf(defines + len, sizeof defines - (size_t)len, "#define STRIDE ivec3(%d, %d, %d)\n",
                  (int)w->stride[0], (int)w->stride[1], (int)w->stride[2]);
  len += snprintf(defines + len, sizeof defines - (size_t)len, "#define DILATION ivec3(%d, %d, %d)\n",
                  (int)w->dilation[0], (int)w->dilation[1], (int)w->dilation[2]);
  vkt_defines_cat(defines + len, sizeof defines - (size_t)len, op->define, NULL);
  vkt_status st = vkt_pipeline_get(dev, op->shader, defines, 2, sizeof(im2col_push), pipe);
  if (!st)
    slot->key = key, slot->pipe = *pipe;
  return st;
}

vkt_status vkt_im2col_launch(const vkt_op *op, const vkt_op_args *a) {
  const vkt_window *w = a->ctx;
  bool im2col = strcmp(op->name, "im2col") == 0;
  const vkt_tensor *image = image_of(a, im2col);
  int64_t grid[3];
  grid_of(w, image->shape + 2, grid);
  im2col_push push = {.n = (uint32_t)vkt_tensor_numel(a->out), .windows = (uint32_t)prod3(grid),
                      .volume = (uint32_t)prod3(image->shape + 2), .base = (uint32_t)a->in[0]->offset};
  for (int d = 0; d < 3; d++)
    push.size[d] = (int32_t)image->shape[2 + d], push.grid[d] = (int32_t)grid[d], push.pad[d] = (int32_t)w->pad[d];
  vkt_device *dev = a->out->storage->dev;
  vkt_pipeline *pipe;
  vkt_status st = pipeline_of(dev, op, a, w, &pipe);
  if (st)
    return st;
  /* one row a workgroup along y and z (the shader's ELEMS x 256 elements of it along x) */
  uint32_t groups[3];
  uint64_t inner = im2col ? push.windows : push.volume, batch = 0;
  vkt_groups_for_rows(dev, inner, push.n / inner, 4 * 256, groups);
  const vkt_tensor *t[2] = {a->out, a->in[0]};
  vkt_binding b[2];
  for (int k = 0; k < 2; k++)
    b[k] = (vkt_binding){&t[k]->storage->alloc, 0, t[k]->storage->alloc.size, k == 0};
  if ((st = vkt_stream_dispatch(dev, pipe, b, 2, &push, sizeof push, groups, &batch)))
    return st;
  for (int k = 0; k < 2; k++)
    vkt_storage_touched(t[k]->storage, batch);
  return VKT_OK;
}

/* The host kernel, on dense tensors: col2im adds each column entry into its element in turn, in the dtype. */
vkt_status vkt_cpu_im2col(const vkt_op *op, const vkt_op_args *a) {
  const vkt_window *w = a->ctx;
  bool im2col = strcmp(op->name, "im2col") == 0;
  const vkt_tensor *image = image_of(a, im2col), *cols = im2col ? a->out : a->in[0];
  const int64_t *size = image->shape + 2;
  int64_t grid[3], images = image->shape[0] * image->shape[1], taps = prod3(w->kernel), windows, volume = prod3(size);
  size_t item = (size_t)vkt_dtype_size(image->dtype);
  char *x = vkt_tensor_host(image), *c = vkt_tensor_host(cols);
  grid_of(w, size, grid);
  windows = prod3(grid);
  if (!im2col)
    memset(x, 0, (size_t)vkt_tensor_numel(image) * item);
  for (int64_t nc = 0; nc < images; nc++)
    for (int64_t k = 0; k < taps; k++)
      for (int64_t l = 0; l < windows; l++) {
        int64_t at[3], kk[3] = {k / (w->kernel[1] * w->kernel[2]), k / w->kernel[2] % w->kernel[1], k % w->kernel[2]},
                       o[3] = {l / (grid[1] * grid[2]), l / grid[2] % grid[1], l % grid[2]};
        bool inside = true;
        for (int d = 0; d < 3; d++) {
          at[d] = o[d] * w->stride[d] + kk[d] * w->dilation[d] - w->pad[d];
          inside = inside && at[d] >= 0 && at[d] < size[d];
        }
        char *cp = c + (size_t)((nc * taps + k) * windows + l) * item,
             *xp = x + (size_t)(nc * volume + (at[0] * size[1] + at[1]) * size[2] + at[2]) * item;
        if (im2col && inside) {
          memcpy(cp, xp, item);
        } else if (im2col) {
          memset(cp, 0, item);
        } else if (inside) {
          vkt_scalar u = vkt_scalar_load(image->dtype, xp), v = vkt_scalar_load(image->dtype, cp);
          u.f += v.f, u.i += v.i;
          vkt_scalar_store(image->dtype, u, xp);
        }
      }
  return VKT_OK;
}

/* t (N, C, *spatial), 1 to 3 spatial dims, dense, seen as (N, C, d0, d1, d2) with leading dims of size 1: a shallow
 * copy, which borrows t's storage. */
static vkt_tensor five_d(const vkt_tensor *t) {
  vkt_tensor v = *t;
  int lead = 5 - t->ndim;
  v.ndim = 5;
  for (int d = 4; d >= 2; d--) {
    bool given = d - lead >= 2;
    v.shape[d] = given ? t->shape[d - lead] : 1;
    v.strides[d] = given ? t->strides[d - lead] : v.shape[d + 1] * v.strides[d + 1]; /* d < 4 here */
  }
  return v;
}

/* The front-ends: the input made dense and seen as 5-d, the result allocated on its device (ndim, shape), the op
 * run on a 5-d view of it. */
static vkt_status run(vkt_op_id id, const vkt_tensor *in, const vkt_window *w, int ndim, const int64_t *shape,
                      vkt_tensor *out) {
  if (in->dtype == VKT_BOOL)
    return vkt_fail(VKT_ERR_NOTIMPL, "\"%s_out_cpu\" not implemented for 'Bool'", vkt_ops[id].name);
  vkt_tensor dense = {0};
  vkt_status st = vkt_contiguous(&dense, in);
  if (!st && !(st = vkt_tensor_empty(out, vkt_tensor_device(in), in->dtype, ndim, shape)) && vkt_tensor_numel(out)) {
    vkt_dtype compute = in->dtype == VKT_FLOAT16 ? VKT_FLOAT32 : vkt_dtypes[in->dtype].is_float ? in->dtype
                        : in->dtype == VKT_INT64                                ? VKT_INT64
                                                                                : VKT_INT32;
    vkt_tensor src = id == VKT_OP_IM2COL ? five_d(&dense) : dense, dst = id == VKT_OP_COL2IM ? five_d(out) : *out;
    vkt_op_args a = {.out = &dst, .in = {&src}, .nin = 1, .compute = compute, .ctx = w};
    if ((st = vkt_op_run(id, &a)))
      vkt_tensor_release(out);
  }
  vkt_tensor_release(&dense);
  return st;
}

vkt_status vkt_im2col(const vkt_tensor *x, const vkt_window *w, vkt_tensor *out) {
  int64_t grid[3];
  if (x->ndim < 3 || x->ndim > 5)
    return vkt_fail(VKT_ERR_RUNTIME, "im2col: expected 1 to 3 spatial dims, got %d", x->ndim - 2);
  vkt_tensor v = five_d(x);
  grid_of(w, v.shape + 2, grid);
  if (grid[0] < 1 || grid[1] < 1 || grid[2] < 1)
    return vkt_fail(VKT_ERR_RUNTIME, "im2col: the windows do not fit the input");
  int64_t shape[3] = {x->shape[0], x->shape[1] * prod3(w->kernel), prod3(grid)};
  return run(VKT_OP_IM2COL, x, w, 3, shape, out);
}

vkt_status vkt_col2im(const vkt_tensor *cols, const vkt_window *w, int nd, const int64_t *size, vkt_tensor *out) {
  int64_t grid[3], full[3] = {1, 1, 1}, taps = prod3(w->kernel);
  if (nd < 1 || nd > 3)
    return vkt_fail(VKT_ERR_RUNTIME, "col2im: expected 1 to 3 spatial dims, got %d", nd);
  memcpy(full + 3 - nd, size, sizeof *size * (size_t)nd);
  grid_of(w, full, grid);
  if (cols->ndim != 3 || cols->shape[1] % taps || cols->shape[2] != prod3(grid))
    return vkt_fail(VKT_ERR_RUNTIME, "col2im: the columns do not match the windows");
  int64_t shape[5] = {cols->shape[0], cols->shape[1] / taps};
  memcpy(shape + 2, size, sizeof *size * (size_t)nd);
  return run(VKT_OP_COL2IM, cols, w, 2 + nd, shape, out);
}
