/* linalg.h: the singular value decomposition (linalg.c, shaders/svd.comp, cpu/svd.c), a batched one-sided
 * (Hestenes) Jacobi SVD, and the layout its shader and CPU kernel share. */
#ifndef VKT_LINALG_H
#define VKT_LINALG_H

#include "table.h"

/* The SVD of each [m, n] matrix of a contiguous in[0] ([batch, m, n], float32 or float64) written to a
 * contiguous out of [batch, P] elements: U ([m, cu] row-major), then S (k), then V ([n, cv] row-major; V,
 * not Vh), with k = min(m, n) and cu, cv = m, n when iparam[0] (full_matrices) else k. S is descending. */
typedef struct {
  int64_t m, n, k, cu, cv;
  int64_t s_at, v_at, size; /* elements: where S and V start in a matrix's block, the block's length */
} vkt_svd_layout;

void vkt_svd_layout_of(int64_t m, int64_t n, bool full, vkt_svd_layout *l);

/* Jacobi sweeps before the kernels stop rotating: far past the 6 to 12 that matrices of these sizes need. */
#define VKT_SVD_MAX_SWEEPS 60

/* A = U diag(S) Vh over A's last two dims, batched over the rest: new *u, *s, *vh (views of one buffer),
 * u [..., m, cu], s [..., k], vh [..., cv, n]; PyTorch's errors for linalg.svd. */
vkt_status vkt_svd(const vkt_tensor *a, bool full, vkt_tensor *u, vkt_tensor *s, vkt_tensor *vh);

#endif
