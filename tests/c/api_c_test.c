// SPDX-License-Identifier: Apache-2.0
/* The public header compiled as strict C11 (-pedantic -Werror) and used the
 * way the published guide shows, against the shared library. Checks the ABI
 * conventions: designated initializers, error codes and names, versioned
 * structs, NULL/double-release safety. */
#include <mlos/collectives.h>
#include <mlos/dataload.h>
#include <mlos/log.h>
#include <mlos/tmm.h>
#include <mlos/training.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "c_expect.h"


/* A caller store that must never be called here (no collective runs). */
static int store_set(void* u, const char* k, const void* v, size_t n) {
  (void)u, (void)k, (void)v, (void)n;
  return MLOS_ERR_SYSTEM;
}
static int store_get(void* u, const char* k, void** v, size_t* n, int64_t t) {
  (void)u, (void)k, (void)v, (void)n, (void)t;
  return MLOS_ERR_SYSTEM;
}
static int store_wait(void* u, const char* const* k, size_t n, int64_t t) {
  (void)u, (void)k, (void)n, (void)t;
  return MLOS_ERR_SYSTEM;
}
static int compare_sets = 0;
static int store_compare_set(void* u, const char* k, const void* e, size_t en, const void* d, size_t dn, void** v,
                             size_t* n) {
  (void)u, (void)k, (void)e, (void)en, (void)d, (void)dn, (void)v, (void)n;
  ++compare_sets;
  return MLOS_ERR_SYSTEM;
}
static int store_releases = 0;
static void store_release(void* u) { (void)u, ++store_releases; }

