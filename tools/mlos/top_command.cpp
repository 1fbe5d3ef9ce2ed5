// mlos top: the daemon's jobs, refreshed every --interval seconds.
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <string>

#include "cli_output.h"
#include "commands.h"
#include "daemon_query.h"
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

double monotonic_seconds() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

std::string wall_clock() {
  const time_t now = time(nullptr);
  struct tm local {};
  localtime_r(&now, &local);
  char buf[16];
  strftime(buf, sizeof buf, "%H:%M:%S", &local);
  return buf;
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

}  // namespace

int run_top(const TopOptions& options) {
  install_quit_handlers();
  const bool screen = !options.batch && isatty(STDOUT_FILENO);
  DaemonStatusSource source(resolve_socket(options.socket));
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
