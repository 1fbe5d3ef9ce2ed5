// SPDX-License-Identifier: Apache-2.0
/* A small training loop written against the published mlOS Training
 * Workload API (plus the documented query extensions): a two-layer MLP
 * learning a synthetic regression task, with one worker thread per
 * recommended thread, each bound to its own CPU of the allocation.
 *
 * It prints where mlOS placed it, the loss as it falls, and at the end
 * the phase profile and what the job's policy modules advise. Build: part of the project (build/bin/mlos-demo), or
 *   cc train_loop.c $(pkg-config --cflags --libs mlos) -lm -lpthread
 * Usage: mlos-demo [steps] [cpus] */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mlos/training.h>

enum { IN = 32, HID = 64, BATCH = 256, MAX_WORKERS = 64 };

typedef struct {
  float w1[HID][IN], b1[HID], w2[HID], b2;
} model_t;

static model_t model, grads[MAX_WORKERS];
static float xs[BATCH][IN], ys[BATCH], losses[MAX_WORKERS];
static int n_workers;
static pthread_barrier_t step_start, step_done;
static volatile int stop_flag;
static mlos_training_resources_t* res;

static float frand(unsigned* s) { *s = *s * 1103515245u + 12345u; return ((*s >> 8) & 0xffff) / 32768.0f - 1.0f; }

static void make_batch(unsigned* seed) {
  for (int b = 0; b < BATCH; ++b) {
    float t = 0;
    for (int i = 0; i < IN; ++i) { xs[b][i] = frand(seed); t += xs[b][i] * (float)((i % 5) - 2) * 0.25f; }
    ys[b] = sinf(t);
  }
}

/* Forward and backward for rows [lo, hi) into grads[w]. */
static void compute_slice(int w, int lo, int hi) {
  model_t* g = &grads[w];
  memset(g, 0, sizeof *g);
  float loss = 0;
  for (int b = lo; b < hi; ++b) {
    float h[HID], out = model.b2;
    for (int j = 0; j < HID; ++j) {
      float a = model.b1[j];
      for (int i = 0; i < IN; ++i) a += model.w1[j][i] * xs[b][i];
      h[j] = a > 0 ? a : 0;
      out += model.w2[j] * h[j];
    }
    float d = out - ys[b];
    loss += d * d;
    g->b2 += d;
    for (int j = 0; j < HID; ++j) {
      g->w2[j] += d * h[j];
      if (h[j] > 0) {
        float dh = d * model.w2[j];
        g->b1[j] += dh;
        for (int i = 0; i < IN; ++i) g->w1[j][i] += dh * xs[b][i];
      }
    }
  }
  losses[w] = loss;
}

static void* worker(void* arg) {
  int w = (int)(long)arg;
  for (;;) {
    pthread_barrier_wait(&step_start);
    if (stop_flag) return NULL;
    int per = BATCH / n_workers;
    compute_slice(w, w * per, w == n_workers - 1 ? BATCH : (w + 1) * per);
    pthread_barrier_wait(&step_done);
  }
}

static int check(int rc, const char* what) {
  if (rc != 0) fprintf(stderr, "%s: %s (%s)\n", what, mlos_strerror(rc), mlos_last_error_message());
  return rc;
}

