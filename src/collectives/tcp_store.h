/* SPDX-License-Identifier: Apache-2.0 */
// A Gloo rendezvous store that is a client of torch's TCPStore, spoken on
// the wire by this library (no torch inside): C ranks meet the other ranks
// of a torchrun or MASTER_ADDR/MASTER_PORT launch at the same server as
// torch's own ranks, and see the same keys. The server is torch's (a
// torchrun agent, a Python rank 0) or ours (tcp_store_server.h).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <gloo/rendezvous/store.h>

#include "os/unique_fd.h"

namespace mlos::collectives {

// torch's TCPStore protocol, as torch 2.x speaks it (c10d's TCPStore.cpp
// client, TCPStoreBackend.hpp enums, TCPStoreLibUvBackend.cpp server; the
// bytes were checked against the 2.15 client). A request is one query byte
// and its arguments; integers are in host byte order (torch copies them
// raw, so both ends must agree: every platform torch runs on is
// little-endian); a key or a value is a uint64 length and its bytes; a key
// list is a uint64 count and that many keys. A connection's first request
// is VALIDATE with the magic number (no reply); PING then echoes a uint32.
namespace tcpstore {

constexpr uint32_t kValidationMagic = 0x3C85F7CE;

enum class Query : uint8_t {
  kValidate = 0,    // u32 magic                 -> (nothing)
  kSet = 1,         // key, value                -> (nothing)
  kCompareSet = 2,  // key, expected, desired    -> value now held
  kGet = 3,         // key                       -> value (empty if absent)
  kAdd = 4,         // key, i64 delta            -> i64 sum (kept as decimal text)
  kCheck = 5,       // keys                      -> u8 kReady / kNotReady
  kWait = 6,        // keys                      -> u8 kStopWaiting once all exist
  kGetNumKeys = 7,  //                           -> i64
  kDeleteKey = 8,   // key                       -> i64 keys deleted
  kAppend = 9,      // key, value                -> (nothing)
  kMultiGet = 10,   // keys                      -> one value per key
  kMultiSet = 11,   // u64 count, (key, value)*  -> (nothing)
  kCancelWait = 12, //                           -> u8 kWaitCanceled
  kPing = 13,       // u32 nonce                 -> u32 nonce
  kQueuePush = 14,  // key, value                -> (nothing)
  kQueuePop = 15,   // key                       -> i64 length, then a value if it was > 0
  kQueueLen = 16,   // key                       -> i64
  kListKeys = 17,   //                           -> i64 count, that many keys
  kBarrier = 18,    // key, i64 world size       -> u8 kStopWaiting once that many arrived
  // mlOS's own, outside torch's numbers (torch's server closes a connection
  // that sends it): the group secret, right after VALIDATE, when the
  // client has one (MLOS_STORE_SECRET). Our server with no secret answers
  // kAuthNotAsked, which our client refuses rather than run unprotected.
  kMlosAuth = 0xA5, // value (the secret)        -> u8 kAuthAccepted / kAuthNotAsked, or closed
};

constexpr uint8_t kReady = 0, kNotReady = 1;           // CHECK's reply
constexpr uint8_t kStopWaiting = 0, kWaitCanceled = 1;  // WAIT's and CANCEL_WAIT's
constexpr uint8_t kAuthAccepted = 0, kAuthNotAsked = 1;  // MLOS_AUTH's

// torch's client puts this before every key a caller names, so keys set
// here are the keys torch's `store.get(name)` reads, and the reverse.
constexpr char kKeyPrefix[] = "/";

// What the server accepts (torch's libuv server refuses the same lengths).
constexpr uint64_t kMaxKeyBytes = 8 * 1024;
constexpr uint64_t kMaxValueBytes = 8 * 1024 * 1024;
constexpr uint64_t kMaxKeysPerRequest = 128 * 1024;
constexpr uint64_t kMaxRequestBytes = 64 * 1024 * 1024;
// A group secret's length, in bytes.
constexpr size_t kMinSecretBytes = 16, kMaxSecretBytes = 256;

}  // namespace tcpstore

class TcpStore final : public gloo::rendezvous::Store {
 public:
  // Connects to host:port, retrying with backoff until `timeout` has passed
  // (ranks may start before the server listens), then validates, sends
  // `secret` when there is one (MLOS_AUTH: a server that does not take it
  // fails the connection), and pings. `timeout` also bounds every later
  // read and write and is the default wait. Errors are std::runtime_error
  // (Gloo's store interface throws) naming host:port; a message says
  // "timed out" when time ran out.
  TcpStore(std::string host, uint16_t port, std::chrono::milliseconds timeout, std::string secret = {});
  ~TcpStore() override;
  TcpStore(const TcpStore&) = delete;
  TcpStore& operator=(const TcpStore&) = delete;

  // One attempt, no retry: nullptr when nothing accepts a connection at
  // host:port; the connected store when a TCPStore answers. Throws when
  // something answers that is not a TCPStore, or does not answer in time.
  static std::unique_ptr<TcpStore> probe(const std::string& host, uint16_t port, std::chrono::milliseconds timeout,
                                         const std::string& secret = {});

  void set(const std::string& key, const std::vector<char>& data) override;
  // Waits up to the store's timeout for the key, then reads it.
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override { wait(keys, timeout_); }
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override;
  // Beyond Gloo's interface, as torch's store has them.
  int64_t add(const std::string& key, int64_t delta);
  // Sets `key` to `desired` when it is absent and `expected` is empty, or
  // when it holds `expected`; returns the value held afterwards (torch's
  // semantics, an absent key with a non-empty `expected` answers `expected`).
  std::vector<char> compare_set(const std::string& key, const std::vector<char>& expected,
                                const std::vector<char>& desired);
  bool check(const std::vector<std::string>& keys);

  // "host:port", IPv6 hosts in brackets.
  const std::string& address() const { return address_; }

 private:
  struct Connected {};
  TcpStore(std::string host, uint16_t port, std::chrono::milliseconds timeout, std::string secret, os::UniqueFd fd,
           Connected);

  // Runs `f(fd)`, one request and its reply, alone on the connection
  // (opening it again first if an earlier failure closed it). A failure
  // half-way closes it, since its framing is then unknown.
  template <class F>
  auto exchange(const char* what, const std::string& key, F&& f);
  void ensure_connected();
  void close_connection();

  std::string host_;
  uint16_t port_;
  std::string address_;
  std::chrono::milliseconds timeout_;
  std::string secret_;
  std::mutex mu_;  // one request at a time on the one connection
  os::UniqueFd fd_;  // none while closed (after a failure half-way)
};

}  // namespace mlos::collectives
