// SPDX-License-Identifier: Apache-2.0
/* A caller compiled against the first version of every versioned struct
 * (struct_size = MLOS_<STRUCT>_SIZE_V1), against today's library, as
 * strict C11. Each struct sits in a buffer whose bytes past the first
 * version are not the caller's: for an input they hold garbage the library
 * must not read (0xFF: num_gpus -1, pointers to nowhere), for an output a
 * canary the library must not write. One byte less than the first version
 * is VERSION_MISMATCH. */
#define _POSIX_C_SOURCE 200809L /* mkdtemp, rmdir */
#include <mlos/checkpoint.h>
#include <mlos/collectives.h>
#include <mlos/errors.h>
#include <mlos/tmm.h>
#include <mlos/training.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "c_expect.h"
#include <unistd.h>


enum { kGarbage = 0xFF, kCanary = 0xA5 };

/* Room for any struct here, aligned for any of its fields. */
typedef union caller_bytes {
  unsigned char bytes[1024];
  long double align_any;
  void* align_pointer;
} caller_bytes_t;

/* An input struct as a first-version caller passes it: its first `v1`
 * bytes from `value`, struct_size = v1, garbage after. */
static void* v1_input(caller_bytes_t* buf, const void* value, size_t v1) {
  uint32_t size = (uint32_t)v1;
  memset(buf->bytes, kGarbage, sizeof buf->bytes);
  memcpy(buf->bytes, value, v1);
  memcpy(buf->bytes, &size, sizeof size);
  return buf->bytes;
}

/* An output struct of a first-version caller: struct_size = v1, canary
 * bytes everywhere else. */
static void* v1_output(caller_bytes_t* buf, size_t v1) {
  uint32_t size = (uint32_t)v1;
  memset(buf->bytes, kCanary, sizeof buf->bytes);
  memcpy(buf->bytes, &size, sizeof size);
  return buf->bytes;
}

/* Nothing written past the caller's first `v1` bytes. */
static int untouched_after(const caller_bytes_t* buf, size_t v1) {
  size_t i;
  for (i = v1; i < sizeof buf->bytes; ++i) {
    if (buf->bytes[i] != kCanary) return 0;
  }
  return 1;
}

/* Some of the caller's first-version bytes (past struct_size) written. */
static int filled(const caller_bytes_t* buf, size_t v1) {
  size_t i;
  for (i = sizeof(uint32_t); i < v1; ++i) {
    if (buf->bytes[i] != kCanary) return 1;
  }
  return 0;
}

