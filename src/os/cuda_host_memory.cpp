// SPDX-License-Identifier: Apache-2.0
#include "os/cuda_host_memory.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <string>

namespace mlos::os {

namespace {

using RegisterFn = int (*)(void*, size_t, unsigned);
using UnregisterFn = int (*)(void*);
using ErrorStringFn = const char* (*)(int);
constexpr unsigned kHostRegisterPortable = 1;

struct CudaRuntime {
  RegisterFn host_register = nullptr;
  UnregisterFn host_unregister = nullptr;
  ErrorStringFn error_string = nullptr;
  std::string load_error;  // why it could not be loaded
};

// The first runtime found: the soname a program or torch already loaded
// wins (RTLD_NOLOAD), then the usual names, then the toolkit's directory.
const CudaRuntime& runtime() {
  static CudaRuntime rt;
  static std::once_flag once;
  std::call_once(once, [] {
    const char* names[] = {"libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0", "libcudart.so"};
    void* lib = nullptr;
    for (const char* n : names) {
      if ((lib = dlopen(n, RTLD_NOW | RTLD_NOLOAD))) break;
    }
    for (size_t i = 0; !lib && i < std::size(names); ++i) lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char* home = std::getenv("CUDA_HOME");
      const std::string dir = std::string(home && *home ? home : "/usr/local/cuda") + "/lib64/libcudart.so";
      lib = dlopen(dir.c_str(), RTLD_NOW | RTLD_LOCAL);
    }
    if (!lib) {
      rt.load_error = "no CUDA runtime (libcudart.so) could be loaded";
      return;
    }
    rt.host_register = reinterpret_cast<RegisterFn>(dlsym(lib, "cudaHostRegister"));
    rt.host_unregister = reinterpret_cast<UnregisterFn>(dlsym(lib, "cudaHostUnregister"));
    rt.error_string = reinterpret_cast<ErrorStringFn>(dlsym(lib, "cudaGetErrorString"));
    if (!rt.host_register || !rt.host_unregister || !rt.error_string) {
      rt.load_error = "the CUDA runtime found lacks cudaHostRegister";
      rt.host_register = nullptr;
    }
  });
  return rt;
}

}  // namespace

Status cuda_register_host(void* addr, uint64_t bytes) {
  const CudaRuntime& rt = runtime();
  if (!rt.host_register) return make_error(MLOS_ERR_UNSUPPORTED, "CUDA pinned memory: " + rt.load_error);
  const int err = rt.host_register(addr, bytes, kHostRegisterPortable);
  if (err != 0) {
    return make_error(MLOS_ERR_UNSUPPORTED, "cudaHostRegister failed with CUDA error " + std::to_string(err) + ": " +
                                                rt.error_string(err));
  }
  return Status::Ok();
}

void cuda_unregister_host(void* addr) {
  const CudaRuntime& rt = runtime();
  if (rt.host_unregister) rt.host_unregister(addr);
}

}  // namespace mlos::os
