/* memory.c: the caching allocator. Device-local blocks are carved into 256-byte-aligned ranges; a freed
 * range is tagged with the last batch that used it and handed out again once that batch has finished,
 * or before that, in stream order, where new memory would cost too much (see reuse_pending). Also the
 * host <-> device copies, through mapped memory or two ping-pong staging buffers. */
#include "vk_internal.h"

#include <stdlib.h>
#include <string.h>

#define VKT_ALIGN 256u
#define VKT_BLOCK_BYTES (64ull << 20)
#define VKT_STAGING_BYTES (32ull << 20)
#define VKT_SOFT_CAP_BYTES (2ull << 30) /* see reuse_pending */

static uint64_t round_up(uint64_t n, uint64_t a) { return (n + a - 1) / a * a; }

/* ---- the ready and pending lists ---- */

static void ready_push(vkt_device *dev, vkt_segment *s) {
  s->state = VKT_SEG_READY;
  s->lprev = NULL;
  s->lnext = dev->ready;
  if (dev->ready)
    dev->ready->lprev = s;
  dev->ready = s;
}

/* Takes s off the list that starts at *head (and ends at *tail, where that list keeps its end). */
static void unlink(vkt_segment **head, vkt_segment **tail, vkt_segment *s) {
  if (s->lprev)
    s->lprev->lnext = s->lnext;
  else
    *head = s->lnext;
  if (s->lnext)
    s->lnext->lprev = s->lprev;
  else if (tail)
    *tail = s->lprev;
}

static void ready_remove(vkt_device *dev, vkt_segment *s) { unlink(&dev->ready, NULL, s); }

/* Most frees wait for the newest batch, so the sorted insert walks back from the tail a step or two. */
static void pending_insert(vkt_device *dev, vkt_segment *s) {
  vkt_segment *after = dev->pending_tail;
  while (after && after->ready > s->ready)
    after = after->lprev;
  s->state = VKT_SEG_PENDING;
  s->lprev = after;
  s->lnext = after ? after->lnext : dev->pending;
  if (s->lnext)
    s->lnext->lprev = s;
  else
    dev->pending_tail = s;
  if (after)
    after->lnext = s;
  else
    dev->pending = s;
}

static void pending_remove(vkt_device *dev, vkt_segment *s) { unlink(&dev->pending, &dev->pending_tail, s); }

/* Puts a free range on the ready list, merged with ready neighbours. */
static void make_ready(vkt_device *dev, vkt_segment *s) {
  vkt_segment *n = s->next, *p = s->prev;
  if (n && n->state == VKT_SEG_READY) {
    ready_remove(dev, n);
    s->size += n->size;
    s->next = n->next;
    if (n->next)
      n->next->prev = s;
    free(n);
  }
  if (p && p->state == VKT_SEG_READY) {
    ready_remove(dev, p);
    p->size += s->size;
    p->next = s->next;
    if (s->next)
      s->next->prev = p;
    free(s);
    s = p;
  }
  ready_push(dev, s);
}

/* Moves the ranges whose batch has finished from the pending list to the ready list. */
static void release_pending(vkt_device *dev) {
  while (dev->pending && dev->pending->ready <= dev->completed) {
    vkt_segment *s = dev->pending;
    pending_remove(dev, s);
    make_ready(dev, s);
  }
}

static int find_type(const VkPhysicalDeviceMemoryProperties *mem, VkMemoryPropertyFlags need,
                     VkMemoryPropertyFlags nice, uint64_t min_heap) {
  int best = -1, best_score = -1;
  for (uint32_t i = 0; i < mem->memoryTypeCount; i++) {
    VkMemoryPropertyFlags f = mem->memoryTypes[i].propertyFlags;
    if ((f & need) != need || mem->memoryHeaps[mem->memoryTypes[i].heapIndex].size < min_heap)
      continue;
    int score = __builtin_popcount(f & nice);
    if (score > best_score)
      best = (int)i, best_score = score;
  }
  return best;
}

