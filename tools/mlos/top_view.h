/* SPDX-License-Identifier: Apache-2.0 */
// `mlos top`: one screen of the daemon's state, and the CPU rates between
// two refreshes. Pure (the clock is passed in), so it is testable offline.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

namespace mlos::cli {

// CPU use of each job between consecutive status replies.
class CpuRateTracker {
 public:
  // Feeds the "jobs" array of a reply taken at `now_s` (monotonic seconds).
  // Returns job id -> CPU% (100 = one CPU busy the whole time) for the jobs
  // that had cpu_seconds both now and in the previous reply, under the same
  // job id and pid; the first call therefore returns nothing.
  std::map<uint64_t, double> update(const nlohmann::json& jobs, double now_s);

 private:
  struct Sample {
    int64_t pid;
    double cpu_seconds;
  };
  std::map<uint64_t, Sample> previous_;
  double previous_s_ = -1;
};

// The screen: a header (clock, daemon version, pid, uptime, clients,
// cgroups; CPUs, shared pool, exclusive CPUs, job count), a blank line, then
// a table JOB LABEL PID CPUS PHASE, the share (%) of each phase in the job's
// phase_seconds (IDLE DATA FWD BWD OPT CKPT), MEM used/limit, CPU% ("-"
// where unknown) and POLICIES (policy_view.h's job_policies). `clock` is the time shown ("HH:MM:SS"). Lines end in '\n'.
// A label's control characters are escaped (core/control_escape.h), as in
// `mlos status`: this is what `mlos top -b` prints.
std::string render_top(const nlohmann::json& reply, const std::map<uint64_t, double>& cpu_percent,
                       const std::string& clock);

}  // namespace mlos::cli
