/* device.c: the Vulkan runtime: dlopen of libvulkan, the instance (with the validation layer when
 * VKT_VALIDATION=1), adapter enumeration and ranking, and lazily created logical devices. */
#include "vk_internal.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VKT_DEFINE(name) PFN_##name name;
VKT_VK_FUNCS(VKT_DEFINE)
#undef VKT_DEFINE

const char *const vkt_adapter_type_names[VKT_ADAPTER_TYPE_COUNT] = {"discrete", "integrated", "virtual", "cpu",
                                                                    "other"};

#define VKT_MAX_MESSAGES 64

static struct {
  bool initialized, available;
  char why[512];
  void *lib;
  VkInstance instance;
  VkDebugUtilsMessengerEXT messenger;
  int count;
  VkPhysicalDevice physical[VKT_MAX_ADAPTERS]; /* ranked order */
  vkt_adapter_props props[VKT_MAX_ADAPTERS];
  vkt_device *devices[VKT_MAX_ADAPTERS];
  int chosen; /* default adapter, or -1 when VKT_DEVICE names none */
  char choice_reason[512];
  char cache_dir[1024];
  bool validation;
  char *messages[VKT_MAX_MESSAGES];
  int nmessages;
} rt = {.chosen = -1};

vkt_status vkt_vk_fail(VkResult r, const char *what) {
  if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY)
    return vkt_fail(VKT_ERR_OOM, "%s failed: out of memory (VkResult %d)", what, (int)r);
  if (r == VK_ERROR_DEVICE_LOST)
    return vkt_fail(VKT_ERR_RUNTIME, "%s failed: the Vulkan device was lost", what);
  return vkt_fail(VKT_ERR_RUNTIME, "%s failed with VkResult %d", what, (int)r);
}

void vkt_adapters_rank(const vkt_adapter_type *types, const uint64_t *local_bytes, int n, int *order) {
  for (int i = 0; i < n; i++)
    order[i] = i;
  /* insertion sort: stable, and n is small */
  for (int i = 1; i < n; i++) {
    int v = order[i], j = i - 1;
    while (j >= 0) {
      int u = order[j];
      bool better = types[v] < types[u] || (types[v] == types[u] && local_bytes[v] > local_bytes[u]);
      if (!better)
        break;
      order[j + 1] = u;
      j--;
    }
    order[j + 1] = v;
  }
}

/* The layer may call on_message from a thread waiting on the GPU without the GIL (vkt's other state
 * is the GIL's), so the message list has a lock of its own. */
static pthread_mutex_t messages_lock = PTHREAD_MUTEX_INITIALIZER;

static VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                 VkDebugUtilsMessageTypeFlagsEXT type,
                                                 const VkDebugUtilsMessengerCallbackDataEXT *data, void *user) {
  (void)type, (void)user;
  if (severity < VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT)
    return VK_FALSE;
  pthread_mutex_lock(&messages_lock);
  if (rt.nmessages < VKT_MAX_MESSAGES &&
      (rt.messages[rt.nmessages] = strdup(data->pMessage ? data->pMessage : "(no message)")))
    rt.nmessages++;
  pthread_mutex_unlock(&messages_lock);
  return VK_FALSE;
}

static void set_cache_dir(void) {
  const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
  if (xdg && *xdg)
    snprintf(rt.cache_dir, sizeof rt.cache_dir, "%s/vkt", xdg);
  else
    snprintf(rt.cache_dir, sizeof rt.cache_dir, "%s/.cache/vkt", home && *home ? home : "/tmp");
}

static bool load_library(void) {
  const char *path = getenv("VKT_VULKAN_LIBRARY");
  rt.lib = dlopen(path && *path ? path : "libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!rt.lib) {
    snprintf(rt.why, sizeof rt.why, "no Vulkan loader: dlopen(%s) failed: %s", path && *path ? path : "libvulkan.so.1",
             dlerror());
    return false;
  }
  PFN_vkGetInstanceProcAddr gipa = (PFN_vkGetInstanceProcAddr)dlsym(rt.lib, "vkGetInstanceProcAddr");
  if (!gipa) {
    snprintf(rt.why, sizeof rt.why, "the Vulkan loader has no vkGetInstanceProcAddr");
    return false;
  }
#define VKT_LOAD_GLOBAL(name) name = (PFN_##name)gipa(NULL, #name);
  VKT_VK_FUNCS(VKT_LOAD_GLOBAL)
#undef VKT_LOAD_GLOBAL
  if (!vkCreateInstance) {
    snprintf(rt.why, sizeof rt.why, "the Vulkan loader exports no vkCreateInstance");
    return false;
  }
  return true;
}

