// SPDX-License-Identifier: Apache-2.0
#include "core/profile_report.h"

#include <cstdarg>
#include <cstdio>

#include "core/human_bytes.h"
#include "core/phase_policy.h"

namespace mlos {

namespace {

std::string line(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string line(const char* fmt, ...) {
  char buf[256];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return std::string(buf) + "\n";
}


}  // namespace

std::string format_profile(const ProfileFigures& f) {
  uint64_t total = 0;
  for (uint64_t ns : f.phase_ns) total += ns;
  const double total_s = static_cast<double>(total) / 1e9;
  auto share = [&](uint64_t ns) { return total == 0 ? 0.0 : 100.0 * static_cast<double>(ns) / static_cast<double>(total); };
  std::string out = line("mlos profile: claim %llu, %d CPU%s, %.2f s", static_cast<unsigned long long>(f.claim_id),
                         f.num_cpus, f.num_cpus == 1 ? "" : "s", total_s);
  out += line("  %-16s %9s %7s %8s", "phase", "seconds", "share", "entries");
  for (int p = 0; p < MLOS_TRAINING_PHASE_COUNT; ++p) {
    out += line("  %-16s %9.2f %6.1f%% %8llu", PhasePolicy::name(p), static_cast<double>(f.phase_ns[p]) / 1e9,
                share(f.phase_ns[p]), static_cast<unsigned long long>(f.entries[p]));
  }
  if (f.collective_calls > 0) {
    out += line("  %-16s %9.2f %6.1f%% %8llu calls, %s", "(communication)",
                static_cast<double>(f.communication_ns) / 1e9, share(f.communication_ns),
                static_cast<unsigned long long>(f.collective_calls), human_bytes(f.collective_bytes).c_str());
  }
  // Not through line(): the reason can be longer than its buffer.
  if (!f.tuning.empty()) out += "  tuning: " + f.tuning + (f.tuning_reason.empty() ? "" : " (" + f.tuning_reason + ")") + "\n";
  return out;
}

}  // namespace mlos
