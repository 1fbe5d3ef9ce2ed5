/* SPDX-License-Identifier: Apache-2.0 */
// How a live claim of the embedded ledger becomes a job of mlosd's book
// (JobManager::follow_ledger). Why adopt rather than refuse: the claim's
// process already runs on its CPUs (granted while mlosd was down, or told
// MLOS_MODE=embedded). Refusing would not move it; it would only make mlosd
// blind to it and grant its "exclusive" CPUs a second time. Adopting books
// its CPUs, shows it in `mlos status`, and ends with it.
//
// Pure: reads the book, changes nothing.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/claim_ledger.h"
#include "core/cpu_set.h"
#include "daemon/job_book.h"
#include "daemon/job_registry.h"

namespace mlos::daemon {

struct ClaimAdoption {
  JobRecord record;
  std::vector<std::string> notes;  // how it was booked, for `mlos status`
};

// Claim `c` as job `id`. `allowed`: the CPUs mlosd manages (a claim outside
// them is booked as it is, with a note). `enclosing`: the job the claim's
// owner runs in (nullptr: none); the claim nests in it when its owner is
// not that job's owner, or that job is an envelope, and its GPUs are that
// job's. CPUs another job holds exclusively are booked shared, GPUs
// another job holds too are booked shared. `confines`: whether the record
// may keep other processes off its CPUs.
ClaimAdoption adoption_of(const Claim& c, uint64_t id, const CpuSet& allowed, const JobRecord* enclosing,
                          const JobBook& book, const std::function<bool(const JobRecord&)>& confines);

}  // namespace mlos::daemon
