// Who is on the other end of a Unix socket, as the kernel recorded it when
// the connection was made (SO_PEERCRED): how mlosd authenticates clients.
#pragma once

#include <sys/types.h>

#include "core/status.h"

namespace mlos::os {

struct PeerCredentials {
  pid_t pid = 0;
  uid_t uid = 0;
  gid_t gid = 0;
};

Result<PeerCredentials> peer_credentials(int socket_fd);

}  // namespace mlos::os
