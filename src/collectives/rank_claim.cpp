// SPDX-License-Identifier: Apache-2.0
#include "collectives/rank_claim.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
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

// The key-value claim: compare_set(key, "", me) holds `me` unless another
// process got there first.
template <class CompareSet>
Result<std::unique_ptr<RankClaim>> claim_by_value(const GroupConfig& c, CompareSet&& compare_set) {
  const std::string me = process_identity();
  const std::vector<char> mine(me.begin(), me.end());
  const std::vector<char> held = compare_set(c.prefix + "/rank_claim/" + std::to_string(c.rank), mine);
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
  char host[256] = {0};
  if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  auto stat = os::read_proc_stat(::getpid());
  return std::string(host) + ":" + std::to_string(::getpid()) + ":" +
         (stat ? std::to_string(stat->start_time) : std::string("?"));
}

Result<std::unique_ptr<RankClaim>> claim_rank(const GroupConfig& config, gloo::rendezvous::Store& base) {
  switch (config.store) {
    case GroupConfig::StoreKind::kFile: return claim_by_lock(config);
    case GroupConfig::StoreKind::kTcp: {
      auto* tcp = dynamic_cast<TcpStore*>(&base);  // always, from open_tcp_store
      if (tcp == nullptr) break;
      return claim_by_value(config, [&](const std::string& key, const std::vector<char>& mine) {
        return tcp->compare_set(key, {}, mine);
      });
    }
    case GroupConfig::StoreKind::kCaller: {
      auto* callbacks = dynamic_cast<CallbackStore*>(&base);
      if (callbacks == nullptr || !callbacks->has_compare_set()) break;  // not detected: see the header
      return claim_by_value(config, [&](const std::string& key, const std::vector<char>& mine) {
        return *callbacks->compare_set(key, {}, mine);
      });
    }
    case GroupConfig::StoreKind::kRedis: break;  // agree_on_world: Redis refuses a second set
  }
  return std::make_unique<RankClaim>();
}

}  // namespace mlos::collectives
