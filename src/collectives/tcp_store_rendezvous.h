/* SPDX-License-Identifier: Apache-2.0 */
// Opening a group's TCPStore rendezvous: be the client of a store that
// answers at host:port, or, as rank 0 where nobody serves one, start this
// process's server there first (tcp_store_server.h) and be its client.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include <gloo/rendezvous/store.h>

#include "core/status.h"

namespace mlos::collectives {

// The store of a group's rendezvous at host:port. A rank allowed to serve
// (`may_serve`: rank 0 where no torchrun agent serves) whose host is an
// address of this machine first asks whether a TCPStore already answers
// there, and starts one when none does; every other rank connects,
// retrying until `timeout` (it may well start before rank 0 listens).
// The server started here is kept by the process for that port until it
// exits: other processes' ranks and torch clients may still be using it
// after this rank's group has connected, and a group this process creates
// again later (after an error, or another handle) finds it there.
// The server started here listens on `host` as tcp_store_listen.h says (a
// numeric address or "localhost": that address only), raises the
// process's soft descriptor limit to the hard one, and, with a `secret`
// (MLOS_STORE_SECRET), serves only clients that send it; every rank sends
// it too.
// Errors: TIMEOUT naming host:port when nothing answered in time; IO when
// something else answers there, a server refuses the secret, or rank 0
// cannot listen. A host name is
// resolved with getaddrinfo, which `timeout` does not bound: a resolver
// that does not answer costs its own timeouts (resolv.conf's `timeout` and
// `attempts`; a numeric address resolves at once).
Result<std::shared_ptr<gloo::rendezvous::Store>> open_tcp_store(const std::string& host, uint16_t port,
                                                                 bool may_serve, std::chrono::milliseconds timeout,
                                                                 const std::string& secret = {});

}  // namespace mlos::collectives
