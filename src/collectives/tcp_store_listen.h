/* SPDX-License-Identifier: Apache-2.0 */
// Where the TCPStore server listens, and how many descriptors the process
// has for its connections.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "os/unique_fd.h"

namespace mlos::collectives {

struct StoreListeners {
  std::vector<os::UniqueFd> fds;  // non-blocking, listening
  uint16_t port = 0;              // the one port they share
  std::string where;              // "127.0.0.1", "127.0.0.1 and ::1", "every address"
};

// Listening sockets for a store asked to serve at host:port (0: a free
// port). The address asked for is the one bound:
//   - a numeric address (127.0.0.1, ::1, 10.0.0.5) binds that address
//     alone: a loopback address listens on loopback only;
//   - "localhost" binds the loopback addresses it resolves to;
//   - "" (and 0.0.0.0, ::) binds every address, IPv6 with IPv4 mapped (or
//     IPv4 alone where the host has no IPv6), as torch's server does;
//   - any other name binds every address too: other hosts may resolve it
//     to an address this machine does not (Debian maps its own host name
//     to 127.0.1.1), and they must still reach the store.
// Errors: IO naming the address and port, with the errno (EADDRINUSE when
// taken); INVALID_ARGUMENT for a host that does not resolve.
Result<StoreListeners> listen_for_store(const std::string& host, uint16_t port);

// Raises the process's soft RLIMIT_NOFILE to its hard limit (allowed
// without privilege) and returns the soft limit now. `raised_from` gets
// the old soft limit when it was raised, 0 otherwise.
size_t raise_descriptor_limit(size_t* raised_from);

// The soft RLIMIT_NOFILE now (the application may lower it later).
size_t descriptor_limit();

// How many descriptors a store server may use for its connections under a
// soft limit of `limit`, keeping the rest for the process: half of it, at
// most `cap`.
size_t store_connection_budget(size_t limit, size_t cap);

// Descriptor numbers from this one up are left to the process: a
// connection accepted onto one of them is closed at once. Allocation takes
// the lowest free number, so a high one means the process is near its
// limit whoever holds the others.
size_t store_descriptor_ceiling(size_t limit);

}  // namespace mlos::collectives
