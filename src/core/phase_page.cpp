// SPDX-License-Identifier: Apache-2.0
#include "core/phase_page.h"

namespace mlos {

namespace {
constexpr auto kRelaxed = std::memory_order_relaxed;
}  // namespace

PhasePageWriter::PhasePageWriter(void* page, uint64_t now_ns) : p_(static_cast<PhasePageLayout*>(page)) {
  p_->seq.store(1, kRelaxed);
  std::atomic_thread_fence(std::memory_order_release);
  p_->version.store(PhasePageLayout::kVersion, kRelaxed);
  p_->phase.store(MLOS_TRAINING_PHASE_IDLE, kRelaxed);
  p_->entered_ns.store(now_ns, kRelaxed);
  for (auto& v : p_->phase_ns) v.store(0, kRelaxed);
  for (auto& v : p_->entries) v.store(0, kRelaxed);
  p_->set_phase_calls.store(0, kRelaxed);
  for (auto* c : {&p_->collective_calls, &p_->collective_bytes, &p_->collective_ns, &p_->checkpoint_saves,
                  &p_->checkpoint_bytes, &p_->checkpoint_ns}) {
    c->store(0, kRelaxed);
  }
  p_->activity_version.store(PhasePageLayout::kActivityVersion, kRelaxed);
  // The magic goes last: a reader that sees it sees an initialised page.
  p_->magic.store(PhasePageLayout::kMagic, std::memory_order_release);
  p_->seq.store(2, std::memory_order_release);
}

void PhasePageWriter::publish(mlos_training_phase_t phase, uint64_t now_ns) {
  const uint64_t seq = p_->seq.load(kRelaxed);
  p_->seq.store(seq + 1, kRelaxed);
  std::atomic_thread_fence(std::memory_order_release);
  p_->set_phase_calls.store(p_->set_phase_calls.load(kRelaxed) + 1, kRelaxed);
  const uint32_t current = p_->phase.load(kRelaxed);
  if (current != static_cast<uint32_t>(phase)) {
    const uint64_t since = p_->entered_ns.load(kRelaxed);
    if (now_ns > since) p_->phase_ns[current].store(p_->phase_ns[current].load(kRelaxed) + (now_ns - since), kRelaxed);
    p_->entries[phase].store(p_->entries[phase].load(kRelaxed) + 1, kRelaxed);
    p_->phase.store(phase, kRelaxed);
    p_->entered_ns.store(now_ns, kRelaxed);
  }
  p_->seq.store(seq + 2, std::memory_order_release);
}

void PhasePageWriter::count_collective(uint64_t bytes, uint64_t ns) {
  p_->collective_calls.fetch_add(1, kRelaxed);
  p_->collective_bytes.fetch_add(bytes, kRelaxed);
  p_->collective_ns.fetch_add(ns, kRelaxed);
}

void PhasePageWriter::count_checkpoint(uint64_t bytes, uint64_t ns) {
  p_->checkpoint_saves.fetch_add(1, kRelaxed);
  p_->checkpoint_bytes.fetch_add(bytes, kRelaxed);
  p_->checkpoint_ns.fetch_add(ns, kRelaxed);
}

std::optional<PhaseSnapshot> PhasePageReader::read(int max_attempts) const {
  if (p_->magic.load(std::memory_order_acquire) != PhasePageLayout::kMagic ||
      p_->version.load(kRelaxed) != PhasePageLayout::kVersion) {
    return std::nullopt;
  }
  for (int attempt = 0; attempt < max_attempts; ++attempt) {
    const uint64_t before = p_->seq.load(std::memory_order_acquire);
    if (before & 1) continue;
    PhaseSnapshot s;
    const uint32_t phase = p_->phase.load(kRelaxed);
    s.entered_ns = p_->entered_ns.load(kRelaxed);
    for (int i = 0; i < MLOS_TRAINING_PHASE_COUNT; ++i) {
      s.phase_ns[i] = p_->phase_ns[i].load(kRelaxed);
      s.entries[i] = p_->entries[i].load(kRelaxed);
    }
    s.set_phase_calls = p_->set_phase_calls.load(kRelaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (p_->seq.load(kRelaxed) != before) continue;
    if (phase >= MLOS_TRAINING_PHASE_COUNT) return std::nullopt;  // not written by a PhasePageWriter
    s.phase = static_cast<mlos_training_phase_t>(phase);
    if (p_->activity_version.load(kRelaxed) == PhasePageLayout::kActivityVersion) {
      s.activity = PhaseSnapshot::Activity{p_->collective_calls.load(kRelaxed), p_->collective_bytes.load(kRelaxed),
                                           p_->collective_ns.load(kRelaxed),    p_->checkpoint_saves.load(kRelaxed),
                                           p_->checkpoint_bytes.load(kRelaxed), p_->checkpoint_ns.load(kRelaxed)};
    }
    return s;
  }
  return std::nullopt;
}

}  // namespace mlos
