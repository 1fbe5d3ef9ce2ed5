/* SPDX-License-Identifier: Apache-2.0 */
// The mlos subcommands. Each returns the process exit code (cli_output.h).
#pragma once

#include <string>
#include <vector>

namespace mlos::cli {

struct TopoOptions {
  bool json = false;
};
int run_topo(const TopoOptions& options);

// source: "auto" (mlosd if one answers at socket, else the ledger),
// "daemon" (mlosd or fail) or "ledger". socket "" = default_socket_path().
struct StatusOptions {
  bool json = false;
  std::string source = "auto";
  std::string socket;
};
int run_status(const StatusOptions& options);

// cpus 0 and cpu_list "": every CPU the process may use. cpu_list: exactly
// those CPUs (kernel list format), still claimed through the book.
struct RunOptions {
  int cpus = 0;
  std::string cpu_list;
  std::string mem;           // "" = no memory requirement
  std::string numa = "auto"; // "auto" or a node index
  bool exclusive = false;
  bool strict_mem = false;
  bool single_node = false;
  bool no_thread_env = false;
  bool no_python_hooks = false;  // do not set MLOS_PYTHON_HOOKS=1
  bool profile = false;          // MLOS_PROFILE=stderr: the phase profile at exit
  bool store_secret = false;     // MLOS_STORE_SECRET: a fresh group secret, unless one is set
  bool no_tune = false;          // no start-up tuning (allocator, its options): run_tuning.h
  bool explain = false;          // print the tuning choice and why on stderr
  bool dry_run = false;
  bool json = false;
  bool verbose = false;
  std::string label;
  // --policy NAME[=JSON], repeatable: policy modules attached with the
  // grant (mlosd only; JSON is the policy's config object, default {}).
  std::vector<std::string> policies;
  std::string gpus;          // --gpus N | UUID[,UUID...]; "" = none
  bool shared_gpus = false;  // --shared-gpus
  std::string gpu_memory;    // --gpu-memory SIZE: the job's device memory cap per GPU
  int gpu_share = -1;        // --gpu-share PCT: its compute share per GPU; -1 = not given
  std::vector<std::string> command;
};
int run_run(const RunOptions& options);

// mlos policy ACTION: list | info | load | unload (name for the last
// three). dir, host: info's policy directory and mlos-policyhost ("": as
// docs/cli.md says). socket "" = default_socket_path().
struct PolicyOptions {
  std::string action;
  std::string name;
  std::string dir;
  std::string host;
  std::string socket;
  std::string source;  // list: auto, daemon or embedded ("": from MLOS_MODE, else auto)
  bool json = false;
};
int run_policy(const PolicyOptions& options);

// The interactive view (top_screen.h) on a terminal; the plain table
// (top_view.h) with batch, iterations > 0 (N frames, then exit 0), or when
// stdout or stdin is not a terminal. iterations 0 = until q or
// SIGINT/SIGTERM.
struct TopOptions {
  std::string socket;
  double interval = 1.0;
  int iterations = 0;
  bool batch = false;
};
int run_top(const TopOptions& options);

// The environment variables mlOS reads and sets (core/environment.h): one
// block each for a terminal, or with markdown the table docs/environment.md
// holds. Reads no variable itself; always 0.
struct EnvOptions {
  bool markdown = false;
};
int run_env(const EnvOptions& options);

// Execs mlosd with `args`; returns only if that failed (126, or 127 when
// mlosd was not found).
struct DaemonOptions {
  std::vector<std::string> args;
};
int run_daemon(const DaemonOptions& options);

}  // namespace mlos::cli
