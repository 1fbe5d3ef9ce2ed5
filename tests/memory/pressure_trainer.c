// SPDX-License-Identifier: Apache-2.0
/* A training-like loop for the memory-pressure tests, written against the
 * published API only. Usage:
 *   mlos_pressure_trainer MODE CACHE_MB WORK_MB SECONDS [BUDGET_MB]
 * It keeps a dataset cache of CACHE_MB (1 MiB chunks, read round-robin by
 * the loop) and a working buffer of WORK_MB it computes over, for SECONDS.
 * MODE:
 *   plain    no mlOS at all (what a job does today);
 *   observe  registers a memory callback that only records;
 *   shed     registers a callback that drops half the remaining cache on
 *            MODERATE and all of it on CRITICAL (the adaptive job).
 * BUDGET_MB becomes the request's memory_bytes (under mlosd: the limit of
 * the job's cgroup). Resources are requested before the cache is filled,
 * so under mlosd the cache is charged to the job's cgroup.
 * Prints JSON lines: {"event":"callback",...} per callback (level, the
 * callback's CLOCK_MONOTONIC time, the level's detected_ns, figures),
 * {"event":"shed","mb":N}, and {"event":"done","steps":N,"cache_mb":N}. */
#define _GNU_SOURCE
#include <mlos/training.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define CHUNK (1u << 20)

static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;
static char** cache;
static long cache_chunks;
static int shed_mode;

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Frees chunks from the end; returns how many. Caller holds cache_mu. */
static long drop_chunks(long n) {
  long dropped = 0;
  while (n-- > 0 && cache_chunks > 0) {
    munmap(cache[--cache_chunks], CHUNK);
    ++dropped;
  }
  return dropped;
}

static void on_pressure(mlos_memory_pressure_level_t level, const mlos_memory_pressure_info_t* info, void* user) {
  (void)user;
  printf("{\"event\":\"callback\",\"level\":%d,\"t_ns\":%llu,\"detected_ns\":%llu,\"available\":%llu,"
         "\"budget\":%llu,\"source\":%u,\"psi_some\":%.2f}\n",
         (int)level, (unsigned long long)now_ns(), (unsigned long long)info->detected_ns,
         (unsigned long long)info->available_bytes, (unsigned long long)info->budget_bytes, info->source,
         info->psi_some_avg10);
  if (!shed_mode || level == MLOS_MEMORY_PRESSURE_NORMAL) return;
  pthread_mutex_lock(&cache_mu);
  long dropped = drop_chunks(level == MLOS_MEMORY_PRESSURE_CRITICAL ? cache_chunks : (cache_chunks + 1) / 2);
  pthread_mutex_unlock(&cache_mu);
  printf("{\"event\":\"shed\",\"mb\":%ld,\"t_ns\":%llu}\n", dropped, (unsigned long long)now_ns());
}

int main(int argc, char** argv) {
  if (argc != 5 && argc != 6) {
    fprintf(stderr, "usage: %s plain|observe|shed CACHE_MB WORK_MB SECONDS [BUDGET_MB]\n", argv[0]);
    return 2;
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  const char* mode = argv[1];
  const long cache_mb = atol(argv[2]), work_mb = atol(argv[3]), seconds = atol(argv[4]);
  shed_mode = strcmp(mode, "shed") == 0;
  const int use_mlos = shed_mode || strcmp(mode, "observe") == 0;

  const long budget_mb = argc == 6 ? atol(argv[5]) : 0;
  mlos_training_resources_t* res = NULL;
  if (use_mlos) {
    mlos_training_resource_request_t req = {.num_cpus = 1, .numa_node_preference = -1,
                                            .memory_bytes = (size_t)budget_mb << 20};
    if (mlos_training_request_resources(&req, &res) != MLOS_OK) {
      fprintf(stderr, "mlos: %s\n", mlos_last_error_message());
      return 3;
    }
  }

  cache = calloc((size_t)cache_mb + 1, sizeof *cache);
  for (long i = 0; i < cache_mb; ++i) {
    cache[i] = mmap(NULL, CHUNK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (cache[i] == MAP_FAILED) return 1;
    memset(cache[i], (int)i, CHUNK);
    cache_chunks = i + 1;
  }
  const size_t work_bytes = (size_t)work_mb << 20;
  float* work = malloc(work_bytes);
  memset(work, 0, work_bytes);

  if (res && mlos_training_register_memory_callback(res, on_pressure, NULL) != MLOS_OK) {
    fprintf(stderr, "mlos: %s\n", mlos_last_error_message());
    return 3;
  }
  printf("{\"event\":\"ready\",\"t_ns\":%llu}\n", (unsigned long long)now_ns());

  const uint64_t end = now_ns() + (uint64_t)seconds * 1000000000ull;
  unsigned long long steps = 0;
  volatile uint64_t sink = 0;
  while (now_ns() < end) {
    if (res) mlos_training_set_phase(res, MLOS_TRAINING_PHASE_DATA_LOADING);
    pthread_mutex_lock(&cache_mu);
    if (cache_chunks > 0) {
      const char* chunk = cache[steps % (unsigned long long)cache_chunks];
      for (size_t off = 0; off < CHUNK; off += 4096) sink += (unsigned char)chunk[off];
    }
    pthread_mutex_unlock(&cache_mu);
    if (res) mlos_training_set_phase(res, MLOS_TRAINING_PHASE_FORWARD);
    for (size_t i = 0; i < work_bytes / sizeof(float); i += 16) work[i] = work[i] * 0.5f + 1.0f;
    ++steps;
  }
  pthread_mutex_lock(&cache_mu);
  printf("{\"event\":\"done\",\"steps\":%llu,\"cache_mb\":%ld}\n", steps, cache_chunks);
  pthread_mutex_unlock(&cache_mu);
  if (res) mlos_training_release_resources(res);  // no callback runs after this
  drop_chunks(cache_chunks);
  free(cache);
  free(work);
  return 0;
}
