// SPDX-License-Identifier: Apache-2.0
#include "policy/policy_catalog.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <memory>

#include "os/trusted_path.h"
#include "policy/policy_protocol.h"

namespace mlos::policy {

namespace {

constexpr std::string_view kSuffix = ".so";

}  // namespace

const CatalogEntry* PolicyCatalog::find(const std::string& name) const {
  for (const auto& p : policies) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

Result<PolicyCatalog> scan_policy_dir(const std::string& dir, std::optional<uid_t> also_trusted) {
  PolicyCatalog catalog;
  catalog.dir = dir;
  struct stat st{};
  if (stat(dir.c_str(), &st) != 0) {
    if (errno == ENOENT) return catalog;
    return make_sys_error(errno, "policy directory " + dir);
  }
  if (!S_ISDIR(st.st_mode)) return make_error(MLOS_ERR_INVALID_ARGUMENT, "policy directory " + dir + " is not a directory");
  if (std::string why = os::untrusted_owner_reason(st, also_trusted); !why.empty()) {
    return make_error(MLOS_ERR_PERMISSION, "policy directory " + dir + " is " + why + ": no policy is loaded from it");
  }
  // And every directory above it: whoever may rename one may swap the
  // whole directory for theirs.
  if (std::string why = os::untrusted_reason(dir, also_trusted); !why.empty()) {
    return make_error(MLOS_ERR_PERMISSION, "policy directory " + dir + " is not trusted (" + why +
                                               "): no policy is loaded from it");
  }
  std::unique_ptr<DIR, int (*)(DIR*)> d(opendir(dir.c_str()), closedir);
  if (!d) return make_sys_error(errno, "policy directory " + dir);
  while (dirent* e = readdir(d.get())) {
    const std::string file = e->d_name;
    if (file.size() <= kSuffix.size() || file.compare(file.size() - kSuffix.size(), kSuffix.size(), kSuffix) != 0) {
      continue;  // not a policy's file (a README, a directory)
    }
    const std::string path = dir + "/" + file, name = file.substr(0, file.size() - kSuffix.size());
    struct stat fs{};
    if (lstat(path.c_str(), &fs) != 0) continue;  // gone since readdir
    std::string why;
    if (S_ISLNK(fs.st_mode)) {
      why = "a symlink (install the file itself)";
    } else if (!S_ISREG(fs.st_mode)) {
      why = "not a regular file";
    } else if (!valid_policy_name(name)) {
      why = "'" + name + "' is not a policy name ([a-z0-9-]{1,63})";
    } else {
      why = os::untrusted_owner_reason(fs, also_trusted);
    }
    if (why.empty()) {
      catalog.policies.push_back(CatalogEntry{name, path});
    } else {
      catalog.skipped.push_back(SkippedFile{path, why});
    }
  }
  std::sort(catalog.policies.begin(), catalog.policies.end(),
            [](const CatalogEntry& a, const CatalogEntry& b) { return a.name < b.name; });
  std::sort(catalog.skipped.begin(), catalog.skipped.end(),
            [](const SkippedFile& a, const SkippedFile& b) { return a.path < b.path; });
  return catalog;
}

Error unknown_policy(const PolicyCatalog& catalog, const std::string& name) {
  std::string message = "no policy '" + name + "' in " + catalog.dir;
  for (const auto& s : catalog.skipped) {
    if (s.path == catalog.dir + "/" + name + ".so") message += " (" + s.path + " was skipped: " + s.why + ")";
  }
  return make_error(MLOS_ERR_NOT_FOUND, message);
}

}  // namespace mlos::policy
