// SPDX-License-Identifier: Apache-2.0
#include "dataload/loader_client.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstring>
#include <type_traits>

#include "os/spawn_process.h"

namespace mlos::dataload {

namespace {

constexpr size_t kMaxErrors = 1000;
constexpr int kStopGraceMs = 2000;

int64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

int64_t monotonic_ms() { return monotonic_ns() / 1000000; }

// A descriptor above the ones the helper gets, so that dup2 onto 3 and 4
// never overwrites one source with the other.
Result<os::UniqueFd> above_helper_fds(int fd) {
  os::UniqueFd moved(fcntl(fd, F_DUPFD_CLOEXEC, kHelperArenaFd + 1));
  if (!moved.valid()) return make_sys_error(errno, "dup for the loader helper");
  return moved;
}

}  // namespace

Result<std::unique_ptr<LoaderClient>> LoaderClient::start(const std::string& helper, StartRequest request,
                                                          LoaderSlots slots, const BatchLayout& layout,
                                                          int start_timeout_ms) {
  int pair[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) {
    return make_sys_error(errno, "socketpair for the loader helper");
  }
  os::UniqueFd ours(pair[0]), theirs_raw(pair[1]);
  auto theirs = above_helper_fds(theirs_raw.get());
  if (!theirs) return theirs.error();
  auto arena = above_helper_fds(slots.arena_fd);
  if (!arena) return arena.error();

  auto pid = os::spawn_process(helper, {helper}, {{theirs->get(), kHelperSocketFd}, {arena->get(), kHelperArenaFd}},
                               "the loader helper");
  if (!pid) return pid.error();

  request.slot_offsets = slots.offsets;
  std::unique_ptr<LoaderClient> client(new LoaderClient(*pid, std::move(ours), std::move(slots), layout));
  if (Status s = client->send(std::move(request)); !s) return s.error();
  const int64_t deadline = monotonic_ms() + start_timeout_ms;
  for (;;) {
    const int64_t left = deadline - monotonic_ms();
    if (left <= 0) {
      client->stop();
      return make_error(MLOS_ERR_TIMEOUT, "the loader helper did not open its source within " +
                                              std::to_string(start_timeout_ms / 1000) + " s");
    }
    auto packet = receive_packet(client->socket_.get(), static_cast<int>(left));
    if (!packet) return client->lost(packet.error().message);
    if (!packet->has_value()) continue;
    auto m = decode_helper_message(**packet);
    if (!m) return client->lost(m.error().message);
    if (auto* s = std::get_if<Started>(&*m)) {
      client->started_ = *s;
      return client;
    }
    if (auto* f = std::get_if<Failed>(&*m)) {
      const Failed failure = *f;
      client->stop();
      return make_error(failure.code, failure.message);
    }
    return client->lost("the loader helper spoke before it started");
  }
}

LoaderClient::LoaderClient(pid_t pid, os::UniqueFd socket, LoaderSlots slots, const BatchLayout& layout)
    : pid_(pid), socket_(std::move(socket)), slots_(std::move(slots)), layout_(layout) {}

LoaderClient::~LoaderClient() { stop(); }

Error LoaderClient::lost(const std::string& why) {
  if (!dead_) {
    socket_.reset();
    int status = 0;
    // The socket closed: the helper is gone or going; give it a moment.
    for (int i = 0; i < 100 && !reaped_; ++i) {
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        ended_ = os::describe_wait_status(status);
        reaped_ = true;
      } else {
        usleep(10000);
      }
    }
    if (!reaped_) stop();
    dead_ = make_error(MLOS_ERR_PEER_LOST, "the loader helper (pid " + std::to_string(pid_) + ") " + ended_ + ": " + why);
  }
  return *dead_;
}

Status LoaderClient::send(const TrainerMessage& m) {
  if (dead_) return *dead_;
  if (Status s = send_packet(socket_.get(), encode(m)); !s) return lost(s.error().message);
  return Status::Ok();
}

Status LoaderClient::start_epoch(uint64_t epoch) {
  if (Status s = send(EpochRequest{epoch, pass_ + 1}); !s) return s;
  ++pass_;
  has_epoch_ = true;
  epoch_ = epoch;
  end_seen_ = false;
  handed_out_ = 0;
  epoch_error_.reset();
  errors_.clear();
  // Batches of the previous epoch not yet returned go back to the helper.
  for (const BatchReady& b : ready_) {
    if (Status s = send(FreeSlot{b.slot}); !s) return s;
  }
  ready_.clear();
  return Status::Ok();
}

