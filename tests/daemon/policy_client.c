// SPDX-License-Identifier: Apache-2.0
/* A client of the policy calls, for tests/e2e/test_policies.py:
 *
 *   policy_client NAME CONFIG_JSON|- [CPUS [THREADS]]
 *
 * Requests CPUS shared CPUs (default 1), requests policy NAME with
 * CONFIG_JSON ("-": NULL, i.e. {}), then reads mlos_training_get_advice
 * until a policy advised the thread count (at most 10 s: the policy's
 * advice is applied when its verdict arrives), or with THREADS until the
 * advised count is THREADS (at most 30 s), and prints one JSON line:
 *   {"request": CODE, "request_error": "NAME: message", "claim": ID,
 *    "advice": CODE, "threads": N, "threads_advised": 0|1, "cpu_weight": W,
 *    "policies": N, "policies_failed": N}
 * (the error only when the request failed, the advice fields only when it
 * was read). Then releases the policy (its code in "release") and the
 * resources. Exit 0 when every call succeeded, 1 when one failed, 2 when
 * no resources were granted. */
#include <mlos/errors.h>
#include <mlos/training.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* `text` as a JSON string body (quotes and backslashes escaped, control
 * characters dropped). */
static void print_json_string(const char* text) {
  putchar('"');
  for (const char* p = text; *p; ++p) {
    if (*p == '"' || *p == '\\') printf("\\%c", *p);
    else if ((unsigned char)*p >= 0x20) putchar(*p);
  }
  putchar('"');
}

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

int main(int argc, char** argv) {
  if (argc < 3 || argc > 5) {
    fprintf(stderr, "usage: %s NAME CONFIG_JSON|- [CPUS [THREADS]]\n", argv[0]);
    return 2;
  }
  const char* config = strcmp(argv[2], "-") == 0 ? NULL : argv[2];
  const int cpus = argc > 3 ? atoi(argv[3]) : 1;
  const int want_threads = argc > 4 ? atoi(argv[4]) : 0;  /* 0: any advised count */
  mlos_training_resource_request_t req = {
      .num_cpus = cpus, .memory_bytes = 0, .numa_node_preference = -1, .priority = 0, .exclusive_cpus = false};
  mlos_training_resources_t* res = NULL;
  if (mlos_training_request_resources(&req, &res) != MLOS_OK) {
    printf("{\"resources\": %d, \"resources_error\": ", mlos_last_error());
    print_json_string(mlos_last_error_message());
    printf("}\n");
    return 2;
  }
  mlos_training_placement_t pl = {.struct_size = sizeof pl};
  mlos_training_get_placement(res, &pl);
  int failed = 0;
  const int rc = mlos_training_request_policy(res, argv[1], config);
  printf("{\"claim\": %llu, \"request\": %d", (unsigned long long)pl.claim_id, rc);
  if (rc != MLOS_OK) {
    char why[1024];
    snprintf(why, sizeof why, "%s: %s", mlos_strerror(rc), mlos_last_error_message());
    printf(", \"request_error\": ");
    print_json_string(why);
    failed = 1;
  }
  mlos_training_advice_t advice = {.struct_size = sizeof advice};
  int arc = mlos_training_get_advice(res, &advice);
  const int polls = want_threads > 0 ? 600 : 200;
  for (int i = 0; rc == MLOS_OK && arc == MLOS_OK && i < polls; ++i) {
    if (advice.threads_advised && (want_threads == 0 || advice.threads == want_threads)) break;
    sleep_ms(50);
    arc = mlos_training_get_advice(res, &advice);
  }
  printf(", \"advice\": %d", arc);
  if (arc == MLOS_OK) {
    printf(", \"threads\": %d, \"threads_advised\": %d, \"cpu_weight\": %u, \"policies\": %d, \"policies_failed\": %d",
           advice.threads, advice.threads_advised, advice.cpu_weight, advice.policies, advice.policies_failed);
  } else {
    printf(", \"advice_error\": ");
    print_json_string(mlos_last_error_message());
    failed = 1;
  }
  if (rc == MLOS_OK) {
    const int rel = mlos_training_release_policy(res, argv[1]);
    printf(", \"release\": %d", rel);
    failed |= rel != MLOS_OK;
  }
  printf("}\n");
  fflush(stdout);
  if (mlos_training_release_resources(res) != MLOS_OK) failed = 1;
  return failed;
}
