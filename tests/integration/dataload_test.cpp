// SPDX-License-Identifier: Apache-2.0
// The data loader (include/mlos/dataload.h) end to end: a real helper
// process decoding a small ImageFolder into the trainer's pool. Checked
// from outside: the helper's /proc status (seccomp, CPUs, user), the
// batches' addresses in the pool's mapping, every sample once per epoch,
// bad files reported by path, the helper's death seen as PEER_LOST.
#include <gtest/gtest.h>
#include <mlos/dataload.h>
#include <mlos/training.h>
#include <signal.h>
#include <unistd.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <set>
#include <string>
#include <vector>

#include "integration/dataload_fixture.h"
#include "integration/job_request.h"
#include "integration/proc_observer.h"
#include "integration/temp_dir.h"

using namespace mlos_test;
namespace fs = std::filesystem;

TEST(DataLoad, AnEpochDeliversEverySampleOnceAndIsDeterministic) {
  TempDir dir("dataload");
  make_folder(dir.path());
  Loader l(options(dir.path()));
  ASSERT_NE(l.handle, nullptr);
  const mlos_dataload_info_t info = l.info();
  EXPECT_EQ(info.samples, 12u);
  EXPECT_EQ(info.samples_per_epoch, 12u);
  EXPECT_EQ(info.batches_per_epoch, 3u);
  EXPECT_EQ(info.classes, 3u);
  EXPECT_EQ(info.sample_bytes, 32u * 32 * 3);
  const EpochResult e0 = run_epoch(l, 0, info.sample_bytes);
  EXPECT_EQ(e0.labels, kAllLabels);
  EXPECT_EQ(e0.batches, 3u);
  EXPECT_EQ(l.errors(), "");
  // The same epoch again gives the same batches (contents are a function
  // of seed, epoch and batch index, whatever thread decoded what).
  const EpochResult again = run_epoch(l, 0, info.sample_bytes);
  EXPECT_EQ(again.bytes_by_batch, e0.bytes_by_batch);
  // Another epoch shuffles differently.
  const EpochResult e1 = run_epoch(l, 1, info.sample_bytes);
  EXPECT_EQ(e1.labels, kAllLabels);
  EXPECT_NE(e1.bytes_by_batch, e0.bytes_by_batch);
  // A second loader with the same seed agrees.
  Loader twin(options(dir.path()));
  EXPECT_EQ(run_epoch(twin, 1, info.sample_bytes).bytes_by_batch, e1.bytes_by_batch);
}

TEST(DataLoad, BatchesLieInThePoolMappingAndTheHelperIsConfined) {
  TempDir dir("dataload");
  make_folder(dir.path());
  Loader l(options(dir.path()));
  ASSERT_NE(l.handle, nullptr);
  const pid_t helper = l.info().helper_pid;
  const std::string status = read_text("/proc/" + std::to_string(helper) + "/status");
  EXPECT_EQ(status_field(status, "Seccomp"), "2");  // filtered
  EXPECT_EQ(status_field(status, "NoNewPrivs"), "1");
  EXPECT_EQ(status_field(status, "Uid").substr(0, status_field(status, "Uid").find('\t')), std::to_string(getuid()));
  ASSERT_EQ(mlos_dataload_start_epoch(l.handle, 0), MLOS_OK);
  mlos_dataload_batch_t b{};
  ASSERT_EQ(mlos_dataload_next(l.handle, &b, 60000), MLOS_OK) << mlos_last_error_message();
  // The batch is in the trainer's memfd arena, which the helper maps too.
  bool in_pool = false;
  std::istringstream maps(read_text("/proc/self/maps"));
  for (std::string line; std::getline(maps, line);) {
    if (line.find("memfd:mlos-tmm:dataload") == std::string::npos) continue;
    const uintptr_t start = std::stoull(line.substr(0, line.find('-')), nullptr, 16);
    const uintptr_t end = std::stoull(line.substr(line.find('-') + 1), nullptr, 16);
    const auto at = reinterpret_cast<uintptr_t>(b.images);
    in_pool = in_pool || (at >= start && at < end);
  }
  EXPECT_TRUE(in_pool);
  EXPECT_NE(read_text("/proc/" + std::to_string(helper) + "/maps").find("memfd:mlos-tmm:dataload"), std::string::npos);
  EXPECT_EQ(mlos_dataload_release_batch(l.handle, b.slot), MLOS_OK);
  EXPECT_EQ(mlos_dataload_release_batch(l.handle, b.slot), MLOS_ERR_INVALID_ARGUMENT);  // twice
}

