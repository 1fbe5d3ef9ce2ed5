/* SPDX-License-Identifier: Apache-2.0 */
// The job's end of its phase page under mlosd: a sealed memfd page (sent to
// mlosd with the request) that a PhasePageWriter fills. The memfd stays open
// and mapped in this process for the sink's lifetime (a restarted mlosd maps
// it again by its number), which the Job's Grant extends to the job's own.
//
// publish() is the job's, under its mutex (one writer); the count_* methods
// are relaxed atomic adds, safe from any thread while the sink is alive.
#pragma once

#include <utility>

#include "core/phase_page.h"
#include "engine/claim_broker.h"
#include "os/shared_page.h"

namespace mlos {

class PagePhaseSink final : public PhaseSink {
 public:
  PagePhaseSink(os::SharedPage page, uint64_t now_ns) : page_(std::move(page)), writer_(page_.data(), now_ns) {}
  void publish(mlos_training_phase_t phase, uint64_t now_ns) override { writer_.publish(phase, now_ns); }
  void count_collective(uint64_t bytes, uint64_t ns) override { writer_.count_collective(bytes, ns); }
  void count_checkpoint(uint64_t bytes, uint64_t ns) override { writer_.count_checkpoint(bytes, ns); }
  int fd() const { return page_.fd(); }

 private:
  os::SharedPage page_;
  PhasePageWriter writer_;
};

}  // namespace mlos
