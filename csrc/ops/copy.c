/* copy.c: moving tensors between devices, dtypes and layouts. Same-dtype copies on one device run the
 * strided-copy shader; everything else goes through the host, counted as a fallback when a Vulkan
 * tensor is involved on both ends. Also fills, random numbers and arange. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuse.h"

#define COPY_MAX_RANK 8

typedef struct {
  uint32_t n, rank, src_offset, dst_offset;
  uint32_t shape[COPY_MAX_RANK], src_stride[COPY_MAX_RANK], dst_stride[COPY_MAX_RANK];
  uint32_t src_fast, dst_fast; /* tiled: the dims along which src and dst are dense */
} copy_push;
static_assert(sizeof(copy_push) <= 128, "copy_push must fit Vulkan's smallest push-constant range");

#define COPY_TILE 32 /* copy.comp's tiles are 32 x 32 */

/* ---- the strided-copy shader ---- */

static bool bindable(const vkt_storage *s) {
  return (s->nbytes + 3) / 4 * 4 <= vkt_device_props(s->dev)->max_storage_buffer_range;
}

/* Whether the shader can copy src into dst: same device and dtype, within binding limits. */
static bool copy_supported(const vkt_tensor *dst, const vkt_tensor *src, int *rank, copy_push *p) {
  const vkt_storage *d = dst->storage, *s = src->storage;
  if (d->device == VKT_CPU || d->device != s->device || dst->dtype != src->dtype || !bindable(d) || !bindable(s))
    return false;
  const vkt_adapter_props *props = vkt_device_props(d->dev);
  int size = vkt_dtype_size(dst->dtype);
  if ((size == 1 && !props->int8_storage) || (size == 2 && !props->int16_storage))
    return false;
  int64_t shape[VKT_MAX_DIMS], strides[2 * VKT_MAX_DIMS], *ds = strides, *ss = strides + VKT_MAX_DIMS;
  *rank = vkt_merge_dims(2, (const vkt_tensor *[]){dst, src}, shape, strides);
  int64_t n = vkt_tensor_numel(dst);
  if (*rank > COPY_MAX_RANK || n > UINT32_MAX)
    return false;
  *p = (copy_push){.n = (uint32_t)n,
                   .rank = (uint32_t)*rank,
                   .src_offset = (uint32_t)src->offset,
                   .dst_offset = (uint32_t)dst->offset};
  for (int i = 0; i < *rank; i++)
    p->shape[i] = (uint32_t)shape[i], p->src_stride[i] = (uint32_t)ss[i], p->dst_stride[i] = (uint32_t)ds[i];
  return true;
}

/* Whether src is dense along one dim and dst along another, both at least a tile long: the shader then
 * transposes through shared memory (p->src_fast, p->dst_fast say which dims). */
static bool transposing(copy_push *p) {
  int i = -1, j = -1;
  for (int k = 0; k < (int)p->rank; k++) {
    if (p->src_stride[k] == 1 && p->shape[k] >= COPY_TILE)
      i = k;
    if (p->dst_stride[k] == 1 && p->shape[k] >= COPY_TILE)
      j = k;
  }
  if (i < 0 || j < 0 || i == j || p->n == 0)
    return false;
  p->src_fast = (uint32_t)i, p->dst_fast = (uint32_t)j;
  return true;
}

/* The dispatch of copy.comp that copies (p) elements of size bytes from allocation sa into da. */
static vkt_status shader_copy(vkt_device *dev, const vkt_alloc *sa, const vkt_alloc *da, int size, copy_push *p,
                              uint64_t *batch) {
  char defines[64];
  bool tiled = transposing(p), one_dim = !tiled && p->rank == 1,
       rows = !tiled && p->rank > 1 && p->shape[p->rank - 1] >= VKT_ROWS_MIN;
  static const char *const itemsize[] = {"", "1", "2", "", "4", "", "", "", "8"}; /* by dtype size */
  vkt_defines_cat(defines, sizeof defines, "#define ITEMSIZE ", itemsize[size], "\n",
                  tiled ? "#define TILED\n" : one_dim ? "#define ONE_DIM\n" : rows ? "#define ROWS\n" : "", NULL);
  vkt_pipeline *pipe;
  vkt_status st = vkt_pipeline_get(dev, "copy.comp", defines, 2, sizeof *p, &pipe);
  if (st)
    return st;
  vkt_binding b[2] = {{sa, 0, sa->size, false}, {da, 0, da->size, true}};
  uint64_t count = (p->n + 255) / 256; /* workgroups: 256 elements each, or one tile each */
  uint32_t groups[3];
  if (tiled) { /* tiles over the two dims, times the other dims */
    uint64_t si = p->shape[p->src_fast], sj = p->shape[p->dst_fast];
    count = (si + COPY_TILE - 1) / COPY_TILE * ((sj + COPY_TILE - 1) / COPY_TILE) * (p->n / (si * sj));
  } else if (one_dim) {
    count = (p->n + VKT_ROWS_RUN - 1) / VKT_ROWS_RUN; /* as many a workgroup as ROWS */
  }
  if (rows)
    vkt_groups_for_rows(dev, p->shape[p->rank - 1], p->n / p->shape[p->rank - 1], VKT_ROWS_RUN, groups);
  else
    vkt_groups_for(dev, count, groups);
  return vkt_stream_dispatch(dev, pipe, b, 2, p, sizeof *p, groups, batch);
}