static bool has_layer(const char *name) {
  uint32_t n = 0;
  if (vkEnumerateInstanceLayerProperties(&n, NULL) != VK_SUCCESS || n == 0)
    return false;
  VkLayerProperties *layers = calloc(n, sizeof *layers);
  bool found = false;
  if (layers && vkEnumerateInstanceLayerProperties(&n, layers) == VK_SUCCESS)
    for (uint32_t i = 0; i < n && !found; i++)
      found = strcmp(layers[i].layerName, name) == 0;
  free(layers);
  return found;
}

static bool create_instance(PFN_vkGetInstanceProcAddr gipa) {
  const char *want = getenv("VKT_VALIDATION");
  const char *layer = "VK_LAYER_KHRONOS_validation";
  rt.validation = want && strcmp(want, "0") != 0 && has_layer(layer);
  VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
                           .pApplicationName = "vkt",
                           .pEngineName = "vkt",
                           .apiVersion = VK_API_VERSION_1_3};
  const char *ext = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
  VkValidationFeatureEnableEXT enables[] = {VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT};
  VkDebugUtilsMessengerCreateInfoEXT m = {.sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
                                          .messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                                                             VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
                                          .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                                                         VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                                                         VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT,
                                          .pfnUserCallback = on_message};
  /* Chained into the instance's create info, m also hears vkCreateInstance and vkDestroyInstance,
   * where the layer reports objects left undestroyed. */
  VkValidationFeaturesEXT features = {.sType = VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT,
                                      .pNext = &m,
                                      .enabledValidationFeatureCount = 1,
                                      .pEnabledValidationFeatures = enables};
  VkInstanceCreateInfo info = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
                               .pNext = rt.validation ? &features : NULL,
                               .pApplicationInfo = &app,
                               .enabledLayerCount = rt.validation ? 1 : 0,
                               .ppEnabledLayerNames = &layer,
                               .enabledExtensionCount = rt.validation ? 1 : 0,
                               .ppEnabledExtensionNames = &ext};
  VkResult r = vkCreateInstance(&info, NULL, &rt.instance);
  if (r != VK_SUCCESS) {
    snprintf(rt.why, sizeof rt.why, "vkCreateInstance failed (VkResult %d): no usable Vulkan driver", r);
    return false;
  }
#define VKT_LOAD_INSTANCE(name) name = (PFN_##name)gipa(rt.instance, #name);
  VKT_VK_FUNCS(VKT_LOAD_INSTANCE)
#undef VKT_LOAD_INSTANCE
  if (rt.validation && vkCreateDebugUtilsMessengerEXT)
    vkCreateDebugUtilsMessengerEXT(rt.instance, &m, NULL, &rt.messenger);
  return true;
}

static bool has_device_extension(VkPhysicalDevice pd, const char *name) {
  uint32_t n = 0;
  if (vkEnumerateDeviceExtensionProperties(pd, NULL, &n, NULL) != VK_SUCCESS)
    return false;
  VkExtensionProperties *ext = calloc(n ? n : 1, sizeof *ext);
  bool found = false;
  if (ext && vkEnumerateDeviceExtensionProperties(pd, NULL, &n, ext) == VK_SUCCESS)
    for (uint32_t i = 0; i < n && !found; i++)
      found = strcmp(ext[i].extensionName, name) == 0;
  free(ext);
  return found;
}

/* The fragment shape the tensor-core shader multiplies: 16 x 16 of a by 16 x 8 of b, float16 into float32,
 * per subgroup; with distinct A, B and sum types, so spirv.c can give each its KHR use. */
static bool coop_shape(uint32_t m, uint32_t n, uint32_t k, VkComponentTypeNV a, VkComponentTypeNV b,
                       VkComponentTypeNV c, VkComponentTypeNV d, VkScopeNV scope) {
  return m == 16 && n == 8 && k == 16 && a == VK_COMPONENT_TYPE_FLOAT16_NV && b == VK_COMPONENT_TYPE_FLOAT16_NV &&
         c == VK_COMPONENT_TYPE_FLOAT32_NV && d == VK_COMPONENT_TYPE_FLOAT32_NV && scope == VK_SCOPE_SUBGROUP_NV;
}

/* Whether the adapter multiplies that shape through VK_KHR_cooperative_matrix (khr) or
 * VK_NV_cooperative_matrix. */
