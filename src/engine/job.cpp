// SPDX-License-Identifier: Apache-2.0
#include "engine/job.h"

#include "os/environment.h"
#include "os/log_sink.h"
#include "os/process_self.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>

namespace mlos {

const char* effect_name(uint32_t effect) {
  switch (effect) {
    case MLOS_EFFECT_AFFINITY:
      return "affinity";
    case MLOS_EFFECT_MEMPOLICY:
      return "mempolicy";
    case MLOS_EFFECT_CPU_PRIORITY:
      return "cpu_priority";
    case MLOS_EFFECT_IO_PRIORITY:
      return "io_priority";
    case MLOS_EFFECT_MEMLOCK:
      return "memlock";
    case MLOS_EFFECT_LEDGER:
      return "ledger";
    case MLOS_EFFECT_MEMORY_WATCH:
      return "memory_watch";
    default:
      return "unknown";
  }
}

namespace {
std::atomic<uint64_t> g_next_job_id{1};
}  // namespace

Job::Job(JobSpec spec, Grant grant, std::shared_ptr<ClaimBroker> broker, os::Kernel& kernel, Clock clock,
         ThreadRegistry& threads)
    : id_(g_next_job_id++),
      creator_pid_(os::self_pid()),
      spec_(std::move(spec)),
      grant_(std::move(grant)),
      broker_(std::move(broker)),
      kernel_(kernel),
      clock_(std::move(clock)),
      threads_registry_(threads),
      profile_(clock_()) {
  if (!grant_.ledger_note.empty()) note(MLOS_EFFECT_LEDGER, grant_.ledger_note);
  if (!grant_.placement.gpu_note.empty()) note(MLOS_EFFECT_AFFINITY, grant_.placement.gpu_note);
  if (!grant_.affinity_note.empty()) note(MLOS_EFFECT_AFFINITY, grant_.affinity_note);
  // The requesting thread's settings before any job touched it.
  const pid_t self = kernel_.current_tid();
  if (auto b = threads_registry_.baseline(self)) {
    process_base_ = ThreadSettings{b->nice, b->io};
  } else {
    auto nice = kernel_.nice(self);
    auto io = kernel_.io_priority(self);
    process_base_ = ThreadSettings{nice ? *nice : 0, io ? *io : IoPriority{}};
  }
}

void Job::note(uint32_t effect, const std::string& reason) {
  // Logged the first time an effect degrades, not on every phase change;
  // the latest reason stays queryable.
  if (!(degraded_ & effect)) {
    log_message(MLOS_LOG_WARN,
                "claim " + std::to_string(grant_.claim_id) + ": " + effect_name(effect) + ": " + reason);
  }
  degraded_ |= effect;
  notes_[effect] = reason;
}

size_t Job::round_to_pages(size_t bytes) const {
  size_t page = kernel_.page_size();
  return (bytes + page - 1) / page * page;
}

Status Job::bind_thread(pid_t tid, bool is_calling_thread, int cpu_index) {
  std::lock_guard lock(mu_);
  if (released_) return make_error(MLOS_ERR_INVALID_HANDLE, "resources already released");
  const auto& cpus = grant_.placement.cpus;
  if (cpu_index != MLOS_CPU_INDEX_ALL && (cpu_index < 0 || cpu_index >= static_cast<int>(cpus.size()))) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT, "cpu_index " + std::to_string(cpu_index) + " is outside [0, " +
                                                     std::to_string(cpus.size()) + ") and not MLOS_CPU_INDEX_ALL");
  }
  CpuSet target = cpu_index == MLOS_CPU_INDEX_ALL ? grant_.placement.cpu_set : CpuSet::of({cpus[cpu_index]});

  // What the thread has now (to know what a phase must change) and what it
  // had before any job touched it (to restore at release).
  auto affinity = kernel_.affinity(tid);
  if (!affinity) return affinity.error();
  auto nice = kernel_.nice(tid);
  if (!nice) return nice.error();
  auto io = kernel_.io_priority(tid);
  if (!io) return io.error();
  const ThreadBaseline baseline = threads_registry_.baseline(tid).value_or(ThreadBaseline{*affinity, *nice, *io, {}});

  // Nothing is recorded unless the thread is actually pinned.
  if (Status s = kernel_.set_affinity(tid, target); !s) {
    note(MLOS_EFFECT_AFFINITY, s.error().describe());
    return s;
  }
  threads_registry_.adopt(tid, id_, baseline);
  auto it = std::find_if(threads_.begin(), threads_.end(), [&](const BoundThread& t) { return t.tid == tid; });
  if (it != threads_.end()) it->follower = false;
  if (it == threads_.end()) {
    BoundThread t{};
    t.tid = tid;
    t.follower = false;
    t.base_nice = baseline.nice;
    t.lowest_nice = kernel_.lowest_permitted_nice();
    // If this process may not lower the thread's nice back to where it
    // started, raising it (IDLE) would be irreversible: leave nice alone.
    t.manage_nice = t.lowest_nice <= t.base_nice;
    if (!t.manage_nice) {
      note(MLOS_EFFECT_CPU_PRIORITY,
           "not managed: lowering nice needs CAP_SYS_NICE or RLIMIT_NICE (lowest permitted " +
               std::to_string(t.lowest_nice) + ", thread at " + std::to_string(t.base_nice) +
               "), so raising it for a phase could not be undone");
    }
    threads_.push_back(t);
    it = threads_.end() - 1;
  }
  it->attempted = ThreadSettings{*nice, *io};

  if (is_calling_thread) {
    auto current = kernel_.memory_policy();
    const os::MemoryPolicy p = os::memory_policy_for(grant_.placement.memory_policy, grant_.placement.nodes);
    Status s = current ? Status::Ok() : Status(current.error());
    if (s && !(*current == p)) {
      threads_registry_.record_memory_policy(tid, *current);
      s = kernel_.set_memory_policy(p);
    }
    if (!s) note(MLOS_EFFECT_MEMPOLICY, s.error().describe());
  }
  bool changed = false;
  if (phases_marked_) apply_settings(*it, profile_.current(), &changed);
  return Status::Ok();
}

