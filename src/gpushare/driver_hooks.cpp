// SPDX-License-Identifier: Apache-2.0
// libmlos-gpushare.so: the CUDA driver API interposer (docs/gpu.md,
// "Sharing a GPU"). Loaded with LD_PRELOAD by `mlos run --gpu-memory
// --gpu-share`, it exports the driver functions that allocate device
// memory, report it and launch work, under the driver's own names, and
// forwards each to libcuda.so.1 after applying the job's limits:
//
//  - memory: an allocation that would take the job (every process that
//    shares its share file) past its cap on that GPU fails with
//    CUDA_ERROR_OUT_OF_MEMORY, exactly as a full GPU would; cuMemGetInfo and
//    cuDeviceTotalMem report the cap as the GPU's size, so frameworks size
//    their pools to it;
//  - compute: launches wait for tokens of a LaunchLimiter whose rate a
//    watcher thread sets from NVML's utilization samples.
//
// Programs reach the driver three ways, and all three end here: linked
// calls (LD_PRELOAD puts these definitions first), dlsym on libcuda's
// handle (this library's dlsym, a trampoline into glibc's for everything
// else), and cuGetProcAddress, through which the
// CUDA runtime, and so PyTorch, gets every entry point (its result is
// swapped for the hook when it is a function hooked here).
//
// The limits are cooperative: a program can unset LD_PRELOAD or call the
// driver through a pointer found some other way. What isolates hostile
// jobs is MIG; docs/gpu.md says so.
#include <dlfcn.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>

#include <cuda.h>

#include "gpu/uuid_text.h"
#include "gpushare/job_share.h"
#include "gpushare/launch_limiter.h"
#include "gpushare/real_driver.h"
#include "gpushare/share_config.h"
#include "gpushare/utilization_watch.h"

#undef cuGetProcAddress
// CUDA 11.3's cuGetProcAddress (no status argument); cuda.h now names the
// _v2 so, but drivers still export both.
extern "C" CUresult cuGetProcAddress(const char* symbol, void** pfn, int cuda_version, cuuint64_t flags);

// Exported by name through cmake/gpushare.map (cu* and dlsym only).
#define MLOS_EXPORT extern "C"

