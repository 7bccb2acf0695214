/* norm.h (autograd): the entry points of layer_norm, rms_norm and embedding (norm.c), each recorded with
 * its backward. Outputs are new vars owned by the caller. */
#ifndef VKT_AG_NORM_H
#define VKT_AG_NORM_H

#include "autograd.h"

/* torch.layer_norm: x normalized over its last nd dims (nshape), scaled by w and shifted by b (either may
 * be NULL). */
vkt_status vkt_ag_layer_norm(const vkt_var *x, int nd, const int64_t *nshape, const vkt_var *w, const vkt_var *b,
                             double eps, vkt_var *out);
/* torch.rms_norm; has_eps false: eps is the machine epsilon of the compute dtype (float32 for float16). */
vkt_status vkt_ag_rms_norm(const vkt_var *x, int nd, const int64_t *nshape, const vkt_var *w, bool has_eps, double eps,
                           vkt_var *out);
/* torch.embedding: rows of w (2-D) at the int32/int64 index idx, shaped idx.shape + [w.shape[1]]. */
vkt_status vkt_ag_embedding(const vkt_var *w, const vkt_tensor *idx, int64_t padding_idx, bool scale_grad_by_freq,
                            bool sparse, vkt_var *out);

#endif
