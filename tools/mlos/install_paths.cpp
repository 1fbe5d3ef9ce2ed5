// SPDX-License-Identifier: Apache-2.0
#include "install_paths.h"

#include "os/install_location.h"

namespace mlos::cli {

std::string policy_host() {
  auto found = os::locate_install_part(InstallPart::kPolicyHost, "MLOS_POLICY_HOST");
  return found ? *found : os::configured_install_part_path(InstallPart::kPolicyHost);
}

std::string default_policy_dir() {
  auto found = os::locate_install_part(InstallPart::kPolicyDir, "MLOS_POLICY_DIR");
  return found ? *found : os::configured_install_part_path(InstallPart::kPolicyDir);
}

std::string gpushare_library() {
  auto found = os::locate_install_part(InstallPart::kGpushareLibrary, "MLOS_GPUSHARE_LIBRARY");
  return found ? *found : "";
}

std::vector<std::string> mlosd_candidates() {
  std::vector<std::string> out;
  if (const std::string dir = os::own_binary_dir(); !dir.empty()) {
    out = install_part_candidates(InstallPart::kDaemon, dir, os::configured_install_dirs());
  }
  out.push_back(os::configured_install_part_path(InstallPart::kDaemon));
  return out;
}

}  // namespace mlos::cli
