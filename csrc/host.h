/* host.h: the cpu device's tensor memory, 64-byte aligned, with the last few large blocks kept for reuse. */
#ifndef VKT_HOST_H
#define VKT_HOST_H

#include <stdint.h>

/* nbytes (and 64 more, for SIMD reads past the end) aligned to 64 bytes; NULL when out of memory. */
void *vkt_host_alloc(uint64_t nbytes);
/* Frees p, which vkt_host_alloc(nbytes) returned (NULL is ignored). */
void vkt_host_free(void *p, uint64_t nbytes);

#endif
