// SPDX-License-Identifier: Apache-2.0
// mlosd: the mlOS node daemon. See docs/daemon.md.
#include <grp.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <memory>
#include <optional>
#include <vector>

#include "build_commit.h"
#include "daemon/config_reload.h"
#include "daemon/confinement.h"
#include "daemon/control_server.h"
#include "daemon/daemon_config.h"
#include "daemon/event_log.h"
#include "daemon/gpu_metrics.h"
#include "daemon/job_manager.h"
#include "daemon/job_metrics.h"
#include "daemon/ledger_follower.h"
#include "daemon/listen_address.h"
#include "daemon/metrics_endpoint.h"
#include "gpu/gpu_inventory.h"
#include "gpu/gpu_topology.h"
#include "gpu/nvml_library.h"
#include "mlos/log.h"
#include "mlos/version.h"
#include "os/cgroup/checked_attach.h"
#include "os/cpu_times.h"
#include "os/durable_file.h"
#include "os/environment.h"
#include "os/hwloc_topology.h"
#include "os/journal_log.h"
#include "os/kernel.h"
#include "os/memory_sources.h"
#include "os/process_facts.h"
#include "os/process_handle.h"
#include "os/process_info.h"
#include "os/service_notify.h"
#include "policy/policy_hosts.h"
#include "protocol/daemon_client.h"