int main(void) {
  mlos_training_resource_request_t req = {
      .num_cpus = 1, .memory_bytes = 0, .numa_node_preference = -1, .priority = 0, .exclusive_cpus = false};
  mlos_training_resources_t* res = NULL;
  int major = -1, minor = -1, patch = -1;

  mlos_version(&major, &minor, &patch);
  EXPECT(major == MLOS_VERSION_MAJOR && minor == MLOS_VERSION_MINOR && patch == MLOS_VERSION_PATCH);
  EXPECT(strcmp(mlos_version_string(), MLOS_VERSION_STRING) == 0);
  EXPECT(strcmp(mlos_strerror(MLOS_OK), "success") == 0);
  EXPECT(strcmp(mlos_strerror(12345), "unknown error") == 0);
  EXPECT(strcmp(mlos_training_phase_name(MLOS_TRAINING_PHASE_BACKWARD), "BACKWARD") == 0);

  /* Bad input: documented codes, nothing allocated. */
  EXPECT(mlos_training_request_resources(NULL, &res) == MLOS_ERR_INVALID_ARGUMENT && res == NULL);
  EXPECT(mlos_training_request_resources(&req, NULL) == MLOS_ERR_INVALID_ARGUMENT);
  EXPECT(mlos_last_error() == MLOS_ERR_INVALID_ARGUMENT && strlen(mlos_last_error_message()) > 0);
  EXPECT(mlos_training_release_resources(NULL) == MLOS_OK);
  EXPECT(mlos_training_set_phase(NULL, MLOS_TRAINING_PHASE_FORWARD) == MLOS_ERR_INVALID_HANDLE);

  EXPECT(mlos_training_request_resources(&req, &res) == MLOS_OK && res != NULL);
  EXPECT(mlos_training_bind_thread(res, pthread_self(), 0) == MLOS_OK);
  EXPECT(mlos_training_set_phase(res, MLOS_TRAINING_PHASE_FORWARD) == MLOS_OK);
  /* Out-of-range enum values, as a C caller may pass them. */
  EXPECT(mlos_training_set_phase(res, (mlos_training_phase_t)42) == MLOS_ERR_INVALID_ARGUMENT);
  EXPECT(mlos_training_set_phase(res, (mlos_training_phase_t)-1) == MLOS_ERR_INVALID_ARGUMENT);
  EXPECT(mlos_training_set_phase(res, (mlos_training_phase_t)MLOS_TRAINING_PHASE_COUNT) == MLOS_ERR_INVALID_ARGUMENT);
  EXPECT(strcmp(mlos_training_phase_name((mlos_training_phase_t)99), "UNKNOWN") == 0);
  {
    /* The flagged checkpoint buffer: unknown flags refused; a lock that
     * works (or not, without CAP_IPC_LOCK past RLIMIT_MEMLOCK) is reported. */
    bool locked = false;
    EXPECT(mlos_training_alloc_checkpoint_buffer_ex(res, 4096, 0x80u, &locked) == NULL &&
           mlos_last_error() == MLOS_ERR_INVALID_ARGUMENT);
    void* buf = mlos_training_alloc_checkpoint_buffer_ex(res, 4096, MLOS_CHECKPOINT_BUFFER_ALLOW_UNLOCKED, &locked);
    EXPECT(buf != NULL);
    EXPECT(mlos_training_free_checkpoint_buffer(res, buf) == MLOS_OK);
  }
  {
    static char page[8192];
    float one = 1;
    EXPECT(mlos_training_register_buffer(res, page, sizeof page, (mlos_buffer_kind_t)9) == MLOS_ERR_INVALID_ARGUMENT);
    EXPECT(mlos_training_allreduce(res, &one, 1, (mlos_reduce_op_t)17) == MLOS_ERR_INVALID_ARGUMENT);
  }
  /* No rendezvous store (MLOS_STORE) and no RANK/WORLD_SIZE here: refused
   * before any socket is opened, and nothing pretends to have worked. */
  EXPECT(mlos_training_barrier(res, 0, 2) == MLOS_ERR_INVALID_ARGUMENT);
  EXPECT(strstr(mlos_last_error_message(), "MLOS_STORE") != NULL);
  EXPECT(mlos_training_barrier(res, 2, 2) == MLOS_ERR_INVALID_ARGUMENT);
  {
    float v[4] = {1, 2, 3, 4};
    EXPECT(mlos_training_allreduce(res, v, 4, MLOS_REDUCE_SUM) == MLOS_ERR_INVALID_ARGUMENT);
    EXPECT(v[0] == 1 && v[3] == 4); /* untouched */
  }

  {
    mlos_training_placement_t pl = {.struct_size = sizeof pl};
    mlos_training_placement_t tiny = {.struct_size = 2};
    EXPECT(mlos_training_get_placement(res, &pl) == MLOS_OK);
    EXPECT(pl.num_cpus == 1 && pl.num_numa_nodes == 1 && pl.recommended_threads == 1 && pl.bound_threads == 1);
    EXPECT(pl.phase == MLOS_TRAINING_PHASE_FORWARD);
    EXPECT(mlos_training_get_placement(res, &tiny) == MLOS_ERR_VERSION_MISMATCH);
  }
  {
    mlos_training_phase_profile_t prof = {.struct_size = sizeof prof};
    EXPECT(mlos_training_get_phase_profile(res, &prof) == MLOS_OK);
    EXPECT(prof.entries[MLOS_TRAINING_PHASE_FORWARD] == 1 && prof.set_phase_calls == 1);
    /* The two collectives refused above for want of a store count as calls
     * (with their time); nothing was reduced. */
    EXPECT(prof.collective_calls == 2 && prof.collective_bytes == 0 && prof.communication_seconds >= 0.0);
  }
  {
    mlos_collective_store_t store = {.struct_size = sizeof store, .set = store_set, .get = store_get,
                                     .wait = store_wait, .release = store_release};
    mlos_collective_store_t no_wait = store, old = store;
    no_wait.wait = NULL;
    old.struct_size = 8;
    EXPECT(mlos_training_set_collective_store(NULL, &store) == MLOS_ERR_INVALID_HANDLE);
    EXPECT(mlos_training_set_collective_store(res, &no_wait) == MLOS_ERR_INVALID_ARGUMENT);
    EXPECT(mlos_training_set_collective_store(res, &old) == MLOS_ERR_VERSION_MISMATCH);
    EXPECT(store_releases == 0);
    EXPECT(mlos_training_set_collective_store(res, &store) == MLOS_OK);
    EXPECT(mlos_training_set_collective_store(res, NULL) == MLOS_OK); /* replaced: released */
    EXPECT(store_releases == 1);
    EXPECT(mlos_training_set_collective_store(res, &store) == MLOS_OK);
  }
  {
    /* compare_set: the rank claim calls it first when the caller's struct
     * has it; a struct of the size before it (V1) is accepted and its
     * trailing field never read. A world of one on its own handle: the
     * failing stub store fails the rendezvous either way. */
    mlos_training_resources_t* solo = NULL;
    EXPECT(mlos_training_request_resources(&req, &solo) == MLOS_OK);
    mlos_collective_store_t v1 = {.struct_size = MLOS_COLLECTIVE_STORE_SIZE_V1, .set = store_set,
                                  .get = store_get, .wait = store_wait, .compare_set = store_compare_set};
    mlos_collective_store_t v2 = v1, older = v1;
    v2.struct_size = sizeof v2;
    older.struct_size = MLOS_COLLECTIVE_STORE_SIZE_V1 - 1;
    EXPECT(mlos_training_set_collective_store(solo, &older) == MLOS_ERR_VERSION_MISMATCH);
    EXPECT(mlos_training_set_collective_store(solo, &v1) == MLOS_OK);
    EXPECT(mlos_training_barrier(solo, 0, 1) != MLOS_OK && compare_sets == 0);
    EXPECT(mlos_training_set_collective_store(solo, &v2) == MLOS_OK);
    EXPECT(mlos_training_barrier(solo, 0, 1) != MLOS_OK && compare_sets == 1);
    EXPECT(mlos_training_release_resources(solo) == MLOS_OK);
  }
  {
    mlos_collective_options_t opt = {.struct_size = sizeof opt, .timeout_ms = 1500, .group = "job-7"};
    mlos_collective_options_t bad_timeout = opt, bad_group = opt;
    bad_timeout.timeout_ms = -1;
    bad_group.group = "a/b";
    EXPECT(mlos_training_set_collective_options(res, &opt) == MLOS_OK);
    EXPECT(mlos_training_set_collective_options(res, &bad_timeout) == MLOS_ERR_INVALID_ARGUMENT);
    EXPECT(mlos_training_set_collective_options(res, &bad_group) == MLOS_ERR_INVALID_ARGUMENT);
    EXPECT(mlos_training_set_collective_options(NULL, &opt) == MLOS_ERR_INVALID_HANDLE);
    EXPECT(mlos_training_set_collective_options(res, NULL) == MLOS_OK);
  }
  {
    /* Broadcast, all-gather, all-to-all, gather and scatter: refused
     * arguments never reach a group. */
    char byte = 0, both[2] = {0, 0};
    EXPECT(mlos_training_broadcast(NULL, &byte, 1, 0, 1) == MLOS_ERR_INVALID_HANDLE);
    EXPECT(mlos_training_broadcast(res, NULL, 1, 0, 1) == MLOS_ERR_INVALID_ARGUMENT);
    EXPECT(mlos_training_broadcast(res, &byte, 1, 1, 1) == MLOS_ERR_INVALID_ARGUMENT); /* root outside */
    EXPECT(mlos_training_broadcast(res, &byte, 1, -1, 1) == MLOS_ERR_INVALID_ARGUMENT);
    EXPECT(mlos_training_broadcast(res, &byte, 1, 0, 0) == MLOS_ERR_INVALID_ARGUMENT);
    EXPECT(mlos_training_allgather(NULL, &byte, both, 1, 2) == MLOS_ERR_INVALID_HANDLE);
    EXPECT(mlos_training_allgather(res, NULL, both, 1, 2) == MLOS_ERR_INVALID_ARGUMENT);
    EXPECT(mlos_training_allgather(res, &byte, NULL, 1, 2) == MLOS_ERR_INVALID_ARGUMENT);
    EXPECT(mlos_training_allgather(res, &byte, both, 1, 0) == MLOS_ERR_INVALID_ARGUMENT);
    size_t one_each[2] = {1, 1};
    EXPECT(mlos_training_alltoall(NULL, both, one_each, both, one_each, 2) == MLOS_ERR_INVALID_HANDLE);
    EXPECT(mlos_training_alltoall(res, both, NULL, both, one_each, 2) == MLOS_ERR_INVALID_ARGUMENT);
    EXPECT(mlos_training_alltoall(res, both, one_each, both, NULL, 2) == MLOS_ERR_INVALID_ARGUMENT);
    EXPECT(mlos_training_alltoall(res, NULL, one_each, both, one_each, 2) == MLOS_ERR_INVALID_ARGUMENT);
    EXPECT(mlos_training_alltoall(res, both, one_each, NULL, one_each, 2) == MLOS_ERR_INVALID_ARGUMENT);
    EXPECT(mlos_training_alltoall(res, both, one_each, both, one_each, 0) == MLOS_ERR_INVALID_ARGUMENT);
    EXPECT(mlos_training_gather(NULL, &byte, both, 1, 0, 2) == MLOS_ERR_INVALID_HANDLE);
    EXPECT(mlos_training_gather(res, NULL, both, 1, 0, 2) == MLOS_ERR_INVALID_ARGUMENT);
    EXPECT(mlos_training_gather(res, &byte, both, 1, 2, 2) == MLOS_ERR_INVALID_ARGUMENT); /* root outside */
    EXPECT(mlos_training_scatter(res, both, NULL, 1, 0, 2) == MLOS_ERR_INVALID_ARGUMENT);
    EXPECT(mlos_training_scatter(res, both, &byte, 1, -1, 2) == MLOS_ERR_INVALID_ARGUMENT);
    EXPECT(mlos_training_scatter(res, both, &byte, 1, 0, 0) == MLOS_ERR_INVALID_ARGUMENT);
    /* Point-to-point: the same, and a refused post leaves *transfer NULL. */
    mlos_transfer_t* t = (mlos_transfer_t*)&byte;
    EXPECT(mlos_training_isend(NULL, &byte, 1, 1, 0, 2, &t) == MLOS_ERR_INVALID_HANDLE && t == NULL);
    EXPECT(mlos_training_isend(res, NULL, 1, 1, 0, 2, &t) == MLOS_ERR_INVALID_ARGUMENT);
    EXPECT(mlos_training_isend(res, &byte, 1, 1, 0, 2, NULL) == MLOS_ERR_INVALID_ARGUMENT);
    t = (mlos_transfer_t*)&byte;
    EXPECT(mlos_training_irecv(res, &byte, 1, 1, 0, 0, &t) == MLOS_ERR_INVALID_ARGUMENT && t == NULL);
    EXPECT(mlos_training_irecv(NULL, &byte, 1, -1, 0, 2, &t) == MLOS_ERR_INVALID_HANDLE);
    EXPECT(mlos_training_wait_transfer(NULL, NULL) == MLOS_ERR_INVALID_ARGUMENT);
  }

  {
    /* Policy modules: the argument checks come before any engine is asked
     * (embedded answers UNSUPPORTED, mlosd NOT_FOUND etc.: see
     * tests/integration/policy_api_test.cpp and tests/e2e/test_policies.py). */
    mlos_training_advice_t adv = {.struct_size = sizeof adv};
    mlos_training_advice_t old_adv = {.struct_size = 4};
    EXPECT(mlos_training_request_policy(res, NULL, NULL) == MLOS_ERR_INVALID_ARGUMENT);
    EXPECT(mlos_training_request_policy(res, "example", "[1]") == MLOS_ERR_INVALID_ARGUMENT);
    EXPECT(mlos_training_release_policy(res, "") == MLOS_ERR_INVALID_ARGUMENT);
    EXPECT(mlos_training_get_advice(res, NULL) == MLOS_ERR_INVALID_ARGUMENT);
    EXPECT(mlos_training_get_advice(res, &old_adv) == MLOS_ERR_VERSION_MISMATCH);
    EXPECT(mlos_training_get_advice(NULL, &adv) == MLOS_ERR_INVALID_HANDLE);
  }

  EXPECT(mlos_training_release_resources(res) == MLOS_OK);
  EXPECT(store_releases == 2); /* the release dropped the second store */
  EXPECT(mlos_training_release_resources(res) == MLOS_ERR_INVALID_HANDLE); /* double release is safe */
  EXPECT(mlos_training_set_phase(res, MLOS_TRAINING_PHASE_IDLE) == MLOS_ERR_INVALID_HANDLE);
  {
    mlos_training_advice_t adv = {.struct_size = sizeof adv};
    EXPECT(mlos_training_get_advice(res, &adv) == MLOS_ERR_INVALID_HANDLE);
    EXPECT(mlos_training_request_policy(res, "example", "{}") == MLOS_ERR_INVALID_HANDLE);
  }

  { /* The tensor memory manager from C: a pool, a buffer, its stats. */
    mlos_tmm_pool_options_t opts = {.struct_size = sizeof opts, .capacity_bytes = 1 << 20,
                                    .numa_node = MLOS_TMM_NODE_AUTO, .name = "c-api"};
    mlos_tmm_pool_t* pool = NULL;
    mlos_tmm_buffer_t buf = {0};
    mlos_tmm_stats_t st = {.struct_size = sizeof st};
    EXPECT(mlos_tmm_pool_create(NULL, &opts, &pool) == MLOS_OK);
    EXPECT(mlos_tmm_acquire(pool, 1000, &buf) == MLOS_OK && buf.capacity == 4096);
    EXPECT(mlos_tmm_pool_destroy(pool) == MLOS_ERR_BUSY);
    EXPECT(strcmp(mlos_strerror(MLOS_ERR_BUSY), "still in use") == 0);
    EXPECT(mlos_tmm_release(pool, buf.data) == MLOS_OK);
    EXPECT(mlos_tmm_release(pool, buf.data) == MLOS_ERR_INVALID_ARGUMENT);
    EXPECT(mlos_tmm_get_stats(pool, &st) == MLOS_OK && st.acquires == 1 && st.bytes_cached == 4096);
    EXPECT(mlos_tmm_pool_destroy(pool) == MLOS_OK);
    EXPECT(mlos_tmm_pool_destroy(pool) == MLOS_ERR_INVALID_HANDLE);
  }

  { /* The data loader's header from C: refusals need no helper. */
    mlos_dataload_options_t dl = {.struct_size = sizeof dl, .source = "/nonexistent", .batch_size = 0,
                                  .image_size = 224, .transform = MLOS_DATALOAD_TRAIN,
                                  .layout = MLOS_DATALOAD_F32_CHW};
    mlos_dataload_t* loader = NULL;
    mlos_dataload_batch_t batch = {0};
    EXPECT(mlos_dataload_start(NULL, &dl, &loader) == MLOS_ERR_INVALID_ARGUMENT && loader == NULL);
    EXPECT(mlos_dataload_next(NULL, &batch, 0) == MLOS_ERR_INVALID_HANDLE);
    EXPECT(MLOS_DATALOAD_END > 0);
  }

  printf("c api: %d passed, %d failed\n", passes, failures);
  return failures == 0 ? 0 : 1;
}
