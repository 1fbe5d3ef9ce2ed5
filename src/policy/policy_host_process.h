/* SPDX-License-Identifier: Apache-2.0 */
// One running mlos-policyhost, seen from the side that started it (mlosd,
// or libmlos in embedded mode): spawning it with one end of a socketpair,
// sending requests, collecting replies without blocking, and ending it.
// Knows nothing of jobs; PolicyHosts decides what to say and when.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "os/unique_fd.h"
#include "policy/policy_protocol.h"
#include "protocol/frame_codec.h"

namespace mlos::policy {

struct HostLaunch {
  std::string host_binary;   // mlos-policyhost
  std::string policy_path;   // the shared object
  std::string name;          // the policy's name
  std::string run_as;        // user to become when started as root ("" = the host's default, nobody)
  uint64_t memory_limit = 512ull << 20;  // the host's RLIMIT_AS
  // The shared object, opened and checked (open_trusted_module); the host
  // loads this descriptor, not policy_path. -1: the host opens the path.
  int module_fd = -1;
};

class PolicyHostProcess {
 public:
  // posix_spawn()s the host with an empty environment, the socket as fd 3
  // and the module as fd 4. The host is running when this returns, not
  // yet initialised. Started by root, the host binary must pass
  // os::untrusted_reason (root's file in root's directories: it runs as
  // root until it drops to its user), else PERMISSION naming why and
  // nothing runs.
  static Result<std::unique_ptr<PolicyHostProcess>> spawn(const HostLaunch& launch);
  ~PolicyHostProcess();  // terminate()
  PolicyHostProcess(const PolicyHostProcess&) = delete;
  PolicyHostProcess& operator=(const PolicyHostProcess&) = delete;

  pid_t pid() const { return pid_; }
  int fd() const { return fd_.get(); }

  // Sends one request; returns its id. The socket blocks for at most
  // `timeout_ms` (a host that stopped reading is hung).
  Result<uint64_t> send(const std::string& op, nlohmann::json args, int timeout_ms);
  // Replies that have arrived, without blocking. An error (the host closed
  // the socket, sent a malformed frame or an invalid reply) means the host
  // is finished: terminate() it.
  Result<std::vector<HostReply>> receive();
  // Waits up to `timeout_ms` for the reply with id `id` (replies before it
  // are dropped; this is for the synchronous start and attach). TIMEOUT
  // when none came.
  Result<HostReply> wait_reply(uint64_t id, int timeout_ms);
  // SIGKILLs the host unless it has exited, reaps it, and says how it
  // ended ("exited with 0", "killed by SIGSEGV"); idempotent.
  std::string terminate();

 private:
  PolicyHostProcess(pid_t pid, os::UniqueFd fd) : pid_(pid), fd_(std::move(fd)) {}

  pid_t pid_;
  os::UniqueFd fd_;
  protocol::FrameDecoder decoder_{kMaxHostPayload};
  uint64_t next_id_ = 1;
  std::string ended_;  // set once reaped
};

}  // namespace mlos::policy