namespace mlos::gpushare {
namespace {

// Every hooked entry point, by the name libcuda exports it under.
#define MLOS_HOOKED(X)                                                                                          \
  X(cuMemAlloc_v2) X(cuMemAllocPitch_v2) X(cuMemAllocManaged) X(cuMemAllocAsync) X(cuMemAllocAsync_ptsz)        \
  X(cuMemAllocFromPoolAsync) X(cuMemAllocFromPoolAsync_ptsz) X(cuMemFree_v2) X(cuMemFreeAsync)                  \
  X(cuMemFreeAsync_ptsz) X(cuMemCreate) X(cuMemRelease) X(cuMemGetInfo_v2) X(cuDeviceTotalMem_v2)               \
  X(cuLaunchKernel) X(cuLaunchKernel_ptsz) X(cuLaunchKernelEx) X(cuLaunchKernelEx_ptsz)                        \
  X(cuLaunchCooperativeKernel) X(cuLaunchCooperativeKernel_ptsz) X(cuGraphLaunch) X(cuGraphLaunch_ptsz)        \
  X(cuGetProcAddress) X(cuGetProcAddress_v2)

enum HookId {
#define MLOS_ID(name) k_##name,
  MLOS_HOOKED(MLOS_ID)
#undef MLOS_ID
  kHookCount
};

struct Hook {
  const char* name;
  void* hook;
  std::atomic<void*> real;  // resolved on first use, or set from cuGetProcAddress's answer
};

Hook* hooks();

// The driver's function behind `h`, resolved by name on first use.
void* resolved(Hook& h) {
  void* p = h.real.load(std::memory_order_acquire);
  if (p != nullptr) return p;
  p = real_driver_symbol(h.name);
  void* expected = nullptr;
  if (p != nullptr && !h.real.compare_exchange_strong(expected, p)) p = expected;
  return p;
}

template <typename Fn>
Fn real_of(HookId id) {
  return reinterpret_cast<Fn>(resolved(hooks()[id]));
}

#define REAL(name, ...)                                                      \
  ([&]() -> CUresult {                                                      \
    auto fn = mlos::gpushare::real_of<decltype(&name)>(mlos::gpushare::k_##name); \
    return fn == nullptr ? CUDA_ERROR_NOT_FOUND : fn(__VA_ARGS__);          \
  }())

int64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

struct Allocation {
  uint64_t bytes;
  int device;  // share-file device entry, -1 = not capped
};

// The interposer's process-wide state. Created on the first hooked call
// and never destroyed: driver threads may call in during exit.
class Interposer {
 public:
  Interposer() {
    ShareConfig config;
    // Plain getenv, not os::env (os/environment.h): this library is
    // preloaded into programs built elsewhere and links mlos_gpushare_core
    // alone, not mlos_internal (cmake/gpushare.cmake). The four variables
    // are in the table all the same (core/environment.cpp), and
    // scripts/check_environment.py allows this file's reads by name.
    if (!parse_share_config(std::getenv("MLOS_GPUSHARE_STATE"), std::getenv("MLOS_GPU_MEMORY_LIMIT"),
                            std::getenv("MLOS_GPU_SHARE"), std::getenv("MLOS_GPU_SHARE_MECHANISM"), &config,
                            &broken_)) {
      warn_once(broken_ + "; GPU allocations are refused");
      return;
    }
    share_ = JobShare::attach(config.state_path, config.limits, &broken_);
    if (!share_) {
      warn_once(broken_ + "; GPU allocations are refused");
      return;
    }
    const ShareLimits limits = share_->limits();
    throttle_ = config.throttle_launches && limits.share_percent > 0 && limits.share_percent < 100;
    share_fraction_ = limits.share_percent / 100.0;
    if (!config.throttle_launches && limits.share_percent > 0) share_->set_mechanism("mps", "none: MPS enforces it");
    for (auto& e : entry_of_ordinal_) e.store(kUnknown, std::memory_order_relaxed);
    get_device_ = reinterpret_cast<GetDeviceFn>(real_driver_symbol("cuCtxGetDevice"));
    get_uuid_ = reinterpret_cast<GetUuidFn>(real_driver_symbol("cuDeviceGetUuid_v2"));
    if (get_uuid_ == nullptr) get_uuid_ = reinterpret_cast<GetUuidFn>(real_driver_symbol("cuDeviceGetUuid"));
  }

  // Why allocations are refused ("" = they are not).
  const std::string& broken() const { return broken_; }
  JobShare* share() { return share_.get(); }
  bool throttling() const { return throttle_; }

  // The share-file device entry of the calling thread's current device.
  int current_entry() {
    CUdevice ordinal = 0;
    if (get_device_ == nullptr || get_device_(&ordinal) != CUDA_SUCCESS) return -1;
    return entry_of_ordinal(ordinal);
  }

  int entry_of_ordinal(int ordinal) {
    if (ordinal < 0 || ordinal >= kOrdinals || !share_) return -1;
    int e = entry_of_ordinal_[ordinal].load(std::memory_order_acquire);
    if (e != kUnknown) return e;
    CUuuid u{};
    if (get_uuid_ == nullptr || get_uuid_(&u, ordinal) != CUDA_SUCCESS) return -1;  // not cached: may work later
    const std::string uuid = gpu::uuid_text(u.bytes);
    e = share_->device(uuid);
    if (e >= 0) {
      std::lock_guard<std::mutex> lock(mu_);
      uuids_[e] = uuid;
    }
    if (e < 0) warn_once(share_->why());
    entry_of_ordinal_[ordinal].store(e, std::memory_order_release);
    return e;
  }

  // Reserves `bytes` on `entry` for an allocation about to be made.
  CUresult reserve(int entry, uint64_t bytes) {
    if (!broken_.empty()) return CUDA_ERROR_OUT_OF_MEMORY;
    if (share_->reserve(entry, bytes)) return CUDA_SUCCESS;
    char text[256];
    std::snprintf(text, sizeof text,
                  "an allocation of %" PRIu64 " bytes was refused: the job's GPU memory cap is %" PRIu64
                  " bytes per GPU and it holds %" PRIu64,
                  bytes, share_->limits().memory_limit, share_->job_used(entry));
    warn_once(text);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }

  // Books an allocation the driver made. An entry already under `key` was
  // freed some way the hooks did not see: its bytes leave the job's use.
  void record(uint64_t key, uint64_t bytes, int entry, bool handle) {
    std::optional<Allocation> stale;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto [it, fresh] = (handle ? handles_ : pointers_).try_emplace(key, Allocation{bytes, entry});
      if (!fresh) {
        stale = it->second;
        it->second = Allocation{bytes, entry};
      }
    }
    if (stale && share_) share_->release(stale->device, stale->bytes);
  }

  // Adds `extra` bytes, already reserved, to a booked allocation.
  void grow(uint64_t key, uint64_t extra) {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = pointers_.find(key); it != pointers_.end()) it->second.bytes += extra;
  }

