/* radix.h: the device's stable radix sort of one row of 32-bit values (radix.c). */
#ifndef VKT_RADIX_H
#define VKT_RADIX_H

#include "ops.h"

/* Whether vkt_radix_sort takes x: a float32 or int32 row on a device with shaderInt64, short enough for
 * its scans; *why says why not. */
bool vkt_radix_fits(const vkt_tensor *x, const char **why);
/* values[i] = x sorted, indices[i] = the position in x it came from (int64), stable: equal values keep
 * their order; NaN sorts above +inf and -0.0 as +0.0, as in PyTorch. x is a dense row (offset allowed);
 * values and indices are dense rows of its length on its device (offsets allowed). */
vkt_status vkt_radix_sort(const vkt_tensor *x, bool descending, const vkt_tensor *values, const vkt_tensor *indices);

#endif
