// SPDX-License-Identifier: Apache-2.0
#include "daemon/policy_metrics.h"

#include <set>

namespace mlos::daemon {

using nlohmann::json;
using prometheus::BuildCounter;
using prometheus::BuildGauge;

namespace {

std::string key_of(const prometheus::Labels& labels) {
  std::string k;
  for (const auto& [name, value] : labels) k += name + "=" + value + ";";
  return k;
}

double number(const json& j, const char* key) { return j.contains(key) && j[key].is_number() ? j[key].get<double>() : 0; }

}  // namespace

PolicyMetrics::PolicyMetrics(prometheus::Registry& r)
    : up_(BuildGauge().Name("mlos_policy_up").Help("1 for the state a loaded policy module is in").Register(r)),
      jobs_(BuildGauge().Name("mlos_policy_jobs").Help("Jobs using the policy").Register(r)),
      resident_(BuildGauge()
                    .Name("mlos_policy_host_resident_bytes")
                    .Help("Resident memory of the policy's host process")
                    .Register(r)),
      failures_(BuildCounter()
                    .Name("mlos_policy_failures_total")
                    .Help("Crashes, hangs and protocol errors of the policy's host")
                    .Register(r)),
      restarts_(BuildCounter().Name("mlos_policy_restarts_total").Help("Restarts of the policy's host").Register(r)),
      actions_(BuildCounter()
                   .Name("mlos_policy_actions_total")
                   .Help("Actions the policy asked for, by kind and outcome (applied or refused)")
                   .Register(r)),
      ticks_(BuildCounter().Name("mlos_policy_ticks_total").Help("Ticks the policy answered").Register(r)),
      tick_seconds_(BuildGauge()
                        .Name("mlos_policy_tick_seconds")
                        .Help("Time from sending a tick to its answer (last, max, mean)")
                        .Register(r)) {}

void PolicyMetrics::count(prometheus::Family<prometheus::Counter>& family, const prometheus::Labels& labels,
                          double total) {
  auto& mine = series_[labels.at("policy")];
  const std::string key = "c:" + key_of(labels);
  auto it = mine.find(key);
  if (it != mine.end() && total < it->second.seen) {  // loaded again: a fresh series
    family.Remove(&family.Add(labels));
    mine.erase(it);
    it = mine.end();
  }
  if (it == mine.end()) it = mine.emplace(key, Series{&family, nullptr, labels, 0}).first;
  family.Add(labels).Increment(total - it->second.seen);
  it->second.seen = total;
}

void PolicyMetrics::drop(const std::string& policy) {
  auto it = series_.find(policy);
  if (it == series_.end()) return;
  for (auto& [key, s] : it->second) {
    if (s.counter_family) s.counter_family->Remove(&s.counter_family->Add(s.labels));
    if (s.gauge_family) s.gauge_family->Remove(&s.gauge_family->Add(s.labels));
  }
  series_.erase(it);
}

void PolicyMetrics::update(const json& loaded) {
  std::set<std::string> present;
  for (const json& p : loaded) {
    const std::string name = p.value("name", "");
    present.insert(name);
    auto& mine = series_[name];
    auto gauge = [&](prometheus::Family<prometheus::Gauge>& family, const prometheus::Labels& labels, double v) {
      mine.emplace("g:" + key_of(labels), Series{nullptr, &family, labels, 0});
      family.Add(labels).Set(v);
    };
    for (const char* state : {"starting", "running", "failed"}) {
      gauge(up_, {{"policy", name}, {"state", state}}, p.value("state", "") == state ? 1 : 0);
    }
    gauge(jobs_, {{"policy", name}}, p.contains("jobs") ? static_cast<double>(p["jobs"].size()) : 0);
    gauge(resident_, {{"policy", name}}, number(p, "host_resident_bytes"));
    count(failures_, {{"policy", name}}, number(p, "failures"));
    count(restarts_, {{"policy", name}}, number(p, "restarts"));
    count(ticks_, {{"policy", name}}, number(p, "ticks"));
    for (const char* outcome : {"applied", "refused"}) {
      const json& by_kind = p.value(std::string("actions_") + outcome, json::object());
      for (const auto& [kind, n] : by_kind.items()) {
        count(actions_, {{"policy", name}, {"kind", kind}, {"outcome", outcome}}, n.is_number() ? n.get<double>() : 0);
      }
    }
    const json& t = p.value("tick_seconds", json::object());
    for (const char* stat : {"last", "max", "mean"}) gauge(tick_seconds_, {{"policy", name}, {"stat", stat}}, number(t, stat));
  }
  std::vector<std::string> gone;
  for (const auto& [name, s] : series_) {
    if (!present.count(name)) gone.push_back(name);
  }
  for (const auto& name : gone) drop(name);
}

}  // namespace mlos::daemon
