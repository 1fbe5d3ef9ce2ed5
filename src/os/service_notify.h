/* SPDX-License-Identifier: Apache-2.0 */
// The service manager's side channel (sd_notify(3)): readiness, status
// text, reloading and stopping, and watchdog keep-alives. Inert when the
// process was not started with NOTIFY_SOCKET (no systemd, or Type=simple):
// every call is then a no-op.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace mlos::os {

class ServiceNotifier {
 public:
  // Reads NOTIFY_SOCKET and WATCHDOG_USEC/WATCHDOG_PID from the
  // environment (left in place: systemd accepts messages from the main
  // process only, NotifyAccess=main, so children that inherit them cannot
  // speak for mlosd).
  static ServiceNotifier from_environment();

  bool enabled() const { return enabled_; }
  // The watchdog period systemd expects keep-alives within (WatchdogSec=);
  // nullopt when there is no watchdog for this process.
  std::optional<uint64_t> watchdog_usec() const { return watchdog_usec_; }

  // READY=1 with a status line: the service is up (Type=notify), or back
  // up after a reload.
  void ready(const std::string& status) const;
  void status(const std::string& status) const;
  // RELOADING=1 with MONOTONIC_USEC (what Type=notify-reload expects; under
  // Type=notify systemd shows "reloading" until the next READY=1).
  void reloading() const;
  void stopping(const std::string& status) const;
  // WATCHDOG=1 when half the period has passed since the last one (call
  // it as often as you like from the loop whose liveness it vouches for).
  void keep_alive(uint64_t now_usec);

 private:
  void send(const std::string& state) const;

  bool enabled_ = false;
  std::optional<uint64_t> watchdog_usec_;
  uint64_t last_keep_alive_usec_ = 0;
};

}  // namespace mlos::os
