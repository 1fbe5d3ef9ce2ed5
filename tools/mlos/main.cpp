// SPDX-License-Identifier: Apache-2.0
// mlos: command-line tool of mlOS. See docs/cli.md.
#include <CLI/CLI.hpp>
#include <iostream>
#include <limits>
#include <string>
#include <vector>

#include "build_commit.h"
#include "cli_output.h"
#include "commands.h"
#include "install_paths.h"
#include "mlos/version.h"
#include "usage_hints.h"

int main(int argc, char** argv) {
  using namespace mlos::cli;
  CLI::App app{"mlos: ML-training-aware resource management (mlOS " MLOS_VERSION_STRING ")", "mlos"};
  app.require_subcommand(1);
  // "mlos 0.1.0 (commit 1a2b3c4)": the commit the binary was built from,
  // "-dirty" when the tree differed from it, "unknown" without git.
  app.set_version_flag("--version", "mlos " MLOS_VERSION_STRING " (commit " MLOS_BUILD_COMMIT ")");
  app.footer(
      "Exit codes: 0 success; 1 failure; 2 usage error. `mlos run` returns CMD's exit status, or 125 if mlos "
      "failed before starting CMD, 126 if CMD is not executable, 127 if it was not found. `mlos daemon` returns "
      "mlosd's exit status, or 126/127 if mlosd cannot be run / was not found.\n"
      "Environment: MLOS_MODE (auto | daemon | embedded: whose book `mlos run` claims in; auto: mlosd when it "
      "answers), MLOS_RUNTIME_DIR (ledger directory), MLOS_DAEMON_SOCKET (mlosd's socket), MLOS_TOPOLOGY (synthetic:<hwloc desc> | xml:<file>, "
      "for planning on other machines), MLOS_ALLOWED_CPUS (allowed CPUs on such a topology), MLOS_TUNE_DIR "
      "(what `mlos run` learnt per command), MLOS_ALLOCATOR_DIRS (where it looks for allocators), MLOS_NVML_LIBRARY "
      "(the NVML library to load instead of libnvidia-ml.so.1); `mlos env` lists every variable.\n"
      "Examples:\n"
      "  mlos run -- python train.py          run on every CPU this process may use\n"
      "  mlos run --cpus 8 --mem 16G -- ./train\n"
      "  mlos top                             live view of mlosd's jobs (q quits)\n"
      "  mlos status --json\n"
      "`mlos SUBCOMMAND --help` shows each subcommand's options; man pages: mlos(1), mlos-run(1), ...");

  TopoOptions topo;
  auto* topo_cmd = app.add_subcommand("topo", "Show NUMA nodes, cores, allowed CPUs and GPUs as mlOS sees them");
  topo_cmd->add_flag("--json", topo.json, "Machine-readable output (schema_version 1)");
  topo_cmd->footer("Examples:\n  mlos topo\n  MLOS_TOPOLOGY='synthetic:pack:2 numa:2 core:8 pu:2' mlos topo --json");

  StatusOptions status;
  auto* status_cmd = app.add_subcommand(
      "status", "List mlosd's jobs (every user's), or without a daemon your own claims in this user's embedded "
                "ledger (dead owners omitted)");
  status_cmd->add_flag("--json", status.json, "Machine-readable output (schema_version 1)");
  status_cmd
      ->add_option("--source", status.source,
                   "auto: mlosd if one answers at the socket, else the claim ledger; daemon: mlosd or fail; "
                   "ledger: the claim ledger only")
      ->check(CLI::IsMember({"auto", "daemon", "ledger"}))
      ->default_str("auto");
  status_cmd->add_option("--socket", status.socket, "mlosd's socket (default $MLOS_DAEMON_SOCKET, else /run/mlos/mlosd.sock)");
  status_cmd->footer(
      "Examples:\n  mlos status\n  mlos status --source ledger\n  mlos status --json --socket /run/mlos/mlosd.sock");

  TopOptions top;
  auto* top_cmd = app.add_subcommand(
      "top", "Live view of mlosd's jobs and this node's CPUs: per-CPU meters, each job's phase, phase profile, "
             "memory, pressure and CPU use (q quits)");
  top_cmd->add_option("--socket", top.socket, "mlosd's socket (default $MLOS_DAEMON_SOCKET, else /run/mlos/mlosd.sock)");
  top_cmd->add_option("-d,--interval", top.interval, "Seconds between refreshes")
      ->check(CLI::Range(0.05, 86400.0))
      ->default_str("1.0");
  top_cmd->add_option("-n,--iterations", top.iterations,
                    "Print N refreshes of the plain table, then exit (0: until q or Ctrl-C)")
      ->check(CLI::NonNegativeNumber)
      ->default_str("0");
  top_cmd->add_flag("-b,--batch", top.batch,
                    "The plain table, no screen control (like top -b); implied by --iterations and when stdout or "
                    "stdin is not a terminal");
  top_cmd->footer(
      "Keys (interactive view): q or F10 quit; s, F6 or > sort by the next column, < the previous; / or F4 filter "
      "jobs by label, Esc clears it; h, ? or F1 help; space refresh now.\n"
      "Examples:\n"
      "  mlos top\n"
      "  mlos top -d 0.5 --socket /tmp/mlosd.sock\n"
      "  mlos top -b -n 3 > top.txt             three frames of the plain table");

  // `mlos daemon ARGS...` is dispatched before parsing (below): ARGS are
  // mlosd's, verbatim. This entry is for `mlos --help`.
  app.add_subcommand("daemon",
                     "Run mlosd (found next to mlos, in ../sbin, or on PATH) with ARGS, e.g. --check-config -c FILE; "
                     "`mlos daemon --help` shows mlosd's options");

  RunOptions run;
  auto* run_cmd = app.add_subcommand(
      "run", "Run CMD inside an allocation (CPUs, memory policy, thread pools); CMD is exec'd and keeps the PID");
  auto* cpus_opt = run_cmd
                       ->add_option("--cpus", run.cpus,
                                    "Number of CPUs (>= 1; default: every CPU this process may use)")
      ->check(CLI::Range(1, std::numeric_limits<int>::max()));
  run_cmd
      ->add_option("--cpu-list", run.cpu_list,
                   "Exactly these CPUs, in the kernel's list format as taskset -c takes it (0,2-3); each must be "
                   "one this process may use, and they are claimed like any others (busy if held exclusively)")
      ->type_name("LIST")
      ->excludes(cpus_opt);
  run_cmd->add_option("--mem", run.mem, "Memory the job needs, e.g. 4G; fails if not available")
      ->check(CLI::Validator([](std::string& v) { return v.empty() ? std::string("empty size") : std::string(); },
                             "SIZE", "non-empty"));
  run_cmd->add_option("--numa", run.numa, "NUMA node: auto (best fit) or an index")->default_str("auto");
  run_cmd->add_flag("--exclusive", run.exclusive,
                    "No other mlOS claim may share these CPUs (under mlosd, for root or its confine_group: no other "
                    "process of the node either)");
  run_cmd->add_flag("--strict-mem", run.strict_mem,
                    "Bind memory to the node(s), whose free memory must then hold --mem (default: prefer them)");
  run_cmd->add_flag("--single-node", run.single_node, "Fail rather than span several NUMA nodes");
  run_cmd
      ->add_option("--gpus", run.gpus,
                   "NVIDIA GPUs for CMD: a count, or UUIDs (or unique prefixes) separated by commas; exclusive "
                   "unless --shared-gpus. CMD gets CUDA_VISIBLE_DEVICES (by UUID) and MLOS_GPUS, and its CPUs and "
                   "memory come from the GPUs' NUMA node unless --numa names one (docs/gpu.md)")
      ->type_name("N|UUIDS");
  run_cmd->add_flag("--shared-gpus", run.shared_gpus,
                    "Let other shared GPU claims hold CMD's GPUs too (they are never shared with exclusive ones)");
  run_cmd
      ->add_option("--gpu-memory", run.gpu_memory,
                   "Cap the device memory CMD (all its processes) may allocate on each of its GPUs, e.g. 8G: an "
                   "allocation past it fails as out of memory, and CUDA reports the cap as the GPU's size. Needs "
                   "--gpus; preloads libmlos-gpushare.so (docs/gpu.md)")
      ->type_name("SIZE");
  run_cmd
      ->add_option("--gpu-share", run.gpu_share,
                   "CMD's share of each of its GPUs' compute, in percent: enforced by MPS when its control daemon "
                   "runs, else by delaying kernel launches. Needs --gpus; usually with --shared-gpus")
      ->type_name("PCT");
  run_cmd->add_flag("--no-thread-env", run.no_thread_env,
                    "Do not set OMP_NUM_THREADS, MKL_NUM_THREADS and the like");
  run_cmd->add_flag("--no-python-hooks", run.no_python_hooks,
                    "Do not set MLOS_PYTHON_HOOKS=1 (the mlos_training package's zero-code-change hooks)");
  run_cmd->add_flag("--profile", run.profile,
                    "Print the phase profile (seconds and share per phase) on stderr when CMD releases its "
                    "allocation or exits (sets MLOS_PROFILE=stderr)");
  run_cmd->add_flag("--store-secret", run.store_secret,
                    "Give CMD a fresh group secret (MLOS_STORE_SECRET, 32 random hex digits; one already set is "
                    "kept): the TCPStore that rank 0 serves (MLOS_STORE=tcp://, or MASTER_ADDR/MASTER_PORT "
                    "without torchrun) then serves only ranks started from CMD (docs/collectives.md)");
  run_cmd->add_flag("--no-tune", run.no_tune,
                    "Start CMD with the environment as it is: no allocator preloaded, no allocator or OpenMP "
                    "options, no step times recorded (docs/tuning.md)");
  run_cmd->add_flag("--explain", run.explain,
                    "Print on stderr which start-up settings CMD gets (allocator, its options, OpenMP's wait "
                    "policy) and why: the default for its kind of command, a trial, or its earlier runs' step "
                    "times");
  run_cmd->add_option("--label", run.label,
                      "Name shown by `mlos status`, UTF-8 (default: CMD, bytes that are not UTF-8 shown as U+FFFD)");
  run_cmd
      ->add_option("--policy", run.policies,
                   "Attach policy module NAME to the job, with its config JSON (an object; default {}); "
                   "repeatable; under mlosd, or in embedded mode by a policy host of this job's own (see `mlos policy "
                   "list`)")
      ->type_name("NAME[=JSON]")
      ->expected(1)
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  run_cmd->add_flag("--dry-run", run.dry_run, "Print the placement and exit without claiming or running");
  run_cmd->add_flag("--json", run.json, "Print the placement as JSON (stdout for --dry-run, else stderr)");
  run_cmd->add_flag("-v,--verbose", run.verbose, "Print the placement on stderr before starting CMD");
  run_cmd->add_option("command", run.command, "CMD [ARGS...] (after --); not needed with --dry-run");
  run_cmd->footer(
      "Options after CMD belong to mlos: put `--` before CMD so that its own options reach it.\n"
      "Examples:\n"
      "  mlos run -- python train.py --epochs 3      every CPU this process may use\n"
      "  mlos run --cpus 8 --mem 16G --exclusive -- torchrun --nproc-per-node 2 train.py\n"
      "  mlos run --cpu-list 0,2-3 -- ./bench        exactly CPUs 0, 2 and 3\n"
      "  mlos run --gpus 1 --cpus 8 -- python train.py   a GPU, and 8 CPUs on its NUMA node\n"
      "  mlos run --cpus 4 --dry-run --json          where it would run, claiming nothing\n"
      "  mlos run --policy example='{\"threads\":1}' -- ./train");

  PolicyOptions policy;
  auto* policy_cmd = app.add_subcommand("policy", "Policy modules (mlosd's, or an embedded job's): list, describe, "
                                                  "load, unload");
  policy_cmd->require_subcommand(1);
  auto add_common = [&policy](CLI::App* sub) {
    sub->add_flag("--json", policy.json, "Machine-readable output (schema_version 1)");
    sub->add_option("--socket", policy.socket,
                    "mlosd's socket (default $MLOS_DAEMON_SOCKET, else /run/mlos/mlosd.sock)");
    sub->callback([&policy, sub] { policy.action = sub->get_name(); });
    return sub;
  };
  auto* policy_list = add_common(policy_cmd->add_subcommand(
      "list", "Policies in mlosd's policy directory (and files skipped, with why), loaded ones with their "
              "state, jobs and failures, and the defaults every job gets; without mlosd, the ones an embedded "
              "job can request (its policy directory, host and defaults)"));
  policy_list
      ->add_option("--source", policy.source,
                   "auto: mlosd if one answers at the socket, else the embedded catalog; daemon: mlosd or fail; "
                   "embedded: the catalog of this mlos's policy directory (default: $MLOS_MODE when it is "
                   "daemon or embedded, else auto)")
      ->check(CLI::IsMember({"auto", "daemon", "embedded"}));
  auto* policy_info = add_common(policy_cmd->add_subcommand(
      "info", "Name, description and config schema of policy NAME, as the policy describes itself "
              "(runs mlos-policyhost --describe on its file; needs no mlosd)"));
  policy_info->add_option("name", policy.name, "The policy")->required();
  policy_info->add_option("--dir", policy.dir,
                          "Policy directory (default: mlosd's, else this mlos's: " + default_policy_dir() + ")");
  policy_info->add_option("--policy-host", policy.host,
                          "The mlos-policyhost binary (default: $MLOS_POLICY_HOST, else beside mlos, else the installed one)");
  auto* policy_load = add_common(
      policy_cmd->add_subcommand("load", "Start policy NAME now and keep it loaded without jobs (root)"));
  policy_load->add_option("name", policy.name, "The policy")->required();
  auto* policy_unload = add_common(
      policy_cmd->add_subcommand("unload", "Stop policy NAME, loaded by `load`, once no job uses it (root)"));
  policy_unload->add_option("name", policy.name, "The policy")->required();
  policy_cmd->footer("Examples:\n  mlos policy list\n  MLOS_MODE=embedded mlos policy list\n  mlos policy info phase-weights\n  sudo mlos policy load thread-governor");

  EnvOptions env;
  auto* env_cmd = app.add_subcommand(
      "env", "List the environment variables mlOS reads and the ones `mlos run` sets: value, default, meaning, "
             "who sets and who reads each");
  env_cmd->add_flag("--markdown", env.markdown, "The Markdown table docs/environment.md holds");
  env_cmd->footer("Examples:\n  mlos env\n  mlos env | grep -A4 MLOS_STORE\n  mlos env --markdown");

  if (argc >= 2 && std::string(argv[1]) == "daemon") return run_daemon(DaemonOptions{{argv + 2, argv + argc}});

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
  // Mistyped words are named with the closest valid ones. An unknown
  // subcommand is caught before parsing: CLI11 would take it for a stray
  // positional and report "A subcommand is required".
  const std::vector<std::string> own_args(argv + 1, argv + own_argc);
  const auto problem = find_usage_problem(app, own_args, run_cmd);
  if (problem && problem->kind == UsageProblem::Kind::kSubcommand) {
    std::cerr << problem->message << "\n";
    return kExitUsage;
  }
  try {
    app.parse(own_argc, argv);
    if (own_argc != argc) {
      if (!run_cmd->parsed()) throw CLI::ExtrasError(std::string("mlos"), after_dashes);
      if (!run.command.empty()) throw CLI::ExtrasError(std::string("run"), run.command);
      run.command = after_dashes;
    }
  } catch (const CLI::ParseError& e) {
    // CLI11 has its own exit codes (105 for a failed check, 109 for an
    // unknown option, ...); mlos documents one usage code per subcommand.
    const int usage_rc = run_cmd->parsed() ? kExitRunFailed : kExitUsage;
    if (e.get_exit_code() != 0 && problem) {
      std::cerr << problem->message << "\n";
      return problem->path == "mlos run" ? kExitRunFailed : kExitUsage;
    }
    int rc = app.exit(e);
    if (rc == 0) return kExitOk;  // --help, --version
    return usage_rc;
  }
  // The commands report their errors themselves; this is the net for an
  // exception that escaped one (e.g. from the JSON library): a documented
  // failure code and a message instead of std::terminate's abort (134).
  try {
    if (topo_cmd->parsed()) return run_topo(topo);
    if (status_cmd->parsed()) return run_status(status);
    if (top_cmd->parsed()) return run_top(top);
    if (policy_cmd->parsed()) return run_policy(policy);
    if (env_cmd->parsed()) return run_env(env);
    return run_run(run);
  } catch (const std::exception& e) {
    std::cerr << "mlos: internal error: " << e.what() << "\n";
    return run_cmd->parsed() ? kExitRunFailed : kExitFailure;
  }
}
