// SPDX-License-Identifier: Apache-2.0
// mlos-dataload: the data-loading helper libmlos starts for a trainer
// (include/mlos/dataload.h). It takes no arguments: its socket is fd 3 and
// the trainer's batch arena fd 4; everything else comes over the socket.
#include <fcntl.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "dataload/loader_protocol.h"
#include "dataload/loader_service.h"

int main(int argc, char** argv) {
  if (argc > 1 && (!std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h"))) {
    std::puts("mlos-dataload: the data-loading helper libmlos starts for a trainer.\n"
              "Not for use by hand: it serves the trainer on descriptor 3 (a SOCK_SEQPACKET socket)\n"
              "and writes batches into the arena on descriptor 4. See docs/dataload.md.");
    return 0;
  }
  using namespace mlos::dataload;
  if (fcntl(kHelperSocketFd, F_GETFD) < 0 || fcntl(kHelperArenaFd, F_GETFD) < 0) {
    std::fprintf(stderr, "mlos-dataload: descriptors 3 and 4 must be the trainer's socket and arena\n");
    return 2;
  }
  // Nothing of it belongs in a core file, and no other process of the
  // user should read its memory (the trainer's batches).
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  LoaderService service(kHelperSocketFd, kHelperArenaFd);
  return service.run();
}
