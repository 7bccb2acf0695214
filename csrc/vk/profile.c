/* profile.c: with $VKT_PROFILE, the GPU time of each command, from timestamps (a developer's aid, like
 * $VKT_PIPELINE_STATS). Before each command of a batch (vkt_stream_touch) and at its end (flush) the queue
 * writes a timestamp once everything before it is done; a command's time is the step from its own to the
 * next, so commands that overlap share it out, and the total is the GPU's busy time. A slot's stamps are read
 * when the slot is recorded again (its batch has finished) and at teardown, which prints the commands by
 * total time to stderr, each named by its shader and the hash of its #defines. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vk_internal.h"

#define STAMPS (VKT_MAX_DISPATCHES + 1) /* per slot: one before each command and one at the end */
#define MAX_ROWS 512
#define SHOWN 40

typedef struct vkt_profile_row {
  const vkt_pipeline *pipe; /* NULL: copies and fills */
  char label[96], defines[320];
  uint64_t count;
  double ns;
} row;

struct vkt_profile {
  VkQueryPool pool;
  double period_ns;                                   /* of a timestamp tick */
  const vkt_pipeline *names[VKT_BATCH_SLOTS][STAMPS]; /* the command after each stamp */
  uint32_t stamps[VKT_BATCH_SLOTS];
  row rows[MAX_ROWS];
  int nrows;
  uint64_t batches;
};

void vkt_profile_init(vkt_device *dev) {
  if (!getenv("VKT_PROFILE"))
    return;
  uint32_t n = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(dev->physical, &n, NULL);
  VkQueueFamilyProperties *families = calloc(n, sizeof *families);
  if (!families)
    return;
  vkGetPhysicalDeviceQueueFamilyProperties(dev->physical, &n, families);
  VkPhysicalDeviceProperties pr;
  vkGetPhysicalDeviceProperties(dev->physical, &pr);
  vkt_profile *p = calloc(1, sizeof *p);
  VkQueryPoolCreateInfo qi = {.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
                              .queryType = VK_QUERY_TYPE_TIMESTAMP,
                              .queryCount = VKT_BATCH_SLOTS * STAMPS};
  if (!p || families[dev->queue_family].timestampValidBits == 0 ||
      vkCreateQueryPool(dev->device, &qi, NULL, &p->pool) != VK_SUCCESS) {
    fprintf(stderr, "vkt: VKT_PROFILE: this adapter's queue has no timestamps\n");
    free(p);
    goto finish;
  }
  p->period_ns = pr.limits.timestampPeriod;
  dev->profile = p;
finish:
  free(families);
}

static row *row_of(vkt_profile *p, const vkt_pipeline *pipe) {
  for (int i = 0; i < p->nrows; i++)
    if (p->rows[i].pipe == pipe)
      return &p->rows[i];
  if (p->nrows == MAX_ROWS)
    return NULL;
  row *r = &p->rows[p->nrows++];
  r->pipe = pipe;
  if (!pipe) {
    snprintf(r->label, sizeof r->label, "copies and fills");
    return r;
  }
  const char *nl = strchr(pipe->key, '\n');
  int len = nl ? (int)(nl - pipe->key) : (int)strlen(pipe->key);
  const char *defines = nl ? nl + 1 : "";
  uint64_t hash = vkt_fnv1a(defines, strlen(defines), vkt_fnv1a(pipe->key, (size_t)len, VKT_FNV_SEED));
  snprintf(r->label, sizeof r->label, "%.*s #%08x", len > 60 ? 60 : len, pipe->key[0] == '\x01' ? "kernel" : pipe->key,
           (unsigned)hash);
  /* the defines on one line, without their "#define ": "TO float BM 64 ... A_K_FAST" */
  size_t n = 0;
  for (const char *c = defines; *c && n + 1 < sizeof r->defines;) {
    if (strncmp(c, "#define ", 8) == 0)
      c += 8;
    else
      r->defines[n++] = *c == '\n' ? ' ' : *c, c++;
  }
  r->defines[n] = '\0';
  return r;
}

/* Adds the finished batch of slot i to the rows. */
static void collect(vkt_device *dev, int i) {
  vkt_profile *p = dev->profile;
  uint32_t n = p->stamps[i];
  uint64_t t[STAMPS];
  p->stamps[i] = 0;
  if (n < 2 || vkGetQueryPoolResults(dev->device, p->pool, (uint32_t)i * STAMPS, n, sizeof t, t, sizeof t[0],
                                     VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT) != VK_SUCCESS)
    return;
  p->batches++;
  for (uint32_t k = 0; k + 1 < n; k++) {
    row *r = row_of(p, p->names[i][k]);
    if (r && t[k + 1] >= t[k]) {
      r->count++;
      r->ns += (double)(t[k + 1] - t[k]) * p->period_ns;
    }
  }
}

void vkt_profile_begin(vkt_device *dev, VkCommandBuffer cmd) {
  if (!dev->profile)
    return;
  collect(dev, dev->cur);
  vkCmdResetQueryPool(cmd, dev->profile->pool, (uint32_t)dev->cur * STAMPS, STAMPS);
}

void vkt_profile_stamp(vkt_device *dev, VkCommandBuffer cmd, const vkt_pipeline *next) {
  vkt_profile *p = dev->profile;
  if (!p || p->stamps[dev->cur] == STAMPS)
    return;
  uint32_t k = p->stamps[dev->cur]++;
  p->names[dev->cur][k] = next;
  vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, p->pool, (uint32_t)dev->cur * STAMPS + k);
}

static int by_time(const void *a, const void *b) {
  double x = ((const row *)a)->ns, y = ((const row *)b)->ns;
  return (x < y) - (x > y);
}

/* After vkDeviceWaitIdle: the last batches' stamps, then the report. */
void vkt_profile_destroy(vkt_device *dev) {
  vkt_profile *p = dev->profile;
  if (!p)
    return;
  for (int i = 0; i < VKT_BATCH_SLOTS; i++)
    if (!(dev->recording && i == dev->cur)) /* a batch never submitted has no timestamps to read */
      collect(dev, i);
  qsort(p->rows, (size_t)p->nrows, sizeof *p->rows, by_time);
  double total = 0;
  uint64_t commands = 0;
  for (int i = 0; i < p->nrows; i++)
    total += p->rows[i].ns, commands += p->rows[i].count;
  fprintf(stderr, "vkt profile: %.3f ms of GPU time, %llu commands in %llu batches (VKT_PROFILE)\n", total / 1e6,
          (unsigned long long)commands, (unsigned long long)p->batches);
  fprintf(stderr, "%10s %8s %10s  %s\n", "total ms", "count", "mean us", "shader #hash of its defines");
  for (int i = 0; i < p->nrows && i < SHOWN; i++) {
    const row *r = &p->rows[i];
    fprintf(stderr, "%10.3f %8llu %10.2f  %s  %.110s\n", r->ns / 1e6, (unsigned long long)r->count,
            r->ns / 1e3 / (double)r->count, r->label, r->defines);
  }
  vkDestroyQueryPool(dev->device, p->pool, NULL);
  free(p);
  dev->profile = NULL;
}