/* A dense copy is vkCmdCopyBuffer's only where the adapter's shader_fills says not to dispatch it: NVIDIA's ran apart
 * from the compute work around it, as its fills did (fill.comp), and slowly (H100, a clone of 2^23 / 2^26 float32:
 * 0.083 / 0.637 ms; 0.025 / 0.183 by copy.comp). */
static vkt_status device_copy(const vkt_tensor *dst, const vkt_tensor *src, copy_push *p) {
  vkt_storage *d = dst->storage, *s = src->storage;
  vkt_device *dev = d->dev;
  uint64_t batch = 0;
  int size = vkt_dtype_size(dst->dtype);
  vkt_status st;
  if ((st = vkt_fuse_ready(s, false)) || (st = vkt_fuse_ready(d, true)))
    return st;
  uint64_t from = (uint64_t)src->offset * size, to = (uint64_t)dst->offset * size, bytes = (uint64_t)p->n * size;
  bool dense = vkt_tensor_is_contiguous(dst) && vkt_tensor_is_contiguous(src);
  if (!vkt_device_props(dev)->shader_fills && dense) {
    st = vkt_mem_copy(dev, &s->alloc, from, &d->alloc, to, bytes, &batch);
  } else if (dense && size < 4 && (from | to | bytes) % 4 == 0) { /* bytes or halves as words */
    uint32_t words = (uint32_t)(bytes / 4);
    copy_push w = {.n = words, .rank = 1, .src_offset = (uint32_t)(from / 4), .dst_offset = (uint32_t)(to / 4),
                   .shape = {words}, .src_stride = {1}, .dst_stride = {1}};
    st = shader_copy(dev, &s->alloc, &d->alloc, 4, &w, &batch);
  } else {
    st = shader_copy(dev, &s->alloc, &d->alloc, size, p, &batch);
  }
  vkt_storage_touched(d, batch);
  vkt_storage_touched(s, batch);
  return st;
}

/* ---- copies through the host ---- */

vkt_status vkt_host_view(const vkt_tensor *src, vkt_tensor *out) {
  if (vkt_tensor_device(src) == VKT_CPU) {
    vkt_tensor_share(out, src);
    return VKT_OK;
  }
  int64_t lo, hi;
  int size = vkt_dtype_size(src->dtype);
  vkt_tensor_extent(src, &lo, &hi);
  vkt_storage *h, *s = src->storage;
  vkt_status st = vkt_fuse_ready(s, false);
  if (st || (st = vkt_storage_new(VKT_CPU, (uint64_t)(hi - lo) * size, &h)))
    return st;
  if ((st = vkt_mem_download(s->dev, &s->alloc, (uint64_t)lo * size, h->host, (uint64_t)(hi - lo) * size,
                             s->last_use))) {
    vkt_storage_decref(h);
    return st;
  }
  *out = *src;
  out->storage = h;
  out->offset = src->offset - lo;
  return VKT_OK;
}

#define RANGE_MAX (1 << 20) /* elements an upload finds the range of (vkt_storage.range_known) */

/* The range of an int32 or int64 upload that fills d, from the host's copy of the values. */
static void note_range(vkt_storage *d, vkt_dtype dtype, const void *host, int64_t n) {
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (int64_t i = 0; i < n; i++) {
    int64_t v = dtype == VKT_INT64 ? ((const int64_t *)host)[i] : ((const int32_t *)host)[i];
    lo = v < lo ? v : lo, hi = v > hi ? v : hi;
  }
  d->range_known = true, d->range_dtype = dtype, d->range_version = d->version, d->range_lo = lo, d->range_hi = hi;
}

static vkt_status upload_contiguous(const vkt_tensor *dst, const void *host) {
  vkt_storage *d = dst->storage;
  int size = vkt_dtype_size(dst->dtype);
  int64_t n = vkt_tensor_numel(dst);
  vkt_status st = vkt_fuse_ready(d, true);
  if (st ||
      (st = vkt_mem_upload(d->dev, &d->alloc, (uint64_t)dst->offset * size, host, (uint64_t)n * size, &d->last_use)))
    return st;
  if ((dst->dtype == VKT_INT64 || dst->dtype == VKT_INT32) && dst->offset == 0 && (uint64_t)n * size == d->nbytes &&
      n <= RANGE_MAX)
    note_range(d, dst->dtype, host, n);
  return VKT_OK;
}