bool Job::apply_settings(BoundThread& t, mlos_training_phase_t phase, bool* changed) {
  ThreadSettings want = policy_.settings_for(phase, t.base_nice, spec_.priority);
  want.nice = t.manage_nice ? std::max(want.nice, t.lowest_nice) : t.base_nice;
  // A follower that exited is dropped, not noted: threads come and go.
  auto failed = [&](const Status& s, uint32_t effect) {
    if (t.follower && s.error().code == MLOS_ERR_NO_SUCH_THREAD) return true;
    note(effect, s.error().describe());
    return false;
  };
  if (want.nice != t.attempted.nice) {
    *changed = true;
    t.attempted.nice = want.nice;
    if (Status s = kernel_.set_nice(t.tid, want.nice); !s && failed(s, MLOS_EFFECT_CPU_PRIORITY)) return false;
  }
  if (want.io != t.attempted.io) {
    *changed = true;
    t.attempted.io = want.io;
    if (Status s = kernel_.set_io_priority(t.tid, want.io); !s && failed(s, MLOS_EFFECT_IO_PRIORITY)) return false;
  }
  return true;
}

void Job::follow_free_threads() {
  auto tids = kernel_.process_threads();
  if (!tids) {
    note(MLOS_EFFECT_CPU_PRIORITY, "unbound threads not followed: " + tids.error().describe());
    return;
  }
  auto known = [&](pid_t tid) {
    return std::any_of(threads_.begin(), threads_.end(), [&](const BoundThread& t) { return t.tid == tid; });
  };
  auto live = [&](pid_t tid) { return std::find(tids->begin(), tids->end(), tid) != tids->end(); };
  for (auto it = threads_.begin(); it != threads_.end();) {
    if (it->follower && !live(it->tid)) {
      (void)threads_registry_.release(it->tid, id_);
      it = threads_.erase(it);
    } else {
      ++it;
    }
  }
  std::erase_if(library_threads_, [&](pid_t tid) { return !live(tid); });
  const int lowest = kernel_.lowest_permitted_nice();
  for (pid_t tid : *tids) {
    if (known(tid) || threads_registry_.baseline(tid) ||
        std::find(library_threads_.begin(), library_threads_.end(), tid) != library_threads_.end()) {
      continue;
    }
    if (kernel_.thread_name(tid).rfind("mlos-", 0) == 0) {
      library_threads_.push_back(tid);
      continue;
    }
    auto affinity = kernel_.affinity(tid);
    auto nice = kernel_.nice(tid);
    auto io = kernel_.io_priority(tid);
    if (!affinity || !nice || !io) continue;  // exited since the listing
    // A thread created by one mlOS had changed inherited its creator's
    // settings: its own are what the process had before mlOS.
    const ThreadSettings now{*nice, *io};
    bool inherited = std::any_of(threads_.begin(), threads_.end(),
                                 [&](const BoundThread& t) { return t.attempted == now; });
    const ThreadSettings base = inherited ? process_base_ : now;
    if (!threads_registry_.adopt_if_free(tid, id_, ThreadBaseline{*affinity, base.nice, base.io, {}})) continue;
    BoundThread t{};
    t.tid = tid;
    t.follower = true;
    t.base_nice = base.nice;
    t.lowest_nice = lowest;
    t.manage_nice = lowest <= base.nice;
    if (!t.manage_nice) {
      note(MLOS_EFFECT_CPU_PRIORITY,
           "not managed: lowering nice needs CAP_SYS_NICE or RLIMIT_NICE (lowest permitted " +
               std::to_string(lowest) + ", thread at " + std::to_string(base.nice) +
               "), so raising it for a phase could not be undone");
    }
    t.attempted = now;
    threads_.push_back(t);
  }
}

