// SPDX-License-Identifier: Apache-2.0
/* example: the smallest useful policy, and the walk-through of
 * docs/policies.md. It advises every attached job to use a fixed number of
 * threads (config "threads", default: the job's recommended count) and
 * raises the job's CPU weight while it checkpoints. Plain C; it includes
 * nothing of mlOS but mlos/policy.h. */
#include <mlos/policy.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct example_state {
  const mlos_policy_host_t* host;
} example_state_t;

/* The job's config is {} or {"threads": N} with N in 1..1024; anything else
 * is refused with a message that names the key. (A real policy would use a
 * JSON parser; this one reads a single key to stay dependency-free.) */
static int parse_threads(const char* config, int* threads, char* error, size_t error_size) {
  *threads = 0;
  const char* key = strstr(config, "\"threads\"");
  if (key == NULL) {
    if (strcmp(config, "{}") != 0) {
      snprintf(error, error_size, "unknown key in config %s: only \"threads\" is known", config);
      return MLOS_ERR_INVALID_ARGUMENT;
    }
    return MLOS_OK;
  }
  const char* colon = strchr(key, ':');
  char* end = NULL;
  long n = colon ? strtol(colon + 1, &end, 10) : 0;
  if (colon == NULL || end == colon + 1 || n < 1 || n > 1024) {
    snprintf(error, error_size, "\"threads\" must be an integer in 1..1024");
    return MLOS_ERR_INVALID_ARGUMENT;
  }
  *threads = (int)n;
  return MLOS_OK;
}

static int example_init(const mlos_policy_host_t* host, const char* config, void** state, char* error,
                        size_t error_size) {
  if (strcmp(config, "{}") != 0) {
    snprintf(error, error_size, "example takes no node config, got %s", config);
    return MLOS_ERR_INVALID_ARGUMENT;
  }
  example_state_t* s = calloc(1, sizeof *s);
  if (s == NULL) return MLOS_ERR_NO_MEMORY;
  s->host = host;
  *state = s;
  return MLOS_OK;
}

static void example_fini(void* state) { free(state); }

static int example_job_attached(void* state, uint64_t job, const char* config, char* error, size_t error_size) {
  example_state_t* s = state;
  int threads = 0;
  int rc = parse_threads(config, &threads, error, error_size);
  if (rc != MLOS_OK) return rc;
  if (threads == 0) {
    mlos_policy_job_figures_t f = {.struct_size = sizeof f};
    if (s->host->job_figures(s->host->ctx, job, &f) == MLOS_OK) threads = f.recommended_threads;
  }
  if (threads > 0) s->host->advise_threads(s->host->ctx, job, threads);
  char line[96];
  snprintf(line, sizeof line, "job %llu attached, advising %d threads", (unsigned long long)job, threads);
  s->host->log(s->host->ctx, MLOS_POLICY_LOG_INFO, line);
  return MLOS_OK;
}

static void example_phase_changed(void* state, uint64_t job, int old_phase, int new_phase) {
  example_state_t* s = state;
  (void)old_phase;
  s->host->set_cpu_weight(s->host->ctx, job, new_phase == MLOS_TRAINING_PHASE_CHECKPOINT ? 400 : 100);
}

static const mlos_policy_t kExample = {
    .abi_version = MLOS_POLICY_ABI_VERSION,
    .struct_size = sizeof(mlos_policy_t),
    .name = "example",
    .description = "advises a fixed thread count and favours checkpoints (the docs/policies.md walk-through)",
    .config_schema = "{\"type\":\"object\",\"properties\":{\"threads\":{\"type\":\"integer\",\"minimum\":1,"
                     "\"maximum\":1024}},\"additionalProperties\":false}",
    .tick_interval_ms = 0,
    .init = example_init,
    .fini = example_fini,
    .job_attached = example_job_attached,
    .phase_changed = example_phase_changed,
};

MLOS_POLICY_EXPORT const mlos_policy_t* mlos_policy_v1(void) { return &kExample; }
