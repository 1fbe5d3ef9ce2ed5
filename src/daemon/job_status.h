/* SPDX-License-Identifier: Apache-2.0 */
// What mlosd says about a job: its phase as its page or its socket calls
// tell it, its sample (the figures metrics, policies and status read) and
// its entry in a status reply; and the node's GPUs as the book holds them.
// Pure over what it is given: the caller reads the cgroup and the clock.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/gpu_placement.h"
#include "core/phase_page.h"
#include "core/topology.h"
#include "daemon/job_metrics.h"
#include "daemon/live_job.h"
#include "os/cgroup/cgroup_driver.h"

namespace mlos::daemon {

// The job's phases so far (from its page, or from the phases it sent over
// the socket); nullopt while it has marked none.
std::optional<PhaseSnapshot> phase_snapshot(const LiveJob& job, uint64_t now_ns);

// The job's figures at `now_ns`; `usage`: its own cgroup's (nullopt: none
// of its own, or unreadable).
JobSample sample_job(const LiveJob& job, uint64_t now_ns, const std::optional<os::CgroupUsage>& usage);

// The job's entry in a status reply (docs/protocol.md, "status"):
// `cgroup` the one its process is in, `policies` the names it uses,
// `advice` what they advise.
nlohmann::json job_status_json(const LiveJob& job, const JobSample& sample, const std::string& cgroup,
                               const std::vector<std::string>& policies, nlohmann::json advice);

// The GPUs jobs can claim and who holds them (docs/gpu.md).
nlohmann::json gpus_status_json(const Topology& topology, const GpuUsage& held);

}  // namespace mlos::daemon
