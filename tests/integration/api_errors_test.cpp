// SPDX-License-Identifier: Apache-2.0
// Every entry point rejects bad input with its documented code and changes
// nothing; released and made-up handles are recognised. (Out-of-range enum
// values are passed from tests/c/api_c_test.c: in C they are well-defined,
// in C++ merely forming them is not.)
#include <string>
#include <gtest/gtest.h>
#include <mlos/training.h>

namespace {

mlos_training_resources_t* request() {
  mlos_training_resource_request_t req = {.num_cpus = 1, .memory_bytes = 0, .numa_node_preference = -1,
                                          .priority = 0, .exclusive_cpus = false};
  mlos_training_resources_t* res = nullptr;
  EXPECT_EQ(mlos_training_request_resources(&req, &res), MLOS_OK) << mlos_last_error_message();
  return res;
}

void on_pressure(mlos_memory_pressure_level_t, const mlos_memory_pressure_info_t*, void*) {}

}  // namespace

TEST(ApiErrors, ReleasedAndMadeUpHandlesAreRejectedEverywhere) {
  mlos_training_resources_t* res = request();
  ASSERT_EQ(mlos_training_release_resources(res), MLOS_OK);
  auto* fake = reinterpret_cast<mlos_training_resources_t*>(0x1234);
  for (mlos_training_resources_t* h : {res, fake, static_cast<mlos_training_resources_t*>(nullptr)}) {
    EXPECT_EQ(mlos_training_bind_thread(h, pthread_self(), 0), MLOS_ERR_INVALID_HANDLE);
    EXPECT_EQ(mlos_training_set_phase(h, MLOS_TRAINING_PHASE_FORWARD), MLOS_ERR_INVALID_HANDLE);
    EXPECT_EQ(mlos_training_register_memory_callback(h, on_pressure, nullptr), MLOS_ERR_INVALID_HANDLE);
    EXPECT_EQ(mlos_training_unregister_memory_callback(h, on_pressure, nullptr), MLOS_ERR_INVALID_HANDLE);
    mlos_memory_pressure_info_t info = {.struct_size = sizeof info};
    EXPECT_EQ(mlos_training_get_memory_pressure(h, &info), MLOS_ERR_INVALID_HANDLE);
    EXPECT_EQ(mlos_training_alloc_checkpoint_buffer(h, 4096), nullptr);
    EXPECT_EQ(mlos_last_error(), MLOS_ERR_INVALID_HANDLE);
    EXPECT_EQ(mlos_training_free_checkpoint_buffer(h, nullptr), MLOS_ERR_INVALID_HANDLE);
    EXPECT_EQ(mlos_training_barrier(h, 0, 1), MLOS_ERR_INVALID_HANDLE);
    EXPECT_EQ(mlos_training_allreduce(h, nullptr, 0, MLOS_REDUCE_SUM), MLOS_ERR_INVALID_HANDLE);
    EXPECT_EQ(mlos_training_allreduce_typed(h, nullptr, 0, MLOS_DTYPE_INT64, MLOS_REDUCE_SUM), MLOS_ERR_INVALID_HANDLE);
    EXPECT_EQ(mlos_training_register_buffer(h, &res, 8, MLOS_BUFFER_GRADIENT), MLOS_ERR_INVALID_HANDLE);
    EXPECT_EQ(mlos_training_unregister_buffer(h, &res), MLOS_ERR_INVALID_HANDLE);
    mlos_training_placement_t pl = {.struct_size = sizeof pl};
    EXPECT_EQ(mlos_training_get_placement(h, &pl), MLOS_ERR_INVALID_HANDLE);
    EXPECT_EQ(mlos_training_recommended_threads(h), MLOS_ERR_INVALID_HANDLE);
    size_t n = 0;
    EXPECT_EQ(mlos_training_get_cpus(h, nullptr, 0, &n), MLOS_ERR_INVALID_HANDLE);
  }
  EXPECT_EQ(mlos_training_release_resources(res), MLOS_ERR_INVALID_HANDLE);
  EXPECT_EQ(mlos_training_release_resources(fake), MLOS_ERR_INVALID_HANDLE);
  EXPECT_EQ(mlos_training_release_resources(nullptr), MLOS_OK);
}

