// SPDX-License-Identifier: Apache-2.0
// A CUDA program for the interposer's tests, reaching the driver the way
// real programs do, chosen by the first argument:
//   linked        calls the driver's functions directly (built linked
//                 against the fake libcuda.so.1: cuda_client_linked)
//   dlsym         dlopen("libcuda.so.1") + dlsym, as older runtimes did
//   procaddress   dlopen + dlsym("cuGetProcAddress_v2") once, then every
//                 function through it, as the CUDA 12+ runtime (and so
//                 PyTorch) does; launches asked with per-thread streams
// then runs its operations in order, one JSON line each on stdout:
//   alloc:BYTES managed:BYTES async:BYTES create:BYTES pitch:WIDTH:HEIGHT
//   free (the last allocation)  info (cuMemGetInfo and cuDeviceTotalMem)
//   launch:SECONDS (kernels back to back; prints how many)
//   hold:SECONDS (sleeps, holding what it allocated)  fork:BYTES (a child
//   allocates BYTES and exits 0 on success, 1 when refused)
//   dlsym-next (glibc's RTLD_NEXT answers through the interposer's dlsym:
//   a libc function found after the program, a missing one NULL with
//   dlerror() set)
// Test code only.
#include <dlfcn.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <cuda.h>

#undef cuGetProcAddress

