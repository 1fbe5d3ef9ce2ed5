// SPDX-License-Identifier: Apache-2.0
#include "os/process_facts.h"

#include <sched.h>

#include <sstream>

#include "os/durable_file.h"

namespace mlos::os {

namespace {
constexpr unsigned long kPfKthread = 0x00200000;  // include/linux/sched.h
}

std::optional<ProcessFacts> read_process_facts(pid_t pid, const std::string& proc_root) {
  const std::string dir = proc_root + "/" + std::to_string(pid);
  auto stat = read_whole_file(dir + "/stat");
  if (!stat || !stat->has_value()) return std::nullopt;
  const std::string& text = **stat;
  const size_t close = text.rfind(')');
  const size_t open = text.find('(');
  if (close == std::string::npos || open == std::string::npos || open > close) return std::nullopt;
  ProcessFacts f;
  f.comm = text.substr(open + 1, close - open - 1);
  // After ") ": state ppid pgrp session tty_nr tpgid flags ...
  std::istringstream rest(text.substr(close + 1));
  std::string field;
  unsigned long flags = 0;
  for (int i = 0; i < 7 && rest >> field; ++i) {
    if (i == 6) {
      try {
        flags = std::stoul(field);
      } catch (const std::exception&) {
        return std::nullopt;
      }
    }
  }
  f.kernel_thread = (flags & kPfKthread) != 0;
  auto status = read_whole_file(dir + "/status");
  if (!status || !status->has_value()) return std::nullopt;
  const size_t uid_at = (*status)->find("\nUid:");
  if (uid_at == std::string::npos) return std::nullopt;
  try {
    f.uid = static_cast<uid_t>(std::stoul((*status)->substr(uid_at + 5)));
  } catch (const std::exception&) {
    return std::nullopt;
  }
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(pid, sizeof set, &set) != 0) return std::nullopt;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) f.affinity.set(c);
  }
  return f;
}

}  // namespace mlos::os
