// SPDX-License-Identifier: Apache-2.0
#include "collectives/redis_store.h"

#include <sys/time.h>

#include <algorithm>
#include <thread>

#include <gloo/common/error.h>

namespace mlos::collectives {

namespace {

// Gloo's own polling interval between EXISTS checks.
constexpr std::chrono::milliseconds kPoll{10};

[[noreturn]] void throw_timed_out(const std::string& where, const std::string& detail) {
  throw gloo::IoException("Redis at " + where + " timed out: no answer before the rendezvous deadline" +
                          (detail.empty() ? "" : " (" + detail + ")"));
}

}  // namespace

BoundedRedisStore::BoundedRedisStore(const std::string& host, int port, Clock::time_point deadline)
    : RedisStore(host, port), where_(host + ":" + std::to_string(port)), deadline_(deadline) {}

void BoundedRedisStore::arm() const {
  const auto left = std::chrono::duration_cast<std::chrono::microseconds>(deadline_ - Clock::now());
  if (left.count() <= 0) throw_timed_out(where_, "");
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(left.count() / 1000000);
  tv.tv_usec = static_cast<suseconds_t>(left.count() % 1000000);
  if (redisSetTimeout(redis_, tv) != REDIS_OK) {
    throw gloo::IoException("Redis at " + where_ + ": cannot set the socket timeout: " + redis_->errstr);
  }
}

template <class F>
auto BoundedRedisStore::bounded(F&& command) -> decltype(command()) {
  arm();
  try {
    return command();
  } catch (const gloo::IoException& e) {
    // hiredis reports a socket timeout as an I/O error ("Resource
    // temporarily unavailable"); the deadline tells the two apart.
    if (Clock::now() >= deadline_) throw_timed_out(where_, e.what());
    throw;
  }
}

void BoundedRedisStore::set(const std::string& key, const std::vector<char>& data) {
  bounded([&] {
    RedisStore::set(key, data);
    return 0;
  });
}

std::vector<char> BoundedRedisStore::get(const std::string& key) {
  wait({key});
  // The base class's get() waits again (one EXISTS, answered at once now).
  return bounded([&] { return RedisStore::get(key); });
}

void BoundedRedisStore::wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) {
  const auto until = timeout == gloo::kNoTimeout ? deadline_ : std::min(deadline_, Clock::now() + timeout);
  while (!bounded([&] { return check(keys); })) {
    if (Clock::now() >= until) {
      std::string names;
      for (const auto& k : keys) names += (names.empty() ? "" : ", ") + k;
      throw gloo::IoException("Redis at " + where_ + ": wait for key(s) " + names + " timed out");
    }
    std::this_thread::sleep_for(std::min<Clock::duration>(kPoll, until - Clock::now()));
  }
}

}  // namespace mlos::collectives