  // Frees through `free_fn`: the entry leaves the books before the driver
  // frees (another thread may get the same address at once and book it),
  // and comes back if the driver refuses.
  template <typename Free>
  CUresult release(uint64_t key, bool handle, Free free_fn) {
    std::optional<Allocation> a;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto& map = handle ? handles_ : pointers_;
      if (auto it = map.find(key); it != map.end()) {
        a = it->second;
        map.erase(it);
      }
    }
    const CUresult r = free_fn();
    if (!a) return r;
    if (r != CUDA_SUCCESS) {
      record(key, a->bytes, a->device, handle);
    } else if (share_) {
      share_->release(a->device, a->bytes);
    }
    return r;
  }

  // Before a launch: counts it, and waits for the compute share.
  void before_launch() {
    if (!share_) return;
    share_->count_launch();
    if (!throttle_) return;
    const int entry = current_entry();
    if (entry < 0) return;
    LaunchLimiter* limiter = limiter_of(entry);
    const int64_t wait = limiter->admit(now_ns());
    if (wait <= 0) return;
    timespec ts{static_cast<time_t>(wait / 1000000000), static_cast<long>(wait % 1000000000)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
    share_->add_throttled_ns(static_cast<uint64_t>(wait));
  }

  // fork(): mu_ is held across it, so the child's copy is never left
  // locked by a thread that does not exist there.
  void before_fork() { mu_.lock(); }
  void after_fork_in_parent() { mu_.unlock(); }
  void after_fork_in_child() {
    pointers_.clear();  // CUDA state does not survive fork()
    handles_.clear();
    watcher_started_ = false;
    mu_.unlock();
    if (share_) share_->reattach_after_fork();
  }

  static void warn_once(const std::string& text) {
    static std::atomic<int> said{0};
    if (said.fetch_add(1) < 3) std::fprintf(stderr, "mlos-gpushare: %s\n", text.c_str());
  }

 private:
  static constexpr int kOrdinals = 64;
  static constexpr int kUnknown = -2;

  LaunchLimiter* limiter_of(int entry) {
    std::lock_guard<std::mutex> lock(mu_);
    auto& slot = limiters_[entry];
    if (!slot) slot = std::make_unique<LaunchLimiter>(share_fraction_);
    if (!watcher_started_) {
      watcher_started_ = true;
      std::thread([this] { watch(); }).detach();
    }
    return slot.get();
  }

  // The watcher thread: feeds each limiter the job's utilization of its GPU.
  void watch() {
    UtilizationWatch nvml;
    share_->set_mechanism("throttle", nvml.source());
    if (!nvml.ok()) {
      warn_once("the compute share is not enforced: " + nvml.source());
      return;
    }
    for (;;) {
      timespec ts{0, 100 * 1000 * 1000};
      nanosleep(&ts, nullptr);
      const std::vector<int> pids = share_->job_pids();
      std::vector<std::pair<int, LaunchLimiter*>> active;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (!watcher_started_) return;  // forked: the child starts its own
        for (auto& [entry, limiter] : limiters_) active.emplace_back(entry, limiter.get());
      }
      for (auto [entry, limiter] : active) {
        const std::string uuid = uuid_of(entry);
        if (uuid.empty()) continue;
        if (auto u = nvml.sample(uuid, pids)) limiter->on_sample(*u, now_ns());
      }
    }
  }

