// Gives the integration tests a private ledger directory when ctest has not
// set one, so a developer running the binary by hand never touches
// /run/mlos. Runs before main() and before libmlos reads the variable.
#include <stdlib.h>

#include <string>

namespace {
struct PrivateRuntimeDir {
  PrivateRuntimeDir() {
    if (getenv("MLOS_RUNTIME_DIR") != nullptr) return;
    char tmpl[] = "/tmp/mlos-integration-XXXXXX";
    if (mkdtemp(tmpl) != nullptr) setenv("MLOS_RUNTIME_DIR", tmpl, 1);
  }
} private_runtime_dir;
}  // namespace
