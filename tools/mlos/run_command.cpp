// SPDX-License-Identifier: Apache-2.0
// mlos run: run an unmodified program inside an allocation.
//
// mlos claims the CPUs as an *envelope* owned by its own PID, applies the
// affinity and memory policy to itself, sets the thread-pool environment and
// then exec()s the command, which keeps the PID. The claim therefore lives
// exactly as long as the command: when it exits or is killed, the claim is
// reclaimed (dead PID + start time), and its exit status is the command's.
// Libraries inside the command that request resources nest inside the
// envelope instead of competing with it.
//
// The claim goes into the node's one book: mlosd's when it runs (MLOS_MODE
// auto or daemon; mlosd also moves the process into the job's cgroup), the
// embedded ledger otherwise, exactly as the library chooses.
#include <sys/random.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <iostream>

#include "cli_output.h"
#include "commands.h"
#include "core/utf8.h"
#include "api/engine_select.h"
#include "engine/embedded_policy_config.h"
#include "engine/ledger_claim_broker.h"
#include "os/environment.h"
#include "os/hwloc_topology.h"
#include "os/kernel.h"
#include "policy/policy_catalog.h"
#include "run_gpu_share.h"
#include "run_tuning.h"

namespace mlos::cli {

namespace {

// --store-secret: MLOS_STORE_SECRET for CMD, 16 bytes from the kernel's
// random source in hex, unless the environment already has one (a launcher
// above chose it; every rank must share it).
Status give_store_secret() {
  const char* set = os::env("MLOS_STORE_SECRET");
  if (set && *set) return Status::Ok();
  unsigned char raw[16];
  if (::getrandom(raw, sizeof raw, 0) != static_cast<ssize_t>(sizeof raw)) {
    return make_sys_error(errno, "cannot draw a store secret from getrandom");
  }
  static const char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned char b : raw) {
    hex += kHex[b >> 4];
    hex += kHex[b & 15];
  }
  setenv("MLOS_STORE_SECRET", hex.c_str(), 1);
  return Status::Ok();
}

// Thread-pool sizes read by OpenMP, MKL, OpenBLAS, BLIS, Accelerate,
// numexpr and TensorFlow (PyTorch follows OMP_NUM_THREADS).
const char* const kThreadEnv[] = {"OMP_NUM_THREADS",        "MKL_NUM_THREADS",     "OPENBLAS_NUM_THREADS",
                                  "BLIS_NUM_THREADS",       "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS",
                                  "TF_NUM_INTRAOP_THREADS"};

// Sets the thread-pool variables to `threads`, unless the user set any of
// them (a value an outer `mlos run` set does not count): then the user sized
// the pools and all are left alone, since libraries read several of them
// (torch takes MKL_NUM_THREADS over OMP_NUM_THREADS). The names set are
// listed in MLOS_THREAD_ENV: a local rank resizes exactly those to its share
// (python/mlos_training/autostart.py), and torchrun, which sets
// OMP_NUM_THREADS=1 only where it is unset, passes them on unchanged.
void set_thread_env(const std::string& threads) {
  const char* outer = os::env("MLOS_THREAD_ENV");
  const std::string ours = outer ? "," + std::string(outer) + "," : "";
  for (const char* name : kThreadEnv) {
    if (getenv(name) != nullptr && ours.find("," + std::string(name) + ",") == std::string::npos) {
      setenv("MLOS_THREAD_ENV", "", 1);
      return;
    }
  }
  std::string set;
  for (const char* name : kThreadEnv) {
    setenv(name, threads.c_str(), 1);
    set += (set.empty() ? "" : ",") + std::string(name);
  }
  setenv("MLOS_THREAD_ENV", set.c_str(), 1);
}

nlohmann::json placement_json(const Placement& p, uint64_t claim_id) {
  return {{"claim_id", claim_id},
          {"cpus", p.cpu_set.to_list()},
          {"cpu_order", p.cpus},
          {"numa_nodes", p.nodes},
          {"primary_node", p.primary_node},
          {"memory_policy", p.memory_policy == MLOS_MEMPOLICY_BIND         ? "bind"
                            : p.memory_policy == MLOS_MEMPOLICY_INTERLEAVE ? "interleave"
                                                                           : "preferred"},
          {"recommended_threads", std::max(1, p.physical_cores)},
          {"gpus", p.gpus},
          {"gpu_note", p.gpu_note}};
}

// --gpus N or --gpus UUID[,UUID...] into the request.
Status add_gpus(const RunOptions& o, GpuRequest& gpus) {
  gpus.exclusive = !o.shared_gpus;
  if (o.gpus.empty()) {
    if (o.shared_gpus) return make_error(MLOS_ERR_INVALID_ARGUMENT, "--shared-gpus needs --gpus");
    return Status::Ok();
  }
  if (o.gpus.find_first_not_of("0123456789") == std::string::npos) {
    try {
      gpus.count = std::stoi(o.gpus);
    } catch (const std::exception&) {
      gpus.count = 0;
    }
    if (gpus.count < 1) {
      return make_error(MLOS_ERR_INVALID_ARGUMENT, "--gpus must be a count >= 1 or GPU UUIDs, got \"" + o.gpus + "\"");
    }
    return Status::Ok();
  }
  gpus.uuids = split_comma_list(o.gpus);
  if (gpus.uuids.empty()) return make_error(MLOS_ERR_INVALID_ARGUMENT, "--gpus \"" + o.gpus + "\" names no GPU");
  return Status::Ok();
}

// --policy NAME[=JSON] into the request's policies (name -> config object).
Status add_policies(const std::vector<std::string>& specs, nlohmann::json& policies) {
  for (const std::string& spec : specs) {
    const size_t eq = spec.find('=');
    const std::string name = spec.substr(0, eq);
    if (name.empty()) return make_error(MLOS_ERR_INVALID_ARGUMENT, "--policy \"" + spec + "\" names no policy");
    if (policies.contains(name)) return make_error(MLOS_ERR_INVALID_ARGUMENT, "--policy " + name + " given twice");
    nlohmann::json config = nlohmann::json::object();
    if (eq != std::string::npos) {
      config = nlohmann::json::parse(spec.substr(eq + 1), nullptr, /*allow_exceptions=*/false);
      if (!config.is_object()) {
        return make_error(MLOS_ERR_INVALID_ARGUMENT, "--policy " + name + ": the config is not a JSON object (e.g. " +
                                                         name + "='{\"threads\": 2}')");
      }
    }
    policies[name] = std::move(config);
  }
  return Status::Ok();
}

Result<ClaimRequest> to_request(const RunOptions& o) {
  ClaimRequest r;
  r.placement.num_cpus = o.cpus;
  r.placement.exclusive = o.exclusive;
  r.placement.strict_membind = o.strict_mem;
  r.placement.single_node = o.single_node;
  // The label ends up in JSON (the ledger, mlosd, `status --json`), which
  // only carries UTF-8. A --label the user typed is refused, so they can
  // fix it; CMD's path is what it is (any bytes make a Unix file name), so
  // the default label replaces what is not UTF-8 and CMD still runs.
  if (const size_t bad = first_invalid_utf8(o.label); bad != std::string::npos) {
    char byte[8];
    snprintf(byte, sizeof byte, "0x%02X", static_cast<unsigned char>(o.label[bad]));
    return make_error(MLOS_ERR_INVALID_ARGUMENT, std::string("--label is not valid UTF-8 (byte ") + byte +
                                                     " at offset " + std::to_string(bad) + ")");
  }
  r.label = o.label.empty() && !o.command.empty() ? valid_utf8(o.command.front()) : o.label;
  r.envelope = true;
  if (Status s = add_policies(o.policies, r.policies); !s) return s.error();
  if (Status s = add_gpus(o, r.placement.gpus); !s) return s.error();
  if (!o.mem.empty()) {
    auto bytes = parse_size(o.mem);
    if (!bytes) return bytes.error();
    r.placement.memory_bytes = *bytes;
  }
  if (o.numa != "auto") {
    try {
      size_t used = 0;
      r.placement.numa_preference = std::stoi(o.numa, &used);
      if (used != o.numa.size() || r.placement.numa_preference < 0) throw std::invalid_argument(o.numa);
    } catch (const std::exception&) {
      return make_error(MLOS_ERR_INVALID_ARGUMENT, "--numa must be auto or a node index, got \"" + o.numa + "\"");
    }
  }
  return r;
}

// A described machine (MLOS_TOPOLOGY) is planned on by the embedded engine
// alone: mlosd only knows the machine it runs on.
Result<std::shared_ptr<ClaimBroker>> broker_for_run() {
  const char* described = os::env("MLOS_TOPOLOGY");
  if (described == nullptr || *described == '\0') return select_broker();
  auto ledger = LedgerClaimBroker::for_this_process();
  if (!ledger) return ledger.error();
  return std::shared_ptr<ClaimBroker>(*ledger);
}

// --cpu-list: the CPUs this process may use are narrowed to the list
// before the broker reads them (its affinity; MLOS_ALLOWED_CPUS on a
// described machine), and the request asks for all of them. The claim thus
// still goes through the book like any other: CPUs another job holds
// exclusively make it fail (CPUS_BUSY), and under mlosd the list travels as
// the request's allowed_cpus, which mlosd intersects with what it manages.
// Returns the number of CPUs in the list.
Result<int> narrow_to_cpu_list(const std::string& text) {
  auto list = CpuSet::parse_list(text);
  if (!list || list->empty()) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT, "--cpu-list \"" + text +
                                                     "\" is not a CPU list such as 0,2-3 (the kernel's list "
                                                     "format: numbers and ranges, comma-separated)");
  }
  const char* described = os::env("MLOS_TOPOLOGY");
  const bool elsewhere = described != nullptr && *described != '\0';
  CpuSet allowed;
  if (elsewhere) {
    auto topo = os::shared_topology();
    if (!topo) return topo.error();
    allowed = topo->all_cpus();
    if (const char* env = os::env("MLOS_ALLOWED_CPUS"); env && *env) {
      auto parsed = CpuSet::parse_list(env);
      if (!parsed) return parsed.error();
      allowed = allowed & *parsed;
    }
  } else {
    auto affinity = os::linux_kernel().affinity(getpid());
    if (!affinity) return affinity.error();
    allowed = *affinity;
  }
  if (!list->is_subset_of(allowed)) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT, "--cpu-list " + text + ": CPU(s) " + list->minus(allowed).to_list() +
                                                     " not among the CPUs this process may use (" +
                                                     allowed.to_list() + ")");
  }
  if (elsewhere) {
    setenv("MLOS_ALLOWED_CPUS", list->to_list().c_str(), 1);
  } else if (Status s = os::linux_kernel().set_affinity(getpid(), *list); !s) {
    return s.error();
  }
  return list->count();
}