static vkt_status copy_through_host(const vkt_tensor *dst, const vkt_tensor *src) {
  vkt_tensor h = {0}, tmp = {0}, staged = {0};
  vkt_status st = vkt_host_view(src, &h);
  if (st)
    goto finish;
  if (vkt_tensor_device(dst) == VKT_CPU) {
    vkt_cpu_copy(dst, &h);
    goto finish;
  }
  if (vkt_tensor_is_contiguous(dst) && h.dtype == dst->dtype && vkt_tensor_is_contiguous(&h)) {
    st = upload_contiguous(dst, vkt_tensor_host(&h));
    goto finish;
  }
  if ((st = vkt_tensor_empty(&tmp, VKT_CPU, dst->dtype, dst->ndim, dst->shape)))
    goto finish;
  vkt_cpu_copy(&tmp, &h);
  if (vkt_tensor_is_contiguous(dst)) {
    st = upload_contiguous(dst, vkt_tensor_host(&tmp));
    goto finish;
  }
  /* a strided destination: upload contiguously, then scatter on the device */
  if ((st = vkt_tensor_empty(&staged, vkt_tensor_device(dst), dst->dtype, dst->ndim, dst->shape)) ||
      (st = upload_contiguous(&staged, vkt_tensor_host(&tmp))))
    goto finish;
  int rank;
  copy_push p;
  if (copy_supported(dst, &staged, &rank, &p)) {
    st = device_copy(dst, &staged, &p);
  } else { /* past the binding limits: read-modify-write the destination's span on the host */
    vkt_tensor hd = {0};
    if (!(st = vkt_host_view(dst, &hd))) {
      vkt_cpu_copy(&hd, &tmp);
      int64_t lo, hi;
      vkt_tensor_extent(dst, &lo, &hi);
      vkt_storage *d = dst->storage;
      int size = vkt_dtype_size(dst->dtype);
      st = vkt_mem_upload(d->dev, &d->alloc, (uint64_t)lo * size, hd.storage->host, (uint64_t)(hi - lo) * size,
                          &d->last_use);
      vkt_tensor_release(&hd);
    }
  }
finish:
  vkt_tensor_release(&h);
  vkt_tensor_release(&tmp);
  vkt_tensor_release(&staged);
  return st;
}

vkt_status vkt_copy_(const vkt_tensor *dst, const vkt_tensor *src) {
  vkt_status ready = vkt_fuse_ready(src->storage, false);
  if (ready || (ready = vkt_fuse_ready(dst->storage, true)))
    return ready;
  dst->storage->version++;
  if (vkt_tensor_numel(dst) == 0)
    return VKT_OK;
  int dd = vkt_tensor_device(dst), sd = vkt_tensor_device(src);
  if (dd == VKT_CPU && sd == VKT_CPU) {
    vkt_cpu_copy(dst, src);
    return VKT_OK;
  }
  int rank;
  copy_push p;
  if (copy_supported(dst, src, &rank, &p))
    return device_copy(dst, src, &p);
  if (dd == sd && dst->dtype != src->dtype) /* a cast on one device: an elementwise op */
    return vkt_op_run(VKT_OP_CAST, &(vkt_op_args){.out = dst, .in = {src}, .nin = 1, .compute = src->dtype});
  if (dd != VKT_CPU && sd != VKT_CPU)
    vkt_fallback_note("copy", "a layout or size beyond the copy shader");
  return copy_through_host(dst, src);
}

vkt_status vkt_copy_as(vkt_tensor *out, const vkt_tensor *src, int device, vkt_dtype dtype, vkt_memory_format fmt) {
  /* A dense cast on a Vulkan device is the elementwise op, pending: a fused kernel or a matmul's epilogue may take
   * it. */
  if (vkt_tensor_device(src) == device && device != VKT_CPU && vkt_fuse_enabled() && dtype != src->dtype &&
      vkt_tensor_is_contiguous(src) &&
      (fmt == VKT_PRESERVE_FORMAT || fmt == VKT_CONTIGUOUS_FORMAT))
    return vkt_cast(src, dtype, out);
  vkt_status st = vkt_tensor_empty_like(out, src, device, dtype, fmt);
  if (st)
    return st;
  if ((st = vkt_copy_(out, src)))
    vkt_tensor_release(out);
  return st;
}

vkt_status vkt_clone(vkt_tensor *out, const vkt_tensor *src) {
  return vkt_copy_as(out, src, vkt_tensor_device(src), src->dtype, VKT_CONTIGUOUS_FORMAT);
}

vkt_status vkt_contiguous(vkt_tensor *out, const vkt_tensor *src) {
  if (vkt_tensor_is_contiguous(src)) {
    vkt_tensor_share(out, src);
    return VKT_OK;
  }
  return vkt_clone(out, src);
}

vkt_status vkt_to(vkt_tensor *out, const vkt_tensor *src, int device, vkt_dtype dtype) {
  if (vkt_tensor_device(src) == device && src->dtype == dtype) {
    vkt_tensor_share(out, src);
    return VKT_OK;
  }
  return vkt_copy_as(out, src, device, dtype, VKT_PRESERVE_FORMAT);
}