static bool coop_f16(VkPhysicalDevice pd, bool khr) {
  uint32_t n = 0;
  bool found = false;
  if (khr ? !vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR ||
                vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR(pd, &n, NULL) != VK_SUCCESS
          : !vkGetPhysicalDeviceCooperativeMatrixPropertiesNV ||
                vkGetPhysicalDeviceCooperativeMatrixPropertiesNV(pd, &n, NULL) != VK_SUCCESS)
    return false;
  VkCooperativeMatrixPropertiesKHR *pk = khr ? calloc(n + 1, sizeof *pk) : NULL;
  VkCooperativeMatrixPropertiesNV *pn = khr ? NULL : calloc(n + 1, sizeof *pn);
  for (uint32_t i = 0; i < n && (pk || pn); i++)
    if (khr)
      pk[i].sType = VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR;
    else
      pn[i].sType = VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV;
  if (pk && vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR(pd, &n, pk) == VK_SUCCESS)
    for (uint32_t i = 0; i < n && !found; i++)
      found = coop_shape(pk[i].MSize, pk[i].NSize, pk[i].KSize, pk[i].AType, pk[i].BType, pk[i].CType, pk[i].ResultType,
                         pk[i].scope);
  if (pn && vkGetPhysicalDeviceCooperativeMatrixPropertiesNV(pd, &n, pn) == VK_SUCCESS)
    for (uint32_t i = 0; i < n && !found; i++)
      found = coop_shape(pn[i].MSize, pn[i].NSize, pn[i].KSize, pn[i].AType, pn[i].BType, pn[i].CType, pn[i].DType,
                         pn[i].scope);
  free(pk);
  free(pn);
  return found;
}

/* Workgroup-scope float16 products into float32 through VK_NV_cooperative_matrix2, with the features its
 * shader uses (tensor addressing, per-element operations, flexible sizes): the granularity of the tile sizes
 * and the workgroup size they hold for, into p. 128 invocations where the adapter lists them: on an H100
 * they multiplied float16 4096^3 in 128 x 128 tiles in 0.52 ms, 256 invocations in 0.53 (128 x 256 tiles)
 * to 0.80 ms (128 x 128). */
#define COOP2_INVOCATIONS 128
static bool coop2_f16(VkPhysicalDevice pd, vkt_adapter_props *p) {
  VkPhysicalDeviceCooperativeMatrix2FeaturesNV f2 = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_FEATURES_NV};
  VkPhysicalDeviceFeatures2 f = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &f2};
  uint32_t n = 0;
  if (!has_device_extension(pd, VK_NV_COOPERATIVE_MATRIX_2_EXTENSION_NAME) ||
      !vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV)
    return false;
  vkGetPhysicalDeviceFeatures2(pd, &f);
  if (!f2.cooperativeMatrixWorkgroupScope || !f2.cooperativeMatrixFlexibleDimensions ||
      !f2.cooperativeMatrixTensorAddressing || !f2.cooperativeMatrixPerElementOperations ||
      vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV(pd, &n, NULL) != VK_SUCCESS)
    return false;
  VkCooperativeMatrixFlexibleDimensionsPropertiesNV *fd = calloc(n + 1, sizeof *fd);
  uint32_t best = 0; /* 128 invocations first, else the most up to 256 */
  for (uint32_t i = 0; fd && i < n; i++)
    fd[i].sType = VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_FLEXIBLE_DIMENSIONS_PROPERTIES_NV;
  if (fd && vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV(pd, &n, fd) == VK_SUCCESS)
    for (uint32_t i = 0; i < n; i++) {
      const VkCooperativeMatrixFlexibleDimensionsPropertiesNV *d = &fd[i];
      bool match = d->scope == VK_SCOPE_WORKGROUP_NV && d->AType == VK_COMPONENT_TYPE_FLOAT16_NV &&
                   d->BType == VK_COMPONENT_TYPE_FLOAT16_NV && d->CType == VK_COMPONENT_TYPE_FLOAT32_NV &&
                   d->ResultType == VK_COMPONENT_TYPE_FLOAT32_NV && !d->saturatingAccumulation && d->MGranularity &&
                   d->NGranularity && d->KGranularity;
      uint32_t inv = d->workgroupInvocations, rank = inv == COOP2_INVOCATIONS ? 1024 : inv <= 256 ? inv : 0;
      if (match && rank > best) {
        best = rank;
        p->coop2_granularity[0] = d->MGranularity, p->coop2_granularity[1] = d->NGranularity;
        p->coop2_granularity[2] = d->KGranularity, p->coop2_invocations = inv;
      }
    }
  free(fd);
  return best > 0;
}

static vkt_adapter_type adapter_type(VkPhysicalDeviceType t) {
  switch (t) {
  case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return VKT_ADAPTER_DISCRETE;
  case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return VKT_ADAPTER_INTEGRATED;
  case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return VKT_ADAPTER_VIRTUAL;
  case VK_PHYSICAL_DEVICE_TYPE_CPU: return VKT_ADAPTER_CPU;
  default: return VKT_ADAPTER_OTHER;
  }
}

