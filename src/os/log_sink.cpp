// SPDX-License-Identifier: Apache-2.0
#include "os/log_sink.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "core/control_escape.h"
#include "os/environment.h"

namespace mlos {

namespace {

struct Sink {
  std::mutex mu;
  mlos_log_handler_t handler = nullptr;
  mlos_log_level_t max_level = MLOS_LOG_WARN;
  void* user = nullptr;
};

Sink& sink() {
  static auto* s = new Sink;  // leaked: may log during static destruction
  return *s;
}

int env_level() {
  static const int level = [] {
    const char* v = os::env("MLOS_LOG_LEVEL");
    if (v == nullptr) return -1;
    const char* names[] = {"error", "warn", "info", "debug"};
    for (int i = 0; i < 4; ++i) {
      if (strcmp(v, names[i]) == 0) return i;
    }
    return -1;
  }();
  return level;
}

}  // namespace

void log_message(mlos_log_level_t level, const std::string& message) {
  Sink& s = sink();
  std::lock_guard lock(s.mu);
  if (s.handler != nullptr) {
    if (level <= s.max_level) s.handler(level, message.c_str(), s.user);
  } else if (level <= env_level()) {
    static const char* const names[] = {"error", "warn", "info", "debug"};
    // One line per message, whatever text from outside it quotes.
    fprintf(stderr, "mlos[%s]: %s\n", names[level], escape_controls(message).c_str());
  }
}

}  // namespace mlos

extern "C" void mlos_set_log_handler(mlos_log_handler_t handler, mlos_log_level_t max_level, void* user_data) {
  mlos::Sink& s = mlos::sink();
  std::lock_guard lock(s.mu);
  s.handler = handler;
  s.max_level = max_level;
  s.user = user_data;
}
