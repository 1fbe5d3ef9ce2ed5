// SPDX-License-Identifier: Apache-2.0
// mlosd under load, and the cost of a phase hint in daemon mode.
//
//   mlos_daemon_load --socket PATH [--clients 100] [--seconds 5] [--json]
//
// Needs a running mlosd at PATH (see docs/benchmarks.md for the command).
//  1. Phase-hint cost through the published API, daemon mode (phase page)
//     against embedded mode, interleaved repetitions, medians.
//  2. Load: N client processes, each with its own connection and job, send
//     "phase" requests (the socket path, the expensive one) in a tight loop
//     for the given time. Reports phase changes handled per second, mlosd's
//     CPU time over the same interval, and whether every change a client
//     sent is in the daemon's count (nothing lost) and every client finished
//     (nothing stuck).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "mlos/training.h"
#include "protocol/daemon_client.h"

namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// ns per set_phase (alternating FORWARD/OPTIMIZER on a job with no bound
// threads: the pure bookkeeping and, in daemon mode, the page stores).
double phase_hint_ns(const char* mode, int calls) {
  setenv("MLOS_MODE", mode, 1);
  mlos_training_resource_request_t req = {.num_cpus = 1, .memory_bytes = 0, .numa_node_preference = -1,
                                          .priority = 0, .exclusive_cpus = false};
  mlos_training_resources_t* res = nullptr;
  if (mlos_training_request_resources(&req, &res) != MLOS_OK) {
    fprintf(stderr, "request (%s): %s\n", mode, mlos_last_error_message());
    exit(1);
  }
  const auto t0 = Clock::now();
  for (int i = 0; i < calls; ++i) {
    mlos_training_set_phase(res, (i & 1) ? MLOS_TRAINING_PHASE_FORWARD : MLOS_TRAINING_PHASE_OPTIMIZER);
  }
  const double ns = seconds_since(t0) * 1e9 / calls;
  mlos_training_release_resources(res);
  return ns;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

uint64_t cpu_ticks(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // Fields after the command name: state is field 3, utime 14, stime 15.
  const size_t close = text.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream rest(text.substr(close + 2));
  std::string field;
  uint64_t utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14) utime = std::stoull(field);
    if (i == 15) stime = std::stoull(field);
  }
  return utime + stime;
}

// One load client: returns phase changes acknowledged, via the pipe.
[[noreturn]] void client(const std::string& path, int index, double seconds, int report_fd, int go_fd) {
  auto c = mlos::protocol::DaemonClient::connect(path, 30000);
  if (!c) _exit(10);
  auto granted = c->call("request", json{{"num_cpus", 1}, {"label", "load-" + std::to_string(index)}});
  if (!granted) _exit(11);
  const uint64_t job = (*granted)["job"].get<uint64_t>();
  uint64_t acked = 0;
  const auto t0 = Clock::now();
  // Phases 1..5 in turn: every call is a change (the job starts IDLE).
  for (int k = 0; seconds_since(t0) < seconds; ++k) {
    if (!c->call("phase", json{{"job", job}, {"phase", 1 + k % 5}})) _exit(12);
    ++acked;
  }
  uint64_t msg[2] = {job, acked};
  if (write(report_fd, msg, sizeof msg) != sizeof msg) _exit(13);
  char go;
  if (read(go_fd, &go, 1) != 1) _exit(14);
  _exit(c->call("release", json{{"job", job}}) ? 0 : 15);
}

}  // namespace

