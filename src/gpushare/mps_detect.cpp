// SPDX-License-Identifier: Apache-2.0
#include "gpushare/mps_detect.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace mlos::gpushare {

MpsState detect_mps(const std::string& pipe_directory) {
  MpsState s;
  s.pipe_directory = pipe_directory;
  if (s.pipe_directory.empty()) {
    const char* env = std::getenv("CUDA_MPS_PIPE_DIRECTORY");
    s.pipe_directory = env != nullptr && *env ? env : "/tmp/nvidia-mps";
  }
  const std::string control = s.pipe_directory + "/control";
  struct stat st {};
  if (stat(control.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) {
    s.why = "no MPS control socket at " + control;
    return s;
  }
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (control.size() >= sizeof addr.sun_path) {
    s.why = control + ": path too long for a socket";
    return s;
  }
  std::memcpy(addr.sun_path, control.c_str(), control.size() + 1);
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    s.why = std::string("socket: ") + std::strerror(errno);
    return s;
  }
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
    s.running = true;
  } else {
    s.why = control + ": " + std::strerror(errno) + " (a stale socket: no control daemon)";
  }
  close(fd);
  return s;
}

}  // namespace mlos::gpushare