static void read_props(VkPhysicalDevice pd, vkt_adapter_props *p) {
  VkPhysicalDeviceProperties base;
  vkGetPhysicalDeviceProperties(pd, &base);
  /* float controls are core from Vulkan 1.2, the version their SPIR-V is taken at without an extension enabled */
  VkPhysicalDeviceFloatControlsProperties fc = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FLOAT_CONTROLS_PROPERTIES};
  bool v12 = base.apiVersion >= VK_API_VERSION_1_2;
  VkPhysicalDeviceSubgroupProperties sub = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES,
                                            .pNext = v12 ? &fc : NULL};
  VkPhysicalDeviceShaderSMBuiltinsPropertiesNV sm = {.pNext = &sub};
  sm.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_SM_BUILTINS_PROPERTIES_NV;
  bool sm_builtins = has_device_extension(pd, VK_NV_SHADER_SM_BUILTINS_EXTENSION_NAME);
  VkPhysicalDeviceDriverProperties drv = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES,
                                          .pNext = sm_builtins ? (void *)&sm : (void *)&sub};
  VkPhysicalDeviceProperties2 props2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &drv};
  vkGetPhysicalDeviceProperties2(pd, &props2);
  const VkPhysicalDeviceProperties *pr = &props2.properties;
  snprintf(p->name, sizeof p->name, "%s", pr->deviceName);
  snprintf(p->driver, sizeof p->driver, "%.120s %.120s", drv.driverName, drv.driverInfo);
  p->type = adapter_type(pr->deviceType);
  p->api_version = pr->apiVersion;
  p->driver_version = pr->driverVersion;
  p->vendor_id = pr->vendorID;
  p->device_id = pr->deviceID;
  memcpy(p->uuid, pr->pipelineCacheUUID, sizeof p->uuid);
  p->subgroup_size = sub.subgroupSize;
  p->preserve_f32 = fc.shaderSignedZeroInfNanPreserveFloat32 && !getenv("VKT_NO_FLOAT_CONTROLS");
  p->preserve_f64 = fc.shaderSignedZeroInfNanPreserveFloat64 && !getenv("VKT_NO_FLOAT_CONTROLS");
  p->subgroup_arithmetic = (sub.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                           (sub.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT);
  p->subgroup_ballot =
      (sub.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) && (sub.supportedOperations & VK_SUBGROUP_FEATURE_BALLOT_BIT);
  p->max_storage_buffer_range = pr->limits.maxStorageBufferRange;
  p->max_shared_memory = pr->limits.maxComputeSharedMemorySize;
  /* VKT_SHARED_MEMORY_LIMIT: plan shaders for at most this many bytes a workgroup, as on a smaller adapter */
  const char *shared_env = getenv("VKT_SHARED_MEMORY_LIMIT");
  unsigned long long shared_cap = shared_env ? strtoull(shared_env, NULL, 10) : 0;
  if (shared_cap > 0 && shared_cap < p->max_shared_memory)
    p->max_shared_memory = (uint32_t)shared_cap;
  for (int i = 0; i < 3; i++)
    p->max_workgroup_count[i] = pr->limits.maxComputeWorkGroupCount[i];
  p->max_workgroup_invocations = pr->limits.maxComputeWorkGroupInvocations;
  p->max_workgroup_size[0] = pr->limits.maxComputeWorkGroupSize[0];
  p->max_workgroup_size[1] = pr->limits.maxComputeWorkGroupSize[1];
  p->max_workgroup_size[2] = pr->limits.maxComputeWorkGroupSize[2];
  p->max_push_constants = pr->limits.maxPushConstantsSize;
  p->min_storage_offset_alignment = (uint32_t)pr->limits.minStorageBufferOffsetAlignment;

  VkPhysicalDeviceMemoryProperties mem;
  vkGetPhysicalDeviceMemoryProperties(pd, &mem);
  for (uint32_t i = 0; i < mem.memoryHeapCount; i++)
    if ((mem.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) && mem.memoryHeaps[i].size > p->device_local_bytes)
      p->device_local_bytes = mem.memoryHeaps[i].size;

  VkPhysicalDeviceVulkan12Features f12 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  VkPhysicalDeviceVulkan11Features f11 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES,
                                          .pNext = &f12};
  VkPhysicalDeviceFeatures2 f = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &f11};
  vkGetPhysicalDeviceFeatures2(pd, &f);
  p->float64 = f.features.shaderFloat64;
  p->int64 = f.features.shaderInt64;
  p->robust_buffer_access = f.features.robustBufferAccess;
  p->int16_storage = f11.storageBuffer16BitAccess && f.features.shaderInt16;
  p->float16 = p->int16_storage && f12.shaderFloat16;
  p->int8_storage = f12.storageBuffer8BitAccess && f12.shaderInt8;
  p->int64_atomics = p->int64 && f12.shaderBufferInt64Atomics && !getenv("VKT_NO_INT64_ATOMICS");
  p->shader_fills = p->type != VKT_ADAPTER_CPU || getenv("VKT_SHADER_FILLS");
  p->wide_split_k = p->type != VKT_ADAPTER_CPU || getenv("VKT_WIDE_SPLIT_K");
  const char *slots = getenv("VKT_PRODUCT_SLOTS");
  p->product_slots = slots ? (uint32_t)strtoul(slots, NULL, 10) : sm_builtins ? 2 * sm.shaderSMCount : 0;
  p->memory_model_device_scope = f12.vulkanMemoryModelDeviceScope;
  p->cooperative_matrix =
      has_device_extension(pd, "VK_NV_cooperative_matrix") || has_device_extension(pd, "VK_KHR_cooperative_matrix");
  p->push_descriptor = has_device_extension(pd, VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME);
  VkPhysicalDeviceShaderAtomicFloatFeaturesEXT atomic = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_FLOAT_FEATURES_EXT};
  VkPhysicalDeviceFeatures2 fa = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &atomic};
  if (has_device_extension(pd, VK_EXT_SHADER_ATOMIC_FLOAT_EXTENSION_NAME))
    vkGetPhysicalDeviceFeatures2(pd, &fa);
  p->float32_atomic_add = atomic.shaderBufferFloat32AtomicAdd && !getenv("VKT_NO_FLOAT_ATOMICS");
  VkPhysicalDevicePipelineRobustnessFeaturesEXT robustness = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_ROBUSTNESS_FEATURES_EXT};
  VkPhysicalDeviceFeatures2 fr = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &robustness};
  if (p->robust_buffer_access && has_device_extension(pd, VK_EXT_PIPELINE_ROBUSTNESS_EXTENSION_NAME))
    vkGetPhysicalDeviceFeatures2(pd, &fr);
  p->pipeline_robustness = robustness.pipelineRobustness;
  /* VK_NV_cooperative_matrix first: both run alike on NVIDIA's driver, and Debian 12's validation layer
   * knows only the NV one. VKT_COOPERATIVE_MATRIX=khr or nv picks one, to compare them. */
  const char *pick = getenv("VKT_COOPERATIVE_MATRIX");
  bool usable = p->float16 && f12.vulkanMemoryModel;
  bool nv = usable && (!pick || strcmp(pick, "nv") == 0 || strcmp(pick, "nv2") == 0) &&
            has_device_extension(pd, VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME) && coop_f16(pd, false);
  p->coop_khr = usable && !nv && (!pick || strcmp(pick, "khr") == 0) &&
                has_device_extension(pd, VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME) && coop_f16(pd, true);
  p->coop_f16 = nv || p->coop_khr;
  /* Workgroup-scope matrices take float16 products over where the adapter has them and vkt's glslang compiles
   * them (also named by VKT_COOPERATIVE_MATRIX=nv2); their shaders are SPIR-V 1.6, so Vulkan 1.3. Not under
   * Debian 12's validation layer, which predates them and would reject their SPIR-V. */
  p->coop2 = usable && (!pick || strcmp(pick, "nv2") == 0) && !rt.validation && vkt_compiler_has_coop2() &&
             pr->apiVersion >= VK_API_VERSION_1_3 &&
             has_device_extension(pd, VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME) && coop2_f16(pd, p);
}

