// SPDX-License-Identifier: Apache-2.0
#include "dataload/batch_scheduler.h"

#include <algorithm>
#include <string>

namespace mlos::dataload {

BatchScheduler::BatchScheduler(uint32_t batch_size, uint32_t slots, bool in_order)
    : batch_size_(batch_size), in_order_(in_order), slots_(slots, SlotState::kFree) {}

void BatchScheduler::begin_epoch(uint64_t epoch, std::vector<uint64_t> order, bool drop_last) {
  has_epoch_ = true;
  ++generation_;
  epoch_ = epoch;
  order_ = std::move(order);
  batches_ = drop_last ? order_.size() / batch_size_ : (order_.size() + batch_size_ - 1) / batch_size_;
  samples_ = std::min<uint64_t>(order_.size(), batches_ * batch_size_);
  next_position_ = 0;
  current_slot_.reset();
  delivered_ = next_to_deliver_ = 0;
  // Finished batches of the old epoch that were held back are dropped.
  for (auto& [batch, done] : finished_) slots_[done.slot] = SlotState::kFree;
  finished_.clear();
  // Batches of the old epoch that never got all their samples handed out
  // will not get the rest: shrink them to what was handed out.
  for (auto& [slot, f] : filling_) {
    f.size = f.handed;
    if (f.finished == f.handed) slots_[slot] = SlotState::kFree;
  }
  std::erase_if(filling_, [this](const auto& e) { return slots_[e.first] == SlotState::kFree; });
}

uint32_t BatchScheduler::batch_size_at(uint64_t batch) const {
  return static_cast<uint32_t>(std::min<uint64_t>(batch_size_, samples_ - batch * batch_size_));
}

std::optional<BatchScheduler::Task> BatchScheduler::next_task() {
  if (!has_epoch_ || next_position_ >= samples_) return std::nullopt;
  const uint64_t batch = next_position_ / batch_size_;
  const auto position = static_cast<uint32_t>(next_position_ % batch_size_);
  if (position == 0) {
    auto free = std::find(slots_.begin(), slots_.end(), SlotState::kFree);
    if (free == slots_.end()) return std::nullopt;
    const auto slot = static_cast<uint32_t>(free - slots_.begin());
    *free = SlotState::kFilling;
    filling_[slot] = InFlight{generation_, epoch_, batch, batch_size_at(batch)};
    current_slot_ = slot;
  }
  InFlight& f = filling_.at(*current_slot_);
  ++f.handed;
  return Task{generation_, epoch_, batch, position, order_[next_position_++], *current_slot_};
}

std::vector<BatchScheduler::Done> BatchScheduler::complete(const Task& task, bool ok) {
  std::vector<Done> out;
  auto it = filling_.find(task.slot);
  if (it == filling_.end() || it->second.generation != task.generation || it->second.batch != task.batch) return out;
  InFlight& f = it->second;
  ++f.finished;
  if (!ok) f.failed.push_back(task.position);
  if (f.finished < f.size) return out;
  if (f.generation != generation_) {  // abandoned with its epoch
    slots_[task.slot] = SlotState::kFree;
    filling_.erase(it);
    return out;
  }
  std::sort(f.failed.begin(), f.failed.end());
  Done done{f.generation, f.epoch, f.batch, task.slot, f.size, std::move(f.failed)};
  filling_.erase(it);
  if (!in_order_) {
    slots_[done.slot] = SlotState::kDelivered;
    ++delivered_;
    out.push_back(std::move(done));
    return out;
  }
  finished_.emplace(done.batch, std::move(done));
  for (auto next = finished_.find(next_to_deliver_); next != finished_.end(); next = finished_.find(next_to_deliver_)) {
    slots_[next->second.slot] = SlotState::kDelivered;
    ++delivered_;
    ++next_to_deliver_;
    out.push_back(std::move(next->second));
    finished_.erase(next);
  }
  return out;
}

Status BatchScheduler::free_slot(uint32_t slot) {
  if (slot >= slots_.size() || slots_[slot] != SlotState::kDelivered) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT, "slot " + std::to_string(slot) + " holds no delivered batch");
  }
  slots_[slot] = SlotState::kFree;
  return Status::Ok();
}

std::optional<uint64_t> BatchScheduler::upcoming(uint32_t ahead) const {
  if (!has_epoch_ || next_position_ + ahead >= samples_) return std::nullopt;
  return order_[next_position_ + ahead];
}

uint32_t BatchScheduler::delivered_slots() const {
  return static_cast<uint32_t>(std::count(slots_.begin(), slots_.end(), SlotState::kDelivered));
}

}  // namespace mlos::dataload