vkt_status vkt_read(const vkt_tensor *src, void *host) {
  uint64_t nbytes = (uint64_t)vkt_tensor_numel(src) * vkt_dtype_size(src->dtype);
  if (vkt_tensor_device(src) == VKT_CPU) {
    vkt_storage hs = {.refcount = 1, .device = VKT_CPU, .nbytes = nbytes, .host = host}; /* borrowed */
    vkt_tensor dst = {.storage = &hs, .dtype = src->dtype, .ndim = src->ndim};
    int64_t stride = 1;
    for (int i = src->ndim - 1; i >= 0; i--) {
      dst.shape[i] = src->shape[i];
      dst.strides[i] = stride;
      stride *= src->shape[i] > 1 ? src->shape[i] : 1;
    }
    vkt_cpu_copy(&dst, src);
    return VKT_OK;
  }
  vkt_tensor c = {0};
  vkt_status st = vkt_contiguous(&c, src);
  if (st)
    return st;
  vkt_storage *s = c.storage;
  if (!(st = vkt_fuse_ready(s, false)))
    st = vkt_mem_download(s->dev, &s->alloc, (uint64_t)c.offset * vkt_dtype_size(c.dtype), host, nbytes, s->last_use);
  vkt_tensor_release(&c);
  return st;
}

vkt_status vkt_write(const vkt_tensor *t, const void *host) {
  t->storage->version++;
  if (vkt_tensor_device(t) == VKT_CPU) {
    memcpy(vkt_tensor_host(t), host, (size_t)vkt_tensor_numel(t) * vkt_dtype_size(t->dtype));
    return VKT_OK;
  }
  return upload_contiguous(t, host);
}

/* ---- fills, and the check on the number a fill writes ---- */

/* c10's overflows<To, From>(): integers past the dtype's range (uint8 also takes -255..-1, which wrap, as
 * PyTorch lets `a - b` wrap), NaN and inf into an integer dtype, finite floats past float16's or float32's
 * largest (their inf and NaN pass). float64 and bool take anything; every dtype takes a bool. */
static bool overflows(vkt_dtype dtype, vkt_scalar v) {
  double f = v.f;
  switch (dtype) {
  case VKT_FLOAT32: return v.is_float && isfinite(f) && fabs(f) > FLT_MAX;
  case VKT_FLOAT16: return v.is_float ? isfinite(f) && fabs(f) > 65504.0 : v.i < -65504 || v.i > 65504;
  case VKT_INT32: return v.is_float ? !(f >= INT32_MIN && f <= INT32_MAX) : v.i < INT32_MIN || v.i > INT32_MAX;
  case VKT_INT64: return v.is_float && !(f >= -0x1p63 && f <= 0x1p63); /* 2^63 passes, as INT64_MAX's double */
  case VKT_UINT8: return v.is_float ? !(f >= 0 && f <= 255) : v.i < -255 || v.i > 255;
  default: return false;
  }
}

vkt_status vkt_scalar_check(vkt_dtype dtype, vkt_scalar v) {
  static const char *const c_names[VKT_DTYPE_COUNT] = {
      [VKT_FLOAT32] = "float", [VKT_FLOAT16] = "c10::Half", [VKT_INT32] = "int", [VKT_INT64] = "int64_t",
      [VKT_UINT8] = "uint8_t"};
  if (!overflows(dtype, v))
    return VKT_OK;
  return vkt_fail(VKT_ERR_RUNTIME, "value cannot be converted to type %s without overflow", c_names[dtype]);
}

vkt_status vkt_data_check(vkt_dtype dtype, vkt_scalar v) {
  if (vkt_dtypes[dtype].is_float || dtype == VKT_BOOL || !overflows(dtype, v))
    return VKT_OK;
  return vkt_fail(VKT_ERR_RUNTIME, "value cannot be converted to type %s without overflow", vkt_dtypes[dtype].name);
}

vkt_status vkt_fill_check(vkt_dtype dtype, int64_t numel, vkt_scalar v) {
  return dtype == VKT_FLOAT16 && numel == 1 ? VKT_OK : vkt_scalar_check(dtype, v);
}

/* Whether every value of dtype src passes vkt_scalar_check into dst, so a value tensor need not be read. */
static bool always_fits(vkt_dtype src, vkt_dtype dst) {
  if (src == dst || src == VKT_BOOL || dst == VKT_BOOL || dst == VKT_FLOAT64)
    return true;
  if (dst == VKT_FLOAT32)
    return src != VKT_FLOAT64;
  return src == VKT_UINT8 || (src == VKT_INT32 && dst == VKT_INT64);
}

vkt_status vkt_value_check(vkt_dtype dtype, const vkt_tensor *value) {
  unsigned char bytes[8];
  if (value->ndim != 0 || always_fits(value->dtype, dtype)) /* the op refuses a value of more dims itself */
    return VKT_OK;
  vkt_status st = vkt_read(value, bytes);
  return st ? st : vkt_scalar_check(dtype, vkt_scalar_load(value->dtype, bytes));
}

/* The 32-bit word that repeats a value of this dtype, when there is one. */
static bool fill_word(vkt_dtype dtype, vkt_scalar v, uint32_t *word) {
  unsigned char b[8];
  vkt_scalar_store(dtype, v, b);
  switch (vkt_dtype_size(dtype)) {
  case 1: *word = b[0] * 0x01010101u; return true;
  case 2: *word = (uint32_t)(b[0] | b[1] << 8) * 0x00010001u; return true;
  case 4: memcpy(word, b, 4); return true;
  default: memcpy(word, b, 4); return memcmp(b, b + 4, 4) == 0;
  }
}

