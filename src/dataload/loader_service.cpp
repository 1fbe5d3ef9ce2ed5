// SPDX-License-Identifier: Apache-2.0
#include "dataload/loader_service.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <new>

#include "mlos/dataload.h"
#include "os/sandbox.h"

namespace mlos::dataload {

namespace {

constexpr int kStartTimeoutMs = 60000;
constexpr uint32_t kMaxWorkers = 256;
// Reads in flight through io_uring: deep enough to keep a disk's queue
// busy on a cold page cache, small next to any memory bound.
constexpr unsigned kUringDepth = 32;
// Read-ahead bound when the trainer names none.
constexpr uint64_t kDefaultReadAheadBytes = uint64_t{64} << 20;

SampleLayout sample_layout(uint32_t layout) {
  switch (layout) {
    case MLOS_DATALOAD_U8_CHW: return SampleLayout::kU8Chw;
    case MLOS_DATALOAD_U8_HWC: return SampleLayout::kU8Hwc;
    default: return SampleLayout::kF32Chw;
  }
}

uint32_t allowed_cpu_count() {
  cpu_set_t set;
  CPU_ZERO(&set);
  return sched_getaffinity(0, sizeof set, &set) == 0 ? static_cast<uint32_t>(CPU_COUNT(&set)) : 1;
}

}  // namespace

int LoaderService::run() {
  auto first = receive_packet(socket_, kStartTimeoutMs);
  if (!first || !first->has_value()) return 2;  // no trainer, or a mute one
  auto m = decode_trainer_message(**first);
  if (!m || !std::holds_alternative<StartRequest>(*m)) {
    send(Failed{MLOS_ERR_INVALID_ARGUMENT, m ? "the first message must be start" : m.error().message});
    return 2;
  }
  if (Status s = begin(std::get<StartRequest>(*m)); !s) {
    send(Failed{s.error().code, s.error().describe()});
    return 1;
  }
  Started started;
  started.samples = source_->size();
  started.samples_per_epoch = sampler_->samples_per_epoch();
  started.batches_per_epoch = sampler_->batches_per_epoch();
  started.classes = static_cast<uint32_t>(source_->class_names().size());
  started.workers = worker_count_;
  started.reader = reader_kind_;
  started.read_ahead_bytes = read_ahead_bytes_;
  started.notes = reader_notes_;
  send(started);
  for (;;) {
    auto packet = receive_packet(socket_, -1);
    // The trainer is gone: nothing will read what the workers make.
    if (!packet) _exit(0);
    if (!packet->has_value()) continue;
    auto message = decode_trainer_message(**packet);
    if (!message) {
      send(Failed{MLOS_ERR_INVALID_ARGUMENT, message.error().message});
      _exit(2);
    }
    std::unique_lock lock(mu_);
    if (auto* e = std::get_if<EpochRequest>(&*message)) {
      scheduler_->begin_epoch(e->epoch, sampler_->indices(e->epoch), request_.flags & MLOS_DATALOAD_DROP_LAST);
      pass_ = e->pass;
      epoch_failed_ = false;
      skipped_ = 0;
      announced_ = 0;
      if (scheduler_->batches() == 0) send(EpochEnd{pass_, e->epoch, 0, 0});
    } else if (auto* f = std::get_if<FreeSlot>(&*message)) {
      if (Status s = scheduler_->free_slot(f->slot); !s) {
        send(Failed{MLOS_ERR_INVALID_ARGUMENT, s.error().message});
        _exit(2);
      }
      on_free_slot(*f);
    } else if (std::holds_alternative<StopRequest>(*message)) {
      // Straight out, without joining the workers or running exit-time
      // clean-up: a thread that returns blocks its signals
      // (rt_sigprocmask) and libraries' destructors make calls of their
      // own, which the filter refuses; there is nothing to flush or save,
      // and the trainer stops reading the slots now.
      _exit(0);
    } else {
      send(Failed{MLOS_ERR_INVALID_ARGUMENT, "start sent twice"});
      _exit(2);
    }
    work_.notify_all();
  }
}

Status LoaderService::begin(const StartRequest& request) {
  request_ = request;
  auto layout = batch_layout(request.batch_size, request.image_size, request.layout);
  if (!layout) return layout.error();
  layout_ = *layout;
  if (request.transform > MLOS_DATALOAD_VAL) return make_error(MLOS_ERR_INVALID_ARGUMENT, "unknown transform");
  auto source = open_source(request.source);
  if (!source) return source.error();
  source_ = std::move(*source);
  SamplerOptions so;
  so.seed = request.seed;
  so.shuffle = !(request.flags & MLOS_DATALOAD_NO_SHUFFLE);
  so.rank = request.rank;
  so.world_size = request.world_size;
  so.drop_last = request.flags & MLOS_DATALOAD_DROP_LAST;
  so.batch_size = request.batch_size;
  auto sampler = EpochSampler::create(source_->size(), so);
  if (!sampler) return sampler.error();
  sampler_.emplace(std::move(*sampler));
  auto arena = os::MemoryArena::map_descriptor(arena_fd_);
  if (!arena) return arena.error();
  arena_.emplace(std::move(*arena));
  for (uint64_t offset : request.slot_offsets) {
    if (offset % 64 != 0 || offset > arena_->size() || arena_->size() - offset < layout_.slot_bytes) {
      return make_error(MLOS_ERR_INVALID_ARGUMENT, "slot offset " + std::to_string(offset) + " does not fit the arena");
    }
  }
  sample_options_.output = Size{static_cast<int>(request.image_size), static_cast<int>(request.image_size)};
  sample_options_.layout = sample_layout(request.layout);
  sample_options_.val_resize_shorter = static_cast<int>(std::lround(request.image_size * 256.0 / 224.0));

  if (!request.cpus.empty()) {
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int c : request.cpus) CPU_SET(c, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) {
      return make_sys_error(errno, "placing the loader on the job's CPUs", MLOS_ERR_PERMISSION);
    }
  }
  const uint32_t workers = std::min(kMaxWorkers, request.workers ? request.workers : allowed_cpu_count());
  // OpenCV would start threads of its own on first use; after the lock-down
  // no thread may be created, so every resize runs on the calling worker.
  use_single_threaded_resize();
  const auto slots = static_cast<uint32_t>(request.slot_offsets.size());
  scheduler_.emplace(request.batch_size, slots, request.flags & MLOS_DATALOAD_IN_ORDER);
  governor_.emplace(workers, slots);
  worker_count_ = workers;
  max_fetched_ = std::max(4u, 2 * workers);
  choose_reader(request);
  for (uint32_t i = 0; i < workers; ++i) threads_.emplace_back([this, i] { worker(i); });
  if (uring_) threads_.emplace_back([this] { reader(); });
  // A new thread makes system calls of its own as it starts (rseq and
  // robust-list registration in glibc's start_thread): the filter may only
  // go on once every thread is running its loop.
  {
    std::unique_lock lock(mu_);
    work_.wait(lock, [&] { return started_threads_ == threads_.size(); });
  }
  return os::lock_down_syscalls(os::SyscallProfile::kDataLoader);
}

