// SPDX-License-Identifier: Apache-2.0
#include "core/environment.h"

#include <algorithm>
#include <array>

namespace mlos {

namespace {

// Sorted by name (find_environment_variable searches it by halves; the
// unit test checks the order). Each entry's first line starts with its
// name: scripts/check_environment.py reads the names from there.
// "CMD" in read_by: mlOS sets it for the program `mlos run` starts and
// reads it nowhere itself.
constexpr EnvironmentVariable kVariables[] = {
    {"MLOS_ADAPT_THREADS", "0 or 1", "1",
     "0: the Python package does not resize torch's thread pool to the advised count during FORWARD", "user",
     "Python"},
    {"MLOS_ALLOCATOR_DIRS", "directories, colon-separated", "libc's directory, its /usr twin, /usr/local/lib",
     "where `mlos run`'s tuning looks for tcmalloc and jemalloc (replaces the default list)", "user", "mlos"},
    {"MLOS_ALLOWED_CPUS", "CPU list (kernel format: 0,2-3)", "every CPU of the described topology",
     "the CPUs this process may use on an MLOS_TOPOLOGY machine (elsewhere its affinity says)",
     "user; mlos run --cpu-list on an MLOS_TOPOLOGY machine", "library, mlos"},
    {"MLOS_CLAIM_ID", "integer", "unset", "the run's claim in its book: the ledger's claim id, or mlosd's job id",
     "mlos run", "CMD"},
    {"MLOS_COLLECTIVE_HOST", "address or host name of this host", "the address of the host name",
     "the address a collective group's rank binds its transport to (its peers connect there)", "user", "library"},
    {"MLOS_COLLECTIVE_IFACE", "network interface name", "unset: the address of the host name",
     "the interface whose address a collective group's rank binds its transport to", "user", "library"},
    {"MLOS_COLLECTIVE_TIMEOUT_MS", "integer ms, 1..3600000", "30000",
     "bounds a collective group's rendezvous and every operation", "user", "library"},
    {"MLOS_CPUS", "CPU list (kernel format: 0,2-3)", "unset: not under mlos run",
     "the run's CPUs; a local rank (LOCAL_WORLD_SIZE > 1) still bound to all of them takes its share", "mlos run",
     "library, Python"},
    {"MLOS_DAEMON_SOCKET", "path", "/run/mlos/mlosd.sock",
     "mlosd's control socket, for the library and mlos status, top, policy", "user", "library, mlos"},
    {"MLOS_DATALOAD_HELPER", "path", "beside libmlos, then the configured prefix's libexec/mlos",
     "the mlos-dataload helper binary a data loader starts", "user", "library"},
    {"MLOS_DEFAULT_POLICIES", "comma list of policy names (empty: none)", "thread-governor",
     "the policies every embedded job gets", "user", "library, mlos"},
    {"MLOS_ENGINE", "daemon or embedded", "unset", "which engine holds the run's claim", "mlos run", "CMD"},
    {"MLOS_GPUS", "comma list of GPU UUIDs", "unset: no --gpus",
     "the GPUs granted to the run (CUDA_VISIBLE_DEVICES names the same)", "mlos run --gpus", "CMD"},
    {"MLOS_GPUSHARE_LIBRARY", "path", "beside mlos, then the configured prefix's lib/mlos",
     "the GPU sharing interposer mlos run --gpu-memory / --gpu-share preloads", "user", "mlos"},
    {"MLOS_GPUSHARE_STATE", "path", "unset: private books with the limits below",
     "the job's GPU share file (limits and use), which every process of the job maps",
     "mlos run --gpu-memory / --gpu-share", "interposer"},
    {"MLOS_GPU_MEMORY_LIMIT", "integer bytes", "unset: no cap",
     "device memory cap per GPU, where there is no share file", "mlos run --gpu-memory", "interposer"},
    {"MLOS_GPU_SHARE", "integer percent, 1..100", "unset: no share",
     "compute share per GPU, where there is no share file", "mlos run --gpu-share", "interposer"},
    {"MLOS_GPU_SHARE_MECHANISM", "throttle or mps", "throttle",
     "who enforces the compute share: the interposer delaying kernel launches, or MPS",
     "mlos run --gpu-share", "interposer"},
    {"MLOS_GROUP", "key prefix, without spaces or '/'", "mlos (.restartN appended after a torchrun restart)",
     "the prefix of a collective group's keys in its store", "user", "library"},
    {"MLOS_JOB_POLICIES", "JSON object of policy configs, e.g. {\"example\": {\"threads\": 1}}", "unset: none",
     "policies every job the program requests gets, in embedded mode", "user; mlos run --policy (embedded)",
     "library, mlos"},
    {"MLOS_LOG_LEVEL", "error, warn, info or debug", "library: nothing printed; mlosd: info",
     "the library's messages on stderr when no log handler is set; the detail mlosd logs", "user",
     "library, mlosd"},
    {"MLOS_MEMORY_CRITICAL", "percent headroom", "8", "memory pressure is CRITICAL at or below this headroom",
     "user", "library"},
    {"MLOS_MEMORY_HOLD_MS", "integer ms, at most 60000", "1000",
     "how long every input must stay clear of its exit threshold before the pressure level drops", "user",
     "library"},
    {"MLOS_MEMORY_MODERATE", "percent headroom", "20", "memory pressure is MODERATE at or below this headroom",
     "user", "library"},
    {"MLOS_MEMORY_PSI_FULL", "percent, 0..100 (0: off)", "5",
     "memory pressure is CRITICAL at or above this PSI full avg10", "user", "library"},
    {"MLOS_MEMORY_PSI_SOME", "percent, 0..100 (0: off)", "10",
     "memory pressure is MODERATE at or above this PSI some avg10", "user", "library"},
    {"MLOS_MEMORY_SAMPLE_MS", "integer ms, 10..10000", "100",
     "how often memory figures are sampled when no event arrives", "user", "library"},
    {"MLOS_MODE", "auto, embedded or daemon", "auto",
     "the engine: mlosd (daemon), the in-process one (embedded), or mlosd when it answers (auto)", "user",
     "library, mlos"},
    {"MLOS_NCCL_LIBRARY", "path", "the libnccl.so.2 already loaded, else the system's",
     "the NCCL library device collectives load", "user", "library"},
    {"MLOS_NUMA_NODE", "integer", "unset", "the run's primary NUMA node", "mlos run", "CMD"},
    {"MLOS_NVML_LIBRARY", "path", "libnvidia-ml.so.1", "the NVML library loaded instead (tests, unusual installs)",
     "user", "library, mlos, mlosd, interposer"},
    {"MLOS_POLICY_DIR", "directory", "beside libmlos or mlos, then the configured prefix's lib/mlos/policies",
     "the policy directory of embedded jobs and of mlos policy", "user", "library, mlos"},
    {"MLOS_POLICY_HOST", "path", "beside libmlos or mlos, then the configured prefix's libexec/mlos",
     "the mlos-policyhost binary that runs embedded jobs' policies", "user", "library, mlos"},
    {"MLOS_PROFILE", "stderr or 1, a file path (appended to), 0 or empty (off)", "off",
     "print each job's phase profile when it releases its resources", "user; mlos run --profile (stderr)",
     "library"},
    {"MLOS_PYTHON_HOOKS", "1, or anything else for off", "off",
     "1: the mlos_training package installs its zero-code-change hooks at interpreter start-up",
     "mlos run (unless --no-python-hooks)", "Python"},
    {"MLOS_RANK_SPLIT", "0, or anything else for on", "on", "0: a local rank does not take its share of MLOS_CPUS",
     "user", "library"},
    {"MLOS_RECOMMENDED_THREADS", "integer", "unset",
     "physical cores of the run's CPUs (of a local rank's share, once taken): the threads to use",
     "mlos run; Python (a local rank's share)", "CMD"},
    {"MLOS_RUNTIME_DIR", "directory", "/run/mlos for root, else $XDG_RUNTIME_DIR/mlos, else /tmp/mlos-UID",
     "node-local state: the embedded ledger (claims.json), policy reports, GPU share files", "user",
     "library, mlos"},
    {"MLOS_STORE", "file:/DIR | redis://HOST[:PORT] | tcp://HOST:PORT", "tcp://$MASTER_ADDR:$MASTER_PORT",
     "where a collective group's ranks meet", "user", "library, Python"},
    {"MLOS_STORE_SECRET", "16 to 256 printable characters, no spaces", "unset: none",
     "the group secret a TCPStore served by rank 0 asks of every rank", "user; mlos run --store-secret",
     "library, Python, mlos"},
    {"MLOS_THREAD_ENV", "comma list of variable names", "unset",
     "the thread-pool variables mlos run set (OMP_NUM_THREADS, ...), which a local rank resizes to its share",
     "mlos run", "mlos, Python"},
    {"MLOS_TOPOLOGY", "synthetic:<hwloc description> | xml:<file>", "this machine",
     "plan on another machine's topology (mlos topo, mlos run --dry-run, tests)", "user", "library, mlos, mlosd"},
    {"MLOS_TUNE_CHOICE", "candidate name", "unset",
     "the start-up tuning chosen; an inner mlos run keeps it, mlos status and the profile show it", "mlos run",
     "library, mlos"},
    {"MLOS_TUNE_DIR", "directory",
     "/var/lib/mlos/tune for root, else $XDG_STATE_HOME/mlos/tune, else ~/.local/state/mlos/tune",
     "where mlos run keeps each command's tuning trials", "user", "mlos"},
    {"MLOS_TUNE_EVIDENCE", "absolute path", "unset: no step times recorded",
     "the file a job appends its time per training step to when it releases", "mlos run", "library"},
    {"MLOS_TUNE_REASON", "text", "unset", "why the start-up tuning was chosen, shown in the phase profile",
     "mlos run", "library"},
};

constexpr bool sorted_and_unique() {
  for (size_t i = 1; i < std::size(kVariables); ++i) {
    if (!(kVariables[i - 1].name < kVariables[i].name)) return false;
  }
  return true;
}
static_assert(sorted_and_unique(), "kVariables must be sorted by name, each name once");

// A Markdown table cell: '|' would end the cell, and "<file>" would be
// taken for an HTML tag.
std::string cell(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '<') {
      out += "&lt;";
    } else if (c == '>') {
      out += "&gt;";
    } else {
      if (c == '|') out += '\\';
      out += c;
    }
  }
  return out;
}

}  // namespace

std::span<const EnvironmentVariable> environment_variables() { return kVariables; }

const EnvironmentVariable* find_environment_variable(std::string_view name) {
  const auto* it = std::lower_bound(std::begin(kVariables), std::end(kVariables), name,
                                    [](const EnvironmentVariable& v, std::string_view n) { return v.name < n; });
  return it != std::end(kVariables) && it->name == name ? it : nullptr;
}

std::string environment_text() {
  std::string out;
  for (const auto& v : kVariables) {
    out += std::string(v.name) + "\n    " + std::string(v.meaning) + "\n    value: " + std::string(v.value) +
           "\n    default: " + std::string(v.default_value) + "\n    set by: " + std::string(v.set_by) +
           "; read by: " + std::string(v.read_by) + "\n";
  }
  return out;
}

std::string environment_markdown() {
  std::string out = "| Variable | Value | Default | Meaning | Set by | Read by |\n|---|---|---|---|---|---|\n";
  for (const auto& v : kVariables) {
    out += "| `" + std::string(v.name) + "` | " + cell(v.value) + " | " + cell(v.default_value) + " | " +
           cell(v.meaning) + " | " + cell(v.set_by) + " | " + cell(v.read_by) + " |\n";
  }
  return out;
}

}  // namespace mlos
