// SPDX-License-Identifier: Apache-2.0
// mlos daemon: runs mlosd with the given arguments (exec, so mlosd keeps
// the PID, the terminal and the exit status).
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "cli_output.h"
#include "commands.h"
#include "install_paths.h"

namespace mlos::cli {

int run_daemon(const DaemonOptions& options) {
  std::string binary = "mlosd";  // PATH lookup unless found next to mlos
  for (const auto& candidate : mlosd_candidates()) {
    if (access(candidate.c_str(), X_OK) == 0) {
      binary = candidate;
      break;
    }
  }
  std::vector<char*> argv;
  argv.push_back(binary.data());
  std::vector<std::string> args = options.args;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  fflush(stdout);
  if (binary.find('/') != std::string::npos) execv(binary.c_str(), argv.data());
  else execvp(binary.c_str(), argv.data());
  const int err = errno;
  if (err == ENOENT) {
    std::cerr << "mlos daemon: mlosd not found (looked for";
    for (const auto& candidate : mlosd_candidates()) std::cerr << " " << candidate << ",";
    std::cerr << " and in PATH)\n";
    return kExitNotFound;
  }
  std::cerr << "mlos daemon: cannot run " << binary << ": " << strerror(err) << "\n";
  return kExitCannotExec;
}

}  // namespace mlos::cli