vkt_status vkt_mem_init(vkt_device *dev) {
  VkPhysicalDeviceMemoryProperties mem;
  vkGetPhysicalDeviceMemoryProperties(dev->physical, &mem);
  const VkMemoryPropertyFlags host = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  /* Mapped device-local memory saves a staging copy, but only where it spans most of the heap
   * (resizable BAR, integrated GPUs, lavapipe), not a 256 MiB window. */
  int t = find_type(&mem, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT | host, VK_MEMORY_PROPERTY_HOST_CACHED_BIT,
                    dev->props->device_local_bytes / 2);
  if (t < 0)
    t = find_type(&mem, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0, 0);
  if (t < 0)
    t = find_type(&mem, 0, 0, 0);
  int s = find_type(&mem, host, VK_MEMORY_PROPERTY_HOST_CACHED_BIT, 0);
  if (t < 0 || s < 0)
    return vkt_fail(VKT_ERR_RUNTIME, "adapter %s has no usable memory type", dev->props->name);
  VkMemoryPropertyFlags f = mem.memoryTypes[t].propertyFlags;
  dev->mem_type = (uint32_t)t;
  dev->mem_host_visible = (f & host) == host;
  dev->mem_host_cached = dev->mem_host_visible && (f & VK_MEMORY_PROPERTY_HOST_CACHED_BIT);
  dev->staging_type = (uint32_t)s;
  dev->unmapped_type = -1;
  for (uint32_t i = 0; i < mem.memoryTypeCount && dev->mem_host_visible && dev->unmapped_type < 0; i++) {
    VkMemoryPropertyFlags fi = mem.memoryTypes[i].propertyFlags;
    if ((fi & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT) && !(fi & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) &&
        mem.memoryTypes[i].heapIndex == mem.memoryTypes[t].heapIndex)
      dev->unmapped_type = (int)i;
  }
  uint64_t range = dev->props->max_storage_buffer_range;
  dev->block_size = VKT_BLOCK_BYTES < range ? VKT_BLOCK_BYTES : range / VKT_ALIGN * VKT_ALIGN;
  pthread_mutex_init(&dev->transfer_lock, NULL);
  const char *cap = getenv("VKT_MEMORY_LIMIT");
  dev->limit = cap ? strtoull(cap, NULL, 10) : 0;
  return VKT_OK;
}

static void destroy_block(vkt_device *dev, vkt_block *b) {
  while (b->segments) {
    vkt_segment *n = b->segments->next;
    free(b->segments);
    b->segments = n;
  }
  if (b->buffer)
    vkDestroyBuffer(dev->device, b->buffer, NULL);
  if (b->memory)
    vkFreeMemory(dev->device, b->memory, NULL);
  dev->stats.reserved -= b->size;
  if (!b->dedicated)
    dev->shared_reserved -= b->size;
  dev->stats.blocks--;
  free(b);
}

static vkt_status create_buffer(vkt_device *dev, uint64_t size, uint32_t type, VkBuffer *buf, VkDeviceMemory *memory,
                                void **mapped) {
  vkt_status st = VKT_OK;
  VkBufferCreateInfo bi = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                           .size = size,
                           .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                    VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                           .sharingMode = VK_SHARING_MODE_EXCLUSIVE};
  VKT_VK_CHECK(vkCreateBuffer(dev->device, &bi, NULL, buf));
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(dev->device, *buf, &req);
  if (!(req.memoryTypeBits & (1u << type))) {
    st = vkt_fail(VKT_ERR_RUNTIME, "buffer cannot live in memory type %u", type);
    goto finish;
  }
  VkMemoryAllocateInfo ai = {
      .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, .allocationSize = req.size, .memoryTypeIndex = type};
  VKT_VK_CHECK(vkAllocateMemory(dev->device, &ai, NULL, memory));
  VKT_VK_CHECK(vkBindBufferMemory(dev->device, *buf, *memory, 0));
  if (mapped)
    VKT_VK_CHECK(vkMapMemory(dev->device, *memory, 0, VK_WHOLE_SIZE, 0, mapped));
