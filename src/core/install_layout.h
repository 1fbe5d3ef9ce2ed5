/* SPDX-License-Identifier: Apache-2.0 */
// Where mlOS's parts lie relative to one another, in the three layouts a
// binary of mlOS runs from, so that the running binary finds the others
// from its own real location whatever the prefix (docs/releases.md,
// "Relocatable installs"):
//  - an installed prefix P (`cmake --install --prefix P`, the .deb's /usr):
//      P/<bindir>/mlos, P/<sbindir>/mlosd, P/<libdir>/libmlos.so.0,
//      P/<libexecdir>/mlos/{mlos-policyhost,mlos-dataload},
//      P/<libdir>/mlos/{policies/,libmlos-gpushare.so};
//  - the Python package W (site-packages/mlos_training):
//      W/libmlos.so.0, W/mlos/{mlos,mlos-policyhost,mlos-dataload,policies/};
//  - a build tree B:
//      B/bin/{mlos,mlosd,mlos-policyhost,mlos-dataload}, B/lib/libmlos.so.0,
//      B/lib/libmlos-gpushare.so, B/policies/.
// Pure: nothing here looks at the file system (os/install_location.h does).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace mlos {

// A part of mlOS that another part starts, loads or preloads.
enum class InstallPart {
  kPolicyHost,       // mlos-policyhost (libmlos, mlos, mlosd start it)
  kPolicyDir,        // the shipped policy modules' directory
  kDataloadHelper,   // mlos-dataload (libmlos starts it)
  kGpushareLibrary,  // libmlos-gpushare.so (mlos run preloads it)
  kDaemon,           // mlosd (mlos daemon runs it)
};

// "mlos-policyhost", "policies", "mlos-dataload", "libmlos-gpushare.so", "mlosd".
const char* install_part_file(InstallPart part);

// The install directories relative to the prefix, as GNUInstallDirs names
// them ("bin", "sbin", "lib" or "lib/x86_64-linux-gnu", "libexec"). An
// empty one was configured absolute: that directory does not move with
// the prefix, and no binary is found relative to it.
struct InstallDirs {
  std::string bindir, sbindir, libdir, libexecdir;
};

// `part`'s path under the prefix `prefix` ("" when its directory is empty
// in `dirs`).
std::string install_part_path(InstallPart part, const std::string& prefix, const InstallDirs& dirs);

// The prefix P for which P/`sub` is `dir` (both without trailing slashes);
// nullopt when `sub` is empty or absolute, or `dir` does not end in "/sub".
// "/usr/bin" with "bin" is "/usr"; "/bin" with "bin" is "" (the root).
std::optional<std::string> prefix_of(const std::string& dir, const std::string& sub);

// Where `part` may lie for a binary of mlOS whose real directory is `dir`
// (absolute, resolved), most specific first and without repeats: under
// each prefix that `dir` is an install directory of (bindir, sbindir,
// libdir, libexecdir/mlos), then in the Python package (`dir` is
// .../mlos_training or .../mlos_training/mlos), then in a build tree (`dir`
// is B/bin or B/lib). The paths may not exist: the caller tries them in
// order.
std::vector<std::string> install_part_candidates(InstallPart part, const std::string& dir, const InstallDirs& dirs);

}  // namespace mlos
