// SPDX-License-Identifier: Apache-2.0
/* A program written against the installed mlOS Training Workload API the
 * way its users write one: published calls only, built with pkg-config or
 * find_package(mlos). Run by run_consumer_test.sh; exits non-zero with a
 * message if anything fails. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mlos/training.h>

static int failures = 0;

static void check(int rc, const char* what) {
  if (rc != MLOS_OK) {
    fprintf(stderr, "consumer: %s failed: %d (%s): %s\n", what, rc, mlos_strerror(rc), mlos_last_error_message());
    ++failures;
  }
}

/* The calling thread's Cpus_allowed_list, as the kernel reports it. */
static int read_allowed_list(char* buf, size_t len) {
  FILE* f = fopen("/proc/thread-self/status", "r");
  if (!f) return -1;
  char line[512];
  int found = -1;
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, "Cpus_allowed_list:", 18) == 0) {
      const char* v = line + 18;
      while (*v == ' ' || *v == '\t') ++v;
      size_t n = strcspn(v, "\n");
      if (n >= len) n = len - 1;
      memcpy(buf, v, n);
      buf[n] = '\0';
      found = 0;
      break;
    }
  }
  fclose(f);
  return found;
}

int main(void) {
  if (strcmp(mlos_version_string(), MLOS_VERSION_STRING) != 0) {
    fprintf(stderr, "consumer: library version %s, headers %s\n", mlos_version_string(), MLOS_VERSION_STRING);
    return 1;
  }

  mlos_training_resource_request_t req = {.num_cpus = 1,
                                          .memory_bytes = 0,
                                          .numa_node_preference = -1,
                                          .priority = 0,
                                          .exclusive_cpus = false};
  mlos_training_resources_t* res = NULL;
  int rc = mlos_training_request_resources(&req, &res);
  check(rc, "mlos_training_request_resources");
  if (rc != MLOS_OK || res == NULL) {
    fprintf(stderr, "consumer: no resources, giving up\n");
    return 1;
  }

  check(mlos_training_bind_thread(res, pthread_self(), 0), "mlos_training_bind_thread");
  char allowed[256] = "";
  if (read_allowed_list(allowed, sizeof allowed) != 0) {
    fprintf(stderr, "consumer: cannot read /proc/thread-self/status\n");
    ++failures;
  } else if (allowed[0] == '\0' || strpbrk(allowed, ",-") != NULL) {
    fprintf(stderr, "consumer: bound thread may run on \"%s\", expected one CPU\n", allowed);
    ++failures;
  }

  check(mlos_training_set_phase(res, MLOS_TRAINING_PHASE_FORWARD), "mlos_training_set_phase(FORWARD)");
  check(mlos_training_release_resources(res), "mlos_training_release_resources");

  if (failures) {
    fprintf(stderr, "consumer: %d check(s) failed\n", failures);
    return 1;
  }
  printf("consumer: mlos %s OK, bound to CPU %s\n", mlos_version_string(), allowed);
  return 0;
}