TEST(DataLoad, TheHelperRunsOnTheJobsCpus) {
  TempDir dir("dataload");
  make_folder(dir.path());
  mlos_training_resources_t* job = request_test_job(0);
  ASSERT_NE(job, nullptr);
  int cpu = -1;
  size_t n = 0;
  ASSERT_EQ(mlos_training_get_cpus(job, &cpu, 1, &n), MLOS_OK);
  {
    Loader l(options(dir.path()), job);
    ASSERT_NE(l.handle, nullptr);
    const std::string status = read_text("/proc/" + std::to_string(l.info().helper_pid) + "/status");
    EXPECT_EQ(status_field(status, "Cpus_allowed_list"), std::to_string(cpu));
  }
  EXPECT_EQ(mlos_training_release_resources(job), MLOS_OK);
}

TEST(DataLoad, BadFilesAreSkippedAndReportedByPath) {
  TempDir dir("dataload");
  make_folder(dir.path());
  { std::ofstream(fs::path(dir.path()) / "class_b" / "zz_not_an_image.jpg") << "hello, not a JPEG"; }
  {
    std::ifstream in(kImages / "photo_420.jpg", std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), {});
    std::ofstream(fs::path(dir.path()) / "class_c" / "zz_truncated.jpg", std::ios::binary) << bytes.substr(0, bytes.size() / 3);
  }
  Loader l(options(dir.path()));
  ASSERT_NE(l.handle, nullptr);
  EXPECT_EQ(l.info().samples, 14u);
  const EpochResult r = run_epoch(l, 0, l.info().sample_bytes);
  EXPECT_EQ(r.labels, kAllLabels);  // the 12 good ones, once
  EXPECT_EQ(r.skipped, 2u);
  const std::string errors = l.errors();
  EXPECT_NE(errors.find("zz_not_an_image.jpg"), std::string::npos) << errors;
  EXPECT_NE(errors.find("zz_truncated.jpg"), std::string::npos) << errors;

  // A file deleted mid-run is one more bad sample, not a crash.
  fs::remove(fs::path(dir.path()) / "class_a" / "0_jpeg_420.jpg");
  const EpochResult after = run_epoch(l, 1, l.info().sample_bytes);
  EXPECT_EQ(after.skipped, 3u);
  EXPECT_EQ(after.labels.size(), 11u);
  EXPECT_NE(l.errors().find("0_jpeg_420.jpg"), std::string::npos);
}

namespace {

// A black 1-bit grey PNG of width x height: small on disk (zlib squeezes
// its rows of zeros ~1000:1), width * height * 3 bytes decoded.
std::string blank_png(uint32_t width, uint32_t height) {
  auto be32 = [](uint32_t v) {
    return std::string{char(v >> 24), char(v >> 16), char(v >> 8), char(v)};
  };
  auto chunk = [&](const std::string& type, const std::string& data) {
    const std::string body = type + data;
    return be32(static_cast<uint32_t>(data.size())) + body +
           be32(static_cast<uint32_t>(crc32(0, reinterpret_cast<const Bytef*>(body.data()), body.size())));
  };
  const std::string raw(static_cast<size_t>(height) * (1 + (width + 7) / 8), '\0');  // filter 0, black
  uLongf packed_size = compressBound(raw.size());
  std::string packed(packed_size, '\0');
  EXPECT_EQ(compress2(reinterpret_cast<Bytef*>(packed.data()), &packed_size,
                      reinterpret_cast<const Bytef*>(raw.data()), raw.size(), 9), Z_OK);
  packed.resize(packed_size);
  const std::string ihdr = be32(width) + be32(height) + std::string{1, 0, 0, 0, 0};  // 1-bit grey
  return std::string("\x89PNG\r\n\x1a\n", 8) + chunk("IHDR", ihdr) + chunk("IDAT", packed) + chunk("IEND", "");
}

}  // namespace

// Red-team finding 11 (issue 47): a 13000 x 13000 PNG (169 MP, under the
// pixel limit) held a decoding thread for seconds to minutes. The work
// budget (src/dataload/sample_work.h) makes it a bad sample like any
// other: left out, counted, named with the reason.
TEST(DataLoad, ASampleOverTheWorkBudgetIsABadSample) {
  TempDir dir("dataload");
  make_folder(dir.path());
  const std::string png = blank_png(13000, 13000);
  ASSERT_LT(png.size(), 164u * 1024);
  std::ofstream(fs::path(dir.path()) / "class_c" / "zz_huge.png", std::ios::binary) << png;
  for (const auto transform : {MLOS_DATALOAD_TRAIN, MLOS_DATALOAD_VAL}) {
    auto o = options(dir.path());
    o.transform = transform;
    Loader l(o);
    ASSERT_NE(l.handle, nullptr);
    const EpochResult r = run_epoch(l, 0, l.info().sample_bytes);
    EXPECT_EQ(r.labels, kAllLabels);  // the 12 good ones, once
    EXPECT_EQ(r.skipped, 1u);
    const std::string errors = l.errors();
    EXPECT_NE(errors.find("zz_huge.png"), std::string::npos) << errors;
    EXPECT_NE(errors.find("over the budget"), std::string::npos) << errors;
  }
}