void Job::sync_buffer_locks(bool* changed) {
  for (auto& [addr, buf] : registered_) {
    if (buf.kind != MLOS_BUFFER_GRADIENT || buf.attempted == gradients_locked_) continue;
    // One attempt per change of target: a refused mlock is noted, not
    // retried on every BACKWARD.
    *changed = true;
    buf.attempted = gradients_locked_;
    if (gradients_locked_) {
      Status s = kernel_.lock(reinterpret_cast<void*>(addr), buf.bytes);
      buf.locked = s.ok();
      if (!s) note(MLOS_EFFECT_MEMLOCK, s.error().describe());
    } else if (buf.locked) {
      (void)kernel_.unlock(reinterpret_cast<void*>(addr), buf.bytes);
      buf.locked = false;
    }
  }
}

Status Job::set_phase(mlos_training_phase_t phase) {
  if (!PhasePolicy::valid_phase(phase)) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT, "unknown phase " + std::to_string(static_cast<int>(phase)));
  }
  std::lock_guard lock(mu_);
  if (released_) return make_error(MLOS_ERR_INVALID_HANDLE, "resources already released");
  // Until the first set_phase the job is unmarked and its threads keep
  // their own priorities (so a program that never marks phases is never
  // treated as IDLE); afterwards, re-entering the current phase is free.
  const uint64_t now = clock_();
  const bool entered = profile_.enter(phase, now);
  if (grant_.phase_sink) grant_.phase_sink->publish(phase, now);
  if (!entered && phases_marked_) return Status::Ok();
  phases_marked_ = true;
  bool changed = false;
  // Threads created since the last change that altered settings join now.
  const FollowRule rule{policy_.rule(phase).nice_offset, policy_.rule(phase).io};
  if (followed_rule_ != rule) {
    followed_rule_ = rule;
    follow_free_threads();
  }
  for (auto it = threads_.begin(); it != threads_.end();) {
    // A thread bound again through another handle now belongs to that job.
    if (!threads_registry_.owns(it->tid, id_) || !apply_settings(*it, phase, &changed)) {
      if (it->follower) (void)threads_registry_.release(it->tid, id_);
      it = threads_.erase(it);
      continue;
    }
    ++it;
  }
  const BufferLockAction action = policy_.rule(phase).gradients;
  if (action != BufferLockAction::kKeep) gradients_locked_ = action == BufferLockAction::kLock;
  sync_buffer_locks(&changed);
  if (changed) profile_.count_os_update();
  return Status::Ok();
}

