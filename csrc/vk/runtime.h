/* runtime.h: the Vulkan layer as the rest of vkt sees it: adapters, devices, the caching allocator,
 * the stream that batches GPU work, and compute pipelines. No Vulkan type appears here, so only
 * csrc/vk/ includes vulkan.h. */
#ifndef VKT_RUNTIME_H
#define VKT_RUNTIME_H

#include "../vkt.h"

typedef struct vkt_device vkt_device;
typedef struct vkt_block vkt_block;
typedef struct vkt_pipeline vkt_pipeline;

/* ---- adapters ---- */

typedef enum {
  VKT_ADAPTER_DISCRETE,
  VKT_ADAPTER_INTEGRATED,
  VKT_ADAPTER_VIRTUAL,
  VKT_ADAPTER_CPU,
  VKT_ADAPTER_OTHER,
  VKT_ADAPTER_TYPE_COUNT
} vkt_adapter_type;

extern const char *const vkt_adapter_type_names[VKT_ADAPTER_TYPE_COUNT];

typedef struct {
  char name[256];
  char driver[256];
  vkt_adapter_type type;
  uint32_t api_version; /* VK_MAKE_API_VERSION packing */
  uint32_t driver_version;
  uint32_t vendor_id, device_id;
  uint64_t device_local_bytes; /* largest device-local heap */
  uint32_t subgroup_size;
  bool subgroup_arithmetic;          /* subgroupAdd and the scans, in compute shaders */
  bool subgroup_ballot;              /* subgroupBallot and its bit counts, in compute shaders */
  uint64_t max_storage_buffer_range; /* bytes */
  uint32_t max_shared_memory;        /* bytes per workgroup */
  uint32_t max_workgroup_count[3];
  uint32_t max_workgroup_invocations;
  bool float64, int64, float16, int8_storage, int16_storage;
  bool memory_model_device_scope; /* vulkanMemoryModelDeviceScope: atomics may use Device scope under it */
  bool cooperative_matrix;        /* VK_NV_ or VK_KHR_cooperative_matrix */
  bool coop_f16;                  /* 16 x 8 x 16 float16 -> float32 fragments per subgroup through VK_KHR_ or
                                     VK_NV_cooperative_matrix, and the Vulkan memory model its shaders declare */
  bool coop_khr;                  /* ... through VK_KHR_cooperative_matrix (shaders are rewritten from the NV form) */
  bool coop2;                     /* workgroup-scope float16 -> float32 products through VK_NV_cooperative_matrix2 */
  uint32_t coop2_granularity[3], coop2_invocations; /* their M, N, K granularity, and workgroup size */
  bool push_descriptor;
  bool float32_atomic_add; /* VK_EXT_shader_atomic_float's shaderBufferFloat32AtomicAdd: scatter adds natively */
  bool int64_atomics;      /* shaderBufferInt64Atomics: scatter combines 8-byte elements by 64-bit compare-and-swap,
                              else by sorting (VKT_NO_INT64_ATOMICS: as if absent) */
  /* shaderSignedZeroInfNanPreserveFloat32/64 (Vulkan 1.2): vkt's shaders then ask the driver to keep IEEE 754's signed
   * zeros, infinities and NaNs (shaders/math.glsl) */
  bool preserve_f32, preserve_f64;
  uint8_t uuid[16];
  uint32_t max_workgroup_size[3];
  uint32_t max_push_constants;           /* bytes */
  uint32_t min_storage_offset_alignment; /* bytes, of a storage buffer binding's offset */
  bool robust_buffer_access;             /* enabled where present: out-of-bounds writes are dropped */
  bool pipeline_robustness; /* VK_EXT_pipeline_robustness: vkt's own pipelines go without those bounds checks */
  /* Fills and dense copies are dispatches (fill.comp, copy.comp), not vkCmdFillBuffer and vkCmdCopyBuffer: on a GPU,
   * whose driver may run those apart from the compute work around them (NVIDIA's did); not on a CPU adapter, where
   * they are memset and memcpy (lavapipe, a clone of 2^20 floats: 0.16 ms so, 7.1 by copy.comp), unless
   * VKT_SHADER_FILLS is set, to test that path. */
  bool shader_fills;
  /* Whether a long float32 product over few 128 x 128 tiles splits K (matmul.c's k_slices and kernel_split), to fill
   * a GPU's many multiprocessors: not on a CPU adapter, whose few cores are busy with the tiles there are, unless
   * VKT_WIDE_SPLIT_K is set, to test that path. */
  bool wide_split_k;
  /* The big float32 tile's workgroups that run at once, two a multiprocessor (VK_NV_shader_sm_builtins'
   * shaderSMCount; 0 where the adapter does not say), over which a product's last wave is split (matmul.c's
   * split_of); VKT_PRODUCT_SLOTS sets it, 0 turning that off, a number testing it on any adapter. */
  uint32_t product_slots;
} vkt_adapter_props;

