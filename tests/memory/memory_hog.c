// SPDX-License-Identifier: Apache-2.0
/* A process that allocates anonymous memory steadily, for the memory-
 * pressure tests. Usage:
 *   mlos_memory_hog STEP_MB INTERVAL_MS TARGET_MB HOLD_MS [CGROUP_DIR [CROSS_BYTES...]]
 * Touches every page it allocates. With CGROUP_DIR (a memory cgroup), it
 * reads the cgroup's working set (v1: usage_in_bytes - total_inactive_file;
 * v2: memory.current - inactive_file)
 * after every MiB and prints, once per CROSS_BYTES value, the
 * CLOCK_MONOTONIC time it first saw the working set at or above it:
 *   {"event":"cross","bytes":N,"t_ns":T}
 * It prints {"event":"allocated","mb":N,"t_ns":T} after each step and
 * {"event":"done"} before exiting after HOLD_MS at TARGET_MB. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t read_u64(const char* path) {
  FILE* f = fopen(path, "r");
  unsigned long long v = 0;
  if (!f) return 0;
  if (fscanf(f, "%llu", &v) != 1) v = 0;
  fclose(f);
  return v;
}

static uint64_t stat_value(const char* path, const char* key) {
  FILE* f = fopen(path, "r");
  char k[128];
  unsigned long long v;
  uint64_t out = 0;
  if (!f) return 0;
  while (fscanf(f, "%127s %llu", k, &v) == 2) {
    if (strcmp(k, key) == 0) out = v;
  }
  fclose(f);
  return out;
}

int main(int argc, char** argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: %s STEP_MB INTERVAL_MS TARGET_MB HOLD_MS [CGROUP_DIR [CROSS_BYTES...]]\n", argv[0]);
    return 2;
  }
  const long step_mb = atol(argv[1]), interval_ms = atol(argv[2]), target_mb = atol(argv[3]), hold_ms = atol(argv[4]);
  const char* cg = argc > 5 ? argv[5] : NULL;
  int ncross = argc > 6 ? argc - 6 : 0;
  uint64_t cross[16];
  int crossed[16] = {0};
  if (ncross > 16) ncross = 16;
  for (int i = 0; i < ncross; ++i) cross[i] = strtoull(argv[6 + i], NULL, 10);
  char usage_path[512], stat_path[512];
  const char* inactive_key = "total_inactive_file";  // v1; v2: memory.current, inactive_file
  if (cg) {
    snprintf(usage_path, sizeof usage_path, "%s/memory.usage_in_bytes", cg);
    if (access(usage_path, R_OK) != 0) {
      snprintf(usage_path, sizeof usage_path, "%s/memory.current", cg);
      inactive_key = "inactive_file";
    }
    snprintf(stat_path, sizeof stat_path, "%s/memory.stat", cg);
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  const size_t mib = 1 << 20;
  for (long mb = 0; mb < target_mb;) {
    for (long i = 0; i < step_mb && mb < target_mb; ++i, ++mb) {
      char* p = mmap(NULL, mib, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) {
        perror("mmap");
        return 1;
      }
      for (size_t off = 0; off < mib; off += 4096) p[off] = (char)(off + mb);
      if (cg) {
        uint64_t usage = read_u64(usage_path);
        uint64_t inactive = stat_value(stat_path, inactive_key);
        uint64_t ws = usage > inactive ? usage - inactive : 0;
        for (int c = 0; c < ncross; ++c) {
          if (!crossed[c] && ws >= cross[c]) {
            crossed[c] = 1;
            printf("{\"event\":\"cross\",\"bytes\":%llu,\"t_ns\":%llu}\n", (unsigned long long)cross[c],
                   (unsigned long long)now_ns());
          }
        }
      }
    }
    printf("{\"event\":\"allocated\",\"mb\":%ld,\"t_ns\":%llu}\n", mb, (unsigned long long)now_ns());
    usleep((useconds_t)interval_ms * 1000);
  }
  usleep((useconds_t)hold_ms * 1000);
  printf("{\"event\":\"done\"}\n");
  return 0;
}
