// The collective group of each resources handle, created (rendezvous) by
// its first barrier or all-reduce and dropped at release. Operations on one
// handle's group are serialised (Gloo's tags assume one operation at a time
// in program order). A group that broke is replaced at the next call, under
// the next generation of the store prefix, so all ranks recreate it the
// same way and stale keys of the broken one are never read.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>

#include "collectives/process_group.h"
#include "core/status.h"

namespace mlos {

class CollectiveGroups {
 public:
  static CollectiveGroups& instance();

  // Runs `op` on the handle's group for (rank, world_size) (-1: RANK and
  // WORLD_SIZE from the environment; a live group's own when it has one).
  // INVALID_ARGUMENT when they differ from the live group's.
  Status with_group(const void* handle, int rank, int world_size,
                    const std::function<Status(collectives::ProcessGroup&)>& op);
  void drop(const void* handle);

 private:
  struct Slot {
    std::mutex op_mu;  // one operation at a time, in program order
    std::unique_ptr<collectives::ProcessGroup> group;
    int generation = 0;
  };
  std::mutex mu_;
  std::map<const void*, std::shared_ptr<Slot>> slots_;
};

}  // namespace mlos
