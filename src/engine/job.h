// One granted allocation and everything mlOS changed on its behalf: bound
// threads (their baselines live in ThreadRegistry), phase state and profile, locked
// buffers, and the reasons effects were degraded. Engine-neutral: kernel
// calls go through os::Kernel, the claim through ClaimBroker.
//
// Thread-safe: every public method takes the job's mutex. After release()
// every method returns INVALID_HANDLE.
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
#include "engine/claim_broker.h"
#include "engine/memory_watch.h"
#include "engine/thread_registry.h"
#include "mlos/training.h"
#include "os/kernel.h"

namespace mlos {

struct JobSpec {
  PlacementRequest request;
  int priority = 0;
  std::string label;
};

class Job {
 public:
  using Clock = std::function<uint64_t()>;  // monotonic nanoseconds

  Job(JobSpec spec, Grant grant, std::shared_ptr<ClaimBroker> broker, os::Kernel& kernel,
      Clock clock = steady_clock_ns, ThreadRegistry& threads = ThreadRegistry::process_wide());

  // `tid` is the thread; `is_calling_thread` says whether its memory policy
  // can be set (see mlos_training_bind_thread).
  Status bind_thread(pid_t tid, bool is_calling_thread, int cpu_index);
  Status set_phase(mlos_training_phase_t phase);
  Result<void*> alloc_checkpoint_buffer(size_t size);
  Status free_checkpoint_buffer(void* buffer);
  // While a checkpoint buffer is pinned (an asynchronous checkpoint save is
  // reading it), freeing it is refused and release() waits for the unpin
  // before unmapping it. Pins nest. INVALID_HANDLE once released,
  // INVALID_ARGUMENT for a pointer that is not a buffer of this job.
  Status pin_checkpoint_buffer(void* buffer);
  void unpin_checkpoint_buffer(void* buffer);
  Status register_buffer(void* addr, size_t size, mlos_buffer_kind_t kind);
  Status unregister_buffer(void* addr);
  // Memory pressure (see MemoryWatch): the watcher starts with the first
  // of these calls. Never called with the job's mutex held across a
  // callback, so callbacks may use the job.
  Status register_memory_callback(mlos_memory_callback_t cb, void* user_data);
  Status unregister_memory_callback(mlos_memory_callback_t cb, void* user_data);
  Status set_memory_thresholds(const MemoryThresholds& t);
  Result<PressureReport> memory_pressure();

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

  static uint64_t steady_clock_ns();
  // The process that requested this job (a forked child inherits the handle
  // but not the job).
  pid_t creator_pid() const { return creator_pid_; }

 private:
  struct BoundThread {
    pid_t tid;
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
  // The job's watcher, started on first use (under mu_).
  Result<std::shared_ptr<MemoryWatch>> watch_locked();
  Status release_locked();
  void apply_settings(BoundThread& t, mlos_training_phase_t phase, bool* changed);
  // Brings gradient buffers to gradients_locked_.
  void sync_buffer_locks(bool* changed);
  size_t round_to_pages(size_t bytes) const;

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
  std::map<void*, size_t> checkpoint_buffers_;
  std::map<void*, int> pinned_;          // checkpoint buffers being read by a save
  std::condition_variable unpinned_;     // signalled when pinned_ shrinks
  size_t checkpoint_bytes_ = 0;
  std::map<uintptr_t, Buffer> registered_;
  std::map<uint32_t, std::string> notes_;
  uint32_t degraded_ = 0;
  std::shared_ptr<MemoryWatch> watch_;
  std::optional<MemoryThresholds> thresholds_;  // set through the API
};

const char* effect_name(uint32_t effect);

}  // namespace mlos
