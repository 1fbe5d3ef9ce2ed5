/* SPDX-License-Identifier: Apache-2.0 */
// What mlosd does with one decoded request, apart from the socket: the
// dispatch from op to JobManager, argument checks, and the reply. Pure with
// respect to I/O (the fuzz target drives it over a fake cgroupfs).
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "daemon/job_gpu_figures.h"
#include "daemon/job_manager.h"
#include "os/peer_credentials.h"
#include "os/unique_fd.h"
#include "protocol/frame_codec.h"

namespace mlos::daemon {

struct RequestContext {
  nlohmann::json info;                        // the daemon's identity, for hello and status
  std::function<std::string()> metrics_text;  // for "metrics"; null: unsupported
  size_t clients = 0;                         // connected clients, for status
  const std::map<uint32_t, int>* connections_by_uid = nullptr;  // for status; may be null
  // The jobs' GPU figures (GpuMetrics), for status; null: none.
  std::function<std::map<uint64_t, JobGpuFigures>()> gpu_figures;
};

// The reply to `request` from `peer` ({"id", "ok": true, ...} or an error
// reply, see error_reply). `fd` is the descriptor that came with it, if
// any. Never throws for any input.
nlohmann::json handle_request(JobManager& jobs, const RequestContext& context, const os::PeerCredentials& peer,
                              const protocol::Request& request, os::UniqueFd fd);

}  // namespace mlos::daemon
