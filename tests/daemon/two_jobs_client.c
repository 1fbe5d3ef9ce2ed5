// SPDX-License-Identifier: Apache-2.0
/* Several jobs around one process, for the daemon tests:
 *
 *   mlos_two_jobs_client same     one process requests two exclusive 1-CPU
 *                                 jobs and binds its main thread to the
 *                                 second one's CPU
 *   mlos_two_jobs_client nested   a process requests an exclusive 2-CPU job;
 *                                 its child (in that job's cgroup) requests
 *                                 an exclusive 1-CPU job and binds to it
 *
 * Each process that binds prints one line
 *   BOUND pid=<pid> claim=<id> cpus=<list>
 * (or FAILED <what>: <error>) and then waits until stdin closes, so the test
 * can read /proc; the result is what the kernel shows, not what we say. */
#define _GNU_SOURCE
#include <mlos/errors.h>
#include <mlos/training.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static mlos_training_resources_t* request(int cpus, const char* label) {
  mlos_training_resource_request_t req = {.num_cpus = cpus, .numa_node_preference = -1, .exclusive_cpus = true};
  mlos_training_request_options_t opts = {.struct_size = sizeof opts, .label = label};
  mlos_training_resources_t* res = NULL;
  if (mlos_training_request_resources_ex(&req, &opts, &res) != MLOS_OK) {
    printf("FAILED request %s: %s: %s\n", label, mlos_strerror(mlos_last_error()), mlos_last_error_message());
    fflush(stdout);
    return NULL;
  }
  return res;
}

static int bind_and_wait(mlos_training_resources_t* res) {
  if (mlos_training_bind_thread(res, pthread_self(), MLOS_CPU_INDEX_ALL) != MLOS_OK) {
    printf("FAILED bind: %s: %s\n", mlos_strerror(mlos_last_error()), mlos_last_error_message());
    fflush(stdout);
    return 3;
  }
  int cpus[64];
  size_t n = 0;
  mlos_training_get_cpus(res, cpus, 64, &n);
  mlos_training_placement_t pl = {.struct_size = sizeof pl};
  mlos_training_get_placement(res, &pl);
  char list[256] = "";
  for (size_t i = 0; i < n; ++i) snprintf(list + strlen(list), sizeof list - strlen(list), "%s%d", i ? "," : "", cpus[i]);
  printf("BOUND pid=%d claim=%llu cpus=%s\n", (int)getpid(), (unsigned long long)pl.claim_id, list);
  fflush(stdout);
  char c;
  while (read(0, &c, 1) > 0) {
  }
  return 0;
}

int main(int argc, char** argv) {
  if (argc != 2 || (strcmp(argv[1], "same") != 0 && strcmp(argv[1], "nested") != 0)) {
    fprintf(stderr, "usage: %s same|nested\n", argv[0]);
    return 2;
  }
  if (strcmp(argv[1], "same") == 0) {
    mlos_training_resources_t* first = request(1, "first");
    mlos_training_resources_t* second = first ? request(1, "second") : NULL;
    if (!second) return 2;
    return bind_and_wait(second);
  }
  mlos_training_resources_t* outer = request(2, "outer");
  if (!outer) return 2;
  const pid_t child = fork();
  if (child == 0) {
    mlos_training_resources_t* inner = request(1, "inner");
    _exit(inner ? bind_and_wait(inner) : 2);
  }
  int status = 0;
  waitpid(child, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 4;
}
