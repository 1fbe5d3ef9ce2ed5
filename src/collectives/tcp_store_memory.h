/* SPDX-License-Identifier: Apache-2.0 */
// What the TCPStore server's memory holds, counted so one bound covers it
// all: the values (stored, or still being sent in replies), the keys, the
// wait records, the requests being received and the reply bytes of its
// own that wait to be sent. A request or a reply that would pass the bound
// is refused (its connection closed) before the memory is taken.
// Belongs to the server's thread (no locking).
#pragma once

#include <cstddef>
#include <memory>
#include <string>

namespace mlos::collectives {

// A value as the store and its replies share it: a reply to GET, MULTI_GET
// or QUEUE_POP refers to the stored bytes instead of copying them, so a
// MULTI_GET of one 8 MiB key seven times costs seven references, and a
// value replaced while a reply still refers to it is counted until that
// reply is sent.
using TcpStoreValue = std::shared_ptr<const std::string>;

class TcpStoreMemory {
 public:
  // Estimated bookkeeping per stored key or value (hash node, string and
  // control block headers).
  static constexpr size_t kEntryCost = 64;

  explicit TcpStoreMemory(size_t limit) : limit_(limit) {}
  TcpStoreMemory(const TcpStoreMemory&) = delete;
  TcpStoreMemory& operator=(const TcpStoreMemory&) = delete;

  // Whether `more` bytes still fit under the bound, given `other` bytes
  // held elsewhere (the wait records, which count themselves).
  bool fits(size_t more, size_t other = 0) const { return total(other) <= limit_ && more <= limit_ - total(other); }
  size_t total(size_t other = 0) const { return values_ + keys_ + input_ + output_ + other; }
  size_t limit() const { return limit_; }

  // A value counted from now until its last reference is dropped. The
  // account must outlive every value it made.
  TcpStoreValue make_value(std::string bytes) {
    const size_t n = bytes.size() + kEntryCost;
    values_ += n;
    return TcpStoreValue(new std::string(std::move(bytes)), [this, n](const std::string* s) {
      values_ -= n;
      delete s;
    });
  }

  // The other parts, changed by how much they grew (negative: shrank).
  void keys(ptrdiff_t delta) { keys_ += static_cast<size_t>(delta); }
  void input(ptrdiff_t delta) { input_ += static_cast<size_t>(delta); }
  void output(ptrdiff_t delta) { output_ += static_cast<size_t>(delta); }

  size_t values() const { return values_; }
  size_t input() const { return input_; }
  size_t output() const { return output_; }

 private:
  size_t limit_;
  size_t values_ = 0;
  size_t keys_ = 0;
  size_t input_ = 0;
  size_t output_ = 0;
};

}  // namespace mlos::collectives
