/* dlpack.h: DLPack's C ABI (dlpack.h, version 0.8 and later: the unversioned DLManagedTensor), the
 * part vkt exchanges with NumPy and other producers and consumers. */
#ifndef VKT_DLPACK_H
#define VKT_DLPACK_H

#include <stdint.h>

typedef struct {
  int32_t device_type, device_id;
} DLDevice;
typedef struct {
  uint8_t code, bits;
  uint16_t lanes;
} DLDataType;
typedef struct {
  void *data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t *shape, *strides; /* elements */
  uint64_t byte_offset;
} DLTensor;
typedef struct DLManagedTensor {
  DLTensor dl_tensor;
  void *manager_ctx;
  void (*deleter)(struct DLManagedTensor *self);
} DLManagedTensor;

enum { DL_INT = 0, DL_UINT = 1, DL_FLOAT = 2, DL_BOOL = 6, DL_CPU = 1, DL_VULKAN = 7 };

#endif
