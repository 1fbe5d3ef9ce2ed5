// SPDX-License-Identifier: Apache-2.0
#include "os/peer_credentials.h"

#include <sys/socket.h>

#include <cerrno>

namespace mlos::os {

Result<PeerCredentials> peer_credentials(int socket_fd) {
  struct ucred cred {};
  socklen_t len = sizeof cred;
  if (getsockopt(socket_fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
    return make_sys_error(errno, "SO_PEERCRED on descriptor " + std::to_string(socket_fd));
  }
  return PeerCredentials{cred.pid, cred.uid, cred.gid};
}

}  // namespace mlos::os
