// SPDX-License-Identifier: Apache-2.0
#include "collectives/nccl_library.h"

#include <dlfcn.h>

#include <cstdlib>
#include <type_traits>

#include "os/environment.h"

namespace mlos::collectives {

namespace {

std::string version_text(int v) {
  // NCCL_VERSION(X, Y, Z) is X*10000 + Y*100 + Z from 2.9 on.
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
}

void load(NcclLibrary& n) {
  const char* chosen = os::env("MLOS_NCCL_LIBRARY");
  void* library = nullptr;
  std::string name;
  if (chosen != nullptr && *chosen != '\0') {
    name = chosen;
    library = dlopen(chosen, RTLD_NOW | RTLD_LOCAL);
  } else {
    name = "libnccl.so.2";
    library = dlopen("libnccl.so.2", RTLD_NOW | RTLD_NOLOAD);
    if (library == nullptr) library = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
  }
  if (library == nullptr) {
    const char* why = dlerror();
    n.why_not = "NCCL could not be loaded (" + name + ": " + (why ? why : "not found") + ")";
    return;
  }
  std::string missing;
  auto bind = [library, &missing](auto& fn, const char* symbol) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(library, symbol));
    if (fn == nullptr && missing.empty()) missing = symbol;
    return fn != nullptr;
  };
  ncclResult_t (*get_version)(int*) = nullptr;
  const bool all = bind(get_version, "ncclGetVersion") & bind(n.get_unique_id, "ncclGetUniqueId") &
                   bind(n.comm_init_rank_config, "ncclCommInitRankConfig") &
                   bind(n.comm_get_async_error, "ncclCommGetAsyncError") & bind(n.comm_destroy, "ncclCommDestroy") &
                   bind(n.comm_abort, "ncclCommAbort") & bind(n.all_reduce, "ncclAllReduce") &
                   bind(n.get_error_string, "ncclGetErrorString");
  if (get_version == nullptr || get_version(&n.version) != ncclSuccess) {
    n.why_not = name + " has no working ncclGetVersion";
    return;
  }
  if (n.version < NcclLibrary::kOldestVersion) {
    n.why_not = name + " is NCCL " + version_text(n.version) + "; mlOS needs " +
                version_text(NcclLibrary::kOldestVersion) + " or newer (nonblocking communicator creation)";
  } else if (!all) {
    n.why_not = name + " (NCCL " + version_text(n.version) + ") has no " + missing;
  }
}

}  // namespace

const NcclLibrary& NcclLibrary::get() {
  static const NcclLibrary* library = [] {
    auto* n = new NcclLibrary;  // never destroyed: communicators use it until exit
    load(*n);
    return n;
  }();
  return *library;
}

std::string NcclLibrary::describe(ncclResult_t r) const {
  const char* text = get_error_string != nullptr ? get_error_string(r) : nullptr;
  return "NCCL error " + std::to_string(static_cast<int>(r)) + " (" + (text ? text : "?") + ")";
}

}  // namespace mlos::collectives