// In embedded mode mlos run holds its envelope claim only until it execs
// CMD, so the policies go to CMD's jobs instead: checked here (a policy
// host is installed, every name is in the policy directory) and handed on
// in MLOS_JOB_POLICIES, over what that already held. Returns the names.
Result<std::vector<std::string>> hand_policies_to_command(const nlohmann::json& policies) {
  auto config = embedded_policy_config();
  if (!config) return config.error();
  auto catalog = policy::scan_policy_dir(config->policy_dir, geteuid());
  if (!catalog) return catalog.error();
  nlohmann::json every = config->every_job;
  std::vector<std::string> names;
  for (const auto& [name, c] : policies.items()) {
    if (catalog->find(name) == nullptr) return policy::unknown_policy(*catalog, name);
    every[name] = c;
    names.push_back(name);
  }
  setenv("MLOS_JOB_POLICIES", every.dump().c_str(), 1);
  return names;
}

// ", policies a, b" for the verbose line ("" when there are none).
std::string policies_text(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? ", policies " : ", ") + n;
  return out;
}

}  // namespace

namespace {
// CMD owns stdout, so a real run reports JSON errors on stderr; --dry-run
// prints everything on stdout.
void report(const RunOptions& o, const Error& e) { report_error("run", e, o.json, /*json_to_stderr=*/!o.dry_run); }
}  // namespace

