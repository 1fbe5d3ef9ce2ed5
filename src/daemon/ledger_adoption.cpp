// SPDX-License-Identifier: Apache-2.0
#include "daemon/ledger_adoption.h"

#include <algorithm>

namespace mlos::daemon {

namespace {

JobRecord record_of(const Claim& c, uint64_t id, const CpuSet& allowed) {
  JobRecord r;
  r.id = id;
  r.owner = c.owner;
  r.uid = c.uid;
  r.cpus = c.cpus & allowed;
  if (r.cpus.empty()) r.cpus = c.cpus;  // outside mlosd's CPUs: booked as it is, noted
  r.mems.set(c.numa_node);
  r.exclusive = c.exclusive;
  r.envelope = c.envelope;
  r.memory_bytes = c.memory_bytes;
  r.label = c.label.empty() ? "pid-" + std::to_string(c.owner.pid) : c.label;
  r.created_unix = c.created_unix;
  r.ledger_claim = c.id;
  r.gpus = c.gpus;
  r.gpus_exclusive = c.gpus_exclusive;
  return r;
}

}  // namespace

ClaimAdoption adoption_of(const Claim& c, uint64_t id, const CpuSet& allowed, const JobRecord* enclosing,
                          const JobBook& book, const std::function<bool(const JobRecord&)>& confines) {
  ClaimAdoption out{record_of(c, id, allowed), {}};
  JobRecord& r = out.record;
  std::vector<std::string>& notes = out.notes;
  if (enclosing != nullptr && (enclosing->owner != c.owner || enclosing->envelope)) r.parent = enclosing->id;
  if (r.parent != 0) {
    // Its GPUs must be its envelope's to nest (a library from before
    // envelopes bounded GPUs may have claimed others): else the node's.
    const auto& outer = enclosing->gpus;
    for (const auto& g : r.gpus) {
      if (std::find(outer.begin(), outer.end(), g) == outer.end()) {
        notes.push_back("not nested in job " + std::to_string(r.parent) + ": its GPU " + g +
                        " is not that job's, so it is booked as the node's");
        r.parent = 0;
        break;
      }
    }
  }
  const CpuUsage& u = r.parent != 0 ? book.nested_usage(r.parent) : book.node_usage();
  notes.push_back("adopted from the embedded ledger (claim " + std::to_string(c.id) +
                  "): booked by mlosd, not in a cgroup (its process placed itself)");
  if (r.parent != 0) notes.push_back("nested in job " + std::to_string(r.parent));
  if (r.exclusive && r.cpus.intersects(u.exclusive)) {
    // Two exclusive claims on one CPU cannot both be booked as such
    // (releasing one would free the other's CPU).
    r.exclusive = false;
    notes.push_back("booked as shared: CPUs " + (r.cpus & u.exclusive).to_list() +
                    " were already granted exclusively to another job");
  }
  if (r.parent == 0) {
    if (std::string note = book.share_contended_gpus(r); !note.empty()) notes.push_back(note);
  }
  r.confines = confines(r);
  if (!(c.cpus & allowed).count()) notes.push_back("its CPUs " + c.cpus.to_list() + " are outside mlosd's");
  return out;
}

}  // namespace mlos::daemon
