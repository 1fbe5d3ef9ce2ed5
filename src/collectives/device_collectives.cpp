// SPDX-License-Identifier: Apache-2.0
#include "collectives/device_collectives.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "collectives/process_group.h"
#include "gpu/uuid_text.h"
#include "mlos/tmm.h"
#include "os/log_sink.h"
#include "tmm/tensor_pool.h"

namespace mlos::collectives {

namespace {

// What each rank tells the others on the first device call.
struct RankOffer {
  unsigned char gpu[16];  // the buffer's GPU
  int32_t gpu_known;      // 0: its GPU could not be named
  int32_t nccl_version;   // 0: no usable NCCL here
};

ncclDataType_t nccl_type(DataType t) {
  switch (t) {
    case DataType::kFloat32: return ncclFloat32;
    case DataType::kFloat64: return ncclFloat64;
    case DataType::kFloat16: return ncclFloat16;
    case DataType::kBFloat16: return ncclBfloat16;
    case DataType::kInt32: return ncclInt32;
    case DataType::kInt64: return ncclInt64;
  }
  return ncclFloat32;
}

ncclRedOp_t nccl_op(mlos_reduce_op_t op) {
  switch (op) {
    case MLOS_REDUCE_SUM: return ncclSum;
    case MLOS_REDUCE_PROD: return ncclProd;
    case MLOS_REDUCE_MIN: return ncclMin;
    case MLOS_REDUCE_MAX: return ncclMax;
    case MLOS_REDUCE_AVG: return ncclAvg;
  }
  return ncclSum;
}

// Why the ranks cannot use NCCL together, or "" when they can.
std::string why_not_nccl(const std::vector<RankOffer>& offers) {
  const int n = static_cast<int>(offers.size());
  if (n < 2) return "one rank: nothing to exchange";
  for (int r = 0; r < n; ++r) {
    if (offers[r].nccl_version == 0) return "rank " + std::to_string(r) + " has no usable NCCL";
    if (offers[r].nccl_version != offers[0].nccl_version) {
      return "ranks 0 and " + std::to_string(r) + " load different NCCL versions";
    }
    if (!offers[r].gpu_known) return "rank " + std::to_string(r) + "'s buffer is on a GPU the driver cannot name";
  }
  for (int a = 0; a < n; ++a) {
    for (int b = a + 1; b < n; ++b) {
      if (std::memcmp(offers[a].gpu, offers[b].gpu, sizeof offers[a].gpu) == 0) {
        return "ranks " + std::to_string(a) + " and " + std::to_string(b) + " share " + gpu::uuid_text(offers[a].gpu) +
               " (NCCL needs one GPU per rank)";
      }
    }
  }
  return "";
}

// The staging pool: the next power of two at least twice the buffer (the
// pool rounds a buffer up to its size class), and at least 64 MiB.
uint64_t staging_capacity(size_t bytes) {
  uint64_t size = 64ULL << 20;
  while (size < 2 * static_cast<uint64_t>(bytes)) size *= 2;
  return size;
}

}  // namespace

DeviceCollectives::DeviceCollectives(ProcessGroup& group, const CudaDriver& cuda,
                                     std::optional<os::MemoryPolicy> staging_binding)
    : group_(group), cuda_(cuda), nccl_(NcclLibrary::get()), staging_binding_(std::move(staging_binding)) {}

DeviceCollectives::~DeviceCollectives() {
  if (comm_ != nullptr) (void)(broken_ ? nccl_.comm_abort(comm_) : nccl_.comm_destroy(comm_));
  drop_staging();
}

Status DeviceCollectives::allreduce(const DeviceBuffer& where, void* data, size_t count, DataType type,
                                    mlos_reduce_op_t op) {
  if (path_.empty()) {
    if (Status s = agree(where); !s) return s;
  }
  if (use_nccl_) return nccl_allreduce(where, data, count, type, op);
  return staged_allreduce(where, data, count, type, op);
}

Status DeviceCollectives::agree(const DeviceBuffer& where) {
  RankOffer mine{};
  std::memcpy(mine.gpu, where.uuid.data(), sizeof mine.gpu);
  mine.gpu_known = where.ordinal >= 0;
  mine.nccl_version = nccl_.usable() ? nccl_.version : 0;
  std::vector<RankOffer> offers(static_cast<size_t>(group_.world_size()));
  if (Status s = group_.allgather(&mine, sizeof mine, offers.data()); !s) return s;
  std::string why = why_not_nccl(offers);
  if (why.empty()) {
    Status started = start_nccl(where);
    if (started) {
      use_nccl_ = true;
      path_ = "NCCL " + std::to_string(nccl_.version / 10000) + "." + std::to_string(nccl_.version / 100 % 100) +
              "." + std::to_string(nccl_.version % 100) + ", one GPU per rank";
    } else if (broken_) {
      return started;
    } else {
      why = started.error().message;
    }
  }
  if (!use_nccl_) {
    path_ = "staged through host memory: " + why;
    if (!nccl_.usable()) path_ += " (this rank: " + nccl_.why() + ")";
  }
  log_message(MLOS_LOG_INFO, "collectives on GPU buffers in group " + group_.prefix() + ", rank " +
                                 std::to_string(group_.rank()) + ": " + path_);
  return Status::Ok();
}

// Rank 0 makes the communicator's id and sends it with the outcome, so a
// refusal there sends every rank down the staged path together; a
// communicator that does not come up within the timeout breaks the group.
Status DeviceCollectives::start_nccl(const DeviceBuffer& where) {
  struct IdMessage {
    int32_t ok;
    ncclUniqueId id;
    char why[200];
  } message{};
  if (group_.rank() == 0) {
    const ncclResult_t r = nccl_.get_unique_id(&message.id);
    message.ok = r == ncclSuccess;
    if (!message.ok) std::snprintf(message.why, sizeof message.why, "rank 0: ncclGetUniqueId: %s", nccl_.describe(r).c_str());
  }
  if (Status s = group_.broadcast(&message, sizeof message, 0); !s) return s;
  if (!message.ok) return make_error(MLOS_ERR_UNSUPPORTED, std::string(message.why, strnlen(message.why, sizeof message.why)));
  CudaDriver::ScopedContext in(cuda_, where.context);
  if (!in.status()) return break_with(MLOS_ERR_SYSTEM, in.status().error().message);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  const ncclResult_t r = nccl_.comm_init_rank_config(&comm_, group_.world_size(), message.id, group_.rank(), &config);
  if (r != ncclSuccess && r != ncclInProgress) {
    comm_ = nullptr;
    return break_with(MLOS_ERR_PEER_LOST, "ncclCommInitRankConfig: " + nccl_.describe(r));
  }
  comm_gpu_ = where.uuid;
  return wait_for_nccl("creating the NCCL communicator", [] { return Result<bool>(true); });
}

template <class Done>
Status DeviceCollectives::wait_for_nccl(const char* what, Done&& done) {
  const auto deadline = std::chrono::steady_clock::now() + group_.timeout();
  auto pause = std::chrono::microseconds(10);
  for (;;) {
    ncclResult_t state = ncclSuccess;
    const ncclResult_t r = nccl_.comm_get_async_error(comm_, &state);
    if (r != ncclSuccess) state = r;
    if (state != ncclSuccess && state != ncclInProgress) {
      return break_with(MLOS_ERR_PEER_LOST, std::string(what) + ": " + nccl_.describe(state));
    }
    if (state == ncclSuccess) {
      Result<bool> finished = done();
      if (!finished) return break_with(MLOS_ERR_SYSTEM, std::string(what) + ": " + finished.error().message);
      if (*finished) return Status::Ok();
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      return break_with(MLOS_ERR_TIMEOUT, std::string(what) + " did not complete within " +
                                              std::to_string(group_.timeout().count()) + " ms (a rank missing or stuck)");
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(1000));
  }
}

Error DeviceCollectives::break_with(int code, const std::string& message) {
  broken_ = true;
  if (comm_ != nullptr) {
    (void)nccl_.comm_abort(comm_);  // frees the rank's side; peers see their own errors or timeouts
    comm_ = nullptr;
  }
  return make_error(code, message + "; the group is broken: every rank must create it again");
}

Status DeviceCollectives::nccl_allreduce(const DeviceBuffer& where, void* data, size_t count, DataType type,
                                         mlos_reduce_op_t op) {
  if (where.uuid != comm_gpu_) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT, "this buffer is on " + gpu::uuid_text(where.uuid.data()) +
                                                     ", and the group's NCCL communicator on " +
                                                     gpu::uuid_text(comm_gpu_.data()) + ": one GPU per rank and group");
  }
  if (count == 0) return group_.barrier();
  CudaDriver::ScopedContext in(cuda_, where.context);
  if (!in.status()) return in.status();
  // The legacy default stream: ordered after the caller's work on it and
  // on every blocking stream, as a synchronous cuMemcpy would be.
  const ncclResult_t r = nccl_.all_reduce(data, data, count, nccl_type(type), nccl_op(op), comm_, nullptr);
  if (r != ncclSuccess && r != ncclInProgress) return break_with(MLOS_ERR_PEER_LOST, "ncclAllReduce: " + nccl_.describe(r));
  CudaDriver::Marker marker(cuda_);
  if (Status s = marker.record(); !s) return break_with(MLOS_ERR_SYSTEM, s.error().message);
  return wait_for_nccl("ncclAllReduce", [&] { return marker.done(); });
}

