// SPDX-License-Identifier: Apache-2.0
/* A daemon-mode job that loads data, for tests/e2e/test_dataload_daemon.py:
 *
 *   dataload_job_client CPUS SOURCE
 *
 * Requests CPUS CPUs (not exclusive), starts a data loader on SOURCE (an
 * ImageFolder) for the job, runs one epoch, prints one line
 *   LOADING claim=<id> helper=<pid> batches=<n> samples=<m>
 * and waits for SIGTERM; then stops the loader, releases and exits 0.
 * Exit 2 (the error printed) if anything fails. */
#define _GNU_SOURCE
#include <mlos/dataload.h>
#include <mlos/errors.h>
#include <mlos/training.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static volatile sig_atomic_t stop = 0;
static void on_term(int sig) {
  (void)sig;
  stop = 1;
}

static int failed(const char* what) {
  printf("FAILED %s: %s: %s\n", what, mlos_strerror(mlos_last_error()), mlos_last_error_message());
  return 2;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s CPUS SOURCE\n", argv[0]);
    return 2;
  }
  signal(SIGTERM, on_term);
  mlos_training_resource_request_t req = {.num_cpus = atoi(argv[1]),
                                          .memory_bytes = 0,
                                          .numa_node_preference = -1,
                                          .priority = 0,
                                          .exclusive_cpus = false};
  mlos_training_resources_t* res = NULL;
  if (mlos_training_request_resources(&req, &res) != MLOS_OK) return failed("request");
  mlos_training_placement_t pl = {.struct_size = sizeof pl};
  if (mlos_training_get_placement(res, &pl) != MLOS_OK) return failed("placement");
  mlos_dataload_options_t o = {.struct_size = sizeof o, .source = argv[2], .batch_size = 4, .image_size = 32,
                               .transform = MLOS_DATALOAD_TRAIN, .layout = MLOS_DATALOAD_U8_HWC, .seed = 1};
  mlos_dataload_t* loader = NULL;
  if (mlos_dataload_start(res, &o, &loader) != MLOS_OK) return failed("dataload_start");
  mlos_dataload_info_t info = {.struct_size = sizeof info};
  if (mlos_dataload_get_info(loader, &info) != MLOS_OK) return failed("dataload_get_info");
  if (mlos_dataload_start_epoch(loader, 0) != MLOS_OK) return failed("start_epoch");
  unsigned batches = 0, samples = 0;
  mlos_dataload_batch_t b;
  int rc;
  while ((rc = mlos_dataload_next(loader, &b, 60000)) == MLOS_OK) {
    ++batches;
    samples += b.count;
    if (mlos_dataload_release_batch(loader, b.slot) != MLOS_OK) return failed("release_batch");
  }
  if (rc != MLOS_DATALOAD_END) return failed("next");
  printf("LOADING claim=%llu helper=%d batches=%u samples=%u\n", (unsigned long long)pl.claim_id, info.helper_pid,
         batches, samples);
  fflush(stdout);
  while (!stop) pause();
  if (mlos_dataload_stop(loader) != MLOS_OK) return failed("dataload_stop");
  rc = mlos_training_release_resources(res);
  printf("RELEASED rc=%d\n", rc);
  return rc == MLOS_OK ? 0 : 5;
}