/* Applies VKT_DEVICE: an index in ranked order, or an adapter type. */
static void choose_default(void) {
  const char *want = getenv("VKT_DEVICE");
  if (!want || !*want) {
    rt.chosen = 0;
    snprintf(rt.choice_reason, sizeof rt.choice_reason,
             "best of %d adapter(s): discrete > integrated > virtual > cpu, then device-local memory", rt.count);
    return;
  }
  char *end;
  long idx = strtol(want, &end, 10);
  if (*end == '\0') {
    if (idx >= 0 && idx < rt.count) {
      rt.chosen = (int)idx;
      snprintf(rt.choice_reason, sizeof rt.choice_reason, "VKT_DEVICE=%s", want);
    } else {
      snprintf(rt.choice_reason, sizeof rt.choice_reason, "VKT_DEVICE=%s names adapter %ld, but there are %d (0..%d)",
               want, idx, rt.count, rt.count - 1);
    }
    return;
  }
  for (int i = 0; i < rt.count; i++)
    if (strcmp(vkt_adapter_type_names[rt.props[i].type], want) == 0) {
      rt.chosen = i;
      snprintf(rt.choice_reason, sizeof rt.choice_reason, "VKT_DEVICE=%s: the best %s adapter", want, want);
      return;
    }
  snprintf(rt.choice_reason, sizeof rt.choice_reason,
           "VKT_DEVICE=%s names no adapter here (use an index, discrete, integrated, virtual or cpu)", want);
}