finish:
  return st;
}

static vkt_status new_block(vkt_device *dev, uint64_t size, bool dedicated, vkt_block **out) {
  if (dev->limit && dev->stats.reserved + size > dev->limit)
    return vkt_fail(VKT_ERR_OOM, "the allocator's limit of %llu bytes is reached", (unsigned long long)dev->limit);
  vkt_block *b = calloc(1, sizeof *b);
  vkt_segment *seg = calloc(1, sizeof *seg);
  if (!b || !seg) {
    free(b), free(seg);
    return vkt_fail(VKT_ERR_NOMEM, "out of host memory");
  }
  b->size = size;
  b->dedicated = dedicated;
  dev->stats.reserved += size; /* destroy_block takes it back on failure */
  if (!dedicated)
    dev->shared_reserved += size;
  dev->stats.blocks++;
  bool mapped = dev->mem_host_visible && !dev->mapped_full;
  vkt_status st = create_buffer(dev, size, mapped ? dev->mem_type : (uint32_t)dev->unmapped_type, &b->buffer,
                                &b->memory, mapped ? &b->mapped : NULL);
  if (st) {
    free(seg);
    destroy_block(dev, b);
    return st;
  }
  *seg = (vkt_segment){.offset = 0, .size = size, .block = b};
  b->segments = seg;
  ready_push(dev, seg);
  b->next = dev->blocks;
  dev->blocks = b;
  if (dev->stats.reserved > dev->stats.reserved_peak)
    dev->stats.reserved_peak = dev->stats.reserved;
  *out = b;
  return VKT_OK;
}

/* Best fit on a list (the ready or the pending one); small requests stay out of blocks made for one large
 * tensor. */
static vkt_segment *best_fit(vkt_segment *list, uint64_t need, bool large) {
  vkt_segment *best = NULL;
  for (vkt_segment *s = list; s; s = s->lnext)
    if (s->size >= need && (large || !s->block->dedicated) && (!best || s->size < best->size))
      best = s;
  return best;
}

/* Hands out s, taken off its list, cut to need bytes where the rest is worth keeping (not in a large
 * tensor's block, if smaller than need): the rest goes back on the list s came from. */
static void take(vkt_device *dev, vkt_segment *s, uint64_t need, vkt_block **ob, vkt_segment **os) {
  if (s->size > need && !(s->block->dedicated && s->size - need < need)) {
    vkt_segment *rest = calloc(1, sizeof *rest);
    if (rest) {
      *rest = (vkt_segment){.offset = s->offset + need,
                            .size = s->size - need,
                            .ready = s->ready,
                            .block = s->block,
                            .prev = s,
                            .next = s->next};
      if (s->next)
        s->next->prev = rest;
      s->next = rest;
      s->size = need;
      if (s->state == VKT_SEG_PENDING)
        pending_insert(dev, rest);
      else
        ready_push(dev, rest);
    }
  }
  s->state = VKT_SEG_USED;
  *ob = s->block, *os = s;
}

static bool carve(vkt_device *dev, uint64_t need, bool large, vkt_block **ob, vkt_segment **os) {
  vkt_segment *best = best_fit(dev->ready, need, large);
  if (best) {
    ready_remove(dev, best);
    take(dev, best, need, ob, os);
  }
  return best != NULL;
}

/* A pending range, for reuse in stream order: the stream orders the new owner's GPU work after the batch
 * the range waits for (a barrier within the batch being recorded, the wait of each batch for the one
 * before), and the new owner's host access waits for that batch (*after). */
static bool carve_pending(vkt_device *dev, uint64_t need, bool large, vkt_block **ob, vkt_segment **os,
                          uint64_t *after) {
  vkt_segment *best = best_fit(dev->pending, need, large);
  if (best) {
    pending_remove(dev, best);
    *after = best->ready;
    take(dev, best, need, ob, os);
  }
  return best != NULL;
}

