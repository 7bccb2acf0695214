/* write.h (autograd): the entry points of the writes along a dim or through a mask (write.c): scatter,
 * scatter_add, scatter_reduce (sum, mean, prod, amax, amin), index_copy, index_add, index_fill and
 * masked_scatter, each computed out of place (a copy of x written to) and recorded with its backward. */
#ifndef VKT_AG_WRITE_H
#define VKT_AG_WRITE_H

#include "../ops/shape.h"
#include "autograd.h"

typedef enum {
  VKT_WRITE_SCATTER,        /* x.scatter(dim, index, src), or the number s where src is NULL */
  VKT_WRITE_SCATTER_ADD,    /* x.scatter_add(dim, index, src) */
  /* x.scatter_reduce(dim, index, src, how, include_self): VKT_WRITE_REDUCE + how (vkt_scatter_reduce's order) */
  VKT_WRITE_REDUCE_SUM,
  VKT_WRITE_REDUCE_PROD,
  VKT_WRITE_REDUCE_MEAN,
  VKT_WRITE_REDUCE_AMAX,
  VKT_WRITE_REDUCE_AMIN,
  VKT_WRITE_INDEX_COPY,     /* x.index_copy(dim, index, src) */
  VKT_WRITE_INDEX_ADD,      /* x.index_add(dim, index, src, alpha=s) */
  VKT_WRITE_INDEX_FILL,     /* x.index_fill(dim, index, src), a 0-d tensor, or the number s where src is NULL */
  VKT_WRITE_MASKED_SCATTER, /* x.masked_scatter(index, src): index is the mask */
} vkt_write_kind;
#define VKT_WRITE_REDUCE(how) ((vkt_write_kind)(VKT_WRITE_REDUCE_SUM + (int)(how)))
_Static_assert(VKT_WRITE_REDUCE_AMIN - VKT_WRITE_REDUCE_SUM == VKT_SCATTER_AMIN - VKT_SCATTER_SUM &&
                   VKT_WRITE_REDUCE_MEAN - VKT_WRITE_REDUCE_SUM == VKT_SCATTER_MEAN - VKT_SCATTER_SUM &&
                   VKT_WRITE_REDUCE_AMAX - VKT_WRITE_REDUCE_SUM == VKT_SCATTER_AMAX - VKT_SCATTER_SUM,
               "the scatter_reduce write kinds follow vkt_scatter_reduce");

vkt_status vkt_ag_write(vkt_write_kind kind, const vkt_var *x, int64_t dim, const vkt_tensor *index, const vkt_var *src,
                        vkt_scalar s, bool include_self, vkt_var *out);

/* take (x flattened, read at index) and masked_select (x and mask broadcast), recorded as indexing. */
vkt_status vkt_ag_take(const vkt_var *x, const vkt_tensor *index, vkt_var *out);
vkt_status vkt_ag_masked_select(const vkt_var *x, const vkt_tensor *mask, vkt_var *out);

#endif
