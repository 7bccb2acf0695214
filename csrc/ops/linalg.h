/* linalg.h: the singular value decomposition (linalg.c, shaders/svd.comp, cpu/svd.c), a batched one-sided
 * (Hestenes) Jacobi SVD, and the layout its shader and CPU kernel share; the LU and Cholesky factorisations and
 * triangular solves (solve.c, shaders/lu.comp, cholesky.comp, trsm.comp, cpu/solve.c); the Householder QR and
 * the cyclic Jacobi symmetric eigendecomposition (decompose.c, shaders/qr.comp, eigh.comp, cpu/decompose.c). */
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

/* The ops below run one invocation a matrix (a column of B for trsm), which suits many small matrices; each
 * takes contiguous [batch, ...] operands.
 * LU: in[0] [batch, m, n]; out [batch, m * n + 3]: LU (row-major; L's unit diagonal implied), then det, its
 * sign and log|det| (meaningful when m == n; sign 0 and -inf when singular); out2 int32 [batch, k + 1]: the
 * 1-based pivots (row j was swapped with row pivots[j] - 1, in order, as LAPACK's getrf), then info: the
 * first zero pivot, 1-based, or 0.
 * CHOLESKY: in[0] [batch, n, n] (its lower triangle is read); out [batch, n, n] L; out2 int32 [batch] info:
 * the order of the first leading minor that is not positive-definite, or 0.
 * TRSM: out [batch, n, k] := A^-1 in[1] ([batch, n, k]), the matrices of A in in[0] iparam[1] elements apart;
 * iparam[0] holds VKT_TRSM_* bits; with VKT_TRSM_LU, in[0] is LU's out and in[2] its out2; with
 * VKT_TRSM_PERMUTE, out := P in[1] alone, P of the pivots in[2] ([batch, n] int32), in[0] unread. */
#define VKT_TRSM_UPPER 1
#define VKT_TRSM_UNIT 2
#define VKT_TRSM_LU 4
#define VKT_TRSM_PERMUTE 8
#define VKT_LU_EXTRA 3 /* det, sign, log|det| after each LU */

/* The blocks of LU above for a [..., m, n] (batch flattened); PyTorch's type checks under name. */
vkt_status vkt_lu_blocks(const vkt_tensor *a, const char *name, vkt_tensor *block, vkt_tensor *piv);
/* L of A's lower triangle [..., n, n], and info [batch] int32. */
vkt_status vkt_cholesky_blocks(const vkt_tensor *a, vkt_tensor *l, vkt_tensor *info);
/* X = A^-1 B: a as TRSM's in[0] (a_stride elements a matrix), b [batch, n, k] any layout, piv LU's out2 with
 * VKT_TRSM_LU; *x new, [batch, n, k]. */
vkt_status vkt_trsm(const vkt_tensor *a, int64_t a_stride, const vkt_tensor *b, const vkt_tensor *piv, unsigned mode,
                    vkt_tensor *x);

/* P [..., m, m] (dtype) with A = P L U from LU's pivots [..., k] (int32, 1-based LAPACK swaps, k <= m): the
 * identity's rows swapped, the swaps undone last first; new. */
vkt_status vkt_lu_permutation(const vkt_tensor *pivots, int64_t m, vkt_dtype dtype, vkt_tensor *out);

/* PyTorch's errors for a nonzero info of a batch: which op's words, and whether the input was batched. */
typedef enum { VKT_LINALG_INV, VKT_LINALG_SOLVE, VKT_LINALG_LU_FACTOR, VKT_LINALG_CHOLESKY } vkt_linalg_check;
#define VKT_LINALG_EX 16 /* or'ed into a vkt_linalg_check: the words of the _ex function (check_errors=True) */
/* Reads info (int32 [batch], any strides; this waits for the device) and fails for its first nonzero entry;
 * kind: a vkt_linalg_check, maybe with VKT_LINALG_EX. */
vkt_status vkt_linalg_info_check(const vkt_tensor *info, int kind, bool batched);
/* PyTorch's checks of a square float input: "<name>: A must be batches of square matrices, ..." */
vkt_status vkt_linalg_square_check(const vkt_tensor *a, const char *name);

/* QR: in[0] [batch, m, n]; out [batch, m * n + k + m * iparam[0]]: W, A's Householder QR as LAPACK's geqrf
 * leaves it (R on and above the diagonal, the reflectors' vectors below; [m, n] row-major), then tau (k),
 * then Q ([m, cq] row-major, cq = iparam[0]: m, k, or 0 for none), the reflectors applied to the identity's
 * first cq columns (orgqr). R's diagonal has LAPACK's signs (dlarfg's beta = -sign(alpha) |x|).
 * EIGH: in[0] [batch, n, n], symmetric from its lower (iparam[0] == 0) or upper triangle; out [batch, 2 n n +
 * n]: the rotated matrix (scratch), the eigenvalues (n, ascending), V ([n, n] row-major, eigenvectors in its
 * columns, each with its entry of largest magnitude (the first of equal ones) positive). */
static inline int64_t vkt_qr_size(int64_t m, int64_t n, int64_t cq) { return m * n + (m < n ? m : n) + m * cq; }
static inline int64_t vkt_eigh_size(int64_t n) { return 2 * n * n + n; }

/* Cyclic Jacobi sweeps before eigh's kernels stop rotating: small matrices converge in well under ten. */
#define VKT_EIGH_MAX_SWEEPS 30

/* The QR of A's last two dims, batched over the rest, mode 0 reduced, 1 complete, 2 r: *q [..., m, cq] (cq: k,
 * m; an empty [0] for r) and *r [..., rr, n] (rr: m when complete, else k), new; PyTorch's checks for linalg.qr. */
vkt_status vkt_qr(const vkt_tensor *a, int mode, vkt_tensor *q, vkt_tensor *r);
/* The eigenvalues *w [..., n] and eigenvectors *v [..., n, n] of A's symmetric matrices (upper: read from the
 * upper triangle), views of one new buffer; PyTorch's checks for linalg.eigh (name: eigh or eigvalsh). */
vkt_status vkt_eigh(const vkt_tensor *a, bool upper, const char *name, vkt_tensor *w, vkt_tensor *v);

#endif
