// SPDX-License-Identifier: Apache-2.0
// Fuzz target: a policy host's reply (policy/policy_protocol.h), what the
// manager reads from an untrusted process. The input is JSON text.
// Properties: parse_host_reply never throws or crashes; what it accepts
// keeps its bounds (actions, logs, log length); every accepted action
// re-encodes to JSON that parses back to the same action.
#include <cstdint>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "policy/policy_protocol.h"

using namespace mlos::policy;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto payload = nlohmann::json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (payload.is_discarded()) return 0;
  auto reply = parse_host_reply(payload);
  if (!reply.ok()) {
    if (reply.error().code != MLOS_ERR_INVALID_ARGUMENT) abort();
    return 0;
  }
  if (reply->actions.size() > kMaxActionsPerReply || reply->logs.size() > kMaxLogsPerReply) abort();
  for (const HostLog& l : reply->logs) {
    if (l.message.size() > kMaxLogLength || l.level < MLOS_POLICY_LOG_ERROR || l.level > MLOS_POLICY_LOG_DEBUG) abort();
  }
  if (reply->error && reply->error->message.size() > kMaxLogLength) abort();
  for (const Action& a : reply->actions) {
    auto back = action_from_json(action_to_json(a));
    if (!back.ok() || !(*back == a)) abort();
  }
  if (!reply->info.is_null() && !reply->info.is_object()) abort();
  return 0;
}
