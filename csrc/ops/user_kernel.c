/* user_kernel.c: a user's compute kernel (vkt.RawKernel, vkt.ElementwiseKernel) over tensors: the
 * bindings (every one made by bind_tensor), the limits a launch is checked against, and the dispatch,
 * recorded into the current batch with barriers from which tensors are written, as a built-in op's. */
#include "user_kernel.h"

#include <string.h>

#include "fuse.h"
#include "table.h"

#define EW_MAX_RANK 4 /* elementwise.glsl's MAX_RANK */

vkt_status vkt_kernel_compile(int device, const char *source, int nbindings, uint32_t push_size, vkt_pipeline **pipe,
                              char **log) {
  vkt_device *dev = NULL;
  *log = NULL;
  vkt_status st = vkt_device_get(device, &dev);
  if (st)
    return st;
  if (nbindings > VKT_MAX_BOUND)
    return vkt_fail(VKT_ERR_VALUE, "a kernel takes at most %d tensor arguments, got %d", VKT_MAX_BOUND, nbindings);
  uint32_t limit = vkt_device_props(dev)->max_push_constants;
  if (push_size > limit)
    return vkt_fail(VKT_ERR_VALUE, "the kernel's push-constant block is %u bytes, over the adapter's %u",
                    (unsigned)push_size, (unsigned)limit);
  return vkt_pipeline_get_source(dev, source, nbindings, push_size, pipe, log);
}

/* The binding of t, its value computed first (fusion may hold it pending) and its range allocated; from
 * the view's first element when from_view, else the whole storage. */
static vkt_status bind_tensor(const vkt_tensor *t, bool write, bool from_view, vkt_binding *b) {
  vkt_storage *s = t->storage;
  const char *why;
  vkt_status st = vkt_fuse_ready(s, write);
  if (st || (!s->alloc.segment && s->nbytes && (st = vkt_storage_allocate(s))))
    return st;
  if (!vkt_bindable(t, &why))
    return vkt_fail(VKT_ERR_RUNTIME, "cannot bind a kernel argument: %s", why);
  uint64_t offset = from_view ? (uint64_t)t->offset * vkt_dtype_size(t->dtype) : 0;
  uint32_t align = vkt_device_props(s->dev)->min_storage_offset_alignment;
  if (align && offset % align)
    return vkt_fail(VKT_ERR_VALUE,
                    "a tensor argument starts %llu bytes into its storage, not a multiple of the adapter's "
                    "minStorageBufferOffsetAlignment (%u): pass a .clone() of it",
                    (unsigned long long)offset, (unsigned)align);
  if (offset >= s->alloc.size)
    return vkt_fail(VKT_ERR_VALUE, "a tensor argument has no elements to bind");
  *b = (vkt_binding){&s->alloc, offset, s->alloc.size - offset, write};
  return VKT_OK;
}

static vkt_status check_devices(int n, const vkt_tensor *const *t, vkt_device **dev) {
  int device;
  vkt_status st = vkt_same_device(n, t, &device);
  if (st)
    return st;
  if (n == 0 || device == VKT_CPU)
    return vkt_fail(VKT_ERR_RUNTIME, "a kernel needs its tensor arguments on a Vulkan device");
  *dev = t[0]->storage->dev;
  return VKT_OK;
}

static vkt_status dispatch(vkt_device *dev, vkt_pipeline *pipe, int n, const vkt_tensor *const *t, unsigned writes,
                           bool from_view, const void *push, uint32_t push_size, const uint32_t groups[3]) {
  vkt_binding b[VKT_MAX_BOUND] = {0};
  uint64_t batch = 0;
  vkt_status st = VKT_OK;
  for (int k = 0; k < n && !st; k++)
    st = bind_tensor(t[k], (writes >> k) & 1, from_view, &b[k]);
  if (st || (st = vkt_stream_dispatch(dev, pipe, b, n, push, push_size, groups, &batch)))
    return st;
  for (int k = 0; k < n; k++) {
    vkt_storage_touched(t[k]->storage, batch);
    if ((writes >> k) & 1)
      t[k]->storage->version++; /* autograd's check that a saved tensor is unchanged */
  }
  return VKT_OK;
}