Result<void*> Job::alloc_checkpoint_buffer(size_t size, bool allow_unlocked, bool* locked) {
  if (size == 0) return make_error(MLOS_ERR_INVALID_ARGUMENT, "checkpoint buffer size must be > 0");
  std::lock_guard lock(mu_);
  if (released_) return make_error(MLOS_ERR_INVALID_HANDLE, "resources already released");
  size_t bytes = round_to_pages(size);
  if (bytes < size) return make_error(MLOS_ERR_INVALID_ARGUMENT, "checkpoint buffer size overflows");
  if (Status b = within_budget(bytes, "checkpoint buffers"); !b) return b.error();
  auto p = kernel_.map_locked(bytes);
  bool is_locked = true;
  if (!p && p.error().code == MLOS_ERR_LOCK_LIMIT && allow_unlocked) {
    p = kernel_.map_prefaulted(bytes);
    is_locked = false;
  }
  if (!p) return p.error();
  if (locked != nullptr) *locked = is_locked;
  checkpoint_buffers_[*p] = bytes;
  checkpoint_bytes_ += bytes;
  return *p;
}

size_t Job::pinned_bytes_locked() const {
  size_t total = checkpoint_bytes_ + pool_bytes_;
  for (const auto& [addr, buf] : registered_) total += buf.bytes;
  return total;
}

Status Job::reserve_pool_bytes(uint64_t bytes) {
  std::lock_guard lock(mu_);
  if (released_) return make_error(MLOS_ERR_INVALID_HANDLE, "resources already released");
  if (Status b = within_budget(bytes, "a tensor pool"); !b) return b;
  pool_bytes_ += bytes;
  return Status::Ok();
}

void Job::return_pool_bytes(uint64_t bytes) {
  std::lock_guard lock(mu_);
  pool_bytes_ -= std::min(pool_bytes_, bytes);
}

Status Job::within_budget(size_t more, const char* what) const {
  const uint64_t budget = spec_.request.memory_bytes;
  const size_t now = pinned_bytes_locked();
  if (budget == 0 || (more <= budget && now <= budget - more)) return Status::Ok();
  return make_error(MLOS_ERR_INSUFFICIENT_MEMORY,
                    std::string(what) + " of " + std::to_string(more) + " bytes would bring the memory the job has " +
                        "through mlOS (checkpoint buffers + registered buffers + tensor pools) to " +
                        std::to_string(now + more) + " bytes, over its memory_bytes " + std::to_string(budget));
}

Status Job::free_checkpoint_buffer(void* buffer) {
  std::lock_guard lock(mu_);
  if (released_) return make_error(MLOS_ERR_INVALID_HANDLE, "resources already released");
  if (buffer == nullptr) return Status::Ok();
  auto it = checkpoint_buffers_.find(buffer);
  if (it == checkpoint_buffers_.end()) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT, "pointer is not a checkpoint buffer of this handle");
  }
  if (pinned_.count(buffer)) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT, "checkpoint buffer is in use by a checkpoint save in flight");
  }
  Status s = kernel_.unmap(it->first, it->second);
  checkpoint_bytes_ -= it->second;
  checkpoint_buffers_.erase(it);
  return s;
}

Status Job::pin_checkpoint_buffer(void* buffer) {
  std::lock_guard lock(mu_);
  if (released_) return make_error(MLOS_ERR_INVALID_HANDLE, "resources already released");
  if (!checkpoint_buffers_.count(buffer)) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT, "pointer is not a checkpoint buffer of this handle");
  }
  ++pinned_[buffer];
  return Status::Ok();
}

void Job::unpin_checkpoint_buffer(void* buffer) {
  std::lock_guard lock(mu_);
  auto it = pinned_.find(buffer);
  if (it == pinned_.end()) return;
  if (--it->second == 0) pinned_.erase(it);
  unpinned_.notify_all();
}

