/* SPDX-License-Identifier: Apache-2.0 */
// What the policies of an embedded job published about it (reports,
// a recommended placement, the policies they attached), kept in a file per
// job under the runtime directory so that `mlos status` can show it next to
// the job's claim: <runtime dir>/policy-reports/<claim id>.json.
//
// File format (one JSON object):
//   {"job": 7, "pid": 123, "updated_unix": 1700000000,
//    "reports": {"auto": {...what the policy published...}},
//    "placement": {"recommended": "exclusive", "by": "auto", "reason": "..."},
//    "attached_by_policy": {"prefetch": "auto"},
//    "request_errors": {"prefetch": "..."}}
// Written whole (a temporary file renamed over it); removed when the job
// ends, or when the ledger prunes the claim of a process that died first. A reader treats a missing or unreadable file as "no reports".
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace mlos {

// <runtime dir>/policy-reports.
std::string policy_report_dir(const std::string& runtime_dir);
std::string policy_report_path(const std::string& dir, uint64_t job);

// Creates `dir` (0755) if needed and replaces the job's file with `report`.
Status write_policy_report(const std::string& dir, uint64_t job, const nlohmann::json& report);
void remove_policy_report(const std::string& dir, uint64_t job);
// Removes the job's file only if it names `pid` (the claim's owner): a
// claim that died without removing it (killed) leaves it, and the ledger
// removes it when it prunes the claim (LedgerClaimBroker).
void remove_policy_report_of(const std::string& dir, uint64_t job, int pid);
// nullopt when there is none, or it is not a JSON object.
std::optional<nlohmann::json> read_policy_report(const std::string& dir, uint64_t job);

}  // namespace mlos
