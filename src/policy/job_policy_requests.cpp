// SPDX-License-Identifier: Apache-2.0
#include "policy/job_policy_requests.h"

#include <algorithm>

#include "mlos/policy.h"
#include "os/log_sink.h"
#include "policy/policy_hosts.h"

namespace mlos::policy {

using nlohmann::json;

bool JobPolicyRequests::handles(ActionKind kind) {
  return kind == ActionKind::kRequestPolicy || kind == ActionKind::kReleasePolicy ||
         kind == ActionKind::kRecommendPlacement || kind == ActionKind::kReport;
}

bool JobPolicyRequests::shows(ActionKind kind) {
  return kind == ActionKind::kRecommendPlacement || kind == ActionKind::kReport;
}

Status JobPolicyRequests::take(const std::string& by, const Action& a, std::deque<JobPolicyOp>& ops) {
  switch (a.kind) {
    case ActionKind::kRequestPolicy: {
      if (a.target == by) return make_error(MLOS_ERR_PERMISSION, "a policy cannot attach itself");
      json config = json::parse(a.payload, nullptr, false);
      if (!config.is_object()) return make_error(MLOS_ERR_INVALID_ARGUMENT, "the config is not a JSON object");
      ops.push_back(JobPolicyOp{a.job, by, a.target, true, std::move(config)});
      return Status::Ok();
    }
    case ActionKind::kReleasePolicy: {
      auto owner = attached_by_.find(a.target);
      if (owner == attached_by_.end() || owner->second != by) {
        return make_error(MLOS_ERR_PERMISSION, a.target + " was not attached to the job by " + by);
      }
      ops.push_back(JobPolicyOp{a.job, by, a.target, false, {}});
      return Status::Ok();
    }
    case ActionKind::kRecommendPlacement:
      placement_.set(static_cast<int>(a.value), by);
      placement_reason_ = a.payload;
      return Status::Ok();
    case ActionKind::kReport: {
      json report = json::parse(a.payload, nullptr, false);
      if (!report.is_object()) return make_error(MLOS_ERR_INVALID_ARGUMENT, "the report is not a JSON object");
      reports_[by] = std::move(report);
      return Status::Ok();
    }
    default:
      return make_error(MLOS_ERR_INVALID_ARGUMENT,
                        std::string(action_kind_name(a.kind)) + " is not a request about the job's policies");
  }
}

bool JobPolicyRequests::take_back(const std::string& by, uint64_t job, std::deque<JobPolicyOp>& ops) {
  bool changed = placement_.take_back(by);
  changed = reports_.erase(by) > 0 || changed;
  for (const auto& [target, owner] : attached_by_) {
    if (owner == by) ops.push_back(JobPolicyOp{job, by, target, false, {}});
  }
  return changed;
}

bool JobPolicyRequests::owner_took(const std::string& name) {
  const bool owned = attached_by_.erase(name) > 0;
  return request_errors_.erase(name) > 0 || owned;
}

bool JobPolicyRequests::carry_out(const JobPolicyOp& op, PolicyHosts& hosts) {
  const auto used = hosts.policies_of(op.job);
  const auto uses = [&](const std::string& name) { return std::find(used.begin(), used.end(), name) != used.end(); };
  auto owner = attached_by_.find(op.target);
  const bool ours = owner != attached_by_.end() && owner->second == op.by;
  if (!op.attach) {
    if (!ours) return false;
    attached_by_.erase(owner);
    if (uses(op.target)) (void)hosts.detach(op.target, op.job);
    return true;
  }
  // The requester must still be attached; a policy the job already uses
  // (its own request, or another policy's) is left as it is.
  if (!uses(op.by) || uses(op.target)) return false;
  if (Status st = hosts.attach(op.target, op.job, op.config); !st) {
    if (request_errors_[op.target] != st.error().message) {
      log_message(MLOS_LOG_WARN, "policy " + op.by + ": could not attach " + op.target + " to job " +
                                     std::to_string(op.job) + ": " + st.error().describe());
    }
    request_errors_[op.target] = st.error().message;
  } else {
    attached_by_[op.target] = op.by;
    request_errors_.erase(op.target);
  }
  return true;
}

json JobPolicyRequests::report() const {
  json out{{"reports", reports_}, {"attached_by_policy", attached_by_}, {"request_errors", request_errors_}};
  if (placement_.value) {
    out["placement"] = {{"recommended", *placement_.value == MLOS_POLICY_PLACEMENT_EXCLUSIVE ? "exclusive" : "shared"},
                        {"by", placement_.by},
                        {"reason", placement_reason_}};
  }
  return out;
}

bool JobPolicyRequests::empty() const {
  return reports_.empty() && !placement_.value && attached_by_.empty() && request_errors_.empty();
}

void run_job_policy_ops(std::deque<JobPolicyOp>& ops, PolicyHosts& hosts,
                        const std::function<JobPolicyRequests*(uint64_t)>& find,
                        const std::function<void(uint64_t)>& changed, size_t budget) {
  for (; budget > 0 && !ops.empty(); --budget) {
    JobPolicyOp op = std::move(ops.front());
    ops.pop_front();
    JobPolicyRequests* books = find(op.job);
    if (books != nullptr && books->carry_out(op, hosts)) changed(op.job);
  }
}

}  // namespace mlos::policy
