/* SPDX-License-Identifier: Apache-2.0 */
// The collective group of each resources handle, created (rendezvous) by
// its first barrier or all-reduce and dropped at release. Operations on one
// handle's group are serialised (Gloo's tags assume one operation at a time
// in program order). Point-to-point transfers take the handle's lock only
// to create the group, and are waited for outside it: Gloo's send waits
// for the peer's receive, so a send queued behind a collective could wait
// for a peer that waits for it. A group that broke is replaced at the next
// call, under the next generation of the store prefix, so all ranks
// recreate it the same way and stale keys of the broken one are never read.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>

#include "collectives/process_group.h"
#include "core/status.h"
#include "engine/job.h"

namespace mlos {

class CollectiveGroups {
 public:
  static CollectiveGroups& instance();

  struct Tally {
    uint64_t nanoseconds = 0;  // wall time inside collective calls
    uint64_t calls = 0;
    uint64_t bytes = 0;        // bytes reduced in place
  };

  // Runs `op` on the handle's group for (rank, world_size) (-1: RANK and
  // WORLD_SIZE from the environment; a live group's own when it has one),
  // counting the call, its time and `bytes` (0 when it failed) in the
  // handle's tally and in `job`'s activity (Job::count_collective; `job`
  // is the handle's, held by the caller). A new group's threads go where
  // `placement()` says. INVALID_ARGUMENT when rank or world_size differ
  // from the live group's.
  Status with_group(const void* handle, const Job& job, int rank, int world_size, uint64_t bytes,
                    const std::function<collectives::GroupPlacement()>& placement,
                    const std::function<Status(collectives::ProcessGroup&)>& op);
  // The handle's live group for point-to-point posts (post_send and
  // post_recv may run while a collective holds the handle): created by
  // rendezvous, as with_group would, when there is none or it broke.
  Result<std::shared_ptr<collectives::ProcessGroup>> group_for_transfer(
      const void* handle, int world_size, const std::function<collectives::GroupPlacement()>& placement);
  // Counts a finished point-to-point transfer as with_group counts an
  // operation (a handle released meanwhile counts only in `job`).
  void count(const void* handle, const Job& job, uint64_t bytes, uint64_t ns);
  Tally tally(const void* handle);
  // The store the handle's next group meets its peers in; nullptr: from
  // MLOS_STORE. Replacing one destroys it when no group creation uses it.
  void set_store(const void* handle, std::shared_ptr<gloo::rendezvous::Store> store);
  // Settings of the handle's next group (validated by the caller).
  void set_overrides(const void* handle, collectives::GroupOverrides overrides);
  void drop(const void* handle);

 private:
  struct Slot {
    std::mutex op_mu;  // one operation at a time, in program order
    // Replaced under op_mu and group_mu; read under either.
    std::shared_ptr<collectives::ProcessGroup> group;
    std::mutex group_mu;
    int generation = 0;
    std::shared_ptr<gloo::rendezvous::Store> store;  // set_store's
    collectives::GroupOverrides overrides;
    // Written under op_mu, read by tally() without it (a query must not
    // wait out a collective in flight).
    std::atomic<uint64_t> nanoseconds{0}, calls{0}, bytes{0};
  };
  Status run_on_slot(Slot& slot, int rank, int world_size,
                     const std::function<collectives::GroupPlacement()>& placement,
                     const std::function<Status(collectives::ProcessGroup&)>& op);
  std::shared_ptr<Slot> slot_of(const void* handle);  // created if missing
  static void set_group(Slot& slot, std::shared_ptr<collectives::ProcessGroup> group);  // under op_mu
  static void tally_into(Slot& slot, const Job& job, uint64_t bytes, uint64_t ns);

  std::mutex mu_;
  std::map<const void*, std::shared_ptr<Slot>> slots_;
};

}  // namespace mlos
