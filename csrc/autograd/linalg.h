/* linalg.h (autograd): the recorded entry points of linalg.svd, svdvals and the singular-value matrix
 * norms (linalg.c). */
#ifndef VKT_AG_LINALG_H
#define VKT_AG_LINALG_H

#include "autograd.h"

/* A = U diag(S) Vh over the last two dims (linalg.svd); new vars, views of one buffer. */
vkt_status vkt_ag_svd(const vkt_var *a, bool full, vkt_var *u, vkt_var *s, vkt_var *vh);
/* The singular values alone (linalg.svdvals), descending. */
vkt_status vkt_ag_svdvals(const vkt_var *a, vkt_var *out);

/* The matrix norms that need singular values: ord 'nuc', 2, -2. */
typedef enum { VKT_SV_NUC, VKT_SV_LARGEST, VKT_SV_SMALLEST } vkt_sv_norm;
/* linalg.matrix_norm over dims (d0, d1) with one of them, in dtype (-1: a's). */
vkt_status vkt_ag_matrix_norm_sv(const vkt_var *a, vkt_sv_norm ord, int64_t d0, int64_t d1, bool keepdim, int dtype,
                                 vkt_var *out);

#endif
