/* SPDX-License-Identifier: Apache-2.0 */
// JobManager's durability: every change to a job is in the registry's
// journal before mlosd replies (daemon/registry_store.h), the snapshot is
// rewritten when the journal has outgrown it (the pause it costs the event
// loop logged, for bench/daemon_scale.py), and a removal that could not be
// written leaves the registry "behind": the next change or tick rewrites
// the snapshot instead of retrying the entry.
//
// A compaction needs every record: the callers pass how to list them
// (`all`), called only when a snapshot is written.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "daemon/job_registry.h"
#include "daemon/registry_store.h"

namespace mlos::daemon {

class JobStore {
 public:
  using AllJobs = std::function<JobRegistry()>;

  JobStore(std::shared_ptr<RegistryStore> files, std::function<uint64_t()> now_ns)
      : files_(std::move(files)), now_ns_(std::move(now_ns)) {}

  // The registry on disk (RegistryStore::load) and where it lives.
  Result<std::optional<JobRegistry>> load() { return files_->load(); }
  std::string path() const { return files_->path(); }

  // A job granted or changed, durable before the reply (the caller replies
  // with the error otherwise), then a compaction if one is due.
  Status put(const JobRecord& record, uint64_t next_id, const AllJobs& all);
  // A change nobody waits for (a job re-homed when another ended): if it
  // cannot be written the registry falls behind and catches up later.
  void put_later(const JobRecord& record, uint64_t next_id);
  // Jobs forgotten. They are gone already (their CPUs must not stay
  // booked), so a failure is logged and the registry falls behind.
  Status remove(const std::vector<uint64_t>& ids, const AllJobs& all);
  // A snapshot if the registry is behind or the journal outgrew it.
  void compact_if_due(const AllJobs& all);
  // Rewrites the snapshot and empties the journal (at start, and at a
  // clean stop so the next start reads one file).
  Status write_snapshot(const JobRegistry& all);
  bool behind() const { return behind_; }

 private:
  std::shared_ptr<RegistryStore> files_;
  std::function<uint64_t()> now_ns_;
  bool behind_ = false;  // a change could not be written: snapshot at the next chance
};

}  // namespace mlos::daemon
