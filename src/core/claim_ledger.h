/* SPDX-License-Identifier: Apache-2.0 */
// The node's record of CPU claims (the "ledger"), as a value: parsing and
// printing its JSON form, pruning dead owners, and turning it into the
// CpuUsage a new request competes with. Pure logic; the file, its lock and
// process liveness checks live in os/.
//
// File format (schema_version 1; 2 while a claim holds GPUs):
//   {"schema_version":1,"next_id":7,"boot_id":"<kernel boot id>",
//    "claims":[{"id":3,"pid":123,
//     "start_time":456,"uid":0,"cpus":"0-3","exclusive":true,
//     "envelope":false,"numa_node":0,"memory_bytes":0,"label":"",
//     "created_unix":1700000000,
//     "gpus":["GPU-..."],"gpus_exclusive":true}]}   (gpus only when it has some)
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/cpu_set.h"
#include "core/placement.h"
#include "core/status.h"

namespace mlos {

// A process identity that survives PID reuse: the PID plus its start time
// (field 22 of /proc/<pid>/stat, clock ticks since boot).
struct ProcessId {
  int pid = 0;
  uint64_t start_time = 0;
  bool operator==(const ProcessId&) const = default;
};

struct Claim {
  uint64_t id = 0;
  ProcessId owner;
  uint32_t uid = 0;
  CpuSet cpus;
  bool exclusive = false;
  // An envelope claim (made by `mlos run`) bounds its owner and the owner's
  // descendants: their own requests nest inside it instead of competing.
  bool envelope = false;
  int numa_node = 0;
  uint64_t memory_bytes = 0;
  std::string label;
  int64_t created_unix = 0;
  std::vector<std::string> gpus;  // UUIDs of the GPUs it holds
  bool gpus_exclusive = false;
};

struct ClaimLedger {
  static constexpr int kSchemaVersion = 1;
  // Written instead while a claim holds GPUs: a library from before GPU
  // claims then refuses the ledger (STATE_CORRUPT, naming the version)
  // rather than rewriting it without them and so freeing the GPUs.
  static constexpr int kSchemaVersionWithGpus = 2;
  uint64_t next_id = 1;
  // /proc/sys/kernel/random/boot_id when last written: a ledger that
  // survived a reboot (persistent MLOS_RUNTIME_DIR) holds only dead claims,
  // and PID + start time could match a new process. "" = unknown.
  std::string boot_id;
  std::vector<Claim> claims;

  // STATE_CORRUPT with the reason if `json` is not a valid ledger (bad JSON,
  // wrong schema_version, bad field); "" parses as an empty ledger.
  static Result<ClaimLedger> parse(std::string_view json);
  // Never throws: bytes of a label that are not UTF-8 become U+FFFD.
  std::string serialize() const;

  // Removes claims whose owner `is_alive` rejects; returns them.
  std::vector<Claim> prune(const std::function<bool(const ProcessId&)>& is_alive);

  // Usage by every claim that competes with a request from a process whose
  // lineage (itself, then its ancestors) is `lineage`: all claims except
  // envelopes owned by a member of the lineage.
  CpuUsage usage_for(const std::vector<ProcessId>& lineage) const;

  // The envelope a request from `lineage` nests in: the one owned by the
  // nearest member of the lineage (itself first); nullptr if none.
  const Claim* envelope_of(const std::vector<ProcessId>& lineage) const;

  // Appends a claim with a fresh id; returns the id.
  uint64_t add(Claim claim);
  // true if a claim with `id` was removed.
  bool remove(uint64_t id);
  const Claim* find(uint64_t id) const;
};

}  // namespace mlos
