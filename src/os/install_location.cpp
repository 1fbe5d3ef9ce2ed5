// SPDX-License-Identifier: Apache-2.0
#include "os/install_location.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <vector>

#include "os/durable_file.h"
#include "os/environment.h"
#include "os/process_info.h"
#include "os/trusted_path.h"

// Set on this file by CMakeLists.txt: CMAKE_INSTALL_PREFIX, and the install
// directories relative to it ("" where one was configured absolute) and
// in full.
#if !defined(MLOS_INSTALL_PREFIX) || !defined(MLOS_INSTALL_BINDIR) || !defined(MLOS_INSTALL_SBINDIR) || \
    !defined(MLOS_INSTALL_LIBDIR) || !defined(MLOS_INSTALL_LIBEXECDIR) || !defined(MLOS_INSTALL_FULL_SBINDIR) || \
    !defined(MLOS_INSTALL_FULL_LIBDIR) || !defined(MLOS_INSTALL_FULL_LIBEXECDIR)
#error "the install directories must be defined by the build (CMakeLists.txt)"
#endif

namespace mlos::os {

namespace {

bool exists_as(InstallPart part, const std::string& path) {
  struct stat st{};
  if (path.empty() || stat(path.c_str(), &st) != 0) return false;
  switch (part) {
    case InstallPart::kPolicyDir: return S_ISDIR(st.st_mode);
    case InstallPart::kGpushareLibrary: return S_ISREG(st.st_mode) && access(path.c_str(), R_OK) == 0;
    default: return S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
  }
}

std::string real_path(const std::string& path) {
  char* real = realpath(path.c_str(), nullptr);
  if (real == nullptr) return path;
  std::string out = real;
  free(real);
  return out;
}

std::vector<std::string> sibling_candidates(InstallPart part) {
  const std::string dir = own_binary_dir();
  return dir.empty() ? std::vector<std::string>{} : install_part_candidates(part, dir, configured_install_dirs());
}

}  // namespace

std::string own_binary_dir() {
  auto maps = read_whole_file("/proc/self/maps");
  if (!maps || !maps->has_value()) return "";
  auto file = parse_maps_file_at(**maps, reinterpret_cast<uintptr_t>(&own_binary_dir));
  if (!file) return "";
  const size_t slash = file->rfind('/');
  return slash == 0 ? "/" : file->substr(0, slash);
}

InstallDirs configured_install_dirs() {
  return InstallDirs{MLOS_INSTALL_BINDIR, MLOS_INSTALL_SBINDIR, MLOS_INSTALL_LIBDIR, MLOS_INSTALL_LIBEXECDIR};
}

std::string configured_install_part_path(InstallPart part) {
  // The full directories as if relative to the root (prefix ""), so one
  // function spells a part's path in both cases.
  const InstallDirs full{"", std::string(MLOS_INSTALL_FULL_SBINDIR).substr(1),
                         std::string(MLOS_INSTALL_FULL_LIBDIR).substr(1),
                         std::string(MLOS_INSTALL_FULL_LIBEXECDIR).substr(1)};
  return install_part_path(part, "", full);
}

Result<std::string> locate_install_part(InstallPart part, const char* env_var) {
  std::vector<std::string> candidates;
  const char* from_env = env_var != nullptr ? env(env_var) : nullptr;
  const bool given = from_env != nullptr && *from_env != '\0';
  if (given) {
    candidates = {from_env};
  } else {
    candidates = sibling_candidates(part);
    candidates.push_back(configured_install_part_path(part));
  }
  std::string looked;
  for (const auto& c : candidates) {
    if (exists_as(part, c)) return real_path(c);
    looked += (looked.empty() ? "" : ", ") + c;
  }
  std::string message = std::string("no ") + install_part_file(part) + " found: looked at " + looked;
  if (env_var != nullptr) message += given ? std::string(" (from $") + env_var + ")" : std::string("; set $") + env_var;
  return make_error(MLOS_ERR_UNSUPPORTED, message);
}

std::string locate_trusted_install_part(InstallPart part, std::string* note) {
  note->clear();
  const std::string configured = configured_install_part_path(part);
  for (const auto& c : sibling_candidates(part)) {
    if (!exists_as(part, c)) continue;
    const std::string found = real_path(c);
    if (found == real_path(configured)) return configured;
    if (std::string why = untrusted_reason(found); !why.empty()) {
      *note = found + " is not used: " + why + "; using " + configured;
      return configured;
    }
    return found;
  }
  return configured;
}

}  // namespace mlos::os