/* Sorts adapter indices best first: discrete > integrated > virtual > CPU > other, then by more
 * device-local memory, then by enumeration order. Pure, so it is unit-tested without a GPU. */
void vkt_adapters_rank(const vkt_adapter_type *types, const uint64_t *local_bytes, int n, int *order);

/* The SPIR-V of an embedded shader compiled with these #define lines, in the KHR cooperative-matrix form
 * when coop_khr; no device needed (for tests). The caller frees *words. */
vkt_status vkt_shader_spirv(const char *shader, const char *defines, bool coop_khr, uint32_t **words, size_t *nwords);

/* Whether the linked glslang compiles GL_NV_cooperative_matrix2 (15 and later; Debian 12's is 12). */
bool vkt_compiler_has_coop2(void);

/* Loads libvulkan and enumerates adapters once. Not an error when Vulkan is missing:
 * vkt_runtime_available() is then false and vkt_runtime_why() says why. */
void vkt_runtime_init(void);
bool vkt_runtime_available(void);
const char *vkt_runtime_why(void);
int vkt_adapter_count(void);
#define VKT_MAX_ADAPTERS 16 /* adapters counted; more are ignored */
const vkt_adapter_props *vkt_adapter_get(int index); /* index in ranked order */
const char *vkt_cache_dir(void);                     /* where SPIR-V and pipeline caches live */

/* The adapter "vulkan" means: VKT_DEVICE's choice or the best one; set_device changes it. */
vkt_status vkt_default_adapter(int *index);
vkt_status vkt_set_default_adapter(int index);
const char *vkt_adapter_choice_reason(void);

/* The device of an adapter, created on first use. */
vkt_status vkt_device_get(int index, vkt_device **out);
int vkt_device_index(const vkt_device *dev);
const vkt_adapter_props *vkt_device_props(const vkt_device *dev);
void vkt_runtime_shutdown(void);

/* Validation-layer messages (VKT_VALIDATION=1), collected instead of printed. */
int vkt_validation_count(void);
const char *vkt_validation_message(int i);
void vkt_validation_drop(int n); /* removes the first n, read by now; later ones stay */
bool vkt_validation_enabled(void);

/* Called around every blocking wait (on the GPU, or on another thread's transfer): enter returns a
 * token that leave takes back. csrc/python releases the GIL here, so other threads run meanwhile;
 * vkt re-checks its state after each wait. */
void vkt_set_blocking_hooks(void *(*enter)(void), void (*leave)(void *token));

/* ---- memory: the caching allocator ---- */

typedef struct {
  vkt_block *block;
  struct vkt_segment *segment; /* the allocator's record of this range */
  uint64_t offset;             /* bytes into the block's buffer, 256-aligned */
  uint64_t size;               /* bytes, the request rounded up to 4 */
  uint64_t last_use;           /* the newest batch that used the range before it: host access waits for it */
} vkt_alloc;

typedef struct {
  uint64_t allocated, allocated_peak; /* bytes in live ranges */
  uint64_t reserved, reserved_peak;   /* bytes in device allocations */
  uint64_t alloc_count, free_count, retries, ooms, blocks;
} vkt_mem_stats;

/* A range of nbytes. It may have been freed by a tensor the GPU still works on (out->last_use): the stream
 * orders GPU accesses to it after that work, and host accesses must wait for batch out->last_use, as
 * the transfers below do when given it as the range's last use. */
vkt_status vkt_mem_alloc(vkt_device *dev, uint64_t nbytes, vkt_alloc *out);
/* Returns the range, last used by batch last_use, to the free list: in stream order, like PyTorch's
 * caching allocator, so the next allocation may have it at once (memory.c says when it does). */
void vkt_mem_free(vkt_device *dev, vkt_alloc *a, uint64_t last_use);
void vkt_mem_stats_get(vkt_device *dev, vkt_mem_stats *out);
void vkt_mem_reset_peak(vkt_device *dev);
vkt_status vkt_mem_empty_cache(vkt_device *dev);
vkt_status vkt_mem_set_limit(vkt_device *dev, uint64_t bytes); /* 0: no cap */
uint64_t vkt_mem_limit(vkt_device *dev);

/* Host <-> device copies of nbytes at byte offset off of an allocation. An upload waits for batch
 * last_use and may record into the stream: *last_use is updated. A download waits for last_use. */
vkt_status vkt_mem_upload(vkt_device *dev, const vkt_alloc *a, uint64_t off, const void *src, uint64_t nbytes,
                          uint64_t *last_use);
vkt_status vkt_mem_download(vkt_device *dev, const vkt_alloc *a, uint64_t off, void *dst, uint64_t nbytes,
                            uint64_t last_use);