void LoaderService::choose_reader(const StartRequest& request) {
  read_ahead_bytes_ = request.read_ahead_bytes ? request.read_ahead_bytes : kDefaultReadAheadBytes;
  if (request.flags & MLOS_DATALOAD_PREAD) {
    reader_kind_ = MLOS_DATALOAD_READER_PREAD;
    reader_notes_ = "reader: pread in the decoding threads (asked for: MLOS_DATALOAD_PREAD)\n";
    return;
  }
  auto uring = UringReads::create(kUringDepth);
  if (!uring) {
    reader_kind_ = MLOS_DATALOAD_READER_PREAD;
    reader_notes_ = "reader: pread in the decoding threads (io_uring unavailable: " + uring.error().describe() + ")\n";
    return;
  }
  uring_ = std::move(*uring);
  reader_kind_ = MLOS_DATALOAD_READER_IO_URING;
  reader_notes_ = "reader: io_uring, " + std::to_string(kUringDepth) +
                  " reads in flight (ring restricted to IORING_OP_READ), read-ahead up to " +
                  std::to_string(read_ahead_bytes_ >> 20) + " MiB\n";
}

std::optional<std::string> LoaderService::decode(const BatchScheduler::Task& task, std::span<const uint8_t> bytes,
                                                 DecodeScratch& scratch) {
  try {
    char* slot = arena_->base() + request_.slot_offsets[task.slot];
    const SampleSlot dst{slot + task.position * layout_.sample_bytes, layout_.sample_bytes};
    Result<SampleInfo> info = make_error(MLOS_ERR_SYSTEM, "not decoded");
    if (request_.transform == MLOS_DATALOAD_TRAIN) {
      SeededRandom random(sample_seed(request_.seed, task.epoch, task.sample));
      info = decode_train_sample(bytes, random, sample_options_, scratch, dst);
    } else {
      info = decode_val_sample(bytes, sample_options_, scratch, dst);
    }
    if (!info) return info.error().describe();
    reinterpret_cast<int64_t*>(slot + layout_.labels_offset)[task.position] = source_->label(task.sample);
    return std::nullopt;
  } catch (const std::bad_alloc&) {
    return std::string("out of memory decoding it");
  } catch (const std::exception& e) {
    return std::string("internal error: ") + e.what();
  }
}