/* fill.comp's push constants, in words. */
typedef struct {
  uint32_t n, offset, word;
} fill_push;

/* Writes word over bytes (a multiple of 4) of s from off: from the host where s is small, mapped and idle, else a
 * dispatch of fill.comp bound to the range (from off rounded down to the adapter's binding alignment) where the
 * adapter's shader_fills says so and one binding reaches it, else by vkCmdFillBuffer. H100, matmul_add_relu's
 * training step at 8x1024^3 with backward()'s seed gradient filled by vkCmdFillBuffer / fill.comp / the host: 1.214 /
 * 1.206 / 1.198 ms (from the host, the backward's first kernel needs no barrier behind the loss's sum). */
static vkt_status device_fill(vkt_storage *s, uint64_t off, uint64_t bytes, uint32_t word) {
  vkt_device *dev = s->dev;
  const vkt_adapter_props *props = vkt_device_props(dev);
  uint64_t start = off / props->min_storage_offset_alignment * props->min_storage_offset_alignment;
  uint64_t range = off + bytes - start;
  if (bytes == 0 || vkt_mem_fill_on_host(dev, &s->alloc, off, bytes, word, s->last_use))
    return VKT_OK;
  if (!props->shader_fills || range > props->max_storage_buffer_range)
    return vkt_mem_fill(dev, &s->alloc, off, bytes, word, &s->last_use);
  fill_push p = {(uint32_t)(bytes / 4), (uint32_t)((off - start) / 4), word};
  vkt_pipeline *pipe;
  vkt_status st = vkt_pipeline_get(dev, "fill.comp", "", 1, sizeof p, &pipe);
  if (st)
    return st;
  vkt_binding b = {&s->alloc, start, range, true};
  uint32_t groups[3];
  uint64_t batch = 0;
  vkt_groups_for(dev, (p.n + VKT_ROWS_RUN - 1) / VKT_ROWS_RUN, groups); /* fill.comp's ELEMS x LOCAL_SIZE */
  if (!(st = vkt_stream_dispatch(dev, pipe, &b, 1, &p, sizeof p, groups, &batch)))
    vkt_storage_touched(s, batch);
  return st;
}

vkt_status vkt_fill_(const vkt_tensor *t, vkt_scalar v) {
  t->storage->version++;
  int64_t n = vkt_tensor_numel(t);
  if (vkt_tensor_device(t) == VKT_CPU) {
    vkt_cpu_fill(t, v);
    return VKT_OK;
  }
  uint32_t word;
  int size = vkt_dtype_size(t->dtype);
  int64_t lo, hi;
  vkt_tensor_extent(t, &lo, &hi); /* a dense t (a transpose's empty_like) fills the span it covers */
  uint64_t bytes = (uint64_t)(hi - lo) * size;
  vkt_storage *s = t->storage;
  uint64_t off = (uint64_t)lo * size;
  /* Fills write whole words; allocations are rounded up to 4 bytes, so a view reaching the end of its storage
   * may be filled to the next word. */
  vkt_status st = vkt_fuse_ready(s, true);
  if (st)
    return st;
  if ((n == 0 || vkt_tensor_is_dense(t)) && fill_word(t->dtype, v, &word) && off % 4 == 0 &&
      (bytes % 4 == 0 || off + bytes == s->nbytes))
    return device_fill(s, off, (bytes + 3) / 4 * 4, word);
  vkt_tensor h = {0};
  if ((st = vkt_tensor_empty(&h, VKT_CPU, t->dtype, t->ndim, t->shape)))
    return st;
  vkt_cpu_fill(&h, v);
  st = vkt_copy_(t, &h);
  vkt_tensor_release(&h);
  return st;
}

/* ---- random numbers: xoshiro256** on the host, one stream per device ---- */

#define DEFAULT_SEED 67280421310721ull /* torch's default generators' initial seed */

typedef struct {
  uint64_t seed, s[4];
} rng_stream;

static rng_stream streams[VKT_MAX_ADAPTERS + 1]; /* [0] the host's, [1 + i] adapter i's; all zero until first used */

