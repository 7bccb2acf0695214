/* threads.h: the cpu device's thread pool. A kernel splits [0, n) into one contiguous range per thread;
 * the calling thread runs the first range itself, so a pool of one thread is a plain call. */
#ifndef VKT_CPU_THREADS_H
#define VKT_CPU_THREADS_H

#include <stdint.h>

/* Runs fn(ctx, begin, end) over [0, n) in ranges of at least `grain` items, on as many threads as that
 * allows (at most vkt_get_num_threads()). Falls back to one range on the caller where the pool is busy
 * (another Python thread's op) or cannot start a thread. */
void vkt_parallel_for(int64_t n, int64_t grain, void (*fn)(void *ctx, int64_t begin, int64_t end), void *ctx);

/* The number of threads kernels may use: by default the cores this process may run on. */
int vkt_get_num_threads(void);
void vkt_set_num_threads(int n); /* n >= 1 */

/* Items (elements) below which a memory-bound loop stays on one thread: waking a worker costs a few
 * microseconds, the time of about this many elements. */
#define VKT_GRAIN 32768

/* The kernels' vectorised loops in three builds, AVX-512, AVX2 and the baseline (SSE2), picked at load time by
 * the CPU: the float32 loops compute in double, and each step up doubles the lanes per instruction. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define VKT_SIMD __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define VKT_SIMD
#endif

/* The float16 loops that compute in float32, in builds with F16C (x86-64-v3 and v4: a conversion an instruction,
 * where the baseline calls libgcc's) and the baseline. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define VKT_SIMD_F16C __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define VKT_SIMD_F16C
#endif

#endif
