// SPDX-License-Identifier: Apache-2.0
#include "gpushare/real_driver.h"

#include <dlfcn.h>

#include <cstring>

namespace mlos::gpushare {

void* glibc_dlsym_address() {
  // dlvsym is not interposed: it finds libc's dlsym under its version
  // (2.34 moved it from libdl into libc; older glibc only has 2.2.5).
  static void* fn = [] {
    void* f = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
    return f != nullptr ? f : dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
  }();
  return fn;
}

void* real_dlsym(void* handle, const char* symbol) {
  using DlsymFn = void* (*)(void*, const char*);
  auto fn = reinterpret_cast<DlsymFn>(glibc_dlsym_address());
  return fn == nullptr ? nullptr : fn(handle, symbol);
}

void* real_driver_symbol(const char* name) {
  static void* driver = [] {
    void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    return h != nullptr ? h : dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  }();
  return driver == nullptr ? nullptr : real_dlsym(driver, name);
}

}  // namespace mlos::gpushare
