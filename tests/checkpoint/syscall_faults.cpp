// SPDX-License-Identifier: Apache-2.0
#include "checkpoint/syscall_faults.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <mutex>

namespace faults {

namespace {

struct Armed {
  bool active = false;
  Op op = Op::kWrite;
  Target target = Target::kFileInDir;
  int remaining = 0;  // calls to let through before the failing one
  int err = 0;
  bool short_write = false;
};

struct State {
  std::mutex mu;
  std::condition_variable cv;
  std::string dir;  // empty: not watching
  std::vector<Call> log;
  Armed armed;
  bool fired = false;
  bool gate_on = false;
  Op gate_op = Op::kFdatasync;
  Target gate_target = Target::kFileInDir;
  int gated_now = 0;
};

State& state() {
  static State* s = new State;  // never destroyed: calls may come during exit
  return *s;
}

std::string fd_path(int fd) {
  char link[64];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  char buf[4096];
  const ssize_t n = readlink(link, buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

// What interception decides for one call.
enum class Verdict { kForward, kFail, kShort };

// Logs the call if it is under the watched directory and applies the gate
// and the armed fault. `*err` is the errno to fail with.
Verdict intercept(Op op, const std::string& path, int* err) {
  State& s = state();
  std::unique_lock lock(s.mu);
  if (s.dir.empty()) return Verdict::kForward;
  Target target;
  if (path == s.dir) {
    target = Target::kDirectoryItself;
  } else if (path.size() > s.dir.size() && path.compare(0, s.dir.size() + 1, s.dir + "/") == 0) {
    target = Target::kFileInDir;
  } else {
    return Verdict::kForward;
  }
  s.log.push_back({op, path});
  if (s.gate_on && s.gate_op == op && s.gate_target == target) {
    ++s.gated_now;
    s.cv.notify_all();
    s.cv.wait(lock, [&] { return !s.gate_on; });
    --s.gated_now;
  }
  Armed& a = s.armed;
  if (!a.active || a.op != op || a.target != target) return Verdict::kForward;
  if (a.remaining-- > 0) return Verdict::kForward;
  a.active = false;
  s.fired = true;
  *err = a.err;
  return a.short_write ? Verdict::kShort : Verdict::kFail;
}

// intercept() for calls that can only fail: true (errno set) when this one
// must fail.
bool injected(Op op, const std::string& path) {
  int err = 0;
  if (intercept(op, path, &err) != Verdict::kFail) return false;
  errno = err;
  return true;
}

template <class F>
F real(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
}

}  // namespace

void watch(const std::string& dir) {
  std::lock_guard lock(state().mu);
  state().dir = dir;
  state().log.clear();
  state().armed = Armed{};
  state().fired = false;
}

void reset() {
  release_gate();
  std::lock_guard lock(state().mu);
  state().dir.clear();
  state().armed = Armed{};
}

void fail_nth(Op op, Target target, int nth, int err) {
  std::lock_guard lock(state().mu);
  state().armed = Armed{true, op, target, nth - 1, err, false};
  state().fired = false;
}

void short_write_nth(int nth) {
  std::lock_guard lock(state().mu);
  state().armed = Armed{true, Op::kWrite, Target::kFileInDir, nth - 1, 0, true};
  state().fired = false;
}

void gate(Op op, Target target) {
  std::lock_guard lock(state().mu);
  state().gate_on = true;
  state().gate_op = op;
  state().gate_target = target;
}

void release_gate() {
  std::lock_guard lock(state().mu);
  state().gate_on = false;
  state().cv.notify_all();
}

bool gate_holds_a_call() {
  std::lock_guard lock(state().mu);
  return state().gated_now > 0;
}

std::vector<Call> calls() {
  std::lock_guard lock(state().mu);
  return state().log;
}

bool fired() {
  std::lock_guard lock(state().mu);
  return state().fired;
}

}  // namespace faults

using faults::Op;
using faults::Verdict;

extern "C" {

ssize_t write(int fd, const void* buf, size_t count) {
  static auto next = faults::real<ssize_t (*)(int, const void*, size_t)>("write");
  int err = 0;
  // Descriptors 0-2 are never checkpoint files; skip the readlink for them.
  const Verdict v = fd <= 2 ? Verdict::kForward : faults::intercept(Op::kWrite, faults::fd_path(fd), &err);
  if (v == Verdict::kShort && count > 1) return next(fd, buf, count / 2);
  if (v == Verdict::kFail) {
    errno = err;
    return -1;
  }
  return next(fd, buf, count);
}

ssize_t pwrite(int fd, const void* buf, size_t count, off_t offset) {
  static auto next = faults::real<ssize_t (*)(int, const void*, size_t, off_t)>("pwrite");
  return faults::injected(Op::kWrite, faults::fd_path(fd)) ? -1 : next(fd, buf, count, offset);
}

int fsync(int fd) {
  static auto next = faults::real<int (*)(int)>("fsync");
  return faults::injected(Op::kFsync, faults::fd_path(fd)) ? -1 : next(fd);
}

int fdatasync(int fd) {
  static auto next = faults::real<int (*)(int)>("fdatasync");
  return faults::injected(Op::kFdatasync, faults::fd_path(fd)) ? -1 : next(fd);
}

int rename(const char* from, const char* to) {
  static auto next = faults::real<int (*)(const char*, const char*)>("rename");
  return faults::injected(Op::kRename, from) ? -1 : next(from, to);
}

int renameat(int fromfd, const char* from, int tofd, const char* to) {
  static auto next = faults::real<int (*)(int, const char*, int, const char*)>("renameat");
  std::string path = from;
  if (!path.empty() && path[0] != '/') {
    char cwd[4096];
    const std::string base = fromfd == AT_FDCWD ? (getcwd(cwd, sizeof cwd) ? cwd : "") : faults::fd_path(fromfd);
    path = base + "/" + path;
  }
  return faults::injected(Op::kRename, path) ? -1 : next(fromfd, from, tofd, to);
}

}  // extern "C"