  std::string uuid_of(int entry) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = uuids_.find(entry);
    return it == uuids_.end() ? "" : it->second;
  }

  using GetDeviceFn = CUresult (*)(CUdevice*);
  using GetUuidFn = CUresult (*)(CUuuid*, CUdevice);
  GetDeviceFn get_device_ = nullptr;
  GetUuidFn get_uuid_ = nullptr;
  std::string broken_;
  std::unique_ptr<JobShare> share_;
  bool throttle_ = false;
  double share_fraction_ = 1.0;
  std::atomic<int> entry_of_ordinal_[kOrdinals];
  std::mutex mu_;  // guards everything below
  std::unordered_map<uint64_t, Allocation> pointers_;
  std::unordered_map<uint64_t, Allocation> handles_;
  std::unordered_map<int, std::unique_ptr<LaunchLimiter>> limiters_;
  std::unordered_map<int, std::string> uuids_;
  bool watcher_started_ = false;
};

Interposer& state() {
  static Interposer* s = [] {
    auto* p = new Interposer();
    pthread_atfork([] { state().before_fork(); }, [] { state().after_fork_in_parent(); },
                   [] { state().after_fork_in_child(); });
    return p;
  }();
  return *s;
}

// An allocation through `alloc` of `bytes` on the current device, charged
// to the job first and handed back if the driver fails it.
template <typename Alloc>
CUresult charged(CUdeviceptr* dptr, uint64_t bytes, Alloc alloc) {
  Interposer& s = state();
  if (!s.broken().empty()) return CUDA_ERROR_OUT_OF_MEMORY;
  const int entry = s.current_entry();
  if (CUresult r = s.reserve(entry, bytes); r != CUDA_SUCCESS) return r;
  const CUresult r = alloc();
  if (r != CUDA_SUCCESS || dptr == nullptr) {
    s.share()->release(entry, bytes);
    return r;
  }
  s.record(*dptr, bytes, entry, false);
  return r;
}

}  // namespace
}  // namespace mlos::gpushare

using mlos::gpushare::charged;
using mlos::gpushare::state;

// ---- memory -----------------------------------------------------------------

MLOS_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytes) {
  return charged(dptr, bytes, [&] { return REAL(cuMemAlloc_v2, dptr, bytes); });
}

MLOS_EXPORT CUresult cuMemAllocManaged(CUdeviceptr* dptr, size_t bytes, unsigned int flags) {
  return charged(dptr, bytes, [&] { return REAL(cuMemAllocManaged, dptr, bytes, flags); });
}

MLOS_EXPORT CUresult cuMemAllocAsync(CUdeviceptr* dptr, size_t bytes, CUstream stream) {
  return charged(dptr, bytes, [&] { return REAL(cuMemAllocAsync, dptr, bytes, stream); });
}

extern "C" CUresult cuMemAllocAsync_ptsz(CUdeviceptr*, size_t, CUstream);
MLOS_EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t bytes, CUstream stream) {
  return charged(dptr, bytes, [&] { return REAL(cuMemAllocAsync_ptsz, dptr, bytes, stream); });
}

MLOS_EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr* dptr, size_t bytes, CUmemoryPool pool, CUstream stream) {
  return charged(dptr, bytes, [&] { return REAL(cuMemAllocFromPoolAsync, dptr, bytes, pool, stream); });
}

extern "C" CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr*, size_t, CUmemoryPool, CUstream);
MLOS_EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* dptr, size_t bytes, CUmemoryPool pool,
                                                  CUstream stream) {
  return charged(dptr, bytes, [&] { return REAL(cuMemAllocFromPoolAsync_ptsz, dptr, bytes, pool, stream); });
}

