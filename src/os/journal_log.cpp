// SPDX-License-Identifier: Apache-2.0
#include "os/journal_log.h"

#include <sys/stat.h>
#include <sys/uio.h>
#include <syslog.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/control_escape.h"

#define SD_JOURNAL_SUPPRESS_LOCATION  // CODE_FILE/LINE of this wrapper would say nothing
#include <systemd/sd-journal.h>

namespace mlos::os {

namespace {
constexpr const char* kJournalSocket = "/run/systemd/journal/socket";  // where libsystemd sends
}  // namespace

bool stderr_is_journal_stream() {
  const char* stream = std::getenv("JOURNAL_STREAM");
  if (stream == nullptr) return false;
  unsigned long long dev = 0, ino = 0;
  if (std::sscanf(stream, "%llu:%llu", &dev, &ino) != 2) return false;
  struct stat st {};
  if (fstat(STDERR_FILENO, &st) != 0) return false;
  return static_cast<unsigned long long>(st.st_dev) == dev && static_cast<unsigned long long>(st.st_ino) == ino;
}

int syslog_priority(mlos_log_level_t level) {
  switch (level) {
    case MLOS_LOG_ERROR: return LOG_ERR;
    case MLOS_LOG_WARN: return LOG_WARNING;
    case MLOS_LOG_INFO: return LOG_INFO;
    default: return LOG_DEBUG;
  }
}

bool valid_journal_field_name(const std::string& name) {
  if (name.empty() || name.size() > 64 || name[0] == '_' || (name[0] >= '0' && name[0] <= '9')) return false;
  for (char c : name) {
    if (!((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

std::string message_with_fields(const std::string& message,
                                const std::vector<std::pair<std::string, std::string>>& fields) {
  if (fields.empty()) return message;
  std::string out = message + " [";
  for (size_t i = 0; i < fields.size(); ++i) out += (i ? " " : "") + fields[i].first + "=" + fields[i].second;
  return out + "]";
}

JournalLog::JournalLog(std::string identifier, bool use_journal)
    : identifier_(std::move(identifier)), use_journal_(use_journal) {
  // sd_journal_sendv drops messages silently, returning success, when
  // journald's socket does not exist: look before trusting it.
  if (use_journal_ && access(kJournalSocket, W_OK) != 0) {
    use_journal_ = false;
    write_stderr(MLOS_LOG_WARN, std::string("no journal at ") + kJournalSocket + " (" + strerror(errno) +
                                    "); logging to stderr", {});
  }
}

void JournalLog::write(mlos_log_level_t level, const std::string& message,
                       const std::vector<std::pair<std::string, std::string>>& fields) {
  if (use_journal_) {
    // "NAME=value" strings; values may hold any byte, newlines included
    // (sd_journal_sendv frames them).
    std::vector<std::string> items;
    items.reserve(fields.size() + 3);
    items.push_back("MESSAGE=" + message);
    items.push_back("PRIORITY=" + std::to_string(syslog_priority(level)));
    items.push_back("SYSLOG_IDENTIFIER=" + identifier_);
    for (const auto& [name, value] : fields) {
      if (valid_journal_field_name(name)) items.push_back(name + "=" + value);
    }
    std::vector<iovec> iov(items.size());
    for (size_t i = 0; i < items.size(); ++i) iov[i] = {items[i].data(), items[i].size()};
    const int r = sd_journal_sendv(iov.data(), static_cast<int>(iov.size()));
    if (r >= 0) return;
    use_journal_ = false;
    write_stderr(MLOS_LOG_WARN, std::string("the journal refused a message (") + strerror(-r) +
                                    "); logging to stderr from now on", {});
  }
  write_stderr(level, message, fields);
}

void JournalLog::write_stderr(mlos_log_level_t level, const std::string& message,
                              const std::vector<std::pair<std::string, std::string>>& fields) {
  static const char* const names[] = {"error", "warning", "info", "debug"};
  // Escaped: a message and its fields carry users' text (a job's label),
  // whose "\n" would forge a line and whose ESC would reach the terminal of
  // whoever reads the log. The journal path above frames them instead.
  std::string line = identifier_ + ": " + names[level >= 0 && level <= 3 ? level : 0] + ": " +
                     escape_controls(message_with_fields(message, fields)) + "\n";
  // One write per line (no stdio buffering): lines of concurrent writers
  // do not interleave, and nothing is lost at a crash.
  (void)!::write(STDERR_FILENO, line.data(), line.size());
}

}  // namespace mlos::os
