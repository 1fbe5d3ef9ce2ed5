// SPDX-License-Identifier: Apache-2.0
#include "gpushare/real_driver.h"

#include <dlfcn.h>
#include <link.h>

#include <cstring>

namespace mlos::gpushare {

void* real_dlsym(void* handle, const char* symbol) {
  using DlsymFn = void* (*)(void*, const char*);
  // dlvsym is not interposed: it finds libc's dlsym under its version
  // (2.34 moved it from libdl into libc; older glibc only has 2.2.5).
  static DlsymFn fn = [] {
    auto f = reinterpret_cast<DlsymFn>(dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34"));
    if (f == nullptr) f = reinterpret_cast<DlsymFn>(dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5"));
    return f;
  }();
  return fn == nullptr ? nullptr : fn(handle, symbol);
}

void* real_driver_symbol(const char* name) {
  static void* driver = [] {
    void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    return h != nullptr ? h : dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  }();
  return driver == nullptr ? nullptr : real_dlsym(driver, name);
}

void* next_symbol_after(const void* caller, const char* symbol) {
  Dl_info info{};
  link_map* map = nullptr;
  if (dladdr1(caller, &info, reinterpret_cast<void**>(&map), RTLD_DL_LINKMAP) == 0 || map == nullptr) {
    return real_dlsym(RTLD_NEXT, symbol);
  }
  for (link_map* m = map->l_next; m != nullptr; m = m->l_next) {
    void* h = dlopen(m->l_name, RTLD_LAZY | RTLD_NOLOAD);
    if (h == nullptr) continue;
    void* sym = real_dlsym(h, symbol);
    dlclose(h);
    if (sym == nullptr) continue;
    // A handle's lookup also searches the object's dependencies: keep the
    // symbol only if this object defines it.
    Dl_info where{};
    link_map* def = nullptr;
    if (dladdr1(sym, &where, reinterpret_cast<void**>(&def), RTLD_DL_LINKMAP) != 0 && def == m) return sym;
  }
  return nullptr;
}

}  // namespace mlos::gpushare