TEST(ApiErrors, ArgumentChecksOnALiveHandle) {
  mlos_training_resources_t* res = request();
  EXPECT_EQ(mlos_training_register_memory_callback(res, nullptr, nullptr), MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(mlos_training_unregister_memory_callback(res, on_pressure, nullptr), MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(mlos_training_register_memory_callback(res, on_pressure, nullptr), MLOS_OK);
  EXPECT_EQ(mlos_training_register_memory_callback(res, on_pressure, nullptr), MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(mlos_training_unregister_memory_callback(res, on_pressure, nullptr), MLOS_OK);
  EXPECT_EQ(mlos_training_unregister_memory_callback(res, on_pressure, nullptr), MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(mlos_training_set_memory_thresholds(res, nullptr), MLOS_ERR_INVALID_ARGUMENT);
  mlos_memory_thresholds_t small = {.struct_size = 8};
  EXPECT_EQ(mlos_training_set_memory_thresholds(res, &small), MLOS_ERR_VERSION_MISMATCH);
  mlos_memory_thresholds_t inverted = {.struct_size = sizeof inverted, .moderate_headroom_percent = 5,
                                       .critical_headroom_percent = 10, .hysteresis_percent = 5,
                                       .hold_ms = 100, .sample_ms = 100};
  EXPECT_EQ(mlos_training_set_memory_thresholds(res, &inverted), MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(mlos_last_error_message()).find("critical headroom"), std::string::npos);
  EXPECT_EQ(mlos_training_get_memory_pressure(res, nullptr), MLOS_ERR_INVALID_ARGUMENT);
  mlos_memory_pressure_info_t tiny = {.struct_size = 4};
  EXPECT_EQ(mlos_training_get_memory_pressure(res, &tiny), MLOS_ERR_VERSION_MISMATCH);
  EXPECT_EQ(mlos_training_barrier(res, -1, 2), MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(mlos_training_barrier(res, 0, 0), MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(mlos_training_allreduce(res, nullptr, 3, MLOS_REDUCE_SUM), MLOS_ERR_INVALID_ARGUMENT);
  int64_t n64 = 1;
  EXPECT_EQ(mlos_training_allreduce_typed(res, &n64, 1, static_cast<mlos_dtype_t>(6), MLOS_REDUCE_SUM),
            MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(n64, 1);
  float x = 1;
  EXPECT_EQ(mlos_training_register_buffer(res, nullptr, 8, MLOS_BUFFER_GRADIENT), MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(mlos_training_register_buffer(res, &x, 0, MLOS_BUFFER_GRADIENT), MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(mlos_training_unregister_buffer(res, nullptr), MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(mlos_training_get_placement(res, nullptr), MLOS_ERR_INVALID_ARGUMENT);
  mlos_training_phase_profile_t old_prof = {.struct_size = 3};
  EXPECT_EQ(mlos_training_get_phase_profile(res, &old_prof), MLOS_ERR_VERSION_MISMATCH);
  EXPECT_EQ(mlos_training_get_phase_profile(res, nullptr), MLOS_ERR_INVALID_ARGUMENT);
  int cpus[1];
  size_t n = 0;
  EXPECT_EQ(mlos_training_get_cpus(res, nullptr, 4, &n), MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(mlos_training_get_cpus(res, cpus, 0, &n), MLOS_ERR_BUFFER_TOO_SMALL);
  EXPECT_EQ(n, 1u);
  EXPECT_EQ(mlos_training_get_cpus(res, cpus, 1, nullptr), MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(mlos_training_get_notes(res, nullptr, 0, nullptr), MLOS_ERR_INVALID_ARGUMENT);
  mlos_training_request_options_t opts = {.struct_size = 2, .flags = 0, .label = nullptr};
  mlos_training_resource_request_t req = {.num_cpus = 1, .memory_bytes = 0, .numa_node_preference = -1,
                                          .priority = 0, .exclusive_cpus = false};
  mlos_training_resources_t* other = nullptr;
  EXPECT_EQ(mlos_training_request_resources_ex(&req, &opts, &other), MLOS_ERR_VERSION_MISMATCH);
  opts.struct_size = sizeof opts;
  opts.flags = 1u << 30;
  EXPECT_EQ(mlos_training_request_resources_ex(&req, &opts, &other), MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(other, nullptr);
  // A bigger (newer) caller struct gets what this library knows; the bytes
  // past that are not the library's to write (tests/integration/
  // api_hostile_input_test.cpp checks the extreme sizes).
  struct {
    mlos_training_placement_t p;
    char future[32];
  } big;
  memset(&big, 0x7f, sizeof big);
  big.p.struct_size = sizeof big;
  EXPECT_EQ(mlos_training_get_placement(res, &big.p), MLOS_OK);
  EXPECT_EQ(big.p.num_cpus, 1);
  for (char c : big.future) EXPECT_EQ(c, 0x7f);
  EXPECT_EQ(mlos_training_release_resources(res), MLOS_OK);
}

TEST(ApiErrors, DaemonModeWithoutDaemonIsUnavailableNotFaked) {
  setenv("MLOS_MODE", "daemon", 1);
  setenv("MLOS_DAEMON_SOCKET", "/nonexistent/mlosd.sock", 1);
  mlos_training_resource_request_t req = {.num_cpus = 1, .memory_bytes = 0, .numa_node_preference = -1,
                                          .priority = 0, .exclusive_cpus = false};
  mlos_training_resources_t* res = nullptr;
  EXPECT_EQ(mlos_training_request_resources(&req, &res), MLOS_ERR_DAEMON_UNAVAILABLE);
  EXPECT_NE(std::string(mlos_last_error_message()).find("/nonexistent/mlosd.sock"), std::string::npos);
  unsetenv("MLOS_DAEMON_SOCKET");
  setenv("MLOS_MODE", "bogus", 1);
  EXPECT_EQ(mlos_training_request_resources(&req, &res), MLOS_ERR_INVALID_ARGUMENT);
  unsetenv("MLOS_MODE");
  EXPECT_EQ(res, nullptr);
}
