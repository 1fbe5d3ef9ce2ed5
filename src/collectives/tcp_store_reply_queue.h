/* SPDX-License-Identifier: Apache-2.0 */
// One TCPStore connection's replies not yet sent, in order: bytes of their
// own (lengths, counters, keys) and references to stored values
// (tcp_store_memory.h), which are sent from where they lie and never
// copied. Sent with sendmsg as far as the socket takes them.
#pragma once

#include <cstddef>
#include <deque>
#include <string>

#include "collectives/tcp_store_memory.h"

namespace mlos::collectives {

class TcpStoreReplyQueue {
 public:
  // Adds bytes of its own.
  void append(const char* p, size_t n);
  // Adds a reference to `v` (its bytes, without a length).
  void append(TcpStoreValue v);

  // Bytes still to send, own and referenced.
  size_t pending() const { return pending_; }
  // Memory the queue takes itself: its own bytes and one record per part
  // (referenced values are counted with the values).
  size_t own_bytes() const { return own_bytes_; }

  enum class Sent { kAll, kBlocked, kFailed };
  // Sends what `fd` (non-blocking) takes now: kAll when nothing is left,
  // kBlocked when the socket is full, kFailed on an error (the peer gone).
  Sent send_to(int fd);

 private:
  struct Part {
    TcpStoreValue shared;  // set: these bytes; else `own`
    std::string own;
    size_t sent = 0;
    size_t size() const { return shared ? shared->size() : own.size(); }
    const char* data() const { return shared ? shared->data() : own.data(); }
  };
  static size_t part_cost(const Part& p) { return sizeof(Part) + p.own.capacity(); }
  void drop_front();

  std::deque<Part> parts_;
  size_t pending_ = 0;
  size_t own_bytes_ = 0;
};

}  // namespace mlos::collectives
