/* SPDX-License-Identifier: Apache-2.0 */
// The "request" op of mlosd's protocol as types (docs/protocol.md): what a
// process asks for, and the grant (or, for a dry run, the plan) it gets
// back. The client (engine/daemon_claim_broker) encodes requests and
// decodes replies; mlosd decodes requests and encodes replies; both go
// through here, so the two sides cannot drift apart.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/cpu_set.h"
#include "core/placement.h"
#include "core/status.h"

namespace mlos::protocol {

struct GrantRequest {
  PlacementRequest placement;
  int priority = 0;           // MLOS_PRIORITY_MIN..MAX
  std::string label;          // at most 128 bytes; empty: mlosd names it pid-N
  int page_fd = -1;           // the phase page's descriptor number in the sender, passed with the request
  bool envelope = false;      // `mlos run`'s claim for a command
  bool dry_run = false;       // plan only: nothing is granted or booked
  // The requester's own CPUs (its affinity), an outer bound of its
  // placement; nullopt: not given (any of the node's).
  std::optional<CpuSet> allowed;
  // Policy modules to attach, by name, with the job's config for each.
  nlohmann::json policies = nlohmann::json::object();
  // The requester's CUDA_VISIBLE_DEVICES, when set: the GPUs it may claim.
  std::optional<std::string> cuda_visible_devices;
  std::string gpu_share_file;  // of an envelope with GPU limits (absolute path)
};

// The request's arguments, leaving out what an older mlosd would refuse
// when unused (policies, GPU fields, page_fd, dry_run).
nlohmann::json encode_grant_request(const GrantRequest& request);

// Reads a request's arguments strictly: a wrong type, a value out of range
// or an unknown key is INVALID_ARGUMENT naming it ("request: ..."), so a
// client bug is never half-understood. "op" and "id" are allowed.
Result<GrantRequest> decode_grant_request(const nlohmann::json& args);

struct GrantReply {
  Placement placement;
  bool dry_run = false;
  uint64_t job = 0;                  // a grant's job id (0 for a dry run)
  std::optional<uint64_t> nested_in; // a dry run: the envelope job it would be carved from
  std::string cgroup;                // a grant's cgroup ("" if none)
  std::vector<std::string> policies; // a grant's attached policies
  std::vector<std::string> notes;    // a grant's notes (the GPU note among them)
};

nlohmann::json encode_grant_reply(const GrantReply& reply);

// VERSION_MISMATCH ("mlosd's grant is not understood: ...") when a
// placement field is missing or of the wrong type.
Result<GrantReply> decode_grant_reply(const nlohmann::json& reply);

}  // namespace mlos::protocol
