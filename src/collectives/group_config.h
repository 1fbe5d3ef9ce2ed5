/* SPDX-License-Identifier: Apache-2.0 */
// Who a rank is and how it finds its peers: pure parsing of the call's
// arguments and the launcher's environment (torchrun/Slurm-style RANK and
// WORLD_SIZE; MLOS_STORE or MASTER_ADDR/MASTER_PORT for the rendezvous
// store), validated before any socket is opened.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "core/status.h"

namespace gloo::rendezvous {
class Store;
}

namespace mlos::collectives {

struct GroupConfig {
  int rank = 0;
  int world_size = 1;
  enum class StoreKind { kFile, kRedis, kCaller, kTcp } store = StoreKind::kFile;
  std::shared_ptr<gloo::rendezvous::Store> caller_store;  // kCaller
  std::string store_path;   // kFile: a directory all ranks share (created if missing)
  std::string redis_host;   // kRedis
  int redis_port = 6379;
  std::string tcp_host;     // kTcp: torch's TCPStore at tcp_host:tcp_port
  int tcp_port = 0;
  // kTcp: this rank starts the store's server when none answers there
  // (rank 0, unless a torchrun agent serves it).
  bool tcp_may_serve = false;
  // kTcp: the group secret (MLOS_STORE_SECRET), sent by every rank and
  // required by the server rank 0 starts; empty: none.
  std::string tcp_secret;
  // Keys of this group live under this prefix in the store; ranks that
  // recreate a group after an error move to a new generation.
  std::string prefix = "mlos";
  std::chrono::milliseconds timeout{30000};
  // Address this rank listens on for its peers (MLOS_COLLECTIVE_HOST), or
  // the interface to take it from (MLOS_COLLECTIVE_IFACE); both empty: the
  // host name's address.
  std::string hostname;
  std::string iface;
};

// Settings a caller gives for one handle (mlos_collective_options_t),
// applied over the environment's.
struct GroupOverrides {
  std::chrono::milliseconds timeout{0};  // 0: the environment's
  std::string prefix;                    // empty: the environment's
};

// INVALID_ARGUMENT naming what is wrong: timeout outside 0..3600000 ms, a
// prefix with spaces or '/'.
Status validate(const GroupOverrides& o);

// `env` reads a variable (nullptr: unset): os::env_or_foreign in libmlos,
// a map in tests; every MLOS_ name it is asked for is in core/environment.h's
// table.
// rank/world_size: the call's values, or -1 to take RANK and WORLD_SIZE
// from the environment. Store: `caller_store` when given (MLOS_STORE is
// then not read), else MLOS_STORE = "file:/shared/dir",
// "redis://host[:port]" or "tcp://host:port" (torch's TCPStore; IPv6 as
// tcp://[addr]:port); MLOS_STORE unset, MASTER_ADDR and MASTER_PORT (as
// torchrun, Slurm scripts and torch's env:// set them) mean
// tcp://$MASTER_ADDR:$MASTER_PORT. For a TCPStore, rank 0 may serve it
// unless TORCHELASTIC_USE_AGENT_STORE is "True" (or true, 1: torchrun's
// agent serves it then, and says so this way); under torchrun the default
// prefix gains the restart count (TORCHELASTIC_RESTART_COUNT > 0:
// "mlos.restartN"), since the agent's store outlives the workers it
// restarts and still holds the last attempt's keys. MLOS_STORE_SECRET
// (16 to 256 printable characters, no spaces) is the group secret of a
// TCPStore; it is refused where torchrun's agent serves the store (torch's,
// which takes none) and unused with another kind of store. Also
// MLOS_COLLECTIVE_TIMEOUT_MS (default 30000), MLOS_GROUP (key prefix,
// default "mlos"), MLOS_COLLECTIVE_HOST/IFACE. INVALID_ARGUMENT naming the
// argument or variable for anything missing, malformed or inconsistent
// (0 <= rank < world_size).
Result<GroupConfig> group_config_from(int rank, int world_size,
                                      const std::function<const char*(const char*)>& env,
                                      std::shared_ptr<gloo::rendezvous::Store> caller_store = nullptr,
                                      const GroupOverrides& overrides = {});

}  // namespace mlos::collectives
