// SPDX-License-Identifier: Apache-2.0
// A stand-in for NCCL (libnccl.so.2) on machines without GPUs, loaded by
// libmlos through MLOS_NCCL_LIBRARY: the calls of src/collectives/
// nccl_library.h under their real names and signatures from nccl.h.
// Device buffers are the fake CUDA driver's allocations, which are host
// pages (fake_cuda.cpp), so a reduction here is a reduction of the bytes.
//
// A communicator's ranks meet in a POSIX shared-memory segment named by
// the unique id: each copies its buffer into its slot, waits for all,
// reduces every slot into its result, and waits again. Work completes
// before a call returns (the fake driver's events are always complete).
//
// Environment:
//   MLOS_FAKE_NCCL_LOG      a file that gets one line per call:
//                           "init RANK NRANKS", "allreduce RANK COUNT",
//                           "destroy RANK", "abort RANK"
//   MLOS_FAKE_NCCL_VERSION  what ncclGetVersion says (default 22803)
//   MLOS_FAKE_NCCL_FAIL     "unique_id": ncclGetUniqueId fails;
//                           "allreduce": an all-reduce reports a remote
//                           error through ncclCommGetAsyncError;
//                           "hang": an all-reduce never completes
// Test code only.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <nccl.h>

#include "collectives/half_float.h"

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

struct ncclComm {
  int rank = 0;
  int nranks = 0;
  void* segment = nullptr;
  size_t segment_bytes = 0;
  ncclResult_t async = ncclSuccess;
};

namespace {

constexpr size_t kSlotBytes = 16 << 20;  // the largest all-reduce the fake takes
constexpr size_t kHeaderBytes = 4096;

struct Header {
  std::atomic<uint32_t> arrived;
  std::atomic<uint32_t> generation;
};

void log_line(const std::string& line) {
  const char* path = std::getenv("MLOS_FAKE_NCCL_LOG");
  if (path == nullptr) return;
  const int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return;
  const std::string text = line + "\n";
  (void)!write(fd, text.data(), text.size());
  close(fd);
}

bool failing(const char* what) {
  const char* fail = std::getenv("MLOS_FAKE_NCCL_FAIL");
  return fail != nullptr && std::strcmp(fail, what) == 0;
}

Header* header(ncclComm* c) { return static_cast<Header*>(c->segment); }
char* slot(ncclComm* c, int rank) { return static_cast<char*>(c->segment) + kHeaderBytes + rank * kSlotBytes; }

// Every rank of the communicator arrives before any leaves; false after a
// minute without them (a fake has no better way to end).
bool barrier(ncclComm* c) {
  Header* h = header(c);
  const uint32_t generation = h->generation.load();
  if (h->arrived.fetch_add(1) + 1 == static_cast<uint32_t>(c->nranks)) {
    h->arrived.store(0);
    h->generation.fetch_add(1);
    return true;
  }
  for (int waited_us = 0; h->generation.load() == generation; waited_us += 50) {
    if (waited_us > 60 * 1000 * 1000) return false;
    usleep(50);
  }
  return true;
}

template <class T>
T combine(T a, T b, ncclRedOp_t op) {
  switch (op) {
    case ncclProd: return a * b;
    case ncclMin: return b < a ? b : a;
    case ncclMax: return a < b ? b : a;
    default: return a + b;  // ncclSum, and ncclAvg before its division
  }
}

template <class T>
void reduce(ncclComm* c, void* out, size_t count, ncclRedOp_t op) {
  std::vector<T> acc(count);
  std::memcpy(acc.data(), slot(c, 0), count * sizeof(T));
  for (int r = 1; r < c->nranks; ++r) {
    const T* theirs = reinterpret_cast<const T*>(slot(c, r));
    for (size_t i = 0; i < count; ++i) acc[i] = combine(acc[i], theirs[i], op);
  }
  if (op == ncclAvg) {
    for (T& v : acc) v = static_cast<T>(v / static_cast<T>(c->nranks));
  }
  std::memcpy(out, acc.data(), count * sizeof(T));
}

template <float (*Widen)(uint16_t), uint16_t (*Narrow)(float)>
void reduce_narrow(ncclComm* c, void* out, size_t count, ncclRedOp_t op) {
  std::vector<float> acc(count);
  for (int r = 0; r < c->nranks; ++r) {
    const auto* theirs = reinterpret_cast<const uint16_t*>(slot(c, r));
    for (size_t i = 0; i < count; ++i) acc[i] = r == 0 ? Widen(theirs[i]) : combine(acc[i], Widen(theirs[i]), op);
  }
  auto* o = static_cast<uint16_t*>(out);
  for (size_t i = 0; i < count; ++i) o[i] = Narrow(op == ncclAvg ? acc[i] / c->nranks : acc[i]);
}

size_t type_size(ncclDataType_t t) {
  switch (t) {
    case ncclFloat16: case ncclBfloat16: return 2;
    case ncclFloat32: case ncclInt32: return 4;
    case ncclFloat64: case ncclInt64: return 8;
    default: return 0;
  }
}

}  // namespace

