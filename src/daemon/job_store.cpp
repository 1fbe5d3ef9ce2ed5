// SPDX-License-Identifier: Apache-2.0
#include "daemon/job_store.h"

#include "daemon/event_log.h"
#include "os/log_sink.h"

namespace mlos::daemon {

Status JobStore::put(const JobRecord& record, uint64_t next_id, const AllJobs& all) {
  Status s = files_->put(record, next_id);
  if (s) compact_if_due(all);
  return s;
}

void JobStore::put_later(const JobRecord& record, uint64_t next_id) {
  if (Status s = files_->put(record, next_id); !s) behind_ = true;
}

Status JobStore::remove(const std::vector<uint64_t>& ids, const AllJobs& all) {
  Status s = files_->remove(ids);
  if (s) {
    compact_if_due(all);
  } else {
    behind_ = true;
    log_message(MLOS_LOG_WARN, "registry: could not record " + std::to_string(ids.size()) +
                                   " job(s) as gone, retrying: " + s.error().describe());
  }
  return s;
}

void JobStore::compact_if_due(const AllJobs& all) {
  if (!behind_ && !files_->compaction_due()) return;
  // Runs in the event loop: how long it held every client is logged.
  const uint64_t began = now_ns_();
  const JobRegistry registry = all();
  if (Status s = write_snapshot(registry); !s) {
    log_message(MLOS_LOG_WARN, "registry compaction failed (the journal keeps every change): " +
                                   s.error().describe());
    return;
  }
  const uint64_t took_us = (now_ns_() - began) / 1000;
  const std::string jobs = std::to_string(registry.jobs.size());
  log_event(MLOS_LOG_INFO, "registry compacted: " + jobs + " jobs in " + std::to_string(took_us) + " us",
            {{"MLOS_EVENT", "compacted"}, {"JOBS", jobs}, {"PAUSE_US", std::to_string(took_us)}});
}

Status JobStore::write_snapshot(const JobRegistry& all) {
  Status s = files_->compact(all);
  if (s) behind_ = false;
  return s;
}

}  // namespace mlos::daemon
