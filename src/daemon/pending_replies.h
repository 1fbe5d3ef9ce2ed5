/* SPDX-License-Identifier: Apache-2.0 */
// Replies that wait for policy verdicts. mlosd never waits for a policy
// inside its event loop (issue 47, finding 3): an operation whose answer
// needs verdicts not known at once (a grant with policies, a policy
// request or load) replies {"pending": token} and its real reply is taken
// from here later, once every verdict it asked for has come.
//
// Single-threaded, like the event loop; no system calls.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace mlos::daemon {

class PendingReplies {
 public:
  using Verdict = std::function<void(Status)>;
  // Asks for one verdict (an attach, a load), given where to send it; it
  // may be sent at once or later.
  using Ask = std::function<void(Verdict)>;
  // The reply once every verdict is in: `refused` is the first refusal.
  using Finish = std::function<Result<nlohmann::json>(const std::optional<Error>& refused)>;

  // Runs each of `asks`, then `finish` once all their verdicts are in.
  // Returns finish's reply if they all came at once, else {"pending":
  // token}; that reply then comes out of take_finished().
  Result<nlohmann::json> after(const std::vector<Ask>& asks, Finish finish);

  struct Finished {
    uint64_t token;
    Result<nlohmann::json> reply;
  };
  std::vector<Finished> take_finished() { return std::exchange(finished_, {}); }
  // The token of a {"pending": token} reply, nullopt for any other reply.
  static std::optional<uint64_t> token_of(const nlohmann::json& reply);

  size_t waiting() const { return waiting_.size(); }

 private:
  // One verdict for `token`; the reply once it was the last.
  std::optional<Result<nlohmann::json>> verdict_in(uint64_t token, const Status& verdict);

  struct Waiting {
    size_t outstanding = 0;        // verdicts still to come
    std::optional<Error> refused;  // the first refusal
    Finish finish;
  };
  uint64_t next_token_ = 1;
  std::map<uint64_t, Waiting> waiting_;
  std::vector<Finished> finished_;
};

}  // namespace mlos::daemon
