// SPDX-License-Identifier: Apache-2.0
// torch's TCPStore protocol between our client and our server, in one
// process over loopback: what the keys hold, waits that end and waits that
// time out, a client that starts before the server, hostile bytes that
// cost only their own connection, and a server that leaves no thread
// behind. (torch's own client and server against ours: tests/e2e/
// test_tcp_store.py.)
#include "collectives/tcp_store.h"
#include "collectives/tcp_store_rendezvous.h"
#include "collectives/tcp_store_server.h"
#include "os/own_threads.h"
#include "tcp_store_raw_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>
#include <future>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace mlos::collectives {
namespace {

using std::chrono::milliseconds;
using tcpstore::Query;
using namespace store_test;

TEST(TcpStore, ClientsShareKeysCountersAndWaits) {
  auto server = serve();
  ASSERT_TRUE(server);
  TcpStore a("127.0.0.1", server->port(), kPatient);
  TcpStore b("localhost", server->port(), kPatient);
  a.set("k", bytes("value one"));
  EXPECT_EQ(text(b.get("k")), "value one");
  b.set("k", bytes(""));
  EXPECT_EQ(text(a.get("k")), "");
  EXPECT_EQ(a.add("n", 5), 5);
  EXPECT_EQ(b.add("n", -7), -2);
  EXPECT_EQ(text(a.get("n")), "-2");  // counters are decimal text, as in torch
  EXPECT_TRUE(a.check({"k", "n"}));
  EXPECT_FALSE(a.check({"k", "absent"}));

  // b's get waits for a key that a sets afterwards, or finds it set.
  auto later = std::async(std::launch::async, [&] { return text(b.get("late")); });
  a.set("late", bytes("here"));
  EXPECT_EQ(later.get(), "here");
  b.wait({"k", "n", "late"});
}

TEST(TcpStore, CompareSetSetsOnlyAnAbsentOrExpectedValue) {
  auto server = serve();
  ASSERT_TRUE(server);
  TcpStore a("127.0.0.1", server->port(), kPatient);
  TcpStore b("127.0.0.1", server->port(), kPatient);
  EXPECT_EQ(text(a.compare_set("claim", {}, bytes("a"))), "a");  // absent: set
  EXPECT_EQ(text(b.compare_set("claim", {}, bytes("b"))), "a");  // held: unchanged, the holder answered
  EXPECT_EQ(text(a.compare_set("claim", {}, bytes("a"))), "a");  // the holder again: still its own
  EXPECT_EQ(text(b.compare_set("claim", bytes("a"), bytes("b"))), "b");  // the expected value: swapped
  EXPECT_EQ(text(a.get("claim")), "b");
  // torch's answer for an absent key with an expected value: that value, nothing set.
  EXPECT_EQ(text(a.compare_set("absent", bytes("x"), bytes("y"))), "x");
  EXPECT_FALSE(a.check({"absent"}));
}

TEST(TcpStore, AWaitThatRunsOutIsTimedOutAndTheConnectionStaysUsable) {
  auto server = serve();
  ASSERT_TRUE(server);
  TcpStore a("127.0.0.1", server->port(), kPatient);
  try {
    a.wait({"never"}, milliseconds(50));
    FAIL() << "a wait for a key nobody sets returned";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("timed out"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("never"), std::string::npos) << e.what();
  }
  a.set("after", bytes("x"));  // the cancelled wait left the connection in step
  EXPECT_EQ(text(a.get("after")), "x");
  TcpStore b("127.0.0.1", server->port(), kPatient);
  b.set("never", bytes("now"));  // a cancelled waiter is not woken (nothing is sent to it)
  EXPECT_EQ(text(a.get("never")), "now");
}

TEST(TcpStore, AClientStartedBeforeTheServerConnectsOnceItListens) {
  const uint16_t port = free_port();
  auto client = std::async(std::launch::async, [&] {
    TcpStore early("127.0.0.1", port, kPatient);
    return text(early.get("ready"));
  });
  auto server = TcpStoreServer::listen(port);
  ASSERT_TRUE(server) << server.error().message;
  TcpStore late("127.0.0.1", port, kPatient);
  late.set("ready", bytes("yes"));
  EXPECT_EQ(client.get(), "yes");
}

TEST(TcpStore, NobodyListeningIsATimeoutNamingTheAddress) {
  const uint16_t port = free_port();
  const std::string address = "127.0.0.1:" + std::to_string(port);
  EXPECT_EQ(TcpStore::probe("127.0.0.1", port, milliseconds(200)), nullptr);
  try {
    TcpStore s("127.0.0.1", port, milliseconds(300));
    FAIL() << "connected to " << address << " where nothing listens";
  } catch (const std::runtime_error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find(address), std::string::npos) << m;
    EXPECT_NE(m.find("timed out"), std::string::npos) << m;
    EXPECT_NE(m.find("refused"), std::string::npos) << m;
  }
  auto r = open_tcp_store("127.0.0.1", port, /*may_serve=*/false, milliseconds(200));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, MLOS_ERR_TIMEOUT);
}

