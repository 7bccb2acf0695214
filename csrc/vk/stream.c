/* stream.c: batched asynchronous execution. Dispatches and copies are recorded into the current
 * command buffer and submitted together when a read needs them, on synchronize, past a threshold, or
 * when the GPU has run out of work (the timeline is polled after 32 ops and 24 dispatches or more: a
 * dispatch is one op, a fused kernel as many as it computes).
 * Batches have increasing ids; each submission signals a timeline semaphore to its id, so `completed`
 * (the newest finished id; every earlier one has finished too) is one counter read. */
#include <time.h>

#include "vk_internal.h"

#define VKT_EAGER_OPS 32        /* a batch of this many ops goes to an idle GPU before its end */
/* ... unless it has fewer dispatches since the last poll: a chain of small fused kernels (24 ops each) would
 * otherwise submit each one, and a submission costs the host far more than a dispatch */
#define VKT_EAGER_MIN_DISPATCHES 24
#define VKT_POOL_SETS 1024
#define VKT_SPIN_US 200.0 /* how long a wait polls the timeline before it blocks */

static VkDescriptorPool make_pool(vkt_device *dev) {
  VkDescriptorPoolSize size = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, VKT_POOL_SETS * 4};
  VkDescriptorPoolCreateInfo info = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                                     .maxSets = VKT_POOL_SETS,
                                     .poolSizeCount = 1,
                                     .pPoolSizes = &size};
  VkDescriptorPool pool = VK_NULL_HANDLE;
  vkCreateDescriptorPool(dev->device, &info, NULL, &pool);
  return pool;
}

vkt_status vkt_stream_init(vkt_device *dev) {
  vkt_status st = VKT_OK;
  VkCommandPoolCreateInfo pi = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                .queueFamilyIndex = dev->queue_family};
  VKT_VK_CHECK(vkCreateCommandPool(dev->device, &pi, NULL, &dev->cmd_pool));
  VkSemaphoreTypeCreateInfo ti = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
                                  .semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE};
  VkSemaphoreCreateInfo si = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, .pNext = &ti};
  VKT_VK_CHECK(vkCreateSemaphore(dev->device, &si, NULL, &dev->timeline));
  for (int i = 0; i < VKT_BATCH_SLOTS; i++) {
    vkt_slot *s = &dev->slots[i];
    VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                      .commandPool = dev->cmd_pool,
                                      .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                      .commandBufferCount = 1};
    VKT_VK_CHECK(vkAllocateCommandBuffers(dev->device, &ai, &s->cmd));
    if (!(s->pool = make_pool(dev))) {
      st = vkt_fail(VKT_ERR_RUNTIME, "vkCreateDescriptorPool failed");
      goto finish;
    }
  }
  dev->next_id = 1;
  vkt_profile_init(dev);
finish:
  return st;
}

void vkt_stream_destroy(vkt_device *dev) {
  for (int i = 0; i < VKT_BATCH_SLOTS; i++)
    if (dev->slots[i].pool)
      vkDestroyDescriptorPool(dev->device, dev->slots[i].pool, NULL);
  if (dev->timeline)
    vkDestroySemaphore(dev->device, dev->timeline, NULL);
  if (dev->cmd_pool)
    vkDestroyCommandPool(dev->device, dev->cmd_pool, NULL);
}

void vkt_stream_poll(vkt_device *dev) {
  uint64_t value;
  if (vkGetSemaphoreCounterValue(dev->device, dev->timeline, &value) == VK_SUCCESS && value > dev->completed)
    dev->completed = value;
}

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

/* Waits until the timeline reaches batch, which has been submitted. A blocking wait costs tens of
 * microseconds of wake-up on a GPU and short batches finish sooner, so it polls first; not on a CPU
 * adapter, whose workers need the cores it would spin on. The host's hooks run around the block. */
