/* SPDX-License-Identifier: Apache-2.0 */
// One granted allocation and everything mlOS changed on its behalf: bound
// threads (their baselines live in ThreadRegistry), the process's other
// threads that follow its phases, phase state and profile, locked buffers,
// and the reasons effects were degraded.
//
// The job's thread set: the threads bound to it, plus every other thread of
// the process that no job has (torch's intra-op pool, a loader thread),
// found in /proc/self/task at each phase change whose rule differs from the
// last one applied (so an unchanged set_phase makes no system call). Such a
// "following" thread gets the phase's nice and I/O priority, never an
// affinity; the library's own threads (named "mlos-*") are left out. In a
// process with several jobs a free thread follows the first job whose phase
// change finds it. Engine-neutral: kernel
// calls go through os::Kernel, the claim through ClaimBroker.
//
// Thread-safe: every public method takes the job's mutex, except the
// activity counters (count_collective, count_checkpoint) and the accessors
// of fixed facts. After release() every method returns INVALID_HANDLE.
#pragma once

#include <sys/types.h>

#include <array>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/memory_pressure.h"
#include "core/phase_policy.h"
#include "core/phase_profile.h"
#include "core/placement.h"
#include "checkpoint/checkpoint_job.h"
#include "engine/claim_broker.h"
#include "engine/memory_watch.h"
#include "engine/thread_registry.h"
#include "mlos/training.h"
#include "os/kernel.h"
#include "os/monotonic_clock.h"
#include "policy/policy_protocol.h"

namespace mlos {

struct JobSpec {
  PlacementRequest request;
  int priority = 0;
  std::string label;
};

class Job : public checkpoint::CheckpointJob {
 public:
  using Clock = os::MonotonicClock;

  Job(JobSpec spec, Grant grant, std::shared_ptr<ClaimBroker> broker, os::Kernel& kernel,
      Clock clock = os::monotonic_ns, ThreadRegistry& threads = ThreadRegistry::process_wide());

  // `tid` is the thread; `is_calling_thread` says whether its memory policy
  // can be set (see mlos_training_bind_thread).
  Status bind_thread(pid_t tid, bool is_calling_thread, int cpu_index);
  Status set_phase(mlos_training_phase_t phase);
  // A checkpoint buffer, locked; with `allow_unlocked`, an ordinary
  // prefaulted one when the kernel refuses the lock (LOCK_LIMIT), counted
  // against memory_bytes the same way. *locked (if given) says which.
  Result<void*> alloc_checkpoint_buffer(size_t size, bool allow_unlocked = false,
                                        bool* locked = nullptr) override;
  Status free_checkpoint_buffer(void* buffer) override;
  // While a checkpoint buffer is pinned (an asynchronous checkpoint save is
  // reading it), freeing it is refused and release() waits for the unpin
  // before unmapping it. Pins nest. INVALID_HANDLE once released,
  // INVALID_ARGUMENT for a pointer that is not a buffer of this job.
  Status pin_checkpoint_buffer(void* buffer) override;
  void unpin_checkpoint_buffer(void* buffer) override;
  // The grant's memory_bytes (0: none); INVALID_HANDLE once released.
  Result<uint64_t> checkpoint_budget() const override;
  Status register_buffer(void* addr, size_t size, mlos_buffer_kind_t kind);
  // Tensor pools (include/mlos/tmm.h) count their capacity against
  // memory_bytes from creation to destruction: INSUFFICIENT_MEMORY when it
  // does not fit, INVALID_HANDLE once released. Returning is never refused
  // (a pool may outlive the job's release).
  Status reserve_pool_bytes(uint64_t bytes);
  void return_pool_bytes(uint64_t bytes);
  Status unregister_buffer(void* addr);
  // Memory pressure (see MemoryWatch): the watcher starts with the first
  // of these calls. Never called with the job's mutex held across a
  // callback, so callbacks may use the job.
  Status register_memory_callback(mlos_memory_callback_t cb, void* user_data);
  Status unregister_memory_callback(mlos_memory_callback_t cb, void* user_data);
  Status set_memory_thresholds(const MemoryThresholds& t);
  Result<PressureReport> memory_pressure();

  // Policy modules of the job's claim (ClaimBroker::request_policy,
  // release_policy, advice; job_policies.cpp). The round trip to mlosd runs
  // without the job's mutex, so set_phase never waits for it; a release
  // that overtakes it turns the result into INVALID_HANDLE.
  Result<std::vector<std::string>> request_policy(const std::string& name, const nlohmann::json& config);
  Status release_policy(const std::string& name);
  Result<PolicyAdvice> advice();
  // The job's read log and plan, for its policies (engine/read_log.h).
  // UNSUPPORTED when the job's engine collects none (mlosd, for now).
  // `read.path` must be absolute; no system call, no round trip.
  Status record_read(policy::FileRead read);
  Status announce_reads(std::vector<std::string> paths);