void vkt_runtime_init(void) {
  if (rt.initialized)
    return;
  rt.initialized = true;
  set_cache_dir();
  if (!load_library())
    return;
  PFN_vkGetInstanceProcAddr gipa = (PFN_vkGetInstanceProcAddr)dlsym(rt.lib, "vkGetInstanceProcAddr");
  if (!create_instance(gipa))
    return;
  uint32_t n = 0;
  VkPhysicalDevice found[VKT_MAX_ADAPTERS];
  VkResult r = vkEnumeratePhysicalDevices(rt.instance, &n, NULL);
  if (n > VKT_MAX_ADAPTERS)
    n = VKT_MAX_ADAPTERS;
  if (r == VK_SUCCESS && n)
    r = vkEnumeratePhysicalDevices(rt.instance, &n, found);
  if ((r != VK_SUCCESS && r != VK_INCOMPLETE) || n == 0) {
    snprintf(rt.why, sizeof rt.why, "the Vulkan loader found no adapter (no driver installed?)");
    return;
  }
  vkt_adapter_props props[VKT_MAX_ADAPTERS] = {0};
  vkt_adapter_type types[VKT_MAX_ADAPTERS];
  uint64_t local[VKT_MAX_ADAPTERS];
  int order[VKT_MAX_ADAPTERS];
  for (uint32_t i = 0; i < n; i++) {
    read_props(found[i], &props[i]);
    types[i] = props[i].type;
    local[i] = props[i].device_local_bytes;
  }
  vkt_adapters_rank(types, local, (int)n, order);
  for (uint32_t i = 0; i < n; i++) {
    rt.physical[i] = found[order[i]];
    rt.props[i] = props[order[i]];
  }
  rt.count = (int)n;
  rt.available = true;
  choose_default();
}

bool vkt_runtime_available(void) {
  vkt_runtime_init();
  return rt.available;
}

const char *vkt_runtime_why(void) {
  vkt_runtime_init();
  return rt.available ? "" : rt.why;
}

int vkt_adapter_count(void) { return vkt_runtime_available() ? rt.count : 0; }

const vkt_adapter_props *vkt_adapter_get(int index) {
  return index >= 0 && index < vkt_adapter_count() ? &rt.props[index] : NULL;
}

const char *vkt_cache_dir(void) {
  vkt_runtime_init();
  return rt.cache_dir;
}

VkInstance vkt_instance(void) { return rt.instance; }
VkPhysicalDevice vkt_physical(int index) { return rt.physical[index]; }

vkt_status vkt_default_adapter(int *index) {
  if (!vkt_runtime_available())
    return vkt_fail(VKT_ERR_RUNTIME, "Vulkan is not available: %s", rt.why);
  if (rt.chosen < 0)
    return vkt_fail(VKT_ERR_RUNTIME, "%s", rt.choice_reason);
  *index = rt.chosen;
  return VKT_OK;
}

vkt_status vkt_set_default_adapter(int index) {
  if (!vkt_runtime_available())
    return vkt_fail(VKT_ERR_RUNTIME, "Vulkan is not available: %s", rt.why);
  if (index < 0 || index >= rt.count)
    return vkt_fail(VKT_ERR_RUNTIME, "invalid device index %d: there are %d Vulkan adapter(s)", index, rt.count);
  rt.chosen = index;
  snprintf(rt.choice_reason, sizeof rt.choice_reason, "set_device(%d)", index);
  return VKT_OK;
}

const char *vkt_adapter_choice_reason(void) {
  vkt_runtime_init();
  return rt.available ? rt.choice_reason : rt.why;
}