static vkt_status wait_submitted(vkt_device *dev, uint64_t batch) {
  if (dev->props->type != VKT_ADAPTER_CPU)
    for (double end = now_us() + VKT_SPIN_US; dev->completed < batch && now_us() < end;)
      vkt_stream_poll(dev);
  if (dev->completed >= batch)
    return VKT_OK;
  VkSemaphoreWaitInfo wi = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO,
                            .semaphoreCount = 1,
                            .pSemaphores = &dev->timeline,
                            .pValues = &batch};
  void *token = vkt_blocking_enter();
  VkResult r = vkWaitSemaphores(dev->device, &wi, UINT64_MAX);
  vkt_blocking_leave(token);
  if (r != VK_SUCCESS)
    return vkt_vk_fail(r, "vkWaitSemaphores");
  if (batch > dev->completed)
    dev->completed = batch;
  return VKT_OK;
}

/* Another thread may record while this one waits, so the slot is checked again after each wait. */
vkt_status vkt_stream_begin(vkt_device *dev, VkCommandBuffer *cmd) {
  vkt_status st = VKT_OK;
  while (!dev->recording) {
    vkt_slot *s = &dev->slots[dev->cur];
    if (s->id > dev->completed) {
      if ((st = wait_submitted(dev, s->id)))
        return st;
      continue;
    }
    VKT_VK_CHECK(vkResetDescriptorPool(dev->device, s->pool, 0));
    VKT_VK_CHECK(vkResetCommandBuffer(s->cmd, 0));
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    VKT_VK_CHECK(vkBeginCommandBuffer(s->cmd, &bi));
    vkt_profile_begin(dev, s->cmd);
    dev->recording = true;
    dev->dispatches = dev->ops = dev->polled_ops = dev->polled_dispatches = 0;
    dev->naccesses = 0; /* the batch waits for the one before it: see vkt_stream_flush */
  }
  *cmd = dev->slots[dev->cur].cmd;
finish:
  return st;
}

static bool overlaps(const vkt_access *a, const vkt_access *b) {
  return a->buffer == b->buffer && a->offset < b->offset + b->size && b->offset < a->offset + a->size;
}

static void barrier(VkCommandBuffer cmd, VkPipelineStageFlags dst_stage, VkAccessFlags dst_access) {
  VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                        .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
                        .dstAccessMask = dst_access};
  vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, dst_stage, 0, 1, &mb,
                       0, NULL, 0, NULL);
}

/* A barrier goes in only when this command reads or writes a range written since the last barrier of
 * its batch, or writes a range read since then; otherwise commands of a batch may overlap on the GPU. */
void vkt_stream_touch(vkt_device *dev, VkCommandBuffer cmd, const vkt_access *acc, int n) {
  vkt_profile_stamp(dev, cmd, dev->profile_next);
  dev->profile_next = NULL;
  bool hazard = dev->naccesses + n > VKT_MAX_ACCESSES;
  for (int i = 0; i < n && !hazard; i++)
    for (int j = 0; j < dev->naccesses && !hazard; j++)
      hazard = (acc[i].write || dev->accesses[j].write) && overlaps(&acc[i], &dev->accesses[j]);
  if (hazard) {
    barrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
            VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                VK_ACCESS_TRANSFER_WRITE_BIT);
    dev->naccesses = 0;
    dev->barriers++;
  }
  for (int i = 0; i < n; i++)
    dev->accesses[dev->naccesses++] = acc[i];
  dev->dispatches++;
  dev->dispatched++;
  dev->ops += 1 + dev->more_ops;
  dev->more_ops = 0;
}