Status DeviceCollectives::staged_allreduce(const DeviceBuffer& where, void* data, size_t count, DataType type,
                                           mlos_reduce_op_t op) {
  if (group_.world_size() == 1 || count == 0) return group_.barrier();  // nothing to combine
  const size_t bytes = count * element_size(type);
  if (Status s = ensure_staging(bytes); !s) return s;
  auto buffer = staging_->acquire(bytes);
  if (!buffer) return buffer.error();
  Status s = [&]() -> Status {
    CudaDriver::ScopedContext in(cuda_, where.context);
    if (!in.status()) return in.status();
    if (Status copied = cuda_.copy_to_host(buffer->data, data, bytes); !copied) return copied;
    if (Status reduced = group_.allreduce(buffer->data, count, type, op); !reduced) return reduced;
    return cuda_.copy_to_device(data, buffer->data, bytes);
  }();
  (void)staging_->release(buffer->data);
  return s;
}

Status DeviceCollectives::ensure_staging(size_t bytes) {
  if (staging_ && 2 * static_cast<uint64_t>(bytes) <= staging_->capacity()) return Status::Ok();
  drop_staging();
  tmm::PoolConfig config;
  config.capacity = staging_capacity(bytes);
  config.binding = staging_binding_;
  config.name = "mlos-device-staging";
  auto pool = tmm::TensorPool::create(config);
  if (!pool) return pool.error();
  staging_ = std::move(*pool);
  // Registered through the driver the buffers come from (not the CUDA
  // runtime TMM's MLOS_TMM_CUDA_PINNED uses): the process has it loaded.
  Status pinned = cuda_.register_host(staging_->base(), staging_->capacity());
  staging_pinned_ = static_cast<bool>(pinned);
  if (!pinned) {
    log_message(MLOS_LOG_WARN, "group " + group_.prefix() + ": staging memory for GPU buffers is not pinned (" +
                                   pinned.error().message + "); copies go through pageable memory");
  }
  return Status::Ok();
}

void DeviceCollectives::drop_staging() {
  if (staging_ && staging_pinned_) cuda_.unregister_host(staging_->base());
  staging_.reset();
  staging_pinned_ = false;
}

Status ProcessGroup::allreduce_device(const DeviceBuffer& where, void* data, size_t count, DataType type,
                                      mlos_reduce_op_t op) {
  if (broken()) return broken_error("allreduce");
  if (!device_) {
    std::optional<os::MemoryPolicy> binding;
    if (placement_.memory_policy.mode != 0) binding = placement_.memory_policy;
    const CudaDriver* cuda = CudaDriver::loaded();  // it named the buffer's device
    if (cuda == nullptr) return make_error(MLOS_ERR_INVALID_ARGUMENT, "allreduce: not a GPU buffer");
    device_ = std::make_shared<DeviceCollectives>(*this, *cuda, binding);
  }
  Status s = device_->allreduce(where, data, count, type, op);
  if (!s && device_->broken()) mark_broken(s.error().message);
  return s;
}

}  // namespace mlos::collectives
