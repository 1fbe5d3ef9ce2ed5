// SPDX-License-Identifier: Apache-2.0
// A stand-in for the CUDA driver (libcuda.so.1) on machines without a GPU,
// the fake NVML's counterpart: it exports the driver functions the
// interposer (src/gpushare) hooks and the CUDA runtime calls around them,
// under their real names and signatures from cuda.h, and serves the GPUs
// of the same JSON file as the fake NVML ($MLOS_FAKE_NVML: "uuid" and
// "memory_total" per GPU; "kernel_us", the length of every kernel, default
// 1000), seen through CUDA_VISIBLE_DEVICES as the real driver sees them.
//
// Memory: allocations are host pages (mmap'ed without reserve, so a large
// one costs nothing until written), counted per process against the GPU's
// size (CUDA_ERROR_OUT_OF_MEMORY past it). cuPointerGetAttribute knows
// them as device memory of their GPU, and the copy functions move bytes
// to and from them, so collectives on "device" buffers can be checked for
// their results (fake_nccl.cpp reduces them).
// Kernels run on the simulated timeline of fake_gpu_clock.h when
// $MLOS_FAKE_GPU_CLOCK names one, so the fake NVML's utilization follows
// them; without it a launch returns at once.
//
// cuGetProcAddress answers like the driver (versioned and per-thread
// names); with $MLOS_FAKE_CUDA_INTERNAL_POINTERS=1 it answers with entry
// points other than the exported ones, as drivers may. Test code only.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <string>
#include <vector>

#include <cuda.h>
#include <nlohmann/json.hpp>

#include "fake_gpu_clock.h"

#undef cuGetProcAddress

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

struct Gpu {
  int physical;  // index in the JSON file: the clock's device
  std::string uuid;
  uint64_t total;
  uint64_t used = 0;
};

std::mutex mu;
bool initialized = false;
std::vector<Gpu> gpus;  // as CUDA_VISIBLE_DEVICES shows them
int64_t kernel_ns = 1000000;
thread_local int current = -1;
struct Block {
  uint64_t address;
  int device;
  uint64_t bytes;
};
std::vector<Block> blocks;

