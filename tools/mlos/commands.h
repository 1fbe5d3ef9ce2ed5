// The mlos subcommands. Each returns the process exit code (cli_output.h).
#pragma once

#include <string>
#include <vector>

namespace mlos::cli {

struct TopoOptions {
  bool json = false;
};
int run_topo(const TopoOptions& options);

struct StatusOptions {
  bool json = false;
};
int run_status(const StatusOptions& options);

struct RunOptions {
  int cpus = 0;
  std::string mem;           // "" = no memory requirement
  std::string numa = "auto"; // "auto" or a node index
  bool exclusive = false;
  bool strict_mem = false;
  bool single_node = false;
  bool no_thread_env = false;
  bool dry_run = false;
  bool json = false;
  bool verbose = false;
  std::string label;
  std::vector<std::string> command;
};
int run_run(const RunOptions& options);

}  // namespace mlos::cli
