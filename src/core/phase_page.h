/* SPDX-License-Identifier: Apache-2.0 */
// The phase page: a small shared-memory record through which a job publishes
// its current phase and phase profile, so that a reader in another process
// (mlosd) can follow phases without a socket round trip per set_phase.
//
// One writer (the job, which serialises its own set_phase calls) and any
// number of readers. A sequence lock keeps reads consistent: the writer makes
// `seq` odd, updates the fields, and makes it even again; a reader retries
// while `seq` is odd or changed during its read. Every field is a lock-free
// std::atomic, so the layout works in memory shared between processes and
// has no data races. Publishing costs a handful of stores and no system call.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <optional>

#include "mlos/training.h"

namespace mlos {

struct PhasePageLayout {
  static constexpr uint32_t kMagic = 0x6d6c5048;  // "mlPH"
  static constexpr uint32_t kVersion = 1;

  std::atomic<uint32_t> magic;
  std::atomic<uint32_t> version;
  std::atomic<uint64_t> seq;
  std::atomic<uint32_t> phase;
  std::atomic<uint64_t> entered_ns;  // monotonic time the phase was entered
  std::array<std::atomic<uint64_t>, MLOS_TRAINING_PHASE_COUNT> phase_ns;  // time in completed visits
  std::array<std::atomic<uint64_t>, MLOS_TRAINING_PHASE_COUNT> entries;
  std::atomic<uint64_t> set_phase_calls;
  // Activity counters, outside the sequence lock: each only grows, by one
  // relaxed add per event, and a reader takes each as it finds it.
  // kActivityVersion once the writer keeps them (pages of older libraries
  // leave 0 here: no figures, rather than zeros that look measured).
  static constexpr uint32_t kActivityVersion = 1;
  std::atomic<uint32_t> activity_version;
  std::atomic<uint64_t> collective_calls;   // barriers and all-reduces finished
  std::atomic<uint64_t> collective_bytes;   // bytes reduced by the successful ones
  std::atomic<uint64_t> collective_ns;      // time in them
  std::atomic<uint64_t> checkpoint_saves;   // checkpoints made durable
  std::atomic<uint64_t> checkpoint_bytes;   // their payload bytes
  std::atomic<uint64_t> checkpoint_ns;      // time writing them (the writer's, async saves included)
};
static_assert(std::atomic<uint64_t>::is_always_lock_free, "the phase page needs lock-free 64-bit atomics");
static_assert(sizeof(PhasePageLayout) <= 4096, "the phase page fits in one page");

struct PhaseSnapshot {
  mlos_training_phase_t phase = MLOS_TRAINING_PHASE_IDLE;
  uint64_t entered_ns = 0;
  std::array<uint64_t, MLOS_TRAINING_PHASE_COUNT> phase_ns{};  // completed visits only
  std::array<uint64_t, MLOS_TRAINING_PHASE_COUNT> entries{};
  uint64_t set_phase_calls = 0;
  // The activity counters, when the writer keeps them.
  struct Activity {
    uint64_t collective_calls = 0, collective_bytes = 0, collective_ns = 0;
    uint64_t checkpoint_saves = 0, checkpoint_bytes = 0, checkpoint_ns = 0;
  };
  std::optional<Activity> activity;

  // Time in phase `p` up to `now_ns`: its completed visits and, if it is
  // the current phase, the running one.
  uint64_t nanoseconds_at(int p, uint64_t now_ns) const {
    uint64_t ns = phase_ns[p];
    if (p == phase && now_ns > entered_ns) ns += now_ns - entered_ns;
    return ns;
  }
};

// Writes a page. Not thread-safe: one writer at a time (the job's mutex).
class PhasePageWriter {
 public:
  // Initialises the page at `page` (zeroed memory of at least
  // sizeof(PhasePageLayout)) for a job that starts IDLE at `now_ns`.
  PhasePageWriter(void* page, uint64_t now_ns);

  // Records a set_phase call at `now_ns` (re-entering the current phase
  // counts the call only).
  void publish(mlos_training_phase_t phase, uint64_t now_ns);

  // Activity, safe from any thread of the writing process (relaxed atomic
  // adds): a finished collective (`bytes` 0 for a failed one or a
  // barrier), a checkpoint made durable.
  void count_collective(uint64_t bytes, uint64_t ns);
  void count_checkpoint(uint64_t bytes, uint64_t ns);

 private:
  PhasePageLayout* p_;
};

// Reads a page written by a PhasePageWriter, possibly in another process.
class PhasePageReader {
 public:
  explicit PhasePageReader(const void* page) : p_(static_cast<const PhasePageLayout*>(page)) {}
  // nullopt if the page is not (or not yet) a version-1 phase page, or if
  // `max_attempts` reads all raced with the writer.
  std::optional<PhaseSnapshot> read(int max_attempts = 1000) const;

 private:
  const PhasePageLayout* p_;
};

}  // namespace mlos