FAKE_EXPORT ncclResult_t ncclGetVersion(int* version) {
  const char* v = std::getenv("MLOS_FAKE_NCCL_VERSION");
  *version = v ? std::atoi(v) : 22803;
  return ncclSuccess;
}

FAKE_EXPORT const char* ncclGetErrorString(ncclResult_t r) {
  return r == ncclSuccess ? "no error" : r == ncclRemoteError ? "remote process exited or there was a network error"
                                                               : "fake NCCL error";
}

FAKE_EXPORT ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  if (failing("unique_id")) return ncclSystemError;
  static std::atomic<int> counter{0};
  std::memset(id->internal, 0, sizeof id->internal);
  std::snprintf(id->internal, sizeof id->internal, "/mlos-fake-nccl-%d-%d-%ld", getpid(), counter++, random());
  return ncclSuccess;
}

FAKE_EXPORT ncclResult_t ncclCommInitRankConfig(ncclComm_t* out, int nranks, ncclUniqueId id, int rank,
                                                ncclConfig_t*) {
  if (nranks < 1 || rank < 0 || rank >= nranks) return ncclInvalidArgument;
  auto* c = new ncclComm;
  c->rank = rank;
  c->nranks = nranks;
  c->segment_bytes = kHeaderBytes + nranks * kSlotBytes;
  const int fd = shm_open(id.internal, O_RDWR | O_CREAT, 0600);
  if (fd < 0 || ftruncate(fd, static_cast<off_t>(c->segment_bytes)) != 0) {
    if (fd >= 0) close(fd);
    delete c;
    return ncclSystemError;
  }
  c->segment = mmap(nullptr, c->segment_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (c->segment == MAP_FAILED || !barrier(c)) {
    delete c;
    return ncclSystemError;
  }
  if (rank == 0) shm_unlink(id.internal);  // every rank has it mapped
  log_line("init " + std::to_string(rank) + " " + std::to_string(nranks));
  *out = c;
  return ncclSuccess;
}

FAKE_EXPORT ncclResult_t ncclCommGetAsyncError(ncclComm_t c, ncclResult_t* state) {
  *state = c->async;
  return ncclSuccess;
}

FAKE_EXPORT ncclResult_t ncclAllReduce(const void* send, void* recv, size_t count, ncclDataType_t type,
                                       ncclRedOp_t op, ncclComm_t c, cudaStream_t) {
  const size_t bytes = count * type_size(type);
  if (type_size(type) == 0 || bytes > kSlotBytes) return ncclInvalidArgument;
  log_line("allreduce " + std::to_string(c->rank) + " " + std::to_string(count));
  if (failing("allreduce")) {
    c->async = ncclRemoteError;
    return ncclSuccess;
  }
  if (failing("hang")) {
    c->async = ncclInProgress;
    return ncclSuccess;
  }
  std::memcpy(slot(c, c->rank), send, bytes);
  if (!barrier(c)) return ncclSystemError;
  using namespace mlos::collectives;
  switch (type) {
    case ncclFloat32: reduce<float>(c, recv, count, op); break;
    case ncclFloat64: reduce<double>(c, recv, count, op); break;
    case ncclInt32: reduce<int32_t>(c, recv, count, op); break;
    case ncclInt64: reduce<int64_t>(c, recv, count, op); break;
    case ncclFloat16: reduce_narrow<half_to_float, float_to_half>(c, recv, count, op); break;
    default: reduce_narrow<bfloat16_to_float, float_to_bfloat16>(c, recv, count, op); break;
  }
  return barrier(c) ? ncclSuccess : ncclSystemError;
}

FAKE_EXPORT ncclResult_t ncclCommDestroy(ncclComm_t c) {
  log_line("destroy " + std::to_string(c->rank));
  munmap(c->segment, c->segment_bytes);
  delete c;
  return ncclSuccess;
}

FAKE_EXPORT ncclResult_t ncclCommAbort(ncclComm_t c) {
  log_line("abort " + std::to_string(c->rank));
  munmap(c->segment, c->segment_bytes);
  delete c;
  return ncclSuccess;
}