int main(int argc, char** argv) {
  int steps = argc > 1 ? atoi(argv[1]) : 300;
  int cpus = argc > 2 ? atoi(argv[2]) : 2;
  mlos_training_resource_request_t req = {
      .num_cpus = cpus, .memory_bytes = 64u << 20, .numa_node_preference = -1, .priority = 0, .exclusive_cpus = false};
  if (check(mlos_training_request_resources(&req, &res), "request_resources")) return 1;

  mlos_training_placement_t pl = {.struct_size = sizeof pl};
  mlos_training_get_placement(res, &pl);
  int cpu_ids[MAX_WORKERS];
  size_t n_cpus = 0;
  mlos_training_get_cpus(res, cpu_ids, MAX_WORKERS, &n_cpus);
  printf("mlOS %s: %d CPU(s) on NUMA node %d, claim %llu, %d intra-op thread(s)\n  CPUs:", mlos_version_string(),
         pl.num_cpus, pl.numa_node, (unsigned long long)pl.claim_id, pl.recommended_threads);
  for (size_t i = 0; i < n_cpus; ++i) printf(" %d", cpu_ids[i]);
  printf("\n");

  n_workers = pl.recommended_threads < MAX_WORKERS ? pl.recommended_threads : MAX_WORKERS;
  pthread_barrier_init(&step_start, NULL, (unsigned)n_workers + 1);
  pthread_barrier_init(&step_done, NULL, (unsigned)n_workers + 1);
  pthread_t threads[MAX_WORKERS];
  for (int w = 0; w < n_workers; ++w) {
    pthread_create(&threads[w], NULL, worker, (void*)(long)w);
    check(mlos_training_bind_thread(res, threads[w], w), "bind_thread");
  }
  check(mlos_training_bind_thread(res, pthread_self(), MLOS_CPU_INDEX_ALL), "bind_thread(main)");

  unsigned seed = 42;
  for (int j = 0; j < HID; ++j) {
    for (int i = 0; i < IN; ++i) model.w1[j][i] = frand(&seed) * 0.3f;
    model.w2[j] = frand(&seed) * 0.1f;
  }
  void* ckpt = mlos_training_alloc_checkpoint_buffer(res, sizeof model);
  if (ckpt == NULL) fprintf(stderr, "checkpoint buffer: %s\n", mlos_last_error_message());

  const float lr = 0.01f / BATCH;
  for (int step = 1; step <= steps; ++step) {
    mlos_training_set_phase(res, MLOS_TRAINING_PHASE_DATA_LOADING);
    make_batch(&seed);
    mlos_training_set_phase(res, MLOS_TRAINING_PHASE_FORWARD);
    /* Forward and backward run fused in the workers; the phase mark
     * switches to BACKWARD once they start their gradient pass. */
    pthread_barrier_wait(&step_start);
    mlos_training_set_phase(res, MLOS_TRAINING_PHASE_BACKWARD);
    pthread_barrier_wait(&step_done);
    mlos_training_set_phase(res, MLOS_TRAINING_PHASE_OPTIMIZER);
    float loss = 0;
    for (int w = 0; w < n_workers; ++w) {
      loss += losses[w];
      float* m = (float*)&model;
      const float* g = (const float*)&grads[w];
      for (size_t k = 0; k < sizeof model / sizeof(float); ++k) m[k] -= lr * g[k];
    }
    if (step % 100 == 0 && ckpt != NULL) {
      mlos_training_set_phase(res, MLOS_TRAINING_PHASE_CHECKPOINT);
      memcpy(ckpt, &model, sizeof model);
    }
    if (step == 1 || step % 50 == 0) printf("  step %4d  loss %.4f\n", step, loss / BATCH);
  }
  mlos_training_set_phase(res, MLOS_TRAINING_PHASE_IDLE);
  stop_flag = 1;
  pthread_barrier_wait(&step_start);
  for (int w = 0; w < n_workers; ++w) pthread_join(threads[w], NULL);

  mlos_training_phase_profile_t prof = {.struct_size = sizeof prof};
  mlos_training_get_phase_profile(res, &prof);
  double total = 0;
  for (int p = 0; p < MLOS_TRAINING_PHASE_COUNT; ++p) total += prof.seconds[p];
  printf("phase profile (%llu set_phase calls, %llu changed OS settings):\n",
         (unsigned long long)prof.set_phase_calls, (unsigned long long)prof.os_updates);
  for (int p = 0; p < MLOS_TRAINING_PHASE_COUNT; ++p) {
    printf("  %-13s %8.3f s %5.1f%%  %6llu entries\n", mlos_training_phase_name((mlos_training_phase_t)p),
           prof.seconds[p], total > 0 ? 100.0 * prof.seconds[p] / total : 0.0, (unsigned long long)prof.entries[p]);
  }
  /* The job's policy modules (under mlosd, or in embedded mode the hosts
   * libmlos starts; thread-governor by default) and what they advise. */
  mlos_training_advice_t advice = {.struct_size = sizeof advice};
  if (mlos_training_get_advice(res, &advice) == MLOS_OK) {
    printf("policies: %d (%d failed); advice: %d thread(s)%s\n", advice.policies, advice.policies_failed,
           advice.threads, advice.threads_advised ? " (advised by a policy)" : " (the grant's count)");
  } else {
    printf("policies: none (%s)\n", mlos_last_error_message());
  }
  char notes[2048];
  size_t needed = 0;
  if (mlos_training_get_notes(res, notes, sizeof notes, &needed) == MLOS_OK && notes[0] != '\0') {
    printf("degraded effects:\n%s", notes);
  }
  return check(mlos_training_release_resources(res), "release_resources") ? 1 : 0;
}
