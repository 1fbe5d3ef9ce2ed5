// SPDX-License-Identifier: Apache-2.0
#include "core/install_layout.h"

#include <algorithm>

namespace mlos {

namespace {

std::string base_name(const std::string& dir) {
  const size_t slash = dir.rfind('/');
  return slash == std::string::npos ? dir : dir.substr(slash + 1);
}

std::string parent_of(const std::string& dir) {
  const size_t slash = dir.rfind('/');
  return slash == std::string::npos ? "" : dir.substr(0, slash);
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

const char* install_part_file(InstallPart part) {
  switch (part) {
    case InstallPart::kPolicyHost: return "mlos-policyhost";
    case InstallPart::kPolicyDir: return "policies";
    case InstallPart::kDataloadHelper: return "mlos-dataload";
    case InstallPart::kGpushareLibrary: return "libmlos-gpushare.so";
    case InstallPart::kDaemon: return "mlosd";
  }
  return "";
}

std::string install_part_path(InstallPart part, const std::string& prefix, const InstallDirs& dirs) {
  const std::string file = install_part_file(part);
  switch (part) {
    case InstallPart::kPolicyHost:
    case InstallPart::kDataloadHelper:
      return dirs.libexecdir.empty() ? "" : prefix + "/" + dirs.libexecdir + "/mlos/" + file;
    case InstallPart::kPolicyDir:
    case InstallPart::kGpushareLibrary:
      return dirs.libdir.empty() ? "" : prefix + "/" + dirs.libdir + "/mlos/" + file;
    case InstallPart::kDaemon:
      return dirs.sbindir.empty() ? "" : prefix + "/" + dirs.sbindir + "/" + file;
  }
  return "";
}

std::optional<std::string> prefix_of(const std::string& dir, const std::string& sub) {
  if (sub.empty() || sub[0] == '/') return std::nullopt;
  if (!ends_with(dir, "/" + sub)) return std::nullopt;
  return dir.substr(0, dir.size() - sub.size() - 1);
}

std::vector<std::string> install_part_candidates(InstallPart part, const std::string& dir, const InstallDirs& dirs) {
  std::vector<std::string> out;
  auto add = [&out](const std::string& path) {
    if (!path.empty() && std::find(out.begin(), out.end(), path) == out.end()) out.push_back(path);
  };
  const std::string file = install_part_file(part);
  // An installed prefix: the binary sits in one of its install directories.
  const std::string libexec_mlos = dirs.libexecdir.empty() ? "" : dirs.libexecdir + "/mlos";
  for (const std::string* sub : {&dirs.bindir, &dirs.sbindir, &dirs.libdir, &libexec_mlos}) {
    if (auto prefix = prefix_of(dir, *sub)) add(install_part_path(part, *prefix, dirs));
  }
  // The Python package: libmlos.so.0 in mlos_training/, the programs and
  // policies in mlos_training/mlos/.
  if (base_name(dir) == "mlos_training") add(dir + "/mlos/" + file);
  if (base_name(dir) == "mlos" && base_name(parent_of(dir)) == "mlos_training") add(dir + "/" + file);
  // A build tree: programs in bin/, libraries in lib/, policies beside them.
  if (base_name(dir) == "bin" || base_name(dir) == "lib") {
    const std::string build = parent_of(dir);
    switch (part) {
      case InstallPart::kPolicyDir: add(build + "/" + file); break;
      case InstallPart::kGpushareLibrary: add(build + "/lib/" + file); break;
      default: add(build + "/bin/" + file); break;
    }
  }
  return out;
}

}  // namespace mlos
