/* SPDX-License-Identifier: Apache-2.0 */
// A forked child connected to the test by a socketpair: the child confines
// itself and reports over its end, one line at a time; the test looks at
// the child from outside (/proc/<pid>/status, limits, fd) while the child
// waits for the next line. No timing: every step waits for a message.
#pragma once

#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <functional>
#include <sstream>
#include <string>

namespace mlos_test {

// Child side.
inline void say(int sock, const std::string& line) {
  std::string l = line + "\n";
  (void)!write(sock, l.data(), l.size());
}
inline std::string hear(int sock) {
  std::string line;
  char c;
  while (read(sock, &c, 1) == 1 && c != '\n') line += c;
  return line;
}

class SandboxedChild {
 public:
  // `body` runs in the child with its socket end; its return value is the
  // exit code. The test process must have no other threads when this forks.
  explicit SandboxedChild(const std::function<int(int sock)>& body) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      close(sv[0]);
      _exit(body(sv[1]));
    }
    close(sv[1]);
    sock_ = sv[0];
  }
  ~SandboxedChild() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (sock_ >= 0) close(sock_);
  }
  pid_t pid() const { return pid_; }
  std::string read_line() { return hear(sock_); }
  void send(const std::string& line) { say(sock_, line); }
  // The raw wait status once the child has ended.
  int wait_status() {
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    return status;
  }

  // "Uid" -> "65534\t65534\t65534\t65534" (surrounding blanks trimmed).
  std::string status_field(const std::string& name) const {
    std::ifstream in("/proc/" + std::to_string(pid_) + "/status");
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind(name + ":", 0) == 0) return trim(line.substr(name.size() + 1));
    }
    return "<missing>";
  }
  // "Max open files" -> "64 64" (soft and hard).
  std::string limit(const std::string& name) const { return limit_of(std::to_string(pid_), name); }
  static std::string limit_of(const std::string& pid, const std::string& name) {
    std::ifstream in("/proc/" + pid + "/limits");
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind(name + " ", 0) == 0) {
        std::istringstream rest(line.substr(name.size()));
        std::string soft, hard;
        rest >> soft >> hard;
        return soft + " " + hard;
      }
    }
    return "<missing>";
  }

 private:
  static std::string trim(const std::string& s) {
    size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
    return b == std::string::npos ? "" : s.substr(b, e - b + 1);
  }
  pid_t pid_ = -1;
  int sock_ = -1;
};

}  // namespace mlos_test