int run_run(const RunOptions& o) {
  if (o.command.empty() && !o.dry_run) {
    report(o, make_error(MLOS_ERR_INVALID_ARGUMENT, "no command given: mlos run [OPTIONS] -- CMD [ARGS...]"));
    return kExitRunFailed;
  }
  auto request = to_request(o);
  if (!request) {
    report(o, request.error());
    return kExitRunFailed;
  }
  if (!o.cpu_list.empty()) {
    auto count = narrow_to_cpu_list(o.cpu_list);
    if (!count) {
      report(o, count.error());
      return kExitRunFailed;
    }
    request->placement.num_cpus = *count;
  }
  auto broker = broker_for_run();
  if (!broker) {
    report(o, broker.error());
    return kExitRunFailed;
  }
  // Neither --cpus nor --cpu-list: every CPU this process may use.
  if (request->placement.num_cpus == 0) {
    const int all = ((*broker)->allowed_cpus() & (*broker)->topology().all_cpus()).count();
    request->placement.num_cpus = std::max(1, all);
  }
  auto gpu_share = parse_gpu_share(o.gpu_memory, o.gpu_share, request->placement.gpus.wanted());
  if (!gpu_share) {
    report(o, gpu_share.error());
    return kExitRunFailed;
  }
  std::vector<std::string> handed;  // policies CMD's jobs get (embedded mode)
  if (!request->policies.empty() && std::string((*broker)->engine()) == "embedded") {
    auto names = hand_policies_to_command(request->policies);
    if (!names) {
      report(o, names.error());
      return kExitRunFailed;
    }
    handed = *names;
    request->policies = nlohmann::json::object();
  }
  if (o.dry_run) {
    auto plan = (*broker)->plan(*request);
    if (!plan) {
      report(o, plan.error());
      return kExitRunFailed;
    }
    auto j = json_envelope("run");
    j["dry_run"] = true;
    j["topology"] = (*broker)->topology().source;
    j["engine"] = (*broker)->engine();
    j["placement"] = placement_json(*plan, 0);
    if (o.json) {
      std::cout << dump_json(j, 2) << "\n";
    } else {
      std::cout << "would run on CPUs " << plan->cpu_set.to_list() << " (NUMA node(s) "
                << dump_json(plan->nodes) << "), " << std::max(1, plan->physical_cores)
                << " thread(s) per pool" << (plan->gpus.empty() ? "" : ", GPUs " + join_comma_list(plan->gpus))
                << "\n";
      if (!plan->gpu_note.empty()) std::cout << "note: " << plan->gpu_note << "\n";
    }
    return kExitOk;
  }
  if ((*broker)->topology().source != "this machine") {
    report(o, make_error(MLOS_ERR_UNSUPPORTED, "MLOS_TOPOLOGY describes another machine (" +
                                                      (*broker)->topology().source +
                                                      "); only --dry-run can plan on it"));
    return kExitRunFailed;
  }
  GpuShareSetup share;
  if (gpu_share->wanted()) {
    auto prepared = prepare_gpu_share(*gpu_share);
    if (!prepared) {
      report(o, prepared.error());
      return kExitRunFailed;
    }
    share = *prepared;
    request->gpu_share_file = share.share_file;
  }
  auto grant = (*broker)->acquire(*request);
  if (!grant) {
    discard_gpu_share(share);
    report(o, grant.error());
    return kExitRunFailed;
  }
  if (!grant->ledger_note.empty()) std::cerr << "mlos run: warning: " << grant->ledger_note << "\n";
  const Placement& p = grant->placement;
  if (!p.gpu_note.empty()) std::cerr << "mlos run: note: " << p.gpu_note << "\n";
  os::Kernel& kernel = os::linux_kernel();
  // The process is single-threaded here, so the main thread's affinity and
  // memory policy are the process's, inherited by CMD and its children.
  Status s = kernel.set_affinity(getpid(), p.cpu_set);
  if (s) {
    const os::MemoryPolicy mp = os::memory_policy_for(p.memory_policy, p.nodes);
    if (Status m = kernel.set_memory_policy(mp); !m) {
      std::cerr << "mlos run: warning: memory policy not set: " << m.error().describe() << "\n";
    }
  }
  if (!s) {
    (void)(*broker)->release(grant->claim_id);
    discard_gpu_share(share);
    report(o, s.error());
    return kExitRunFailed;
  }
  const std::string threads = std::to_string(std::max(1, p.physical_cores));
  if (!o.no_thread_env) set_thread_env(threads);
  setenv("MLOS_CLAIM_ID", std::to_string(grant->claim_id).c_str(), 1);
  setenv("MLOS_ENGINE", (*broker)->engine(), 1);
  setenv("MLOS_CPUS", p.cpu_set.to_list().c_str(), 1);
  setenv("MLOS_NUMA_NODE", std::to_string(p.primary_node).c_str(), 1);
  setenv("MLOS_RECOMMENDED_THREADS", threads.c_str(), 1);
  if (!p.gpus.empty()) {
    // By UUID: indices depend on CUDA_DEVICE_ORDER and on what the
    // parent's CUDA_VISIBLE_DEVICES already hid.
    setenv("CUDA_VISIBLE_DEVICES", join_comma_list(p.gpus).c_str(), 1);
    setenv("MLOS_GPUS", join_comma_list(p.gpus).c_str(), 1);
  }
  // Read by the mlos_training package at interpreter start-up (its .pth
  // hook): a Python CMD gets the allocation, sized thread pools and
  // automatic phases without changing a line. Inert for anything else.
  if (!o.no_python_hooks) setenv("MLOS_PYTHON_HOOKS", "1", 1);
  if (o.profile) setenv("MLOS_PROFILE", "stderr", 1);
  if (o.store_secret) {
    if (Status st = give_store_secret(); !st) {
      (void)(*broker)->release(grant->claim_id);
      discard_gpu_share(share);
      report(o, st.error());
      return kExitRunFailed;
    }
  }
  const TuningReport tuning =
      o.no_tune ? skip_run_tuning() : apply_run_tuning(o.command, request->placement.num_cpus);
  if (o.explain && !o.json) std::cerr << tuning.text() << "\n";
  // After the tuning: the interposer goes first in LD_PRELOAD, before any
  // allocator the tuning chose.
  if (gpu_share->wanted()) export_gpu_share(*gpu_share, share);
  if (o.verbose || o.json) {
    auto j = json_envelope("run");
    j["placement"] = placement_json(p, grant->claim_id);
    j["engine"] = (*broker)->engine();
    const std::vector<std::string>& policies = handed.empty() ? grant->policies : handed;
    j["policies"] = policies;
    j["command"] = o.command;
    j["tuning"] = tuning.to_json();
    if (gpu_share->wanted()) {
      j["gpu_share"] = {{"memory_limit", gpu_share->memory_limit}, {"share_percent", gpu_share->share_percent},
                        {"mechanism", share.mechanism}, {"share_file", share.share_file}, {"note", share.note}};
    }
    std::cerr << (o.json ? dump_json(j) : "mlos run: CPUs " + p.cpu_set.to_list() + ", claim " +
                                          std::to_string(grant->claim_id) + " (" + (*broker)->engine() + "), " + threads + " thread(s)" +
                                          (p.gpus.empty() ? "" : ", GPUs " + join_comma_list(p.gpus)) +
                                          policies_text(policies) +
                                          (gpu_share->wanted() ? ", GPU limits: " + gpu_share_text(*gpu_share, share) : ""))
              << "\n";
  }

  std::vector<char*> argv;
  for (const auto& a : o.command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  execvp(argv[0], argv.data());
  // Only reached if exec failed: the claim is ours to drop.
  const int err = errno;
  (void)(*broker)->release(grant->claim_id);
  discard_gpu_share(share);
  report(o, make_sys_error(err, "cannot execute \"" + o.command.front() + "\""));
  return err == ENOENT ? kExitNotFound : kExitCannotExec;
}

}  // namespace mlos::cli
