// SPDX-License-Identifier: Apache-2.0
#include "os/spawn_process.h"

#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/wait.h>

namespace mlos::os {

Result<pid_t> spawn_process(const std::string& program, const std::vector<std::string>& args,
                            const std::vector<SpawnedFd>& fds, const std::string& what) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  for (const SpawnedFd& f : fds) posix_spawn_file_actions_adddup2(&actions, f.from, f.to);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  std::vector<std::string> owned(args);
  std::vector<char*> argv;
  for (auto& a : owned) argv.push_back(a.data());
  argv.push_back(nullptr);
  char* envp[] = {nullptr};
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, program.c_str(), &actions, &attr, argv.data(), envp);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    return make_sys_error(rc, "cannot start " + what + " " + program, rc == ENOENT ? MLOS_ERR_NOT_FOUND : MLOS_ERR_SYSTEM);
  }
  return pid;
}

std::string describe_wait_status(int status) {
  if (WIFEXITED(status)) return "exited with " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    const char* name = sigabbrev_np(WTERMSIG(status));
    return std::string("killed by SIG") + (name ? name : std::to_string(WTERMSIG(status)).c_str());
  }
  return "ended (status " + std::to_string(status) + ")";
}

}  // namespace mlos::os
