/* SPDX-License-Identifier: Apache-2.0 */
// mlosd's structured events: a message with fields (JOB_ID, UID, LABEL,
// PHASE, ...), for the lifecycle of jobs (granted, released, pruned) and of
// the daemon (ready, reloaded, stopping). mlosd points the sink at the
// journal (os/journal_log.h) or stderr at start; without a sink, events go
// to the library's log (os/log_sink.h) as "message [FIELD=value ...]", so
// code that logs events runs unchanged in tests.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "mlos/log.h"

namespace mlos::daemon {

struct JobRecord;

// Journal field names: upper-case letters, digits and '_', not starting
// with '_' (journald's rule; see systemd.journal-fields(7)).
using LogFields = std::vector<std::pair<std::string, std::string>>;
using EventSink = std::function<void(mlos_log_level_t, const std::string& message, const LogFields&)>;

// Sets where events go (null: the library's log). Called once at start,
// before the event loop; not synchronised with log_event.
void set_event_sink(EventSink sink);

void log_event(mlos_log_level_t level, const std::string& message, const LogFields& fields = {});

// JOB_ID, UID, LABEL, CPUS and OWNER_PID of a job.
LogFields job_fields(const JobRecord& job);

}  // namespace mlos::daemon
