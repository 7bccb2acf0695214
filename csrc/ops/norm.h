/* norm.h: layer_norm and rms_norm over the trailing dims of a tensor (norm.c): the forward, which also
 * gives each row's mean and rstd for the backward, and the backward's two kernels. A row is the n
 * elements of the normalized dims; stats is a [rows, 2] tensor of (mean, rstd) in the compute dtype
 * (float32, or float64 for float64 inputs), mean 0 for rms_norm. */
#ifndef VKT_NORM_H
#define VKT_NORM_H

#include "table.h"

/* PyTorch's checks of input against normalized_shape (nd dims), weight and bias (either may be NULL);
 * name is "layer_norm" or "rms_norm". */
vkt_status vkt_norm_check(const char *name, const vkt_tensor *x, int nd, const int64_t *nshape, const vkt_tensor *w,
                          const vkt_tensor *b);
/* y and stats (new tensors) of layer_norm (rms: rms_norm, b NULL) after vkt_norm_check. */
vkt_status vkt_norm_forward(bool rms, const vkt_tensor *x, int nd, const vkt_tensor *w, const vkt_tensor *b, double eps,
                            vkt_tensor *y, vkt_tensor *stats);
/* grad_input (a new tensor of x's shape and dtype) from the output gradient g. */
vkt_status vkt_norm_backward_input(bool rms, const vkt_tensor *g, const vkt_tensor *x, const vkt_tensor *stats, int nd,
                                   const vkt_tensor *w, vkt_tensor *gx);
/* grad_weight and (gb non-NULL, not rms) grad_bias in dtype, shaped as the last nd dims of x. */
vkt_status vkt_norm_backward_weight(bool rms, const vkt_tensor *g, const vkt_tensor *x, const vkt_tensor *stats, int nd,
                                    vkt_dtype dtype, vkt_tensor *gw, vkt_tensor *gb);

#endif
