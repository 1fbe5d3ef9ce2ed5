// SPDX-License-Identifier: Apache-2.0
#include "os/service_notify.h"

#include <time.h>

#include <cstdlib>

#include <systemd/sd-daemon.h>

namespace mlos::os {

namespace {

// Status lines are one line: a newline would start a new assignment.
std::string one_line(std::string s) {
  for (char& c : s) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return s;
}

}  // namespace

ServiceNotifier ServiceNotifier::from_environment() {
  ServiceNotifier n;
  const char* socket = std::getenv("NOTIFY_SOCKET");
  n.enabled_ = socket != nullptr && socket[0] != '\0';
  uint64_t usec = 0;
  // > 0 only when WATCHDOG_USEC is set and WATCHDOG_PID (if set) is us.
  if (sd_watchdog_enabled(0, &usec) > 0 && usec > 0) n.watchdog_usec_ = usec;
  return n;
}

void ServiceNotifier::send(const std::string& state) const {
  if (enabled_) (void)sd_notify(0, state.c_str());
}

void ServiceNotifier::ready(const std::string& status) const { send("READY=1\nSTATUS=" + one_line(status)); }

void ServiceNotifier::status(const std::string& status) const { send("STATUS=" + one_line(status)); }

void ServiceNotifier::reloading() const {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  const uint64_t usec = static_cast<uint64_t>(ts.tv_sec) * 1000000u + static_cast<uint64_t>(ts.tv_nsec) / 1000u;
  send("RELOADING=1\nMONOTONIC_USEC=" + std::to_string(usec) + "\nSTATUS=reloading the configuration");
}

void ServiceNotifier::stopping(const std::string& status) const { send("STOPPING=1\nSTATUS=" + one_line(status)); }

void ServiceNotifier::keep_alive(uint64_t now_usec) {
  if (!watchdog_usec_) return;
  if (last_keep_alive_usec_ != 0 && now_usec - last_keep_alive_usec_ < *watchdog_usec_ / 2) return;
  last_keep_alive_usec_ = now_usec;
  // Sent even without NOTIFY_SOCKET's check above: sd_notify is a no-op
  // then anyway.
  (void)sd_notify(0, "WATCHDOG=1");
}

}  // namespace mlos::os
