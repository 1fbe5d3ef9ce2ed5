/* SPDX-License-Identifier: Apache-2.0 */
// The phase policy: what each training phase means for the OS settings of a
// job's bound threads. The one table of these facts (docs/phases.md shows
// it); engines only apply what it returns.
#pragma once

#include <array>

#include "mlos/training.h"

namespace mlos {

// I/O priority as the kernel encodes it for ioprio_set(2):
// (class << 13) | level. Class 0 (NONE) means "derived from nice".
struct IoPriority {
  enum Class : int { kNone = 0, kRealtime = 1, kBestEffort = 2, kIdle = 3 };
  int io_class = kNone;
  int level = 0;  // 0 (highest) .. 7 (lowest); 0 for kIdle/kNone

  int encode() const { return (io_class << 13) | level; }
  static IoPriority decode(int raw) { return IoPriority{(raw >> 13) & 7, raw & ((1 << 13) - 1)}; }
  bool operator==(const IoPriority&) const = default;
};

// OS settings mlOS manages on one thread.
struct ThreadSettings {
  int nice = 0;
  IoPriority io;
  bool operator==(const ThreadSettings&) const = default;
};

// What a phase does to registered gradient buffers.
enum class BufferLockAction { kKeep, kLock, kUnlock };

struct PhaseRule {
  int nice_offset;  // added to the thread's base nice, minus job priority
  IoPriority io;
  BufferLockAction gradients;
};

class PhasePolicy {
 public:
  // The default policy of docs/phases.md.
  static const PhasePolicy& defaults();

  const PhaseRule& rule(mlos_training_phase_t phase) const { return rules_[phase]; }

  // Settings for a thread whose nice was `base_nice` before mlOS touched it,
  // in a job of `priority` (MLOS_PRIORITY_MIN..MAX). nice is clamped to
  // [-20, 19].
  ThreadSettings settings_for(mlos_training_phase_t phase, int base_nice, int priority) const;

  static bool valid_phase(int phase) { return phase >= 0 && phase < MLOS_TRAINING_PHASE_COUNT; }
  static const char* name(int phase);

 private:
  explicit PhasePolicy(std::array<PhaseRule, MLOS_TRAINING_PHASE_COUNT> rules) : rules_(rules) {}
  std::array<PhaseRule, MLOS_TRAINING_PHASE_COUNT> rules_;
};

}  // namespace mlos
