// SPDX-License-Identifier: Apache-2.0
#include "collectives/rank_claim.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <exception>
#include <vector>

#include "collectives/callback_store.h"
#include "collectives/tcp_store.h"
#include "os/process_info.h"

namespace mlos::collectives {

namespace {

Error taken(const GroupConfig& c, const std::string& holder) {
  return make_error(MLOS_ERR_INVALID_ARGUMENT,
                    "rank " + std::to_string(c.rank) + " is already taken in group " + c.prefix +
                        (holder.empty() ? "" : " by " + holder) +
                        ": two processes were given the same rank (RANK); each rank number is one process");
}

// This machine's host name, "" when unreadable.
std::string host_name() {
  char host[256] = {0};
  if (::gethostname(host, sizeof host - 1) != 0) return "";
  return host;
}

// This process's pid namespace ("4026531836"), "" when unreadable: pids
// name the same process only within one namespace.
std::string pid_namespace() {
  struct stat st{};
  if (::stat("/proc/self/ns/pid", &st) != 0) return "";
  return std::to_string(static_cast<uint64_t>(st.st_ino));
}

// Whether `holder` (a process_identity()) names a process of this host and
// pid namespace that no longer runs: its pid is gone, or now belongs to a
// process started at another time, or is a zombie. Any other holder
// (another host or container, an identity this cannot parse, a /proc this
// cannot read) is taken to be alive.
bool holder_is_gone(const std::string& holder) {
  std::vector<std::string> fields;  // host:pid:start:pidns, split from the right (a host has no ':')
  size_t end = holder.size();
  for (int i = 0; i < 3; ++i) {
    const size_t colon = end == 0 ? std::string::npos : holder.rfind(':', end - 1);
    if (colon == std::string::npos) return false;
    fields.insert(fields.begin(), holder.substr(colon + 1, end - colon - 1));
    end = colon;
  }
  const std::string host = host_name();
  if (host.empty() || holder.substr(0, end) != host) return false;
  if (fields[2].empty() || fields[2] != pid_namespace()) return false;
  ProcessId id;
  try {
    size_t used = 0;
    id.pid = std::stoi(fields[0], &used);
    if (used != fields[0].size() || id.pid <= 0) return false;
    id.start_time = std::stoull(fields[1], &used);
    if (used != fields[1].size()) return false;
  } catch (const std::exception&) {
    return false;
  }
  return os::liveness(id) == os::Liveness::kGone;
}

// The key-value claim: compare_set(key, expected, me) holds `me` unless
// another process got there first. A claim left by a process of this host
// that has died (a crashed rank relaunched by hand against a store that
// outlived it) is taken over with a second compare-and-set on exactly
// that stale value, so two successors racing for it cannot both win.
template <class CompareSet>
Result<std::unique_ptr<RankClaim>> claim_by_value(const GroupConfig& c, CompareSet&& compare_set) {
  const std::string me = process_identity();
  const std::vector<char> mine(me.begin(), me.end());
  const std::string key = c.prefix + "/rank_claim/" + std::to_string(c.rank);
  std::vector<char> held = compare_set(key, {}, mine);
  if (held != mine && holder_is_gone(std::string(held.begin(), held.end()))) held = compare_set(key, held, mine);
  if (held != mine) return taken(c, std::string(held.begin(), held.end()));
  return std::make_unique<RankClaim>();
}

// The FileStore's claim: a lock file next to its keys, one per prefix and
// rank ('/' of the prefix made '_').
Result<std::unique_ptr<RankClaim>> claim_by_lock(const GroupConfig& c) {
  std::string name = c.prefix;
  for (char& ch : name) {
    if (ch == '/') ch = '_';
  }
  const std::string path = c.store_path + "/" + name + ".rank" + std::to_string(c.rank) + ".claim";
  os::UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (fd.get() < 0) return make_sys_error(errno, "cannot open the rank claim " + path);
  if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) return taken(c, "");
    return make_sys_error(errno, "cannot lock the rank claim " + path);
  }
  auto claim = std::make_unique<RankClaim>();
  claim->lock = std::move(fd);
  return claim;
}

}  // namespace

std::string process_identity() {
  auto stat = os::read_proc_stat(::getpid());
  return host_name() + ":" + std::to_string(::getpid()) + ":" +
         (stat ? std::to_string(stat->start_time) : std::string("?")) + ":" + pid_namespace();
}

Result<std::unique_ptr<RankClaim>> claim_rank(const GroupConfig& config, gloo::rendezvous::Store& base) {
  switch (config.store) {
    case GroupConfig::StoreKind::kFile: return claim_by_lock(config);
    case GroupConfig::StoreKind::kTcp: {
      auto* tcp = dynamic_cast<TcpStore*>(&base);  // always, from open_tcp_store (tcp_store_rendezvous.h)
      if (tcp == nullptr) break;
      return claim_by_value(config, [&](const std::string& key, const std::vector<char>& expected,
                                        const std::vector<char>& mine) { return tcp->compare_set(key, expected, mine); });
    }
    case GroupConfig::StoreKind::kCaller: {
      auto* callbacks = dynamic_cast<CallbackStore*>(&base);
      if (callbacks == nullptr || !callbacks->has_compare_set()) break;  // not detected: see the header
      return claim_by_value(config, [&](const std::string& key, const std::vector<char>& expected,
                                        const std::vector<char>& mine) {
        return *callbacks->compare_set(key, expected, mine);
      });
    }
    case GroupConfig::StoreKind::kRedis: break;  // agree_on_world: Redis refuses a second set
  }
  return std::make_unique<RankClaim>();
}

}  // namespace mlos::collectives
