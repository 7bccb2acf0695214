/* write.h (autograd): the entry points of the writes along a dim or through a mask (write.c): scatter,
 * scatter_add, scatter_reduce (sum, mean, prod, amax, amin), index_copy, index_add, index_fill and
 * masked_scatter, each computed out of place (a copy of x written to) and recorded with its backward. */
#ifndef VKT_AG_WRITE_H
#define VKT_AG_WRITE_H

#include "autograd.h"

typedef enum {
  VKT_WRITE_SCATTER,        /* x.scatter(dim, index, src), or the number s where src is NULL */
  VKT_WRITE_SCATTER_ADD,    /* x.scatter_add(dim, index, src) */
  VKT_WRITE_REDUCE_SUM,     /* x.scatter_reduce(dim, index, src, "sum", include_self) */
  VKT_WRITE_REDUCE_MEAN,    /* x.scatter_reduce(dim, index, src, "mean", include_self) */
  VKT_WRITE_REDUCE_PROD,    /* x.scatter_reduce(dim, index, src, "prod", include_self) */
  VKT_WRITE_REDUCE_AMAX,    /* x.scatter_reduce(dim, index, src, "amax", include_self) */
  VKT_WRITE_REDUCE_AMIN,    /* x.scatter_reduce(dim, index, src, "amin", include_self) */
  VKT_WRITE_INDEX_COPY,     /* x.index_copy(dim, index, src) */
  VKT_WRITE_INDEX_ADD,      /* x.index_add(dim, index, src, alpha=s) */
  VKT_WRITE_INDEX_FILL,     /* x.index_fill(dim, index, src), a 0-d tensor, or the number s where src is NULL */
  VKT_WRITE_MASKED_SCATTER, /* x.masked_scatter(index, src): index is the mask */
} vkt_write_kind;

vkt_status vkt_ag_write(vkt_write_kind kind, const vkt_var *x, int64_t dim, const vkt_tensor *index, const vkt_var *src,
                        vkt_scalar s, bool include_self, vkt_var *out);

/* take (x flattened, read at index) and masked_select (x and mask broadcast), recorded as indexing. */
vkt_status vkt_ag_take(const vkt_var *x, const vkt_tensor *index, vkt_var *out);
vkt_status vkt_ag_masked_select(const vkt_var *x, const vkt_tensor *mask, vkt_var *out);

#endif
