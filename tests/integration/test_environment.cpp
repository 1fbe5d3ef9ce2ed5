// SPDX-License-Identifier: Apache-2.0
// Gives each integration test process a private ledger directory, created
// under $MLOS_RUNTIME_DIR when set (ctest sets one per build) or /tmp, so
// tests that ctest runs in parallel never see each other's claims and a
// developer running the binary by hand never touches /run/mlos. Runs before
// main() and so before libmlos reads the variable.
#include <stdlib.h>

#include <filesystem>
#include <string>

namespace {
struct PrivateRuntimeDir {
  PrivateRuntimeDir() {
    const char* parent = getenv("MLOS_RUNTIME_DIR");
    std::string base = parent != nullptr && *parent ? parent : "/tmp";
    std::error_code ignored;  // mkdtemp reports a missing directory below
    std::filesystem::create_directories(base, ignored);
    std::string tmpl = base + "/integration-XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) return;
    dir = tmpl;
    setenv("MLOS_RUNTIME_DIR", dir.c_str(), 1);
  }
  ~PrivateRuntimeDir() {
    std::error_code ignored;
    if (!dir.empty()) std::filesystem::remove_all(dir, ignored);
  }
  std::string dir;
} private_runtime_dir;
}  // namespace
