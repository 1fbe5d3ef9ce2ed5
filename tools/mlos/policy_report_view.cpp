// SPDX-License-Identifier: Apache-2.0
#include "policy_report_view.h"

#include <cstdio>
#include <sstream>

namespace mlos::cli {

using nlohmann::json;

namespace {

std::string text_of(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

std::string number(const json& v) {
  if (!v.is_number()) return "?";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v.get<double>());
  return buf;
}

}  // namespace

std::string policy_report_text(uint64_t job, const json& report) {
  std::ostringstream out;
  const std::string head = "job " + std::to_string(job) + ": ";
  const json reports = report.value("reports", json::object());
  for (const auto& [policy, r] : reports.items()) {
    if (!r.is_object()) continue;
    out << head << policy << ": ";
    if (r.contains("class")) {
      out << (r["class"].is_string() ? r["class"].get<std::string>() : std::string("undecided"));
      if (r.contains("window") && r["window"].is_string() && r["window"] != r["class"]) {
        out << " (last window: " << r["window"].get<std::string>() << ")";
      }
      out << ", confidence " << number(r.value("confidence", json())) << ", " << r.value("windows", 0)
          << " windows" << (r.value("acting", true) ? "" : ", observing only") << "\n";
      if (r.contains("why") && r["why"].is_array() && !r["why"].empty()) {
        out << "    because ";
        bool first = true;
        for (const json& w : r["why"]) {
          out << (first ? "" : ", ") << text_of(w);
          first = false;
        }
        out << "\n";
      }
      if (r.contains("features") && r["features"].is_object()) {
        out << "    features";
        for (const auto& [name, value] : r["features"].items()) out << " " << name << "=" << number(value);
        out << "\n";
      }
    } else {
      out << r.dump() << "\n";
    }
  }
  if (report.contains("placement") && report["placement"].is_object()) {
    const json& p = report["placement"];
    out << head << "placement " << text_of(p.value("recommended", json("?"))) << " recommended by "
        << text_of(p.value("by", json("?"))) << ": " << text_of(p.value("reason", json(""))) << "\n";
  }
  // Named copies: items() of a temporary would outlive it.
  const json attached = report.value("attached_by_policy", json::object());
  for (const auto& [policy, by] : attached.items()) {
    out << head << policy << " attached by " << text_of(by) << "\n";
  }
  const json errors = report.value("request_errors", json::object());
  for (const auto& [policy, why] : errors.items()) {
    out << head << policy << " could not be attached: " << text_of(why) << "\n";
  }
  return out.str();
}

}  // namespace mlos::cli
