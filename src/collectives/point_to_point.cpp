// SPDX-License-Identifier: Apache-2.0
#include "collectives/point_to_point.h"

#include <exception>
#include <string>
#include <utility>
#include <vector>

#include <gloo/context.h>
#include <gloo/transport/unbound_buffer.h>
#include <gloo/types.h>

#include "collectives/gloo_error.h"
#include "collectives/process_group.h"
#include "os/sigpipe_guard.h"

namespace mlos::collectives {

namespace {
constexpr uint8_t kPointToPointSlotPrefix = 0x50;
}  // namespace

uint64_t point_to_point_slot(uint32_t tag) { return gloo::Slot::build(kPointToPointSlotPrefix, tag); }

PendingTransfer::PendingTransfer(std::shared_ptr<ProcessGroup> group,
                                 std::unique_ptr<gloo::transport::UnboundBuffer> buffer, Direction direction,
                                 size_t bytes)
    : group_(std::move(group)), buffer_(std::move(buffer)), direction_(direction), bytes_(bytes) {}

PendingTransfer::~PendingTransfer() {
  if (finished_) return;
  // Done already, or abandoned: a zero wait tells which. Gloo answers a
  // wait that runs out by failing every pair of the group's context, so
  // an abandoned transfer breaks the group there too.
  try {
    os::SigpipeGuard no_sigpipe;
    const bool done = direction_ == Direction::kSend ? buffer_->waitSend(std::chrono::milliseconds(0))
                                                     : buffer_->waitRecv(std::chrono::milliseconds(0));
    if (done) return;
  } catch (const std::exception&) {  // NOLINT(bugprone-empty-catch): broken below
  }
  group_->mark_broken(direction_ == Direction::kSend ? "a send was dropped before it completed"
                                                     : "a receive was dropped before it completed");
}

Result<int> PendingTransfer::wait() {
  const char* what = direction_ == Direction::kSend ? "send" : "recv";
  if (finished_) return make_error(MLOS_ERR_INVALID_ARGUMENT, std::string(what) + ": already waited for");
  finished_ = true;
  int peer = -1;
  try {
    os::SigpipeGuard no_sigpipe;  // the wait may write what the event loop left
    const bool done = direction_ == Direction::kSend ? buffer_->waitSend(&peer, group_->timeout())
                                                     : buffer_->waitRecv(&peer, group_->timeout());
    if (!done) {  // only an abort returns false, and nothing here aborts
      group_->mark_broken(std::string(what) + " aborted");
      return make_error(MLOS_ERR_PEER_LOST, std::string(what) + ": aborted; the group is broken");
    }
  } catch (const std::exception& e) {
    group_->mark_broken(e.what());
    return from_gloo(what, e);
  }
  return peer;
}

template <class Post>
Result<std::unique_ptr<PendingTransfer>> ProcessGroup::post(bool sending, void* data, size_t bytes, Post&& post_on) {
  const char* what = sending ? "send" : "recv";
  if (broken()) return broken_error(what);
  try {
    os::SigpipeGuard no_sigpipe;  // posting may write to the peer at once
    auto buffer = context_->createUnboundBuffer(data, bytes);
    post_on(*buffer);
    return std::make_unique<PendingTransfer>(
        shared_from_this(), std::move(buffer),
        sending ? PendingTransfer::Direction::kSend : PendingTransfer::Direction::kRecv, bytes);
  } catch (const std::exception& e) {
    mark_broken(e.what());
    return from_gloo(what, e);
  }
}

Result<std::unique_ptr<PendingTransfer>> ProcessGroup::post_send(const void* data, size_t bytes, int peer,
                                                                 uint32_t tag) {
  if (peer < 0 || peer >= world_size() || peer == rank()) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT, "send: the peer must be another rank of the group (0 to " +
                                                     std::to_string(world_size() - 1) + ", not " +
                                                     std::to_string(rank()) + "), got " + std::to_string(peer));
  }
  // Gloo never writes a send buffer; its type is not const.
  return post(true, const_cast<void*>(data), bytes, [&](gloo::transport::UnboundBuffer& b) {
    b.send(peer, point_to_point_slot(tag), 0, bytes);
  });
}

Result<std::unique_ptr<PendingTransfer>> ProcessGroup::post_recv(void* data, size_t bytes, int peer, uint32_t tag) {
  if (peer < -1 || peer >= world_size() || peer == rank()) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT, "recv: the peer must be another rank of the group, or -1 for any, "
                                                 "got " + std::to_string(peer));
  }
  return post(false, data, bytes, [&](gloo::transport::UnboundBuffer& b) {
    if (peer >= 0) {
      b.recv(peer, point_to_point_slot(tag), 0, bytes);
      return;
    }
    std::vector<int> others;
    for (int r = 0; r < world_size(); ++r) {
      if (r != rank()) others.push_back(r);
    }
    b.recv(others, point_to_point_slot(tag), 0, bytes);
  });
}

}  // namespace mlos::collectives
