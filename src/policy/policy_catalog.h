/* SPDX-License-Identifier: Apache-2.0 */
// Which policies a host may load: the shared objects in a policy directory
// that only trusted users can have written. mlosd trusts root alone; the
// library in embedded mode also trusts the calling user (a pip install into
// a user's venv). Every file that looks like a policy but is not trusted is
// listed with the reason.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace mlos::policy {

struct CatalogEntry {
  std::string name;  // the file's name without ".so"
  std::string path;
};

struct SkippedFile {
  std::string path;
  std::string why;
};

struct PolicyCatalog {
  std::string dir;
  std::vector<CatalogEntry> policies;  // by name
  std::vector<SkippedFile> skipped;
  const CatalogEntry* find(const std::string& name) const;
};

// Scans `dir` for "<name>.so". A file is a policy when it is a regular file
// (not a symlink), owned by root or by `also_trusted`, and writable by
// nobody else (no group or other write bit), and its name is a policy name
// (valid_policy_name in policy_protocol.h). The directory must pass the same ownership test, or
// PERMISSION names it (whoever may write it may plant a policy); a missing
// directory is an empty catalog (NOT_FOUND is for a requested name).
Result<PolicyCatalog> scan_policy_dir(const std::string& dir, std::optional<uid_t> also_trusted = std::nullopt);

// NOT_FOUND naming the policy and the directory (and why a file of that
// name was skipped, if one was).
Error unknown_policy(const PolicyCatalog& catalog, const std::string& name);

}  // namespace mlos::policy
