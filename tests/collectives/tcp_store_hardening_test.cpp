// SPDX-License-Identifier: Apache-2.0
// Rank 0's TCPStore server against a local user who connects to it: the
// red team's attacks (issue 48), each asserting memory (the process's RSS
// and the server's own account), descriptors or counted steps, never time.
// Deadlines are shortened through the server's options so that the tests
// wait for events, not for the defaults.
#include <ifaddrs.h>
#include <net/if.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <dirent.h>
#include <fcntl.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <future>
#include <sstream>
#include <thread>

#include "collectives/tcp_store_rendezvous.h"
#include "tcp_store_raw_client.h"

namespace mlos::collectives {
namespace {

using namespace store_test;

// Sanitizers add shadow memory to every allocation: RSS is then no measure.
#if defined(__SANITIZE_ADDRESS__) || defined(MLOS_TEST_UNDER_ASAN) || defined(__SANITIZE_THREAD__)
constexpr bool kRssIsExact = false;
#else
constexpr bool kRssIsExact = true;
#endif

size_t rss_bytes() {
  std::ifstream statm("/proc/self/statm");
  size_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * static_cast<size_t>(::sysconf(_SC_PAGESIZE));
}

// This process's open descriptors; SIZE_MAX when it cannot open one more
// to count them.
size_t own_descriptors() {
  DIR* d = ::opendir("/proc/self/fd");
  if (!d) return SIZE_MAX;
  size_t n = 0;
  while (::readdir(d)) ++n;
  ::closedir(d);
  return n - 2;  // "." and ".."; the directory's own descriptor is one more
}

// Two round trips on a fresh connection: once the second is answered, what
// was sent to the server before the first has been handled, and the
// figures of that loop turn are published.
void settle(uint16_t port) {
  RawClient c(port);
  c.send(validate());
  for (uint32_t i = 0; i < 2; ++i) {
    c.send(query(Query::kPing) + raw(i));
    ASSERT_EQ(c.receive(4), raw(i));
  }
}

std::string key_list(Query q, size_t n, const std::string& stem) {
  std::string s = query(q) + raw<uint64_t>(n);
  for (size_t i = 0; i < n; ++i) s += framed(stem + std::to_string(i));
  return s;
}

TEST(TcpStoreServerBounds, AMultiGetRefersToTheStoredValueInsteadOfCopyingIt) {
  auto server = serve();
  ASSERT_TRUE(server);
  const std::string big(8u << 20, 'v');
  RawClient writer(server->port());
  writer.send(validate() + query(Query::kSet) + framed("/big") + framed(big));
  settle(server->port());
  const size_t before = rss_bytes();
  // Eight connections that never read ask for the value seven times each:
  // 56 MiB of replies apiece, under the 64 MiB a connection may have pending.
  std::string seven = query(Query::kMultiGet) + raw<uint64_t>(7);
  for (int i = 0; i < 7; ++i) seven += framed("/big");
  std::vector<std::unique_ptr<RawClient>> hostile;
  for (int i = 0; i < 8; ++i) {
    hostile.push_back(std::make_unique<RawClient>(server->port()));
    hostile.back()->send(validate() + seven);
  }
  settle(server->port());
  const auto s = server->stats();
  EXPECT_LT(s.value_bytes, 9u << 20) << "one value, however many replies refer to it";
  EXPECT_LT(s.output_bytes, 1u << 20);
  EXPECT_LT(s.memory_bytes, 10u << 20);
  if (kRssIsExact) {
    EXPECT_LT(rss_bytes() - before, 32u << 20) << "RSS grew by " << ((rss_bytes() - before) >> 20) << " MiB";
  }
  TcpStore good("127.0.0.1", server->port(), kPatient);
  EXPECT_EQ(good.get("big").size(), big.size());
}

TEST(TcpStoreServerBounds, RequestsBeingReceivedAreBoundedTogether) {
  auto server = serve();
  ASSERT_TRUE(server);
  settle(server->port());
  const std::string value(8u << 20, 'x');
  const size_t before = rss_bytes();
  // Eight MULTI_SETs of six 8 MiB values, each but its last byte sent:
  // 384 MiB of unfinished requests against a 128 MiB bound.
  std::vector<std::unique_ptr<RawClient>> hostile;
  std::vector<std::thread> senders;
  for (int i = 0; i < 8; ++i) hostile.push_back(std::make_unique<RawClient>(server->port()));
  for (auto& h : hostile) {
    senders.emplace_back([&value, fd = h->fd()] {
      const timeval patient{20, 0};
      ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &patient, sizeof patient);
      std::string head = validate() + query(Query::kMultiSet) + raw<uint64_t>(6);
      for (int k = 0; k < 6; ++k) {
        head += framed("/k" + std::to_string(k)) + raw<uint64_t>(value.size());
        const size_t n = k == 5 ? value.size() - 1 : value.size();
        if (::send(fd, head.data(), head.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(head.size())) return;
        for (size_t off = 0; off < n;) {
          const ssize_t sent = ::send(fd, value.data() + off, n - off, MSG_NOSIGNAL);
          if (sent <= 0) return;  // closed by the server
          off += static_cast<size_t>(sent);
        }
        head.clear();
      }
    });
  }
  for (auto& t : senders) t.join();
  settle(server->port());
  const auto s = server->stats();
  EXPECT_LE(s.input_bytes, (128u << 20) + 9 * (64u << 10));
  EXPECT_GE(s.refused, 4u) << "the senders past the bound were closed";
  if (kRssIsExact) {
    EXPECT_LT(rss_bytes() - before, 176u << 20) << "RSS grew by " << ((rss_bytes() - before) >> 20) << " MiB";
  }
  TcpStore good("127.0.0.1", server->port(), kPatient);
  good.set("after", bytes("fine"));
  EXPECT_EQ(text(good.get("after")), "fine");
}

TEST(TcpStoreServerBounds, AWaitOfManyKeysCostsStepsInProportionToThem) {
  auto server = serve();
  ASSERT_TRUE(server);
  constexpr size_t n = 131072;
  RawClient waiter(server->port());
  waiter.send(validate() + key_list(Query::kWait, n, "/w"));  // 1.9 MB, read in pieces
  settle(server->port());
  const auto waiting = server->stats();
  EXPECT_LE(waiting.wait_steps, 2 * n);
  EXPECT_LE(waiting.scan_steps, 4 * n);
  // One MULTI_SET of them all: the waiter is woken once, one step per key.
  std::string set_all = query(Query::kMultiSet) + raw<uint64_t>(n);
  for (size_t i = 0; i < n; ++i) set_all += framed("/w" + std::to_string(i)) + framed("");
  RawClient setter(server->port());
  setter.send(validate() + set_all);
  EXPECT_EQ(waiter.receive(1), std::string(1, static_cast<char>(tcpstore::kStopWaiting)));
  settle(server->port());
  const auto woken = server->stats();
  EXPECT_LE(woken.wait_steps, 4 * n);
  EXPECT_LE(woken.scan_steps, 8 * n);
  // A cancelled wait of as many keys is as cheap to forget.
  RawClient canceller(server->port());
  canceller.send(validate() + key_list(Query::kWait, n, "/c") + query(Query::kCancelWait));
  EXPECT_EQ(canceller.receive(1), std::string(1, static_cast<char>(tcpstore::kWaitCanceled)));
  settle(server->port());
  EXPECT_LE(server->stats().wait_steps, 7 * n);
}

// A non-loopback IPv4 address of this machine (host byte order); 0: none.
uint32_t outside_address() {
  ifaddrs* all = nullptr;
  if (::getifaddrs(&all) != 0) return 0;
  uint32_t found = 0;
  for (const ifaddrs* i = all; i && !found; i = i->ifa_next) {
    if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || !(i->ifa_flags & IFF_UP)) continue;
    const uint32_t a = ntohl(reinterpret_cast<const sockaddr_in*>(i->ifa_addr)->sin_addr.s_addr);
    if ((a >> 24) != 127) found = a;
  }
  ::freeifaddrs(all);
  return found;
}

TEST(TcpStoreServerBounds, RankZeroAskedForLoopbackListensOnLoopbackOnly) {
  const uint32_t outside = outside_address();
  if (outside == 0) GTEST_SKIP() << "this machine has no address but loopback to try from";
  const uint16_t port = free_port();
  auto store = open_tcp_store("127.0.0.1", port, /*may_serve=*/true, kPatient);
  ASSERT_TRUE(store) << store.error().message;
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(outside);
  a.sin_port = htons(port);
  const int rc = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  const int e = errno;
  ::close(fd);
  EXPECT_EQ(rc, -1) << "the store answered on a non-loopback address";
  EXPECT_EQ(e, ECONNREFUSED);

  TcpStoreServerOptions o;
  o.host = "localhost";
  auto local = TcpStoreServer::listen(o);
  ASSERT_TRUE(local) << local.error().message;
  EXPECT_EQ(local->get()->where().find("every"), std::string::npos) << local->get()->where();
  TcpStore client("localhost", local->get()->port(), kPatient);
  client.set("k", bytes("v"));
  EXPECT_EQ(text(client.get("k")), "v");
}

// Restores RLIMIT_NOFILE's soft limit when the test ends.
struct SoftLimit {
  rlimit saved{};
  explicit SoftLimit(rlim_t soft) {
    ::getrlimit(RLIMIT_NOFILE, &saved);
    rlimit r = saved;
    r.rlim_cur = std::min(soft, saved.rlim_max);
    EXPECT_EQ(::setrlimit(RLIMIT_NOFILE, &r), 0);
  }
  ~SoftLimit() { ::setrlimit(RLIMIT_NOFILE, &saved); }
};

TEST(TcpStoreServerBounds, ListenRaisesTheSoftDescriptorLimitToTheHardOne) {
  rlimit r{};
  ::getrlimit(RLIMIT_NOFILE, &r);
  if (r.rlim_max <= 512) GTEST_SKIP() << "the hard limit is " << r.rlim_max;
  SoftLimit low(512);
  auto server = serve();
  ASSERT_TRUE(server);
  rlimit now{};
  ::getrlimit(RLIMIT_NOFILE, &now);
  EXPECT_EQ(now.rlim_cur, r.rlim_max);
}

TEST(TcpStoreServerBounds, AFloodOfConnectionsLeavesTheProcessItsDescriptors) {
  TcpStoreServerOptions o;
  o.host = "127.0.0.1";
  auto server = TcpStoreServer::listen(o);
  ASSERT_TRUE(server) << server.error().message;
  const uint16_t port = server->get()->port();
  SoftLimit low(256);  // after listen(), which raised it: as an application may
  // The attacker: a process with descriptors of its own, 600 connections
  // that validate and then idle (as a rank may: no deadline closes them).
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t attacker = ::fork();
  ASSERT_GE(attacker, 0);
  if (attacker == 0) {
    rlimit r{};
    ::getrlimit(RLIMIT_NOFILE, &r);
    r.rlim_cur = r.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &r);
    for (int i = 0; i < 600; ++i) {
      const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      a.sin_port = htons(port);
      if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
        const std::string v = validate();
        (void)!::send(fd, v.data(), v.size(), MSG_NOSIGNAL);
      }
    }
    (void)!::write(ready[1], "x", 1);
    ::pause();
    ::_exit(0);
  }
  struct Killed {  // however the test ends
    pid_t pid;
    int fds[2];
    ~Killed() {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);  // ECHILD when already reaped
      ::close(fds[0]);
      ::close(fds[1]);
    }
  } killed{attacker, {ready[0], ready[1]}};
  char x;
  ASSERT_EQ(::read(ready[0], &x, 1), 1);
  // The server took what it would of the flood, and turned the rest away:
  // at most half the limit.
  for (int i = 0; i < 2000 && server->get()->stats().connections + server->get()->stats().refused < 600; ++i) {
    std::this_thread::sleep_for(milliseconds(10));
  }
  const auto s = server->get()->stats();
  EXPECT_LE(s.connections, 128u);
  EXPECT_LT(own_descriptors(), 256u - 16);
  const int probe = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  EXPECT_GE(probe, 0) << "the training process could not open a file: " << std::strerror(errno);
  if (probe >= 0) ::close(probe);
  // Once the attacker is gone, a rank gets in.
  ::kill(attacker, SIGKILL);
  ::waitpid(attacker, nullptr, 0);
  TcpStore rank("127.0.0.1", port, kPatient);
  rank.set("joined", bytes("yes"));
  EXPECT_EQ(text(rank.get("joined")), "yes");
}

