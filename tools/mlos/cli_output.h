/* SPDX-License-Identifier: Apache-2.0 */
// Output conventions shared by mlos commands: exit codes, JSON envelope,
// size parsing. See docs/cli.md.
#pragma once

#include "core/human_bytes.h"

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace mlos::cli {

// Exit codes (docs/cli.md).
constexpr int kExitOk = 0;
constexpr int kExitFailure = 1;       // topo/status could not do their job
constexpr int kExitUsage = 2;         // bad arguments (topo/status)
constexpr int kExitRunFailed = 125;   // run: mlos failed before CMD started
constexpr int kExitCannotExec = 126;  // run: CMD found but not executable
constexpr int kExitNotFound = 127;    // run: CMD not found

constexpr int kJsonSchemaVersion = 1;

// {"schema_version":1,"command":name} to be filled by the command.
nlohmann::json json_envelope(const std::string& command);

// `j` as text (indent as nlohmann's dump). Never throws: strings that came
// from outside (argv, environment, file names, the ledger) may hold bytes
// that are not UTF-8, which JSON cannot carry; those are written
// as U+FFFD. Every JSON document mlos prints goes through this.
std::string dump_json(const nlohmann::json& j, int indent = -1);

// Reports `e` on stderr ("mlos <command>: <name>: <message>") and, with
// json, as {"schema_version":1,"command":..,"error":{code,name,message}} on
// stdout (stderr when json_to_stderr).
void report_error(const std::string& command, const Error& e, bool json, bool json_to_stderr = false);

// "4096", "512K", "64M", "2G", "1T" (powers of 1024; optional "iB"/"B").
Result<uint64_t> parse_size(const std::string& text);

using ::mlos::human_bytes;

}  // namespace mlos::cli
