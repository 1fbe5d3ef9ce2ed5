// Who grants CPU claims: the embedded ledger today, mlosd later. A Job only
// talks to this interface, so the two engines differ in one place.
#pragma once

#include <cstdint>
#include <string>

#include "core/placement.h"
#include "core/status.h"
#include "core/topology.h"

namespace mlos {

struct ClaimRequest {
  PlacementRequest placement;
  std::string label;
  // Made by `mlos run` for a process and its descendants (see Claim::envelope).
  bool envelope = false;
};

struct Grant {
  uint64_t claim_id = 0;  // 0 when the claim could not be recorded
  Placement placement;
  // Set when the grant is weaker than asked (e.g. the ledger was unusable,
  // so other processes cannot see this shared claim); says why.
  std::string ledger_note;
};

class ClaimBroker {
 public:
  virtual ~ClaimBroker() = default;
  // Plans and records a claim atomically with respect to other processes.
  virtual Result<Grant> acquire(const ClaimRequest& request) = 0;
  // Drops a claim of the calling process; unknown ids and other processes'
  // claims are left alone and are not an error (the claim may have been
  // reclaimed already).
  virtual Status release(uint64_t claim_id) = 0;
  virtual const Topology& topology() const = 0;
  // CPUs the process may use (outer bound of every placement).
  virtual CpuSet allowed_cpus() const = 0;
};

}  // namespace mlos