int main(int argc, char** argv) {
  std::string path = mlos::protocol::default_socket_path();
  int clients = 100;
  double seconds = 5;
  bool as_json = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--socket" && i + 1 < argc) path = argv[++i];
    else if (a == "--clients" && i + 1 < argc) clients = atoi(argv[++i]);
    else if (a == "--seconds" && i + 1 < argc) seconds = atof(argv[++i]);
    else if (a == "--json") as_json = true;
    else {
      fprintf(stderr, "usage: %s [--socket PATH] [--clients N] [--seconds S] [--json]\n", argv[0]);
      return 2;
    }
  }
  setenv("MLOS_DAEMON_SOCKET", path.c_str(), 1);
  auto probe = mlos::protocol::DaemonClient::connect(path);
  if (!probe) {
    fprintf(stderr, "%s\n", probe.error().describe().c_str());
    return 1;
  }
  const int daemon_pid = probe->hello()["daemon"]["pid"].get<int>();

  // 1. Phase-hint cost, embedded vs daemon, interleaved.
  std::vector<double> embedded, daemon;
  for (int rep = 0; rep < 9; ++rep) {
    embedded.push_back(phase_hint_ns("embedded", 200000));
    daemon.push_back(phase_hint_ns("daemon", 200000));
  }

  // 2. Load.
  int report[2], go[2];
  if (pipe(report) != 0 || pipe(go) != 0) return 1;
  std::vector<pid_t> pids;
  for (int i = 0; i < clients; ++i) {
    pid_t p = fork();
    if (p == 0) client(path, i, seconds, report[1], go[0]);
    pids.push_back(p);
  }
  const uint64_t ticks0 = cpu_ticks(daemon_pid);
  const auto t0 = Clock::now();
  std::map<uint64_t, uint64_t> sent;  // job -> phase changes acknowledged
  for (int i = 0; i < clients; ++i) {
    uint64_t msg[2];
    if (read(report[0], msg, sizeof msg) != sizeof msg) break;
    sent[msg[0]] = msg[1];
  }
  const double wall = seconds_since(t0);
  const uint64_t ticks1 = cpu_ticks(daemon_pid);
  uint64_t total_sent = 0, total_recorded = 0;
  auto st = probe->call("status");
  if (!st) return 1;
  for (const auto& j : (*st)["jobs"]) {
    auto it = sent.find(j["job"].get<uint64_t>());
    if (it == sent.end()) continue;
    uint64_t entries = 0;
    for (const auto& [phase, n] : j["phase_entries"].items()) entries += n.get<uint64_t>();
    total_sent += it->second;
    total_recorded += entries;
  }
  if (write(go[1], std::string(clients, 'g').data(), clients) != clients) return 1;
  int finished = 0;
  for (pid_t p : pids) {
    int status = 0;
    if (waitpid(p, &status, 0) == p && WIFEXITED(status) && WEXITSTATUS(status) == 0) ++finished;
  }
  const double cpu_s = static_cast<double>(ticks1 - ticks0) / static_cast<double>(sysconf(_SC_CLK_TCK));
  json out{{"phase_hint_ns", {{"embedded_median", median(embedded)}, {"daemon_median", median(daemon)},
                              {"ratio_daemon_to_embedded", median(daemon) / median(embedded)}}},
           {"load",
            {{"clients", clients},
             {"clients_reporting", sent.size()},
             {"clients_finished", finished},
             {"seconds", wall},
             {"phase_changes_sent", total_sent},
             {"phase_changes_recorded", total_recorded},
             {"phase_changes_per_second", static_cast<double>(total_sent) / wall},
             {"mlosd_cpu_seconds", cpu_s},
             {"mlosd_cpu_percent", 100.0 * cpu_s / wall}}}};
  if (as_json) {
    printf("%s\n", out.dump(2).c_str());
  } else {
    printf("phase hint, embedded: %.1f ns  daemon (phase page): %.1f ns  ratio %.2f\n", median(embedded),
           median(daemon), median(daemon) / median(embedded));
    printf("load: %d clients for %.1f s: %.0f phase changes/s over the socket, mlosd CPU %.0f%% of one core, "
           "sent %llu recorded %llu, %d/%d clients finished\n",
           clients, wall, static_cast<double>(total_sent) / wall, 100.0 * cpu_s / wall,
           static_cast<unsigned long long>(total_sent), static_cast<unsigned long long>(total_recorded), finished,
           clients);
  }
  const bool ok = total_sent == total_recorded && finished == clients && static_cast<int>(sent.size()) == clients;
  return ok ? 0 : 3;
}
