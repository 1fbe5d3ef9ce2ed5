#include "os/ledger_file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include "os/process_info.h"

namespace mlos::os {

namespace {

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

Result<std::string> read_all(const std::string& path) {
  Fd fd(open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (fd.get() < 0) {
    if (errno == ENOENT) return std::string();
    return make_sys_error(errno, "cannot read " + path);
  }
  std::string out;
  char buf[8192];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return make_sys_error(errno, "cannot read " + path);
    if (n == 0) return out;
    out.append(buf, static_cast<size_t>(n));
  }
}

Status write_atomically(const std::string& dir, const std::string& path, const std::string& data) {
  // The directory is trusted (ensure_dir) and the caller holds the ledger
  // lock, so a leftover temp file can only be a crashed writer's: remove it.
  // O_EXCL|O_NOFOLLOW still refuses to write through anything planted.
  std::string tmp = path + ".tmp." + std::to_string(getpid());
  int raw = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (raw < 0 && errno == EEXIST && unlink(tmp.c_str()) == 0) {
    raw = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  }
  Fd fd(raw);
  if (fd.get() < 0) return make_sys_error(errno, "cannot create " + tmp);
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = write(fd.get(), data.data() + done, data.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      unlink(tmp.c_str());
      return make_sys_error(err, "cannot write " + tmp);
    }
    done += static_cast<size_t>(n);
  }
  if (fsync(fd.get()) != 0) {
    int err = errno;
    unlink(tmp.c_str());
    return make_sys_error(err, "fsync of " + tmp);
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    unlink(tmp.c_str());
    return make_sys_error(err, "cannot rename " + tmp + " to " + path);
  }
  Fd dfd(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dfd.get() >= 0) fsync(dfd.get());
  return Status::Ok();
}

Result<ClaimLedger> parse_file(const std::string& path) {
  auto text = read_all(path);
  if (!text) return text.error();
  auto ledger = ClaimLedger::parse(*text);
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
  if (const char* d = std::getenv("MLOS_RUNTIME_DIR"); d && *d) return d;
  if (geteuid() == 0) return "/run/mlos";
  if (const char* x = std::getenv("XDG_RUNTIME_DIR"); x && *x) return std::string(x) + "/mlos";
  return "/tmp/mlos-" + std::to_string(geteuid());
}

Status LedgerFile::ensure_dir() const {
  // Create missing components one by one (like mkdir -p).
  for (size_t pos = 1; pos != std::string::npos;) {
    pos = dir_.find('/', pos + 1);
    std::string part = dir_.substr(0, pos);
    if (mkdir(part.c_str(), 0755) != 0 && errno != EEXIST) {
      return make_sys_error(errno, "cannot create runtime directory " + part);
    }
  }
  return check_trusted();
}

Status LedgerFile::check_trusted() const {
  // Another user who owns (or may write to) the directory could forge
  // claims or plant links; /tmp/mlos-<uid> can be created by anyone first.
  struct stat st {};
  if (stat(dir_.c_str(), &st) != 0) return make_sys_error(errno, "cannot stat runtime directory " + dir_);
  if (!S_ISDIR(st.st_mode)) return make_error(MLOS_ERR_SYSTEM, "runtime directory " + dir_ + " is not a directory");
  if (st.st_uid != geteuid() && st.st_uid != 0) {
    return make_error(MLOS_ERR_PERMISSION, "runtime directory " + dir_ + " belongs to uid " +
                                               std::to_string(st.st_uid) +
                                               ", neither this user nor root; refusing to use it");
  }
  if (st.st_mode & (S_IWGRP | S_IWOTH)) {
    return make_error(MLOS_ERR_PERMISSION, "runtime directory " + dir_ +
                                               " is writable by group or others; refusing to use it (chmod go-w)");
  }
  return Status::Ok();
}

Status LedgerFile::update(const std::function<Result<bool>(ClaimLedger&)>& update) {
  if (Status s = ensure_dir(); !s) return s;
  std::string lock_path = dir_ + "/claims.lock";
  Fd lock(open(lock_path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644));
  if (lock.get() < 0) return make_sys_error(errno, "cannot open " + lock_path);
  while (flock(lock.get(), LOCK_EX) != 0) {
    if (errno != EINTR) return make_sys_error(errno, "cannot lock " + lock_path);
  }
  // The lock is released when `lock` closes.
  auto ledger = parse_file(path());
  if (!ledger) return ledger.error();
  bool pruned = forget_if_rebooted(*ledger);
  pruned |= !ledger->prune([](const ProcessId& id) { return is_alive(id); }).empty();
  ledger->boot_id = current_boot_id();
  auto changed = update(*ledger);
  if (!changed) {
    if (pruned) (void)write_atomically(dir_, path(), ledger->serialize());
    return changed.error();
  }
  if (*changed || pruned) return write_atomically(dir_, path(), ledger->serialize());
  return Status::Ok();
}

Result<ClaimLedger> LedgerFile::read() const {
  struct stat st {};
  if (stat(dir_.c_str(), &st) != 0 && errno == ENOENT) return ClaimLedger{};
  if (Status s = check_trusted(); !s) return s.error();
  auto ledger = parse_file(path());
  if (!ledger) return ledger.error();
  forget_if_rebooted(*ledger);
  (void)ledger->prune([](const ProcessId& id) { return is_alive(id); });
  return ledger;
}

}  // namespace mlos::os