static vkt_status create_device(int index, vkt_device *dev) {
  vkt_status st = VKT_OK;
  VkPhysicalDevice pd = rt.physical[index];
  const vkt_adapter_props *p = &rt.props[index];
  dev->index = index;
  dev->props = p;
  dev->physical = pd;

  uint32_t nq = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(pd, &nq, NULL);
  VkQueueFamilyProperties qf[32];
  if (nq > 32)
    nq = 32;
  vkGetPhysicalDeviceQueueFamilyProperties(pd, &nq, qf);
  int family = -1; /* a compute-only family first: it does not share the graphics queue */
  for (uint32_t i = 0; i < nq && family < 0; i++)
    if ((qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT) && !(qf[i].queueFlags & VK_QUEUE_GRAPHICS_BIT))
      family = (int)i;
  for (uint32_t i = 0; i < nq && family < 0; i++)
    if (qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT)
      family = (int)i;
  if (family < 0)
    return vkt_fail(VKT_ERR_RUNTIME, "adapter %s has no compute queue", p->name);
  dev->queue_family = (uint32_t)family;

  float priority = 1.0f;
  VkDeviceQueueCreateInfo q = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                               .queueFamilyIndex = dev->queue_family,
                               .queueCount = 1,
                               .pQueuePriorities = &priority};
  VkPhysicalDeviceVulkan12Features f12 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
                                          .storageBuffer8BitAccess = p->int8_storage,
                                          .shaderInt8 = p->int8_storage,
                                          .timelineSemaphore = VK_TRUE,
                                          .vulkanMemoryModel = p->coop_f16 || p->coop2,
                                          /* the atomics of scatter.comp and radix.comp use Device scope,
                                             which the memory model allows only with this */
                                          .vulkanMemoryModelDeviceScope =
                                              (p->coop_f16 || p->coop2) && p->memory_model_device_scope,
                                          .shaderFloat16 = p->float16,
                                          .shaderBufferInt64Atomics = p->int64_atomics};
  VkPhysicalDeviceVulkan11Features f11 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES,
                                          .pNext = &f12,
                                          .storageBuffer16BitAccess = p->int16_storage};
  VkPhysicalDeviceFeatures2 f = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
      .pNext = &f11,
      /* bounds-checked bindings, so a user kernel's stray write cannot reach a neighbouring tensor */
      .features = {.robustBufferAccess = p->robust_buffer_access,
                   .shaderFloat64 = p->float64,
                   .shaderInt64 = p->int64,
                   .shaderInt16 = p->int16_storage}};
  const char *ext[8];
  uint32_t next = 0;
  if (p->push_descriptor)
    ext[next++] = VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME;
  if (p->coop_f16)
    ext[next++] = p->coop_khr ? VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME : VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME;
  VkPhysicalDeviceCooperativeMatrix2FeaturesNV coop2 = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_FEATURES_NV,
      .cooperativeMatrixWorkgroupScope = VK_TRUE,
      .cooperativeMatrixFlexibleDimensions = VK_TRUE,
      .cooperativeMatrixPerElementOperations = VK_TRUE,
      .cooperativeMatrixTensorAddressing = VK_TRUE};
  VkPhysicalDeviceCooperativeMatrixFeaturesNV coop_nv = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV, .cooperativeMatrix = VK_TRUE};
  VkPhysicalDeviceCooperativeMatrixFeaturesKHR coop_khr = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR, .cooperativeMatrix = VK_TRUE};
  f12.pNext = !p->coop_f16 ? NULL : p->coop_khr ? (void *)&coop_khr : (void *)&coop_nv;
  if (p->coop2) { /* with the KHR extension too, which it builds on */
    ext[next++] = VK_NV_COOPERATIVE_MATRIX_2_EXTENSION_NAME;
    if (!p->coop_khr) {
      ext[next++] = VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME;
      coop_khr.pNext = f12.pNext;
    }
    coop2.pNext = &coop_khr;
    f12.pNext = &coop2;
  }
  /* A developer's aid: the driver's register and instruction counts of each pipeline, on stderr. */
  VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR stats = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR,
      .pNext = f12.pNext,
      .pipelineExecutableInfo = VK_TRUE};
  dev->pipeline_stats = getenv("VKT_PIPELINE_STATS") && vkGetPipelineExecutableStatisticsKHR &&
                        has_device_extension(pd, VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
  if (dev->pipeline_stats) {
    ext[next++] = VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME;
    f12.pNext = &stats;
  }
  VkPhysicalDeviceShaderAtomicFloatFeaturesEXT atomic = {
      /* scatter.comp's float32 adds */
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_FLOAT_FEATURES_EXT,
      .pNext = f12.pNext,
      .shaderBufferFloat32AtomicAdd = VK_TRUE};
  if (p->float32_atomic_add) {
    ext[next++] = VK_EXT_SHADER_ATOMIC_FLOAT_EXTENSION_NAME;
    f12.pNext = &atomic;
  }
  /* Bounds checks on every access cost vkt's float32 products 3-5% on an H100 (the driver tests each load's
   * offset against its buffer's size): they stay on for users' kernels only (pipeline.c). */
  VkPhysicalDevicePipelineRobustnessFeaturesEXT robustness = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_ROBUSTNESS_FEATURES_EXT,
      .pNext = f12.pNext,
      .pipelineRobustness = VK_TRUE};
  if (p->pipeline_robustness) {
    ext[next++] = VK_EXT_PIPELINE_ROBUSTNESS_EXTENSION_NAME;
    f12.pNext = &robustness;
  }
  VkDeviceCreateInfo info = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
                             .pNext = &f,
                             .queueCreateInfoCount = 1,
                             .pQueueCreateInfos = &q,
                             .enabledExtensionCount = next,
                             .ppEnabledExtensionNames = ext};
  VKT_VK_CHECK(vkCreateDevice(pd, &info, NULL, &dev->device));
  vkGetDeviceQueue(dev->device, dev->queue_family, 0, &dev->queue);
  dev->push_descriptors = p->push_descriptor && vkCmdPushDescriptorSetKHR && !getenv("VKT_NO_PUSH_DESCRIPTORS");
  bool splits = p->product_slots || p->wide_split_k; /* products whose tiles are summed in pieces */
  if ((st = vkt_mem_init(dev)) || (st = vkt_stream_init(dev)) || (splits && (st = vkt_mem_sync_init(dev))))
    goto finish;
  vkt_pipeline_cache_load(dev);
