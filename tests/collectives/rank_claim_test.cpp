// SPDX-License-Identifier: Apache-2.0
// Rank claims in a TCPStore (ours, in this process): a claim whose holder is
// a dead process (or a zombie) of this host and pid namespace is taken
// over; any other holder (alive, on another host, in another namespace, an
// identity that does not parse) keeps the rank. The holders are real child
// processes, which the code under test reads from /proc.
#include "collectives/rank_claim.h"
#include "collectives/tcp_store.h"
#include "collectives/tcp_store_server.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace mlos::collectives {
namespace {

using std::chrono::milliseconds;

class RankClaimTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto server = TcpStoreServer::listen(0);
    ASSERT_TRUE(server) << server.error().message;
    server_ = std::move(*server);
    store_ = std::make_unique<TcpStore>("127.0.0.1", server_->port(), milliseconds(20000));
    config_.store = GroupConfig::StoreKind::kTcp;
    config_.prefix = "claims";
    config_.rank = 1;
    config_.world_size = 2;
  }

  // What the store says holds rank 1 after it was left holding `holder`
  // and this process tried to claim it; `claimed`: whether it got it.
  std::string claim_over(const std::string& holder, bool* claimed) {
    const std::string key = "claims/rank_claim/1";
    store_->set(key, std::vector<char>(holder.begin(), holder.end()));
    auto claim = claim_rank(config_, *store_);
    *claimed = static_cast<bool>(claim);
    if (!claim) {
      EXPECT_EQ(claim.error().code, MLOS_ERR_INVALID_ARGUMENT);
      EXPECT_NE(claim.error().message.find("rank 1 is already taken"), std::string::npos) << claim.error().message;
    }
    const auto held = store_->get(key);
    return {held.begin(), held.end()};
  }

  std::unique_ptr<TcpStoreServer> server_;
  std::unique_ptr<TcpStore> store_;
  GroupConfig config_;
};

// A child that writes its process_identity() to the parent and then waits
// (until killed) or exits at once.
struct Child {
  pid_t pid = -1;
  std::string identity;
};

Child start_child(bool stay) {
  int fds[2];
  EXPECT_EQ(::pipe(fds), 0);
  Child c;
  c.pid = ::fork();
  if (c.pid == 0) {
    ::close(fds[0]);
    const std::string me = process_identity();
    (void)!::write(fds[1], me.data(), me.size());
    ::close(fds[1]);
    if (stay) ::pause();
    ::_exit(0);
  }
  ::close(fds[1]);
  char buf[512];
  ssize_t n = 0;
  while ((n = ::read(fds[0], buf, sizeof buf)) > 0) c.identity.append(buf, static_cast<size_t>(n));
  ::close(fds[0]);
  return c;
}

void reap(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
}

TEST_F(RankClaimTest, AClaimOfADeadProcessOfThisHostIsTakenOver) {
  Child dead = start_child(false);
  reap(dead.pid);
  bool claimed = false;
  EXPECT_EQ(claim_over(dead.identity, &claimed), process_identity());
  EXPECT_TRUE(claimed) << dead.identity;
}

TEST_F(RankClaimTest, AZombieHoldersClaimIsTakenOver) {
  Child zombie = start_child(false);
  // Not reaped yet: /proc shows it as Z until waitpid.
  for (int i = 0; i < 2000; ++i) {
    siginfo_t info{};
    if (::waitid(P_PID, zombie.pid, &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == zombie.pid) break;
    ::usleep(1000);
  }
  bool claimed = false;
  EXPECT_EQ(claim_over(zombie.identity, &claimed), process_identity());
  EXPECT_TRUE(claimed);
  reap(zombie.pid);
}

TEST_F(RankClaimTest, ALiveHolderKeepsItsRank) {
  Child alive = start_child(true);
  bool claimed = true;
  EXPECT_EQ(claim_over(alive.identity, &claimed), alive.identity);
  EXPECT_FALSE(claimed);
  ::kill(alive.pid, SIGKILL);
  reap(alive.pid);
}

TEST_F(RankClaimTest, HoldersThatCannotBeCheckedHereKeepTheirRank) {
  Child dead = start_child(false);
  reap(dead.pid);
  // dead.identity is host:pid:start:pidns; the same dead process seen
  // from another host or pid namespace, or in a form that does not parse.
  const std::string ns = dead.identity.substr(dead.identity.rfind(':') + 1);
  const std::string without_ns = dead.identity.substr(0, dead.identity.rfind(':'));
  const std::string pid_start = without_ns.substr(without_ns.find(':') + 1);
  const std::vector<std::string> holders = {
      "another-host:" + pid_start + ":" + ns,
      without_ns + ":1",
      without_ns,  // the 3-field identity of earlier versions
      "garbage",
      without_ns + "x:" + ns,
  };
  for (const std::string& holder : holders) {
    bool claimed = true;
    EXPECT_EQ(claim_over(holder, &claimed), holder);
    EXPECT_FALSE(claimed) << holder;
  }
}

TEST_F(RankClaimTest, TheSameProcessMayClaimAgain) {
  bool claimed = false;
  EXPECT_EQ(claim_over(process_identity(), &claimed), process_identity());
  EXPECT_TRUE(claimed);
}

}  // namespace
}  // namespace mlos::collectives