vkt_status vkt_kernel_launch(vkt_pipeline *pipe, int n, const vkt_tensor *const *t, unsigned writes, const void *push,
                             uint32_t push_size, const int64_t grid[3]) {
  vkt_device *dev = NULL;
  vkt_status st = check_devices(n, t, &dev);
  if (st)
    return st;
  const vkt_adapter_props *props = vkt_device_props(dev);
  uint32_t groups[3];
  for (int i = 0; i < 3; i++) {
    if (grid[i] < 1 || grid[i] > props->max_workgroup_count[i])
      return vkt_fail(VKT_ERR_VALUE, "grid[%d] is %lld, outside the adapter's 1..%u workgroups", i, (long long)grid[i],
                      (unsigned)props->max_workgroup_count[i]);
    groups[i] = (uint32_t)grid[i];
  }
  if (push_size > props->max_push_constants)
    return vkt_fail(VKT_ERR_VALUE, "the kernel's push-constant block is %u bytes, over the adapter's %u",
                    (unsigned)push_size, (unsigned)props->max_push_constants);
  return dispatch(dev, pipe, n, t, writes, true, push, push_size, groups);
}

uint32_t vkt_kernel_elementwise_push_size(int n) {
  uint32_t words = 2 + (uint32_t)n + EW_MAX_RANK + (uint32_t)n * EW_MAX_RANK;
  return 4 * (words + words % 2 + 2); /* param, a uvec2, is 8-byte aligned */
}

vkt_status vkt_kernel_launch_elementwise(vkt_pipeline *pipe, int n, const vkt_tensor *const *t, int nout) {
  vkt_device *dev = NULL;
  vkt_status st = check_devices(n, t, &dev);
  if (st)
    return st;
  int64_t shape[VKT_MAX_DIMS], strides[VKT_MAX_BOUND * VKT_MAX_DIMS];
  int rank = vkt_merge_in_out_order(n, t, shape, strides);
  if (rank > EW_MAX_RANK)
    return vkt_fail(VKT_ERR_VALUE,
                    "an ElementwiseKernel's operands merge to %d dims, more than %d: pass .contiguous() ones", rank,
                    EW_MAX_RANK);
  /* elementwise.glsl's Push over n operands: n, rank, offset[n], shape[4], stride[n * 4], param[1] */
  uint32_t push[2 + VKT_MAX_BOUND + EW_MAX_RANK + VKT_MAX_BOUND * EW_MAX_RANK + 2] = {0};
  uint32_t *offset = push + 2, *dims = offset + n, *stride = dims + EW_MAX_RANK;
  uint64_t numel = (uint64_t)vkt_tensor_numel(t[0]);
  if (numel == 0)
    return VKT_OK;
  if (numel > UINT32_MAX)
    return vkt_fail(VKT_ERR_VALUE, "an ElementwiseKernel runs over at most 2^32 - 1 elements, got %llu",
                    (unsigned long long)numel);
  push[0] = (uint32_t)numel, push[1] = (uint32_t)rank;
  for (int k = 0; k < n; k++)
    offset[k] = (uint32_t)t[k]->offset;
  for (int d = 0; d < rank; d++) {
    dims[d] = (uint32_t)shape[d];
    for (int k = 0; k < n; k++)
      stride[k * EW_MAX_RANK + d] = (uint32_t)strides[k * VKT_MAX_DIMS + d];
  }
  uint32_t groups[3];
  vkt_groups_for(dev, (numel + 255) / 256, groups); /* elementwise.glsl's LOCAL_SIZE, one element each */
  return dispatch(dev, pipe, n, t, (1u << nout) - 1, false, push, vkt_kernel_elementwise_push_size(n), groups);
}
