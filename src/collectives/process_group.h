/* SPDX-License-Identifier: Apache-2.0 */
// A group of ranks doing collectives, on Gloo: rendezvous through a store
// (FileStore or RedisStore, keys under a prefix), a full TCP mesh, and
// Gloo's own algorithms (ring all-reduce, barrier). Nothing here implements
// a collective algorithm or a transport.
//
// Failure contract: every operation ends within the group's timeout. A
// peer that died or never arrived makes the operation fail (TIMEOUT, or
// PEER_LOST when the connection broke) instead of hanging; the group is then
// broken for good (Gloo's state after an error is undefined) and every rank
// must create a new one (the next generation of the prefix).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "collectives/device_buffer.h"
#include "collectives/group_config.h"
#include "core/cpu_set.h"
#include "core/status.h"
#include "os/kernel.h"
#include "mlos/training.h"

namespace gloo {
class Context;
}

namespace mlos::collectives {

// The values are mlos_dtype_t's.
enum class DataType { kFloat32 = 0, kFloat64 = 1, kFloat16 = 2, kBFloat16 = 3, kInt32 = 4, kInt64 = 5 };
size_t element_size(DataType t);

// Where the group's own threads and memory go: the job's CPUs and memory
// policy. Empty cpus: wherever the calling thread may run.
struct GroupPlacement {
  CpuSet cpus;
  os::MemoryPolicy memory_policy;
};

class DeviceCollectives;
class PendingTransfer;
struct RankClaim;

// Shared ownership (CollectiveGroups holds it in a shared_ptr): a posted
// point-to-point transfer keeps its group alive until it is waited for.
class ProcessGroup : public std::enable_shared_from_this<ProcessGroup> {
 public:
  // Rendezvous and full-mesh connection; fails within config.timeout. Runs
  // on a short-lived thread confined to `placement`, so Gloo's event-loop
  // thread (created with the device) inherits the job's CPUs and memory
  // policy instead of the caller's, whatever thread calls.
  static Result<std::unique_ptr<ProcessGroup>> connect(const GroupConfig& config,
                                                       const GroupPlacement& placement = {});
  ~ProcessGroup();

  Status barrier();
  // In place over `count` elements (count 0: synchronises, touches nothing).
  Status allreduce(void* data, size_t count, DataType type, mlos_reduce_op_t op);
  // The same over a buffer in GPU memory (`where`): through NCCL or staged
  // through host memory, as device_collectives.h decides with the peers.
  // Defined there (device_buffer_without_cuda.cpp: UNSUPPORTED).
  Status allreduce_device(const DeviceBuffer& where, void* data, size_t count, DataType type, mlos_reduce_op_t op);
  // Every rank's `bytes` bytes at `mine`, in rank order, into `all`
  // (world_size * bytes; `mine` may lie in `all`). bytes 0: a barrier.
  Status allgather(const void* mine, size_t bytes, void* all);
  // Rank `root`'s `bytes` bytes at `data`, to every rank's `data`
  // (0 <= root < world_size, checked by the caller). bytes 0: a barrier.
  Status broadcast(void* data, size_t bytes, int root);
  // Every rank's `bytes` at `mine`, in rank order, into rank `root`'s
  // `all` (world_size * bytes; unused elsewhere). bytes 0: a barrier.
  Status gather(const void* mine, size_t bytes, void* all, int root);
  // Chunk i of rank `root`'s `all` (world_size * bytes; unused elsewhere)
  // into rank i's `mine` (bytes). bytes 0: a barrier.
  Status scatter(const void* all, size_t bytes, void* mine, int root);
  // Chunk i of `in` (send_bytes[i] bytes) to rank i; from rank r, its
  // chunk for this rank into `out` (recv_bytes[r] bytes), chunks back to
  // back in rank order. Both vectors hold world_size counts (checked by
  // the caller); all counts 0: a barrier.
  Status alltoall(const void* in, const std::vector<size_t>& send_bytes, void* out,
                  const std::vector<size_t>& recv_bytes);

  // Point-to-point (point_to_point.cpp): posts a send of `bytes` at `data`
  // to rank `peer`, or a receive into `data` from rank `peer` (-1: from
  // whichever rank sends first), matched with the peer's post of the same
  // `tag`, in posting order per (peer, tag). Posting does not wait; the
  // buffer must stay valid until PendingTransfer::wait() returns. Unlike
  // the collectives these may be called from any thread while another
  // operation runs (they use their own slots, never the collectives').
  Result<std::unique_ptr<PendingTransfer>> post_send(const void* data, size_t bytes, int peer, uint32_t tag);
  Result<std::unique_ptr<PendingTransfer>> post_recv(void* data, size_t bytes, int peer, uint32_t tag);

  int rank() const { return config_.rank; }
  int world_size() const { return config_.world_size; }
  // Any thread: a point-to-point wait may break the group while a
  // collective runs on another thread.
  bool broken() const;
  void mark_broken(const std::string& reason);
  std::chrono::milliseconds timeout() const { return config_.timeout; }
  const std::string& prefix() const { return config_.prefix; }

 private:
  ProcessGroup(GroupConfig config, std::shared_ptr<gloo::Context> context);
  // connect() on the calling thread.
  static Result<std::unique_ptr<ProcessGroup>> connect_here(const GroupConfig& config);
  // Runs a Gloo call, turning its exceptions into errors and breaking the
  // group on any of them.
  template <class F>
  Status guarded(const char* what, F&& f);
  Error broken_error(const char* what) const;
  // A transfer over a new unbound buffer at `data`, posted by post_on(buffer).
  template <class Post>
  Result<std::unique_ptr<PendingTransfer>> post(bool sending, void* data, size_t bytes, Post&& post_on);

  GroupConfig config_;
  std::shared_ptr<gloo::Context> context_;
  GroupPlacement placement_;  // connect()'s: the device path binds its staging memory like it
  uint32_t next_tag_ = 1;
  mutable std::mutex broken_mu_;
  std::string broken_reason_;  // guarded by broken_mu_; empty while the group works
  std::unique_ptr<RankClaim> claim_;  // this rank's number, held while the group lives
  // Made on the first device buffer. A shared_ptr: its type is complete
  // only where the device path is built.
  std::shared_ptr<DeviceCollectives> device_;
};

}  // namespace mlos::collectives
