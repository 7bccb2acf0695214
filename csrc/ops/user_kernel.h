/* user_kernel.h: launching a user's compute kernel (vkt.RawKernel, vkt.ElementwiseKernel) over tensors,
 * recorded into the current batch like a built-in op. */
#ifndef VKT_USER_KERNEL_H
#define VKT_USER_KERNEL_H

#include "../tensor.h"

/* The pipeline of a whole GLSL source on Vulkan device `device`, with nbindings storage buffers and
 * push_size bytes of push constants; a compile error sets *log (the caller frees it). */
vkt_status vkt_kernel_compile(int device, const char *source, int nbindings, uint32_t push_size, vkt_pipeline **pipe,
                              char **log);

/* Records pipe over grid workgroups: t[k] bound to binding k from its view's first element (its offset must
 * then be a multiple of minStorageBufferOffsetAlignment), written where bit k of writes is set. */
vkt_status vkt_kernel_launch(vkt_pipeline *pipe, int n, const vkt_tensor *const *t, unsigned writes, const void *push,
                             uint32_t push_size, const int64_t grid[3]);

/* Records pipe, an ElementwiseKernel's shader over shaders/elementwise.glsl, one invocation per element of
 * t[0]: t[0..nout-1] are the outputs, the rest the inputs broadcast to their shape. */
vkt_status vkt_kernel_launch_elementwise(vkt_pipeline *pipe, int n, const vkt_tensor *const *t, int nout);

/* The push-constant bytes of an ElementwiseKernel over n operands (elementwise.glsl's Push, NPARAMS 1). */
uint32_t vkt_kernel_elementwise_push_size(int n);

#endif
