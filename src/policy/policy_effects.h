/* SPDX-License-Identifier: Apache-2.0 */
// What policy modules have set on one job, each value with the policy that
// set it, so that a policy that detaches or fails takes back exactly its
// own effects and the job falls back to the built-in defaults (mlosd: the
// phase table's weight, the grant's thread count, the request's memory
// settings; the embedded engine: the grant's thread count).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace mlos::policy {

template <class T>
struct PolicySetting {
  std::optional<T> value;
  std::string by;  // the policy that set it
  void set(T v, const std::string& policy) {
    value = v;
    by = policy;
  }
  // Clears it if `policy` set it; true if that changed anything.
  bool take_back(const std::string& policy) {
    if (!value || by != policy) return false;
    value.reset();
    by.clear();
    return true;
  }
};

struct PolicyEffects {
  PolicySetting<uint32_t> cpu_weight;   // v2 scale
  PolicySetting<int> threads;           // intra-op threads advised
  PolicySetting<uint64_t> memory_high;  // bytes, within the job's limit
  PolicySetting<uint64_t> memory_low;

  // advise_threads within the grant: 1..`cpus` (the job's CPUs), else
  // PERMISSION and nothing is set.
  Status advise_threads(uint64_t count, int cpus, const std::string& policy) {
    if (count < 1 || count > static_cast<uint64_t>(cpus)) {
      return make_error(MLOS_ERR_PERMISSION, "thread count " + std::to_string(count) + " outside 1.." +
                                                 std::to_string(cpus) + " (the job's CPUs)");
    }
    threads.set(static_cast<int>(count), policy);
    return Status::Ok();
  }

  // Takes back everything `policy` set; true if anything changed.
  bool take_back(const std::string& policy) {
    bool changed = cpu_weight.take_back(policy);
    changed = threads.take_back(policy) || changed;
    changed = memory_high.take_back(policy) || changed;
    return memory_low.take_back(policy) || changed;
  }
};

}  // namespace mlos::policy