/* Whether a request that no ready range fits takes a pending one rather than new memory of `size`. The
 * stream then puts a barrier between the range's old and new users, which keeps independent ops from
 * overlapping, so new memory buys that overlap while it is cheap: below the limit, and while blocks of
 * the request's kind (shared by small tensors, or one a large tensor) stay under a soft cap. Past it a
 * stream of results holds no more memory than the cap, where it would otherwise grow by one result per
 * op until its batch finished. */
static bool reuse_pending(const vkt_device *dev, uint64_t size, bool large) {
  uint64_t cap = dev->props->device_local_bytes / 8;
  cap = cap < VKT_SOFT_CAP_BYTES ? cap : VKT_SOFT_CAP_BYTES;
  uint64_t kind = large ? dev->stats.reserved - dev->shared_reserved : dev->shared_reserved;
  return (dev->limit && dev->stats.reserved + size > dev->limit) || kind + size > cap;
}

static vkt_status try_alloc(vkt_device *dev, uint64_t need, vkt_block **ob, vkt_segment **os, uint64_t *after) {
  bool large = need > dev->block_size / 2;
  uint64_t size = large ? need : dev->block_size;
  vkt_stream_poll(dev);
  release_pending(dev);
  *after = 0;
  if (carve(dev, need, large, ob, os) ||
      (reuse_pending(dev, size, large) && carve_pending(dev, need, large, ob, os, after)))
    return VKT_OK;
  if (!large && dev->limit && dev->stats.reserved + size > dev->limit) { /* what the cap leaves, if enough */
    uint64_t room = dev->limit > dev->stats.reserved ? (dev->limit - dev->stats.reserved) / VKT_ALIGN * VKT_ALIGN : 0;
    if (room >= need)
      size = room;
  }
  vkt_block *b;
  vkt_status st = new_block(dev, size, large, &b);
  if (st)
    return st;
  return carve(dev, need, large, ob, os) ? VKT_OK : vkt_fail(VKT_ERR_RUNTIME, "allocator: fresh block too small");
}

vkt_status vkt_mem_alloc(vkt_device *dev, uint64_t nbytes, vkt_alloc *out) {
  *out = (vkt_alloc){0};
  if (nbytes == 0)
    return VKT_OK;
  uint64_t size = round_up(nbytes, 4), need = round_up(nbytes, VKT_ALIGN);
  vkt_block *b = NULL;
  vkt_segment *s = NULL;
  uint64_t after;
  vkt_status st = try_alloc(dev, need, &b, &s, &after);
  if (st == VKT_ERR_OOM) { /* wait for pending frees, give cached blocks back, try once more */
    dev->stats.retries++;
    if (!(st = vkt_mem_empty_cache(dev)))
      st = try_alloc(dev, need, &b, &s, &after);
    /* NVIDIA's driver maps only part of a GPU's memory: an H100's process got 39 of its 80 GiB in mapped blocks,
     * and a second process none while the first held them. Past that, new blocks take memory the host does not
     * see, which uploads reach through staging buffers, until empty_cache gives mapped blocks back. */
    if (st == VKT_ERR_OOM && dev->mem_host_visible && !dev->mapped_full && dev->unmapped_type >= 0) {
      dev->mapped_full = true;
      st = try_alloc(dev, need, &b, &s, &after);
    }
    if (st == VKT_ERR_OOM) {
      dev->stats.ooms++;
      uint64_t cap = dev->limit ? dev->limit : dev->props->device_local_bytes;
      return vkt_fail(VKT_ERR_OOM,
                      "out of memory on vulkan:%d: tried to allocate %llu bytes; %llu bytes allocated, "
                      "%llu reserved, %llu free of %llu%s",
                      dev->index, (unsigned long long)nbytes, (unsigned long long)dev->stats.allocated,
                      (unsigned long long)dev->stats.reserved,
                      (unsigned long long)(cap > dev->stats.reserved ? cap - dev->stats.reserved : 0),
                      (unsigned long long)cap, dev->limit ? " (the allocator's limit)" : "");
    }
  }
  if (st)
    return st;
  *out = (vkt_alloc){.block = b, .segment = s, .offset = s->offset, .size = size, .last_use = after};
  dev->stats.allocated += size;
  dev->stats.alloc_count++;
  if (dev->stats.allocated > dev->stats.allocated_peak)
    dev->stats.allocated_peak = dev->stats.allocated;
  return VKT_OK;
}

