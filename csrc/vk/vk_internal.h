/* vk_internal.h: Vulkan types and the function table shared by the files of csrc/vk/ only.
 * libvulkan is opened with dlopen, so every entry point is a pointer loaded here. */
#ifndef VKT_VK_INTERNAL_H
#define VKT_VK_INTERNAL_H

#include <pthread.h>

#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>

#include "runtime.h"

/* VK_KHR_cooperative_matrix, newer than Debian 12's headers (1.3.239). */
#ifndef VK_KHR_cooperative_matrix
#define VK_KHR_cooperative_matrix 1
#define VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME "VK_KHR_cooperative_matrix"
#define VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR ((VkStructureType)1000506000)
#define VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR ((VkStructureType)1000506001)
typedef struct VkCooperativeMatrixPropertiesKHR {
  VkStructureType sType;
  void *pNext;
  uint32_t MSize, NSize, KSize;
  VkComponentTypeNV AType, BType, CType, ResultType; /* the KHR and NV enumerants agree */
  VkBool32 saturatingAccumulation;
  VkScopeNV scope;
} VkCooperativeMatrixPropertiesKHR;
typedef struct VkPhysicalDeviceCooperativeMatrixFeaturesKHR {
  VkStructureType sType;
  void *pNext;
  VkBool32 cooperativeMatrix, cooperativeMatrixRobustBufferAccess;
} VkPhysicalDeviceCooperativeMatrixFeaturesKHR;
typedef VkResult(VKAPI_PTR *PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR)(VkPhysicalDevice, uint32_t *,
                                                                                   VkCooperativeMatrixPropertiesKHR *);
#endif

/* VK_NV_cooperative_matrix2, likewise. */
#ifndef VK_NV_cooperative_matrix2
#define VK_NV_cooperative_matrix2 1
#define VK_NV_COOPERATIVE_MATRIX_2_EXTENSION_NAME "VK_NV_cooperative_matrix2"
#define VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_FEATURES_NV ((VkStructureType)1000593000)
#define VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_FLEXIBLE_DIMENSIONS_PROPERTIES_NV ((VkStructureType)1000593001)
typedef struct VkPhysicalDeviceCooperativeMatrix2FeaturesNV {
  VkStructureType sType;
  void *pNext;
  VkBool32 cooperativeMatrixWorkgroupScope, cooperativeMatrixFlexibleDimensions, cooperativeMatrixReductions,
      cooperativeMatrixConversions, cooperativeMatrixPerElementOperations, cooperativeMatrixTensorAddressing,
      cooperativeMatrixBlockLoads;
} VkPhysicalDeviceCooperativeMatrix2FeaturesNV;
typedef struct VkCooperativeMatrixFlexibleDimensionsPropertiesNV {
  VkStructureType sType;
  void *pNext;
  uint32_t MGranularity, NGranularity, KGranularity;
  VkComponentTypeNV AType, BType, CType, ResultType;
  VkBool32 saturatingAccumulation;
  VkScopeNV scope;
  uint32_t workgroupInvocations;
} VkCooperativeMatrixFlexibleDimensionsPropertiesNV;
typedef VkResult(VKAPI_PTR *PFN_vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV)(
    VkPhysicalDevice, uint32_t *, VkCooperativeMatrixFlexibleDimensionsPropertiesNV *);
#endif

