/* loss.h: the single-kernel classification losses, cross_entropy and nll_loss, forward and backward, with
 * PyTorch's shapes, dtypes and errors. A row is the C class values of one sample at one spatial position
 * (the class dim is dim 1): each kernel takes a row at a time, and the shader path and the CPU kernel
 * (cpu/loss.c) share the per-row layout below. */
#ifndef VKT_LOSS_H
#define VKT_LOSS_H

#include "table.h"

typedef enum { VKT_REDUCTION_NONE, VKT_REDUCTION_MEAN, VKT_REDUCTION_SUM } vkt_reduction;

typedef struct {
  const vkt_tensor *weight; /* (C) class weights, or NULL */
  vkt_reduction reduction;
  int64_t ignore_index;
  double label_smoothing; /* cross_entropy only */
  bool nll;               /* the input holds log-probabilities: nll_loss */
} vkt_loss_opts;

/* What the forward leaves for the backward. rows is (VKT_LOSS_ROWS, R rounded up to VKT_LOSS_PAD) in the
 * compute dtype (float32 for float16 inputs): per row its loss, its target's weight (0 where ignored; 1 for
 * probability targets), the log-sum-exp of its logits, and the mass of its smoothed, weighted target (the sum
 * over classes of what the backward subtracts from softmax * mass). The padding (zeros in the first two) lets
 * the sums over rows split into VKT_LOSS_PAD equal parts. total is the 0-d sum of the weights, mean's divisor. */
#define VKT_LOSS_ROWS 4
#define VKT_LOSS_PAD 256
enum { VKT_LOSS_LOSS, VKT_LOSS_WEIGHT, VKT_LOSS_LSE, VKT_LOSS_MASS };
typedef struct {
  vkt_tensor rows, total;
  int64_t r; /* rows of the input: the first r of each row of rows */
} vkt_loss_saved;

/* vkt_op_args of the four rows: in = {input, target, weight (forward) or the backward's pack}; out2 the
 * forward's error word on a device; param[0] label_smoothing; iparam[0] ignore_index; flags: */
#define VKT_LOSS_PROB 1u /* the target holds class probabilities, shaped like the input */

/* The loss (a new tensor in *loss) of x against target, and what its backward needs (saved may be NULL). */
vkt_status vkt_cross_entropy(const vkt_tensor *x, const vkt_tensor *target, const vkt_loss_opts *o, vkt_tensor *loss,
                             vkt_loss_saved *saved);
/* The gradient of that loss for x (a new tensor in *out), given the loss's gradient grad. */
vkt_status vkt_cross_entropy_backward(const vkt_tensor *grad, const vkt_tensor *x, const vkt_tensor *target,
                                      const vkt_loss_opts *o, const vkt_loss_saved *saved, vkt_tensor *out);
void vkt_loss_saved_release(vkt_loss_saved *s);

/* The geometry of x as rows: N samples of C classes at S spatial positions, R = N * S rows. */
typedef struct {
  int64_t n, c, s, r;
} vkt_loss_shape;
vkt_loss_shape vkt_loss_shape_of(const vkt_tensor *x);

#endif
