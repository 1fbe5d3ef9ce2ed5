/* SPDX-License-Identifier: Apache-2.0 */
// mlosd's configuration: a JSON file (every key optional) overridden by
// command-line flags. Validated whole: an unknown key, a wrong type or an
// out-of-range value rejects the config with a message naming it, before
// the daemon touches anything. See docs/daemon.md.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/memory_pressure.h"
#include "core/status.h"
#include "core/phase_weights.h"
#include "daemon/policy_config.h"
#include "daemon/user_quotas.h"

namespace mlos::daemon {

struct DaemonConfig {
  std::string socket = "/run/mlos/mlosd.sock";
  mode_t socket_mode = 0666;         // who may connect; changes are still owner-only
  std::string state_dir = "/var/lib/mlos";
  std::string cgroups = "auto";      // auto | v1 | v2 | none
  std::string cgroup_base = "mlos";
  // The embedded engine's runtime directory whose claims.json mlosd adopts
  // (root's default, where `mlos run` and the library write when mlosd is
  // down); "" follows none.
  std::string ledger_dir = "/run/mlos";
  // Exclusive CPUs kept from every other process (daemon/confinement.h):
  // "node" (the root cgroup's processes and every other top-level cgroup),
  // "off", or a list of cgroups (relative paths) to narrow; in the file,
  // "confine" is "node", "off" or that list.
  std::string confine = "node";
  std::vector<std::string> confine_cgroups;
  // Whose exclusive jobs confine others besides root's: members of this
  // group; "*" for every user (their exclusive-CPU quota bounds them), ""
  // for root only.
  std::string confine_group = "mlos";
  // Cgroups other managers own (relative paths; a process in one of them or
  // below): a job whose owner sits there stays there, in place of getting a
  // cgroup of mlosd's, so the kubelet's or Slurm's limits and accounting
  // keep covering it (docs/cluster.md). The defaults are Kubernetes'
  // (cgroupfs and systemd drivers) and Slurm's (v1 and v2 layouts).
  std::vector<std::string> stay_in_cgroups = {"kubepods", "kubepods.slice", "slurm", "system.slice/slurmstepd.scope"};
  // The CPUs mlosd manages: "affinity" (the CPUs it may run on itself when
  // it starts) or "root-cgroup" (the root cgroup's effective cpuset: every
  // CPU of the node, for an mlosd kept off some of them, as a Burstable
  // DaemonSet pod is kept off Guaranteed pods' CPUs by the kubelet).
  std::string node_cpus = "affinity";
  // Where mlosd's messages go: "journal" (the journal's native protocol,
  // with priorities and fields such as JOB_ID), "stderr", or "auto": the
  // journal when stderr is connected to it (started by systemd), else
  // stderr.
  std::string log = "auto";
  std::string metrics_listen = "127.0.0.1:9464";  // "" disables the HTTP endpoint
  std::string metrics_textfile;      // node_exporter textfile path, "" for none
  int sample_interval_ms = 100;      // phase pages, liveness, CPU weights
  int metrics_interval_ms = 1000;    // cgroup usage and metrics
  int max_clients = 1024;
  // A connection that sends nothing for this long is closed (clients
  // reconnect on their next call), so idle connections cannot hold the
  // daemon's slots or descriptors.
  int client_idle_timeout_ms = 60000;
  UserQuotas quotas;
  PhaseWeights policy = PhaseWeights::defaults();
  nlohmann::json arbitration = nlohmann::json::object();  // as given, for --check-config
  // Memory-pressure thresholds for jobs that give none (see
  // docs/memory-pressure.md); the key "memory_pressure" takes the fields of
  // thresholds_to_json().
  MemoryThresholds memory_thresholds;
  // Policy modules (docs/policies.md). phase-weights gets "arbitration" as
  // its node config unless "policies.config" names it.
  DaemonPolicyConfig policies;

  // Applies the keys of `config` over the current values; nothing changes
  // if any is refused. `refused_key` (may be null) receives the top-level
  // key whose value was refused, so a file's error can say where it is.
  Status merge(const nlohmann::json& config, std::string* refused_key = nullptr);
  // A JSON file, comments allowed; errors read "<path>:<line>:<column>:
  // what", the position of the refused key (or of the syntax error).
  static Result<DaemonConfig> from_file(const std::string& path);
  // The effective configuration, in the file's format.
  nlohmann::json to_json() const;
  // What a valid config does that its writer may not mean, one sentence
  // each: quotas.root_reserved_connections not below max_clients (only
  // root can connect); a policy host or directory beside mlosd's binary
  // that failed the trust test while the defaults are in use
  // (daemon_policy_paths()). Valid all the same (a root-only mlosd is a
  // choice; the configured prefix's paths serve).
  std::vector<std::string> warnings() const;
};

}  // namespace mlos::daemon
