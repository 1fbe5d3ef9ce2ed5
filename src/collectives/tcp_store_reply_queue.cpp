// SPDX-License-Identifier: Apache-2.0
#include "collectives/tcp_store_reply_queue.h"

#include <sys/socket.h>
#include <sys/uio.h>

#include <cerrno>

namespace mlos::collectives {

namespace {
// Own bytes gather into one part up to this size; a larger reply (a long
// LIST_KEYS) continues in a new part.
constexpr size_t kPartBytes = 64u << 10;
// Parts handed to one sendmsg.
constexpr size_t kPartsPerSend = 32;
}  // namespace

void TcpStoreReplyQueue::append(const char* p, size_t n) {
  if (n == 0) return;
  if (parts_.empty() || parts_.back().shared || parts_.back().own.size() + n > kPartBytes) {
    parts_.emplace_back();
    own_bytes_ += part_cost(parts_.back());
  }
  Part& last = parts_.back();
  const size_t before = part_cost(last);
  last.own.append(p, n);
  own_bytes_ += part_cost(last) - before;
  pending_ += n;
}

void TcpStoreReplyQueue::append(TcpStoreValue v) {
  if (!v || v->empty()) return;
  pending_ += v->size();
  parts_.push_back(Part{std::move(v), {}, 0});
  own_bytes_ += part_cost(parts_.back());
}

void TcpStoreReplyQueue::drop_front() {
  own_bytes_ -= part_cost(parts_.front());
  parts_.pop_front();
}

TcpStoreReplyQueue::Sent TcpStoreReplyQueue::send_to(int fd) {
  while (pending_ > 0) {
    iovec iov[kPartsPerSend];
    size_t n = 0;
    for (auto it = parts_.begin(); it != parts_.end() && n < kPartsPerSend; ++it, ++n) {
      iov[n].iov_base = const_cast<char*>(it->data() + it->sent);
      iov[n].iov_len = it->size() - it->sent;
    }
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = n;
    const ssize_t sent = ::sendmsg(fd, &msg, MSG_NOSIGNAL);
    if (sent < 0) {
      if (errno == EINTR) continue;
      return errno == EAGAIN || errno == EWOULDBLOCK ? Sent::kBlocked : Sent::kFailed;
    }
    size_t left = static_cast<size_t>(sent);
    pending_ -= left;
    while (left > 0) {
      Part& front = parts_.front();
      const size_t rest = front.size() - front.sent;
      if (left < rest) {
        front.sent += left;
        break;
      }
      left -= rest;
      drop_front();
    }
  }
  return Sent::kAll;
}

}  // namespace mlos::collectives
