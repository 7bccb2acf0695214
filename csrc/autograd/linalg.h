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
/* info, when given: LU's info, int32, the batch shape (new). check may hold VKT_LINALG_EX (solve_ex's words). */
vkt_status vkt_ag_linalg_solve(const vkt_var *a, const vkt_var *b, bool left, int check, vkt_tensor *info,
                               vkt_var *out);
vkt_status vkt_ag_inv(const vkt_var *a, vkt_var *out);
/* inv_ex: check -1 (none) or a vkt_linalg_check; info as solve's. */
vkt_status vkt_ag_inv_ex(const vkt_var *a, int check, vkt_tensor *info, vkt_var *out);
vkt_status vkt_ag_det(const vkt_var *a, vkt_var *out);
vkt_status vkt_ag_slogdet(const vkt_var *a, vkt_var *sign, vkt_var *logabsdet);
vkt_status vkt_ag_logdet(const vkt_var *a, vkt_var *out);
/* check: -1 (no error; cholesky_ex) or a vkt_linalg_check; info_out, when given: int32 [...], new. */
vkt_status vkt_ag_cholesky(const vkt_var *a, bool upper, int check, vkt_tensor *info_out, vkt_var *out);
vkt_status vkt_ag_solve_triangular(const vkt_var *a, const vkt_var *b, bool upper, bool left, bool unit,
                                   vkt_var *out);
/* (LU, pivots): LU packed as LAPACK's getrf, pivots int32 1-based; check: -1 (none) or a vkt_linalg_check;
 * info, when given: int32 [...], new. */
vkt_status vkt_ag_lu_factor(const vkt_var *a, int check, vkt_var *lu, vkt_var *pivots, vkt_tensor *info);
/* A = P L U (linalg.lu): P [..., m, m] (no gradient), L [..., m, k] unit lower, U [..., k, n]. */
vkt_status vkt_ag_lu(const vkt_var *a, vkt_var *p, vkt_var *l, vkt_var *u);

/* linalg.qr: mode 0 reduced, 1 complete, 2 r (Q an empty [0]); linalg.eigh (name: eigh or eigvalsh's words). */
vkt_status vkt_ag_qr(const vkt_var *a, int mode, vkt_var *q, vkt_var *r);
vkt_status vkt_ag_eigh(const vkt_var *a, bool upper, const char *name, vkt_var *w, vkt_var *v);

#endif
