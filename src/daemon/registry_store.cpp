// SPDX-License-Identifier: Apache-2.0
#include "daemon/registry_store.h"

#include <sys/stat.h>

#include <algorithm>

namespace mlos::daemon {

namespace {

uint64_t file_size(const std::string& path) {
  struct stat st{};
  return stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

}  // namespace

RegistryStore::RegistryStore(const std::string& dir)
    : snapshot_(dir, "registry.json", "mlosd-registry", JobRegistry::kSchemaVersion),
      journal_(dir + "/registry.journal") {}

Result<std::optional<JobRegistry>> RegistryStore::load() {
  auto loaded = snapshot_.load();
  if (!loaded) return loaded.error();
  auto entries = journal_.read();
  if (!entries) return entries.error();
  if (!loaded->has_value() && entries->empty()) return std::optional<JobRegistry>();
  JobRegistry registry;
  if (loaded->has_value()) {
    auto parsed = JobRegistry::from_json(**loaded);
    if (!parsed) return make_error(MLOS_ERR_STATE_CORRUPT, path() + ": " + parsed.error().message);
    registry = std::move(*parsed);
  }
  if (Status s = registry.replay(*entries); !s) {
    return make_error(MLOS_ERR_STATE_CORRUPT, journal_path() + ": " + s.error().message);
  }
  snapshot_bytes_ = file_size(path());
  return std::optional<JobRegistry>(std::move(registry));
}

Status RegistryStore::put(const JobRecord& record, uint64_t next_id) {
  return journal_.append(JobRegistry::put_entry(record, next_id));
}

Status RegistryStore::remove(const std::vector<uint64_t>& ids) {
  if (ids.empty()) return Status::Ok();
  return journal_.append(JobRegistry::remove_entry(ids));
}

Status RegistryStore::compact(const JobRegistry& all) {
  // The snapshot first: should the journal not be emptied after it, the
  // next load replays it over a snapshot that already holds its changes.
  if (Status s = snapshot_.save(all.to_json()); !s) return s;
  snapshot_bytes_ = file_size(path());
  return journal_.clear();
}

bool RegistryStore::compaction_due() const {
  return journal_.size() > std::max<uint64_t>(256 * 1024, 2 * snapshot_bytes_);
}

}  // namespace mlos::daemon
