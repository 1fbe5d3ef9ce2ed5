// SPDX-License-Identifier: Apache-2.0
// Job's policy calls: forwarded to its broker for its claim (mlosd in
// daemon mode; in embedded mode the policy hosts libmlos starts, see
// LedgerClaimBroker and EmbeddedPolicies; UNSUPPORTED only when no policy
// host is found).
#include "engine/job.h"

#include "engine/read_log.h"

namespace mlos {

namespace {
Error released() { return make_error(MLOS_ERR_INVALID_HANDLE, "resources already released"); }

Error no_read_log(const ClaimBroker& broker) {
  return make_error(MLOS_ERR_UNSUPPORTED, std::string("the ") + broker.engine() +
                                              " engine collects no read log for its jobs (embedded mode does; "
                                              "mlosd does not yet)");
}
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

Status Job::record_read(policy::FileRead read) {
  if (Status s = still_live(); !s) return s;
  if (!grant_.read_log) return no_read_log(*broker_);
  grant_.read_log->record(std::move(read));
  return Status::Ok();
}

Status Job::announce_reads(std::vector<std::string> paths) {
  if (Status s = still_live(); !s) return s;
  if (!grant_.read_log) return no_read_log(*broker_);
  grant_.read_log->announce(std::move(paths));
  return Status::Ok();
}

Result<PolicyAdvice> Job::advice() {
  auto claim = live_claim();
  if (!claim) return claim.error();
  auto a = broker_->advice(*claim);
  if (Status s = still_live(); !s) return s.error();
  return a;
}

}  // namespace mlos