vkt_status vkt_stream_flush(vkt_device *dev) {
  vkt_status st = VKT_OK;
  if (!dev->recording)
    return VKT_OK;
  vkt_slot *s = &dev->slots[dev->cur];
  vkt_profile_stamp(dev, s->cmd, NULL);
  /* Makes the batch's writes visible to host reads after the wait. */
  barrier(s->cmd, VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
  dev->recording = false;
  VKT_VK_CHECK(vkEndCommandBuffer(s->cmd));
  /* Batches submitted to one queue may overlap on the GPU: each waits for the one before it, which orders
   * its reads and writes after that batch's (and a freed range's new owner after its old one). A batch
   * starts after its predecessor ends, so only the dispatches within a batch overlap. */
  uint64_t id = dev->next_id, prev = id - 1;
  VkPipelineStageFlags stage = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
  VkTimelineSemaphoreSubmitInfo ti = {.sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO,
                                      .waitSemaphoreValueCount = 1,
                                      .pWaitSemaphoreValues = &prev,
                                      .signalSemaphoreValueCount = 1,
                                      .pSignalSemaphoreValues = &id};
  VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
                     .pNext = &ti,
                     .waitSemaphoreCount = 1,
                     .pWaitSemaphores = &dev->timeline,
                     .pWaitDstStageMask = &stage,
                     .commandBufferCount = 1,
                     .pCommandBuffers = &s->cmd,
                     .signalSemaphoreCount = 1,
                     .pSignalSemaphores = &dev->timeline};
  VKT_VK_CHECK(vkQueueSubmit(dev->queue, 1, &si, VK_NULL_HANDLE));
  s->id = id;
  dev->next_id++;
  dev->cur = (dev->cur + 1) % VKT_BATCH_SLOTS;
finish:
  return st;
}

vkt_status vkt_stream_wait(vkt_device *dev, uint64_t batch) {
  vkt_status st;
  if (batch <= dev->completed)
    return VKT_OK;
  if (batch >= dev->next_id) {
    if (!dev->recording) /* nothing was recorded into it: nothing to wait for */
      return VKT_OK;
    if ((st = vkt_stream_flush(dev)))
      return st;
  }
  return wait_submitted(dev, batch);
}

/* Every batch: the one being recorded, else the last submitted (asking for the unrecorded next_id returned
 * at once after the 1024th or an eager dispatch had just submitted its batch). */
vkt_status vkt_stream_synchronize(vkt_device *dev) {
  return vkt_stream_wait(dev, dev->recording ? dev->next_id : dev->next_id - 1);
}

bool vkt_stream_is_recording(vkt_device *dev) { return dev->recording; }

/* Whether every submitted batch has finished. */
static bool submitted_done(vkt_device *dev) {
  vkt_stream_poll(dev);
  return dev->completed + 1 >= dev->next_id;
}

bool vkt_stream_idle(vkt_device *dev) { return !dev->recording && submitted_done(dev); }

vkt_status vkt_stream_flush_if_idle(vkt_device *dev) {
  return dev->recording && submitted_done(dev) ? vkt_stream_flush(dev) : VKT_OK;
}

uint64_t vkt_stream_recording(vkt_device *dev) { return dev->next_id; }

uint64_t vkt_stream_barriers(vkt_device *dev) { return dev->barriers; }
uint64_t vkt_stream_dispatched(vkt_device *dev) { return dev->dispatched; }

void vkt_stream_count_ops(vkt_device *dev, uint32_t n) { dev->more_ops += n; }

/* A descriptor set from the current batch's pool; a spent pool ends the batch. */
static vkt_status alloc_set(vkt_device *dev, vkt_pipeline *pipe, VkCommandBuffer *cmd, VkDescriptorSet *set) {
  vkt_status st = VKT_OK;
  VkDescriptorSetAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                    .descriptorPool = dev->slots[dev->cur].pool,
                                    .descriptorSetCount = 1,
                                    .pSetLayouts = &pipe->set_layout};
  if (vkAllocateDescriptorSets(dev->device, &ai, set) == VK_SUCCESS)
    return VKT_OK;
  if ((st = vkt_stream_flush(dev)) || (st = vkt_stream_begin(dev, cmd)))
    return st;
  ai.descriptorPool = dev->slots[dev->cur].pool;
  VKT_VK_CHECK(vkAllocateDescriptorSets(dev->device, &ai, set));
finish:
  return st;
}

