// SPDX-License-Identifier: Apache-2.0
#include "os/ledger_file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include "os/durable_file.h"
#include "os/environment.h"
#include "os/own_directory.h"
#include "os/process_info.h"
#include "os/unique_fd.h"

namespace mlos::os {

namespace {

Result<ClaimLedger> parse_file(const std::string& path) {
  auto text = read_whole_file(path);
  if (!text) return text.error();
  auto ledger = ClaimLedger::parse(text->value_or(""));
  if (!ledger) {
    return make_error(MLOS_ERR_STATE_CORRUPT, path + ": " + ledger.error().message +
                                                  ". Nothing was changed. To recover, move the file aside "
                                                  "(claims it held are then forgotten) and retry.");
  }
  return ledger;
}

// Drops every claim of a ledger written before the last reboot; true if any.
bool forget_if_rebooted(ClaimLedger& ledger) {
  const std::string now = current_boot_id();
  if (ledger.boot_id.empty() || now.empty() || ledger.boot_id == now || ledger.claims.empty()) return false;
  ledger.claims.clear();
  return true;
}

}  // namespace

std::string default_runtime_dir() {
  if (const char* d = os::env("MLOS_RUNTIME_DIR"); d && *d) return d;
  if (geteuid() == 0) return "/run/mlos";
  if (const char* x = std::getenv("XDG_RUNTIME_DIR"); x && *x) return std::string(x) + "/mlos";
  return "/tmp/mlos-" + std::to_string(geteuid());
}

Status LedgerFile::ensure_dir() const { return make_own_directory(dir_, 0755, "runtime directory"); }

Status LedgerFile::update(const std::function<Result<bool>(ClaimLedger&)>& update) {
  if (Status s = ensure_dir(); !s) return s;
  std::string lock_path = dir_ + "/claims.lock";
  UniqueFd lock(open(lock_path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644));
  if (lock.get() < 0) return make_sys_error(errno, "cannot open " + lock_path);
  while (flock(lock.get(), LOCK_EX) != 0) {
    if (errno != EINTR) return make_sys_error(errno, "cannot lock " + lock_path);
  }
  // The lock is released when `lock` closes.
  auto ledger = parse_file(path());
  if (!ledger) return ledger.error();
  bool pruned = forget_if_rebooted(*ledger);
  const std::vector<Claim> dead = ledger->prune([](const ProcessId& id) { return is_alive(id); });
  pruned |= !dead.empty();
  if (on_pruned_) {
    for (const Claim& c : dead) on_pruned_(c);
  }
  ledger->boot_id = current_boot_id();
  auto changed = update(*ledger);
  if (!changed) {
    if (pruned) (void)replace_file_durably(dir_, path(), ledger->serialize());
    return changed.error();
  }
  if (*changed || pruned) return replace_file_durably(dir_, path(), ledger->serialize());
  return Status::Ok();
}

Result<ClaimLedger> LedgerFile::read() const {
  struct stat st {};
  if (stat(dir_.c_str(), &st) != 0 && errno == ENOENT) return ClaimLedger{};
  // Another user who owns (or may write to) the directory could forge
  // claims or plant links.
  if (Status s = check_own_directory(dir_, "runtime directory"); !s) return s.error();
  auto ledger = parse_file(path());
  if (!ledger) return ledger.error();
  forget_if_rebooted(*ledger);
  (void)ledger->prune([](const ProcessId& id) { return is_alive(id); });
  return ledger;
}

}  // namespace mlos::os
