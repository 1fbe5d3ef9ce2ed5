/* SPDX-License-Identifier: Apache-2.0 */
// A job for a test: one CPU, not exclusive, with `memory_bytes` (0: no
// budget). A failed request is a test failure (and nullptr).
#pragma once

#include <gtest/gtest.h>
#include <mlos/training.h>

#include <cstdint>

namespace mlos_test {

inline mlos_training_resources_t* request_test_job(uint64_t memory_bytes) {
  mlos_training_resource_request_t req = {.num_cpus = 1, .memory_bytes = memory_bytes, .numa_node_preference = -1,
                                          .priority = 0, .exclusive_cpus = false};
  mlos_training_resources_t* res = nullptr;
  EXPECT_EQ(mlos_training_request_resources(&req, &res), MLOS_OK) << mlos_last_error_message();
  return res;
}

}  // namespace mlos_test