/* Fills nbytes (a multiple of 4) with a 32-bit pattern from the host, where the range is host-mapped, at most
 * VKT_HOST_FILL_BYTES, and no batch that used it (last_use) is unfinished: nothing is recorded then, so the stream
 * gets no command or barrier for it (backward()'s seed gradient). Returns whether it did. */
#define VKT_HOST_FILL_BYTES 4096u
bool vkt_mem_fill_on_host(vkt_device *dev, const vkt_alloc *a, uint64_t off, uint64_t nbytes, uint32_t pattern,
                          uint64_t last_use);
/* Fills nbytes (a multiple of 4) with a 32-bit pattern, recorded in the stream. */
vkt_status vkt_mem_fill(vkt_device *dev, const vkt_alloc *a, uint64_t off, uint64_t nbytes, uint32_t pattern,
                        uint64_t *last_use);
/* Device-to-device copy of nbytes, recorded in the stream; returns its batch in *batch. */
vkt_status vkt_mem_copy(vkt_device *dev, const vkt_alloc *src, uint64_t src_off, const vkt_alloc *dst, uint64_t dst_off,
                        uint64_t nbytes, uint64_t *batch);

/* ---- stream: batched asynchronous execution ---- */

typedef struct {
  const vkt_alloc *alloc;
  uint64_t offset, size; /* bytes, the range the shader may touch */
  bool write;
} vkt_binding;

/* A binding of n words (n <= VKT_SYNC_WORDS / 64) of a buffer the device keeps, all zero at first, for a kernel
 * whose workgroups count their progress there: the kernel must leave them zero when it ends. The ranges are handed
 * out in turn over VKT_SYNC_WORDS words, so that a range comes back only after 64 other kernels took one, more than
 * can run at once: between barriers a batch tracks at most 64 bindings (stream.c). */
#define VKT_SYNC_WORDS (1u << 16)
vkt_status vkt_mem_sync_words(vkt_device *dev, uint32_t n, vkt_binding *out);

/* Records a dispatch into the current batch (a barrier first only if it touches a range written
 * earlier in the batch, or writes one read earlier) and returns the batch id in *batch. */
vkt_status vkt_stream_dispatch(vkt_device *dev, vkt_pipeline *pipe, const vkt_binding *bindings, int nbindings,
                               const void *push, uint32_t push_size, const uint32_t groups[3], uint64_t *batch);
vkt_status vkt_stream_flush(vkt_device *dev);
/* Waits until batch id has finished, submitting it first if it is still being recorded. */
vkt_status vkt_stream_wait(vkt_device *dev, uint64_t batch);
/* Submits what is being recorded and waits for every batch. */
vkt_status vkt_stream_synchronize(vkt_device *dev);
/* Whether a batch is being recorded; whether none is and every submitted batch has finished. */
bool vkt_stream_is_recording(vkt_device *dev);
bool vkt_stream_idle(vkt_device *dev);
/* Submits the batch being recorded if the GPU has nothing else to run (after a long dispatch). */
vkt_status vkt_stream_flush_if_idle(vkt_device *dev);
uint64_t vkt_stream_barriers(vkt_device *dev);
uint64_t vkt_stream_dispatched(vkt_device *dev); /* dispatches recorded over the device's life */
uint64_t vkt_stream_recording(vkt_device *dev);
/* The next command computes n ops more than one (a fused kernel): toward handing an idle GPU the batch early,
 * it counts as the n + 1 dispatches it replaces, so fusing ops does not make the GPU wait longer for work. */
void vkt_stream_count_ops(vkt_device *dev, uint32_t n);

/* ---- pipelines ---- */

/* The compute pipeline for shaders/<shader> compiled with the given #define lines, with nbindings
 * storage buffers and push_size bytes of push constants. Cached in memory and on disk. */
vkt_status vkt_pipeline_get(vkt_device *dev, const char *shader, const char *defines, int nbindings, uint32_t push_size,
                            vkt_pipeline **out);

/* The compute pipeline for a whole GLSL source (a user's kernel, or one vkt generated), whose #include
 * lines name vkt's shader headers; cached in memory and on disk like vkt_pipeline_get's. A compile error
 * sets *log (the caller frees it) to glslang's log and returns VKT_ERR_RUNTIME. */
vkt_status vkt_pipeline_get_source(vkt_device *dev, const char *source, int nbindings, uint32_t push_size,
                                   vkt_pipeline **out, char **log);

/* Splits n workgroups over x and y within the adapter's limits; shaders rebuild the linear id. */
void vkt_groups_for(const vkt_device *dev, uint64_t n, uint32_t groups[3]);
/* The workgroups of a ROWS launch (elementwise.glsl, copy.comp) over rows of `inner` elements: per_group of a
 * row each along x, the rows along y, and along z past y's limit. */
void vkt_groups_for_rows(const vkt_device *dev, uint64_t inner, uint64_t rows, uint32_t per_group, uint32_t groups[3]);

#endif
