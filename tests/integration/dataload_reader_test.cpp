// SPDX-License-Identifier: Apache-2.0
// How the data loader's helper reads and how many threads it lets decode:
// io_uring against pread (same batches, the reader named in stats and
// notes), the read-ahead counted against the job's memory, and the worker
// governor taking threads away from a trainer that never waits for data.
#include <gtest/gtest.h>
#include <mlos/dataload.h>
#include <mlos/training.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <thread>

#include "integration/dataload_fixture.h"
#include "integration/job_request.h"
#include "integration/temp_dir.h"

using namespace mlos_test;

namespace {

// io_uring is there unless kernel.io_uring_disabled says otherwise (2: for
// nobody; 1: only for a group this test does not set up).
bool kernel_allows_io_uring() {
  std::ifstream f("/proc/sys/kernel/io_uring_disabled");
  int disabled = 0;
  return !(f >> disabled) || disabled == 0;
}

}  // namespace

TEST(DataLoadReader, IoUringAndPreadGiveTheSameBatchesAndSayWhichTheyUsed) {
  TempDir dir("dataload");
  make_folder(dir.path());
  auto o = options(dir.path());
  o.flags = MLOS_DATALOAD_IN_ORDER;
  Loader uring(o);
  ASSERT_NE(uring.handle, nullptr);
  o.flags |= MLOS_DATALOAD_PREAD;
  Loader pread(o);
  ASSERT_NE(pread.handle, nullptr);

  const mlos_dataload_stats_t us = uring.stats();
  if (kernel_allows_io_uring()) {
    EXPECT_EQ(us.reader, static_cast<uint32_t>(MLOS_DATALOAD_READER_IO_URING)) << uring.notes();
    EXPECT_NE(uring.notes().find("reader: io_uring"), std::string::npos) << uring.notes();
  } else {
    EXPECT_EQ(us.reader, static_cast<uint32_t>(MLOS_DATALOAD_READER_PREAD));
    EXPECT_NE(uring.notes().find("io_uring unavailable"), std::string::npos) << uring.notes();
  }
  EXPECT_EQ(us.read_ahead_bytes, uint64_t{64} << 20);  // no job: the largest bound
  EXPECT_EQ(us.workers, 2u);
  EXPECT_EQ(us.batches, 0u);
  EXPECT_EQ(pread.stats().reader, static_cast<uint32_t>(MLOS_DATALOAD_READER_PREAD));
  EXPECT_NE(pread.notes().find("asked for: MLOS_DATALOAD_PREAD"), std::string::npos) << pread.notes();

  const size_t bytes = uring.info().sample_bytes;
  for (uint64_t epoch : {0u, 1u}) {
    const EpochResult a = run_epoch(uring, epoch, bytes);
    const EpochResult b = run_epoch(pread, epoch, bytes);
    EXPECT_EQ(a.labels, kAllLabels);
    EXPECT_EQ(a.bytes_by_batch, b.bytes_by_batch) << "epoch " << epoch;
  }
  EXPECT_EQ(uring.stats().batches, 6u);
}

TEST(DataLoadReader, BadAndVanishingFilesThroughEitherReaderAreSkippedByPath) {
  for (uint32_t reader_flag : {0u, static_cast<uint32_t>(MLOS_DATALOAD_PREAD)}) {
    SCOPED_TRACE(reader_flag ? "pread" : "io_uring");
    TempDir dir("dataload");
    make_folder(dir.path());
    { std::ofstream(dir.path() + "/class_a/zz_empty.jpg"); }
    auto o = options(dir.path());
    o.flags = reader_flag;
    Loader l(o);
    ASSERT_NE(l.handle, nullptr);
    std::filesystem::remove(dir.path() + "/class_b/0_jpeg_gray.jpg");  // listed, then gone
    const EpochResult r = run_epoch(l, 0, l.info().sample_bytes);
    EXPECT_EQ(r.skipped, 2u);
    EXPECT_EQ(r.labels.size(), 11u);
    const std::string errors = l.errors();
    EXPECT_NE(errors.find("zz_empty.jpg"), std::string::npos) << errors;
    EXPECT_NE(errors.find("0_jpeg_gray.jpg: cannot open"), std::string::npos) << errors;
  }
}

TEST(DataLoadReader, TheReadAheadCountsAgainstTheJobsMemoryAndShrinksToFit) {
  TempDir dir("dataload");
  make_folder(dir.path());
  // The slots (4 of them, 16 KiB each) fit in 20 MiB with room for a
  // 16 MiB read-ahead, not a 64 MiB one; what is left after that is under
  // the smallest read-ahead (4 MiB).
  mlos_training_resources_t* job = request_test_job(uint64_t{20} << 20);
  ASSERT_NE(job, nullptr);
  {
    Loader l(options(dir.path()), job);
    ASSERT_NE(l.handle, nullptr);
    EXPECT_EQ(l.stats().read_ahead_bytes, uint64_t{16} << 20);
    EXPECT_EQ(run_epoch(l, 0, l.info().sample_bytes).labels, kAllLabels);
    // What is left cannot hold a second loader's 4 MiB read-ahead.
    mlos_dataload_t* second = nullptr;
    const auto o = options(dir.path());
    EXPECT_EQ(mlos_dataload_start(job, &o, &second), MLOS_ERR_INSUFFICIENT_MEMORY);
    EXPECT_NE(std::string(mlos_last_error_message()).find("read-ahead"), std::string::npos) << mlos_last_error_message();
  }
  // Stopping the loader gave its share back.
  {
    Loader again(options(dir.path()), job);
    ASSERT_NE(again.handle, nullptr);
    EXPECT_EQ(again.stats().read_ahead_bytes, uint64_t{16} << 20);
  }
  EXPECT_EQ(mlos_training_release_resources(job), MLOS_OK);
}

// A trainer that spends 100 ms on each batch and never waits for the next
// one: batches pile up, so the helper keeps one thread decoding and leaves
// the other CPU to the trainer. (Decoding a tiny image takes well under a
// millisecond, so even a busy machine keeps the queue full.) A batch
// carries the count as of when it was announced, which may be one
// governor step behind the release that freed its slot; one image a batch
// (12 an epoch, 4 slots) leaves several steps at one thread before the
// epoch's last batch, so that lag cannot show the count at an epoch's
// start (the first wait there adds a thread back).
TEST(DataLoadReader, ATrainerThatNeverWaitsLeavesOneThreadDecoding) {
  TempDir dir("dataload");
  make_folder(dir.path());
  auto o = options(dir.path(), 1);
  o.prefetch = 4;
  Loader l(o);
  ASSERT_NE(l.handle, nullptr);
  EXPECT_EQ(l.stats().active_workers, 2u);
  for (uint64_t epoch = 0; epoch < 2; ++epoch) {
    ASSERT_EQ(mlos_dataload_start_epoch(l.handle, epoch), MLOS_OK);
    mlos_dataload_batch_t b{};
    int rc;
    while ((rc = mlos_dataload_next(l.handle, &b, 60000)) == MLOS_OK) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the "training step"
      ASSERT_EQ(mlos_dataload_release_batch(l.handle, b.slot), MLOS_OK);
    }
    ASSERT_EQ(rc, MLOS_DATALOAD_END) << mlos_last_error_message();
  }
  const mlos_dataload_stats_t st = l.stats();
  EXPECT_EQ(st.active_workers, 1u);
  EXPECT_EQ(st.batches, 24u);
}