/* One entry point per X(), kept in rows. */
// clang-format off
#define VKT_VK_FUNCS(X)                                                                                                \
  X(vkCreateInstance) X(vkDestroyInstance) X(vkEnumeratePhysicalDevices) X(vkEnumerateInstanceLayerProperties)         \
  X(vkEnumerateInstanceExtensionProperties) X(vkEnumerateInstanceVersion) X(vkGetPhysicalDeviceProperties)             \
  X(vkGetPhysicalDeviceProperties2) X(vkGetPhysicalDeviceFeatures) X(vkGetPhysicalDeviceFeatures2)                     \
  X(vkGetPhysicalDeviceMemoryProperties) X(vkGetPhysicalDeviceQueueFamilyProperties)                                   \
  X(vkEnumerateDeviceExtensionProperties) X(vkCreateDevice) X(vkDestroyDevice) X(vkGetDeviceQueue)                     \
  X(vkDeviceWaitIdle) X(vkAllocateMemory) X(vkFreeMemory) X(vkMapMemory) X(vkUnmapMemory) X(vkCreateBuffer)            \
  X(vkDestroyBuffer) X(vkGetBufferMemoryRequirements) X(vkBindBufferMemory) X(vkCreateCommandPool)                     \
  X(vkDestroyCommandPool) X(vkAllocateCommandBuffers) X(vkBeginCommandBuffer) X(vkEndCommandBuffer)                    \
  X(vkResetCommandBuffer) X(vkQueueSubmit) X(vkCreateFence) X(vkDestroyFence) X(vkWaitForFences)                       \
  X(vkResetFences) X(vkGetFenceStatus) X(vkCmdPipelineBarrier) X(vkCmdCopyBuffer) X(vkCmdFillBuffer)                   \
  X(vkCmdDispatch) X(vkCmdBindPipeline) X(vkCmdBindDescriptorSets) X(vkCmdPushConstants)                               \
  X(vkCreateShaderModule) X(vkDestroyShaderModule) X(vkCreateComputePipelines) X(vkDestroyPipeline)                    \
  X(vkCreatePipelineLayout) X(vkDestroyPipelineLayout) X(vkCreateDescriptorSetLayout)                                  \
  X(vkDestroyDescriptorSetLayout) X(vkCreateDescriptorPool) X(vkDestroyDescriptorPool) X(vkResetDescriptorPool)        \
  X(vkAllocateDescriptorSets) X(vkUpdateDescriptorSets) X(vkCreatePipelineCache) X(vkDestroyPipelineCache)             \
  X(vkGetPipelineCacheData) X(vkCreateDebugUtilsMessengerEXT) X(vkDestroyDebugUtilsMessengerEXT)                       \
  X(vkCmdPushDescriptorSetKHR) X(vkCreateSemaphore) X(vkDestroySemaphore) X(vkWaitSemaphores)                          \
  X(vkGetSemaphoreCounterValue) X(vkGetPhysicalDeviceCooperativeMatrixPropertiesNV)                                   \
  X(vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR) X(vkGetPipelineExecutablePropertiesKHR)                        \
  X(vkGetPipelineExecutableStatisticsKHR) X(vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV)       \
  X(vkCreateQueryPool) X(vkDestroyQueryPool) X(vkGetQueryPoolResults) X(vkCmdResetQueryPool) X(vkCmdWriteTimestamp)
// clang-format on

#define VKT_DECLARE(name) extern PFN_##name name;
VKT_VK_FUNCS(VKT_DECLARE)
#undef VKT_DECLARE

/* spirv.c: rewrites GL_NV_cooperative_matrix SPIR-V (from glslang 12) into the SPV_KHR_cooperative_matrix
 * form, in place; other modules are left as they are. */
vkt_status vkt_spirv_coop_khr(uint32_t **words, size_t *nwords);

