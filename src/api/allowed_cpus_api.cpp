// SPDX-License-Identifier: Apache-2.0
// mlos_training_get_allowed_cpus: the process's bound (engine/rank_bound.h),
// applying a local rank's share the first time it is asked.
#include <algorithm>
#include <string>

#include "api/api_guard.h"
#include "api/last_error.h"
#include "engine/rank_bound.h"
#include "mlos/training.h"

using mlos::make_error;
using mlos::record_error;

extern "C" int mlos_training_get_allowed_cpus(int* cpus, size_t capacity, size_t* count,
                                              int* recommended_threads) {
  return mlos::api::guarded([&] {
    if (count == nullptr || (cpus == nullptr && capacity > 0)) {
      return record_error(make_error(MLOS_ERR_INVALID_ARGUMENT, "count is NULL, or cpus is NULL with capacity > 0"));
    }
    auto bound = mlos::process_bound();
    if (!bound) return record_error(bound.error());
    const std::vector<int> v = bound->cpus.to_vector();
    *count = v.size();
    if (recommended_threads != nullptr) *recommended_threads = bound->recommended_threads;
    if (capacity < v.size()) {
      return record_error(make_error(MLOS_ERR_BUFFER_TOO_SMALL, "need room for " + std::to_string(v.size()) + " CPUs"));
    }
    std::copy(v.begin(), v.end(), cpus);
    return static_cast<int>(MLOS_OK);
  });
}
