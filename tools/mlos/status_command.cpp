// SPDX-License-Identifier: Apache-2.0
// mlos status: mlosd's jobs, or without mlosd this user's embedded claims.
#include <ctime>
#include <iostream>
#include <pwd.h>

#include "cli_output.h"
#include "core/control_escape.h"
#include "commands.h"
#include "daemon_query.h"
#include "daemon_view.h"
#include "mlos/errors.h"
#include "engine/policy_report_file.h"
#include "os/ledger_file.h"
#include "policy_report_view.h"
#include "process_tuning.h"

namespace mlos::cli {

namespace {
std::string user_name(uint32_t uid) {
  struct passwd* pw = getpwuid(uid);
  return pw ? pw->pw_name : std::to_string(uid);
}

// What the claim's policies published (engine/policy_report_file.h), or
// null: none, or a file left by another process that had the same id.
nlohmann::json policy_report_of(const std::string& runtime_dir, const Claim& c) {
  auto report = read_policy_report(policy_report_dir(runtime_dir), c.id);
  if (!report || report->value("pid", -1) != c.owner.pid) return nullptr;
  report->erase("pid");
  report->erase("job");
  return *report;
}

// The claims of the embedded ledger (what status showed before mlosd).
int ledger_status(const StatusOptions& options) {
  os::LedgerFile ledger_file(os::default_runtime_dir());
  auto ledger = ledger_file.read();
  if (!ledger) {
    report_error("status", ledger.error(), options.json);
    return kExitFailure;
  }
  const int64_t now = static_cast<int64_t>(time(nullptr));
  if (options.json) {
    auto j = json_envelope("status");
    j["ledger"] = ledger_file.path();
    j["claims"] = nlohmann::json::array();
    for (const auto& c : ledger->claims) {
      j["claims"].push_back({{"id", c.id},
                             {"pid", c.owner.pid},
                             {"uid", c.uid},
                             {"cpus", c.cpus.to_list()},
                             {"num_cpus", c.cpus.count()},
                             {"exclusive", c.exclusive},
                             {"envelope", c.envelope},
                             {"numa_node", c.numa_node},
                             {"memory_bytes", c.memory_bytes},
                             {"label", c.label},
                             {"gpus", c.gpus},
                             {"gpus_exclusive", c.gpus_exclusive},
                             {"tuning", tuning_of_process(c.owner.pid)},
                             {"age_seconds", now - c.created_unix},
                             {"policy_report", policy_report_of(ledger_file.dir(), c)}});
    }
    std::cout << dump_json(j, 2) << "\n";
    return kExitOk;
  }
  std::cout << "ledger: " << ledger_file.path() << "\n";
  if (ledger->claims.empty()) {
    std::cout << "no claims\n";
    return kExitOk;
  }
  printf("%6s %8s %-10s %-10s %-9s %4s %10s %7s %-10s %-20s  %s\n", "ID", "PID", "USER", "CPUS", "KIND", "NODE",
         "MEMORY", "AGE", "GPUS", "TUNING", "LABEL");
  for (const auto& c : ledger->claims) {
    const char* kind = c.envelope ? (c.exclusive ? "run,excl" : "run") : (c.exclusive ? "exclusive" : "shared");
    const std::string tuning = tuning_of_process(c.owner.pid);
    printf("%6llu %8d %-10s %-10s %-9s %4d %10s %6llds %-10s %-20s  %s\n", static_cast<unsigned long long>(c.id),
           c.owner.pid, user_name(c.uid).c_str(), c.cpus.to_list().c_str(), kind, c.numa_node,
           c.memory_bytes ? human_bytes(c.memory_bytes).c_str() : "-", static_cast<long long>(now - c.created_unix),
           fit(short_gpus(c.gpus), 10).c_str(), tuning.empty() ? "-" : tuning.c_str(),
           escape_controls(c.label).c_str());  // the claimant's text, on the reader's terminal
  }
  for (const auto& c : ledger->claims) {
    const nlohmann::json report = policy_report_of(ledger_file.dir(), c);
    if (!report.is_null()) std::cout << policy_report_text(c.id, report);
  }
  return kExitOk;
}

}  // namespace

int run_status(const StatusOptions& options) {
  if (options.source == "ledger") return ledger_status(options);
  const std::string socket = resolve_socket(options.socket);
  auto reply = query_daemon_status(socket);
  if (!reply) {
    // auto: no daemon answering means the embedded ledger is in charge.
    if (options.source == "auto" && reply.error().code == MLOS_ERR_DAEMON_UNAVAILABLE) return ledger_status(options);
    report_error("status", reply.error(), options.json);
    return kExitFailure;
  }
  if (options.json) std::cout << dump_json(daemon_status_json(*reply, socket), 2) << "\n";
  else std::cout << daemon_status_text(*reply, socket);
  return kExitOk;
}

}  // namespace mlos::cli
