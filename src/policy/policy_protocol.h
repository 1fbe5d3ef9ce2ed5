/* SPDX-License-Identifier: Apache-2.0 */
// What mlosd (or the library) and a policy host say to each other over
// their socketpair: the control socket's frames (protocol/frame_codec.h), one
// request at a time, each answered by one reply.
//
//   to the host (requests)                     the host's reply
//   {"op":"init","config":{..}}                info (see PolicyInfo) or error
//   {"op":"attach","job":N,"config":{..},"figures":{..}}   actions, or error (bad config)
//   {"op":"detach","job":N}                    actions
//   {"op":"phase","job":N,"old":P,"new":P,"figures":{..}}  actions
//   {"op":"pressure","job":N,"level":L,"figures":{..}}     actions
//   {"op":"tick","now":S,"jobs":[figures..]}   actions
//   {"op":"stop"}                              ok; the host calls fini and exits 0
//
// Every reply may carry "actions" (at most kMaxActionsPerReply, and at most
// kMaxActionPathBytes of paths; the host counts the rest in
// "dropped_actions"), "logs" (at most kMaxLogsPerReply lines of at most
// kMaxLogLength bytes) and "reads_used": true when the policy read a job's
// read log or plan (only such policies get reads with their ticks). The host's side is untrusted: the
// parsers here are strict and bounded, and fuzzed (tests/fuzz).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/cpu_set.h"
#include "core/status.h"
#include "mlos/policy.h"

