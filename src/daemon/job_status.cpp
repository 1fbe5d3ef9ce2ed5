// SPDX-License-Identifier: Apache-2.0
#include "daemon/job_status.h"

#include "core/memory_pressure_json.h"
#include "daemon/cluster_ids.h"

namespace mlos::daemon {

using nlohmann::json;

namespace {

const char* phase_label(bool marked, mlos_training_phase_t phase) {
  return marked ? mlos_training_phase_name(phase) : "UNMARKED";
}

}  // namespace

std::optional<PhaseSnapshot> phase_snapshot(const LiveJob& j, uint64_t now_ns) {
  if (j.page) {
    auto s = PhasePageReader(j.page->data()).read();
    if (s && s->set_phase_calls > 0) return s;
    return std::nullopt;
  }
  if (!j.marked) return std::nullopt;
  PhaseSnapshot s;
  s.phase = j.explicit_profile.current();
  s.phase_ns = j.explicit_profile.nanoseconds(now_ns);
  s.entries = j.explicit_profile.entries();
  s.set_phase_calls = j.explicit_profile.calls();
  return s;
}

JobSample sample_job(const LiveJob& j, uint64_t now_ns, const std::optional<os::CgroupUsage>& usage) {
  JobSample s;
  s.job_id = j.record.id;
  s.label = j.record.label;
  s.uid = j.record.uid;
  s.exclusive = j.record.exclusive;
  s.cpus = j.record.cpus.count();
  const ClusterIds ids = cluster_ids_of(j.record.origin_cgroup);
  s.pod_uid = ids.pod_uid;
  s.slurm_job_id = ids.slurm_job_id;
  s.phase = j.phase;
  s.gpus = j.record.gpus;
  s.gpus_exclusive = j.record.gpus_exclusive;
  s.gpu_share_file = j.record.gpu_share_file;
  s.owner = j.record.owner;
  if (auto snap = phase_snapshot(j, now_ns)) {
    s.phase = snap->phase;
    s.activity = snap->activity;
    for (int p = 0; p < MLOS_TRAINING_PHASE_COUNT; ++p) {
      // A page records completed visits (the running one is added); the
      // phases sent over the socket are counted up to now already.
      const uint64_t ns = j.page ? snap->nanoseconds_at(p, now_ns) : snap->phase_ns[p];
      s.phase_seconds[p] = static_cast<double>(ns) / 1e9;
      s.phase_entries[p] = snap->entries[p];
    }
  } else if (j.page) {
    // No set_phase yet, but collectives and checkpoints are counted all
    // the same.
    if (auto raw = PhasePageReader(j.page->data()).read()) s.activity = raw->activity;
  }
  if (usage) {
    if (usage->cpu_usage_ns) s.cpu_seconds = static_cast<double>(*usage->cpu_usage_ns) / 1e9;
    if (usage->memory_stall_us) s.memory_stall_seconds = static_cast<double>(*usage->memory_stall_us) / 1e6;
    s.memory_bytes = usage->memory_bytes;
  }
  if (j.record.memory_bytes > 0) s.memory_limit_bytes = j.record.memory_bytes;
  if (j.memory) {
    s.memory_pressure_level = static_cast<int>(j.memory->report().level);
    s.memory_pressure_changes = j.memory->report().sequence;
  }
  return s;
}

json job_status_json(const LiveJob& j, const JobSample& s, const std::string& cgroup,
                     const std::vector<std::string>& policies, json advice) {
  json seconds = json::object(), entries = json::object();
  for (int p = 0; p < MLOS_TRAINING_PHASE_COUNT; ++p) {
    const char* name = mlos_training_phase_name(static_cast<mlos_training_phase_t>(p));
    seconds[name] = s.phase_seconds[p];
    entries[name] = s.phase_entries[p];
  }
  json job{{"job", j.record.id},
           {"label", j.record.label},
           {"pid", j.record.owner.pid},
           {"uid", j.record.uid},
           {"cpus", j.record.cpus.to_list()},
           {"mems", j.record.mems.to_list()},
           {"exclusive", j.record.exclusive},
           {"memory_bytes", j.record.memory_bytes},
           {"priority", j.record.priority},
           {"created_unix", j.record.created_unix},
           {"phase", phase_label(j.marked, s.phase)},
           {"phase_source", j.page ? "page" : "socket"},
           {"phase_seconds", seconds},
           {"phase_entries", entries},
           {"cgroup", cgroup},
           {"nested_in", j.record.parent == 0 ? json(nullptr) : json(j.record.parent)},
           {"host", j.record.host == 0 ? json(nullptr) : json(j.record.host)},
           {"envelope", j.record.envelope},
           {"gpus", j.record.gpus},
           {"gpus_exclusive", j.record.gpus_exclusive},
           {"exclusive_scope", !j.record.exclusive ? json(nullptr) : json(j.record.confines ? "node" : "mlos")},
           {"source", j.record.ledger_claim != 0 ? "ledger" : "daemon"},
           {"cpu_weight", j.weight},
           {"policies", policies},
           {"advice", std::move(advice)},
           {"policy_report", j.policy.requests().empty() ? json(nullptr) : j.policy.requests().report()},
           {"notes", j.notes}};
  if (j.memory) job["memory_pressure"] = report_to_json(j.memory->report());
  job["cpu_seconds"] = s.cpu_seconds ? json(*s.cpu_seconds) : json(nullptr);
  job["memory_used_bytes"] = s.memory_bytes ? json(*s.memory_bytes) : json(nullptr);
  job["memory_stall_seconds"] = s.memory_stall_seconds ? json(*s.memory_stall_seconds) : json(nullptr);
  return job;
}

json gpus_status_json(const Topology& topology, const GpuUsage& held) {
  json gpus = json::array();
  for (const auto& g : topology.gpus) {
    if (g.uuid.empty()) continue;
    gpus.push_back({{"uuid", g.uuid},
                    {"index", g.nvml_index},
                    {"name", g.name},
                    {"pci_bus_id", g.pci_busid},
                    {"numa_node", g.numa_node},
                    {"memory_total_bytes", g.memory_total},
                    {"exclusive", held.exclusive.count(g.uuid) > 0},
                    {"shared_claims", held.load(g.uuid)}});
  }
  return gpus;
}

}  // namespace mlos::daemon
