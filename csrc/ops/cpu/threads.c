/* cpu/threads.c: a small pool of worker threads for the cpu device's kernels, sized by the cores the process
 * may use (sched_getaffinity). Workers sleep on a condition variable between jobs; one job runs at a time, and
 * an op from a second Python thread meanwhile runs on its own thread instead of waiting. A job's ranges are
 * claimed in turn by whichever thread is free, the caller first: where a worker wakes late (its core busy with
 * another process), the caller runs that range too rather than wait for a worker that has not started. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "threads.h"

#define MAX_THREADS 256

typedef struct {
  void (*fn)(void *ctx, int64_t begin, int64_t end);
  void *ctx;
  int64_t n;
  int parts; /* ranges of this job */
} job;

static struct {
  pthread_mutex_t busy; /* held by the thread whose job the pool runs */
  pthread_mutex_t lock; /* guards the fields below */
  pthread_cond_t wake, done;
  job job;
  uint64_t generation;        /* counts jobs, so a worker sees each one once */
  int started;                /* workers running */
  int next;                   /* the current job's first range not yet claimed */
  int pending;                /* ranges of the current job not yet finished */
  uint64_t born[MAX_THREADS]; /* the generation before each worker's first job */
} pool = {.busy = PTHREAD_MUTEX_INITIALIZER,
          .lock = PTHREAD_MUTEX_INITIALIZER,
          .wake = PTHREAD_COND_INITIALIZER,
          .done = PTHREAD_COND_INITIALIZER};

static atomic_int wanted; /* vkt_set_num_threads; 0 until first asked */
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void run_part(const job *j, int part) {
  int64_t begin = j->n * part / j->parts, end = j->n * (part + 1) / j->parts;
  j->fn(j->ctx, begin, end);
}

/* Runs the current job's unclaimed ranges, one at a time; called and returns with pool.lock held. The job stays
 * while a range of it is pending, so that a claim made under the lock is always the current job's. */
static void run_claimed(void) {
  while (pool.next < pool.job.parts) {
    job j = pool.job;
    int part = pool.next++;
    pthread_mutex_unlock(&pool.lock);
    run_part(&j, part);
    pthread_mutex_lock(&pool.lock);
    if (--pool.pending == 0)
      pthread_cond_signal(&pool.done);
  }
}

static void *worker(void *arg) {
  int index = (int)(intptr_t)arg;
  pthread_mutex_lock(&pool.lock);
  uint64_t seen = pool.born[index];
  for (;;) {
    while (pool.generation == seen)
      pthread_cond_wait(&pool.wake, &pool.lock);
    seen = pool.generation;
    run_claimed();
  }
  return NULL;
}

/* A forked child has none of the parent's workers, and its copy of the locks may be held by a thread
 * that does not exist there: it starts over. */
static void child_after_fork(void) {
  pthread_mutex_init(&pool.busy, NULL);
  pthread_mutex_init(&pool.lock, NULL);
  pthread_cond_init(&pool.wake, NULL);
  pthread_cond_init(&pool.done, NULL);
  pool.started = 0;
  pool.next = 0;
  pool.pending = 0;
}

static void register_atfork(void) { pthread_atfork(NULL, NULL, child_after_fork); }

/* Starts workers up to n - 1; returns how many threads (workers and the caller) there are. */
static int ensure_workers(int n) {
  pthread_once(&atfork_once, register_atfork);
  while (pool.started < n - 1) {
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pool.born[pool.started] = pool.generation;
    int err = pthread_create(&t, &attr, worker, (void *)(intptr_t)pool.started);
    pthread_attr_destroy(&attr);
    if (err)
      break;
    pool.started++;
  }
  return pool.started + 1;
}

int vkt_get_num_threads(void) {
  int n = atomic_load(&wanted);
  if (n > 0)
    return n;
  cpu_set_t set;
  n = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
  n = n < 1 ? 1 : n > MAX_THREADS ? MAX_THREADS : n;
  atomic_store(&wanted, n);
  return n;
}

void vkt_set_num_threads(int n) { atomic_store(&wanted, n < 1 ? 1 : n > MAX_THREADS ? MAX_THREADS : n); }

void vkt_parallel_for(int64_t n, int64_t grain, void (*fn)(void *ctx, int64_t begin, int64_t end), void *ctx) {
  int64_t most = grain > 0 ? n / grain : n;
  int parts = vkt_get_num_threads();
  if (most < parts)
    parts = most < 1 ? 1 : (int)most;
  if (parts == 1 || pthread_mutex_trylock(&pool.busy) != 0) {
    if (n > 0)
      fn(ctx, 0, n);
    return;
  }
  pthread_mutex_lock(&pool.lock);
  parts = ensure_workers(parts) < parts ? pool.started + 1 : parts;
  pool.job = (job){fn, ctx, n, parts};
  pool.next = 0;
  pool.pending = parts;
  pool.generation++;
  pthread_cond_broadcast(&pool.wake);
  run_claimed();
  while (pool.pending > 0)
    pthread_cond_wait(&pool.done, &pool.lock);
  pthread_mutex_unlock(&pool.lock);
  pthread_mutex_unlock(&pool.busy);
}
