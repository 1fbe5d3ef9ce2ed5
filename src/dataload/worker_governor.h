/* SPDX-License-Identifier: Apache-2.0 */
// How many of the helper's decoding threads work at a time.
//
// The helper starts one thread per CPU of the job (threads cannot be made
// after its seccomp lock-down), and those CPUs are usually the trainer's
// too. A trainer that is waiting for data wants every thread decoding; a
// trainer that is busy computing, with batches already waiting for it,
// wants the CPUs for itself. So each time the trainer gives a slot back,
// the governor looks at two things:
//   - queue occupancy: batches decoded and not yet taken (`ready`);
//   - the trainer's DATA_LOADING share since its previous slot: the part of
//     that time it spent blocked waiting for a batch.
// A starving trainer (share above kStarvedShare) or an empty queue adds a
// thread; a trainer that did not wait (share below kFedShare) with half or
// more of the slots ready takes one away, down to one. One step per slot,
// so a wrong step is undone a batch later. Starts at the maximum: a
// data-bound job is never slowed while the governor learns.
//
// Pure logic; the helper calls it under its mutex.
#pragma once

#include <cstdint>

namespace mlos::dataload {

class WorkerGovernor {
 public:
  static constexpr double kStarvedShare = 0.05;
  static constexpr double kFedShare = 0.01;

  // max_workers >= 1 threads, `slots` >= 1 batch slots.
  WorkerGovernor(uint32_t max_workers, uint32_t slots);

  uint32_t active() const { return active_; }
  // The trainer gave a slot back, `ready` batches wait for it now, and it
  // spent `wait_share` (0..1) of the time since its previous slot waiting.
  // Returns active() after the step.
  uint32_t on_release(uint32_t ready, double wait_share);

 private:
  const uint32_t max_;
  const uint32_t slots_;
  uint32_t active_;
};

}  // namespace mlos::dataload