void vkt_mem_free(vkt_device *dev, vkt_alloc *a, uint64_t last_use) {
  vkt_segment *s = a->segment;
  if (!s)
    return;
  dev->stats.allocated -= a->size;
  dev->stats.free_count++;
  *a = (vkt_alloc){0};
  if (last_use <= dev->completed) {
    make_ready(dev, s);
  } else {
    s->ready = last_use;
    pending_insert(dev, s);
  }
}

vkt_status vkt_mem_empty_cache(vkt_device *dev) {
  vkt_status st = vkt_stream_synchronize(dev);
  if (st)
    return st;
  release_pending(dev);
  vkt_block **link = &dev->blocks;
  while (*link) {
    vkt_block *b = *link;
    if (b->segments->state == VKT_SEG_READY && !b->segments->next) {
      ready_remove(dev, b->segments);
      *link = b->next;
      destroy_block(dev, b);
      dev->mapped_full = false; /* mapped memory given back: new blocks try it again */
    } else {
      link = &b->next;
    }
  }
  return VKT_OK;
}

void vkt_mem_stats_get(vkt_device *dev, vkt_mem_stats *out) { *out = dev->stats; }

void vkt_mem_reset_peak(vkt_device *dev) {
  dev->stats.allocated_peak = dev->stats.allocated;
  dev->stats.reserved_peak = dev->stats.reserved;
}

vkt_status vkt_mem_set_limit(vkt_device *dev, uint64_t bytes) {
  dev->limit = bytes;
  return bytes && dev->stats.reserved > bytes ? vkt_mem_empty_cache(dev) : VKT_OK; /* try to get under it */
}
uint64_t vkt_mem_limit(vkt_device *dev) { return dev->limit; }

void vkt_mem_destroy(vkt_device *dev) {
  pthread_mutex_destroy(&dev->transfer_lock);
  dev->ready = dev->pending = dev->pending_tail = NULL;
  while (dev->blocks) {
    vkt_block *b = dev->blocks;
    dev->blocks = b->next;
    destroy_block(dev, b);
  }
  if (dev->sync_block.buffer)
    vkDestroyBuffer(dev->device, dev->sync_block.buffer, NULL);
  if (dev->sync_block.memory)
    vkFreeMemory(dev->device, dev->sync_block.memory, NULL);
  for (int i = 0; i < 2; i++) {
    vkt_staging *s = &dev->staging[i];
    if (s->buffer)
      vkDestroyBuffer(dev->device, s->buffer, NULL);
    if (s->memory)
      vkFreeMemory(dev->device, s->memory, NULL);
    *s = (vkt_staging){0};
  }
}

/* The buffer of vkt_mem_sync_words, zeroed, made when the device opens (so that its zeroing is no product's extra
 * command): in memory the host does not see where the adapter has such (mapped memory runs out first, vkt_mem_alloc
 * says why), zeroed by a command the dispatches that use it follow. */
vkt_status vkt_mem_sync_init(vkt_device *dev) {
  vkt_block *b = &dev->sync_block;
  bool mapped = dev->unmapped_type < 0 && dev->mem_host_visible;
  uint32_t type = dev->unmapped_type >= 0 ? (uint32_t)dev->unmapped_type : dev->mem_type;
  *b = (vkt_block){.size = 4ull * VKT_SYNC_WORDS};
  vkt_status st = create_buffer(dev, b->size, type, &b->buffer, &b->memory, mapped ? &b->mapped : NULL);
  if (st)
    return st;
  dev->sync_alloc = (vkt_alloc){.block = b, .size = b->size};
  if (b->mapped) {
    memset(b->mapped, 0, b->size);
    return VKT_OK;
  }
  return vkt_mem_fill(dev, &dev->sync_alloc, 0, b->size, 0, &dev->sync_alloc.last_use);
}

