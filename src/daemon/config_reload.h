/* SPDX-License-Identifier: Apache-2.0 */
// What a reload (SIGHUP, `systemctl reload mlosd`) may change in a running
// mlosd. The file is validated whole first: a config that fails to load
// changes nothing. Of a valid one, the keys that only shape what happens
// from now on apply at once (kReloadableKeys); the rest (sockets, paths,
// cgroup layout, intervals, policy hosts' settings) need a restart and
// keep their running values, and the reload says which ones differed.
#pragma once

#include <string>
#include <vector>

#include "daemon/daemon_config.h"

namespace mlos::daemon {

// Top-level keys that apply at once; of "policies", only "defaults" does.
extern const std::vector<std::string> kReloadableKeys;

struct ReloadPlan {
  DaemonConfig next;                      // the running config with the reloadable keys taken from the file
  std::vector<std::string> applied;       // reloadable keys whose value changed
  std::vector<std::string> need_restart;  // changed keys kept at their running value ("policies.host", ...)
};

ReloadPlan plan_reload(const DaemonConfig& running, const DaemonConfig& fresh);

}  // namespace mlos::daemon
