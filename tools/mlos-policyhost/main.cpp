// SPDX-License-Identifier: Apache-2.0
// mlos-policyhost: runs one policy module out of harm's way. Started by
// mlosd (or libmlos) with one end of a socketpair; confines itself (drops
// root for an unprivileged user, no new privileges, rlimits, only the
// socket left open), loads the policy, locks its system calls down to what
// the conversation needs (seccomp), and serves policy/policy_protocol.h
// until told to stop or its parent goes. Dies with its parent.
//
//   mlos-policyhost --policy PATH --name NAME --fd N [--policy-fd M] [--run-as USER]
//                   [--memory-limit BYTES] [--parent PID]
//   mlos-policyhost --policy PATH --name NAME --describe
//
// --describe loads the policy (confined the same way, the socket aside)
// and prints its self-description as JSON. Exit codes: 0 done, 1 the
// stream broke or the policy failed to load (the reason on stderr and, with
// --fd, as an error reply with id 0), 2 usage.
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <optional>
#include <string>

#include "os/sandbox.h"
#include "os/unique_fd.h"
#include "os/unix_socket.h"
#include "policy/policy_host_loop.h"
#include "policy/policy_module.h"
#include "protocol/daemon_client.h"

namespace {

namespace os = mlos::os;
namespace policy = mlos::policy;
namespace protocol = mlos::protocol;

// Tells the parent why the host cannot serve (an error reply with id 0,
// which is what it waits for first), and stderr.
int refuse(int fd, const mlos::Error& e) {
  std::cerr << "mlos-policyhost: " << e.describe() << "\n";
  if (fd >= 0) {
    auto bytes = protocol::encode_frame(protocol::FrameKind::kReply, protocol::error_reply(0, e), policy::kMaxHostPayload);
    if (bytes) (void)os::send_all(fd, *bytes);
  }
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"mlos-policyhost: runs one mlOS policy module, confined (started by mlosd or libmlos)"};
  std::string path, name, run_as;
  int fd = -1;
  int policy_fd = -1;
  long parent = 0;
  uint64_t memory_limit = 512ull << 20;
  bool describe_only = false;
  app.add_option("--policy", path, "the policy's shared object")->required();
  app.add_option("--name", name, "the policy's name (the file must call itself this)")->required();
  app.add_option("--fd", fd, "the socket to serve (a socketpair end)")->check(CLI::NonNegativeNumber);
  app.add_option("--policy-fd", policy_fd, "the policy's shared object, opened and checked by the parent (PATH then only names it)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--run-as", run_as, "the user to become when started as root (default: nobody)");
  app.add_option("--memory-limit", memory_limit, "address-space limit in bytes (RLIMIT_AS)");
  app.add_option("--parent", parent, "the parent's pid: exit at once if it is already gone");
  app.add_flag("--describe", describe_only, "print the policy's self-description as JSON and exit");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (describe_only == (fd >= 0)) {
    std::cerr << "mlos-policyhost: give exactly one of --fd and --describe\n";
    return 2;
  }
  // Die with the parent: a host must never outlive the daemon that
  // arbitrates its actions (a restarted mlosd starts its own hosts).
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (parent > 0 && getppid() != parent) return 1;

  os::SandboxLimits limits;
  limits.address_space_bytes = memory_limit;
  // Below the jobs it serves: a policy that spins until its deadline takes
  // about a tenth of what a nice-0 thread gets from a CPU they share.
  limits.min_nice = 10;
  std::optional<std::pair<uid_t, gid_t>> user;
  if (!run_as.empty()) {
    passwd* pw = getpwnam(run_as.c_str());
    if (pw == nullptr) return refuse(fd, mlos::make_error(MLOS_ERR_INVALID_ARGUMENT, "no user '" + run_as + "'"));
    user = std::make_pair(pw->pw_uid, pw->pw_gid);
  }
  // Loaded through a descriptor after the drop: root's trusted file may
  // lie where nobody cannot reach it (a checkout in /root). With
  // --policy-fd it is the file mlosd (or libmlos) opened and checked, so
  // what is loaded is what was checked, whatever happens to the path
  // meanwhile; otherwise (--describe by hand) the path opened now.
  os::UniqueFd module(policy_fd >= 0 ? policy_fd : open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!module.valid()) {
    return refuse(fd, mlos::make_error(MLOS_ERR_NOT_FOUND, "cannot load policy " + path + ": " + strerror(errno)));
  }
  std::vector<int> keep{STDERR_FILENO, module.get()};
  if (fd >= 0) keep.push_back(fd);
  if (describe_only) keep.push_back(STDOUT_FILENO);
  if (auto confined = os::enter_sandbox(limits, keep, user); !confined) return refuse(fd, confined.error());
  auto loaded = policy::load_policy_module(path, name, module.get());
  module.reset();  // mapped now: the descriptor is not needed
  if (!loaded) return refuse(fd, loaded.error());
  if (describe_only) {
    std::cout << policy::describe(*loaded).to_json().dump(2) << std::endl;
    return 0;
  }
  if (mlos::Status s = os::lock_down_syscalls(); !s) return refuse(fd, s.error());
  return policy::PolicyHostLoop(&*loaded, fd).run();
}
