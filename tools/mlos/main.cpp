// mlos: command-line tool of mlOS. See docs/cli.md.
#include <CLI/CLI.hpp>
#include <iostream>
#include <limits>
#include <string>
#include <vector>

#include "cli_output.h"
#include "commands.h"
#include "mlos/version.h"

int main(int argc, char** argv) {
  using namespace mlos::cli;
  CLI::App app{"mlos: ML-training-aware resource management (mlOS " MLOS_VERSION_STRING ")"};
  app.require_subcommand(1);
  app.set_version_flag("--version", MLOS_VERSION_STRING);
  app.footer(
      "Exit codes: 0 success; 1 failure; 2 usage error. `mlos run` returns CMD's exit status, or 125 if mlos "
      "failed before starting CMD, 126 if CMD is not executable, 127 if it was not found.\n"
      "Environment: MLOS_RUNTIME_DIR (ledger directory), MLOS_TOPOLOGY (synthetic:<hwloc desc> | xml:<file>, "
      "for planning on other machines), MLOS_ALLOWED_CPUS (allowed CPUs on such a topology).");

  TopoOptions topo;
  auto* topo_cmd = app.add_subcommand("topo", "Show NUMA nodes, cores, allowed CPUs and GPUs as mlOS sees them");
  topo_cmd->add_flag("--json", topo.json, "Machine-readable output (schema_version 1)");

  StatusOptions status;
  auto* status_cmd = app.add_subcommand("status", "List the CPU claims on this machine (dead owners omitted)");
  status_cmd->add_flag("--json", status.json, "Machine-readable output (schema_version 1)");

  RunOptions run;
  auto* run_cmd = app.add_subcommand(
      "run", "Run CMD inside an allocation (CPUs, memory policy, thread pools); CMD is exec'd and keeps the PID");
  run_cmd->add_option("--cpus", run.cpus, "Number of CPUs (>= 1)")
      ->required()
      ->check(CLI::Range(1, std::numeric_limits<int>::max()));
  run_cmd->add_option("--mem", run.mem, "Memory the job needs, e.g. 4G; fails if not available")
      ->check(CLI::Validator([](std::string& v) { return v.empty() ? std::string("empty size") : std::string(); },
                             "SIZE", "non-empty"));
  run_cmd->add_option("--numa", run.numa, "NUMA node: auto (best fit) or an index")->default_str("auto");
  run_cmd->add_flag("--exclusive", run.exclusive, "No other mlOS claim may share these CPUs");
  run_cmd->add_flag("--strict-mem", run.strict_mem,
                    "Bind memory to the node(s), whose free memory must then hold --mem (default: prefer them)");
  run_cmd->add_flag("--single-node", run.single_node, "Fail rather than span several NUMA nodes");
  run_cmd->add_flag("--no-thread-env", run.no_thread_env,
                    "Do not set OMP_NUM_THREADS, MKL_NUM_THREADS and the like");
  run_cmd->add_option("--label", run.label, "Name shown by `mlos status` (default: CMD)");
  run_cmd->add_flag("--dry-run", run.dry_run, "Print the placement and exit without claiming or running");
  run_cmd->add_flag("--json", run.json, "Print the placement as JSON (stdout for --dry-run, else stderr)");
  run_cmd->add_flag("-v,--verbose", run.verbose, "Print the placement on stderr before starting CMD");
  run_cmd->add_option("command", run.command, "CMD [ARGS...] (after --); not needed with --dry-run");

  // Everything after the first "--" is CMD, passed on verbatim: CLI11 would
  // otherwise read "[a,b]" as a list and strip or split it.
  int own_argc = argc;
  std::vector<std::string> after_dashes;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--") {
      own_argc = i;
      after_dashes.assign(argv + i + 1, argv + argc);
      break;
    }
  }
  try {
    app.parse(own_argc, argv);
    if (own_argc != argc) {
      if (!run_cmd->parsed()) throw CLI::ExtrasError(std::string("mlos"), after_dashes);
      if (!run.command.empty()) throw CLI::ExtrasError(std::string("run"), run.command);
      run.command = after_dashes;
    }
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    if (rc == 0) return kExitOk;  // --help, --version
    return run_cmd->parsed() ? kExitRunFailed : kExitUsage;
  }
  if (topo_cmd->parsed()) return run_topo(topo);
  if (status_cmd->parsed()) return run_status(status);
  return run_run(run);
}