finish:
  return st;
}

static void destroy_device(vkt_device *dev) {
  if (dev->device) {
    vkDeviceWaitIdle(dev->device);
    vkt_profile_destroy(dev);
    vkt_pipeline_cache_save(dev);
    vkt_pipelines_destroy(dev);
    vkt_stream_destroy(dev);
    vkt_mem_destroy(dev);
    vkDestroyDevice(dev->device, NULL);
  }
  free(dev);
}

vkt_status vkt_device_get(int index, vkt_device **out) {
  if (!vkt_runtime_available())
    return vkt_fail(VKT_ERR_RUNTIME, "Vulkan is not available: %s", rt.why);
  if (index < 0 || index >= rt.count)
    return vkt_fail(VKT_ERR_RUNTIME, "invalid device vulkan:%d: there are %d Vulkan adapter(s)", index, rt.count);
  if (!rt.devices[index]) {
    vkt_device *dev = calloc(1, sizeof *dev);
    if (!dev)
      return vkt_fail(VKT_ERR_NOMEM, "out of host memory creating a device");
    vkt_status st = create_device(index, dev);
    if (st) {
      destroy_device(dev);
      return st;
    }
    rt.devices[index] = dev;
  }
  *out = rt.devices[index];
  return VKT_OK;
}

static void *(*blocking_enter)(void);
static void (*blocking_leave)(void *);

void vkt_set_blocking_hooks(void *(*enter)(void), void (*leave)(void *)) {
  blocking_enter = enter;
  blocking_leave = leave;
}

void *vkt_blocking_enter(void) { return blocking_enter ? blocking_enter() : NULL; }

void vkt_blocking_leave(void *token) {
  if (blocking_leave)
    blocking_leave(token);
}

int vkt_device_index(const vkt_device *dev) { return dev->index; }
const vkt_adapter_props *vkt_device_props(const vkt_device *dev) { return dev->props; }

void vkt_runtime_shutdown(void) {
  for (int i = 0; i < rt.count; i++)
    if (rt.devices[i]) {
      destroy_device(rt.devices[i]);
      rt.devices[i] = NULL;
    }
  if (rt.messenger)
    vkDestroyDebugUtilsMessengerEXT(rt.instance, rt.messenger, NULL);
  if (rt.instance)
    vkDestroyInstance(rt.instance, NULL);
  rt.messenger = VK_NULL_HANDLE;
  rt.instance = VK_NULL_HANDLE;
  rt.available = false;
  snprintf(rt.why, sizeof rt.why, "vkt has shut down");
}

bool vkt_validation_enabled(void) { return rt.validation; }
int vkt_validation_count(void) {
  pthread_mutex_lock(&messages_lock);
  int n = rt.nmessages;
  pthread_mutex_unlock(&messages_lock);
  return n;
}

/* Only vkt_validation_drop removes messages, so message i stays put until its caller drops it. */
const char *vkt_validation_message(int i) { return i >= 0 && i < vkt_validation_count() ? rt.messages[i] : NULL; }

void vkt_validation_drop(int n) {
  pthread_mutex_lock(&messages_lock);
  n = n < rt.nmessages ? n : rt.nmessages;
  for (int i = 0; i < n; i++)
    free(rt.messages[i]);
  memmove(rt.messages, rt.messages + n, sizeof *rt.messages * (size_t)(rt.nmessages - n));
  rt.nmessages -= n;
  pthread_mutex_unlock(&messages_lock);
}