namespace {

using mlos::Result;
using mlos::Status;
namespace d = mlos::daemon;
namespace os = mlos::os;

constexpr int kExitFailure = 1, kExitUsage = 2;

// The policy manager's settings from the config. phase-weights is today's
// arbitration: the "arbitration" object is its node config unless
// policies.config names it. Hosts drop to policies.user when mlosd is root;
// an unprivileged mlosd's hosts keep its uid (they cannot switch).
mlos::policy::PolicyHostsOptions policy_hosts_options(const d::DaemonConfig& c) {
  mlos::policy::PolicyHostsOptions o;
  o.host_binary = c.policies.host;
  o.policy_dir = c.policies.dir;
  o.run_as = geteuid() == 0 ? c.policies.user : "";
  o.memory_limit = c.policies.memory_limit_bytes;
  o.deadline_ms = c.policies.deadline_ms;
  o.start_deadline_ms = c.policies.start_deadline_ms;
  o.unload_grace_ms = c.policies.unload_grace_ms;
  o.node_config = c.policies.config;
  o.tick_interval_ms = c.policies.tick_interval_ms;
  if (!o.node_config.contains("phase-weights") && !c.arbitration.empty()) o.node_config["phase-weights"] = c.arbitration;
  return o;
}

int fail(const std::string& what) {
  d::log_event(MLOS_LOG_ERROR, what, {{"MLOS_EVENT", "failed"}});
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

// The node-wide confinement of exclusive CPUs (daemon/confinement.h), on
// the cpuset hierarchy `driver` manages; null when configured off.
Result<std::shared_ptr<d::Confinement>> make_confinement(const d::DaemonConfig& c, const os::CgroupDriver& driver) {
  if (c.confine == "off") return std::shared_ptr<d::Confinement>();
  auto mountinfo = os::read_whole_file("/proc/self/mountinfo");
  if (!mountinfo || !mountinfo->has_value()) return mlos::make_error(MLOS_ERR_SYSTEM, "cannot read /proc/self/mountinfo");
  const os::CgroupMounts m = os::parse_cgroup_mounts(**mountinfo);
  const bool v2 = driver.version() == "v2";
  const std::string root = v2 ? m.unified : m.cpuset;
  if (root.empty()) return mlos::make_error(MLOS_ERR_UNSUPPORTED, "no cpuset hierarchy to confine processes with");
  d::ConfinementConfig cc;
  cc.mode = c.confine;
  cc.cgroups = c.confine_cgroups;
  cc.base = c.cgroup_base;
  cc.v2 = v2;
  return std::make_shared<d::Confinement>(cc, std::make_shared<os::LinuxCgroupFs>(root), c.state_dir,
                                          [](pid_t pid) { return os::read_process_facts(pid); });
}

// Root, and members of `group` ("*": everyone; "": nobody else), may
// confine the node's other processes with their exclusive jobs.
bool may_confine(const std::string& group, uint32_t uid) {
  if (uid == 0 || group == "*") return true;
  if (group.empty()) return false;
  const struct group* g = getgrnam(group.c_str());
  const struct passwd* pw = getpwuid(uid);
  if (g == nullptr || pw == nullptr) return false;
  const gid_t want = g->gr_gid;
  int n = 64;
  std::vector<gid_t> gids(n);
  if (getgrouplist(pw->pw_name, pw->pw_gid, gids.data(), &n) < 0) {
    gids.resize(n);
    if (getgrouplist(pw->pw_name, pw->pw_gid, gids.data(), &n) < 0) return false;
  }
  gids.resize(n);
  return std::find(gids.begin(), gids.end(), want) != gids.end();
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

// The process that connected, as it is now (see JobManagerDeps).
Result<mlos::ProcessId> peer_process(const os::PeerCredentials& peer) {
  if (peer.process == nullptr) {
    return mlos::make_error(MLOS_ERR_PERMISSION, "the connecting process is not held by a pidfd");
  }
  auto id = peer.process->identity();
  if (!id) {
    return mlos::make_error(id.error().code, "the process that connected (pid " + std::to_string(peer.pid) +
                                                 ") has exited; a connection handed to another process "
                                                 "cannot act for it: connect again");
  }
  if (Status s = os::check_same_user(id->pid, peer.uid); !s) return s.error();
  if (peer.process->exited()) return mlos::make_error(MLOS_ERR_NO_SUCH_THREAD, "the connecting process exited");
  return *id;
}

// The most detailed level logged: MLOS_LOG_LEVEL (error, warn, info,
// debug; debug adds every phase change), info by default.
mlos_log_level_t log_level() {
  const char* v = os::env("MLOS_LOG_LEVEL");
  const std::string level = v == nullptr ? "" : v;
  if (level == "error") return MLOS_LOG_ERROR;
  if (level == "warn") return MLOS_LOG_WARN;
  if (level == "debug") return MLOS_LOG_DEBUG;
  return MLOS_LOG_INFO;
}

// mlosd's own events and the library's messages (the library never prints
// on its own) go to the journal, with priorities and fields, or to stderr
// (config "log"). Each message is one write, bounded by its size.
void start_logging(const std::string& mode) {
  const bool journal = mode == "journal" || (mode == "auto" && os::stderr_is_journal_stream());
  auto out = std::make_shared<os::JournalLog>("mlosd", journal);
  const mlos_log_level_t max = log_level();
  d::set_event_sink([out, max](mlos_log_level_t level, const std::string& message, const d::LogFields& fields) {
    if (level <= max) out->write(level, message, fields);
  });
  mlos_set_log_handler([](mlos_log_level_t level, const char* message, void*) { d::log_event(level, message); },
                       max, nullptr);
}

// The config as a start would load it: the file (if any) under the
// command line's flags.
Result<d::DaemonConfig> load_config(const std::string& path, const nlohmann::json& flags) {
  d::DaemonConfig config;
  if (!path.empty()) {
    auto c = d::DaemonConfig::from_file(path);
    if (!c) return c.error();
    config = std::move(*c);
  }
  if (Status s = config.merge(flags); !s) return s.error();
  return config;
}

// The config's warnings (DaemonConfig::warnings), logged at start and on
// reload once logging runs; --check-config prints them on stderr.
void log_config_warnings(const d::DaemonConfig& config) {
  for (const std::string& w : config.warnings()) d::log_event(MLOS_LOG_WARN, w, {{"MLOS_EVENT", "config-warning"}});
}

// SIGHUP: the file is read and validated again; a config that fails
// changes nothing. Of a valid one, what a running mlosd can change applies
// now (daemon/config_reload.h), and what needs a restart is named.
void reload(const std::string& path, const nlohmann::json& flags, d::DaemonConfig& config, d::JobManager& jobs,
            const os::ServiceNotifier& notifier) {
  notifier.reloading();
  auto fresh = load_config(path, flags);
  if (!fresh) {
    const std::string why = "reload refused, the running config is kept: " + fresh.error().message;
    d::log_event(MLOS_LOG_ERROR, why, {{"MLOS_EVENT", "reload-refused"}});
    notifier.ready(why);
    return;
  }
  log_config_warnings(*fresh);
  d::ReloadPlan plan = d::plan_reload(config, *fresh);
  config = plan.next;
  jobs.reconfigure({config.quotas, config.memory_thresholds, config.stay_in_cgroups,
                    [group = config.confine_group](uint32_t uid) { return may_confine(group, uid); },
                    config.policies.defaults});
  auto names = [](const std::vector<std::string>& keys) {
    std::string out;
    for (const std::string& k : keys) out += (out.empty() ? "" : ", ") + k;
    return out.empty() ? std::string("none") : out;
  };
  std::string what = "reloaded " + (path.empty() ? std::string("(no config file)") : path) +
                     "; changed: " + names(plan.applied);
  if (!plan.need_restart.empty()) what += "; kept until a restart: " + names(plan.need_restart);
  d::log_event(plan.need_restart.empty() ? MLOS_LOG_INFO : MLOS_LOG_WARN, what,
               {{"MLOS_EVENT", "reloaded"}, {"CHANGED", names(plan.applied)}, {"NEED_RESTART", names(plan.need_restart)}});
  notifier.ready(what);
}

// The job whose cgroup `pid` sits in: its cpuset (v1) or unified (v2)
// path ends in "/<base>/job-<id>". nullopt when not in one (or gone).
// The cgroup `pid` is in, as /proc/<pid>/cgroup names it: the cpuset
// hierarchy's on v1, the unified one's on v2.
std::optional<std::string> cgroup_path_of(pid_t pid, bool v1) {
  auto text = os::read_whole_file("/proc/" + std::to_string(pid) + "/cgroup");
  if (!text || !text->has_value()) return std::nullopt;
  return os::parse_cgroup_path(**text, v1 ? "cpuset" : "");
}

std::optional<uint64_t> job_of_process(pid_t pid, bool v1, const std::string& base) {
  auto path = cgroup_path_of(pid, v1);
  const std::string marker = "/" + base + "/job-";
  if (!path || path->size() <= marker.size()) return std::nullopt;
  const size_t at = path->rfind(marker);
  if (at == std::string::npos) return std::nullopt;
  const std::string digits = path->substr(at + marker.size());
  if (digits.empty() || digits.size() > 16 || digits.find_first_not_of("0123456789") != std::string::npos) {
    return std::nullopt;
  }
  return std::stoull(digits);
}

// Where the hierarchy that holds cpusets is mounted (v1: the cpuset
// controller's, v2: the unified one); "" if unknown. Read once at start.
std::string cpuset_hierarchy_root(bool v1) {
  auto mountinfo = os::read_whole_file("/proc/self/mountinfo");
  if (!mountinfo || !mountinfo->has_value()) return "";
  const os::CgroupMounts m = os::parse_cgroup_mounts(**mountinfo);
  return v1 ? m.cpuset : m.unified;
}

// The CPUs cgroup `path` (as /proc/<pid>/cgroup names it) lets its
// processes use: the effective cpuset of it or of its nearest ancestor that
// has one (v2 shows the files only where the cpuset controller is enabled).
// `root`: cpuset_hierarchy_root(v1).
std::optional<mlos::CpuSet> cgroup_effective_cpus(const std::string& root, bool v1, std::string path) {
  if (root.empty() || path.empty() || path.front() != '/' || path.find("/..") != std::string::npos) return std::nullopt;
  const char* file = v1 ? "/cpuset.effective_cpus" : "/cpuset.cpus.effective";
  for (;;) {
    auto text = os::read_whole_file(root + (path == "/" ? "" : path) + file);
    if (text && text->has_value()) {
      auto cpus = mlos::CpuSet::parse_list(**text);
      if (cpus && !cpus->empty()) return *cpus;
    }
    if (path == "/") return std::nullopt;
    const size_t slash = path.rfind('/');
    path = slash == 0 ? "/" : path.substr(0, slash);
  }
}

// Descriptors: one per connection and its pidfd, one per job owner, plus
// memory watches. The soft limit (1024 by default) is raised to the hard one
// at start; the unit sets LimitNOFILE, and quotas bound what one user holds.
void raise_fd_limit() {
  rlimit r{};
  if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
    r.rlim_cur = r.rlim_max;
    (void)setrlimit(RLIMIT_NOFILE, &r);
  }
}

uint64_t monotonic_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// --give-back-node: the confinement a mlosd that died (kill -9, a crash)
// left is undone by hand. Refused while a mlosd answers on the socket: it
// owns the confinement, and stopping it gives the node back.
int give_back(const d::DaemonConfig& config, const std::shared_ptr<os::CgroupDriver>& driver) {
  if (mlos::protocol::DaemonClient::connect(config.socket, 1000)) {
    std::cerr << "mlosd: a mlosd answers on " << config.socket
              << ": it keeps the confinement; stop it (it gives the node back when it stops)\n";
    return 1;
  }
  if (!driver) {
    std::cout << "nothing to give back: no cgroups (--cgroups none)\n";
    return 0;
  }
  auto made = make_confinement(config, *driver);
  if (!made) return fail(made.error().describe());
  if (!*made) {
    std::cout << "nothing to give back: confine is off\n";
    return 0;
  }
  auto left = (*made)->load();
  if (!left) return fail(left.error().describe());
  const bool held = (*made)->give_back();
  std::cout << (held ? "gave the node back: every process may run on every CPU again (" + config.state_dir +
                           "/confinement.json emptied)"
                     : std::string("nothing to give back: nothing is confined"))
            << "\n";
  const nlohmann::json status = (*made)->status();  // kept: the loop reads into it
  for (const auto& e : status["errors"]) std::cout << "  " << e.get<std::string>() << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"mlosd: the mlOS node daemon (mlOS " MLOS_VERSION_STRING
               "). Grants CPUs to training jobs over a Unix socket, gives each job a cgroup, turns their phases "
               "into CPU weights, and serves Prometheus metrics."};
  app.set_version_flag("--version", "mlosd " MLOS_VERSION_STRING " (commit " MLOS_BUILD_COMMIT ")");
  std::string config_path;
  bool check_config = false, quarantine = false, give_back_node = false;
  std::string socket, state_dir, cgroups, cgroup_base, metrics_listen, metrics_textfile, ledger_dir, confine;
  std::string policy_dir, policy_host, log_target;
  int sample_ms = 0;
  app.add_option("-c,--config", config_path, "JSON config file (keys in docs/daemon.md); flags override it");
  app.add_flag("--check-config", check_config,
               "Validate the config, print the effective one as JSON, and exit (0 valid, 2 invalid)");
  app.add_option("--socket", socket, "Control socket path (default /run/mlos/mlosd.sock)");
  app.add_option("--state-dir", state_dir, "Directory of the durable job registry (default /var/lib/mlos)");
  app.add_option("--cgroups", cgroups, "auto | v1 | v2 | none (default auto)");
  app.add_option("--confine", confine,
                 "Keep other processes off exclusive CPUs: node | off (default node; a list of cgroups: config "
                 "file)");
  app.add_option("--ledger-dir", ledger_dir,
                 "Runtime directory of the embedded claim ledger whose claims mlosd adopts (default /run/mlos; "
                 "'' none)");
  app.add_option("--policy-dir", policy_dir, "Directory of policy modules (config policies.dir; docs/policies.md)");
  app.add_option("--policy-host", policy_host, "The mlos-policyhost binary (config policies.host)");
  app.add_option("--cgroup-base", cgroup_base, "cgroup under which jobs get theirs (default mlos)");
  app.add_option("--log", log_target,
                 "Where messages go: auto | journal | stderr (default auto: the journal when started by systemd)");
  app.add_option("--metrics-listen", metrics_listen, "HTTP address for /metrics: PORT, HOST:PORT or [IPV6]:PORT (default 127.0.0.1:9464; '' off)");
  app.add_option("--metrics-textfile", metrics_textfile, "Also write metrics to this file (node_exporter textfile)");
  app.add_option("--sample-interval-ms", sample_ms, "How often phase pages and owners are checked (default 100)");
  app.add_flag("--give-back-node", give_back_node,
               "Undo the confinement a mlosd that died left (every process back on every CPU; <state_dir>/"
               "confinement.json says what) and exit; refused while a mlosd answers on the socket");
  app.add_flag("--quarantine-state", quarantine,
               "If the registry file is corrupt, move it aside (<file>.corrupt-<time>) and start with no jobs");
  app.footer("Exit codes: 0 stopped by SIGTERM/SIGINT (jobs are kept for the next mlosd) or config valid; "
             "1 failure; 2 usage or config error.");
  // Not CLI11_PARSE: it exits with CLI11's own codes (109 for an unknown
  // option); every usage error here is kExitUsage, as the footer says.
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : kExitUsage;
  }

