/* SPDX-License-Identifier: Apache-2.0 */
// The mlos-dataload helper: serves one trainer over its socket (fd 3),
// decoding samples with a pool of threads straight into the batch slots of
// the trainer's arena (fd 4). See include/mlos/dataload.h for the
// contract and loader_protocol.h for the messages.
//
// Threads: the main thread reads the socket (epochs, freed slots, stop)
// and is the only one to block on it. With io_uring (the default), one
// reader thread takes samples from the BatchScheduler in order, opens them
// and keeps up to kUringDepth reads in flight, within the read-ahead bound;
// N workers decode what it read. Without (MLOS_DATALOAD_PREAD, or the
// kernel refused a ring), each worker takes a sample, reads it with pread
// and decodes it. Either way a worker announces a batch when it completes
// it, and the WorkerGovernor decides how many workers may work (the rest
// wait, parked). A stop, or the end of the trainer (its socket closing),
// ends the helper at once (_exit): threads are never joined.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <span>
#include <string>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "core/status.h"
#include "dataload/batch_layout.h"
#include "dataload/batch_scheduler.h"
#include "dataload/epoch_sampler.h"
#include "dataload/loader_protocol.h"
#include "dataload/sample_decode.h"
#include "dataload/sample_source.h"
#include "dataload/uring_reads.h"
#include "dataload/worker_governor.h"
#include "os/memory_arena.h"

namespace mlos::dataload {

class LoaderService {
 public:
  LoaderService(int socket_fd, int arena_fd) : socket_(socket_fd), arena_fd_(arena_fd) {}
  // Runs until the trainer stops it or goes away; the process's exit code.
  int run();

 private:
  // A sample the reader thread read (or failed to) for a worker to decode.
  struct Fetch {
    BatchScheduler::Task task{};
    SampleExtent extent;
    ScratchBuffer buffer;
    UringReads::Request read;
    std::optional<std::string> error;
  };

  // Opens the source, maps the arena, checks the slots, sets up the reader,
  // starts the threads and confines the process. The error goes back to
  // the trainer.
  Status begin(const StartRequest& request);
  // Chooses io_uring or pread and the read-ahead bound, noting why.
  void choose_reader(const StartRequest& request);
  void worker(uint32_t index);
  void reader();
  // Opens the sample and queues its read; a failure becomes a Fetch with
  // an error, handed to the workers at once.
  void start_fetch(std::unique_ptr<Fetch> fetch);
  // Under mu_: whether worker `index` may work now.
  bool may_work(uint32_t index) const { return index < governor_->active(); }
  // Decodes one sample's bytes into its place; the reason when it is bad.
  std::optional<std::string> decode(const BatchScheduler::Task& task, std::span<const uint8_t> bytes,
                                    DecodeScratch& scratch);
  // Records a decoded (or bad) sample and announces the batches it completes.
  void finish(const BatchScheduler::Task& task, const std::optional<std::string>& bad);
  // The trainer gave a slot back: the governor's step.
  void on_free_slot(const FreeSlot& f);
  // Moves the good samples of a batch with bad ones to its front.
  void compact(const BatchScheduler::Done& done);
  void announce(const BatchScheduler::Done& done);
  void send(const HelperMessage& m);

  const int socket_;
  const int arena_fd_;
  StartRequest request_;
  BatchLayout layout_;
  SampleOptions sample_options_;
  std::unique_ptr<SampleSource> source_;
  std::optional<EpochSampler> sampler_;
  std::optional<os::MemoryArena> arena_;

  std::mutex mu_;
  std::condition_variable work_;
  std::optional<BatchScheduler> scheduler_;
  bool epoch_failed_ = false;  // STRICT: a bad sample ended the epoch
  uint64_t skipped_ = 0;       // bad samples of the current epoch
  uint64_t announced_ = 0;     // batches of the current epoch sent
  uint64_t pass_ = 0;          // the trainer's number for the current epoch request
  uint32_t worker_count_ = 0;  // set before the workers start
  uint32_t started_threads_ = 0;
  std::vector<std::thread> threads_;
  std::optional<WorkerGovernor> governor_;

  // The io_uring reader; null when reading with pread.
  std::unique_ptr<UringReads> uring_;
  uint32_t reader_kind_ = 0;       // an mlos_dataload_reader_t
  std::string reader_notes_;
  uint64_t read_ahead_bytes_ = 0;  // bound on fetch_bytes_
  uint32_t max_fetched_ = 0;       // bound on fetched_.size()
  uint64_t fetch_bytes_ = 0;       // bytes of samples opened and not yet decoded
  std::deque<std::unique_ptr<Fetch>> fetched_;  // read, waiting for a worker
  std::vector<std::unique_ptr<Fetch>> spare_;   // kept with their buffers
  std::mutex send_mu_;
};

}  // namespace mlos::dataload