int main(void) {
  char dir[] = "/tmp/mlos-abi-v1-XXXXXX";
  caller_bytes_t in, out;
  mlos_training_resource_request_t req = {
      .num_cpus = 1, .memory_bytes = 0, .numa_node_preference = -1, .priority = 0, .exclusive_cpus = false};
  mlos_training_resources_t* res = NULL;
  mlos_training_resources_t* refused = NULL;

  /* The first versions are prefixes of today's structs. */
  EXPECT(MLOS_TRAINING_REQUEST_OPTIONS_SIZE_V1 <= sizeof(mlos_training_request_options_t));
  EXPECT(MLOS_TRAINING_PLACEMENT_SIZE_V1 <= sizeof(mlos_training_placement_t));
  EXPECT(MLOS_COLLECTIVE_STORE_SIZE_V1 <= sizeof(mlos_collective_store_t));

  {
    mlos_training_request_options_t o = {.struct_size = 0, .flags = 0, .label = "abi-v1"};
    void* p = v1_input(&in, &o, MLOS_TRAINING_REQUEST_OPTIONS_SIZE_V1);
    EXPECT(mlos_training_request_resources_ex(&req, p, &res) == MLOS_OK);
    p = v1_input(&in, &o, MLOS_TRAINING_REQUEST_OPTIONS_SIZE_V1 - 1);
    EXPECT(mlos_training_request_resources_ex(&req, p, &refused) == MLOS_ERR_VERSION_MISMATCH);
    EXPECT(refused == NULL);
  }
  if (res == NULL) {
    fprintf(stderr, "abi_v1_test: no resources, %s\n", mlos_last_error_message());
    return 1;
  }

  {
    void* p = v1_output(&out, MLOS_TRAINING_PLACEMENT_SIZE_V1);
    EXPECT(mlos_training_get_placement(res, p) == MLOS_OK);
    EXPECT(filled(&out, MLOS_TRAINING_PLACEMENT_SIZE_V1));
    EXPECT(untouched_after(&out, MLOS_TRAINING_PLACEMENT_SIZE_V1));
    p = v1_output(&out, MLOS_TRAINING_PLACEMENT_SIZE_V1 - 1);
    EXPECT(mlos_training_get_placement(res, p) == MLOS_ERR_VERSION_MISMATCH);
    EXPECT(untouched_after(&out, sizeof(uint32_t)));
  }
  {
    void* p = v1_output(&out, MLOS_TRAINING_PHASE_PROFILE_SIZE_V1);
    EXPECT(mlos_training_set_phase(res, MLOS_TRAINING_PHASE_FORWARD) == MLOS_OK);
    EXPECT(mlos_training_get_phase_profile(res, p) == MLOS_OK);
    EXPECT(filled(&out, MLOS_TRAINING_PHASE_PROFILE_SIZE_V1));
    EXPECT(untouched_after(&out, MLOS_TRAINING_PHASE_PROFILE_SIZE_V1));
    p = v1_output(&out, MLOS_TRAINING_PHASE_PROFILE_SIZE_V1 - 1);
    EXPECT(mlos_training_get_phase_profile(res, p) == MLOS_ERR_VERSION_MISMATCH);
  }
  {
    /* The advice: OK, or UNSUPPORTED where the engine serves no policies;
     * either way nothing past the caller's struct. */
    void* p = v1_output(&out, MLOS_TRAINING_ADVICE_SIZE_V1);
    const int rc = mlos_training_get_advice(res, p);
    EXPECT(rc == MLOS_OK || rc == MLOS_ERR_UNSUPPORTED);
    EXPECT(untouched_after(&out, MLOS_TRAINING_ADVICE_SIZE_V1));
    p = v1_output(&out, MLOS_TRAINING_ADVICE_SIZE_V1 - 1);
    EXPECT(mlos_training_get_advice(res, p) == MLOS_ERR_VERSION_MISMATCH);
  }
  {
    mlos_memory_thresholds_t t = {.struct_size = 0,
                                  .moderate_headroom_percent = 20,
                                  .critical_headroom_percent = 5,
                                  .moderate_psi_some = 10,
                                  .critical_psi_full = 10,
                                  .hysteresis_percent = 5,
                                  .hold_ms = 1000,
                                  .sample_ms = 100};
    void* p = v1_input(&in, &t, MLOS_MEMORY_THRESHOLDS_SIZE_V1);
    EXPECT(mlos_training_set_memory_thresholds(res, p) == MLOS_OK);
    p = v1_input(&in, &t, MLOS_MEMORY_THRESHOLDS_SIZE_V1 - 1);
    EXPECT(mlos_training_set_memory_thresholds(res, p) == MLOS_ERR_VERSION_MISMATCH);
  }
  {
    void* p = v1_output(&out, MLOS_MEMORY_PRESSURE_INFO_SIZE_V1);
    const int rc = mlos_training_get_memory_pressure(res, p);
    EXPECT(rc == MLOS_OK || rc == MLOS_ERR_UNSUPPORTED);
    EXPECT(untouched_after(&out, MLOS_MEMORY_PRESSURE_INFO_SIZE_V1));
    p = v1_output(&out, MLOS_MEMORY_PRESSURE_INFO_SIZE_V1 - 1);
    EXPECT(mlos_training_get_memory_pressure(res, p) == MLOS_ERR_VERSION_MISMATCH);
  }
  {
    mlos_collective_options_t o = {.struct_size = 0, .timeout_ms = 5000, .group = "abi-v1"};
    void* p = v1_input(&in, &o, MLOS_COLLECTIVE_OPTIONS_SIZE_V1);
    EXPECT(mlos_training_set_collective_options(res, p) == MLOS_OK);
    p = v1_input(&in, &o, MLOS_COLLECTIVE_OPTIONS_SIZE_V1 - 1);
    EXPECT(mlos_training_set_collective_options(res, p) == MLOS_ERR_VERSION_MISMATCH);
  }
  {
    mlos_tmm_pool_options_t o = {.struct_size = 0,
                                 .flags = 0,
                                 .capacity_bytes = 1 << 20,
                                 .numa_node = MLOS_TMM_NODE_AUTO,
                                 .reserved = 0,
                                 .name = "abi-v1"};
    mlos_tmm_pool_t* pool = NULL;
    void* p = v1_input(&in, &o, MLOS_TMM_POOL_OPTIONS_SIZE_V1);
    EXPECT(mlos_tmm_pool_create(res, p, &pool) == MLOS_OK);
    if (pool != NULL) {
      void* s = v1_output(&out, MLOS_TMM_STATS_SIZE_V1);
      EXPECT(mlos_tmm_get_stats(pool, s) == MLOS_OK);
      EXPECT(filled(&out, MLOS_TMM_STATS_SIZE_V1));
      EXPECT(untouched_after(&out, MLOS_TMM_STATS_SIZE_V1));
      s = v1_output(&out, MLOS_TMM_STATS_SIZE_V1 - 1);
      EXPECT(mlos_tmm_get_stats(pool, s) == MLOS_ERR_VERSION_MISMATCH);
      EXPECT(mlos_tmm_pool_destroy(pool) == MLOS_OK);
    }
    p = v1_input(&in, &o, MLOS_TMM_POOL_OPTIONS_SIZE_V1 - 1);
    EXPECT(mlos_tmm_pool_create(res, p, &pool) == MLOS_ERR_VERSION_MISMATCH);
  }
  if (mkdtemp(dir) != NULL) {
    mlos_checkpoint_options_t o = {.struct_size = 0,
                                   .keep_last = 2,
                                   .prefix = "abi",
                                   .resources = NULL,
                                   .flags = MLOS_CHECKPOINT_ALLOW_UNLOCKED_STAGING};
    mlos_checkpoint_writer_t* w = NULL;
    void* p = v1_input(&in, &o, MLOS_CHECKPOINT_OPTIONS_SIZE_V1);
    EXPECT(mlos_checkpoint_writer_open(dir, p, &w) == MLOS_OK);
    if (w != NULL) {
      void* i = v1_output(&out, MLOS_CHECKPOINT_WRITER_INFO_SIZE_V1);
      EXPECT(mlos_checkpoint_writer_get_info(w, i) == MLOS_OK);
      EXPECT(filled(&out, MLOS_CHECKPOINT_WRITER_INFO_SIZE_V1));
      EXPECT(untouched_after(&out, MLOS_CHECKPOINT_WRITER_INFO_SIZE_V1));
      EXPECT(mlos_checkpoint_writer_close(w) == MLOS_OK);
    }
    p = v1_input(&in, &o, MLOS_CHECKPOINT_OPTIONS_SIZE_V1 - 1);
    EXPECT(mlos_checkpoint_writer_open(dir, p, &w) == MLOS_ERR_VERSION_MISMATCH);
    rmdir(dir);
  } else {
    EXPECT(!"mkdtemp");
  }

  EXPECT(mlos_training_release_resources(res) == MLOS_OK);
  printf("abi_v1_test: %d passed, %d failed\n", passes, failures);
  return failures == 0 ? 0 : 1;
}