Status Job::register_buffer(void* addr, size_t size, mlos_buffer_kind_t kind) {
  if (addr == nullptr || size == 0) return make_error(MLOS_ERR_INVALID_ARGUMENT, "buffer address NULL or size 0");
  if (kind != MLOS_BUFFER_GRADIENT) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT, "unknown buffer kind " + std::to_string(static_cast<int>(kind)));
  }
  const uintptr_t page = kernel_.page_size();
  const uintptr_t first = reinterpret_cast<uintptr_t>(addr);
  // The page-rounded end must not pass the top of the address space: a range
  // that wraps (addr + size overflows) or ends in the last page (rounding up
  // overflows) would be kept with end < start and lock nothing.
  if (size > UINTPTR_MAX - first || first + size > UINTPTR_MAX - (page - 1)) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT, "buffer of " + std::to_string(size) + " bytes at " +
                                                     std::to_string(first) +
                                                     " wraps past the end of the address space");
  }
  std::lock_guard lock(mu_);
  if (released_) return make_error(MLOS_ERR_INVALID_HANDLE, "resources already released");
  const uintptr_t start = first / page * page;
  const uintptr_t end = (first + size + page - 1) / page * page;
  for (const auto& [s, b] : registered_) {
    if (start < s + b.bytes && s < end) {
      return make_error(MLOS_ERR_INVALID_ARGUMENT, "buffer overlaps one already registered");
    }
  }
  // The library locks these (from BACKWARD on): with checkpoint buffers
  // they are the memory it pins for the job, held to memory_bytes.
  if (Status b = within_budget(end - start, "registered gradient buffers"); !b) return b;
  registered_[start] = Buffer{end - start, kind, false, false};
  // Registered between a BACKWARD and the next IDLE: lock now, as the
  // BACKWARD would have.
  bool changed = false;
  sync_buffer_locks(&changed);
  return Status::Ok();
}

Status Job::unregister_buffer(void* addr) {
  std::lock_guard lock(mu_);
  if (released_) return make_error(MLOS_ERR_INVALID_HANDLE, "resources already released");
  const uintptr_t start = reinterpret_cast<uintptr_t>(addr) / kernel_.page_size() * kernel_.page_size();
  auto it = registered_.find(start);
  if (addr == nullptr || it == registered_.end()) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT, "no buffer registered at this address");
  }
  if (it->second.locked) (void)kernel_.unlock(reinterpret_cast<void*>(it->first), it->second.bytes);
  registered_.erase(it);
  return Status::Ok();
}

Result<std::shared_ptr<MemoryWatch>> Job::watch_locked() {
  if (released_) return make_error(MLOS_ERR_INVALID_HANDLE, "resources already released");
  if (watch_) return watch_;
  MemoryThresholds t;
  if (thresholds_) {
    t = *thresholds_;
  } else {
    auto env = thresholds_from_env(MemoryThresholds{}, os::env_or_foreign);
    if (!env) return env.error();
    t = *env;
  }
  auto feed = broker_->pressure_feed(grant_, spec_.request.memory_bytes, t);
  if (!feed) return feed.error();
  auto w = MemoryWatch::start(std::move(*feed), os::monotonic_ns);
  if (!w) return w.error();
  watch_ = *w;
  return watch_;
}

Status Job::register_memory_callback(mlos_memory_callback_t cb, void* user_data) {
  if (!cb) return make_error(MLOS_ERR_INVALID_ARGUMENT, "memory callback is NULL");
  std::shared_ptr<MemoryWatch> w;
  {
    std::lock_guard lock(mu_);
    auto got = watch_locked();
    if (!got) return got.error();
    w = *got;
  }
  return w->add(cb, user_data);
}

Status Job::unregister_memory_callback(mlos_memory_callback_t cb, void* user_data) {
  std::shared_ptr<MemoryWatch> w;
  {
    std::lock_guard lock(mu_);
    if (released_) return make_error(MLOS_ERR_INVALID_HANDLE, "resources already released");
    w = watch_;
  }
  // Outside the job's mutex: remove() waits for a running callback, which
  // may itself be using this job.
  if (!w) return make_error(MLOS_ERR_INVALID_ARGUMENT, "this callback is not registered with this user_data");
  return w->remove(cb, user_data);
}

