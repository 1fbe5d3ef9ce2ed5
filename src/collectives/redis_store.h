// SPDX-License-Identifier: Apache-2.0
// Gloo's RedisStore with a deadline: every command fails once the
// rendezvous's deadline has passed, instead of blocking.
//
// Gloo connects with a 2 s timeout but then reads replies through a
// blocking hiredis connection with no command timeout, so a server that
// accepts the connection and never answers (SIGSTOPped, wedged, a proxy
// that swallows traffic) holds the calling thread forever. Here each
// command first sets the socket's send and receive timeouts to the time
// left (redisSetTimeout), so the rendezvous thread ends at the deadline and
// can be joined rather than abandoned. Gloo's wait() also measures its
// timeout in whole seconds; this one counts milliseconds.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include <gloo/rendezvous/redis_store.h>

namespace mlos::collectives {

class BoundedRedisStore final : public gloo::rendezvous::RedisStore {
 public:
  using Clock = std::chrono::steady_clock;

  // Connects (Gloo's 2 s connect timeout); throws gloo::IoException naming
  // the server when it cannot.
  BoundedRedisStore(const std::string& host, int port, Clock::time_point deadline);

  // Past the deadline each throws gloo::IoException saying the server
  // "timed out" (so callers classify it as MLOS_ERR_TIMEOUT).
  void set(const std::string& key, const std::vector<char>& data) override;
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override { wait(keys, kDefaultTimeout); }
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override;

 private:
  // Arms the socket timeouts with the time left; throws when none is.
  void arm() const;
  // Runs one of the base class's commands under arm(), turning a failure
  // past the deadline into a timeout that names the server.
  template <class F>
  auto bounded(F&& command) -> decltype(command());

  std::string where_;
  Clock::time_point deadline_;
};

}  // namespace mlos::collectives