TEST(TcpStore, SomethingElseAtTheAddressIsNotMistakenForAStore) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(fd, 4), 0);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  std::thread imposter([fd] {
    const int c = ::accept(fd, nullptr, nullptr);
    char request[9];
    (void)!::recv(c, request, sizeof request, MSG_WAITALL);
    (void)!::send(c, "HTTP", 4, MSG_NOSIGNAL);  // four bytes, but not the nonce
    char rest;
    (void)!::recv(c, &rest, 1, 0);  // until the client hangs up
    ::close(c);
  });
  auto r = open_tcp_store("127.0.0.1", ntohs(a.sin_port), /*may_serve=*/false, kPatient);
  imposter.join();
  ::close(fd);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, MLOS_ERR_IO);
  EXPECT_NE(r.error().message.find("not as a TCPStore"), std::string::npos) << r.error().message;
}

TEST(TcpStoreServer, HostileBytesCloseOnlyTheirOwnConnection) {
  auto server = serve();
  ASSERT_TRUE(server);
  TcpStore good("127.0.0.1", server->port(), kPatient);
  good.set("survives", bytes("yes"));
  const uint64_t huge = uint64_t{1} << 40;
  const std::vector<std::string> attacks = {
      "GET / HTTP/1.1\r\n\r\n",                                             // not VALIDATE first
      query(Query::kValidate) + raw<uint32_t>(0xdeadbeef),                  // wrong magic
      validate() + query(Query::kSet) + raw<uint64_t>(huge),                // a key of 1 TiB
      validate() + query(Query::kSet) + framed("k") + raw<uint64_t>(huge),  // a value of 1 TiB
      validate() + query(Query::kWait) + raw<uint64_t>(huge),               // 2^40 keys
      validate() + query(Query::kMultiSet) + raw<uint64_t>(1000000),        // over 128Ki pairs
      validate() + std::string(1, '\x7f'),                                  // no such query
      validate() + validate(),                                              // VALIDATE again
      validate() + query(Query::kSet) + framed("/c") + framed("abc") +      // ADD to a non-number
          query(Query::kAdd) + framed("/c") + raw<int64_t>(1),
  };
  for (const auto& attack : attacks) {
    RawClient hostile(server->port());
    hostile.send(attack);
    EXPECT_TRUE(hostile.closed_by_server()) << "still open after " << attack.size() << " hostile bytes";
  }
  // Everyone else is served as before.
  EXPECT_EQ(text(good.get("survives")), "yes");
  TcpStore fresh("127.0.0.1", server->port(), kPatient);
  EXPECT_EQ(text(fresh.get("survives")), "yes");
}

// Seeded random requests: valid query bytes followed by random lengths
// and contents (small lengths, so many requests parse and run), sent after
// a proper VALIDATE; the client hangs up wherever its bytes end.
TEST(TcpStoreServer, RandomRequestsNeverHurtTheServer) {
  auto server = serve();
  ASSERT_TRUE(server);
  std::mt19937_64 random(20240611);
  for (int round = 0; round < 300; ++round) {
    std::string stream = validate();
    const int requests = 1 + static_cast<int>(random() % 8);
    for (int r = 0; r < requests; ++r) {
      stream += static_cast<char>(random() % 20);
      const int fields = static_cast<int>(random() % 5);
      for (int f = 0; f < fields; ++f) {
        const uint64_t len = random() % 4 == 0 ? random() : random() % 12;
        stream += raw<uint64_t>(len);
        for (uint64_t i = 0; i < std::min<uint64_t>(len, 12); ++i) stream += static_cast<char>(random());
      }
    }
    RawClient hostile(server->port());
    hostile.send(stream);
  }
  TcpStore client("127.0.0.1", server->port(), kPatient);
  client.set("after", bytes("fine"));
  EXPECT_EQ(text(client.get("after")), "fine");
}

