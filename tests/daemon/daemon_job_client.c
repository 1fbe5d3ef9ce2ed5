// SPDX-License-Identifier: Apache-2.0
/* A training-like client of the published API, for the daemon tests:
 *
 *   daemon_job_client CPUS EXCLUSIVE(0|1) LABEL
 *
 * Requests CPUS CPUs, binds its main thread, prints one line
 *   GRANTED claim=<id> cpus=<list>
 * and then cycles FORWARD -> BACKWARD -> OPTIMIZER with a little arithmetic
 * in each, until SIGTERM (then it releases and exits 0). Every 1000
 * iterations it checks that the kernel still confines it to the granted CPUs
 * (sched_getaffinity); if not it prints "LOST CPUS ..." and exits 3.
 * Exit 2 if the request fails (the error is printed). */
#define _GNU_SOURCE
#include <mlos/errors.h>
#include <mlos/training.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static volatile sig_atomic_t stop = 0;
static void on_term(int sig) {
  (void)sig;
  stop = 1;
}

static void cpu_list(const cpu_set_t* set, char* out, size_t cap) {
  out[0] = '\0';
  size_t len = 0;
  for (int c = 0; c < CPU_SETSIZE && len + 8 < cap; ++c) {
    if (CPU_ISSET(c, set)) len += (size_t)snprintf(out + len, cap - len, "%s%d", len ? "," : "", c);
  }
}

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s CPUS EXCLUSIVE(0|1) LABEL\n", argv[0]);
    return 2;
  }
  signal(SIGTERM, on_term);
  mlos_training_resource_request_t req = {.num_cpus = atoi(argv[1]),
                                          .memory_bytes = 0,
                                          .numa_node_preference = -1,
                                          .priority = 0,
                                          .exclusive_cpus = atoi(argv[2]) != 0};
  mlos_training_request_options_t opts = {.struct_size = sizeof opts, .flags = 0, .label = argv[3]};
  mlos_training_resources_t* res = NULL;
  if (mlos_training_request_resources_ex(&req, &opts, &res) != MLOS_OK) {
    printf("FAILED %s: %s\n", mlos_strerror(mlos_last_error()), mlos_last_error_message());
    return 2;
  }
  int cpus[256];
  size_t n = 0;
  mlos_training_get_cpus(res, cpus, 256, &n);
  cpu_set_t granted;
  CPU_ZERO(&granted);
  for (size_t i = 0; i < n; ++i) CPU_SET(cpus[i], &granted);
  /* Bind to the whole allocation: one thread, all granted CPUs' first. */
  if (mlos_training_bind_thread(res, pthread_self(), MLOS_CPU_INDEX_ALL) != MLOS_OK) {
    printf("FAILED bind: %s\n", mlos_last_error_message());
    return 2;
  }
  mlos_training_placement_t pl = {.struct_size = sizeof pl};
  mlos_training_get_placement(res, &pl);
  char list[1024];
  cpu_list(&granted, list, sizeof list);
  printf("GRANTED claim=%llu cpus=%s\n", (unsigned long long)pl.claim_id, list);
  fflush(stdout);
  volatile double x = 1.0;
  const mlos_training_phase_t cycle[3] = {MLOS_TRAINING_PHASE_FORWARD, MLOS_TRAINING_PHASE_BACKWARD,
                                          MLOS_TRAINING_PHASE_OPTIMIZER};
  for (unsigned long it = 0; !stop; ++it) {
    if (mlos_training_set_phase(res, cycle[it % 3]) != MLOS_OK) {
      printf("FAILED set_phase: %s\n", mlos_last_error_message());
      return 4;
    }
    for (int k = 0; k < 2000; ++k) x = x * 1.0000001 + 1e-9;
    if (it % 1000 == 0) {
      cpu_set_t now;
      CPU_ZERO(&now);
      sched_getaffinity(0, sizeof now, &now);
      for (int c = 0; c < CPU_SETSIZE; ++c) {
        if (CPU_ISSET(c, &now) && !CPU_ISSET(c, &granted)) {
          char have[1024];
          cpu_list(&now, have, sizeof have);
          printf("LOST CPUS: running on %s, granted %s\n", have, list);
          fflush(stdout);
          return 3;
        }
      }
    }
  }
  int rc = mlos_training_release_resources(res);
  printf("RELEASED rc=%d\n", rc);
  return rc == MLOS_OK ? 0 : 5;
}
