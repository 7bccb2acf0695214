/* matmul.h: the matrix-product family's front-ends (matmul.c): PyTorch's matmul rules, mm, bmm, linear,
 * addmm and the fused matmul_add_relu. Each reduces to one VKT_OP_MATMUL row run: one dispatch. */
#ifndef VKT_MATMUL_H
#define VKT_MATMUL_H

#include "ops.h"

/* vkt_op_args.flags of VKT_OP_MATMUL: relu after the bias (the fused op's epilogue); the small tile, whatever
 * the shape (the slices of a split product, which want many workgroups). */
#define VKT_MATMUL_RELU 1u
#define VKT_MATMUL_SMALL_TILE 2u

/* What VKT_OP_MATMUL's launch and CPU kernel see: in[0] = a [batch..., M, K], in[1] = b
 * [batch..., K, N], in[2] = NULL or a bias [batch..., M, N] (all broadcast to out's batch dims,
 * strided); out [batch..., M, N] contiguous; out = alpha * (a @ b) + beta * bias with alpha =
 * param[1], beta = param[0], then relu when flags has VKT_MATMUL_RELU. */

/* a @ b with PyTorch's rules: 1-D operands get a dim prepended (a) or appended (b) that the result
 * drops, batch dims broadcast. Each writes a new tensor *result. */
vkt_status vkt_matmul(const vkt_tensor *a, const vkt_tensor *b, vkt_tensor *result);
vkt_status vkt_mm(const vkt_tensor *a, const vkt_tensor *b, vkt_tensor *result);  /* strict 2-D */
vkt_status vkt_bmm(const vkt_tensor *a, const vkt_tensor *b, vkt_tensor *result); /* strict 3-D, equal batch */
/* addmm's dtype checks (input against mat2, then mat1 against mat2), PyTorch's errors. */
vkt_status vkt_addmm_dtypes(const vkt_tensor *input, const vkt_tensor *m1, const vkt_tensor *m2);
/* x @ w.T + bias; bias may be NULL. */
vkt_status vkt_linear(const vkt_tensor *x, const vkt_tensor *w, const vkt_tensor *bias, vkt_tensor *result);
/* beta * input + alpha * (m1 @ m2), m1 and m2 2-D; input broadcasts to the result and is not read when
 * beta is 0. */
vkt_status vkt_addmm(const vkt_tensor *input, const vkt_tensor *m1, const vkt_tensor *m2, vkt_scalar beta,
                     vkt_scalar alpha, vkt_tensor *result);
/* Products of vectors and batches, PyTorch's checks in front of one product each. */
vkt_status vkt_dot(const vkt_tensor *a, const vkt_tensor *b, vkt_tensor *result);
vkt_status vkt_vdot(const vkt_tensor *a, const vkt_tensor *b, vkt_tensor *result); /* dot: vkt has no complex */
vkt_status vkt_mv(const vkt_tensor *mat, const vkt_tensor *vec, vkt_tensor *result);
vkt_status vkt_addmv(const vkt_tensor *input, const vkt_tensor *mat, const vkt_tensor *vec, vkt_scalar beta,
                     vkt_scalar alpha, vkt_tensor *result);
vkt_status vkt_baddbmm(const vkt_tensor *input, const vkt_tensor *b1, const vkt_tensor *b2, vkt_scalar beta,
                       vkt_scalar alpha, vkt_tensor *result);
vkt_status vkt_addbmm(const vkt_tensor *input, const vkt_tensor *b1, const vkt_tensor *b2, vkt_scalar beta,
                      vkt_scalar alpha, vkt_tensor *result);
/* relu(lhs @ rhs + bias) in one kernel; bias broadcasts to the product's shape. */
vkt_status vkt_matmul_add_relu(const vkt_tensor *lhs, const vkt_tensor *rhs, const vkt_tensor *bias,
                               vkt_tensor *result);
/* The same, composed of the basic ops (matmul, add, relu): what the fused op is tested against. */
vkt_status vkt_matmul_add_relu_reference(const vkt_tensor *lhs, const vkt_tensor *rhs, const vkt_tensor *bias,
                                         vkt_tensor *result);

#endif