Status LoaderClient::absorb(HelperMessage m) {
  if (auto* b = std::get_if<BatchReady>(&m)) {
    if (b->slot >= slots_.addresses.size() || b->count + b->skipped > layout_.batch_size) {
      return lost("the loader helper announced an impossible batch");
    }
    if (b->pass != pass_) return send(FreeSlot{b->slot});  // a batch of an abandoned pass
    active_workers_ = b->active_workers;
    ready_.push_back(*b);
  } else if (auto* e = std::get_if<EpochEnd>(&m)) {
    if (e->pass == pass_) end_seen_ = true;
  } else if (auto* bad = std::get_if<BadSample>(&m)) {
    if (bad->pass == pass_) {
      errors_.push_back(bad->what + ": " + bad->reason);
      if (errors_.size() > kMaxErrors) errors_.pop_front();
    }
  } else if (auto* f = std::get_if<Failed>(&m)) {
    if (f->code == MLOS_ERR_INVALID_ARGUMENT) {
      epoch_error_ = make_error(f->code, f->message);  // a bad sample under STRICT: this epoch only
    } else {
      return lost(f->message);
    }
  } else {
    return lost("the loader helper sent an unexpected message");
  }
  return Status::Ok();
}

Result<std::optional<LoadedBatch>> LoaderClient::next(int64_t timeout_ms) {
  if (dead_) return *dead_;
  if (!has_epoch_) return make_error(MLOS_ERR_INVALID_ARGUMENT, "no epoch started (mlos_dataload_start_epoch)");
  const int64_t deadline = timeout_ms < 0 ? -1 : monotonic_ms() + timeout_ms;
  const int64_t entered_ns = monotonic_ns();
  // Time spent here waiting for the helper, however the call ends.
  struct WaitClock {
    LoaderClient& c;
    int64_t since;
    ~WaitClock() {
      const auto waited = static_cast<uint64_t>(monotonic_ns() - since);
      c.wait_ns_ += waited;
      c.waited_since_release_ns_ += waited;
    }
  } clock{*this, entered_ns};
  for (;;) {
    if (!ready_.empty()) {
      const BatchReady b = ready_.front();
      ready_.pop_front();
      held_.insert(b.slot);
      ++handed_out_;
      ++batches_;
      char* base = slots_.addresses[b.slot];
      return std::optional<LoadedBatch>(LoadedBatch{base, reinterpret_cast<const int64_t*>(base + layout_.labels_offset),
                                                    b.count, b.skipped, b.index, b.epoch, b.slot});
    }
    if (epoch_error_) return *epoch_error_;
    if (end_seen_) return std::optional<LoadedBatch>();
    if (held_.size() == slots_.addresses.size() && handed_out_ < started_.batches_per_epoch) {
      // Nothing can come: every slot holds a batch the caller has not
      // released, and the epoch is not over. Waiting would never end.
      return make_error(MLOS_ERR_BUSY, "all " + std::to_string(held_.size()) +
                                           " batch slots hold batches not released yet: release one "
                                           "(mlos_dataload_release_batch; in Python, drop or clone the tensors)");
    }
    int wait = -1;
    if (deadline >= 0) {
      const int64_t left = deadline - monotonic_ms();
      if (left <= 0) return make_error(MLOS_ERR_TIMEOUT, "no batch within " + std::to_string(timeout_ms) + " ms");
      wait = static_cast<int>(left);
    }
    auto packet = receive_packet(socket_.get(), wait);
    if (!packet) return lost(packet.error().message);
    if (!packet->has_value()) continue;
    auto m = decode_helper_message(**packet);
    if (!m) return lost(m.error().message);
    if (Status s = absorb(std::move(*m)); !s) return s.error();
  }
}

Status LoaderClient::release(uint32_t slot) {
  if (held_.erase(slot) == 0) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT, "slot " + std::to_string(slot) + " is not a batch handed out (or released already)");
  }
  const int64_t now = monotonic_ns();
  FreeSlot f;
  f.slot = slot;
  f.waited_us = waited_since_release_ns_ / 1000;
  f.interval_us = last_release_ns_ ? static_cast<uint64_t>(now - last_release_ns_) / 1000 : 0;
  f.held = static_cast<uint32_t>(held_.size());
  last_release_ns_ = now;
  waited_since_release_ns_ = 0;
  return send(f);
}

std::string LoaderClient::errors() const {
  std::string out;
  for (const auto& e : errors_) out += e + "\n";
  return out;
}

std::string LoaderClient::stop() {
  if (reaped_) return ended_;
  if (socket_.valid()) {
    (void)send_packet(socket_.get(), encode(TrainerMessage(StopRequest{})));
    socket_.reset();  // end of file for the helper, whatever it is doing
  }
  int status = 0;
  const int64_t deadline = monotonic_ms() + kStopGraceMs;
  pid_t done = 0;
  while ((done = waitpid(pid_, &status, WNOHANG)) == 0 && monotonic_ms() < deadline) usleep(5000);
  if (done == 0) {
    kill(pid_, SIGKILL);
    done = waitpid(pid_, &status, 0);
  }
  ended_ = done == pid_ ? os::describe_wait_status(status) : "could not be reaped";
  reaped_ = true;
  return ended_;
}

}  // namespace mlos::dataload