vkt_status vkt_mem_sync_words(vkt_device *dev, uint32_t n, vkt_binding *out) {
  if (n == 0 || n > VKT_SYNC_WORDS / 64 || !dev->sync_block.buffer)
    return vkt_fail(VKT_ERR_RUNTIME, "internal error: %u synchronization words asked for", n);
  uint32_t align = dev->props->min_storage_offset_alignment / 4, words = (n + align - 1) / align * align;
  if (dev->sync_next + words > VKT_SYNC_WORDS)
    dev->sync_next = 0;
  *out = (vkt_binding){&dev->sync_alloc, 4ull * dev->sync_next, 4ull * n, true};
  dev->sync_next += words;
  return VKT_OK;
}

/* ---- transfers ---- */

/* Staging buffers hold a transfer's data across waits, during which another thread may run: one
 * transfer at a time uses them. Waiting for the lock goes through the blocking hooks. */
static void transfer_begin(vkt_device *dev) {
  if (pthread_mutex_trylock(&dev->transfer_lock) == 0)
    return;
  void *token = vkt_blocking_enter();
  pthread_mutex_lock(&dev->transfer_lock);
  vkt_blocking_leave(token);
}

static vkt_status transfer_end(vkt_device *dev, vkt_status st) {
  pthread_mutex_unlock(&dev->transfer_lock);
  return st;
}

static vkt_status staging_get(vkt_device *dev, int i, vkt_staging **out) {
  vkt_staging *s = &dev->staging[i];
  if (!s->buffer) {
    vkt_status st = create_buffer(dev, VKT_STAGING_BYTES, dev->staging_type, &s->buffer, &s->memory, &s->mapped);
    if (st) {
      if (s->buffer)
        vkDestroyBuffer(dev->device, s->buffer, NULL);
      if (s->memory)
        vkFreeMemory(dev->device, s->memory, NULL);
      *s = (vkt_staging){0};
      return st;
    }
    s->size = VKT_STAGING_BYTES;
  }
  *out = s;
  return VKT_OK;
}

/* Records a buffer-to-buffer copy in the stream, with the barrier it needs. */
static vkt_status record_copy(vkt_device *dev, VkBuffer src, uint64_t soff, VkBuffer dst, uint64_t doff, uint64_t n,
                              uint64_t *batch) {
  VkCommandBuffer cmd;
  vkt_status st = vkt_stream_begin(dev, &cmd);
  if (st)
    return st;
  vkt_access acc[2] = {{src, soff, n, false}, {dst, doff, n, true}};
  vkt_stream_touch(dev, cmd, acc, 2);
  vkCmdCopyBuffer(cmd, src, dst, 1, &(VkBufferCopy){.srcOffset = soff, .dstOffset = doff, .size = n});
  *batch = dev->next_id;
  return VKT_OK;
}

vkt_status vkt_mem_upload(vkt_device *dev, const vkt_alloc *a, uint64_t off, const void *src, uint64_t nbytes,
                          uint64_t *last_use) {
  vkt_status st = VKT_OK;
  if (nbytes == 0)
    return VKT_OK;
  if (a->block->mapped) {
    if ((st = vkt_stream_wait(dev, *last_use)))
      return st;
    memcpy((char *)a->block->mapped + a->offset + off, src, nbytes);
    return VKT_OK;
  }
  transfer_begin(dev);
  for (uint64_t pos = 0, i = 0; pos < nbytes; i++) {
    vkt_staging *s;
    if ((st = staging_get(dev, (int)(i & 1), &s)) || (st = vkt_stream_wait(dev, s->last_use)))
      return transfer_end(dev, st);
    uint64_t n = nbytes - pos < s->size ? nbytes - pos : s->size;
    memcpy(s->mapped, (const char *)src + pos, n);
    if ((st = record_copy(dev, s->buffer, 0, a->block->buffer, a->offset + off + pos, n, &s->last_use)) ||
        (st = vkt_stream_flush(dev)))
      return transfer_end(dev, st);
    *last_use = s->last_use;
    pos += n;
  }
  return transfer_end(dev, VKT_OK);
}

