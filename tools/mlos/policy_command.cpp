// SPDX-License-Identifier: Apache-2.0
// mlos policy list|info|load|unload: the policy modules (docs/cli.md,
// "mlos policy"). list shows mlosd's, or without one the catalog an
// embedded job would use; load and unload ask mlosd; info asks the policy
// itself, through mlos-policyhost --describe, so it works without mlosd.
#include <unistd.h>

#include <cstdlib>
#include <iostream>

#include "cli_output.h"
#include "commands.h"
#include "daemon_query.h"
#include "engine/embedded_policy_config.h"
#include "install_paths.h"
#include "mlos/errors.h"
#include "os/environment.h"
#include "os/install_location.h"
#include "policy/policy_catalog.h"
#include "policy_describe.h"
#include "policy_view.h"

namespace mlos::cli {

namespace {

using nlohmann::json;

std::string command_name(const PolicyOptions& o) { return "policy " + o.action; }

int fail(const PolicyOptions& o, const Error& e) {
  report_error(command_name(o), e, o.json);
  return kExitFailure;
}

// The reply's fields, without the envelope of the protocol.
json reply_fields(json reply) {
  reply.erase("id");
  reply.erase("ok");
  return reply;
}

// What an embedded job could request (no mlosd): the catalog of the
// directory and host libmlos would use, in the shape of mlosd's reply
// (nothing is loaded: each job starts its own hosts).
json embedded_catalog() {
  json reply{{"source", "embedded"}, {"enabled", true}, {"defaults", embedded_default_policies()},
             {"available", json::array()}, {"skipped", json::array()}, {"loaded", json::array()}};
  const std::string dir = embedded_policy_dir();
  reply["dir"] = dir;
  if (auto host = os::locate_install_part(InstallPart::kPolicyHost, "MLOS_POLICY_HOST")) {
    reply["host"] = *host;
  } else {
    reply["host"] = nullptr;
    reply["host_error"] = host.error().message;
  }
  // The embedded engine's trust test: root's files, or this user's.
  if (auto catalog = policy::scan_policy_dir(dir, geteuid())) {
    for (const auto& p : catalog->policies) reply["available"].push_back(json{{"name", p.name}, {"path", p.path}});
    for (const auto& s : catalog->skipped) reply["skipped"].push_back(json{{"path", s.path}, {"why", s.why}});
  } else {
    reply["error"] = catalog.error().describe();
  }
  return reply;
}

// --source, else MLOS_MODE (embedded, daemon), else auto.
std::string list_source(const PolicyOptions& o) {
  if (!o.source.empty()) return o.source;
  const char* mode = os::env("MLOS_MODE");
  if (mode != nullptr && (std::string(mode) == "embedded" || std::string(mode) == "daemon")) return mode;
  return "auto";
}

int list(const PolicyOptions& o, const std::string& socket) {
  const std::string source = list_source(o);
  json reply;
  if (source != "embedded") {
    auto answered = query_daemon(socket, "policies");
    if (!answered && (source == "daemon" || answered.error().code != MLOS_ERR_DAEMON_UNAVAILABLE)) {
      return fail(o, answered.error());
    }
    if (answered) {
      reply = reply_fields(std::move(*answered));
      reply["source"] = "mlosd";
      reply["socket"] = socket;
    }
  }
  if (reply.is_null()) reply = embedded_catalog();
  if (o.json) {
    json j = json_envelope(command_name(o));
    j.update(reply);
    std::cout << dump_json(j, 2) << "\n";
  } else {
    std::cout << policies_text(reply);
  }
  return kExitOk;
}

// --dir, else the directory mlosd at `socket` uses, else the install's.
std::string policy_dir(const PolicyOptions& o, const std::string& socket) {
  if (!o.dir.empty()) return o.dir;
  if (auto reply = query_daemon(socket, "policies"); reply && reply->contains("dir") && (*reply)["dir"].is_string()) {
    return (*reply)["dir"].get<std::string>();
  }
  return default_policy_dir();
}

// --policy-host, else the one beside mlos.
std::string policy_host(const PolicyOptions& o) { return o.host.empty() ? cli::policy_host() : o.host; }

int info(const PolicyOptions& o, const std::string& socket) {
  const std::string dir = policy_dir(o, socket);
  // Only files mlosd could load, or that this user owns: the same trust
  // test, so `info` never runs a file a stranger could have planted.
  auto catalog = policy::scan_policy_dir(dir, geteuid());
  if (!catalog) return fail(o, catalog.error());
  const policy::CatalogEntry* entry = catalog->find(o.name);
  if (entry == nullptr) return fail(o, policy::unknown_policy(*catalog, o.name));
  auto described = describe_policy(policy_host(o), entry->path, entry->name);
  if (!described) return fail(o, described.error());
  if (o.json) {
    json j = json_envelope(command_name(o));
    j["dir"] = dir;
    j["path"] = entry->path;
    j["policy"] = *described;
    std::cout << dump_json(j, 2) << "\n";
  } else {
    std::cout << policy_info_text(*described, entry->path);
  }
  return kExitOk;
}

int load_or_unload(const PolicyOptions& o, const std::string& socket) {
  auto reply = query_daemon(socket, o.action == "load" ? "policy_load" : "policy_unload", json{{"name", o.name}});
  if (!reply) return fail(o, reply.error());
  if (o.json) {
    json j = json_envelope(command_name(o));
    j["name"] = o.name;
    j[o.action == "load" ? "loaded" : "unloaded"] = true;
    std::cout << dump_json(j, 2) << "\n";
  } else {
    std::cout << (o.action == "load" ? "loaded " : "unloaded ") << o.name << "\n";
  }
  return kExitOk;
}

}  // namespace

int run_policy(const PolicyOptions& o) {
  const std::string socket = resolve_socket(o.socket);
  if (o.action == "list") return list(o, socket);
  if (o.action == "info") return info(o, socket);
  return load_or_unload(o, socket);
}

}  // namespace mlos::cli
