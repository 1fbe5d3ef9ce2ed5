// mlosd: the mlOS node daemon. See docs/daemon.md.
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <ctime>
#include <iostream>
#include <memory>
#include <prometheus/exposer.h>

#include "daemon/control_server.h"
#include "daemon/daemon_config.h"
#include "daemon/job_manager.h"
#include "daemon/job_metrics.h"
#include "mlos/version.h"
#include "os/hwloc_topology.h"
#include "os/kernel.h"
#include "os/memory_sources.h"
#include "os/process_info.h"

namespace {

using mlos::Result;
using mlos::Status;
namespace d = mlos::daemon;
namespace os = mlos::os;

constexpr int kExitFailure = 1, kExitUsage = 2;

int fail(const std::string& what) {
  std::cerr << "mlosd: " << what << "\n";
  return kExitFailure;
}

Result<std::shared_ptr<os::CgroupDriver>> cgroup_driver(const d::DaemonConfig& c) {
  if (c.cgroups == "none") return std::shared_ptr<os::CgroupDriver>();
  auto driver = os::detect_cgroup_driver("/proc/self/mountinfo", c.cgroup_base);
  if (!driver) return driver.error();
  if (c.cgroups != "auto" && (*driver)->version() != c.cgroups) {
    return mlos::make_error(MLOS_ERR_UNSUPPORTED, "cgroups " + c.cgroups + " asked for, but this machine offers " +
                                                      (*driver)->version());
  }
  return std::shared_ptr<os::CgroupDriver>(std::move(*driver));
}

// A descriptor of another process, duplicated into mlosd (pidfd_getfd(2),
// Linux 5.6; needs ptrace access to it, which root has).
Result<os::UniqueFd> fetch_fd(const mlos::ProcessId& owner, int fd) {
  os::UniqueFd pidfd(static_cast<int>(syscall(SYS_pidfd_open, owner.pid, 0)));
  if (!pidfd.valid()) return mlos::make_sys_error(errno, "pidfd_open " + std::to_string(owner.pid));
  if (!os::is_alive(owner)) return mlos::make_error(MLOS_ERR_NO_SUCH_THREAD, "owner exited");
  os::UniqueFd mine(static_cast<int>(syscall(SYS_pidfd_getfd, pidfd.get(), fd, 0)));
  if (!mine.valid()) return mlos::make_sys_error(errno, "pidfd_getfd of fd " + std::to_string(fd));
  return mine;
}

uint64_t monotonic_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"mlosd: the mlOS node daemon (mlOS " MLOS_VERSION_STRING
               "). Grants CPUs to training jobs over a Unix socket, gives each job a cgroup, turns their phases "
               "into CPU weights, and serves Prometheus metrics."};
  app.set_version_flag("--version", MLOS_VERSION_STRING);
  std::string config_path;
  bool check_config = false, quarantine = false;
  std::string socket, state_dir, cgroups, cgroup_base, metrics_listen, metrics_textfile;
  int sample_ms = 0;
  app.add_option("-c,--config", config_path, "JSON config file (keys in docs/daemon.md); flags override it");
  app.add_flag("--check-config", check_config,
               "Validate the config, print the effective one as JSON, and exit (0 valid, 2 invalid)");
  app.add_option("--socket", socket, "Control socket path (default /run/mlos/mlosd.sock)");
  app.add_option("--state-dir", state_dir, "Directory of the durable job registry (default /var/lib/mlos)");
  app.add_option("--cgroups", cgroups, "auto | v1 | v2 | none (default auto)");
  app.add_option("--cgroup-base", cgroup_base, "cgroup under which jobs get theirs (default mlos)");
  app.add_option("--metrics-listen", metrics_listen, "HTTP address for /metrics (default 127.0.0.1:9464; '' off)");
  app.add_option("--metrics-textfile", metrics_textfile, "Also write metrics to this file (node_exporter textfile)");
  app.add_option("--sample-interval-ms", sample_ms, "How often phase pages and owners are checked (default 100)");
  app.add_flag("--quarantine-state", quarantine,
               "If the registry file is corrupt, move it aside (<file>.corrupt-<time>) and start with no jobs");
  app.footer("Exit codes: 0 stopped by SIGTERM/SIGINT (jobs are kept for the next mlosd) or config valid; "
             "1 failure; 2 usage or config error.");
  CLI11_PARSE(app, argc, argv);

  d::DaemonConfig config;
  if (!config_path.empty()) {
    auto c = d::DaemonConfig::from_file(config_path);
    if (!c) {
      std::cerr << "mlosd: " << c.error().describe() << "\n";
      return kExitUsage;
    }
    config = std::move(*c);
  }
  nlohmann::json flags = nlohmann::json::object();
  if (!socket.empty()) flags["socket"] = socket;
  if (!state_dir.empty()) flags["state_dir"] = state_dir;
  if (!cgroups.empty()) flags["cgroups"] = cgroups;
  if (!cgroup_base.empty()) flags["cgroup_base"] = cgroup_base;
  if (app.count("--metrics-listen")) flags["metrics_listen"] = metrics_listen;
  if (!metrics_textfile.empty()) flags["metrics_textfile"] = metrics_textfile;
  if (sample_ms != 0) flags["sample_interval_ms"] = sample_ms;
  if (Status s = config.merge(flags); !s) {
    std::cerr << "mlosd: " << s.error().describe() << "\n";
    return kExitUsage;
  }
  auto driver = cgroup_driver(config);
  if (check_config) {
    nlohmann::json out = config.to_json();
    out["cgroup_driver"] = driver ? (*driver ? (*driver)->version() : "none") : "unavailable: " + driver.error().message;
    std::cout << out.dump(2) << "\n";
    return driver ? 0 : kExitUsage;
  }
  if (!driver) return fail(driver.error().describe());

  if (mkdir(config.state_dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return fail("cannot create state directory " + config.state_dir + ": " + strerror(errno));
  }
  auto state = std::make_shared<os::CheckedJsonFile>(config.state_dir, "registry.json", "mlosd-registry",
                                                     d::JobRegistry::kSchemaVersion);
  auto topology = os::shared_topology();
  if (!topology) return fail(topology.error().describe());
  auto allowed = os::linux_kernel().affinity(getpid());
  if (!allowed) return fail(allowed.error().describe());

  d::JobManagerDeps deps;
  deps.topology = *topology;
  deps.allowed = *allowed;
  deps.memory = [t = *topology] { return os::read_memory_availability(t); };
  deps.cgroups = *driver;
  deps.state = state;
  deps.policy = config.policy;
  deps.identify = [](pid_t pid) { return os::process_id(pid); };
  deps.is_alive = [](const mlos::ProcessId& id) { return os::is_alive(id); };
  deps.uid_of = [](pid_t pid) -> Result<uid_t> {
    auto u = os::process_uid(pid);
    if (!u) return u.error();
    return static_cast<uid_t>(*u);
  };
  deps.fetch_fd = fetch_fd;
  deps.now_ns = monotonic_ns;
  deps.memory_thresholds = config.memory_thresholds;
  deps.node_memory = [] {
    mlos::MemoryFigures f;
    os::add_node_figures(&f, std::nullopt);
    return f;
  };
  deps.now_unix = [] { return static_cast<int64_t>(time(nullptr)); };
  d::JobManager jobs(std::move(deps));

  auto report = jobs.recover();
  if (!report && report.error().code == MLOS_ERR_STATE_CORRUPT && quarantine) {
    const std::string aside = state->path() + ".corrupt-" + std::to_string(time(nullptr));
    if (rename(state->path().c_str(), aside.c_str()) != 0) return fail("cannot move " + state->path() + " aside");
    std::cerr << "mlosd: moved the corrupt registry to " << aside << "; starting with no jobs\n";
    report = jobs.recover();
  }
  if (!report) {
    if (report.error().code == MLOS_ERR_STATE_CORRUPT) {
      return fail("refusing to start: " + report.error().describe() +
                  "\n  The file is left untouched; jobs it lists may still be running.\n"
                  "  To recover: restore a good copy of it, or run mlosd --quarantine-state to move it aside and "
                  "start with no jobs (running processes keep their CPU affinity, but mlosd will not arbitrate for "
                  "them until they request again).");
    }
    return fail("cannot recover the job registry: " + report.error().describe());
  }
  for (const auto& line : *report) std::cerr << "mlosd: " << line << "\n";

  d::JobMetrics metrics;
  std::unique_ptr<prometheus::Exposer> exposer;
  if (!config.metrics_listen.empty()) {
    try {
      exposer = std::make_unique<prometheus::Exposer>(config.metrics_listen, 2);
      exposer->RegisterCollectable(metrics.registry());
    } catch (const std::exception& e) {
      return fail("cannot serve metrics on " + config.metrics_listen + ": " + e.what());
    }
  }
  nlohmann::json info{{"version", MLOS_VERSION_STRING},
                      {"pid", getpid()},
                      {"started_unix", static_cast<int64_t>(time(nullptr))},
                      {"socket", config.socket},
                      {"state_file", state->path()},
                      {"cgroups", jobs.cgroup_version()},
                      {"metrics_listen", config.metrics_listen}};
  if (exposer) {
    auto ports = exposer->GetListeningPorts();
    if (!ports.empty()) info["metrics_port"] = ports.front();
  }
  d::ControlServer server(config, jobs, metrics, info);
  if (Status s = server.listen(); !s) return fail(s.error().describe());
  std::cerr << "mlosd: ready on " << config.socket << " (cgroups " << jobs.cgroup_version()
            << (exposer ? ", metrics on http://" + config.metrics_listen + "/metrics" : std::string()) << ")\n";
  if (Status s = server.run(); !s) return fail(s.error().describe());
  return 0;
}