vkt_status vkt_mem_download(vkt_device *dev, const vkt_alloc *a, uint64_t off, void *dst, uint64_t nbytes,
                            uint64_t last_use) {
  vkt_status st = VKT_OK;
  if (nbytes == 0)
    return VKT_OK;
  if (dev->mem_host_cached && a->block->mapped) {
    if ((st = vkt_stream_wait(dev, last_use)))
      return st;
    memcpy(dst, (const char *)a->block->mapped + a->offset + off, nbytes);
    return VKT_OK;
  }
  /* Chunk i+1 is copied on the GPU while the host copies chunk i out of the other staging buffer. */
  uint64_t prev_pos = 0, prev_n = 0;
  vkt_staging *prev = NULL;
  transfer_begin(dev);
  for (uint64_t pos = 0, i = 0; pos < nbytes || prev; i++) {
    vkt_staging *s = NULL;
    uint64_t n = 0;
    if (pos < nbytes) {
      if ((st = staging_get(dev, (int)(i & 1), &s)) || (st = vkt_stream_wait(dev, s->last_use)))
        return transfer_end(dev, st);
      n = nbytes - pos < s->size ? nbytes - pos : s->size;
      if ((st = record_copy(dev, a->block->buffer, a->offset + off + pos, s->buffer, 0, n, &s->last_use)) ||
          (st = vkt_stream_flush(dev)))
        return transfer_end(dev, st);
    }
    if (prev) {
      if ((st = vkt_stream_wait(dev, prev->last_use)))
        return transfer_end(dev, st);
      memcpy((char *)dst + prev_pos, prev->mapped, prev_n);
    }
    prev = s, prev_pos = pos, prev_n = n;
    pos += n;
  }
  return transfer_end(dev, VKT_OK);
}

bool vkt_mem_fill_on_host(vkt_device *dev, const vkt_alloc *a, uint64_t off, uint64_t nbytes, uint32_t pattern,
                          uint64_t last_use) {
  if (!a->block || !a->block->mapped || nbytes > VKT_HOST_FILL_BYTES)
    return false;
  if (last_use > dev->completed)
    vkt_stream_poll(dev);
  if (last_use > dev->completed)
    return false;
  uint32_t *w = (uint32_t *)((char *)a->block->mapped + a->offset + off);
  for (uint64_t i = 0; i < nbytes / 4; i++)
    w[i] = pattern;
  return true;
}

vkt_status vkt_mem_fill(vkt_device *dev, const vkt_alloc *a, uint64_t off, uint64_t nbytes, uint32_t pattern,
                        uint64_t *last_use) {
  VkCommandBuffer cmd;
  if (nbytes == 0)
    return VKT_OK;
  vkt_status st = vkt_stream_begin(dev, &cmd);
  if (st)
    return st;
  vkt_access acc = {a->block->buffer, a->offset + off, nbytes, true};
  vkt_stream_touch(dev, cmd, &acc, 1);
  vkCmdFillBuffer(cmd, a->block->buffer, a->offset + off, nbytes, pattern);
  *last_use = dev->next_id;
  return VKT_OK;
}

vkt_status vkt_mem_copy(vkt_device *dev, const vkt_alloc *src, uint64_t src_off, const vkt_alloc *dst, uint64_t dst_off,
                        uint64_t nbytes, uint64_t *batch) {
  if (nbytes == 0)
    return VKT_OK;
  return record_copy(dev, src->block->buffer, src->offset + src_off, dst->block->buffer, dst->offset + dst_off, nbytes,
                     batch);
}
