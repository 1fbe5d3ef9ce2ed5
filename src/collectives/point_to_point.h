/* SPDX-License-Identifier: Apache-2.0 */
// A point-to-point transfer posted on a group (ProcessGroup::post_send,
// post_recv): Gloo's unbound buffers, the same mechanism torch's Gloo
// backend uses for send/recv. Posting returns at once; wait() completes it.
//
// Failure contract: wait() ends within the group's timeout. A transfer
// that fails, times out or is dropped unfinished breaks its group (Gloo
// would otherwise match a late peer's bytes with the next transfer of the
// same tag), and every rank must create the group again.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "core/status.h"

namespace gloo::transport {
class UnboundBuffer;
}

namespace mlos::collectives {

class ProcessGroup;

// The Gloo slot of point-to-point tag `tag`: a prefix of its own (Gloo's
// collectives use 0x01 to 0x08, gloo/types.h), so no user tag meets a
// collective's bytes.
uint64_t point_to_point_slot(uint32_t tag);

class PendingTransfer {
 public:
  enum class Direction { kSend, kRecv };

  PendingTransfer(std::shared_ptr<ProcessGroup> group, std::unique_ptr<gloo::transport::UnboundBuffer> buffer,
                  Direction direction, size_t bytes);
  // Unfinished (never waited for, or waited for in vain): Gloo forgets the
  // buffer, and the group is marked broken unless the transfer had
  // completed by then.
  ~PendingTransfer();
  PendingTransfer(const PendingTransfer&) = delete;
  PendingTransfer& operator=(const PendingTransfer&) = delete;

  // Waits until the bytes left (send) or arrived (recv), at most the
  // group's timeout; returns the peer's rank. Call once. TIMEOUT, or
  // PEER_LOST when a connection broke or the group broke earlier.
  Result<int> wait();

  Direction direction() const { return direction_; }
  size_t bytes() const { return bytes_; }

 private:
  std::shared_ptr<ProcessGroup> group_;
  std::unique_ptr<gloo::transport::UnboundBuffer> buffer_;
  Direction direction_;
  size_t bytes_;
  bool finished_ = false;
};

}  // namespace mlos::collectives
