/* SPDX-License-Identifier: Apache-2.0 */
// The kinds of job `auto` tells apart, and what each one gets
// (docs/auto.md). The order and names are the model file's contract.
#pragma once

#include <array>
#include <optional>
#include <string_view>

namespace mlos::autopolicy {

enum class WorkloadClass { kInputBound, kComputeBound, kMemoryBound, kCommunicationBound, kLatencyInference };
constexpr int kClassCount = 5;

constexpr std::array<const char*, kClassCount> kClassNames = {"input_bound", "compute_bound", "memory_bound",
                                                              "communication_bound", "latency_inference"};

inline const char* class_name(WorkloadClass c) { return kClassNames[static_cast<int>(c)]; }

inline std::optional<WorkloadClass> class_from_name(std::string_view name) {
  for (int i = 0; i < kClassCount; ++i) {
    if (name == kClassNames[i]) return static_cast<WorkloadClass>(i);
  }
  return std::nullopt;
}

}  // namespace mlos::autopolicy