Status Job::set_memory_thresholds(const MemoryThresholds& t) {
  if (Status s = validate(t); !s) return s;
  std::shared_ptr<MemoryWatch> w;
  {
    std::lock_guard lock(mu_);
    if (released_) return make_error(MLOS_ERR_INVALID_HANDLE, "resources already released");
    thresholds_ = t;
    w = watch_;
  }
  return w ? w->set_thresholds(t) : Status::Ok();
}

Result<PressureReport> Job::memory_pressure() {
  std::shared_ptr<MemoryWatch> w;
  {
    std::lock_guard lock(mu_);
    auto got = watch_locked();
    if (!got) return got.error();
    w = *got;
  }
  return w->current();
}

Status Job::release() {
  std::shared_ptr<MemoryWatch> w;
  Status s;
  {
    std::unique_lock lock(mu_);
    // A checkpoint save reading one of this job's buffers finishes first.
    unpinned_.wait(lock, [&] { return pinned_.empty() || released_; });
    s = release_locked();
    w = std::move(watch_);
  }
  // After the job's mutex is dropped: stopping waits for a running callback,
  // which may be using this job (it then sees INVALID_HANDLE).
  if (w) w->stop();
  return s;
}

Status Job::release_locked() {
  if (released_) return make_error(MLOS_ERR_INVALID_HANDLE, "resources already released");
  released_ = true;
  const pid_t self = kernel_.current_tid();
  // Restoration is best effort: a thread that exited (ESRCH) needs nothing.
  // Threads another job has bound since are that job's to restore.
  for (auto& t : threads_) {
    auto baseline = threads_registry_.release(t.tid, id_);
    if (!baseline) continue;
    if (!t.follower) (void)kernel_.set_affinity(t.tid, baseline->affinity);
    if (t.attempted.nice != baseline->nice) (void)kernel_.set_nice(t.tid, baseline->nice);
    if (!(t.attempted.io == baseline->io)) (void)kernel_.set_io_priority(t.tid, baseline->io);
    if (baseline->memory_policy && t.tid == self) (void)kernel_.set_memory_policy(*baseline->memory_policy);
  }
  threads_.clear();
  for (auto& [addr, buf] : registered_) {
    if (buf.locked) (void)kernel_.unlock(reinterpret_cast<void*>(addr), buf.bytes);
  }
  registered_.clear();
  for (auto& [p, bytes] : checkpoint_buffers_) (void)kernel_.unmap(p, bytes);
  checkpoint_buffers_.clear();
  checkpoint_bytes_ = 0;
  return grant_.claim_id == 0 ? Status::Ok() : broker_->release(grant_.claim_id);
}

Result<uint64_t> Job::checkpoint_budget() const {
  std::lock_guard lock(mu_);
  if (released_) return make_error(MLOS_ERR_INVALID_HANDLE, "resources already released");
  return spec_.request.memory_bytes;
}

Result<Job::Snapshot> Job::snapshot() const {
  std::lock_guard lock(mu_);
  if (released_) return make_error(MLOS_ERR_INVALID_HANDLE, "resources already released");
  Snapshot s;
  s.placement = grant_.placement;
  s.claim_id = grant_.claim_id;
  s.exclusive = spec_.request.exclusive;
  s.memory_bytes = spec_.request.memory_bytes;
  s.phase = profile_.current();
  s.phase_ns = profile_.nanoseconds(clock_());
  s.entries = profile_.entries();
  s.set_phase_calls = profile_.calls();
  s.os_updates = profile_.os_updates();
  s.degraded = degraded_;
  s.bound_threads = static_cast<int>(
      std::count_if(threads_.begin(), threads_.end(), [](const BoundThread& t) { return !t.follower; }));
  auto notes = notes_;
  if (watch_) {
    if (std::string w = watch_->notes(); !w.empty()) {
      notes[MLOS_EFFECT_MEMORY_WATCH] = w;
      s.degraded |= MLOS_EFFECT_MEMORY_WATCH;
    }
  }
  for (const auto& [effect, reason] : notes) s.notes += std::string(effect_name(effect)) + ": " + reason + "\n";
  return s;
}

}  // namespace mlos