namespace mlos::policy {

constexpr size_t kMaxActionsPerReply = 256;
constexpr size_t kMaxActionPathBytes = 128 * 1024;
constexpr size_t kMaxLogsPerReply = 16;
constexpr size_t kMaxLogLength = 512;
constexpr uint32_t kMaxHostPayload = 256 * 1024;  // either direction
// The figures one tick (or "figures") event carries, in JSON bytes: half a
// frame, leaving the rest to the event's read logs. A policy of more jobs
// gets its figures over several events before its tick (about 300 jobs an
// event at some 400 bytes each).
constexpr size_t kMaxTickFiguresBytes = kMaxHostPayload / 2;

// Whether `name` is a policy name: [a-z0-9-]{1,63}, not starting with '-'.
bool valid_policy_name(const std::string& name);

enum class ActionKind {
  kCpuWeight,
  kIoWeight,
  kMemoryHigh,
  kMemoryLow,
  kThreads,
  kFileAdvice,
  kRequestPolicy,       // target: the policy; payload: its config (a JSON object's text)
  kReleasePolicy,       // target: the policy
  kRecommendPlacement,  // value: mlos_policy_placement_t; payload: the reason
  kReport,              // payload: a JSON object's text (what the policy decided, and why)
};
constexpr int kActionKindCount = 10;
// The longest payload an action may carry (a config, a report, a reason).
constexpr size_t kMaxActionPayloadBytes = 4096;

const char* action_kind_name(ActionKind kind);
std::optional<ActionKind> action_kind_from_name(std::string_view name);

// One thing a policy asked for. `value`: the weight, bytes, thread count,
// mlos_policy_file_advice_t or mlos_policy_placement_t; `path`, `offset`
// and `length` (0: to the end) for kFileAdvice only; `target` (a policy
// name) for kRequestPolicy and kReleasePolicy; `payload` (at most
// kMaxActionPayloadBytes) for kRequestPolicy, kRecommendPlacement and
// kReport.
struct Action {
  uint64_t job = 0;
  ActionKind kind = ActionKind::kCpuWeight;
  uint64_t value = 0;
  std::string path;
  uint64_t offset = 0, length = 0;
  std::string target;
  std::string payload;
  bool operator==(const Action&) const = default;
};

nlohmann::json action_to_json(const Action& a);
// INVALID_ARGUMENT naming what is wrong: unknown kind, missing or mistyped
// field, a path on another kind or longer than PATH_MAX, a target that is
// not a policy name, a payload on a kind without one or over its bound, a
// request's config or a report that is not a JSON object, a placement that
// is not an mlos_policy_placement_t.
Result<Action> action_from_json(const nlohmann::json& j);

nlohmann::json figures_to_json(const mlos_policy_job_figures_t& f);
// Strict: every field present and typed; the cpu list fits the struct.
Result<mlos_policy_job_figures_t> figures_from_json(const nlohmann::json& j);
mlos_policy_job_figures_t empty_figures(uint64_t job);
// Sets num_cpus and the cpu list of `f` from `cpus`; a list longer than the
// field is cut at a comma and cpus_truncated set.
void set_figure_cpus(mlos_policy_job_figures_t& f, const CpuSet& cpus);

// The read log and plan of one job, as one event carries them to a host
// (mlos_policy_host_t.read_log / read_plan). On the wire:
//   {"job":N, "files":[path..], "reads":[[file_index, offset, length]..],
//    "lost":N, "plan":{"generation":G, "position":P, "total":T,
//                      "paths":[..], "sizes":[..]}}
// Bounded both ways (kMaxReadsPerEvent, kMaxPlanWindow, kMaxReadPathBytes
// of paths in all): what does not fit waits for the next event.
constexpr size_t kMaxReadsPerEvent = 1024;
constexpr size_t kMaxPlanWindow = 256;
constexpr size_t kMaxReadPathBytes = 96 * 1024;

struct FileRead {
  std::string path;
  uint64_t offset = 0, length = 0;  // length 0: to the end of the file
  bool operator==(const FileRead&) const = default;
};

struct ReadPlanWindow {
  uint64_t generation = 0;  // 0: no plan announced
  uint64_t position = 0, total = 0;
  std::vector<std::string> paths;  // the entries from `position` on
  std::vector<int64_t> sizes;      // parallel to paths; -1 unknown
  bool operator==(const ReadPlanWindow&) const = default;
};

// How much of a job's read log one event may carry: its share of the
// event's bounds (a tick to a policy of n jobs gives each 1/n). Half the
// path bytes go to reads, half to the plan's window.
struct ReadBudget {
  size_t reads = kMaxReadsPerEvent;
  size_t path_bytes = kMaxReadPathBytes;
};

struct JobReads {
  uint64_t job = 0;
  std::vector<FileRead> reads;
  uint64_t lost = 0;
  ReadPlanWindow plan;
  bool operator==(const JobReads&) const = default;
};

// The bytes `s` takes as a JSON string's contents (escapes included).
size_t json_string_bytes(const std::string& s);

nlohmann::json job_reads_to_json(const JobReads& r);
// INVALID_ARGUMENT naming the field: anything missing or mistyped, a file
// index out of range, a path empty or not absolute, more than the bounds.
Result<JobReads> job_reads_from_json(const nlohmann::json& j);

// What a host says about its policy after init.
struct PolicyInfo {
  std::string name;
  std::string description;
  std::string config_schema;  // may be empty
  uint32_t tick_interval_ms = 1000;
  nlohmann::json to_json() const;
};
Result<PolicyInfo> policy_info_from_json(const nlohmann::json& j);

struct HostLog {
  int level = MLOS_POLICY_LOG_INFO;
  std::string message;
};

// A host's reply, validated. `error` set when the host answered ok:false.
struct HostReply {
  uint64_t id = 0;
  std::optional<Error> error;
  std::vector<Action> actions;
  uint64_t dropped_actions = 0;
  std::vector<HostLog> logs;
  nlohmann::json info;  // init's reply: the PolicyInfo fields
  bool reads_used = false;  // the policy called read_log or read_plan during the event
};
// INVALID_ARGUMENT for anything a well-behaved host does not send (the
// caller then treats the host as failed): not an object, no id, too many
// actions or logs, a malformed action.
Result<HostReply> parse_host_reply(const nlohmann::json& payload);

}  // namespace mlos::policy