// The pitch, and so the size, is known only after the driver chose it: the
// rows' width is charged first, the padding after.
MLOS_EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr* dptr, size_t* pitch, size_t width, size_t height,
                                        unsigned int element_bytes) {
  auto& s = state();
  const uint64_t at_least = static_cast<uint64_t>(width) * height;
  CUresult r = charged(dptr, at_least, [&] { return REAL(cuMemAllocPitch_v2, dptr, pitch, width, height, element_bytes); });
  if (r != CUDA_SUCCESS || pitch == nullptr || *pitch <= width) return r;
  const uint64_t padding = static_cast<uint64_t>(*pitch - width) * height;
  const int entry = s.current_entry();
  if (s.reserve(entry, padding) != CUDA_SUCCESS) {
    (void)s.release(*dptr, false, [&] { return REAL(cuMemFree_v2, *dptr); });
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  s.grow(*dptr, padding);  // both parts are now charged
  return r;
}

MLOS_EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr) {
  return state().release(dptr, false, [&] { return REAL(cuMemFree_v2, dptr); });
}

// Stream-ordered frees leave the job's use when called, not when the
// stream reaches them: the cap is on what the program holds.
MLOS_EXPORT CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream stream) {
  return state().release(dptr, false, [&] { return REAL(cuMemFreeAsync, dptr, stream); });
}

extern "C" CUresult cuMemFreeAsync_ptsz(CUdeviceptr, CUstream);
MLOS_EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream stream) {
  return state().release(dptr, false, [&] { return REAL(cuMemFreeAsync_ptsz, dptr, stream); });
}

// Virtual memory management (PyTorch's expandable segments): physical
// memory is allocated by cuMemCreate, on the device its properties name.
MLOS_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle* handle, size_t bytes, const CUmemAllocationProp* prop,
                                 unsigned long long flags) {
  auto& s = state();
  if (prop == nullptr || prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE) {
    return REAL(cuMemCreate, handle, bytes, prop, flags);  // host memory: not capped
  }
  if (!s.broken().empty()) return CUDA_ERROR_OUT_OF_MEMORY;
  const int entry = s.entry_of_ordinal(prop->location.id);
  if (CUresult r = s.reserve(entry, bytes); r != CUDA_SUCCESS) return r;
  const CUresult r = REAL(cuMemCreate, handle, bytes, prop, flags);
  if (r != CUDA_SUCCESS || handle == nullptr) {
    s.share()->release(entry, bytes);
    return r;
  }
  s.record(*handle, bytes, entry, true);
  return r;
}

MLOS_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
  return state().release(handle, true, [&] { return REAL(cuMemRelease, handle); });
}

// The cap is the GPU's size as the job sees it; free is what the cap
// leaves after every process of the job, and never more than the GPU has.
MLOS_EXPORT CUresult cuMemGetInfo_v2(size_t* free_bytes, size_t* total_bytes) {
  const CUresult r = REAL(cuMemGetInfo_v2, free_bytes, total_bytes);
  auto& s = state();
  if (r != CUDA_SUCCESS || s.share() == nullptr) return r;
  const uint64_t limit = s.share()->limits().memory_limit;
  if (limit == 0) return r;
  const uint64_t used = s.share()->job_used(s.current_entry());
  const uint64_t left = used >= limit ? 0 : limit - used;
  if (total_bytes != nullptr && *total_bytes > limit) *total_bytes = limit;
  if (free_bytes != nullptr && *free_bytes > left) *free_bytes = left;
  return r;
}

MLOS_EXPORT CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice dev) {
  const CUresult r = REAL(cuDeviceTotalMem_v2, bytes, dev);
  auto& s = state();
  if (r != CUDA_SUCCESS || s.share() == nullptr || bytes == nullptr) return r;
  const uint64_t limit = s.share()->limits().memory_limit;
  if (limit != 0 && *bytes > limit) *bytes = limit;
  return r;
}

// ---- launches ---------------------------------------------------------------

MLOS_EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                    unsigned bz, unsigned shared, CUstream stream, void** params, void** extra) {
  state().before_launch();
  return REAL(cuLaunchKernel, f, gx, gy, gz, bx, by, bz, shared, stream, params, extra);
}

