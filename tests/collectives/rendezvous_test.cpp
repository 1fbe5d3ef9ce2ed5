// SPDX-License-Identifier: Apache-2.0
// The rendezvous ends by its deadline on every store mlOS opens, and leaves
// no thread behind: a store that accepts connections and never answers (a
// SIGSTOPped redis-server, a wedged TCPStore), a rank that never comes, and
// a real redis-server for the ranks that do (tests/e2e/
// test_collectives_multihost.py runs Redis across network namespaces).
#include "collectives/group_config.h"
#include "collectives/process_group.h"
#include "os/own_threads.h"

#include <arpa/inet.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <array>
#include <future>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace mlos::collectives {
namespace {

using std::chrono::milliseconds;

// A loopback socket that listens and never accepts: the kernel completes
// the handshake, then nobody reads or replies.
class MuteServer {
 public:
  MuteServer() : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    EXPECT_EQ(::listen(fd_, 16), 0);
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
  }
  ~MuteServer() { ::close(fd_); }
  int port() const { return port_; }

 private:
  int fd_;
  int port_ = 0;
};

GroupConfig rank_of_two(int rank, milliseconds timeout) {
  GroupConfig c;
  c.rank = rank;
  c.world_size = 2;
  c.timeout = timeout;
  c.hostname = "127.0.0.1";
  return c;
}

size_t thread_count() {
  auto ids = os::own_thread_ids();
  EXPECT_TRUE(ids);
  return ids ? ids->size() : 0;
}

// connect() fails with `code`, and the process has no more threads after
// it returns than before it was called.
void expect_failure_without_a_thread_left(const GroupConfig& c, int code) {
  const size_t before = thread_count();
  auto group = ProcessGroup::connect(c);
  ASSERT_FALSE(group);
  EXPECT_EQ(group.error().code, code) << group.error().message;
  EXPECT_EQ(thread_count(), before) << "a rendezvous thread outlived connect(): " << group.error().message;
}

// Rank 0 of two, rendezvousing through a `kind` store at a server that
// accepts connections and never answers.
GroupConfig at_a_mute_store(GroupConfig::StoreKind kind, const MuteServer& mute) {
  GroupConfig c = rank_of_two(0, milliseconds(600));
  c.store = kind;
  c.redis_host = c.tcp_host = "127.0.0.1";
  c.redis_port = c.tcp_port = mute.port();
  return c;
}

TEST(Rendezvous, ARedisThatNeverAnswersIsATimeoutThatLeavesNoThread) {
  MuteServer mute;
  expect_failure_without_a_thread_left(at_a_mute_store(GroupConfig::StoreKind::kRedis, mute), MLOS_ERR_TIMEOUT);
}

TEST(Rendezvous, ATcpStoreThatNeverAnswersIsATimeoutThatLeavesNoThread) {
  MuteServer mute;
  expect_failure_without_a_thread_left(at_a_mute_store(GroupConfig::StoreKind::kTcp, mute), MLOS_ERR_TIMEOUT);
}

TEST(Rendezvous, ARankThatNeverComesIsATimeoutThatLeavesNoThread) {
  char dir[] = "/tmp/mlos-rendezvous-XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  GroupConfig c = rank_of_two(0, milliseconds(600));
  c.store = GroupConfig::StoreKind::kFile;
  c.store_path = std::string(dir) + "/store";
  expect_failure_without_a_thread_left(c, MLOS_ERR_TIMEOUT);
  (void)std::system(("rm -rf " + std::string(dir)).c_str());
}

// A redis-server of the test's own on a free loopback port; skips the test
// when the binary is missing (scripts/setup.sh installs it).
class RedisServer {
 public:
  RedisServer() {
    for (int attempt = 0; attempt < 5 && pid_ <= 0; ++attempt) {
      port_ = 20000 + static_cast<int>((::getpid() * 7919 + attempt * 104729) % 40000);
      const std::string port = std::to_string(port_);
      std::vector<std::string> args = {"redis-server", "--port", port, "--bind", "127.0.0.1", "--save", "",
                                       "--appendonly", "no", "--loglevel", "warning"};
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      pid_t pid = 0;
      if (::posix_spawnp(&pid, "redis-server", nullptr, nullptr, argv.data(), environ) != 0) return;
      if (answers_within(std::chrono::seconds(20))) {
        pid_ = pid;
      } else {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
      }
    }
  }
  ~RedisServer() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  bool running() const { return pid_ > 0; }
  int port() const { return port_; }

 private:
  bool answers_within(std::chrono::seconds patience) const {
    const auto until = std::chrono::steady_clock::now() + patience;
    while (std::chrono::steady_clock::now() < until) {
      redisContext* c = redisConnect("127.0.0.1", port_);
      bool ok = false;
      if (c != nullptr && c->err == 0) {
        auto* reply = static_cast<redisReply*>(redisCommand(c, "PING"));
        ok = reply != nullptr && reply->type == REDIS_REPLY_STATUS;
        if (reply != nullptr) freeReplyObject(reply);
      }
      if (c != nullptr) redisFree(c);
      if (ok) return true;
      std::this_thread::sleep_for(milliseconds(50));
    }
    return false;
  }
  pid_t pid_ = -1;
  int port_ = 0;
};

GroupConfig on_redis(int rank, const RedisServer& redis, milliseconds timeout, const std::string& prefix) {
  GroupConfig c = rank_of_two(rank, timeout);
  c.store = GroupConfig::StoreKind::kRedis;
  c.redis_host = "127.0.0.1";
  c.redis_port = redis.port();
  c.prefix = prefix;
  return c;
}

TEST(Rendezvous, TwoRanksMeetThroughARealRedisAndALoneOneTimesOutWithoutAThreadLeft) {
  RedisServer redis;
  if (!redis.running()) GTEST_SKIP() << "cannot start redis-server (Debian package redis-server)";
  // Generous: a busy 2-core machine must never fail this by being slow.
  constexpr milliseconds kPatient{30000};
  auto other = std::async(std::launch::async, [&] { return ProcessGroup::connect(on_redis(1, redis, kPatient, "pair")); });
  auto mine = ProcessGroup::connect(on_redis(0, redis, kPatient, "pair"));
  auto theirs = other.get();
  ASSERT_TRUE(mine) << mine.error().message;
  ASSERT_TRUE(theirs) << theirs.error().message;
  std::array<float, 3> a{1, 2, 3}, b{10, 20, 30};
  auto reduced = std::async(std::launch::async, [&] { return (*theirs)->allreduce(b.data(), b.size(), DataType::kFloat32, MLOS_REDUCE_SUM); });
  ASSERT_TRUE((*mine)->allreduce(a.data(), a.size(), DataType::kFloat32, MLOS_REDUCE_SUM));
  ASSERT_TRUE(reduced.get());
  EXPECT_EQ(a, (std::array<float, 3>{11, 22, 33}));
  EXPECT_EQ(b, a);

  // Alone under another prefix: its peer's key never appears.
  expect_failure_without_a_thread_left(on_redis(0, redis, milliseconds(600), "alone"), MLOS_ERR_TIMEOUT);
}

}  // namespace
}  // namespace mlos::collectives
