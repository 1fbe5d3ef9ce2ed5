// The mlos-dataload helper: serves one trainer over its socket (fd 3),
// decoding samples with a pool of threads straight into the batch slots of
// the trainer's arena (fd 4). See include/mlos/dataload.h for the
// contract and loader_protocol.h for the messages.
//
// Threads: the main thread reads the socket (epochs, freed slots, stop)
// and is the only one to block on it; N workers take samples from the
// BatchScheduler under one mutex, read and decode them without it, and
// announce a batch when they complete it. A stop, or the end of the
// trainer (its socket closing), ends the helper at once (_exit): workers
// are never joined.
#pragma once

#include <condition_variable>
#include <cstdint>
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
#include "os/memory_arena.h"

namespace mlos::dataload {

class LoaderService {
 public:
  LoaderService(int socket_fd, int arena_fd) : socket_(socket_fd), arena_fd_(arena_fd) {}
  // Runs until the trainer stops it or goes away; the process's exit code.
  int run();

 private:
  // Opens the source, maps the arena, checks the slots, starts the workers
  // and confines the process. The error goes back to the trainer.
  Status begin(const StartRequest& request);
  void worker();
  // Reads and decodes one sample into its place; the reason when it is bad.
  std::optional<std::string> decode(const BatchScheduler::Task& task, DecodeScratch& scratch, ScratchBuffer& file);
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
  uint32_t started_workers_ = 0;
  std::vector<std::thread> workers_;
  std::mutex send_mu_;
};

}  // namespace mlos::dataload