extern "C" CUresult cuLaunchKernel_ptsz(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                        unsigned, CUstream, void**, void**);
MLOS_EXPORT CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                         unsigned by, unsigned bz, unsigned shared, CUstream stream, void** params,
                                         void** extra) {
  state().before_launch();
  return REAL(cuLaunchKernel_ptsz, f, gx, gy, gz, bx, by, bz, shared, stream, params, extra);
}

MLOS_EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig* config, CUfunction f, void** params, void** extra) {
  state().before_launch();
  return REAL(cuLaunchKernelEx, config, f, params, extra);
}

extern "C" CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig*, CUfunction, void**, void**);
MLOS_EXPORT CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig* config, CUfunction f, void** params, void** extra) {
  state().before_launch();
  return REAL(cuLaunchKernelEx_ptsz, config, f, params, extra);
}

MLOS_EXPORT CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                               unsigned by, unsigned bz, unsigned shared, CUstream stream,
                                               void** params) {
  state().before_launch();
  return REAL(cuLaunchCooperativeKernel, f, gx, gy, gz, bx, by, bz, shared, stream, params);
}

extern "C" CUresult cuLaunchCooperativeKernel_ptsz(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                                                   unsigned, unsigned, CUstream, void**);
MLOS_EXPORT CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                                    unsigned bx, unsigned by, unsigned bz, unsigned shared,
                                                    CUstream stream, void** params) {
  state().before_launch();
  return REAL(cuLaunchCooperativeKernel_ptsz, f, gx, gy, gz, bx, by, bz, shared, stream, params);
}

MLOS_EXPORT CUresult cuGraphLaunch(CUgraphExec graph, CUstream stream) {
  state().before_launch();
  return REAL(cuGraphLaunch, graph, stream);
}

extern "C" CUresult cuGraphLaunch_ptsz(CUgraphExec, CUstream);
MLOS_EXPORT CUresult cuGraphLaunch_ptsz(CUgraphExec graph, CUstream stream) {
  state().before_launch();
  return REAL(cuGraphLaunch_ptsz, graph, stream);
}

// ---- how programs find the driver's functions -------------------------------

namespace mlos::gpushare {
namespace {

Hook* hooks() {
  static Hook table[kHookCount] = {
#define MLOS_ENTRY(name) {#name, reinterpret_cast<void*>(&::name), {nullptr}},
      MLOS_HOOKED(MLOS_ENTRY)
#undef MLOS_ENTRY
  };
  return table;
}

Hook* hook_named(const char* name) {
  for (int i = 0; i < kHookCount; ++i) {
    if (std::strcmp(hooks()[i].name, name) == 0) return &hooks()[i];
  }
  return nullptr;
}

// The exported name cuGetProcAddress answers `symbol` with, for the
// functions hooked here: the _v2 of those whose ABI changed in CUDA 3.2,
// the _ptsz of stream functions when per-thread default streams are asked.
std::string exported_name(const char* symbol, int cuda_version, cuuint64_t flags) {
  std::string name = symbol;
  static const char* const v2[] = {"cuMemAlloc", "cuMemAllocPitch", "cuMemFree", "cuMemGetInfo", "cuDeviceTotalMem"};
  for (const char* n : v2) {
    if (name == n && cuda_version >= 3020) return name + "_v2";
  }
  static const char* const per_thread[] = {"cuMemAllocAsync", "cuMemAllocFromPoolAsync", "cuMemFreeAsync",
                                           "cuLaunchKernel",  "cuLaunchKernelEx",        "cuLaunchCooperativeKernel",
                                           "cuGraphLaunch"};
  for (const char* n : per_thread) {
    if (name == n && (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)) return name + "_ptsz";
  }
  if (name == "cuGetProcAddress" && cuda_version >= 12000) return "cuGetProcAddress_v2";
  return name;
}

// The hook to hand out instead of `found`, the driver's answer for
// `symbol`; `found` itself if that function is not hooked.
void* substitute(void* found, const char* symbol, int cuda_version, cuuint64_t flags) {
  for (int i = 0; i < kHookCount; ++i) {
    Hook& h = hooks()[i];
    if (resolved(h) == found) return h.hook;
  }
  // Drivers may answer with internal entry points rather than the exported
  // ones: match by name. The hook then calls the driver's exported function
  // of that name (resolved already), which the driver answers for the same
  // name and version; the answered pointer is kept only when none was.
  if (Hook* h = hook_named(exported_name(symbol, cuda_version, flags).c_str())) {
    void* expected = nullptr;
    h->real.compare_exchange_strong(expected, found);
    return h->hook;
  }
  return found;
}

}  // namespace
}  // namespace mlos::gpushare

