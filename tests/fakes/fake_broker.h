/* SPDX-License-Identifier: Apache-2.0 */
// A ClaimBroker that plans on a given topology with no ledger, and records
// releases; for engine tests.
#pragma once

#include <vector>

#include "engine/claim_broker.h"

namespace mlos_test {

class FakeBroker final : public mlos::ClaimBroker {
 public:
  explicit FakeBroker(mlos::Topology t) : topology_(std::move(t)) {}
  mlos::Result<mlos::Grant> acquire(const mlos::ClaimRequest& r) override {
    auto p = mlos::plan_placement(topology_, topology_.all_cpus(), {}, {}, r.placement);
    if (!p) return p.error();
    return mlos::Grant{++next_id, *p, ""};
  }
  mlos::Status release(uint64_t id) override {
    released.push_back(id);
    return {};
  }
  const mlos::Topology& topology() const override { return topology_; }
  mlos::CpuSet allowed_cpus() const override { return topology_.all_cpus(); }
  const char* engine() const override { return "fake"; }

  std::vector<uint64_t> released;

 private:
  mlos::Topology topology_;
  uint64_t next_id = 0;
};

}  // namespace mlos_test
