// SPDX-License-Identifier: Apache-2.0
#include "tune/tuning_decision.h"

#include <algorithm>
#include <cstdio>

namespace mlos::tune {

namespace {

const CandidateRecord kNone;

const CandidateRecord& record_of(const std::map<std::string, CandidateRecord>& records, const std::string& name) {
  auto it = records.find(name);
  return it == records.end() ? kNone : it->second;
}

std::string figure(const std::string& name, const CandidateRecord& r) {
  char text[160];
  snprintf(text, sizeof text, "%s %.3g ms/step (%zu run%s)", name.c_str(), recent_median(r.step_ms),
           r.step_ms.size(), r.step_ms.size() == 1 ? "" : "s");
  return text;
}

}  // namespace

double recent_median(const std::vector<double>& step_ms) {
  if (step_ms.empty()) return 0;
  std::vector<double> last(step_ms.end() - static_cast<long>(std::min(step_ms.size(), kWindow)), step_ms.end());
  std::sort(last.begin(), last.end());
  const size_t n = last.size();
  return n % 2 == 1 ? last[n / 2] : (last[n / 2 - 1] + last[n / 2]) / 2;
}

Decision decide(const std::vector<std::string>& order, const std::vector<std::string>& available,
                const std::map<std::string, CandidateRecord>& records) {
  std::vector<std::string> usable;
  for (const auto& name : order) {
    if (std::find(available.begin(), available.end(), name) != available.end()) usable.push_back(name);
  }
  if (usable.empty()) return {"", false, "no candidate is available"};
  const std::string& first = usable.front();
  const CandidateRecord& base = record_of(records, first);
  if (base.step_ms.empty()) {
    return {first, false,
            base.runs_started == 0
                ? "the measured default for this kind of command; no run of it measured yet"
                : "the measured default for this kind of command; its runs reported no training steps, "
                  "so there is nothing to compare"};
  }
  for (const auto& name : usable) {
    if (record_of(records, name).runs_started == 0) {
      return {name, true, "trying " + name + " once to compare with " + figure(first, base)};
    }
  }
  const std::string* best = nullptr;  // the default has a step time, so one is found
  for (const auto& name : usable) {
    const CandidateRecord& r = record_of(records, name);
    if (r.step_ms.empty()) continue;
    if (best == nullptr || recent_median(r.step_ms) < recent_median(record_of(records, *best).step_ms)) best = &name;
  }
  // The other candidates' figures, for the reason.
  auto others_than = [&](const std::string& chosen) {
    std::string text;
    for (const auto& name : usable) {
      if (name == chosen) continue;
      const CandidateRecord& r = record_of(records, name);
      text += (text.empty() ? "" : ", ") +
              (r.step_ms.empty() ? name + " never measured (its runs ended before reporting)" : figure(name, r));
    }
    return text;
  };
  const double base_ms = recent_median(base.step_ms);
  if (*best != first && recent_median(record_of(records, *best).step_ms) > base_ms * (1.0 - kDefaultMargin)) {
    return {first, false,
            "the measured default, kept: nothing measured more than " +
                std::to_string(static_cast<int>(kDefaultMargin * 100)) + " % faster than " + figure(first, base) +
                " (" + others_than(first) + ")"};
  }
  const std::string against = others_than(*best);
  return {*best, false,
          "fastest measured for this command: " + figure(*best, record_of(records, *best)) +
              (against.empty() ? "" : " against " + against)};
}

}  // namespace mlos::tune
