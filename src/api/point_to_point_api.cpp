// SPDX-License-Identifier: Apache-2.0
// The C entry points of point-to-point transfers (include/mlos/collectives.h:
// mlos_training_isend, _irecv, _wait_transfer) over each handle's live
// group, posted outside the handle's collective lock (collective_groups.h).
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "api/api_guard.h"
#include "api/collective_groups.h"
#include "api/group_placement.h"
#include "collectives/device_buffer.h"
#include "collectives/point_to_point.h"
#include "mlos/collectives.h"

using mlos::make_error;
using mlos::record_error;
using mlos::api::find_job;
using mlos::api::guarded;

// What the caller holds between posting and waiting.
struct mlos_transfer {
  const void* handle;                // whose tally counts it (it may be released meanwhile)
  std::shared_ptr<mlos::Job> job;    // and whose phase page
  std::unique_ptr<mlos::collectives::PendingTransfer> pending;
  std::chrono::steady_clock::time_point posted;
};

namespace {

int post_transfer(mlos_training_resources_t* resources, void* data, size_t bytes, int peer, uint32_t tag,
                  int world_size, mlos_transfer_t** transfer, bool sending) {
  const char* what = sending ? "isend" : "irecv";
  if (transfer != nullptr) *transfer = nullptr;
  if (transfer == nullptr || (data == nullptr && bytes > 0) || world_size < 1) {
    return record_error(make_error(MLOS_ERR_INVALID_ARGUMENT, std::string(what) +
                                                                  ": NULL transfer, a NULL buffer with bytes > 0, "
                                                                  "or world_size below 1"));
  }
  auto job = find_job(resources);
  if (!job) return mlos_last_error();
  if (bytes > 0 && mlos::collectives::find_device_buffer(data)) {
    return record_error(make_error(MLOS_ERR_UNSUPPORTED, std::string(what) +
                                                             ": the buffer is in GPU memory; transfers take host "
                                                             "memory only"));
  }
  auto group = mlos::CollectiveGroups::instance().group_for_transfer(resources, world_size,
                                                                      mlos::api::group_placement_of(resources));
  if (!group) return record_error(group.error());
  const auto posted = std::chrono::steady_clock::now();
  auto pending = sending ? (*group)->post_send(data, bytes, peer, tag) : (*group)->post_recv(data, bytes, peer, tag);
  if (!pending) return record_error(pending.error());
  *transfer = new mlos_transfer{resources, std::move(job), std::move(*pending), posted};
  return static_cast<int>(MLOS_OK);
}

}  // namespace

extern "C" {

int mlos_training_isend(mlos_training_resources_t* resources, const void* data, size_t bytes, int dst, uint32_t tag,
                        int world_size, mlos_transfer_t** transfer) {
  // Only read: the pending send's buffer type is shared with receives.
  return guarded([&] {
    return post_transfer(resources, const_cast<void*>(data), bytes, dst, tag, world_size, transfer, true);
  });
}

int mlos_training_irecv(mlos_training_resources_t* resources, void* data, size_t bytes, int src, uint32_t tag,
                        int world_size, mlos_transfer_t** transfer) {
  return guarded([&] { return post_transfer(resources, data, bytes, src, tag, world_size, transfer, false); });
}

int mlos_training_wait_transfer(mlos_transfer_t* transfer, int* peer) {
  return guarded([&] {
    if (transfer == nullptr) {
      return record_error(make_error(MLOS_ERR_INVALID_ARGUMENT, "wait_transfer: NULL transfer"));
    }
    std::unique_ptr<mlos_transfer> owned(transfer);  // freed whatever happens
    auto result = owned->pending->wait();
    // The time from posting: a transfer's cost is mostly its wait for the peer.
    const auto ns = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                              std::chrono::steady_clock::now() - owned->posted)
                                              .count());
    mlos::CollectiveGroups::instance().count(owned->handle, *owned->job, result ? owned->pending->bytes() : 0, ns);
    if (!result) return record_error(result.error());
    if (peer != nullptr) *peer = *result;
    return static_cast<int>(MLOS_OK);
  });
}

}  // extern "C"
