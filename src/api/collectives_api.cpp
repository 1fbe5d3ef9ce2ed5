// SPDX-License-Identifier: Apache-2.0
// The C entry points of collectives (include/mlos/training.h's barrier and
// all-reduce, include/mlos/collectives.h's caller store) over each handle's
// CollectiveGroups slot.
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "api/api_guard.h"
#include "api/collective_groups.h"
#include "api/group_placement.h"
#include "api/versioned_struct.h"
#include "collectives/callback_store.h"
#include "mlos/collectives.h"
#include "mlos/training.h"
#include "os/kernel.h"

using mlos::make_error;
using mlos::record_error;
using mlos::api::find_job;
using mlos::api::group_placement_of;
using mlos::api::guarded;
using mlos::api::raw_enum;

extern "C" {

int mlos_training_barrier(mlos_training_resources_t* resources, int rank, int world_size) {
  return guarded([&] {
    auto job = find_job(resources);
    if (!job) return mlos_last_error();
    if (world_size < 1 || rank < 0 || rank >= world_size) {
      return record_error(make_error(MLOS_ERR_INVALID_ARGUMENT, "need 0 <= rank < world_size, got rank " +
                                                                    std::to_string(rank) + ", world_size " +
                                                                    std::to_string(world_size)));
    }
    return mlos::to_code(mlos::CollectiveGroups::instance().with_group(
        resources, *job, rank, world_size, 0, group_placement_of(resources),
        [](mlos::collectives::ProcessGroup& g) { return g.barrier(); }));
  });
}

namespace {

int allreduce_typed(mlos_training_resources_t* resources, void* data, size_t count, int raw_dtype, int raw_op) {
  auto job = find_job(resources);
  if (!job) return mlos_last_error();
  if ((data == nullptr && count > 0) || raw_op < MLOS_REDUCE_SUM || raw_op > MLOS_REDUCE_AVG) {
    return record_error(make_error(MLOS_ERR_INVALID_ARGUMENT, "data is NULL with count > 0, or unknown op"));
  }
  if (raw_dtype < MLOS_DTYPE_FLOAT32 || raw_dtype > MLOS_DTYPE_INT64) {
    return record_error(make_error(MLOS_ERR_INVALID_ARGUMENT, "unknown dtype " + std::to_string(raw_dtype)));
  }
  const auto type = static_cast<mlos::collectives::DataType>(raw_dtype);
  const auto op = static_cast<mlos_reduce_op_t>(raw_op);
  std::function<mlos::Status(mlos::collectives::ProcessGroup&)> reduce = [&](mlos::collectives::ProcessGroup& g) {
    return g.allreduce(data, count, type, op);
  };
  // GPU memory goes to the device path (NCCL, or staged through the host).
  if (auto where = count > 0 ? mlos::collectives::find_device_buffer(data) : std::nullopt) {
    reduce = [&, where = *where](mlos::collectives::ProcessGroup& g) {
      return g.allreduce_device(where, data, count, type, op);
    };
  }
  return mlos::to_code(mlos::CollectiveGroups::instance().with_group(
      resources, *job, -1, -1, count * mlos::collectives::element_size(type), group_placement_of(resources), reduce));
}

// A failed check of a broadcast or all-gather's arguments, recorded; 0
// when they may go to the group.
int refuse_moved_bytes(const char* what, std::initializer_list<const void*> buffers, size_t bytes, int world_size) {
  if (world_size < 1) {
    return record_error(make_error(MLOS_ERR_INVALID_ARGUMENT, std::string(what) + ": world_size must be at least 1"));
  }
  if (bytes == 0) return 0;
  for (const void* b : buffers) {
    if (b == nullptr) {
      return record_error(make_error(MLOS_ERR_INVALID_ARGUMENT, std::string(what) + ": a NULL buffer with bytes > 0"));
    }
    if (mlos::collectives::find_device_buffer(b)) {
      return record_error(make_error(MLOS_ERR_UNSUPPORTED, std::string(what) +
                                                               ": the buffer is in GPU memory; only all-reduce "
                                                               "takes GPU buffers"));
    }
  }
  return 0;
}

}  // namespace

int mlos_training_broadcast(mlos_training_resources_t* resources, void* data, size_t bytes, int root,
                            int world_size) {
  return guarded([&] {
    auto job = find_job(resources);
    if (!job) return mlos_last_error();
    if (int refused = refuse_moved_bytes("broadcast", {data}, bytes, world_size)) return refused;
    if (root < 0 || root >= world_size) {
      return record_error(make_error(MLOS_ERR_INVALID_ARGUMENT, "broadcast: need 0 <= root < world_size, got root " +
                                                                    std::to_string(root)));
    }
    return mlos::to_code(mlos::CollectiveGroups::instance().with_group(
        resources, *job, -1, world_size, bytes, group_placement_of(resources),
        [&](mlos::collectives::ProcessGroup& g) { return g.broadcast(data, bytes, root); }));
  });
}

int mlos_training_allgather(mlos_training_resources_t* resources, const void* input, void* output, size_t bytes,
                            int world_size) {
  return guarded([&] {
    auto job = find_job(resources);
    if (!job) return mlos_last_error();
    if (int refused = refuse_moved_bytes("allgather", {input, output}, bytes, world_size)) return refused;
    return mlos::to_code(mlos::CollectiveGroups::instance().with_group(
        resources, *job, -1, world_size, bytes * static_cast<uint64_t>(world_size), group_placement_of(resources),
        [&](mlos::collectives::ProcessGroup& g) { return g.allgather(input, bytes, output); }));
  });
}

namespace {

// gather's and scatter's shared checks; `whole` (world_size * bytes) is
// only the root's, so it is checked where the group knows this rank.
int rooted(mlos_training_resources_t* resources, const char* what, const void* part, const void* whole,
           size_t bytes, int root, int world_size,
           const std::function<mlos::Status(mlos::collectives::ProcessGroup&)>& move) {
  auto job = find_job(resources);
  if (!job) return mlos_last_error();
  if (int refused = refuse_moved_bytes(what, {part}, bytes, world_size)) return refused;
  if (root < 0 || root >= world_size) {
    return record_error(make_error(MLOS_ERR_INVALID_ARGUMENT, std::string(what) + ": need 0 <= root < world_size, got root " +
                                                                  std::to_string(root)));
  }
  const size_t whole_bytes = bytes * static_cast<size_t>(world_size);
  return mlos::to_code(mlos::CollectiveGroups::instance().with_group(
      resources, *job, -1, world_size, whole_bytes, group_placement_of(resources),
      [&](mlos::collectives::ProcessGroup& g) -> mlos::Status {
        if (g.rank() == root && bytes > 0) {
          if (int refused = refuse_moved_bytes(what, {whole}, whole_bytes, world_size)) {
            return mlos::make_error(refused, mlos_last_error_message());
          }
          const auto* a = static_cast<const char*>(part);
          const auto* b = static_cast<const char*>(whole);
          if (a < b + whole_bytes && b < a + bytes) {
            return mlos::make_error(MLOS_ERR_INVALID_ARGUMENT, std::string(what) + ": input and output overlap");
          }
        }
        return move(g);
      }));
}

}  // namespace

int mlos_training_gather(mlos_training_resources_t* resources, const void* input, void* output, size_t bytes,
                         int root, int world_size) {
  return guarded([&] {
    return rooted(resources, "gather", input, output, bytes, root, world_size,
                  [&](mlos::collectives::ProcessGroup& g) { return g.gather(input, bytes, output, root); });
  });
}

int mlos_training_scatter(mlos_training_resources_t* resources, const void* input, void* output, size_t bytes,
                          int root, int world_size) {
  return guarded([&] {
    return rooted(resources, "scatter", output, input, bytes, root, world_size,
                  [&](mlos::collectives::ProcessGroup& g) { return g.scatter(input, bytes, output, root); });
  });
}

int mlos_training_alltoall(mlos_training_resources_t* resources, const void* input, const size_t* send_bytes,
                           void* output, const size_t* recv_bytes, int world_size) {
  return guarded([&] {
    auto job = find_job(resources);
    if (!job) return mlos_last_error();
    if (world_size < 1 || send_bytes == nullptr || recv_bytes == nullptr) {
      return record_error(make_error(MLOS_ERR_INVALID_ARGUMENT,
                                     "alltoall: world_size must be at least 1 and both count arrays given"));
    }
    const std::vector<size_t> sends(send_bytes, send_bytes + world_size);
    const std::vector<size_t> recvs(recv_bytes, recv_bytes + world_size);
    const size_t sent = std::accumulate(sends.begin(), sends.end(), size_t{0});
    const size_t received = std::accumulate(recvs.begin(), recvs.end(), size_t{0});
    if (int refused = refuse_moved_bytes("alltoall", {input}, sent, world_size)) return refused;
    if (int refused = refuse_moved_bytes("alltoall", {output}, received, world_size)) return refused;
    const auto* in = static_cast<const char*>(input);
    const auto* out = static_cast<const char*>(output);
    if (sent > 0 && received > 0 && in < out + received && out < in + sent) {
      return record_error(make_error(MLOS_ERR_INVALID_ARGUMENT, "alltoall: input and output overlap"));
    }
    return mlos::to_code(mlos::CollectiveGroups::instance().with_group(
        resources, *job, -1, world_size, sent, group_placement_of(resources),
        [&](mlos::collectives::ProcessGroup& g) { return g.alltoall(input, sends, output, recvs); }));
  });
}

int mlos_training_allreduce(mlos_training_resources_t* resources, void* data, size_t count, mlos_reduce_op_t op) {
  // The published signature is float32.
  return guarded([&] { return allreduce_typed(resources, data, count, MLOS_DTYPE_FLOAT32, raw_enum(op)); });
}

int mlos_training_allreduce_typed(mlos_training_resources_t* resources, void* data, size_t count, mlos_dtype_t dtype,
                                  mlos_reduce_op_t op) {
  return guarded([&] { return allreduce_typed(resources, data, count, raw_enum(dtype), raw_enum(op)); });
}

int mlos_training_set_collective_store(mlos_training_resources_t* resources, const mlos_collective_store_t* store) {
  return guarded([&] {
    if (!find_job(resources)) return mlos_last_error();
    if (store == nullptr) {
      mlos::CollectiveGroups::instance().set_store(resources, nullptr);
      return static_cast<int>(MLOS_OK);
    }
    // Only the fields the caller's struct has; the later ones stay NULL.
    auto given = mlos::api::read_versioned(store);
    if (!given) return record_error(given.error());
    const mlos_collective_store_t callbacks = *given;
    if (!callbacks.set || !callbacks.get || !callbacks.wait) {
      return record_error(make_error(MLOS_ERR_INVALID_ARGUMENT, "the store needs set, get and wait callbacks"));
    }
    mlos::CollectiveGroups::instance().set_store(resources,
                                                 std::make_shared<mlos::collectives::CallbackStore>(callbacks));
    return static_cast<int>(MLOS_OK);
  });
}

int mlos_training_set_collective_options(mlos_training_resources_t* resources,
                                         const mlos_collective_options_t* options) {
  return guarded([&] {
    if (!find_job(resources)) return mlos_last_error();
    mlos::collectives::GroupOverrides o;
    if (options != nullptr) {
      auto given = mlos::api::read_versioned(options);
      if (!given) return record_error(given.error());
      options = &*given;
      o.timeout = std::chrono::milliseconds(options->timeout_ms);
      if (options->group != nullptr) {
        o.prefix = options->group;
        if (o.prefix.empty()) return record_error(make_error(MLOS_ERR_INVALID_ARGUMENT, "group is empty"));
      }
      if (mlos::Status s = mlos::collectives::validate(o); !s) return record_error(s.error());
    }
    mlos::CollectiveGroups::instance().set_overrides(resources, std::move(o));
    return static_cast<int>(MLOS_OK);
  });
}

}  // extern "C"