void LoaderService::compact(const BatchScheduler::Done& done) {
  if (done.failed.empty()) return;
  char* slot = arena_->base() + request_.slot_offsets[done.slot];
  auto* labels = reinterpret_cast<int64_t*>(slot + layout_.labels_offset);
  uint32_t kept = 0;
  auto bad = done.failed.begin();
  for (uint32_t p = 0; p < done.size; ++p) {
    if (bad != done.failed.end() && *bad == p) {
      ++bad;
      continue;
    }
    if (kept != p) {
      std::memmove(slot + kept * layout_.sample_bytes, slot + p * layout_.sample_bytes, layout_.sample_bytes);
      labels[kept] = labels[p];
    }
    ++kept;
  }
}

void LoaderService::worker(uint32_t index) {
  DecodeScratch scratch;
  ScratchBuffer file;
  {
    std::lock_guard lock(mu_);
    ++started_threads_;
  }
  work_.notify_all();
  const uint32_t lookahead = 2 * worker_count_;  // samples past the next one to hint
  for (;;) {
    std::optional<std::string> bad;
    if (uring_) {
      std::unique_ptr<Fetch> fetch;
      {
        std::unique_lock lock(mu_);
        work_.wait(lock, [&] { return may_work(index) && !fetched_.empty(); });
        fetch = std::move(fetched_.front());
        fetched_.pop_front();
      }
      bad = fetch->error ? fetch->error
                         : decode(fetch->task, {fetch->buffer.data(), fetch->extent.length}, scratch);
      const BatchScheduler::Task task = fetch->task;
      {
        std::lock_guard lock(mu_);
        fetch_bytes_ -= fetch->error ? 0 : fetch->extent.length;
        fetch->extent = SampleExtent{};
        spare_.push_back(std::move(fetch));
      }
      work_.notify_all();  // room for the reader
      finish(task, bad);
      continue;
    }
    std::optional<BatchScheduler::Task> task;
    std::optional<uint64_t> soon;
    {
      std::unique_lock lock(mu_);
      work_.wait(lock, [&] { return may_work(index) && !epoch_failed_ && (task = scheduler_->next_task()); });
      soon = scheduler_->upcoming(lookahead);
    }
    if (soon) source_->will_read(*soon);  // opens a file: not under the mutex
    try {
      auto bytes = source_->read(task->sample, file);
      bad = bytes ? decode(*task, *bytes, scratch) : bytes.error().describe();
    } catch (const std::bad_alloc&) {
      bad = "out of memory reading it";
    }
    finish(*task, bad);
  }
}

void LoaderService::reader() {
  {
    std::lock_guard lock(mu_);
    ++started_threads_;
  }
  work_.notify_all();
  for (;;) {
    // Take the next sample when there is room; block on the mutex's
    // condition only when no read is in flight, else on the ring.
    std::unique_ptr<Fetch> fetch;
    {
      std::unique_lock lock(mu_);
      auto take = [&] {
        if (epoch_failed_ || fetch_bytes_ >= read_ahead_bytes_ || fetched_.size() >= max_fetched_) return false;
        auto task = scheduler_->next_task();
        if (!task) return false;
        if (spare_.empty()) {
          fetch = std::make_unique<Fetch>();
        } else {
          fetch = std::move(spare_.back());
          spare_.pop_back();
        }
        fetch->task = *task;
        return true;
      };
      if (uring_->in_flight() == 0) {
        work_.wait(lock, take);
      } else {
        take();
      }
    }
    if (fetch) {
      start_fetch(std::move(fetch));
      if (uring_->in_flight() < uring_->depth()) continue;  // fill the ring before waiting on it
    }
    if (uring_->in_flight() == 0) continue;
    auto finished = uring_->wait();
    if (!finished) {
      send(Failed{MLOS_ERR_SYSTEM, "reading samples: " + finished.error().describe()});
      _exit(1);
    }
    std::vector<std::unique_ptr<Fetch>> done;
    for (UringReads::Request* r : *finished) {
      std::unique_ptr<Fetch> f(static_cast<Fetch*>(r->owner));
      if (r->error != 0) {
        f->error = r->error < 0 ? "short read of " + source_->describe(f->task.sample) + ": " +
                                      std::to_string(r->done) + " of " + std::to_string(r->length) +
                                      " bytes (the file shrank)"
                                : make_sys_error(r->error, "cannot read " + source_->describe(f->task.sample),
                                                 MLOS_ERR_IO).describe();
      }
      f->extent.owned.reset();  // a file of its own is closed once read
      done.push_back(std::move(f));
    }
    if (done.empty()) continue;
    {
      std::lock_guard lock(mu_);
      for (auto& f : done) {
        if (f->error) fetch_bytes_ -= f->extent.length;
        fetched_.push_back(std::move(f));
      }
    }
    work_.notify_all();
  }
}

