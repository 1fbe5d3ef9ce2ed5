// SPDX-License-Identifier: Apache-2.0
#include "policy_view.h"

#include <algorithm>
#include <cstdio>
#include <set>
#include <vector>

#include "cli_output.h"
#include "daemon_view.h"

namespace mlos::cli {

using nlohmann::json;

namespace {

const json& array_field(const json& j, const char* key) {
  static const json empty = json::array();
  return j.is_object() && j.contains(key) && j[key].is_array() ? j[key] : empty;
}

std::vector<std::string> strings_of(const json& list) {
  std::vector<std::string> out;
  for (const auto& x : list) out.push_back(x.is_string() ? x.get<std::string>() : dump_json(x));
  return out;
}

std::string joined(const std::vector<std::string>& items, const char* sep = ",") {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : sep) + i;
  return out.empty() ? "-" : out;
}

const json* find_named(const json& list, const std::string& name) {
  for (const auto& x : list) {
    if (x.is_object() && x.contains("name") && x["name"] == name) return &x;
  }
  return nullptr;
}

}  // namespace

std::string policies_text(const json& reply) {
  const std::vector<std::string> defaults = strings_of(array_field(reply, "defaults"));
  std::string out;
  if (reply.is_object() && reply.value("enabled", true) == false) {
    return "mlosd runs without policy modules (config policies.enabled)\n";
  }
  if (json_text(reply, "source") == "embedded") {
    out += "no mlosd: the catalog of an embedded job, which starts a policy host of its own ";
    out += reply.contains("host_error") ? "(it cannot: " + json_text(reply, "host_error") + ")\n"
                                        : "(" + json_text(reply, "host") + ")\n";
  }
  out += "policy directory " + json_text(reply, "dir") + "; defaults: " + joined(defaults, ", ") + "\n";
  if (reply.is_object() && reply.contains("error")) out += "catalog error: " + json_text(reply, "error") + "\n";
  const json& available = array_field(reply, "available");
  const json& loaded = array_field(reply, "loaded");
  std::set<std::string> names;
  for (const json* list : {&available, &loaded}) {
    for (const auto& p : *list) {
      if (p.is_object() && p.contains("name") && p["name"].is_string()) names.insert(p["name"].get<std::string>());
    }
  }
  char line[1024];
  if (names.empty()) {
    out += "no policies\n";
  } else {
    snprintf(line, sizeof line, "%-20s %-9s %-16s %8s %8s %-7s %s\n", "NAME", "STATE", "JOBS", "FAILURES",
             "RESTARTS", "DEFAULT", "PATH");
    out += line;
  }
  std::string failures;
  for (const std::string& name : names) {
    const json* a = find_named(available, name);
    const json* l = find_named(loaded, name);
    const json none = json::object();
    const json& s = l ? *l : none;
    const bool is_default = std::find(defaults.begin(), defaults.end(), name) != defaults.end();
    snprintf(line, sizeof line, "%-20s %-9s %-16s %8s %8s %-7s %s\n", fit(name, 20).c_str(),
             json_text(s, "state").c_str(), fit(joined(strings_of(array_field(s, "jobs"))), 16).c_str(),
             json_text(s, "failures").c_str(), json_text(s, "restarts").c_str(), is_default ? "yes" : "no",
             a ? json_text(*a, "path").c_str() : (json_text(s, "path") + " (no longer listed)").c_str());
    out += line;
    if (l && json_text(s, "state") == "failed") failures += name + " failed: " + json_text(s, "last_failure") + "\n";
  }
  out += failures;
  for (const auto& skipped : array_field(reply, "skipped")) {
    out += "skipped " + json_text(skipped, "path") + ": " + json_text(skipped, "why") + "\n";
  }
  return out;
}

std::string policy_info_text(const json& info, const std::string& path) {
  std::string out = json_text(info, "name") + " (" + path + ")\n";
  out += "  " + json_text(info, "description", "(no description)") + "\n";
  auto tick = json_number(info, "tick_interval_ms");
  out += "  tick interval: " + (tick && *tick > 0 ? json_text(info, "tick_interval_ms") + " ms" : std::string("none")) +
         "\n";
  const std::string schema = json_text(info, "config_schema", "");
  if (schema.empty()) return out + "  config schema: none given\n";
  // Shown indented when it parses (a schema is JSON by convention).
  auto parsed = json::parse(schema, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) return out + "  config schema: " + schema + "\n";
  std::string pretty = dump_json(parsed, 2), indented;
  for (char c : pretty) indented += c == '\n' ? std::string("\n    ") : std::string(1, c);
  return out + "  config schema:\n    " + indented + "\n";
}

std::string job_policies(const json& job) {
  std::vector<std::string> names = strings_of(array_field(job, "policies"));
  const json& advice = job.is_object() && job.contains("advice") ? job["advice"] : json::object();
  for (auto& n : names) {
    if (find_named(array_field(advice, "failed_policies"), n)) n += "!";
  }
  return joined(names);
}

}  // namespace mlos::cli
