/* linalg.h (autograd): the recorded entry points of linalg.svd, svdvals and the singular-value matrix
 * norms (linalg.c); of solve, inv, det, slogdet, cholesky, solve_triangular and lu_factor (solve.c). */
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

/* X with A X = B (left) or X A = B, B a vector or a batch of matrices, batch dims broadcast (linalg.solve);
 * check: a vkt_linalg_check whose error a singular A raises, or -1 (inf and NaN instead, as backward needs). */
vkt_status vkt_ag_linalg_solve(const vkt_var *a, const vkt_var *b, bool left, int check, vkt_var *out);
vkt_status vkt_ag_inv(const vkt_var *a, vkt_var *out);
vkt_status vkt_ag_det(const vkt_var *a, vkt_var *out);
vkt_status vkt_ag_slogdet(const vkt_var *a, vkt_var *sign, vkt_var *logabsdet);
vkt_status vkt_ag_logdet(const vkt_var *a, vkt_var *out);
vkt_status vkt_ag_cholesky(const vkt_var *a, bool upper, vkt_var *out);
vkt_status vkt_ag_solve_triangular(const vkt_var *a, const vkt_var *b, bool upper, bool left, bool unit,
                                   vkt_var *out);
/* (LU, pivots): LU packed as LAPACK's getrf, pivots int32 1-based; a gradient for square A only. */
vkt_status vkt_ag_lu_factor(const vkt_var *a, vkt_var *lu, vkt_var *pivots);

#endif
