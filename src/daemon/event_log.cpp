// SPDX-License-Identifier: Apache-2.0
#include "daemon/event_log.h"

#include "daemon/job_registry.h"
#include "os/journal_log.h"
#include "os/log_sink.h"

namespace mlos::daemon {

namespace {

EventSink& current_sink() {
  static auto* sink = new EventSink;  // leaked: events may be logged during static destruction
  return *sink;
}

}  // namespace

void set_event_sink(EventSink sink) { current_sink() = std::move(sink); }

void log_event(mlos_log_level_t level, const std::string& message, const LogFields& fields) {
  const EventSink& sink = current_sink();
  if (sink) {
    sink(level, message, fields);
  } else {
    log_message(level, os::message_with_fields(message, fields));
  }
}

LogFields job_fields(const JobRecord& job) {
  return {{"JOB_ID", std::to_string(job.id)},
          {"UID", std::to_string(job.uid)},
          {"LABEL", job.label},
          {"CPUS", job.cpus.to_list()},
          {"OWNER_PID", std::to_string(job.owner.pid)}};
}

}  // namespace mlos::daemon
