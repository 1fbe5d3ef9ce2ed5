// SPDX-License-Identifier: Apache-2.0
// Fuzzes what mlosd does with requests: the input is a byte stream of
// frames (as a client would send), decoded with FrameDecoder and executed by
// handle_request against a JobManager over a fake cgroup2 and fake
// processes. The first byte picks the caller (root, uid 1000 or uid 1001;
// pids 100..102). Checks, for every input: no crash or exception escapes,
// every reply is {"id", "ok"} with an error object when not ok, exclusive
// jobs never share a CPU, every job's CPUs are non-empty and allowed, and
// the registry on disk ends up holding exactly the jobs held. With the
// first byte's high bit set, the input runs with the descriptor table full.
#include <fcntl.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "../fakes/fake_cgroup_v2_fs.h"
#include "core/cpu_set.h"
#include "daemon/job_manager.h"
#include "daemon/request_handler.h"
#include "protocol/frame_codec.h"

namespace {

using mlos::CpuSet;
using nlohmann::json;
namespace d = mlos::daemon;
namespace os = mlos::os;

// A private directory for the registry file, removed when the process exits.
struct StateDir {
  std::string path;
  StateDir() {
    path = (std::filesystem::temp_directory_path() / "mlos-fuzz-request-XXXXXX").string();
    if (mkdtemp(path.data()) == nullptr) abort();
  }
  ~StateDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

const std::string& state_dir() {
  static const StateDir dir;
  return dir.path;
}

// While alive, every descriptor slot of the process is taken (the soft
// limit lowered to what is open plus the fillers): each open, pidfd or
// journal append in the daemon's code fails with EMFILE, as it would in an
// mlosd whose users exhausted its table.
struct DescriptorsExhausted {
  rlimit saved{};
  std::vector<int> fillers;
  DescriptorsExhausted() {
    getrlimit(RLIMIT_NOFILE, &saved);
    for (int fd; fillers.size() < 4096 && (fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0;) fillers.push_back(fd);
    rlimit low = saved;
    low.rlim_cur = fillers.empty() ? saved.rlim_cur : static_cast<rlim_t>(fillers.back() + 1);
    setrlimit(RLIMIT_NOFILE, &low);
  }
  ~DescriptorsExhausted() {
    for (int fd : fillers) close(fd);
    setrlimit(RLIMIT_NOFILE, &saved);
  }
};

void check(bool ok, const char* what) {
  if (!ok) {
    fprintf(stderr, "invariant broken: %s\n", what);
    abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::filesystem::remove(state_dir() + "/registry.json");
  std::filesystem::remove(state_dir() + "/registry.journal");
  auto fs = std::make_shared<mlos_test::FakeCgroupV2Fs>(std::vector<std::string>{"cpuset", "cpu", "memory"});
  d::JobManagerDeps deps;
  deps.topology = mlos::make_uniform_topology(2, 2, 2);  // 8 CPUs, 2 nodes, SMT
  deps.allowed = deps.topology.all_cpus();
  deps.memory = [] { return mlos::MemoryAvailability{}; };
  deps.cgroups = os::make_cgroup_v2_driver(fs, "mlos");
  deps.state = std::make_shared<d::RegistryStore>(state_dir());
  // Processes 100..102 live (uids 0, 1000, 1001); anything else does not exist.
  auto known = [](pid_t pid) { return pid >= 100 && pid <= 102; };
  deps.identify = [known](pid_t pid) -> mlos::Result<mlos::ProcessId> {
    if (!known(pid)) return mlos::make_sys_error(ESRCH, "no such process");
    return mlos::ProcessId{pid, 1};
  };
  deps.is_alive = [known](const mlos::ProcessId& id) { return known(id.pid) && id.start_time == 1; };
  auto uid_of = [](pid_t pid) -> uid_t { return pid == 100 ? 0u : pid == 101 ? 1000u : 1001u; };
  deps.peer_process = [known](const os::PeerCredentials& peer) -> mlos::Result<mlos::ProcessId> {
    if (!known(peer.pid)) return mlos::make_sys_error(ESRCH, "no such process", MLOS_ERR_NO_SUCH_THREAD);
    return mlos::ProcessId{peer.pid, 1};
  };
  deps.move_process = [known, uid_of, cgroups = deps.cgroups](const std::string& cgroup, const mlos::ProcessId& target,
                                                             uid_t requester) -> mlos::Status {
    if (!known(target.pid)) return mlos::make_sys_error(ESRCH, "no such process", MLOS_ERR_NO_SUCH_THREAD);
    if (requester != 0 && uid_of(target.pid) != requester) return mlos::make_error(MLOS_ERR_PERMISSION, "not yours");
    return cgroups->attach(cgroup, target.pid);
  };
  // The job cgroup a process sits in, so that second and nested jobs are
  // fuzzed too.
  deps.job_of_process = [fs](pid_t pid) -> std::optional<uint64_t> {
    auto at = fs->pid_location(pid);
    if (!at || at->rfind("mlos/job-", 0) != 0) return std::nullopt;
    return std::stoull(at->substr(9));
  };
  deps.now_ns = [] { return uint64_t{1000}; };
  deps.now_unix = [] { return int64_t{1}; };
  d::JobManager jobs(std::move(deps));
  d::RequestContext ctx{json{{"version", "fuzz"}}, nullptr, 1};

  const int who = (data[0] & 0x7f) % 3;
  // High bit: the whole input runs out of descriptors.
  std::optional<DescriptorsExhausted> exhausted;
  if (data[0] & 0x80) exhausted.emplace();
  const os::PeerCredentials peer{100 + who, who == 0 ? 0u : 999u + who, 0};
  mlos::protocol::FrameDecoder decoder(64 * 1024);
  decoder.feed(std::string_view(reinterpret_cast<const char*>(data + 1), size - 1));
  for (int frames = 0; frames < 64; ++frames) {
    auto frame = decoder.next();
    if (!frame || !frame->has_value()) break;
    auto req = mlos::protocol::parse_request(**frame);
    if (!req) continue;
    const json reply = d::handle_request(jobs, ctx, peer, *req, os::UniqueFd());
    check(reply.is_object() && reply.contains("ok") && reply["id"] == req->id, "reply shape");
    if (reply["ok"] != true) check(reply["error"].is_object() && reply["error"]["code"].is_number_integer(), "error");
    jobs.tick();
    const json status = jobs.status();
    CpuSet exclusive;
    for (const auto& j : status["jobs"]) {
      auto cpus = CpuSet::parse_list(j["cpus"].get<std::string>());
      check(cpus && !cpus->empty() && cpus->is_subset_of(mlos::CpuSet::range(0, 7)), "job CPUs");
      if (j["exclusive"] == true) {
        check(!exclusive.intersects(*cpus), "exclusive CPUs shared");
        exclusive = exclusive | *cpus;
      }
    }
    for (const auto& j : status["jobs"]) {
      if (j["exclusive"] == true) continue;
      check(!exclusive.intersects(*CpuSet::parse_list(j["cpus"].get<std::string>())), "shared job on exclusive CPU");
    }
  }
  // Descriptors back: after one tick the registry on disk is exactly what
  // the daemon holds (nothing granted without being recorded, nothing
  // recorded that was released, whatever failed meanwhile).
  exhausted.reset();
  jobs.tick();
  auto on_disk = d::RegistryStore(state_dir()).load();
  check(on_disk.ok(), "registry readable");
  std::set<uint64_t> disk_ids, held_ids;
  if (on_disk->has_value()) {
    for (const auto& r : (*on_disk)->jobs) disk_ids.insert(r.id);
  }
  const json held = jobs.status();
  for (const auto& j : held["jobs"]) held_ids.insert(j["job"].get<uint64_t>());
  check(disk_ids == held_ids, "registry on disk differs from the jobs held");
  return 0;
}
