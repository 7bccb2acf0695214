/* radix.c: a stable radix sort of one long row of 32-bit values (float32, int32) on the device, what sort
 * takes for rows too long for one workgroup: four passes of 8 bits through shaders/radix.comp, each a
 * histogram per tile, their scan and a scatter, so a pass reads the keys twice and writes them once where
 * a bitonic network needs a pass per step of every stage (about 100 over 2^24 elements). */
#include <stdio.h>

#include "radix.h"
#include "table.h"

#define RADIX_LOCAL 256 /* invocations a workgroup: radix.comp gives each of the 256 digits one */
#define RADIX 256

typedef struct {
  uint32_t n, tiles, shift, flip;
  uint32_t x_offset, out_offset[2]; /* elements: x's first, values' and indices' */
} radix_push;

/* Whether the scatter ranks a tile's digits with ballots (radix.comp's MULTISPLIT): subgroups of a power of two
 * invocations that divide the workgroup, at most the 128 a ballot's uvec4 holds. Shaders compile to SPIR-V 1.3,
 * so a compute subgroup has the adapter's subgroupSize invocations, which SUBGROUPS counts on. */
static bool multisplit(const vkt_adapter_props *p) {
  uint32_t s = p->subgroup_size;
  return p->subgroup_ballot && s >= 4 && s <= 128 && (s & (s - 1)) == 0;
}

/* The elements an invocation takes: 16 where the scatter's shared memory (two words an element, three
 * 256-entry tables, and the multisplit's counts: a word a digit for every two subgroups) fits the adapter, else
 * fewer. */
static int items_for(const vkt_adapter_props *p) {
  uint64_t fixed = 3 * RADIX * 4;
  if (multisplit(p))
    fixed += (uint64_t)(RADIX_LOCAL / p->subgroup_size + 1) / 2 * RADIX * 4;
  int items = 16;
  while (items > 1 && (uint64_t)8 * RADIX_LOCAL * items + fixed > p->max_shared_memory)
    items /= 2;
  return items;
}

bool vkt_radix_fits(const vkt_tensor *x, const char **why) {
  const vkt_adapter_props *p = vkt_device_props(x->storage->dev);
  uint64_t n = (uint64_t)vkt_tensor_numel(x), tile = (uint64_t)RADIX_LOCAL * items_for(p),
           tiles = (n + tile - 1) / tile;
  *why = "radix sort: only float32 and int32 rows";
  if (x->dtype != VKT_FLOAT32 && x->dtype != VKT_INT32)
    return false;
  *why = "radix sort: the adapter has no shaderInt64 for the indices";
  if (!p->int64)
    return false;
  *why = "radix sort: more tiles than the scans or maxComputeWorkGroupCount take";
  return n < UINT32_MAX && x->storage->alloc.size / 4 < UINT32_MAX && tiles <= p->max_workgroup_count[0] &&
         (RADIX * tiles + tile - 1) / tile <= tile && vkt_bindable(x, why);
}

typedef enum { COUNT, SCAN_CHUNKS, SCAN_SUMS, SCATTER } radix_kernel;

/* The buffers of a sort: the two halves of the key and position ping-pong, the histograms and the scan
 * chunks' totals, besides the user's values in and sorted values and positions out. */
typedef struct {
  const vkt_tensor *x, *values, *indices;
  vkt_tensor keys[2], idx[2], scan; /* scan: the histograms, then the scan chunks' totals */
  int items;
  uint32_t tiles, chunks;
} radix_sort;