static uint64_t splitmix(uint64_t *x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static void stream_seed(rng_stream *r, uint64_t seed) {
  r->seed = seed;
  for (int i = 0; i < 4; i++)
    r->s[i] = splitmix(&seed);
}

/* device's stream; an all-zero state (never xoshiro's: it would stay zero) is one not yet used, which starts where
 * the streams always have before a seed. */
static rng_stream *stream(int device) {
  rng_stream *r = &streams[device + 1];
  if (!(r->s[0] | r->s[1] | r->s[2] | r->s[3]))
    *r = (rng_stream){DEFAULT_SEED, {0x9e3779b97f4a7c15ull, 0xbf58476d1ce4e5b9ull, 0x94d049bb133111ebull, 1}};
  return r;
}

void vkt_manual_seed(uint64_t seed) {
  for (int i = 0; i <= VKT_MAX_ADAPTERS; i++)
    stream_seed(&streams[i], seed);
}

void vkt_rng_seed(int device, uint64_t seed) { stream_seed(stream(device), seed); }

uint64_t vkt_rng_initial_seed(int device) { return stream(device)->seed; }

void vkt_rng_get(int device, uint64_t state[VKT_RNG_STATE_WORDS]) {
  rng_stream *r = stream(device);
  state[0] = r->seed;
  memcpy(state + 1, r->s, sizeof r->s);
}

void vkt_rng_set(int device, const uint64_t state[VKT_RNG_STATE_WORDS]) {
  rng_stream *r = stream(device);
  r->seed = state[0];
  memcpy(r->s, state + 1, sizeof r->s);
}

/* Whether this thread's draws raise: while vkt.func.vmap(randomness='error') runs on it. */
static _Thread_local bool draws_forbidden;
void vkt_rng_forbid(bool forbid) { draws_forbidden = forbid; }

static vkt_status draw_allowed(void) {
  return draws_forbidden ? vkt_fail(VKT_ERR_RUNTIME, "vmap: called random operation while in randomness error mode. "
                                                     "Please either use the 'same' or 'different' randomness flags on "
                                                     "vmap or perform the randomness operation out of vmap")
                         : VKT_OK;
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t next_u64(rng_stream *g) {
  uint64_t *s = g->s, r = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
  s[2] ^= s[0], s[3] ^= s[1], s[1] ^= s[2], s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return r;
}

static double uniform(rng_stream *g) { return (double)(next_u64(g) >> 11) * 0x1.0p-53; }

vkt_status vkt_random_(const vkt_tensor *t, bool normal) {
  vkt_status st = draw_allowed();
  if (st)
    return st;
  t->storage->version++;
  int64_t n = vkt_tensor_numel(t);
  vkt_tensor h = {0};
  st = vkt_tensor_empty(&h, VKT_CPU, VKT_FLOAT64, t->ndim, t->shape);
  if (st)
    return st;
  double *x = (double *)vkt_tensor_host(&h);
  rng_stream *g = stream(vkt_tensor_device(t));
  for (int64_t i = 0; i < n; i++) {
    if (!normal) {
      x[i] = uniform(g);
    } else { /* Box-Muller, both values used */
      double u = 1.0 - uniform(g), r = sqrt(-2.0 * log(u)), a = 2.0 * M_PI * uniform(g);
      x[i] = r * cos(a);
      if (i + 1 < n)
        x[++i] = r * sin(a);
    }
  }
  if (!normal && t->dtype != VKT_FLOAT64) /* rounding to a narrower float may reach 1.0: keep [0, 1) */
    for (int64_t i = 0; i < n; i++)
      if ((t->dtype == VKT_FLOAT32 && (float)x[i] >= 1.0f) || (t->dtype == VKT_FLOAT16 && (_Float16)x[i] >= 1))
        x[i] = 0.0;
  st = vkt_copy_(t, &h);
  vkt_tensor_release(&h);
  return st;
}

/* PyTorch's length and values: int64 truncates start, end and step and counts in integers; other dtypes
 * count in double, ceil((end - start) / step). Values are start + i * step in PyTorch's accumulation type:
 * int64 (start and step truncated) for integers, double for float32 and float64, float for float16. */
static vkt_status arange_length(vkt_dtype dtype, vkt_scalar start, vkt_scalar end, vkt_scalar step, int64_t *n) {
  double fs = start.is_float ? start.f : (double)start.i, fe = end.is_float ? end.f : (double)end.i,
         fp = step.is_float ? step.f : (double)step.i;
  if (dtype == VKT_BOOL)
    return vkt_fail(VKT_ERR_RUNTIME, "\"arange_cpu\" not implemented for 'Bool'");
  if (!isfinite(fs) || !isfinite(fe))
    return vkt_fail(VKT_ERR_RUNTIME, "unsupported range: %g -> %g", fs, fe);
  if (fp == 0)
    return vkt_fail(VKT_ERR_RUNTIME, "step must be nonzero");
  if (dtype == VKT_INT64) {
    int64_t xs = start.is_float ? (int64_t)fs : start.i, xe = end.is_float ? (int64_t)fe : end.i,
            xp = step.is_float ? (int64_t)fp : step.i, sgn = (xp > 0) - (xp < 0);
    if (xp == 0)
      return vkt_fail(VKT_ERR_VALUE, "step must be nonzero");
    if ((xp > 0 && xe < xs) || (xp < 0 && xe > xs))
      return vkt_fail(VKT_ERR_RUNTIME, "upper bound and lower bound inconsistent with step sign");
    *n = (xe - xs + xp - sgn) / xp;
    return VKT_OK;
  }
  if ((fp > 0 && fe < fs) || (fp < 0 && fe > fs))
    return vkt_fail(VKT_ERR_RUNTIME, "upper bound and lower bound inconsistent with step sign");
  double size = ceil((fe - fs) / fp);
  if (!(size >= 0 && size <= (double)INT64_MAX))
    return vkt_fail(VKT_ERR_RUNTIME, "invalid size, possible overflow?");
  *n = (int64_t)size;
  return VKT_OK;
}

vkt_status vkt_arange(vkt_tensor *out, int device, vkt_dtype dtype, vkt_scalar start, vkt_scalar end, vkt_scalar step) {
  vkt_tensor h = {0};
  int64_t n = 0;
  vkt_status st = arange_length(dtype, start, end, step, &n);
  if (st || (st = vkt_tensor_empty(&h, VKT_CPU, dtype, 1, &n)))
    return st;
  char *p = vkt_tensor_host(&h);
  int size = vkt_dtype_size(dtype);
  double fs = start.is_float ? start.f : (double)start.i, fp = step.is_float ? step.f : (double)step.i;
  int64_t xs = start.is_float ? (int64_t)fs : start.i, xp = step.is_float ? (int64_t)fp : step.i;
  for (int64_t i = 0; i < n; i++) {
    vkt_scalar v = {false, 0, (int64_t)((uint64_t)xs + (uint64_t)i * (uint64_t)xp)}; /* wraps as PyTorch's */
    if (dtype == VKT_FLOAT16)
      v = (vkt_scalar){true, (double)((float)fs + (float)fp * (float)i), 0};
    else if (vkt_dtypes[dtype].is_float)
      v = (vkt_scalar){true, fs + fp * (double)i, 0};
    vkt_scalar_store(dtype, v, p + i * size);
  }
  st = vkt_to(out, &h, device, dtype);
  vkt_tensor_release(&h);
  return st;
}

/* ---- creation on the host, then one upload ---- */

/* A host tensor of shape whose elements are the doubles f(i, ctx), stored in dtype, moved to device. */
static vkt_status host_made(vkt_tensor *out, int device, vkt_dtype dtype, int ndim, const int64_t *shape,
                            void (*fill)(char *p, int64_t n, vkt_dtype dtype, const void *ctx), const void *ctx) {
  vkt_tensor h = {0};
  vkt_status st = vkt_tensor_empty(&h, VKT_CPU, dtype, ndim, shape);
  if (st)
    return st;
  fill(vkt_tensor_host(&h), vkt_tensor_numel(&h), dtype, ctx);
  st = vkt_to(out, &h, device, dtype);
  vkt_tensor_release(&h);
  return st;
}

typedef struct {
  double start, end, base;
  int64_t steps;
  bool log;
} spaced;

/* PyTorch's linspace: start + step * i for the first half, end - step * (steps - 1 - i) for the rest, in
 * the dtype's own precision (double steps for integers, which truncate start and end first); logspace
 * raises base to each. */
static void fill_spaced(char *p, int64_t n, vkt_dtype dtype, const void *ctx) {
  const spaced *s = ctx;
  int size = vkt_dtype_size(dtype);
  bool is_float = vkt_dtypes[dtype].is_float;
  double start = s->start, end = s->end;
  if (!is_float)
    start = (double)(int64_t)start, end = (double)(int64_t)end;
  double step = s->steps > 1 ? (end - start) / (double)(s->steps - 1) : 0;
  if (s->steps == 1) /* one step is start */
    end = start;
  for (int64_t i = 0; i < n; i++) {
    double v;
    if (dtype == VKT_FLOAT32 || dtype == VKT_FLOAT16) {
      float fs = (float)start, fe = (float)end, fp = (float)step;
      v = i < n / 2 ? (double)(fs + fp * (float)i) : (double)(fe - fp * (float)(n - 1 - i));
    } else {
      v = i < n / 2 ? start + step * (double)i : end - step * (double)(n - 1 - i);
    }
    if (s->log)
      v = pow(s->base, v);
    vkt_scalar_store(dtype, is_float ? (vkt_scalar){true, v, 0} : (vkt_scalar){false, 0, (int64_t)v}, p + i * size);
  }
}

vkt_status vkt_linspace(vkt_tensor *out, int device, vkt_dtype dtype, double start, double end, int64_t steps, bool log,
                        double base) {
  if (steps < 0)
    return vkt_fail(VKT_ERR_RUNTIME, "number of steps must be non-negative");
  spaced s = {start, end, base, steps, log};
  return host_made(out, device, dtype, 1, &steps, fill_spaced, &s);
}

static void fill_eye(char *p, int64_t n, vkt_dtype dtype, const void *ctx) {
  int64_t cols = *(const int64_t *)ctx;
  int size = vkt_dtype_size(dtype);
  for (int64_t i = 0; i < n; i++)
    vkt_scalar_store(dtype, (vkt_scalar){false, 0, i / cols == i % cols}, p + i * size);
}

vkt_status vkt_eye(vkt_tensor *out, int device, vkt_dtype dtype, int64_t n, int64_t m) {
  if (n < 0 || m < 0)
    return vkt_fail(VKT_ERR_RUNTIME, "%s must be greater or equal to 0, got %lld", n < 0 ? "n" : "m",
                    (long long)(n < 0 ? n : m));
  return host_made(out, device, dtype, 2, (int64_t[]){n, m}, fill_eye, &m);
}

typedef struct {
  int64_t low, span;
  rng_stream *stream;
} int_range;

static void fill_randint(char *p, int64_t n, vkt_dtype dtype, const void *ctx) {
  const int_range *r = ctx;
  int size = vkt_dtype_size(dtype);
  for (int64_t i = 0; i < n; i++) { /* the modulo's bias is below 2^-32 for spans under 2^32 */
    int64_t v = r->low + (int64_t)(next_u64(r->stream) % (uint64_t)r->span);
    vkt_scalar_store(dtype, (vkt_scalar){false, 0, v}, p + i * size);
  }
}

vkt_status vkt_randint(vkt_tensor *out, int device, vkt_dtype dtype, int64_t low, int64_t high, int ndim,
                       const int64_t *shape) {
  vkt_status st = draw_allowed();
  if (st)
    return st;
  if (low >= high)
    return vkt_fail(VKT_ERR_RUNTIME, "random_ expects 'from' to be less than 'to', but got from=%lld >= to=%lld",
                    (long long)low, (long long)high);
  static const int64_t limit[VKT_DTYPE_COUNT] = {[VKT_FLOAT32] = 1ll << 24,
                                                 [VKT_FLOAT64] = 1ll << 53,
                                                 [VKT_FLOAT16] = 1ll << 11,
                                                 [VKT_INT32] = INT32_MAX,
                                                 [VKT_INT64] = INT64_MAX,
                                                 [VKT_UINT8] = UINT8_MAX,
                                                 [VKT_BOOL] = 1};
  if (high - 1 > limit[dtype] || (dtype == VKT_UINT8 && low < 0) || (dtype == VKT_BOOL && low < 0))
    return vkt_fail(VKT_ERR_RUNTIME, "to - 1 is out of bounds for %s",
                    dtype == VKT_UINT8  ? "unsigned char"
                    : dtype == VKT_BOOL ? "bool"
                                        : vkt_dtypes[dtype].name);
  int_range r = {low, high - low, stream(device)};
  return host_made(out, device, dtype, ndim, shape, fill_randint, &r);
}

static void fill_values(char *p, int64_t n, vkt_dtype dtype, const void *ctx) {
  const int64_t *v = ctx;
  int size = vkt_dtype_size(dtype);
  for (int64_t i = 0; i < n; i++)
    vkt_scalar_store(dtype, (vkt_scalar){false, 0, v[i]}, p + i * size);
}

vkt_status vkt_randperm(vkt_tensor *out, int device, vkt_dtype dtype, int64_t n) {
  vkt_status st = draw_allowed();
  if (st)
    return st;
  if (n < 0)
    return vkt_fail(VKT_ERR_RUNTIME, "Trying to create tensor with negative dimension %lld: [%lld]", (long long)n,
                    (long long)n);
  if (dtype == VKT_FLOAT16 && n > 2049)
    return vkt_fail(VKT_ERR_RUNTIME, "n cannot be greater than 2049 for Half type.");
  int64_t *perm = malloc(sizeof *perm * (size_t)(n + 1));
  if (!perm)
    return vkt_fail(VKT_ERR_NOMEM, "out of host memory");
  rng_stream *g = stream(device);
  for (int64_t i = 0; i < n; i++)
    perm[i] = i;
  for (int64_t i = n - 1; i > 0; i--) { /* Fisher-Yates */
    int64_t j = (int64_t)(next_u64(g) % (uint64_t)(i + 1)), t = perm[i];
    perm[i] = perm[j], perm[j] = t;
  }
  st = host_made(out, device, dtype, 1, &n, fill_values, perm);
  free(perm);
  return st;
}

typedef struct {
  int64_t row, col, offset, count;
  bool upper;
} tri_spec;

static bool tri_keep(const tri_spec *t, int64_t i, int64_t j) {
  return t->upper ? j - i >= t->offset : j - i <= t->offset;
}

static void fill_tri_indices(char *p, int64_t n, vkt_dtype dtype, const void *ctx) {
  const tri_spec *t = ctx;
  int size = vkt_dtype_size(dtype);
  int64_t k = 0;
  (void)n;
  for (int64_t i = 0; i < t->row; i++)
    for (int64_t j = 0; j < t->col; j++)
      if (tri_keep(t, i, j)) {
        vkt_scalar_store(dtype, (vkt_scalar){false, 0, i}, p + k * size);
        vkt_scalar_store(dtype, (vkt_scalar){false, 0, j}, p + (t->count + k) * size);
        k++;
      }
}

vkt_status vkt_tri_indices(vkt_tensor *out, int device, vkt_dtype dtype, int64_t row, int64_t col, int64_t offset,
                           bool upper) {
  const char *name = upper ? "triu_indices" : "tril_indices";
  if (dtype != VKT_INT32 && dtype != VKT_INT64)
    return vkt_fail(VKT_ERR_RUNTIME, "\"%s\" not implemented for '%s'", name, vkt_dtypes[dtype].name);
  if (row < 0 || col < 0)
    return vkt_fail(VKT_ERR_RUNTIME, "%s must be non-negative, got %lld", row < 0 ? "row" : "col",
                    (long long)(row < 0 ? row : col));
  tri_spec t = {row, col, offset, 0, upper};
  for (int64_t i = 0; i < row; i++)
    for (int64_t j = 0; j < col; j++)
      t.count += tri_keep(&t, i, j);
  return host_made(out, device, dtype, 2, (int64_t[]){2, t.count}, fill_tri_indices, &t);
}