namespace {

struct Driver {
  CUresult (*init)(unsigned) = nullptr;
  CUresult (*device_get)(CUdevice*, int) = nullptr;
  CUresult (*primary_ctx)(CUcontext*, CUdevice) = nullptr;
  CUresult (*set_current)(CUcontext) = nullptr;
  CUresult (*mem_alloc)(CUdeviceptr*, size_t) = nullptr;
  CUresult (*mem_managed)(CUdeviceptr*, size_t, unsigned) = nullptr;
  CUresult (*mem_async)(CUdeviceptr*, size_t, CUstream) = nullptr;
  CUresult (*mem_pitch)(CUdeviceptr*, size_t*, size_t, size_t, unsigned) = nullptr;
  CUresult (*mem_free)(CUdeviceptr) = nullptr;
  CUresult (*mem_create)(CUmemGenericAllocationHandle*, size_t, const CUmemAllocationProp*, unsigned long long) =
      nullptr;
  CUresult (*mem_release)(CUmemGenericAllocationHandle) = nullptr;
  CUresult (*mem_info)(size_t*, size_t*) = nullptr;
  CUresult (*total_mem)(size_t*, CUdevice) = nullptr;
  CUresult (*launch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                     void**, void**) = nullptr;
  CUresult (*sync)(void) = nullptr;
};

#ifdef CUDA_CLIENT_LINKED
extern "C" CUresult cuLaunchKernel(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                   CUstream, void**, void**);
Driver linked() {
  Driver d;
  d.init = &cuInit;
  d.device_get = &cuDeviceGet;
  d.primary_ctx = &cuDevicePrimaryCtxRetain;
  d.set_current = &cuCtxSetCurrent;
  d.mem_alloc = &cuMemAlloc_v2;
  d.mem_managed = &cuMemAllocManaged;
  d.mem_async = &cuMemAllocAsync;
  d.mem_pitch = &cuMemAllocPitch_v2;
  d.mem_free = &cuMemFree_v2;
  d.mem_create = &cuMemCreate;
  d.mem_release = &cuMemRelease;
  d.mem_info = &cuMemGetInfo_v2;
  d.total_mem = &cuDeviceTotalMem_v2;
  d.launch = &cuLaunchKernel;
  d.sync = &cuCtxSynchronize;
  return d;
}
#endif

template <typename Fn>
void find(Fn* out, void* lib, const char* name) {
  *out = reinterpret_cast<Fn>(dlsym(lib, name));
}

Driver by_dlsym(void* lib) {
  Driver d;
  find(&d.init, lib, "cuInit");
  find(&d.device_get, lib, "cuDeviceGet");
  find(&d.primary_ctx, lib, "cuDevicePrimaryCtxRetain");
  find(&d.set_current, lib, "cuCtxSetCurrent");
  find(&d.mem_alloc, lib, "cuMemAlloc_v2");
  find(&d.mem_managed, lib, "cuMemAllocManaged");
  find(&d.mem_async, lib, "cuMemAllocAsync");
  find(&d.mem_pitch, lib, "cuMemAllocPitch_v2");
  find(&d.mem_free, lib, "cuMemFree_v2");
  find(&d.mem_create, lib, "cuMemCreate");
  find(&d.mem_release, lib, "cuMemRelease");
  find(&d.mem_info, lib, "cuMemGetInfo_v2");
  find(&d.total_mem, lib, "cuDeviceTotalMem_v2");
  find(&d.launch, lib, "cuLaunchKernel");
  find(&d.sync, lib, "cuCtxSynchronize");
  return d;
}

Driver by_proc_address(void* lib) {
  using GetProc = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
  auto get = reinterpret_cast<GetProc>(dlsym(lib, "cuGetProcAddress_v2"));
  Driver d;
  if (get == nullptr) return d;
  auto find = [&](auto* out, const char* name, cuuint64_t flags = CU_GET_PROC_ADDRESS_DEFAULT) {
    void* p = nullptr;
    CUdriverProcAddressQueryResult status{};
    if (get(name, &p, CUDA_VERSION, flags, &status) == CUDA_SUCCESS) *out = reinterpret_cast<decltype(+*out)>(p);
  };
  find(&d.init, "cuInit");
  find(&d.device_get, "cuDeviceGet");
  find(&d.primary_ctx, "cuDevicePrimaryCtxRetain");
  find(&d.set_current, "cuCtxSetCurrent");
  find(&d.mem_alloc, "cuMemAlloc");
  find(&d.mem_managed, "cuMemAllocManaged");
  find(&d.mem_async, "cuMemAllocAsync", CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
  find(&d.mem_pitch, "cuMemAllocPitch");
  find(&d.mem_free, "cuMemFree");
  find(&d.mem_create, "cuMemCreate");
  find(&d.mem_release, "cuMemRelease");
  find(&d.mem_info, "cuMemGetInfo");
  find(&d.total_mem, "cuDeviceTotalMem");
  find(&d.launch, "cuLaunchKernel", CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
  find(&d.sync, "cuCtxSynchronize");
  return d;
}

double now_s() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

void print_result(const char* op, CUresult r, const std::string& more = "") {
  std::printf("{\"op\": \"%s\", \"result\": %d%s}\n", op, static_cast<int>(r), more.c_str());
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: cuda_client linked|dlsym|procaddress OP...\n");
    return 2;
  }
  const std::string mode = argv[1];
  Driver d;
#ifdef CUDA_CLIENT_LINKED
  if (mode == "linked") d = linked();
#endif
  if (mode == "dlsym" || mode == "procaddress") {
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      std::fprintf(stderr, "cuda_client: %s\n", dlerror());
      return 3;
    }
    d = mode == "dlsym" ? by_dlsym(lib) : by_proc_address(lib);
  }
  if (d.init == nullptr || d.mem_alloc == nullptr || d.launch == nullptr) {
    std::fprintf(stderr, "cuda_client: mode %s found no driver\n", mode.c_str());
    return 3;
  }
  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  if (d.init(0) != CUDA_SUCCESS || d.device_get(&dev, 0) != CUDA_SUCCESS || d.primary_ctx(&ctx, dev) != CUDA_SUCCESS ||
      d.set_current(ctx) != CUDA_SUCCESS) {
    std::fprintf(stderr, "cuda_client: no device\n");
    return 4;
  }
  std::vector<std::pair<uint64_t, bool>> held;  // address or handle, is a handle
  for (int i = 2; i < argc; ++i) {
    const std::string op = argv[i];
    const size_t colon = op.find(':');
    const std::string name = op.substr(0, colon);
    const std::string arg = colon == std::string::npos ? "" : op.substr(colon + 1);
    const unsigned long long n = arg.empty() ? 0 : std::strtoull(arg.c_str(), nullptr, 10);
    CUdeviceptr p = 0;
    CUresult r = CUDA_SUCCESS;
    if (name == "alloc" || name == "managed" || name == "async") {
      r = name == "alloc" ? d.mem_alloc(&p, n) : name == "managed" ? d.mem_managed(&p, n, CU_MEM_ATTACH_GLOBAL)
                                                                    : d.mem_async(&p, n, nullptr);
      if (r == CUDA_SUCCESS) held.emplace_back(p, false);
      print_result(name.c_str(), r);
    } else if (name == "create") {
      CUmemAllocationProp prop{};
      prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
      prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
      prop.location.id = dev;
      CUmemGenericAllocationHandle h = 0;
      r = d.mem_create(&h, n, &prop, 0);
      if (r == CUDA_SUCCESS) held.emplace_back(h, true);
      print_result("create", r);
    } else if (name == "pitch") {
      const size_t width = std::strtoull(arg.c_str(), nullptr, 10);
      const size_t height = std::strtoull(arg.substr(arg.find(':') + 1).c_str(), nullptr, 10);
      size_t pitch = 0;
      r = d.mem_pitch(&p, &pitch, width, height, 4);
      if (r == CUDA_SUCCESS) held.emplace_back(p, false);
      print_result("pitch", r, ", \"pitch\": " + std::to_string(pitch));
    } else if (name == "free") {
      if (held.empty()) {
        print_result("free", CUDA_ERROR_INVALID_VALUE);
        continue;
      }
      const auto [what, handle] = held.back();
      held.pop_back();
      print_result("free", handle ? d.mem_release(what) : d.mem_free(what));
    } else if (name == "info") {
      size_t free_bytes = 0, total = 0, device_total = 0;
      r = d.mem_info(&free_bytes, &total);
      (void)d.total_mem(&device_total, dev);
      print_result("info", r, ", \"free\": " + std::to_string(free_bytes) + ", \"total\": " + std::to_string(total) +
                                  ", \"device_total\": " + std::to_string(device_total));
    } else if (name == "launch") {
      const double until = now_s() + std::strtod(arg.c_str(), nullptr);
      unsigned long long launches = 0;
      while (now_s() < until && r == CUDA_SUCCESS) {
        r = d.launch(nullptr, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr);
        ++launches;
      }
      (void)d.sync();
      print_result("launch", r, ", \"launches\": " + std::to_string(launches));
    } else if (name == "hold") {
      usleep(static_cast<useconds_t>(std::strtod(arg.c_str(), nullptr) * 1e6));
      print_result("hold", CUDA_SUCCESS);
    } else if (name == "dlsym-next") {
      dlerror();
      const bool found = dlsym(RTLD_NEXT, "getpid") == dlsym(RTLD_DEFAULT, "getpid") &&
                         dlsym(RTLD_NEXT, "getpid") != nullptr;
      dlerror();
      const bool missing = dlsym(RTLD_NEXT, "mlos_no_such_symbol") == nullptr && dlerror() != nullptr;
      print_result("dlsym-next", found && missing ? CUDA_SUCCESS : CUDA_ERROR_UNKNOWN);
    } else if (name == "fork") {
      const pid_t child = fork();
      if (child == 0) {
        CUdeviceptr q = 0;
        _exit(d.mem_alloc(&q, n) == CUDA_SUCCESS ? 0 : 1);
      }
      int status = 0;
      waitpid(child, &status, 0);
      print_result("fork", WIFEXITED(status) && WEXITSTATUS(status) == 0 ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY);
    } else {
      std::fprintf(stderr, "cuda_client: unknown operation %s\n", op.c_str());
      return 2;
    }
  }
  return 0;
}