/* Turns a failed VkResult into a vkt_status naming the call. */
vkt_status vkt_vk_fail(VkResult r, const char *what);
#define VKT_VK_CHECK(call)                                                                                             \
  do {                                                                                                                 \
    VkResult r_ = (call);                                                                                              \
    if (r_ != VK_SUCCESS) {                                                                                            \
      st = vkt_vk_fail(r_, #call);                                                                                     \
      goto finish;                                                                                                     \
    }                                                                                                                  \
  } while (0)

#define VKT_BATCH_SLOTS 4
#define VKT_MAX_DISPATCHES 1024 /* per batch: bounds the latency of the first result */
#define VKT_MAX_BINDINGS 8
#define VKT_MAX_ACCESSES 64 /* tracked ranges per barrier interval */

typedef struct {
  VkCommandBuffer cmd;
  VkDescriptorPool pool;
  uint64_t id; /* the batch last submitted from this slot; reusable once the timeline reaches it */
} vkt_slot;

typedef struct {
  VkBuffer buffer;
  uint64_t offset, size;
  bool write;
} vkt_access;

typedef enum { VKT_SEG_USED, VKT_SEG_PENDING, VKT_SEG_READY } vkt_seg_state;

/* A range of a block. Free ranges wait on the pending list (sorted by the batch they wait for) until
 * the GPU is done with them, then move to the ready list, merged with ready neighbours. A pending range
 * may also be handed out before that, in stream order (memory.c says when). */
typedef struct vkt_segment vkt_segment;
struct vkt_segment {
  uint64_t offset, size; /* bytes within the block */
  uint64_t ready;        /* pending: the batch that must finish before reuse */
  vkt_seg_state state;
  vkt_block *block;
  vkt_segment *prev, *next;   /* neighbours in the block, by offset */
  vkt_segment *lprev, *lnext; /* the device's ready or pending list */
};

struct vkt_block {
  VkDeviceMemory memory;
  VkBuffer buffer;
  uint64_t size;  /* bytes */
  void *mapped;   /* host pointer when the memory is host-visible */
  bool dedicated; /* one allocation for one large tensor */
  vkt_segment *segments;
  vkt_block *next;
};

typedef struct {
  VkBuffer buffer;
  VkDeviceMemory memory;
  void *mapped;
  uint64_t size;
  uint64_t last_use; /* batch of the last copy through it */
} vkt_staging;

#define VKT_PIPELINE_BUCKETS 256

struct vkt_pipeline {
  char *key;     /* shader name, a newline, the defines */
  uint64_t hash; /* of key, the table's (pipeline.c) */
  VkDescriptorSetLayout set_layout;
  VkPipelineLayout layout;
  VkPipeline pipeline;
  int nbindings;
  vkt_pipeline *next;
};

typedef struct vkt_profile vkt_profile;

struct vkt_device {
  int index;
  const vkt_adapter_props *props;
  VkPhysicalDevice physical;
  VkDevice device;
  VkQueue queue;
  uint32_t queue_family;
  VkCommandPool cmd_pool;
  VkPipelineCache pipeline_cache;
  vkt_pipeline *pipelines[VKT_PIPELINE_BUCKETS]; /* chained by hash of the key */
  bool push_descriptors; /* VK_KHR_push_descriptor: no descriptor sets to allocate per dispatch */
  bool pipeline_stats;   /* $VKT_PIPELINE_STATS: print the driver's statistics of each new pipeline */

  /* memory */
  uint32_t mem_type;     /* for tensors */
  bool mem_host_visible; /* tensors' memory is mapped (a block whose mapped is set) */
  bool mem_host_cached;  /* ... and cached, so reads from it are fast */
  int unmapped_type;     /* where mem_type is mapped, device-local memory the host does not see, or -1 */
  bool mapped_full;      /* a block of mem_type found no memory: new blocks take unmapped_type */
  uint32_t staging_type;
  uint64_t block_size; /* bytes per shared block */
  vkt_block *blocks;
  vkt_segment *ready;                  /* free ranges the GPU is done with */
  vkt_segment *pending, *pending_tail; /* free ranges still in use by a batch, oldest first */
  vkt_mem_stats stats;
  uint64_t limit;           /* cap on reserved bytes; 0 means none */
  uint64_t shared_reserved; /* bytes in blocks shared by small tensors */
  vkt_staging staging[2];
  vkt_block sync_block; /* vkt_mem_sync_words' words, outside the allocator's blocks and counts */
  vkt_alloc sync_alloc;
  uint32_t sync_next; /* the next range handed out, in words */
  pthread_mutex_t transfer_lock; /* one host <-> device transfer at a time uses the staging buffers */

  /* stream */
  VkSemaphore timeline; /* signalled to a batch's id when it finishes */
  vkt_slot slots[VKT_BATCH_SLOTS];
  int cur;                               /* slot being recorded */
  bool recording;                        /* slots[cur].cmd has begun */
  uint32_t dispatches;                   /* in the current batch */
  uint32_t ops;                          /* ... counting each op a fused kernel computes (vkt_stream_count_ops) */
  uint32_t more_ops;                     /* what the next command computes beyond one op */
  uint32_t polled_ops;                   /* ops when the timeline was last polled */
  uint32_t polled_dispatches;            /* dispatches then */
  uint64_t dispatched;                   /* recorded, over the device's life */
  uint64_t next_id;                      /* id of the batch being recorded */
  uint64_t completed;                    /* every batch <= completed has finished */
  vkt_access accesses[VKT_MAX_ACCESSES]; /* since the batch's last barrier */
  int naccesses;
  uint64_t barriers;                /* recorded, over the device's life */
  vkt_profile *profile;             /* $VKT_PROFILE's timestamps (profile.c), or NULL */
  const vkt_pipeline *profile_next; /* the pipeline of the command being recorded, NULL for a copy or fill */
};

/* $VKT_PROFILE (profile.c): the GPU time of each command, printed at teardown. */
void vkt_profile_init(vkt_device *dev);
void vkt_profile_begin(vkt_device *dev, VkCommandBuffer cmd);                           /* a slot's batch begins */
void vkt_profile_stamp(vkt_device *dev, VkCommandBuffer cmd, const vkt_pipeline *next); /* before a command */
void vkt_profile_destroy(vkt_device *dev);                                              /* after the device idles */

VkInstance vkt_instance(void);
VkPhysicalDevice vkt_physical(int index);

vkt_status vkt_mem_init(vkt_device *dev);
void vkt_mem_destroy(vkt_device *dev);
vkt_status vkt_stream_init(vkt_device *dev);
vkt_status vkt_mem_sync_init(vkt_device *dev); /* after vkt_stream_init, where the adapter splits products */
void vkt_stream_destroy(vkt_device *dev);
void vkt_pipelines_destroy(vkt_device *dev);
void vkt_pipeline_cache_load(vkt_device *dev);
void vkt_pipeline_cache_save(vkt_device *dev);

/* Runs a blocking call between the host's hooks (vkt_set_blocking_hooks). */
void *vkt_blocking_enter(void);
void vkt_blocking_leave(void *token);

/* Stream internals for the allocator's copies. */
vkt_status vkt_stream_begin(vkt_device *dev, VkCommandBuffer *cmd);
void vkt_stream_touch(vkt_device *dev, VkCommandBuffer cmd, const vkt_access *acc, int n);
void vkt_stream_poll(vkt_device *dev);

#endif