TEST(TcpStoreServerBounds, UnvalidatedAndStalledConnectionsAreClosedIdleValidatedOnesStay) {
  TcpStoreServerOptions o;
  o.validate_within = milliseconds(300);
  o.request_within = milliseconds(300);
  auto server = TcpStoreServer::listen(o);
  ASSERT_TRUE(server) << server.error().message;
  const uint16_t port = server->get()->port();
  TcpStore idle("127.0.0.1", port, kPatient);  // validated, then silent
  RawClient silent(port);                      // never validates
  RawClient stalled(port);                     // validates, then stops mid-request
  stalled.send(validate() + query(Query::kSet) + raw<uint64_t>(100) + "/only-part");
  RawClient trickle(port);  // one byte of VALIDATE at a time, slowly
  std::promise<void> stop;
  auto trickling = std::async(std::launch::async, [&trickle, done = stop.get_future()] {
    const std::string v = validate();
    for (size_t i = 0; i < v.size() - 1; ++i) {
      if (done.wait_for(milliseconds(100)) == std::future_status::ready) return;
      (void)::send(trickle.fd(), v.data() + i, 1, MSG_NOSIGNAL);
    }
  });
  EXPECT_TRUE(silent.closed_by_server());
  EXPECT_TRUE(stalled.closed_by_server());
  EXPECT_TRUE(trickle.closed_by_server());
  stop.set_value();
  trickling.get();
  // Older than all three, and silent longer: still served.
  idle.set("still", bytes("here"));
  EXPECT_EQ(text(idle.get("still")), "here");
}

