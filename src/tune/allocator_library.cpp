// SPDX-License-Identifier: Apache-2.0
#include "tune/allocator_library.h"

#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <sstream>

#include "os/environment.h"

namespace mlos::tune {

namespace {

struct Sonames {
  const char* allocator;
  const char* package;
  std::vector<const char*> files;
};

// tcmalloc_minimal first: the full tcmalloc adds a heap profiler a
// training job does not use, and Debian's libgoogle-perftools4 pulls in
// libunwind for it.
const Sonames kKnown[] = {
    {"tcmalloc", "libtcmalloc-minimal4", {"libtcmalloc_minimal.so.4", "libtcmalloc.so.4"}},
    {"jemalloc", "libjemalloc2", {"libjemalloc.so.2"}},
};

const Sonames* known(const std::string& allocator) {
  for (const auto& k : kKnown) {
    if (allocator == k.allocator) return &k;
  }
  return nullptr;
}

std::string dir_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos || slash == 0 ? "/" : path.substr(0, slash);
}

// The directory of the libc this process runs with (e.g.
// /lib/x86_64-linux-gnu), found from a symbol it defines.
std::string libc_dir() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&::getpid), &info) == 0 || info.dli_fname == nullptr) return "";
  return dir_of(info.dli_fname);
}

}  // namespace

std::vector<std::string> allocator_search_dirs() {
  std::vector<std::string> dirs;
  auto add = [&](const std::string& d) {
    if (d.empty()) return;
    for (const auto& have : dirs) {
      if (have == d) return;
    }
    dirs.push_back(d);
  };
  if (const char* given = os::env("MLOS_ALLOCATOR_DIRS"); given != nullptr) {
    std::stringstream in(given);
    for (std::string d; std::getline(in, d, ':');) add(d);
    return dirs;
  }
  const std::string libc = libc_dir();
  add(libc);
  // /lib is /usr/lib on merged-/usr systems, and packages install under /usr.
  if (libc.rfind("/lib/", 0) == 0) add("/usr" + libc);
  if (libc.rfind("/usr/lib/", 0) == 0) add(libc.substr(4));
  add("/usr/local/lib");
  return dirs;
}

std::optional<std::string> find_allocator(const std::string& allocator, const std::vector<std::string>& dirs) {
  const Sonames* k = known(allocator);
  if (k == nullptr) return std::nullopt;
  for (const auto& dir : dirs) {
    for (const char* file : k->files) {
      const std::string path = dir + "/" + file;
      if (::access(path.c_str(), R_OK) == 0) return path;
    }
  }
  return std::nullopt;
}

std::string allocator_package(const std::string& allocator) {
  const Sonames* k = known(allocator);
  return k == nullptr ? "" : k->package;
}

bool preloads_an_allocator(const std::string& preload) {
  for (const char* name : {"tcmalloc", "jemalloc", "mimalloc"}) {
    if (preload.find(name) != std::string::npos) return true;
  }
  return false;
}

}  // namespace mlos::tune
