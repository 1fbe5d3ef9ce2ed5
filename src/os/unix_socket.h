/* SPDX-License-Identifier: Apache-2.0 */
// Unix stream sockets for the control protocol: listening, connecting, and
// moving bytes with an optional file descriptor attached (SCM_RIGHTS), which
// is how a job hands its phase page to mlosd.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "os/unique_fd.h"

namespace mlos::os {

// A non-blocking, close-on-exec listening socket at `path` with permissions
// `mode`. A stale socket file there (nothing accepting on it) is replaced; a
// live one is EADDRINUSE (another daemon runs), anything else that is not a
// socket is refused. The parent directory must exist. The path appears
// only once the socket listens (bound as `path`.new, then renamed in), so a
// client that finds it is never refused for being early.
Result<UniqueFd> listen_unix(const std::string& path, mode_t mode, int backlog = 128);

// A blocking, close-on-exec connection to `path`. ENOENT/ECONNREFUSED mean
// nobody listens there (the error keeps that errno); EAGAIN that the
// listener's backlog stayed full for `timeout_ms` (> 0; 0 waits as long as
// the kernel does).
Result<UniqueFd> connect_unix(const std::string& path, int timeout_ms = 0);

// Writes all of `bytes` (retrying short writes and EINTR; MSG_NOSIGNAL, so a
// closed peer is EPIPE, not SIGPIPE). `pass_fd` >= 0 travels with the first
// byte. For non-blocking sockets EAGAIN is returned as an error with
// *written (if given) saying how far it got.
Status send_all(int socket_fd, std::string_view bytes, int pass_fd = -1, size_t* written = nullptr);

// One recvmsg: up to `cap` bytes into `buf`; descriptors that came with them
// are appended to `fds` (extra ones beyond what the caller wants are its to
// close: they are owned). Returns 0 at end of stream.
Result<size_t> recv_some(int socket_fd, char* buf, size_t cap, std::vector<UniqueFd>* fds);

}  // namespace mlos::os
