/* loss.h (autograd): the recorded entry point of cross_entropy and nll_loss (loss.c). */
#ifndef VKT_AUTOGRAD_LOSS_H
#define VKT_AUTOGRAD_LOSS_H

#include "../ops/loss.h"
#include "autograd.h"

/* The loss of x against target (o->weight is ignored: weight, or NULL, gives it), recorded when x or a
 * probability target requires grad; a weight that requires grad is refused, as PyTorch does. */
vkt_status vkt_ag_cross_entropy(const vkt_var *x, const vkt_var *target, const vkt_var *weight, const vkt_loss_opts *o,
                                vkt_var *out);

#endif
