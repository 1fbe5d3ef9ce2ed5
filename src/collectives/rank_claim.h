/* SPDX-License-Identifier: Apache-2.0 */
// One process per rank number of a group. Before a rank publishes anything
// at the rendezvous it claims its number in the store, so a second process
// given the same rank is refused with INVALID_ARGUMENT (naming the holder
// where the store tells it) instead of overwriting the first one's
// addresses and leaving every rank to time out. How, per store:
//  - torch's TCPStore (ours or torch's server), and a caller's store with a
//    compare_set callback: compare-and-set of a key to this process's
//    identity (host, pid, start time, pid namespace); the same process may
//    claim again (a group made anew under the same prefix), and a claim
//    whose holder is a dead process of this host and namespace is taken
//    over (a crashed rank relaunched against a store that outlived it);
//  - FileStore: an exclusive flock on a file in the store's directory,
//    held as long as the group lives, so a dead holder's claim ends with it;
//  - Redis: Gloo's RedisStore refuses to set a key twice, which
//    agree_on_world (process_group.cpp) turns into the same refusal;
//  - a caller's store without compare_set: not detected (the rendezvous
//    ends in TIMEOUT), said in the docs.
#pragma once

#include <memory>
#include <string>

#include <gloo/rendezvous/store.h>

#include "collectives/group_config.h"
#include "core/status.h"
#include "os/unique_fd.h"

namespace mlos::collectives {

// What a claim holds while the group lives (the FileStore's lock).
struct RankClaim {
  os::UniqueFd lock;
};

// Claims config.rank under config.prefix in `base` (the store before
// prefixing; for kFile, config.store_path). INVALID_ARGUMENT when another
// process holds it; the store's own errors as exceptions, as Gloo's stores
// throw them.
Result<std::unique_ptr<RankClaim>> claim_rank(const GroupConfig& config, gloo::rendezvous::Store& base);

// This process, as a claim names it: "host:pid:start:pidns", the start time
// in clock ticks since boot (a recycled pid has another) and the inode of
// its pid namespace (a container on the same host has another).
std::string process_identity();

}  // namespace mlos::collectives
