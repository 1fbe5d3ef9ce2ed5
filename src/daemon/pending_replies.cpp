// SPDX-License-Identifier: Apache-2.0
#include "daemon/pending_replies.h"

namespace mlos::daemon {

using nlohmann::json;

std::optional<uint64_t> PendingReplies::token_of(const json& reply) {
  auto it = reply.find("pending");
  if (it == reply.end() || !it->is_number_unsigned()) return std::nullopt;
  return it->get<uint64_t>();
}

Result<json> PendingReplies::after(const std::vector<Ask>& asks, Finish finish) {
  const uint64_t token = next_token_++;
  Waiting& w = waiting_[token];
  w.outstanding = asks.size() + 1;  // one held until every ask is made: no reply finishes early
  w.finish = std::move(finish);
  for (const Ask& ask : asks) {
    ask([this, token](Status s) {
      if (auto reply = verdict_in(token, s)) finished_.push_back(Finished{token, std::move(*reply)});
    });
  }
  if (auto reply = verdict_in(token, Status::Ok())) return std::move(*reply);
  return json{{"pending", token}};
}

std::optional<Result<json>> PendingReplies::verdict_in(uint64_t token, const Status& verdict) {
  auto it = waiting_.find(token);
  if (it == waiting_.end()) return std::nullopt;
  Waiting& w = it->second;
  if (!verdict && !w.refused) w.refused = verdict.error();
  if (--w.outstanding > 0) return std::nullopt;
  Finish finish = std::move(w.finish);
  const std::optional<Error> refused = w.refused;
  waiting_.erase(it);
  return finish(refused);
}

}  // namespace mlos::daemon