  nlohmann::json flags = nlohmann::json::object();
  if (!socket.empty()) flags["socket"] = socket;
  if (!state_dir.empty()) flags["state_dir"] = state_dir;
  if (!cgroups.empty()) flags["cgroups"] = cgroups;
  if (!cgroup_base.empty()) flags["cgroup_base"] = cgroup_base;
  if (app.count("--ledger-dir")) flags["ledger_dir"] = ledger_dir;
  if (!confine.empty()) flags["confine"] = confine;
  if (app.count("--metrics-listen")) flags["metrics_listen"] = metrics_listen;
  if (!metrics_textfile.empty()) flags["metrics_textfile"] = metrics_textfile;
  if (sample_ms != 0) flags["sample_interval_ms"] = sample_ms;
  if (!policy_dir.empty()) flags["policies"]["dir"] = policy_dir;
  if (!policy_host.empty()) flags["policies"]["host"] = policy_host;
  if (!log_target.empty()) flags["log"] = log_target;
  auto loaded = load_config(config_path, flags);
  if (!loaded) {
    std::cerr << "mlosd: " << loaded.error().message << "\n";
    return kExitUsage;
  }
  d::DaemonConfig config = std::move(*loaded);
  if (!check_config) {
    start_logging(config.log);
    log_config_warnings(config);
  }
  auto driver = cgroup_driver(config);
  if (check_config) {
    for (const std::string& w : config.warnings()) std::cerr << "mlosd: warning: " << w << "\n";
    nlohmann::json out = config.to_json();
    out["cgroup_driver"] = driver ? (*driver ? (*driver)->version() : "none") : "unavailable: " + driver.error().message;
    std::cout << out.dump(2) << "\n";
    return driver ? 0 : kExitUsage;
  }
  if (!driver) return fail(driver.error().describe());
  if (give_back_node) return give_back(config, *driver);