  // Activity for the job's phase sink (PhaseSink::count_*): a finished
  // barrier or all-reduce, a checkpoint made durable. No-ops for a grant
  // without a sink. Lock-free and without a system call, from any thread,
  // so a collective or a checkpoint writer thread never waits on a
  // set_phase in progress. The sink lives as long as this Job (it belongs
  // to the const grant), so a caller holding the Job may count even after
  // release(), e.g. an async save that completes later; by then nobody
  // follows the page, and the figures only go into memory still mapped.
  void count_collective(uint64_t bytes, uint64_t ns) const {
    if (grant_.phase_sink) grant_.phase_sink->count_collective(bytes, ns);
  }
  void count_checkpoint(uint64_t bytes, uint64_t ns) const override {
    if (grant_.phase_sink) grant_.phase_sink->count_checkpoint(bytes, ns);
  }

  // Stops memory watching, restores threads, frees buffers, drops the
  // claim. Only the first call does anything; later ones return
  // INVALID_HANDLE.
  Status release();

  struct Snapshot {
    Placement placement;
    uint64_t claim_id;
    bool exclusive;
    uint64_t memory_bytes;
    mlos_training_phase_t phase;
    std::array<uint64_t, MLOS_TRAINING_PHASE_COUNT> phase_ns;
    std::array<uint64_t, MLOS_TRAINING_PHASE_COUNT> entries;
    uint64_t set_phase_calls;
    uint64_t os_updates;
    uint32_t degraded;
    int bound_threads;
    std::string notes;  // "effect: reason\n" lines
  };
  Result<Snapshot> snapshot() const;

  // The process that requested this job (a forked child inherits the handle
  // but not the job).
  pid_t creator_pid() const { return creator_pid_; }
  // Where the job was placed (fixed for its life).
  const Placement& placement() const { return grant_.placement; }

 private:
  struct BoundThread {
    pid_t tid;
    bool follower;             // found in /proc/self/task, not bound: affinity untouched
    int base_nice;             // nice before any job (phase offsets apply to it)
    bool manage_nice;          // false when lowering nice back is not permitted
    int lowest_nice;           // targets are clamped to >= this
    ThreadSettings attempted;  // last settings we tried to apply
  };
  struct Buffer {
    size_t bytes;
    mlos_buffer_kind_t kind;
    bool locked;     // actually locked now
    bool attempted;  // the lock state last asked of the kernel
  };

  void note(uint32_t effect, const std::string& reason);
  // The claim id while the job is live, else INVALID_HANDLE; and whether a
  // release came since (job_policies.cpp).
  Result<uint64_t> live_claim() const;
  Status still_live() const;
  // The job's watcher, started on first use (under mu_).
  Result<std::shared_ptr<MemoryWatch>> watch_locked();
  Status release_locked();
  // False when the thread has exited.
  bool apply_settings(BoundThread& t, mlos_training_phase_t phase, bool* changed);
  // Adds the process's threads that no job has as followers, and drops
  // followers that exited (see the class comment).
  void follow_free_threads();
  // The follower settings rule of `phase` (nice offset, I/O): a scan of
  // /proc/self/task happens only when it differs from followed_rule_.
  struct FollowRule {
    int nice_offset;
    IoPriority io;
    bool operator==(const FollowRule&) const = default;
  };
  // Brings gradient buffers to gradients_locked_.
  void sync_buffer_locks(bool* changed);
  size_t round_to_pages(size_t bytes) const;
  // Bytes of checkpoint buffers, registered buffers and tensor pools (what
  // the library allocates or locks for the job), and whether `more` fit in
  // memory_bytes (INSUFFICIENT_MEMORY if not; always with no budget).
  size_t pinned_bytes_locked() const;
  Status within_budget(size_t more, const char* what) const;

  const uint64_t id_;  // unique in the process; owner key in ThreadRegistry
  const pid_t creator_pid_;
  const JobSpec spec_;
  const Grant grant_;
  std::shared_ptr<ClaimBroker> broker_;
  os::Kernel& kernel_;
  Clock clock_;
  ThreadRegistry& threads_registry_;
  const PhasePolicy& policy_ = PhasePolicy::defaults();

  mutable std::mutex mu_;
  bool released_ = false;
  bool phases_marked_ = false;     // set_phase called at least once
  bool gradients_locked_ = false;  // from the first BACKWARD until IDLE
  PhaseProfile profile_;
  std::vector<BoundThread> threads_;
  // What the process's threads had before mlOS (the requesting thread's
  // settings at the request): the baseline of a thread that inherited
  // settings mlOS gave its creator.
  ThreadSettings process_base_;
  std::optional<FollowRule> followed_rule_;
  std::vector<pid_t> library_threads_;  // "mlos-*" threads seen, never followed
  std::map<void*, size_t> checkpoint_buffers_;
  std::map<void*, int> pinned_;          // checkpoint buffers being read by a save
  std::condition_variable unpinned_;     // signalled when pinned_ shrinks
  size_t checkpoint_bytes_ = 0;
  uint64_t pool_bytes_ = 0;  // capacity of the job's tensor pools
  std::map<uintptr_t, Buffer> registered_;
  std::map<uint32_t, std::string> notes_;
  uint32_t degraded_ = 0;
  std::shared_ptr<MemoryWatch> watch_;
  std::optional<MemoryThresholds> thresholds_;  // set through the API
};

const char* effect_name(uint32_t effect);

}  // namespace mlos