TEST(TcpStoreServer, RequestsSplitAnywhereOrSentTogetherAreAnsweredInOrder) {
  auto server = serve();
  ASSERT_TRUE(server);
  RawClient c(server->port());
  const std::string set = query(Query::kSet) + framed("/k") + framed("abc");
  const std::string stream = validate() + set + query(Query::kGet) + framed("/k") + query(Query::kPing) +
                             raw<uint32_t>(77) + query(Query::kGetNumKeys);
  for (char byte : stream) c.send(std::string(1, byte));  // one byte at a time
  EXPECT_EQ(c.receive(8 + 3 + 4 + 8), framed("abc") + raw<uint32_t>(77) + raw<int64_t>(1));
  c.send(query(Query::kCompareSet) + framed("/k") + framed("abc") + framed("xyz") +  // matches: swapped
         query(Query::kCompareSet) + framed("/k") + framed("abc") + framed("no") +   // does not: kept
         query(Query::kCompareSet) + framed("/new") + framed("") + framed("v") +     // absent, expected empty
         query(Query::kDeleteKey) + framed("/k") + query(Query::kDeleteKey) + framed("/k"));
  EXPECT_EQ(c.receive(11 + 11 + 9 + 16), framed("xyz") + framed("xyz") + framed("v") + raw<int64_t>(1) +
                                             raw<int64_t>(0));
}

TEST(TcpStoreServer, ManyClientsAtOnce) {
  auto server = serve();
  ASSERT_TRUE(server);
  std::vector<std::unique_ptr<TcpStore>> clients;
  for (int i = 0; i < 100; ++i) {
    clients.push_back(std::make_unique<TcpStore>("127.0.0.1", server->port(), kPatient));
    clients.back()->set("c" + std::to_string(i), bytes(std::to_string(i * i)));
  }
  std::vector<std::future<int64_t>> adds;
  for (auto& c : clients) adds.push_back(std::async(std::launch::async, [&c] { return c->add("total", 1); }));
  for (auto& a : adds) a.get();
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(text(clients[(i + 1) % 100]->get("c" + std::to_string(i))), std::to_string(i * i));
  }
  EXPECT_EQ(text(clients[0]->get("total")), "100");
}

TEST(TcpStoreServer, StopsItsThreadAndClosesItsConnections) {
  auto before = os::own_thread_ids();
  ASSERT_TRUE(before);
  auto server = serve();
  ASSERT_TRUE(server);
  RawClient c(server->port());
  c.send(validate() + query(Query::kWait) + raw<uint64_t>(1) + framed("/never"));
  EXPECT_EQ(os::own_thread_ids()->size(), before->size() + 1);
  server.reset();
  EXPECT_TRUE(c.closed_by_server());
  EXPECT_EQ(os::own_thread_ids()->size(), before->size());
}

TEST(TcpStoreServer, RankZeroServesWhenNobodyDoesAndFindsItsOwnServerAgain) {
  const uint16_t port = free_port();
  auto first = open_tcp_store("127.0.0.1", port, /*may_serve=*/true, kPatient);
  ASSERT_TRUE(first) << first.error().message;
  (*first)->set("from-first", bytes("1"));
  // A later group of this process (or any rank) finds the same server.
  auto second = open_tcp_store("127.0.0.1", port, /*may_serve=*/true, kPatient);
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_EQ(text((*second)->get("from-first")), "1");
  TcpStore other("127.0.0.1", port, kPatient);
  EXPECT_EQ(text(other.get("from-first")), "1");
}

TEST(TcpStoreServer, ATakenPortIsAnIoErrorWithItsErrno) {
  auto server = serve();
  ASSERT_TRUE(server);
  auto again = TcpStoreServer::listen(server->port());
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code, MLOS_ERR_IO);
  EXPECT_EQ(again.error().sys_errno, EADDRINUSE);
  EXPECT_NE(again.error().message.find(std::to_string(server->port())), std::string::npos);
}

}  // namespace
}  // namespace mlos::collectives
