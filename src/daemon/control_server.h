/* SPDX-License-Identifier: Apache-2.0 */
// mlosd's event loop: one thread, epoll over the listening socket, the
// clients, a sampling timer, one pidfd per job owner (readable when that
// process exits, so its jobs are pruned at once) and a signalfd for
// SIGTERM/SIGINT, plus the memory-threshold eventfds of watched jobs.
// Requests are decoded with FrameDecoder, authenticated with SO_PEERCRED and
// the connecting process's pidfd (SO_PEERPIDFD), and handed to JobManager. A
// malformed frame gets an error reply and the connection is closed; the
// daemon stays up. Per-uid connection quotas, an idle timeout and a reserve
// descriptor keep one user from taking every slot or spinning the loop
// (docs/security.md).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "daemon/daemon_config.h"
#include "daemon/job_manager.h"
#include "daemon/job_metrics.h"
#include "daemon/metrics_updater.h"
#include "daemon/policy_metrics.h"
#include "os/peer_credentials.h"
#include "os/process_handle.h"
#include "os/unique_fd.h"
#include "protocol/frame_codec.h"

namespace mlos::daemon {

class ControlServer {
 public:
  // `info` goes into hello and status replies (version, pid, ...).
  ControlServer(const DaemonConfig& config, JobManager& jobs, JobMetrics& metrics, nlohmann::json info);
  ~ControlServer();

  // What the service around the loop does at its events (mlosd: systemd
  // notifications and config reloads). Each may be empty. All run on the
  // loop's thread.
  struct Hooks {
    std::function<void()> reload;    // SIGHUP
    std::function<void()> alive;     // every sampling tick: the loop turns (the watchdog's keep-alive)
    std::function<void(const std::string& why)> stopping;  // SIGTERM/SIGINT, before the loop returns
  };
  void set_hooks(Hooks hooks) { hooks_ = std::move(hooks); }
  // The GPUs' metrics (mlosd with NVML), updated with the jobs' and shown
  // per job in status; before run(). Null: no GPU figures.
  void set_gpu_metrics(std::shared_ptr<GpuMetrics> gpus) { gpus_ = std::move(gpus); }

  // Binds the socket (refusing if another daemon answers there).
  Status listen();
  // Serves until SIGTERM or SIGINT; SIGHUP calls hooks.reload. Jobs are kept: they belong to their
  // processes, and the next mlosd adopts them.
  Status run();

  // One request, as the loop handles it.
  nlohmann::json handle(const os::PeerCredentials& peer, const protocol::Request& request, os::UniqueFd fd);

 private:
  struct Client {
    os::UniqueFd fd;
    os::PeerCredentials peer;   // peer.process points at `process`
    os::ProcessHandle process;  // the connecting process, by pidfd
    protocol::FrameDecoder decoder{protocol::kMaxRequestPayload};
    std::vector<os::UniqueFd> fds;  // received with the request being read
    std::string out;                // reply bytes not yet written
    bool closing = false;           // close once `out` is flushed
    uint64_t last_active_ns = 0;    // last byte received (idle timeout)
    uint64_t serial = 0;            // this connection, not its (reusable) descriptor number
    // Its last request's reply waits for a policy's verdict: nothing more
    // is read from it until that reply is queued (replies keep order).
    bool waiting = false;
  };
  // A reply JobManager gives later (JobManager::pending_token).
  struct PendingReply {
    int fd;
    uint64_t serial;
    uint64_t request_id;
    std::string op;
  };
  // One pidfd per job owner (not per job), readable when it exits.
  struct OwnerWatch {
    os::ProcessHandle handle;
    std::set<uint64_t> jobs;  // may name jobs released since: harmless
  };
  using OwnerKey = std::pair<int, uint64_t>;  // pid, start time

  void accept_clients();
  // The listener woke with no descriptor left to accept into: accept one
  // connection into the reserve descriptor and close it with an error, so
  // the backlog drains instead of waking the loop forever; with no reserve
  // either, stop polling the listener until a descriptor is freed.
  void shed_connection();
  void resume_listening();
  void close_idle_clients(uint64_t now_ns);
  void on_client(int fd, uint32_t events);
  // Handles the complete requests buffered in `c`'s decoder, in order,
  // until one's reply must wait (Client::waiting) or the client closes.
  void serve_frames(Client& c);
  // Queues the replies JobManager finished since (policy verdicts came)
  // and goes on with their clients' buffered requests.
  void deliver_finished();
  // What a reply to `op` sets up beside it (a granted job's owner watch).
  void after_reply(const std::string& op, const nlohmann::json& reply);
  void queue_reply(Client& c, const nlohmann::json& reply);
  void flush(Client& c);
  void close_client(int fd);
  void sample(bool metrics_due);
  // Watches `job`'s owner (one pidfd per owner). false if no pidfd could be
  // taken: the owner is then read from /proc by the ticks.
  bool watch_owner(uint64_t job, const ProcessId& owner);
  // Brings the owner pidfds to JobManager's jobs (O(jobs): at start and on
  // the slow sweep only).
  void sync_owner_watches();
  void owner_exited(int pidfd);
  // Brings epoll to JobManager::memory_wakeups().
  void sync_memory_wakeups();
  // Brings epoll to the policy hosts' sockets (JobManager::policy_fds).
  void sync_policy_fds();
  // On the metrics updater's thread.
  void write_textfile();

  const DaemonConfig& config_;
  JobManager& jobs_;
  JobMetrics& metrics_;
  nlohmann::json info_;
  os::UniqueFd epoll_, listen_, timer_, signals_;
  os::UniqueFd reserve_;        // /dev/null, given up to accept when out of descriptors
  bool listening_ = true;       // the listener is in epoll
  uint64_t shed_connections_ = 0;
  std::map<int, std::unique_ptr<Client>> clients_;
  uint64_t next_client_serial_ = 1;
  std::map<uint64_t, PendingReply> pending_replies_;  // JobManager's token -> who waits
  std::map<uint32_t, int> connections_by_uid_;
  std::map<OwnerKey, OwnerWatch> owner_watches_;
  std::map<int, OwnerKey> pidfd_owner_;         // pidfd -> its owner
  std::map<int, uint64_t> memory_wakeups_;    // fd (owned by JobManager) -> job
  uint64_t memory_wakeups_version_ = UINT64_MAX;  // JobManager's at the last sync
  std::set<int> policy_fds_;                      // policy host sockets in epoll
  uint64_t ticks_ = 0;
  std::map<std::string, uint64_t> requests_by_op_;
  std::shared_ptr<GpuMetrics> gpus_;
  std::unique_ptr<MetricsUpdater> updater_;  // started at the first sample
  PolicyMetrics policy_metrics_;
  Hooks hooks_;
};

}  // namespace mlos::daemon