vkt_status vkt_stream_dispatch(vkt_device *dev, vkt_pipeline *pipe, const vkt_binding *bindings, int nbindings,
                               const void *push, uint32_t push_size, const uint32_t groups[3], uint64_t *batch) {
  vkt_status st = VKT_OK;
  VkCommandBuffer cmd;
  VkDescriptorSet set = VK_NULL_HANDLE;
  if ((st = vkt_stream_begin(dev, &cmd)) || (!dev->push_descriptors && (st = alloc_set(dev, pipe, &cmd, &set))))
    return st;
  VkDescriptorBufferInfo infos[VKT_MAX_BINDINGS];
  VkWriteDescriptorSet writes[VKT_MAX_BINDINGS];
  vkt_access acc[VKT_MAX_BINDINGS];
  for (int i = 0; i < nbindings; i++) {
    const vkt_binding *b = &bindings[i];
    if (!b->alloc->block) /* a pending result's storage reached a dispatch uncomputed: a bug, not a crash */
      return vkt_fail(VKT_ERR_RUNTIME, "internal error: binding %d of a dispatch has no memory", i);
    infos[i] = (VkDescriptorBufferInfo){b->alloc->block->buffer, b->alloc->offset + b->offset, b->size};
    writes[i] = (VkWriteDescriptorSet){.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                       .dstSet = set,
                                       .dstBinding = (uint32_t)i,
                                       .descriptorCount = 1,
                                       .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                       .pBufferInfo = &infos[i]};
    acc[i] = (vkt_access){infos[i].buffer, infos[i].offset, b->size, b->write};
  }
  dev->profile_next = pipe;
  vkt_stream_touch(dev, cmd, acc, nbindings);
  vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipe->pipeline);
  if (dev->push_descriptors) {
    vkCmdPushDescriptorSetKHR(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipe->layout, 0, (uint32_t)nbindings, writes);
  } else {
    vkUpdateDescriptorSets(dev->device, (uint32_t)nbindings, writes, 0, NULL);
    vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipe->layout, 0, 1, &set, 0, NULL);
  }
  if (push_size)
    vkCmdPushConstants(cmd, pipe->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, push_size, push);
  vkCmdDispatch(cmd, groups[0], groups[1], groups[2]);
  *batch = dev->next_id;
  if (dev->dispatches >= VKT_MAX_DISPATCHES)
    return vkt_stream_flush(dev);
  /* An idle GPU gets the batch so far, so that it runs while the host records the rest. Counted in ops, not
   * dispatches: a training step of an MLP recorded 37 dispatches unfused and 30 fused between its host reads,
   * so fused, the GPU got nothing until the read and the host then waited for all of it. */
  if (dev->ops - dev->polled_ops >= VKT_EAGER_OPS &&
      dev->dispatches - dev->polled_dispatches >= VKT_EAGER_MIN_DISPATCHES) {
    dev->polled_ops = dev->ops, dev->polled_dispatches = dev->dispatches;
    vkt_stream_poll(dev);
    if (dev->completed + 1 >= dev->next_id)
      st = vkt_stream_flush(dev);
  }
  return st;
}

void vkt_groups_for_rows(const vkt_device *dev, uint64_t inner, uint64_t rows, uint32_t per_group, uint32_t groups[3]) {
  uint64_t max_y = dev->props->max_workgroup_count[1];
  groups[0] = (uint32_t)((inner + per_group - 1) / per_group);
  groups[1] = (uint32_t)(rows < max_y ? rows : max_y);
  groups[2] = (uint32_t)((rows + max_y - 1) / max_y);
}

void vkt_groups_for(const vkt_device *dev, uint64_t n, uint32_t groups[3]) {
  uint64_t max_x = dev->props->max_workgroup_count[0];
  groups[0] = (uint32_t)(n < max_x ? n : max_x);
  groups[1] = (uint32_t)((n + max_x - 1) / max_x);
  groups[2] = 1;
  if (groups[0] == 0)
    groups[0] = groups[1] = 1;
}