TEST(DataLoad, StrictModeFailsTheEpochOnABadSample) {
  TempDir dir("dataload");
  make_folder(dir.path());
  { std::ofstream(fs::path(dir.path()) / "class_a" / "broken.jpg") << "garbage"; }
  auto o = options(dir.path());
  o.flags = MLOS_DATALOAD_STRICT;
  Loader l(o);
  ASSERT_NE(l.handle, nullptr);
  ASSERT_EQ(mlos_dataload_start_epoch(l.handle, 0), MLOS_OK);
  int rc = MLOS_OK;
  mlos_dataload_batch_t b{};
  while ((rc = mlos_dataload_next(l.handle, &b, 60000)) == MLOS_OK) mlos_dataload_release_batch(l.handle, b.slot);
  EXPECT_EQ(rc, MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(mlos_last_error_message()).find("broken.jpg"), std::string::npos);
  fs::remove(fs::path(dir.path()) / "class_a" / "broken.jpg");
}

TEST(DataLoad, RanksShareAnEpochLikeDistributedSampler) {
  TempDir dir("dataload");
  make_folder(dir.path());
  std::multiset<int64_t> all;
  for (uint32_t rank = 0; rank < 2; ++rank) {
    auto o = options(dir.path());
    o.rank = rank;
    o.world_size = 2;
    Loader l(o);
    ASSERT_NE(l.handle, nullptr);
    EXPECT_EQ(l.info().samples_per_epoch, 6u);
    EXPECT_EQ(l.info().batches_per_epoch, 2u);
    for (int64_t label : run_epoch(l, 3, l.info().sample_bytes).labels) all.insert(label);
  }
  EXPECT_EQ(all, kAllLabels);  // disjoint and complete (12 divides evenly)
}

TEST(DataLoad, DropLastAndAFullRingWaitRatherThanLose) {
  TempDir dir("dataload");
  make_folder(dir.path());
  auto o = options(dir.path(), 5);
  o.flags = MLOS_DATALOAD_DROP_LAST;
  o.prefetch = 2;
  Loader l(o);
  ASSERT_NE(l.handle, nullptr);
  EXPECT_EQ(l.info().batches_per_epoch, 2u);  // 12 = 5 + 5 (+ 2 dropped)
  ASSERT_EQ(mlos_dataload_start_epoch(l.handle, 0), MLOS_OK);
  mlos_dataload_batch_t a{}, b{}, c{};
  ASSERT_EQ(mlos_dataload_next(l.handle, &a, 60000), MLOS_OK);
  ASSERT_EQ(mlos_dataload_next(l.handle, &b, 60000), MLOS_OK);
  EXPECT_EQ(a.count + b.count, 10u);
  EXPECT_EQ(mlos_dataload_next(l.handle, &c, 60000), MLOS_DATALOAD_END);  // both slots held, but it is over

  // Mid-epoch with every slot held: nothing could ever come, so BUSY at
  // once rather than a wait without end.
  ASSERT_EQ(mlos_dataload_start_epoch(l.handle, 1), MLOS_OK);
  EXPECT_EQ(mlos_dataload_release_batch(l.handle, a.slot), MLOS_OK);
  ASSERT_EQ(mlos_dataload_next(l.handle, &a, 60000), MLOS_OK);
  EXPECT_EQ(mlos_dataload_next(l.handle, &c, 60000), MLOS_ERR_BUSY);
  EXPECT_EQ(mlos_dataload_release_batch(l.handle, b.slot), MLOS_OK);
  EXPECT_EQ(mlos_dataload_next(l.handle, &c, 60000), MLOS_OK) << mlos_last_error_message();
}

