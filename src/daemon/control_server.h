// mlosd's event loop: one thread, epoll over the listening socket, the
// clients, a sampling timer, one pidfd per job owner (readable when that
// process exits, so its job is pruned at once) and a signalfd for
// SIGTERM/SIGINT, plus the memory-threshold eventfds of watched jobs. Requests are decoded with FrameDecoder, authenticated with
// SO_PEERCRED and handed to JobManager. A malformed frame gets an error reply
// and the connection is closed; the daemon stays up.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "daemon/daemon_config.h"
#include "daemon/frame_codec.h"
#include "daemon/job_manager.h"
#include "daemon/job_metrics.h"
#include "os/peer_credentials.h"
#include "os/unique_fd.h"

namespace mlos::daemon {

class ControlServer {
 public:
  // `info` goes into hello and status replies (version, pid, ...).
  ControlServer(const DaemonConfig& config, JobManager& jobs, JobMetrics& metrics, nlohmann::json info);
  ~ControlServer();

  // Binds the socket (refusing if another daemon answers there).
  Status listen();
  // Serves until SIGTERM or SIGINT. Jobs are kept: they belong to their
  // processes, and the next mlosd adopts them.
  Status run();

  // One request, as the loop handles it.
  nlohmann::json handle(const os::PeerCredentials& peer, const Request& request, os::UniqueFd fd);

 private:
  struct Client {
    os::UniqueFd fd;
    os::PeerCredentials peer;
    FrameDecoder decoder{64 * 1024};
    std::vector<os::UniqueFd> fds;  // received with the request being read
    std::string out;                // reply bytes not yet written
    bool closing = false;           // close once `out` is flushed
  };

  void accept_clients();
  void on_client(int fd, uint32_t events);
  void queue_reply(Client& c, const nlohmann::json& reply);
  void flush(Client& c);
  void close_client(int fd);
  void sample(bool metrics_due);
  void sync_owner_watches();
  // Brings epoll to JobManager::memory_wakeups().
  void sync_memory_wakeups();
  void write_textfile();

  const DaemonConfig& config_;
  JobManager& jobs_;
  JobMetrics& metrics_;
  nlohmann::json info_;
  os::UniqueFd epoll_, listen_, timer_, signals_;
  std::map<int, std::unique_ptr<Client>> clients_;
  std::map<int, uint64_t> pidfd_job_;       // pidfd -> job
  std::map<uint64_t, os::UniqueFd> watches_;  // job -> pidfd
  std::map<int, uint64_t> memory_wakeups_;    // fd (owned by JobManager) -> job
  uint64_t memory_wakeups_version_ = UINT64_MAX;  // JobManager's at the last sync
  uint64_t ticks_ = 0;
  std::map<std::string, uint64_t> requests_by_op_;
};

}  // namespace mlos::daemon