void LoaderService::start_fetch(std::unique_ptr<Fetch> fetch) {
  fetch->error.reset();
  auto extent = source_->open_sample(fetch->task.sample);
  if (extent) {
    fetch->extent = std::move(*extent);
    try {
      fetch->buffer.ensure(fetch->extent.length);
    } catch (const std::bad_alloc&) {
      fetch->error = "out of memory reading it";
    }
  } else {
    fetch->error = extent.error().describe();
  }
  if (fetch->error || fetch->extent.length == 0) {
    // Nothing to read: an error, or an empty file (which the decoder
    // reports as not an image).
    fetch->extent.owned.reset();
    if (fetch->error) fetch->extent.length = 0;
    {
      std::lock_guard lock(mu_);
      fetched_.push_back(std::move(fetch));
    }
    work_.notify_all();
    return;
  }
  {
    std::lock_guard lock(mu_);
    fetch_bytes_ += fetch->extent.length;
  }
  Fetch* f = fetch.release();  // owned by its read until the ring gives it back
  f->read = UringReads::Request{f->extent.fd, f->extent.offset, f->buffer.data(), f->extent.length, 0, 0, f};
  uring_->start(&f->read);
}

void LoaderService::finish(const BatchScheduler::Task& task, const std::optional<std::string>& bad) {
  std::vector<BatchScheduler::Done> done;
  {
    std::lock_guard lock(mu_);
    const bool current = task.generation == scheduler_->generation();
    if (bad && current) {
      send(BadSample{pass_, task.epoch, source_->describe(task.sample), *bad});
      if (request_.flags & MLOS_DATALOAD_STRICT) {
        if (!epoch_failed_) send(Failed{MLOS_ERR_INVALID_ARGUMENT, source_->describe(task.sample) + ": " + *bad});
        epoch_failed_ = true;
      }
      ++skipped_;
    }
    done = scheduler_->complete(task, !bad);
  }
  for (const auto& d : done) {
    compact(d);
    announce(d);
  }
  work_.notify_all();  // a stale batch may have freed its slot
}

void LoaderService::on_free_slot(const FreeSlot& f) {
  if (f.interval_us == 0) return;  // not a consumption report
  const uint32_t delivered = scheduler_->delivered_slots();
  const uint32_t ready = delivered > f.held ? delivered - f.held : 0;
  const double share = std::min(1.0, static_cast<double>(f.waited_us) / static_cast<double>(f.interval_us));
  governor_->on_release(ready, share);
}

void LoaderService::announce(const BatchScheduler::Done& done) {
  // Under the scheduler's mutex, so that the end of an epoch is sent after
  // the last of its batches, whichever worker finished which.
  std::lock_guard lock(mu_);
  if (done.generation != scheduler_->generation() || epoch_failed_) {
    // Its pass was abandoned (or failed) while it was being compacted: the
    // trainer will never hear of it, so the slot is free again.
    (void)scheduler_->free_slot(done.slot);
    return;
  }
  const auto skipped = static_cast<uint32_t>(done.failed.size());
  send(BatchReady{pass_, done.epoch, done.batch, done.slot, done.size - skipped, skipped, governor_->active()});
  if (++announced_ == scheduler_->batches()) send(EpochEnd{pass_, done.epoch, announced_, skipped_});
}

void LoaderService::send(const HelperMessage& m) {
  std::lock_guard lock(send_mu_);
  // A trainer that is gone cannot be told; the main thread sees its end.
  (void)send_packet(socket_, encode(m));
}

}  // namespace mlos::dataload
