/* SPDX-License-Identifier: Apache-2.0 */
// Which sample a decoding thread works on next, and when a batch is done.
//
// Batch k of an epoch is samples [k*B, (k+1)*B) of the epoch's order, so
// its contents depend only on the order, never on which thread decoded
// what. A batch takes a free slot when its first sample is handed out, and
// at most one batch per slot is in flight: the slots bound the memory and
// the read-ahead. Samples are handed out in order, but a batch is
// delivered as soon as all of its samples are decoded, before earlier
// batches if they are slower (no head-of-line blocking), unless in_order.
//
// Not thread-safe: the helper calls it under one mutex.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "core/status.h"

namespace mlos::dataload {

class BatchScheduler {
 public:
  BatchScheduler(uint32_t batch_size, uint32_t slots, bool in_order);

  // Starts `epoch` over `order` (this rank's samples). With drop_last an
  // incomplete last batch is left out. Batches of the previous epoch still
  // being decoded are abandoned: their slots come back when their last
  // sample is.
  void begin_epoch(uint64_t epoch, std::vector<uint64_t> order, bool drop_last);

  struct Task {
    uint64_t generation;  // which begin_epoch it belongs to
    uint64_t epoch;
    uint64_t batch;
    uint32_t position;  // within the batch
    uint64_t sample;    // index in the dataset
    uint32_t slot;
  };
  // nullopt when there is nothing to do now: every sample of the epoch is
  // handed out, or the next batch needs a slot and none is free.
  std::optional<Task> next_task();

  struct Done {
    uint64_t generation;
    uint64_t epoch;
    uint64_t batch;
    uint32_t slot;
    uint32_t size;                      // samples the batch was made of
    std::vector<uint32_t> failed;       // positions whose sample was bad, ascending
  };
  // Records a finished task; returns the batches it made deliverable (the
  // slot is then the trainer's until free_slot).
  std::vector<Done> complete(const Task& task, bool ok);
  // INVALID_ARGUMENT unless the slot holds a delivered batch.
  Status free_slot(uint32_t slot);

  uint64_t batches() const { return batches_; }
  // Slots holding a delivered batch not yet freed (queued for the trainer,
  // or in its hands).
  uint32_t delivered_slots() const;
  bool epoch_delivered() const { return delivered_ == batches_; }
  bool has_epoch() const { return has_epoch_; }
  uint64_t epoch() const { return epoch_; }
  uint64_t generation() const { return generation_; }
  // The sample `ahead` positions past the next one to hand out, if any (for
  // read-ahead hints).
  std::optional<uint64_t> upcoming(uint32_t ahead) const;

 private:
  enum class SlotState { kFree, kFilling, kDelivered };
  struct InFlight {
    uint64_t generation;
    uint64_t epoch;
    uint64_t batch;
    uint32_t size;
    uint32_t handed = 0;
    uint32_t finished = 0;
    std::vector<uint32_t> failed;
  };
  uint32_t batch_size_at(uint64_t batch) const;

  const uint32_t batch_size_;
  const bool in_order_;
  std::vector<SlotState> slots_;
  std::map<uint32_t, InFlight> filling_;  // by slot
  std::map<uint64_t, Done> finished_;     // in_order: done, waiting for earlier batches
  bool has_epoch_ = false;
  uint64_t generation_ = 0;  // begin_epoch calls: an epoch may be begun again
  uint64_t epoch_ = 0;
  std::vector<uint64_t> order_;
  uint64_t samples_ = 0;  // of order_ used (drop_last)
  uint64_t batches_ = 0;
  uint64_t next_position_ = 0;  // in order_
  std::optional<uint32_t> current_slot_;  // slot of the batch being handed out
  uint64_t delivered_ = 0, next_to_deliver_ = 0;
};

}  // namespace mlos::dataload
