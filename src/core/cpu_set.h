/* SPDX-License-Identifier: Apache-2.0 */
// A set of CPU (or NUMA node) OS indices, with the kernel's list format
// ("0-3,8,10-11") for parsing and printing. Pure value type.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace mlos {

class CpuSet {
 public:
  CpuSet() = default;
  static CpuSet of(std::initializer_list<int> cpus);
  static CpuSet range(int first, int last);  // inclusive

  // Parses the kernel list format used by /proc/<pid>/status
  // (Cpus_allowed_list), cpuset.cpus and sysfs. Empty string = empty set.
  // Rejects anything else (INVALID_ARGUMENT): "", "0-3,5", "7" are valid;
  // "3-1", "a", "1,,2", "-1" are not.
  static Result<CpuSet> parse_list(std::string_view text);

  void set(int cpu);
  void reset(int cpu);
  bool test(int cpu) const;
  int count() const;
  bool empty() const { return count() == 0; }
  // Largest member + 1 (0 if empty).
  int extent() const;

  CpuSet operator&(const CpuSet& other) const;
  CpuSet operator|(const CpuSet& other) const;
  CpuSet minus(const CpuSet& other) const;
  bool intersects(const CpuSet& other) const { return !(*this & other).empty(); }
  bool is_subset_of(const CpuSet& other) const { return minus(other).empty(); }
  bool operator==(const CpuSet& other) const;

  std::vector<int> to_vector() const;  // ascending
  std::string to_list() const;         // "0-3,8"

 private:
  void trim();
  std::vector<uint64_t> words_;
};

}  // namespace mlos
