/* SPDX-License-Identifier: Apache-2.0 */
// Who is on the other end of a Unix socket, as the kernel recorded it when
// the connection was made (SO_PEERCRED): how mlosd authenticates clients.
#pragma once

#include <sys/types.h>

#include "core/status.h"

namespace mlos::os {

class ProcessHandle;

struct PeerCredentials {
  pid_t pid = 0;  // at connect time: never act on it without `process`
  uid_t uid = 0;  // effective uid at connect time: what the peer may do
  gid_t gid = 0;
  // The connecting process itself (a pidfd the server holds for the
  // connection's life); null where none could be taken. Not owned.
  const ProcessHandle* process = nullptr;
};

Result<PeerCredentials> peer_credentials(int socket_fd);

}  // namespace mlos::os