bool parse_uuid(const std::string& text, CUuuid* out) {
  std::string hex;
  for (char c : text.substr(text.rfind("GPU-", 0) == 0 ? 4 : 0)) {
    if (c != '-') hex += c;
  }
  if (hex.size() != 32) return false;
  for (int i = 0; i < 16; ++i) out->bytes[i] = static_cast<char>(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
  return true;
}

CUresult load() {
  const char* path = std::getenv("MLOS_FAKE_NVML");
  if (path == nullptr) return CUDA_ERROR_NO_DEVICE;
  std::ifstream in(path);
  nlohmann::json config;
  try {
    config = nlohmann::json::parse(in);
  } catch (const std::exception&) {
    return CUDA_ERROR_NO_DEVICE;
  }
  kernel_ns = config.value("kernel_us", 1000) * 1000LL;
  std::vector<Gpu> all;
  for (const auto& g : config.value("gpus", nlohmann::json::array())) {
    all.push_back({static_cast<int>(all.size()), g.value("uuid", ""), g.value("memory_total", 0ULL)});
  }
  gpus.clear();
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  if (visible == nullptr) {
    gpus = all;
  } else {
    // As the driver reads it: indices or UUIDs, up to the first that names no GPU.
    std::string list = visible;
    size_t at = 0;
    while (at <= list.size()) {
      size_t end = list.find(',', at);
      if (end == std::string::npos) end = list.size();
      const std::string item = list.substr(at, end - at);
      const Gpu* found = nullptr;
      for (const Gpu& g : all) {
        if (item == g.uuid || (!item.empty() && item.find_first_not_of("0123456789") == std::string::npos &&
                               std::stoul(item) == static_cast<unsigned long>(g.physical))) {
          found = &g;
        }
      }
      if (found == nullptr) break;
      gpus.push_back(*found);
      at = end + 1;
    }
  }
  return CUDA_SUCCESS;
}

#define NEED_INIT()                               \
  std::lock_guard<std::mutex> lock(mu);           \
  if (!initialized) return CUDA_ERROR_NOT_INITIALIZED

CUresult allocate(CUdeviceptr* dptr, size_t bytes) {
  NEED_INIT();
  if (current < 0) return CUDA_ERROR_INVALID_CONTEXT;
  if (dptr == nullptr || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  Gpu& g = gpus[current];
  if (bytes > g.total - g.used) return CUDA_ERROR_OUT_OF_MEMORY;
  void* pages = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (pages == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
  g.used += bytes;
  *dptr = reinterpret_cast<uintptr_t>(pages);
  blocks.push_back({*dptr, current, bytes});
  return CUDA_SUCCESS;
}

CUresult release(uint64_t address) {
  NEED_INIT();
  for (auto it = blocks.begin(); it != blocks.end(); ++it) {
    if (it->address == address) {
      gpus[it->device].used -= it->bytes;
      munmap(reinterpret_cast<void*>(it->address), it->bytes);
      blocks.erase(it);
      return CUDA_SUCCESS;
    }
  }
  return CUDA_ERROR_INVALID_VALUE;
}

CUresult launch() {
  int physical = -1;
  int64_t length = 0;
  {
    NEED_INIT();
    if (current < 0) return CUDA_ERROR_INVALID_CONTEXT;
    physical = gpus[current].physical;
    length = kernel_ns;
  }
  mlos::fake::run_kernel(physical, static_cast<int>(getpid()), length);
  return CUDA_SUCCESS;
}

}  // namespace

FAKE_EXPORT CUresult cuInit(unsigned int) {
  std::lock_guard<std::mutex> lock(mu);
  if (initialized) return CUDA_SUCCESS;
  const CUresult r = load();
  initialized = r == CUDA_SUCCESS;
  return r;
}

FAKE_EXPORT CUresult cuDriverGetVersion(int* version) {
  *version = CUDA_VERSION;
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuGetErrorString(CUresult r, const char** text) {
  *text = r == CUDA_SUCCESS ? "no error" : r == CUDA_ERROR_OUT_OF_MEMORY ? "out of memory" : "fake driver error";
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDeviceGetCount(int* count) {
  NEED_INIT();
  *count = static_cast<int>(gpus.size());
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDeviceGet(CUdevice* dev, int ordinal) {
  NEED_INIT();
  if (ordinal < 0 || ordinal >= static_cast<int>(gpus.size())) return CUDA_ERROR_INVALID_DEVICE;
  *dev = ordinal;
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDeviceGetUuid_v2(CUuuid* uuid, CUdevice dev) {
  NEED_INIT();
  if (dev < 0 || dev >= static_cast<int>(gpus.size())) return CUDA_ERROR_INVALID_DEVICE;
  return parse_uuid(gpus[dev].uuid, uuid) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

FAKE_EXPORT CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice dev) {
  NEED_INIT();
  if (dev < 0 || dev >= static_cast<int>(gpus.size())) return CUDA_ERROR_INVALID_DEVICE;
  *bytes = gpus[dev].total;
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext* ctx, CUdevice dev) {
  NEED_INIT();
  if (dev < 0 || dev >= static_cast<int>(gpus.size())) return CUDA_ERROR_INVALID_DEVICE;
  *ctx = reinterpret_cast<CUcontext>(static_cast<uintptr_t>(dev + 1));
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuCtxSetCurrent(CUcontext ctx) {
  NEED_INIT();
  const auto i = static_cast<int>(reinterpret_cast<uintptr_t>(ctx)) - 1;
  if (i < -1 || i >= static_cast<int>(gpus.size())) return CUDA_ERROR_INVALID_CONTEXT;
  current = i;
  return CUDA_SUCCESS;
}

// The older context call scripts still use (gpu_check.sh's ctypes probes):
// the device's context, made current.
FAKE_EXPORT CUresult cuCtxCreate_v2(CUcontext* ctx, unsigned int, CUdevice dev) {
  NEED_INIT();
  if (dev < 0 || dev >= static_cast<int>(gpus.size())) return CUDA_ERROR_INVALID_DEVICE;
  *ctx = reinterpret_cast<CUcontext>(static_cast<uintptr_t>(dev + 1));
  current = dev;
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuCtxGetDevice(CUdevice* dev) {
  NEED_INIT();
  if (current < 0) return CUDA_ERROR_INVALID_CONTEXT;
  *dev = current;
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuCtxSynchronize(void) {
  int physical = -1;
  {
    NEED_INIT();
    if (current < 0) return CUDA_ERROR_INVALID_CONTEXT;
    physical = gpus[current].physical;
  }
  const int64_t end = mlos::fake::last_kernel_end(physical, static_cast<int>(getpid()));
  while (mlos::fake::monotonic_ns() < end) usleep(200);
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuMemGetInfo_v2(size_t* free_bytes, size_t* total_bytes) {
  NEED_INIT();
  if (current < 0) return CUDA_ERROR_INVALID_CONTEXT;
  *free_bytes = gpus[current].total - gpus[current].used;
  *total_bytes = gpus[current].total;
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytes) { return allocate(dptr, bytes); }

FAKE_EXPORT CUresult cuMemAllocManaged(CUdeviceptr* dptr, size_t bytes, unsigned int) { return allocate(dptr, bytes); }

FAKE_EXPORT CUresult cuMemAllocAsync(CUdeviceptr* dptr, size_t bytes, CUstream) { return allocate(dptr, bytes); }

FAKE_EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t bytes, CUstream) { return allocate(dptr, bytes); }

// Rows padded to 512 bytes, as drivers align pitched rows.
FAKE_EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr* dptr, size_t* pitch, size_t width, size_t height, unsigned int) {
  *pitch = (width + 511) & ~static_cast<size_t>(511);
  return allocate(dptr, *pitch * height);
}

FAKE_EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr) { return release(dptr); }

FAKE_EXPORT CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream) { return release(dptr); }

FAKE_EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream) { return release(dptr); }

FAKE_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle* handle, size_t bytes, const CUmemAllocationProp* prop,
                                 unsigned long long) {
  if (prop == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const int saved = current;
  current = prop->location.id;
  CUdeviceptr address = 0;
  const CUresult r = allocate(&address, bytes);
  current = saved;
  *handle = address;
  return r;
}

FAKE_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle) { return release(handle); }

namespace {

// The allocation holding [address, address + bytes), or null.
const Block* block_of(uint64_t address, size_t bytes) {
  for (const Block& b : blocks) {
    if (address >= b.address && address + bytes <= b.address + b.bytes) return &b;
  }
  return nullptr;
}

// A copy between host memory and an allocation; synchronous, as the
// driver's cuMemcpy* are with respect to the host.
CUresult copy(void* to, const void* from, uint64_t device_address, size_t bytes) {
  NEED_INIT();
  if (block_of(device_address, bytes) == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::memcpy(to, from, bytes);
  return CUDA_SUCCESS;
}

}  // namespace

// Device memory only: host memory the driver does not know is
// CUDA_ERROR_INVALID_VALUE, as with the real driver.
FAKE_EXPORT CUresult cuPointerGetAttribute(void* data, CUpointer_attribute attribute, CUdeviceptr ptr) {
  NEED_INIT();
  const Block* b = block_of(ptr, 1);
  if (b == nullptr || data == nullptr) return CUDA_ERROR_INVALID_VALUE;
  switch (attribute) {
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE: *static_cast<unsigned*>(data) = CU_MEMORYTYPE_DEVICE; return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: *static_cast<int*>(data) = b->device; return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_CONTEXT:
      *static_cast<CUcontext*>(data) = reinterpret_cast<CUcontext>(static_cast<uintptr_t>(b->device + 1));
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED: *static_cast<int*>(data) = 0; return CUDA_SUCCESS;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
}

FAKE_EXPORT CUresult cuMemcpyDtoH_v2(void* dst, CUdeviceptr src, size_t bytes) {
  return copy(dst, reinterpret_cast<const void*>(src), src, bytes);
}

FAKE_EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void* src, size_t bytes) {
  return copy(reinterpret_cast<void*>(dst), src, dst, bytes);
}

FAKE_EXPORT CUresult cuCtxGetCurrent(CUcontext* ctx) {
  NEED_INIT();
  *ctx = current < 0 ? nullptr : reinterpret_cast<CUcontext>(static_cast<uintptr_t>(current + 1));
  return CUDA_SUCCESS;
}

// One level of stack is all the tests need: pop restores what push replaced.
namespace {
thread_local int pushed_over = -2;
}

FAKE_EXPORT CUresult cuCtxPushCurrent_v2(CUcontext ctx) {
  NEED_INIT();
  const auto i = static_cast<int>(reinterpret_cast<uintptr_t>(ctx)) - 1;
  if (i < 0 || i >= static_cast<int>(gpus.size())) return CUDA_ERROR_INVALID_CONTEXT;
  pushed_over = current;
  current = i;
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuCtxPopCurrent_v2(CUcontext* ctx) {
  NEED_INIT();
  if (pushed_over == -2) return CUDA_ERROR_INVALID_CONTEXT;
  if (ctx != nullptr) *ctx = reinterpret_cast<CUcontext>(static_cast<uintptr_t>(current + 1));
  current = pushed_over;
  pushed_over = -2;
  return CUDA_SUCCESS;
}

// Pinning host memory: accepted and counted ($MLOS_FAKE_NVML's GPUs are
// all the driver has; the count is not checked by anything yet).
namespace {
int registered_ranges = 0;
}

FAKE_EXPORT CUresult cuMemHostRegister_v2(void* p, size_t bytes, unsigned int) {
  NEED_INIT();
  if (p == nullptr || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  ++registered_ranges;
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuMemHostUnregister(void* p) {
  NEED_INIT();
  if (p == nullptr || registered_ranges == 0) return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
  --registered_ranges;
  return CUDA_SUCCESS;
}

// Events: work here completes when it is issued (fake_nccl.cpp's
// collectives return done), so every recorded event has completed.
FAKE_EXPORT CUresult cuEventCreate(CUevent* event, unsigned int) {
  *event = reinterpret_cast<CUevent>(new int(0));
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuEventRecord(CUevent, CUstream) { return CUDA_SUCCESS; }

FAKE_EXPORT CUresult cuEventQuery(CUevent) { return CUDA_SUCCESS; }

FAKE_EXPORT CUresult cuEventDestroy_v2(CUevent event) {
  delete reinterpret_cast<int*>(event);
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuLaunchKernel(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                    CUstream, void**, void**) {
  return launch();
}

FAKE_EXPORT CUresult cuLaunchKernel_ptsz(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                         unsigned, CUstream, void**, void**) {
  return launch();
}

FAKE_EXPORT CUresult cuGraphLaunch(CUgraphExec, CUstream) { return launch(); }

namespace {

// Entry points that are not the exported symbols (drivers may answer
// cuGetProcAddress with such).
CUresult internal_mem_alloc(CUdeviceptr* dptr, size_t bytes) { return allocate(dptr, bytes); }
CUresult internal_launch(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                         void**, void**) {
  return launch();
}

struct Entry {
  const char* name;
  void* fn;
};

#define ENTRY(name) {#name, reinterpret_cast<void*>(&name)}
const Entry kEntries[] = {
    ENTRY(cuInit), ENTRY(cuDriverGetVersion), ENTRY(cuGetErrorString), ENTRY(cuDeviceGetCount), ENTRY(cuDeviceGet),
    ENTRY(cuDeviceGetUuid_v2), ENTRY(cuDeviceTotalMem_v2), ENTRY(cuDevicePrimaryCtxRetain), ENTRY(cuCtxSetCurrent),
    ENTRY(cuCtxGetDevice), ENTRY(cuCtxSynchronize), ENTRY(cuMemGetInfo_v2), ENTRY(cuMemAlloc_v2),
    ENTRY(cuMemAllocManaged), ENTRY(cuMemAllocAsync), ENTRY(cuMemAllocAsync_ptsz), ENTRY(cuMemAllocPitch_v2),
    ENTRY(cuMemFree_v2), ENTRY(cuMemFreeAsync), ENTRY(cuMemFreeAsync_ptsz), ENTRY(cuMemCreate), ENTRY(cuMemRelease),
    ENTRY(cuLaunchKernel), ENTRY(cuLaunchKernel_ptsz), ENTRY(cuGraphLaunch), ENTRY(cuPointerGetAttribute),
    ENTRY(cuMemcpyDtoH_v2), ENTRY(cuMemcpyHtoD_v2), ENTRY(cuCtxGetCurrent), ENTRY(cuCtxPushCurrent_v2),
    ENTRY(cuCtxPopCurrent_v2), ENTRY(cuEventCreate), ENTRY(cuEventRecord), ENTRY(cuEventQuery), ENTRY(cuEventDestroy_v2),
    ENTRY(cuMemHostRegister_v2), ENTRY(cuMemHostUnregister),
};
#undef ENTRY

// The driver's naming: _v2 for functions whose ABI changed in CUDA 3.2,
// _ptsz for stream functions under per-thread default streams, and
// cuGetProcAddress's own _v2 from CUDA 12.
std::string versioned(const std::string& symbol, int version, cuuint64_t flags) {
  for (const char* n : {"cuMemAlloc", "cuMemAllocPitch", "cuMemFree", "cuMemGetInfo", "cuDeviceTotalMem",
                        "cuDeviceGetUuid"}) {
    if (symbol == n && version >= 3020) return symbol + "_v2";
  }
  for (const char* n : {"cuMemAllocAsync", "cuMemFreeAsync", "cuLaunchKernel", "cuGraphLaunch"}) {
    if (symbol == n && (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)) return symbol + "_ptsz";
  }
  if (symbol == "cuGetProcAddress" && version >= 12000) return "cuGetProcAddress_v2";
  return symbol;
}

CUresult lookup(const char* symbol, void** pfn, int version, cuuint64_t flags, CUdriverProcAddressQueryResult* status);

}  // namespace

FAKE_EXPORT CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int version, cuuint64_t flags,
                                         CUdriverProcAddressQueryResult* status) {
  return lookup(symbol, pfn, version, flags, status);
}

FAKE_EXPORT CUresult cuGetProcAddress(const char* symbol, void** pfn, int version, cuuint64_t flags) {
  return lookup(symbol, pfn, version, flags, nullptr);
}

namespace {

CUresult lookup(const char* symbol, void** pfn, int version, cuuint64_t flags, CUdriverProcAddressQueryResult* status) {
  if (symbol == nullptr || pfn == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const std::string name = versioned(symbol, version, flags);
  const char* internal = std::getenv("MLOS_FAKE_CUDA_INTERNAL_POINTERS");
  const bool use_internal = internal != nullptr && std::strcmp(internal, "1") == 0;
  *pfn = nullptr;
  if (name == "cuGetProcAddress_v2") *pfn = reinterpret_cast<void*>(&cuGetProcAddress_v2);
  if (name == "cuGetProcAddress") *pfn = reinterpret_cast<void*>(&cuGetProcAddress);
  if (use_internal && name == "cuMemAlloc_v2") *pfn = reinterpret_cast<void*>(&internal_mem_alloc);
  if (use_internal && (name == "cuLaunchKernel" || name == "cuLaunchKernel_ptsz")) {
    *pfn = reinterpret_cast<void*>(&internal_launch);
  }
  for (const Entry& e : kEntries) {
    if (*pfn == nullptr && name == e.name) *pfn = e.fn;
  }
  if (status != nullptr) *status = *pfn ? CU_GET_PROC_ADDRESS_SUCCESS : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  return *pfn ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

}  // namespace
