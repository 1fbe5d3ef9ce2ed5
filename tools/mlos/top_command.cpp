// SPDX-License-Identifier: Apache-2.0
// mlos top: the daemon's jobs, refreshed every --interval seconds: the
// interactive view (top_screen.h) on a terminal, else the plain table
// (top_view.h), which --batch and --iterations also choose.
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "cli_output.h"
#include "commands.h"
#include "daemon_query.h"
#include "daemon_view.h"
#include "mlos/errors.h"
#include "os/cpu_times.h"
#include "top_clock.h"
#include "top_model.h"
#include "top_screen.h"
#include "top_view.h"

namespace mlos::cli {

namespace {

volatile sig_atomic_t g_quit = 0;

void on_quit_signal(int) { g_quit = 1; }

// SIGINT/SIGTERM set g_quit and interrupt the sleep (no SA_RESTART).
void install_quit_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_quit_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

// Sleeps `seconds`, returning early once g_quit is set.
void sleep_unless_quit(double seconds) {
  const double until = monotonic_seconds() + seconds;
  for (double left = seconds; left > 0 && !g_quit; left = until - monotonic_seconds()) {
    timespec ts{static_cast<time_t>(left), static_cast<long>((left - static_cast<double>(static_cast<time_t>(left))) * 1e9)};
    nanosleep(&ts, nullptr);
  }
}

// Each line of `frame` cut to the terminal's width (no wrapping on a TTY).
std::string clip_to_terminal(const std::string& frame) {
  winsize ws{};
  if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) != 0 || ws.ws_col == 0) return frame;
  std::string out;
  size_t start = 0;
  while (start < frame.size()) {
    size_t end = frame.find('\n', start);
    if (end == std::string::npos) end = frame.size();
    out += frame.substr(start, std::min<size_t>(end - start, ws.ws_col));
    out += '\n';
    start = end + 1;
  }
  return out;
}

// Busy seconds of each CPU in `cpus` now ({} if /proc/stat is unreadable:
// the meters then show "-").
std::map<int, double> cpu_busy_seconds_now(const CpuSet& cpus) {
  std::ifstream in("/proc/stat");
  std::ostringstream text;
  text << in.rdbuf();
  return os::parse_cpu_busy_seconds(text.str(), cpus, sysconf(_SC_CLK_TCK));
}

// The interactive view. The first status is fetched before the terminal
// is taken, so that a missing mlosd is reported (exit 1) as in batch mode;
// later failures are shown on screen and retried every interval.
int run_top_interactive(const TopOptions& options, DaemonStatusSource& source, bool* fell_back) {
  auto first = source.fetch();
  if (!first) {
    report_error("top", first.error(), false);
    return kExitFailure;
  }
  CpuRateTracker rates;
  CpuBusyTracker busy;
  std::optional<nlohmann::json> pending = std::move(*first);
  auto refresh = [&](TopModel& model) {
    auto reply = pending ? Result<nlohmann::json>(std::move(*pending)) : source.fetch();
    pending.reset();
    if (!reply) {
      model.set_unavailable(std::string(mlos_strerror(reply.error().code)) + ": " + reply.error().describe());
      return;
    }
    const double now = monotonic_seconds();
    const auto cpu = rates.update(reply->contains("jobs") ? (*reply)["jobs"] : nlohmann::json::array(), now);
    auto cpus = CpuSet::parse_list(json_text(*reply, "cpus", ""));
    model.update(*reply, cpu, busy.update(cpu_busy_seconds_now(cpus ? *cpus : CpuSet{}), now));
  };
  TopModel model;
  TopScreenOptions screen{options.interval, source.socket()};
  if (auto rc = run_top_screen(screen, model, refresh, g_quit)) return *rc;
  *fell_back = true;  // no usable terminal description: the plain table
  std::cerr << "mlos top: cannot use the terminal (TERM=" << (getenv("TERM") ? getenv("TERM") : "") << "); "
            << "printing the plain table\n";
  return kExitOk;
}

}  // namespace

int run_top(const TopOptions& options) {
  install_quit_handlers();
  DaemonStatusSource source(resolve_socket(options.socket));
  // The plain table with --batch or --iterations (as top -b -n), or when
  // stdout or stdin is not a terminal (a pipe, a script, no keys to read).
  const bool tty = isatty(STDOUT_FILENO) && isatty(STDIN_FILENO);
  if (!options.batch && options.iterations == 0 && tty) {
    bool fell_back = false;
    const int rc = run_top_interactive(options, source, &fell_back);
    if (!fell_back) return rc;
  }
  const bool screen = !options.batch && isatty(STDOUT_FILENO);
  CpuRateTracker rates;
  for (int i = 0; !g_quit && (options.iterations == 0 || i < options.iterations); ++i) {
    if (i > 0) {
      sleep_unless_quit(options.interval);
      if (g_quit) break;
    }
    auto reply = source.fetch();
    if (!reply) {
      if (g_quit) break;
      report_error("top", reply.error(), false);
      return kExitFailure;
    }
    const auto cpu = rates.update(reply->contains("jobs") ? (*reply)["jobs"] : nlohmann::json::array(),
                                  monotonic_seconds());
    const std::string frame = render_top(*reply, cpu, wall_clock());
    if (screen) {
      // Home, clear, draw: one write per refresh, so no flicker of an empty screen.
      fputs(("\033[H\033[2J" + clip_to_terminal(frame)).c_str(), stdout);
    } else {
      if (i > 0) fputc('\n', stdout);  // frames separated by a blank line, like top -b
      fputs(frame.c_str(), stdout);
    }
    fflush(stdout);
  }
  return kExitOk;
}

}  // namespace mlos::cli