  os::ServiceNotifier notifier = os::ServiceNotifier::from_environment();
  // SIGTERM, SIGINT and SIGHUP are read from a signalfd by the event loop: blocked
  // here, before any thread starts (the metrics server's), so that every
  // thread inherits the mask and none takes the default action (death
  // without the clean stop).
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGHUP);  // reload, read from the same signalfd
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  raise_fd_limit();
  if (mkdir(config.state_dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return fail("cannot create state directory " + config.state_dir + ": " + strerror(errno));
  }
  auto state = std::make_shared<d::RegistryStore>(config.state_dir);
  // node_cpus "root-cgroup": every CPU of the node, also those this
  // process is kept off (hwloc otherwise leaves them out).
  auto topology = config.node_cpus == "root-cgroup" ? os::load_topology(os::TopologySource{
                                                          os::TopologySource::kThisMachine, "", true})
                                                    : os::shared_topology();
  if (!topology) return fail(topology.error().describe());
  auto allowed = os::linux_kernel().affinity(getpid());
  if (!allowed) return fail(allowed.error().describe());
  if (config.node_cpus == "root-cgroup") {
    if (!*driver) return fail("node_cpus \"root-cgroup\" needs cgroups (not --cgroups none)");
    const bool v1 = (*driver)->version() == "v1";
    auto root = cgroup_effective_cpus(cpuset_hierarchy_root(v1), v1, "/");
    if (!root) return fail("node_cpus \"root-cgroup\": cannot read the root cgroup's effective CPUs");
    *allowed = *root & topology->all_cpus();
  }
  // What a previous mlosd confined: reconciled once the jobs are recovered.
  // The CPUs it kept from everyone are still the node's, though this
  // process (started inside the confinement) cannot run on them now.
  std::shared_ptr<d::Confinement> confinement;
  if (*driver) {
    auto made = make_confinement(config, **driver);
    if (!made) return fail(made.error().describe());
    confinement = *made;
  }
  if (confinement) {
    auto left = confinement->load();
    if (!left) return fail(left.error().describe() + " (move it aside to start without it)");
    for (const auto& line : *left) d::log_event(MLOS_LOG_INFO, line);
    *allowed = *allowed | confinement->withheld();
  }

  d::JobManagerDeps deps;
  // NVML's GPUs, claimable by jobs (docs/gpu.md); none, with the reason
  // logged, where there is no NVML or no NVIDIA GPU.
  deps.topology = mlos::gpu::with_nvml_gpus(*topology);
  {
    std::string gpus;
    for (const auto& g : deps.topology.gpus) {
      if (!g.uuid.empty()) gpus += (gpus.empty() ? "" : ", ") + g.uuid + " (node " + std::to_string(g.numa_node) + ")";
    }
    d::log_event(MLOS_LOG_INFO, gpus.empty() ? "no GPU can be claimed: " + deps.topology.gpu_note
                                             : "GPUs jobs can claim: " + gpus);
  }
  deps.allowed = *allowed;
  deps.memory = [t = *topology] { return os::read_memory_availability(t); };
  deps.cgroups = *driver;
  deps.state = state;
  deps.policy = config.policy;
  deps.identify = [](pid_t pid) { return os::process_id(pid); };
  deps.is_alive = [](const mlos::ProcessId& id) { return os::is_alive(id); };
  deps.peer_process = peer_process;
  deps.move_process = [driver = *driver](const std::string& cgroup, const mlos::ProcessId& target,
                                         uid_t requester) -> Status {
    if (!driver) return mlos::make_error(MLOS_ERR_UNSUPPORTED, "mlosd runs without cgroups");
    return os::attach_checked(*driver, cgroup, target, requester);
  };
  deps.quotas = config.quotas;
  if (*driver) {
    const bool v1 = (*driver)->version() == "v1";
    deps.job_of_process = [v1, base = config.cgroup_base](pid_t pid) { return job_of_process(pid, v1, base); };
    deps.cgroup_of = [v1](pid_t pid) { return cgroup_path_of(pid, v1); };
    deps.cgroup_cpus = [v1, root = cpuset_hierarchy_root(v1)](const std::string& path) {
      return cgroup_effective_cpus(root, v1, path);
    };
    deps.stay_in_cgroups = config.stay_in_cgroups;
    deps.cgroup_base = config.cgroup_base;
  }
  deps.lineage = [](pid_t pid) { return os::lineage(pid); };
  deps.confinement = confinement;
  deps.may_confine = [group = config.confine_group](uint32_t uid) { return may_confine(group, uid); };
  if (!config.ledger_dir.empty()) {
    deps.ledger_changes = [follower = std::make_shared<d::LedgerFollower>(config.ledger_dir)] {
      return follower->read_if_changed();
    };
  }
  deps.fetch_fd = fetch_fd;
  deps.now_ns = monotonic_ns;
  deps.memory_thresholds = config.memory_thresholds;
  deps.node_memory = [] {
    mlos::MemoryFigures f;
    os::add_node_figures(&f, std::nullopt);
    return f;
  };
  deps.now_unix = [] { return static_cast<int64_t>(time(nullptr)); };
  deps.process_cpu_seconds = [](pid_t pid) { return os::process_cpu_seconds(pid); };
  deps.cpu_busy_seconds = [](const mlos::CpuSet& cpus) { return os::cpu_busy_seconds(cpus); };
  if (config.policies.enabled) {
    deps.default_policies = config.policies.defaults;
    deps.policy_hosts = [&config](mlos::policy::PolicyHosts::Callbacks cb) {
      return std::make_unique<mlos::policy::PolicyHosts>(policy_hosts_options(config), std::move(cb));
    };
  }
  d::JobManager jobs(std::move(deps));

  auto report = jobs.recover();
  if (!report && report.error().code == MLOS_ERR_STATE_CORRUPT && quarantine) {
    // Both files: the snapshot and the journal of changes since.
    const std::string suffix = ".corrupt-" + std::to_string(time(nullptr));
    for (const std::string& file : {state->path(), state->journal_path()}) {
      if (rename(file.c_str(), (file + suffix).c_str()) != 0 && errno != ENOENT) {
        return fail("cannot move " + file + " aside");
      }
    }
    d::log_event(MLOS_LOG_WARN, "moved the corrupt registry to " + state->path() + suffix + " (and its journal to " +
                                    state->journal_path() + suffix + "); starting with no jobs");
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
  for (const auto& line : *report) d::log_event(MLOS_LOG_INFO, line, {{"MLOS_EVENT", "recovered"}});

  d::JobMetrics metrics(MLOS_BUILD_COMMIT);
  std::unique_ptr<d::MetricsEndpoint> endpoint;
  if (!config.metrics_listen.empty()) {
    auto started = d::MetricsEndpoint::start(config.metrics_listen, [&metrics] { return metrics.text(); });
    if (!started) return fail(started.error().message);
    endpoint = std::move(*started);
  }
  nlohmann::json info{{"version", MLOS_VERSION_STRING},
                      {"pid", getpid()},
                      {"started_unix", static_cast<int64_t>(time(nullptr))},
                      {"socket", config.socket},
                      {"state_file", state->path()},
                      {"cgroups", jobs.cgroup_version()},
                      {"metrics_listen", config.metrics_listen}};
  std::string metrics_url;
  if (endpoint) {
    // The port it listens on, not the one asked for: "127.0.0.1:0" picks one.
    info["metrics_port"] = endpoint->port();
    // metrics_listen was checked when the config was read.
    const std::string host = d::parse_listen_address(config.metrics_listen)->host;
    metrics_url = "http://" + (host.empty() ? std::string("0.0.0.0") : host) + ":" +
                  std::to_string(endpoint->port()) + "/metrics";
  }
  d::ControlServer server(config, jobs, metrics, info);
  // GPU figures from NVML, kept open for the daemon's life (docs/gpu.md).
  if (auto nvml = mlos::gpu::NvmlLibrary::open()) {
    std::shared_ptr<mlos::gpu::NvmlLibrary> lib(std::move(*nvml));
    server.set_gpu_metrics(std::make_shared<d::GpuMetrics>(
        // The figures only: where each GPU sits was read at start-up.
        *metrics.registry(), [lib] { return mlos::gpu::read_gpu_inventory(*lib, "/sys/bus/pci/devices", false); },
        [](int pid) { return os::lineage(pid); },
        [] { return static_cast<double>(monotonic_ns()) / 1e9; }));
  }
  if (Status s = server.listen(); !s) return fail(s.error().describe());
  server.set_hooks({[&] { reload(config_path, flags, config, jobs, notifier); },
                    [&notifier] { notifier.keep_alive(monotonic_ns() / 1000); },
                    [&notifier](const std::string& why) { notifier.stopping(why); }});
  const std::string ready = "ready on " + config.socket + " (cgroups " + jobs.cgroup_version() +
                            (metrics_url.empty() ? std::string() : ", metrics on " + metrics_url) + "; " +
                            std::to_string(jobs.owners().size()) + " jobs)";
  d::log_event(MLOS_LOG_INFO, ready, {{"MLOS_EVENT", "ready"}});
  notifier.ready(ready);
  if (Status s = server.run(); !s) return fail(s.error().describe());
  // Nobody keeps other processes off the exclusive CPUs once mlosd is gone:
  // they are given back now, and the next mlosd confines again for the
  // exclusive jobs still running (issue 47, finding 8).
  if (confinement && confinement->give_back()) {
    d::log_event(MLOS_LOG_INFO, "stopped: confinement undone, every process may run on every CPU again; the next "
                                "mlosd confines again for the exclusive jobs still running",
                 {{"MLOS_EVENT", "node_given_back"}});
  }
  return 0;
}
