/* SPDX-License-Identifier: Apache-2.0 */
// Prometheus series of the loaded policy modules, from PolicyHosts::status():
//
//   mlos_policy_up{policy,state}                        1 for its state (starting, running, failed)
//   mlos_policy_jobs{policy}                            jobs using it
//   mlos_policy_host_resident_bytes{policy}             its host's resident memory
//   mlos_policy_failures_total{policy}                  crashes, hangs, protocol errors
//   mlos_policy_restarts_total{policy}
//   mlos_policy_actions_total{policy,kind,outcome}      outcome: applied | refused
//   mlos_policy_ticks_total{policy}
//   mlos_policy_tick_seconds{policy,stat}               stat: last | max | mean
//
// A policy's series go when it is unloaded; totals that went down (a
// policy unloaded and loaded again) start fresh series. Few series (one set
// per loaded policy): updated on the daemon's loop, prometheus-cpp's
// families lock themselves.
#pragma once

#include <map>
#include <string>

#include <nlohmann/json.hpp>
#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

namespace mlos::daemon {

class PolicyMetrics {
 public:
  explicit PolicyMetrics(prometheus::Registry& registry);
  // `loaded`: the array PolicyHosts::status() returns.
  void update(const nlohmann::json& loaded);

 private:
  // Brings counter `labels` of `family` to `total`.
  void count(prometheus::Family<prometheus::Counter>& family, const prometheus::Labels& labels, double total);
  void drop(const std::string& policy);

  prometheus::Family<prometheus::Gauge>& up_;
  prometheus::Family<prometheus::Gauge>& jobs_;
  prometheus::Family<prometheus::Gauge>& resident_;
  prometheus::Family<prometheus::Counter>& failures_;
  prometheus::Family<prometheus::Counter>& restarts_;
  prometheus::Family<prometheus::Counter>& actions_;
  prometheus::Family<prometheus::Counter>& ticks_;
  prometheus::Family<prometheus::Gauge>& tick_seconds_;
  // Every series made, by policy, to remove them with it.
  struct Series {
    prometheus::Family<prometheus::Counter>* counter_family = nullptr;
    prometheus::Family<prometheus::Gauge>* gauge_family = nullptr;
    prometheus::Labels labels;
    double seen = 0;
  };
  std::map<std::string, std::map<std::string, Series>> series_;  // policy -> key -> series
};

}  // namespace mlos::daemon
