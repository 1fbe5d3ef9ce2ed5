// SPDX-License-Identifier: Apache-2.0
// Fuzz target: mlosd's registry loader (snapshot + journal). The input is
// split at its first NUL: the part before is the snapshot file, the rest
// the journal. Properties: never crash or throw; a registry that loads has
// ids unique and below next_id, within the 2^53 bound, and each record a
// positive pid and some CPUs.
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "daemon/registry_store.h"

namespace {

const std::string& dir() {
  static const std::string d = [] {
    std::string tmpl = (std::filesystem::temp_directory_path() / "mlos-fuzz-registry-XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) abort();
    return tmpl;
  }();
  return d;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const size_t nul = input.find('\0');
  std::ofstream(dir() + "/registry.json", std::ios::binary | std::ios::trunc) << input.substr(0, nul);
  std::ofstream(dir() + "/registry.journal", std::ios::binary | std::ios::trunc)
      << (nul == std::string::npos ? std::string() : input.substr(nul + 1));
  mlos::daemon::RegistryStore store(dir());
  auto loaded = store.load();
  if (!loaded || !loaded->has_value()) return 0;
  const auto& r = **loaded;
  if (r.next_id == 0 || r.next_id > mlos::daemon::JobRegistry::kMaxJobId + 1) abort();
  std::set<uint64_t> ids;
  for (const auto& j : r.jobs) {
    if (j.id == 0 || j.id >= r.next_id || !ids.insert(j.id).second || j.owner.pid <= 0 || j.cpus.empty()) abort();
  }
  return 0;
}
