/* SPDX-License-Identifier: Apache-2.0 */
// Where mlosd's messages go: the systemd journal's native protocol
// (sd_journal_sendv(3): a priority and structured fields per message, so
// `journalctl -u mlosd JOB_ID=7` and `-p warning` work), or stderr.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "mlos/log.h"

namespace mlos::os {

// True when stderr is the journal's stream for this service: systemd sets
// JOURNAL_STREAM to "<device>:<inode>" of the stream it connected, and a
// process whose stderr is that file may upgrade to the native protocol
// (systemd.exec(5), "JOURNAL_STREAM").
bool stderr_is_journal_stream();

// syslog priority of a log level: error 3, warning 4, info 6, debug 7.
int syslog_priority(mlos_log_level_t level);

class JournalLog {
 public:
  // `identifier`: SYSLOG_IDENTIFIER of every message ("mlosd").
  // `use_journal`: send through the journal socket; false: stderr only.
  // Without journald's socket, stderr, with one line saying so.
  JournalLog(std::string identifier, bool use_journal);

  // One message. Fields whose names journald would refuse are dropped (see
  // daemon/event_log.h for the rule). If the journal refuses the message
  // (no socket: journald is not running), it goes to stderr instead, and
  // so do later ones, with one line saying so. On stderr a message is one
  // line: the control characters of the message and of field values are
  // escaped (core/control_escape.h); the journal gets them as they are.
  void write(mlos_log_level_t level, const std::string& message,
             const std::vector<std::pair<std::string, std::string>>& fields);

  bool using_journal() const { return use_journal_; }

 private:
  void write_stderr(mlos_log_level_t level, const std::string& message,
                    const std::vector<std::pair<std::string, std::string>>& fields);

  std::string identifier_;
  bool use_journal_;
};

// "message [A=1 B=x]": how a message with fields reads on stderr.
std::string message_with_fields(const std::string& message,
                                const std::vector<std::pair<std::string, std::string>>& fields);

// A field name journald accepts: 1-64 of [A-Z0-9_], not starting with '_'
// or a digit.
bool valid_journal_field_name(const std::string& name);

}  // namespace mlos::os
