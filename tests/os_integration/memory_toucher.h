/* SPDX-License-Identifier: Apache-2.0 */
// A forked child for the cgroup driver tests that touches fresh memory on
// command, so that what it charges lands in whatever cgroup it is in then.
#pragma once

#include <sys/mman.h>
#include <sys/types.h>
#include <unistd.h>

#include <cstddef>

namespace mlos_test {

// Touches `bytes` of fresh anonymous memory once told on `go`, says so on
// `done`, then sleeps (or, with `forever`, keeps writing to it) until
// killed. Volatile stores: a memset of memory never read again may be
// optimised away, and then nothing is charged. -1 if pipe or fork failed.
inline pid_t toucher(size_t bytes, int go[2], int done[2], bool forever = false) {
  if (pipe(go) != 0 || pipe(done) != 0) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    char c;
    if (read(go[0], &c, 1) != 1) _exit(1);
    void* m = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) _exit(1);
    volatile char* p = static_cast<volatile char*>(m);
    for (size_t i = 0; i < bytes; i += 4096) p[i] = 1;
    if (write(done[1], "k", 1) != 1) _exit(1);
    for (char round = 2; forever; ++round) {
      for (size_t i = 0; i < bytes; i += 4096) p[i] = round;
    }
    pause();
    _exit(0);
  }
  return pid;
}

}  // namespace mlos_test