static vkt_status dispatch(radix_sort *s, radix_kernel kernel, int pass, const radix_push *push) {
  static const char *const names[] = {"#define COUNT\n", "#define SCAN_CHUNKS\n", "#define SCAN_SUMS\n",
                                      "#define SCATTER\n"};
  vkt_device *dev = s->x->storage->dev;
  const vkt_adapter_props *props = vkt_device_props(dev);
  bool first = pass == 0, last = pass == 3;
  char defines[320], split[64] = "";
  if (multisplit(props))
    snprintf(split, sizeof split, "#define MULTISPLIT\n#define SUBGROUPS %u\n", RADIX_LOCAL / props->subgroup_size);
  snprintf(defines, sizeof defines, "#define TX %s\n#define %s\n#define LOCAL_SIZE %d\n#define ITEMS %d\n%s%s%s%s%s",
           s->x->dtype == VKT_FLOAT32 ? "float" : "int", s->x->dtype == VKT_FLOAT32 ? "KEY_FLOAT" : "KEY_INT",
           RADIX_LOCAL, s->items, names[kernel], first ? "#define FIRST\n" : "", last ? "#define LAST\n" : "",
           props->subgroup_arithmetic ? "#define SUBGROUP_SCAN\n" : "", split);
  /* binding k: x, keys in, positions in, keys out, positions out, the scan buffer, values, indices */
  const vkt_tensor *t[8] = {
      s->x,     &s->keys[pass % 2], &s->idx[pass % 2], &s->keys[1 - pass % 2], &s->idx[1 - pass % 2],
      &s->scan, s->values,          s->indices};
  bool writes[8] = {0};
  writes[5] = kernel != SCATTER;
  writes[3] = writes[4] = kernel == SCATTER && !last;
  writes[6] = writes[7] = kernel == SCATTER && last;
  vkt_binding b[8];
  for (int k = 0; k < 8; k++)
    b[k] = (vkt_binding){&t[k]->storage->alloc, 0, t[k]->storage->alloc.size, writes[k]};
  uint32_t groups[3] = {kernel == SCAN_SUMS ? 1 : kernel == SCAN_CHUNKS ? s->chunks : s->tiles, 1, 1};
  vkt_pipeline *pipe;
  uint64_t batch = 0;
  vkt_status st = vkt_pipeline_get(dev, "radix.comp", defines, 8, sizeof *push, &pipe);
  if (st || (st = vkt_stream_dispatch(dev, pipe, b, 8, push, sizeof *push, groups, &batch)))
    return st;
  for (int k = 0; k < 8; k++)
    vkt_storage_touched(t[k]->storage, batch);
  return VKT_OK;
}

vkt_status vkt_radix_sort(const vkt_tensor *x, bool descending, const vkt_tensor *values, const vkt_tensor *indices) {
  const vkt_adapter_props *p = vkt_device_props(x->storage->dev);
  radix_sort s = {.x = x, .values = values, .indices = indices, .items = items_for(p)};
  uint32_t n = (uint32_t)vkt_tensor_numel(x), tile = (uint32_t)(RADIX_LOCAL * s.items);
  s.tiles = (n + tile - 1) / tile;
  s.chunks = (RADIX * s.tiles + tile - 1) / tile;
  int device = vkt_tensor_device(x);
  vkt_status st = VKT_OK;
  for (int k = 0; k < 2 && !st; k++)
    if (!(st = vkt_tensor_empty(&s.keys[k], device, VKT_INT32, 1, (int64_t[]){n})))
      st = vkt_tensor_empty(&s.idx[k], device, VKT_INT32, 1, (int64_t[]){n});
  if (!st)
    st = vkt_tensor_empty(&s.scan, device, VKT_INT32, 1, (int64_t[]){(int64_t)RADIX * s.tiles + s.chunks});
  for (int pass = 0; pass < 4 && !st; pass++) {
    radix_push push = {n,
                       s.tiles,
                       8u * (uint32_t)pass,
                       descending ? ~0u : 0u,
                       (uint32_t)x->offset,
                       {(uint32_t)values->offset, (uint32_t)indices->offset}};
    for (radix_kernel k = COUNT; k <= SCATTER && !st; k++)
      st = dispatch(&s, k, pass, &push);
  }
  for (int k = 0; k < 2; k++) { /* freed in stream order: reused only once the GPU is done with them */
    vkt_tensor_release(&s.keys[k]);
    vkt_tensor_release(&s.idx[k]);
  }
  vkt_tensor_release(&s.scan);
  return st;
}
