// SPDX-License-Identifier: Apache-2.0
// Job's policy calls: forwarded to its broker for its claim (mlosd in
// daemon mode; the embedded engine refuses them, see ClaimBroker).
#include "engine/job.h"

namespace mlos {

namespace {
Error released() { return make_error(MLOS_ERR_INVALID_HANDLE, "resources already released"); }
}  // namespace

Result<uint64_t> Job::live_claim() const {
  std::lock_guard lock(mu_);
  if (released_) return released();
  return grant_.claim_id;
}

Status Job::still_live() const {
  std::lock_guard lock(mu_);
  return released_ ? Status(released()) : Status::Ok();
}

Result<std::vector<std::string>> Job::request_policy(const std::string& name, const nlohmann::json& config) {
  auto claim = live_claim();
  if (!claim) return claim.error();
  auto names = broker_->request_policy(*claim, name, config);
  if (Status s = still_live(); !s) return s.error();
  return names;
}

Status Job::release_policy(const std::string& name) {
  auto claim = live_claim();
  if (!claim) return claim.error();
  Status s = broker_->release_policy(*claim, name);
  if (Status live = still_live(); !live) return live;
  return s;
}

Result<PolicyAdvice> Job::advice() {
  auto claim = live_claim();
  if (!claim) return claim.error();
  auto a = broker_->advice(*claim);
  if (Status s = still_live(); !s) return s.error();
  return a;
}

}  // namespace mlos
