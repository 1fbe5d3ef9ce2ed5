// SPDX-License-Identifier: Apache-2.0
#include "daemon/job_book.h"

#include <algorithm>

namespace mlos::daemon {

namespace {

template <class Map>
const typename Map::mapped_type& find_or_empty(const Map& map, const typename Map::key_type& key) {
  static const typename Map::mapped_type kEmpty{};
  auto it = map.find(key);
  return it == map.end() ? kEmpty : it->second;
}

}  // namespace

void JobBook::change(JobRecord& r, const std::function<void(JobRecord&)>& edit) {
  book(r, -1);
  edit(r);
  book(r, +1);
}

const CpuUsage& JobBook::nested_usage(uint64_t envelope) const { return find_or_empty(nested_usage_, envelope); }

const std::set<uint64_t>& JobBook::nested_in(uint64_t id) const { return find_or_empty(children_, id); }

const std::set<uint64_t>& JobBook::guests_of(uint64_t id) const { return find_or_empty(guests_, id); }

UserHoldings JobBook::holdings_of(uint32_t uid) const { return find_or_empty(holdings_, uid); }

std::optional<uint64_t> JobBook::envelope_of(const ProcessId& owner) const {
  // Newest (highest id) first: the innermost of nested `mlos run`s.
  auto it = envelopes_.lower_bound({owner.pid + 1, 0});
  while (it != envelopes_.begin()) {
    --it;
    if (it->first.first != owner.pid) break;
    if (it->second == owner.start_time) return it->first.second;
  }
  return std::nullopt;
}

void JobBook::book(const JobRecord& r, int sign) {
  CpuUsage& u = r.parent != 0 ? nested_usage_[r.parent] : usage_;
  if (r.exclusive) {
    u.exclusive = sign > 0 ? u.exclusive | r.cpus : u.exclusive.minus(r.cpus);
  } else {
    for (int c : r.cpus.to_vector()) {
      if ((u.shared_load[c] += sign) <= 0) u.shared_load.erase(c);
    }
  }
  u.gpus.add(r.gpus, r.gpus_exclusive, sign);
  // Returns true when `to` has no dependents left.
  auto link = [&](std::map<uint64_t, std::set<uint64_t>>& index, uint64_t to) {
    if (to == 0) return false;
    if (sign > 0) return index[to].insert(r.id), false;
    auto it = index.find(to);
    if (it == index.end() || !it->second.erase(r.id) || !it->second.empty()) return false;
    index.erase(it);
    return true;
  };
  if (r.parent != 0) {
    uint64_t& carved = carved_memory_[r.parent];
    carved = sign > 0 ? carved + r.memory_bytes : carved - std::min(carved, r.memory_bytes);
  }
  if (link(children_, r.parent)) {
    nested_usage_.erase(r.parent);
    carved_memory_.erase(r.parent);
  }
  link(guests_, r.host);
  if (r.confines) confining_ = sign > 0 ? confining_ | r.cpus : confining_.minus(r.cpus);
  if ((owner_pids_[r.owner.pid] += sign) <= 0) owner_pids_.erase(r.owner.pid);
  if (r.ledger_claim != 0) {
    if (sign > 0) {
      adopted_[r.ledger_claim] = r.id;
    } else {
      adopted_.erase(r.ledger_claim);
    }
  }
  if (r.envelope) {
    if (sign > 0) {
      envelopes_[{r.owner.pid, r.id}] = r.owner.start_time;
    } else {
      envelopes_.erase({r.owner.pid, r.id});
    }
  }
  UserHoldings& h = holdings_[r.uid];
  h.jobs += sign;
  if (r.parent == 0) {
    if (r.exclusive) h.exclusive_cpus += sign * r.cpus.count();
    if (r.gpus_exclusive) h.exclusive_gpus += sign * static_cast<int>(r.gpus.size());
    h.memory_bytes =
        sign > 0 ? h.memory_bytes + r.memory_bytes : h.memory_bytes - std::min(h.memory_bytes, r.memory_bytes);
  }
  if (h.jobs <= 0) holdings_.erase(r.uid);
}

Status JobBook::fits_envelope_memory(const JobRecord& envelope, uint64_t memory_bytes) const {
  if (envelope.memory_bytes == 0 || memory_bytes == 0) return Status::Ok();
  const uint64_t carved = find_or_empty(carved_memory_, envelope.id);
  const uint64_t room = envelope.memory_bytes - std::min(carved, envelope.memory_bytes);
  if (memory_bytes <= room) return Status::Ok();
  return make_error(MLOS_ERR_INSUFFICIENT_MEMORY,
                    "nested in job " + std::to_string(envelope.id) + " (the process's envelope, " +
                        std::to_string(envelope.memory_bytes) + " bytes of memory, " + std::to_string(carved) +
                        " of them given to its nested jobs): asks for " + std::to_string(memory_bytes) + " bytes, " +
                        std::to_string(room) + " are left");
}

std::string JobBook::share_contended_gpus(JobRecord& r) const {
  if (!r.gpus_exclusive) return "";
  std::string taken;
  for (const auto& g : r.gpus) {
    if (usage_.gpus.exclusive.count(g) || usage_.gpus.load(g) > 0) taken += (taken.empty() ? "" : ",") + g;
  }
  if (taken.empty()) return "";
  r.gpus_exclusive = false;
  return "GPUs booked as shared: " + taken + " are held by another job too";
}

std::vector<std::string> JobBook::stand_alone(JobRecord& r, uint64_t gone, const UserQuotas& quotas,
                                              const std::function<bool(const JobRecord&)>& confines) {
  std::vector<std::string> notes;
  book(r, -1);
  r.parent = 0;
  const std::string why = "its envelope (job " + std::to_string(gone) + ") ended";
  if (r.exclusive) {
    bool contended = r.cpus.intersects(usage_.exclusive);
    for (int cpu : r.cpus.to_vector()) contended = contended || usage_.load(cpu) > 0;
    Status quota = check_quota(quotas, r.uid, ask(r.cpus.count(), 0, 0));
    if (contended || !quota) {
      r.exclusive = false;
      notes.push_back(why + (contended ? " and other jobs use its CPUs" : ", and " + quota.error().message) +
                      ": shared from now on, no longer exclusive");
    }
  }
  if (r.memory_bytes > 0) {
    if (Status quota = check_quota(quotas, r.uid, ask(0, r.memory_bytes, 0)); !quota) {
      r.memory_bytes = 0;
      notes.push_back(why + ", and " + quota.error().message + ": its memory is no longer reserved");
    }
  }
  if (std::string note = share_contended_gpus(r); !note.empty()) notes.push_back(note);
  if (r.gpus_exclusive) {
    const int gpus = static_cast<int>(r.gpus.size());
    if (Status quota = check_quota(quotas, r.uid, ask(0, 0, gpus)); !quota) {
      r.gpus_exclusive = false;
      notes.push_back(why + ", and " + quota.error().message + ": its GPUs are booked as shared");
    }
  }
  r.confines = confines(r);
  book(r, +1);
  return notes;
}

}  // namespace mlos::daemon