using mlos::gpushare::substitute;

MLOS_EXPORT CUresult cuGetProcAddress(const char* symbol, void** pfn, int cuda_version, cuuint64_t flags) {
  const CUresult r = REAL(cuGetProcAddress, symbol, pfn, cuda_version, flags);
  if (r == CUDA_SUCCESS && pfn != nullptr && *pfn != nullptr && symbol != nullptr) {
    *pfn = substitute(*pfn, symbol, cuda_version, flags);
  }
  return r;
}

MLOS_EXPORT CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int cuda_version, cuuint64_t flags,
                                         CUdriverProcAddressQueryResult* status) {
  const CUresult r = REAL(cuGetProcAddress_v2, symbol, pfn, cuda_version, flags, status);
  if (r == CUDA_SUCCESS && pfn != nullptr && *pfn != nullptr && symbol != nullptr) {
    *pfn = substitute(*pfn, symbol, cuda_version, flags);
  }
  return r;
}

// dlsym. Lookups of hooked names get the hook (the handle's own function
// becomes the real one when the handle is the driver's). Every other
// lookup must be glibc's exactly, and glibc's answer depends on who calls
// (RTLD_NEXT is "after the caller's object", RTLD_DEFAULT searches the
// caller's scope): so dlsym is a trampoline that asks the hook table and
// otherwise jumps to glibc's dlsym with the program's return address still
// on the stack, as if the program had called glibc directly.
extern "C" {
__attribute__((visibility("hidden"))) void* mlos_gpushare_glibc_dlsym = nullptr;
}

extern "C" __attribute__((visibility("hidden"))) void* mlos_gpushare_hooked_symbol(void* handle, const char* symbol) {
  if (mlos_gpushare_glibc_dlsym == nullptr) {
    mlos_gpushare_glibc_dlsym = mlos::gpushare::glibc_dlsym_address();
  }
  if (symbol == nullptr || symbol[0] != 'c' || symbol[1] != 'u') return nullptr;
  mlos::gpushare::Hook* h = mlos::gpushare::hook_named(symbol);
  if (h == nullptr) return nullptr;
  // RTLD_DEFAULT and RTLD_NEXT find this library's export first (it is
  // preloaded): the hook; its real function is libcuda's, by name.
  if (handle == RTLD_DEFAULT || handle == RTLD_NEXT) return h->hook;
  void* real = mlos::gpushare::real_dlsym(handle, symbol);
  if (real == nullptr) return nullptr;  // glibc answers: NULL, with dlerror()
  if (real != h->hook) {
    void* expected = nullptr;
    h->real.compare_exchange_strong(expected, real);
  }
  return h->hook;
}

#if defined(__x86_64__)
// rdi, rsi: the arguments, kept across the call; the stack is realigned
// to 16 bytes for it. A null answer jumps to glibc (a tail call: glibc's
// return goes straight back to the program).
asm(R"(
  .text
  .globl dlsym
  .type dlsym, @function
dlsym:
  .cfi_startproc
  pushq %rdi
  .cfi_adjust_cfa_offset 8
  pushq %rsi
  .cfi_adjust_cfa_offset 8
  subq $8, %rsp
  .cfi_adjust_cfa_offset 8
  call mlos_gpushare_hooked_symbol
  addq $8, %rsp
  .cfi_adjust_cfa_offset -8
  popq %rsi
  .cfi_adjust_cfa_offset -8
  popq %rdi
  .cfi_adjust_cfa_offset -8
  testq %rax, %rax
  jz 1f
  ret
1:
  jmp *mlos_gpushare_glibc_dlsym(%rip)
  .cfi_endproc
  .size dlsym, .-dlsym
)");
#else
#error "libmlos-gpushare.so's dlsym trampoline is written for x86-64"
#endif
