/* SPDX-License-Identifier: Apache-2.0 */
// The policy host's side of the conversation: reads requests from the
// socket, calls the policy's entry points, and answers with what the policy
// asked for through mlos_policy_host_t (collected during the call). Runs in
// mlos-policyhost after it confined itself; one thread, blocking reads.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mlos/policy.h"
#include "policy/policy_module.h"
#include "policy/policy_protocol.h"
#include "protocol/frame_codec.h"

namespace mlos::policy {

class PolicyHostLoop {
 public:
  // `fd`: the socket to the daemon (blocking), not owned.
  PolicyHostLoop(const mlos_policy_t* policy, int fd);

  // Serves until "stop" (0) or the peer hangs up (0), or until the stream
  // breaks (1). A policy that crashes takes the process with it: that is
  // the containment (the daemon sees the signal).
  int run();

  // One request's reply (exposed for tests).
  nlohmann::json handle(const protocol::Request& request);

 private:
  static int job_figures(void* ctx, uint64_t job, mlos_policy_job_figures_t* out);
  static int set_cpu_weight(void* ctx, uint64_t job, uint32_t weight);
  static int set_io_weight(void* ctx, uint64_t job, uint32_t weight);
  static int set_memory_high(void* ctx, uint64_t job, uint64_t bytes);
  static int set_memory_low(void* ctx, uint64_t job, uint64_t bytes);
  static int advise_threads(void* ctx, uint64_t job, int threads);
  static int advise_file(void* ctx, uint64_t job, const char* path, int advice);
  static void log(void* ctx, int level, const char* message);
  static int read_log(void* ctx, uint64_t job, mlos_policy_read_t* out, size_t max, size_t* count, uint64_t* lost);
  static int read_plan(void* ctx, uint64_t job, mlos_policy_plan_t* out);
  static int request_policy(void* ctx, uint64_t job, const char* name, const char* config_json);
  static int release_policy(void* ctx, uint64_t job, const char* name);
  static int recommend_placement(void* ctx, uint64_t job, int placement, const char* reason);
  static int report(void* ctx, uint64_t job, const char* json_object);
  static int advise_file_range(void* ctx, uint64_t job, const char* path, uint64_t offset, uint64_t length,
                               int advice);

  // Queues an action for the current reply if `job` is attached and the
  // reply has room (kMaxActionsPerReply; kMaxActionPathBytes of paths and
  // payloads).
  int queue(Action a);
  int queue(uint64_t job, ActionKind kind, uint64_t value, std::string path = {}, uint64_t offset = 0,
            uint64_t length = 0) {
    return queue(Action{job, kind, value, std::move(path), offset, length, {}, {}});
  }
  void remember(const nlohmann::json& figures);
  // The event's read logs ("reads": [JobReads..]), for read_log/read_plan
  // during this event only.
  void remember_reads(const nlohmann::json& args);

  // One job's read log as the current event carried it, and how much of it
  // the policy has taken.
  struct EventReads {
    JobReads log;
    size_t taken = 0;
    bool lost_told = false;
    std::vector<const char*> plan_paths;
  };
  nlohmann::json describe_json() const;

  const mlos_policy_t* policy_;
  int fd_;
  mlos_policy_host_t host_{};
  void* state_ = nullptr;
  bool initialised_ = false;
  std::map<uint64_t, mlos_policy_job_figures_t> jobs_;  // attached jobs' last figures
  std::map<uint64_t, EventReads> reads_;                 // this event's, by job
  nlohmann::json actions_ = nlohmann::json::array();
  uint64_t dropped_actions_ = 0;
  nlohmann::json logs_ = nlohmann::json::array();
  size_t action_path_bytes_ = 0;  // in actions_
  bool reads_used_ = false;       // read_log or read_plan called during this event
};

}  // namespace mlos::policy
