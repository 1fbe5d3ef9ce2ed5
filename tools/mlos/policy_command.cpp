// SPDX-License-Identifier: Apache-2.0
// mlos policy list|info|load|unload: mlosd's policy modules (docs/cli.md,
// "mlos policy"). list, load and unload ask mlosd; info asks the policy
// itself, through mlos-policyhost --describe, so it works without mlosd.
#include <unistd.h>

#include <iostream>

#include "cli_output.h"
#include "commands.h"
#include "daemon_query.h"
#include "install_paths.h"
#include "mlos/errors.h"
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

int list(const PolicyOptions& o, const std::string& socket) {
  auto reply = query_daemon(socket, "policies");
  if (!reply) return fail(o, reply.error());
  if (o.json) {
    json j = json_envelope(command_name(o));
    j["source"] = "mlosd";
    j["socket"] = socket;
    j.update(reply_fields(std::move(*reply)));
    std::cout << dump_json(j, 2) << "\n";
  } else {
    std::cout << policies_text(*reply);
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

// --policy-host, else the first candidate that exists.
std::string policy_host(const PolicyOptions& o) {
  if (!o.host.empty()) return o.host;
  const auto candidates = policy_host_candidates();
  for (const auto& c : candidates) {
    if (access(c.c_str(), X_OK) == 0) return c;
  }
  return candidates.back();
}

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
