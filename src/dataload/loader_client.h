/* SPDX-License-Identifier: Apache-2.0 */
// The trainer's side of a data loader: the mlos-dataload helper process it
// starts, the conversation with it (loader_protocol.h), and which batch
// slots are whose. The slots themselves (tensor-pool buffers) belong to the
// caller, which passes their addresses, offsets and the pool's descriptor.
//
// Not thread-safe: one thread at a time (the C API's contract).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <deque>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/status.h"
#include "dataload/batch_layout.h"
#include "dataload/loader_protocol.h"
#include "os/unique_fd.h"

namespace mlos::dataload {

struct LoaderSlots {
  std::vector<char*> addresses;  // in this process
  std::vector<uint64_t> offsets; // in the arena
  int arena_fd = -1;             // sealed memfd, passed to the helper as fd 4
};

struct LoadedBatch {
  char* images = nullptr;
  const int64_t* labels = nullptr;
  uint32_t count = 0, skipped = 0;
  uint64_t index = 0, epoch = 0;
  uint32_t slot = 0;
};

class LoaderClient {
 public:
  // Spawns `helper` (posix_spawn, empty environment, the socket as fd 3 and
  // the arena as fd 4), sends `request` with the slots' offsets, and waits
  // up to start_timeout_ms for the dataset's sizes. The helper's refusal
  // comes back with its code (NOT_FOUND, INVALID_ARGUMENT ...) and reason;
  // its death as PEER_LOST saying how it ended.
  static Result<std::unique_ptr<LoaderClient>> start(const std::string& helper, StartRequest request,
                                                     LoaderSlots slots, const BatchLayout& layout,
                                                     int start_timeout_ms);
  ~LoaderClient();
  LoaderClient(const LoaderClient&) = delete;
  LoaderClient& operator=(const LoaderClient&) = delete;

  const Started& started() const { return started_; }
  pid_t pid() const { return pid_; }

  Status start_epoch(uint64_t epoch);
  // The next batch of the current epoch, nullopt at its end; TIMEOUT,
  // PEER_LOST, or the helper's error for the epoch (a bad sample under
  // MLOS_DATALOAD_STRICT).
  Result<std::optional<LoadedBatch>> next(int64_t timeout_ms);
  // INVALID_ARGUMENT unless `slot` was handed out by next() and not yet
  // released.
  Status release(uint32_t slot);
  // Batches next() returned since the start, the caller's time blocked in
  // next(), and the helper's active decoding threads as of the latest batch.
  uint64_t batches() const { return batches_; }
  uint64_t wait_ns() const { return wait_ns_; }
  uint32_t active_workers() const { return active_workers_; }
  // Bad samples of the current epoch, "what: reason\n" each (latest 1000).
  std::string errors() const;
  // Asks the helper to stop, kills it after 2 s, reaps it; says how it
  // ended. Idempotent.
  std::string stop();

 private:
  LoaderClient(pid_t pid, os::UniqueFd socket, LoaderSlots slots, const BatchLayout& layout);
  // Marks the helper gone (reaping it if it has exited) and returns the
  // PEER_LOST error every later call gets.
  Error lost(const std::string& why);
  Status send(const TrainerMessage& m);
  // Handles one message from the helper (not `started`).
  Status absorb(HelperMessage m);

  pid_t pid_;
  os::UniqueFd socket_;
  LoaderSlots slots_;
  BatchLayout layout_;
  Started started_;
  bool reaped_ = false;
  std::string ended_;  // how the helper ended, once reaped
  std::optional<Error> dead_;
  bool has_epoch_ = false;
  uint64_t epoch_ = 0;
  uint64_t pass_ = 0;  // start_epoch calls so far (the protocol's pass)
  bool end_seen_ = false;
  uint64_t handed_out_ = 0;  // batches of the current epoch next() returned
  std::optional<Error> epoch_error_;
  std::deque<BatchReady> ready_;
  std::set<uint32_t> held_;  // slots handed to the caller
  std::deque<std::string> errors_;
  uint64_t batches_ = 0;
  uint64_t wait_ns_ = 0;
  uint32_t active_workers_ = 0;
  // For FreeSlot's DATA_LOADING share: when the previous slot went back,
  // and the time blocked in next() since.
  int64_t last_release_ns_ = 0;
  uint64_t waited_since_release_ns_ = 0;
};

}  // namespace mlos::dataload
