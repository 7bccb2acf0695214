/* formula.h: what backward functions are written with. Each helper runs one differentiable entry point
 * (so create_graph records the backward too) into a temporary the vkt_bw owns until the node is done, and
 * returns NULL once any step failed (b->st holds the first error): a formula reads as straight-line math,
 * as a derivatives.yaml line does, and checks nothing itself. */
#ifndef VKT_FORMULA_H
#define VKT_FORMULA_H

#include "autograd.h"

/* Releases the temporaries (the engine calls it after each backward). */
void vkt_bw_end(vkt_bw *b);

/* Output k's gradient; saved value k (PyTorch's error if backward already freed it or it was modified in
 * place since); whether input i needs a gradient; input i's gradient := g. */
const vkt_var *G(vkt_bw *b, int k);
const vkt_var *S(vkt_bw *b, int k);
bool NEED(vkt_bw *b, int i);
void SET(vkt_bw *b, int i, const vkt_var *g);

/* A number operand for the helpers below. */
static inline vkt_scalar num(double v) { return (vkt_scalar){true, v, 0}; }

const vkt_var *un(vkt_bw *b, int id, const vkt_var *x);                        /* op(x) */
const vkt_var *un2(vkt_bw *b, int id, const vkt_var *x, double p0, double p1); /* op(x; p0, p1) */
const vkt_var *bin(vkt_bw *b, int id, const vkt_var *x, const vkt_var *y);     /* x op y */
const vkt_var *bins(vkt_bw *b, int id, const vkt_var *x, double s);            /* x op s */
const vkt_var *sbin(vkt_bw *b, int id, double s, const vkt_var *x);            /* s op x */
#define mul(b, x, y) bin(b, VKT_OP_MUL, x, y)
#define muls(b, x, s) bins(b, VKT_OP_MUL, x, s)
#define add(b, x, y) bin(b, VKT_OP_ADD, x, y)
#define sub(b, x, y) bin(b, VKT_OP_SUB, x, y)
#define dvd(b, x, y) bin(b, VKT_OP_DIV, x, y)
/* where(cond, x, 0) and where(cond, 0, x). */
const vkt_var *keep_where(vkt_bw *b, const vkt_var *cond, const vkt_var *x);
const vkt_var *zero_where(vkt_bw *b, const vkt_var *cond, const vkt_var *x);
const vkt_var *sum_dims(vkt_bw *b, const vkt_var *x, uint32_t dims, bool keepdim);
/* Zeros of input i's shape and dtype (the gradient of a value that does not depend on it). */
const vkt_var *zeros_of(vkt_bw *b, int i);
/* x (reduced over dims without keepdim) viewed with those dims as size 1, then expanded to shape. */
const vkt_var *unreduce(vkt_bw *b, const vkt_var *x, uint32_t dims, bool keepdim, int ndim, const int64_t *shape);
const vkt_var *reshape(vkt_bw *b, const vkt_var *x, int ndim, const int64_t *shape);
/* x [..., k] viewed as [..., 1, k] (row: a row vector to scale columns) or [..., k, 1]. */
const vkt_var *lift(vkt_bw *b, const vkt_var *x, bool row);
const vkt_var *expand(vkt_bw *b, const vkt_var *x, int ndim, const int64_t *shape);
const vkt_var *transpose(vkt_bw *b, const vkt_var *x, int64_t d0, int64_t d1);
/* x's entries [start, start + len) along dim (a differentiable slice). */
const vkt_var *narrow(vkt_bw *b, const vkt_var *x, int64_t dim, int64_t start, int64_t len);
const vkt_var *matmul(vkt_bw *b, const vkt_var *x, const vkt_var *y);
const vkt_var *sum_to(vkt_bw *b, const vkt_var *x, int ndim, const int64_t *shape);
/* An argument's shape as the node recorded it. */
static inline const vkt_shape_info *IN(vkt_bw *b, int i) { return &b->n->in_info[i]; }
/* Keeps a var made by an entry point (its status st) as a temporary. */
const vkt_var *keep(vkt_bw *b, vkt_status st, vkt_var *v);

#endif
