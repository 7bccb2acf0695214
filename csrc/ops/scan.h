/* scan.h: the scan family: cumsum, cumprod, cummax and cummin along one dim (scan.c, shaders/scan.comp;
 * the CPU kernel is cpu/scan.c). */
#ifndef VKT_SCAN_H
#define VKT_SCAN_H

#include "table.h"

/* The scan (op id VKT_OP_CUMSUM..VKT_OP_CUMMIN) of x along dim into a new *out, in dtype (-1: PyTorch's
 * default: int64 for an integer cumsum/cumprod, else x's dtype). cummax and cummin also give the int64
 * positions of the running extremes in a new *indices. */
vkt_status vkt_scan(int id, const vkt_tensor *x, int64_t dim, int dtype, vkt_tensor *out, vkt_tensor *indices);

#endif
