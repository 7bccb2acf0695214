/* host.c: the cpu device's tensor memory. glibc hands a freed block at the top of its heap back to the kernel,
 * so the next tensor of that size faults every page in again: in `x * 2 + 1` at 2^22 float32 the temporary of
 * `x * 2` did so on each call (perf stat over 140 calls: 150,784 page faults, 68,807 with this cache, NumPy's
 * `a * 2 + 1` 83,277, which writes the `+ 1` into its temporary). The last few freed large blocks are kept here
 * and handed out again to a tensor of the same size. */
#include "host.h"

#include <pthread.h>
#include <stdlib.h>

#define CACHE_MIN (1u << 20)            /* bytes: smaller blocks stay warm on malloc's own free lists */
#define CACHE_MAX ((uint64_t)256 << 20) /* bytes kept at most, in all slots together */
#define SLOTS 4

static struct {
  void *p;
  uint64_t bytes; /* as allocated: rounded() */
} slots[SLOTS];
static uint64_t cached;    /* bytes in slots */
static unsigned next_slot; /* the one to replace when all are taken, round robin */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t rounded(uint64_t nbytes) { return (nbytes + 63) / 64 * 64 + 64; }

/* A kept block of exactly bytes, taken out of the cache (NULL if none). */
static void *take(uint64_t bytes) {
  void *p = NULL;
  pthread_mutex_lock(&lock);
  for (int k = 0; k < SLOTS && !p; k++)
    if (slots[k].p && slots[k].bytes == bytes) {
      p = slots[k].p;
      slots[k].p = NULL;
      cached -= bytes;
    }
  pthread_mutex_unlock(&lock);
  return p;
}

void *vkt_host_alloc(uint64_t nbytes) {
  uint64_t bytes = rounded(nbytes);
  void *p = bytes >= CACHE_MIN ? take(bytes) : NULL;
  return p ? p : aligned_alloc(64, bytes);
}

void vkt_host_free(void *p, uint64_t nbytes) {
  uint64_t bytes = rounded(nbytes);
  void *evicted = p;
  if (p && bytes >= CACHE_MIN && bytes <= CACHE_MAX) {
    pthread_mutex_lock(&lock);
    int k = 0;
    while (k < SLOTS && slots[k].p)
      k++;
    if (k == SLOTS)
      k = (int)(next_slot++ % SLOTS);
    evicted = slots[k].p;
    cached -= evicted ? slots[k].bytes : 0;
    slots[k].p = p, slots[k].bytes = bytes;
    cached += bytes;
    for (int j = 0; cached > CACHE_MAX && j < SLOTS; j++) /* over the budget: drop the others */
      if (j != k && slots[j].p) {
        free(slots[j].p);
        cached -= slots[j].bytes;
        slots[j].p = NULL;
      }
    pthread_mutex_unlock(&lock);
  }
  free(evicted);
}
