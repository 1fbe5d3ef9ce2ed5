// SPDX-License-Identifier: Apache-2.0
// JobManager::request: a job granted to the calling process, in steps:
// where the process is (nested in an envelope, a guest of its first job,
// or on its own), the quotas and bounds that apply, the placement, the
// job admitted (booked, its cgroup made, the owner moved in, recorded),
// then the policies it asked for, whose verdicts complete the grant.
#include "daemon/job_manager.h"

#include <algorithm>

#include "daemon/event_log.h"
#include "protocol/grant.h"

namespace mlos::daemon {

using nlohmann::json;

namespace {

CpuSet node_set(const std::vector<int>& nodes) {
  CpuSet s;
  for (int n : nodes) s.set(n);
  return s;
}

}  // namespace

Result<json> JobManager::request(const os::PeerCredentials& peer, const json& args, os::UniqueFd page) {
  auto asked = protocol::decode_grant_request(args);
  if (!asked) return asked.error();
  // The job belongs to the process that connected, and only while it is
  // still that process running as that user (see JobManagerDeps).
  auto owner = d_.peer_process(peer);
  if (!owner) return owner.error();
  if (book_.ids_exhausted()) {
    return make_error(MLOS_ERR_STATE_CORRUPT, "job ids are exhausted (next_id " + std::to_string(book_.next_id()) + ")");
  }
  auto plan = plan_grant(peer, *owner, *asked);
  if (!plan) return plan.error();
  if (asked->dry_run) {
    protocol::GrantReply reply;
    reply.placement = plan->placement;
    reply.dry_run = true;
    if (plan->nested) reply.nested_in = plan->enclosing->record.id;
    return protocol::encode_grant_reply(reply);
  }
  Live& live = admit(peer, *owner, *asked, *plan, std::move(page));
  if (Status s = persist(live); !s) {
    forget(live.record.id, "state file not saved");
    return make_error(s.error().code, "job not granted: the state file could not be saved: " + s.error().describe());
  }
  return attach_grant_policies(live, plan->placement);
}

Result<JobManager::GrantPlan> JobManager::plan_grant(const os::PeerCredentials& peer, const ProcessId& owner,
                                                     protocol::GrantRequest& x) {
  PlacementRequest& req = x.placement;
  GrantPlan plan;
  // Where the process already is: inside a job's cgroup put there by
  // another process or by `mlos run` (nested: carved from that job, never
  // refused for CPUs the node lacks), or inside its own first job's (a
  // guest of it). Only a process in a job cgroup, or below an envelope's
  // owner, has either, so nothing else is searched.
  Live* envelope = enclosing_job(owner);
  plan.enclosing = envelope;
  plan.nested = envelope != nullptr && (envelope->record.owner != owner || envelope->record.envelope);
  // A nested job's CPUs, memory and GPUs are its envelope's, paid for
  // once: it counts only as a job here, and must fit inside the envelope.
  const int gpus_asked = std::max<int>(req.gpus.count, static_cast<int>(req.gpus.uuids.size()));
  const JobAsk ask = plan.nested ? book_.ask(0, 0, 0)
                                 : book_.ask(req.exclusive ? req.num_cpus : 0, req.memory_bytes,
                                             req.gpus.exclusive ? gpus_asked : 0);
  if (Status s = book_.check_quota(d_.quotas, peer.uid, ask); !s) return s.error();
  if (plan.nested) {
    if (Status s = book_.fits_envelope_memory(envelope->record, req.memory_bytes); !s) return s.error();
  }
  // The requester's own CPUs bound it too (a rank's share of its
  // envelope, a taskset): it can only narrow itself. So does the cgroup it
  // is in, read from the kernel (a pod's or a Slurm step's cpuset): a job
  // is never placed outside it, whatever the client says.
  if (envelope == nullptr && d_.cgroups && d_.cgroup_of) {
    plan.origin = job_origin(d_.cgroup_of(owner.pid), d_.cgroup_base, d_.stay_in_cgroups, d_.cgroup_cpus);
  }
  CpuSet bound = x.allowed ? d_.allowed & *x.allowed : d_.allowed;
  if (plan.origin.cpus) {
    bound = bound & *plan.origin.cpus;
    if (bound.empty()) {
      return make_error(MLOS_ERR_INSUFFICIENT_CPUS, "the requester's cgroup " + plan.origin.cgroup + " allows CPUs " +
                                                        plan.origin.cpus->to_list() + ", none of which mlosd manages (" +
                                                        d_.allowed.to_list() + ")");
    }
  }
  if (req.gpus.wanted()) {
    // A nested job's GPUs are carved from its envelope's, as its CPUs are;
    // any job's are bounded by the GPUs its CUDA_VISIBLE_DEVICES shows.
    if (plan.nested) req.gpus.within = envelope->record.gpus;
    bound_by_visible_devices(req.gpus, d_.topology, x.cuda_visible_devices ? x.cuda_visible_devices->c_str() : nullptr);
  }
  if (!plan.nested) {
    auto placement = plan_placement(d_.topology, bound, book_.node_usage(), d_.memory(), req);
    if (!placement) return placement.error();
    plan.placement = std::move(*placement);
    return plan;
  }
  const JobRecord& outer = envelope->record;
  auto placement =
      plan_placement(d_.topology, outer.cpus & bound, book_.nested_usage(outer.id), MemoryAvailability{}, req);
  if (!placement) {
    return make_error(placement.error().code, "nested in job " + std::to_string(outer.id) + " (CPUs " +
                                                  outer.cpus.to_list() +
                                                  ", the process's envelope): " + placement.error().message);
  }
  plan.placement = std::move(*placement);
  return plan;
}

JobManager::Live& JobManager::admit(const os::PeerCredentials& peer, const ProcessId& owner,
                                    const protocol::GrantRequest& x, const GrantPlan& plan, os::UniqueFd page) {
  Live j{JobRecord{}, std::nullopt, PhaseProfile(d_.now_ns())};
  JobRecord& r = j.record;
  r.id = book_.take_id();
  r.owner = owner;
  r.uid = peer.uid;
  r.cpus = plan.placement.cpu_set;
  r.mems = node_set(plan.placement.nodes);
  r.exclusive = x.placement.exclusive;
  r.memory_bytes = x.placement.memory_bytes;
  r.priority = x.priority;
  r.envelope = x.envelope;
  r.origin_cgroup = plan.origin.cgroup;
  r.stays_in_origin = plan.origin.stays;
  // Another manager owns its cgroup and keeps other processes off its
  // CPUs (the kubelet's static CPU manager, Slurm): mlosd does not.
  r.confines = !plan.nested && !plan.origin.stays && confines(r);
  r.label = x.label.empty() ? "pid-" + std::to_string(owner.pid) : x.label;
  r.created_unix = d_.now_unix();
  r.gpus = plan.placement.gpus;
  r.gpus_exclusive = x.placement.gpus.wanted() && x.placement.gpus.exclusive;
  if (!r.gpus.empty()) r.gpu_share_file = x.gpu_share_file;
  if (!plan.placement.gpu_note.empty()) j.notes.push_back(plan.placement.gpu_note);
  if (page.valid()) map_phase_page(j, page, x.page_fd);
  Live* host = plan.enclosing != nullptr && !plan.nested ? plan.enclosing : nullptr;
  if (plan.nested) {
    r.parent = plan.enclosing->record.id;
    j.notes.push_back("nested in job " + std::to_string(r.parent) + ": carved from its CPUs, in its cgroup");
  } else if (host != nullptr && d_.cgroups) {
    // One process sits in one cgroup per hierarchy: the host's, widened.
    r.host = host->record.id;
    j.notes.push_back("cgroup: shares " + host->record.cgroup() +
                      " with this process's first job (one cgroup per process); its cpuset now covers both");
  }
  // A job nested in an envelope (`mlos run --policy ...`) gets the
  // envelope's policies too, with the envelope's config unless it asked
  // for that policy itself: the command's own requests are what the
  // policies advise (threads), not the envelope, which runs no code.
  r.policies = x.policies;
  if (plan.nested) {
    for (const auto& [name, config] : plan.enclosing->record.policies.items()) {
      if (!r.policies.contains(name)) r.policies[name] = config;
    }
  }
  Live& live = jobs_.emplace(r.id, std::move(j)).first->second;
  book_.add(live.record);
  if (live.record.host != 0) {
    cgroups_.apply(*host, false);
  } else if (live.record.parent == 0) {
    cgroups_.apply(live, true);
    if (d_.cgroups && live.weight != 0) {
      if (Status s = d_.move_process(live.record.cgroup(), live.record.owner, peer.uid); !s) {
        live.notes.push_back("cgroup: could not move pid " + std::to_string(live.record.owner.pid) +
                             " in: " + s.error().describe());
      }
    }
  }
  return live;
}

void JobManager::map_phase_page(Live& j, const os::UniqueFd& page, int owner_fd) {
  auto mapped = os::SharedPage::map_readonly(page.get());
  if (mapped && owner_fd >= 0) {
    j.page.emplace(std::move(*mapped));
    j.record.page_fd = owner_fd;
    return;
  }
  j.notes.push_back(std::string("phase page: not used (") +
                    (mapped ? "no page_fd number given" : mapped.error().describe()) + "); phases only over the socket");
}

Result<json> JobManager::attach_grant_policies(Live& live, const Placement& placement) {
  // The policies it asked for are part of the grant: one that cannot be
  // attached takes the job back, so the caller gets all or nothing. Their
  // verdicts may come later (PendingReplies): the job holds its CPUs
  // meanwhile. The defaults are attached too; their failures are notes.
  const uint64_t id = live.record.id;
  if (!policies_ && !live.record.policies.empty()) {
    forget(id, "a policy could not be attached");
    (void)persist_removal({id});
    return make_error(MLOS_ERR_UNSUPPORTED, "job not granted: this mlosd runs without policy modules");
  }
  std::vector<PendingReplies::Ask> asks;
  for (const auto& [name, config] : live.record.policies.items()) {
    asks.push_back([this, name = name, config = config, id](policy::PolicyHosts::Verdict v) {
      policies_->attach_async(name, id, config, std::move(v));
    });
  }
  for (PendingReplies::Ask& ask : default_policy_asks(live)) asks.push_back(std::move(ask));
  return replies_.after(asks, [this, id, placement](const std::optional<Error>& refused) -> Result<json> {
    return finish_grant(id, placement, refused);
  });
}

Result<json> JobManager::finish_grant(uint64_t id, const Placement& placement, const std::optional<Error>& refused) {
  auto it = jobs_.find(id);
  if (refused) {
    if (it != jobs_.end()) {
      forget(id, "a policy could not be attached");
      (void)persist_removal({id});
      confine();
    }
    return make_error(refused->code, "job not granted: " + refused->message);
  }
  if (it == jobs_.end()) {
    return make_error(MLOS_ERR_NO_SUCH_THREAD, "job " + std::to_string(id) + " ended before its policies were attached");
  }
  Live& live = it->second;
  confine();
  {
    LogFields fields = job_fields(live.record);
    fields.insert(fields.begin(), {"MLOS_EVENT", "granted"});
    fields.push_back({"EXCLUSIVE", live.record.exclusive ? "1" : "0"});
    fields.push_back({"CGROUP", cgroups_.cgroup_of(live)});
    log_event(MLOS_LOG_INFO,
              "granted job " + std::to_string(live.record.id) + " (" + live.record.label + ") CPUs " +
                  live.record.cpus.to_list() + " to pid " + std::to_string(live.record.owner.pid),
              fields);
  }
  protocol::GrantReply reply;
  reply.placement = placement;
  reply.placement.cpu_set = live.record.cpus;
  reply.placement.gpus = live.record.gpus;
  reply.job = live.record.id;
  reply.cgroup = cgroups_.cgroup_of(live);
  if (policies_) reply.policies = policies_->policies_of(live.record.id);
  reply.notes = live.notes;
  return protocol::encode_grant_reply(reply);
}

}  // namespace mlos::daemon