TEST(DataLoad, TheHelpersDeathIsPeerLost) {
  TempDir dir("dataload");
  make_folder(dir.path());
  Loader l(options(dir.path()));
  ASSERT_NE(l.handle, nullptr);
  ASSERT_EQ(kill(l.info().helper_pid, SIGKILL), 0);
  mlos_dataload_batch_t b{};
  int rc = mlos_dataload_start_epoch(l.handle, 0);
  if (rc == MLOS_OK) rc = mlos_dataload_next(l.handle, &b, 60000);
  EXPECT_EQ(rc, MLOS_ERR_PEER_LOST);
  EXPECT_NE(std::string(mlos_last_error_message()).find("killed by SIGKILL"), std::string::npos)
      << mlos_last_error_message();
  EXPECT_EQ(mlos_dataload_next(l.handle, &b, 0), MLOS_ERR_PEER_LOST);  // stays lost
}

TEST(DataLoad, BadOptionsAreRefused) {
  TempDir dir("dataload");
  make_folder(dir.path());
  mlos_dataload_t* l = nullptr;
  auto o = options(dir.path());
  EXPECT_EQ(mlos_dataload_start(nullptr, nullptr, &l), MLOS_ERR_INVALID_ARGUMENT);
  auto bad = o;
  bad.batch_size = 0;
  EXPECT_EQ(mlos_dataload_start(nullptr, &bad, &l), MLOS_ERR_INVALID_ARGUMENT);
  bad = o;
  bad.image_size = 4;
  EXPECT_EQ(mlos_dataload_start(nullptr, &bad, &l), MLOS_ERR_INVALID_ARGUMENT);
  bad = o;
  bad.rank = 2;
  bad.world_size = 2;
  EXPECT_EQ(mlos_dataload_start(nullptr, &bad, &l), MLOS_ERR_INVALID_ARGUMENT);
  bad = o;
  bad.flags = 1u << 30;
  EXPECT_EQ(mlos_dataload_start(nullptr, &bad, &l), MLOS_ERR_INVALID_ARGUMENT);
  bad = o;
  bad.struct_size = 8;
  EXPECT_EQ(mlos_dataload_start(nullptr, &bad, &l), MLOS_ERR_VERSION_MISMATCH);
  const std::string missing = dir.path() + "/nope";
  bad = o;
  bad.source = missing.c_str();
  EXPECT_EQ(mlos_dataload_start(nullptr, &bad, &l), MLOS_ERR_NOT_FOUND) << mlos_last_error_message();
  EXPECT_EQ(l, nullptr);
  mlos_dataload_batch_t b{};
  EXPECT_EQ(mlos_dataload_next(nullptr, &b, 0), MLOS_ERR_INVALID_HANDLE);
  Loader ok(o);
  ASSERT_NE(ok.handle, nullptr);
  EXPECT_EQ(mlos_dataload_next(ok.handle, &b, 0), MLOS_ERR_INVALID_ARGUMENT);  // no epoch yet
  EXPECT_EQ(mlos_dataload_release_batch(ok.handle, 0), MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(mlos_dataload_stop(ok.handle), MLOS_OK);
  EXPECT_EQ(mlos_dataload_stop(ok.handle), MLOS_ERR_INVALID_HANDLE);
  ok.handle = nullptr;
}

TEST(DataLoad, TheSlotsCountAgainstTheJobsMemory) {
  TempDir dir("dataload");
  make_folder(dir.path());
  mlos_training_resources_t* job = request_test_job(64 * 1024);
  ASSERT_NE(job, nullptr);
  auto o = options(dir.path(), 64);
  o.layout = MLOS_DATALOAD_F32_CHW;
  mlos_dataload_t* l = nullptr;
  EXPECT_EQ(mlos_dataload_start(job, &o, &l), MLOS_ERR_INSUFFICIENT_MEMORY);
  EXPECT_EQ(mlos_training_release_resources(job), MLOS_OK);
}

TEST(DataLoad, BeginningAnEpochAgainMidwayNeverMixesInTheAbandonedPass) {
  TempDir dir("dataload");
  make_folder(dir.path());
  auto o = options(dir.path(), 2);
  o.prefetch = 4;
  Loader l(o);
  ASSERT_NE(l.handle, nullptr);
  for (int round = 0; round < 5; ++round) {
    ASSERT_EQ(mlos_dataload_start_epoch(l.handle, 0), MLOS_OK);
    mlos_dataload_batch_t b{};
    ASSERT_EQ(mlos_dataload_next(l.handle, &b, 60000), MLOS_OK) << mlos_last_error_message();
    EXPECT_EQ(mlos_dataload_release_batch(l.handle, b.slot), MLOS_OK);
    // Batches of this pass may be decoded or on their way: the same epoch
    // begun again must still give every sample exactly once.
    const EpochResult r = run_epoch(l, 0, l.info().sample_bytes);
    EXPECT_EQ(r.labels, kAllLabels) << "round " << round;
    EXPECT_EQ(r.batches, 6u);
  }
}