TEST(TcpStoreServerSecret, OnlyClientsWithTheSecretAreServed) {
  const std::string secret = "0123456789abcdef-group";
  TcpStoreServerOptions o;
  o.host = "127.0.0.1";
  o.secret = secret;
  auto server = TcpStoreServer::listen(o);
  ASSERT_TRUE(server) << server.error().message;
  const uint16_t port = server->get()->port();
  TcpStore rank("127.0.0.1", port, kPatient, secret);
  rank.set("claim", bytes("rank 1"));
  // torch's client (VALIDATE, then a request) is refused, as is a wrong secret.
  RawClient torch_like(port);
  torch_like.send(validate() + query(Query::kListKeys));
  EXPECT_TRUE(torch_like.closed_by_server());
  RawClient wrong(port);
  wrong.send(validate() + query(Query::kMlosAuth) + framed("0123456789abcdef-other"));
  EXPECT_TRUE(wrong.closed_by_server());
  try {
    TcpStore intruder("127.0.0.1", port, milliseconds(300), "0123456789abcdef-other");
    FAIL() << "a client with another secret was served";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("MLOS_STORE_SECRET"), std::string::npos) << e.what();
  }
  EXPECT_EQ(text(rank.compare_set("claim", {}, bytes("intruder"))), "rank 1");
}

TEST(TcpStoreServerSecret, WithoutOneTorchClientsAreServedAndARankWithOneIsRefused) {
  auto server = serve();
  ASSERT_TRUE(server);
  RawClient torch_like(server->port());
  torch_like.send(validate() + query(Query::kPing) + raw<uint32_t>(7));
  EXPECT_EQ(torch_like.receive(4), raw<uint32_t>(7));
  try {
    TcpStore rank("127.0.0.1", server->port(), kPatient, "0123456789abcdef-group");
    FAIL() << "a rank with a secret used a store without one";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("takes no secret"), std::string::npos) << e.what();
  }
  TcpStoreServerOptions o;
  o.secret = "short";
  auto refused = TcpStoreServer::listen(o);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, MLOS_ERR_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace mlos::collectives
