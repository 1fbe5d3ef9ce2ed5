// SPDX-License-Identifier: Apache-2.0
// A job's activity counters in its phase page, driven through the C API:
// barriers, all-reduces and checkpoint saves of a handle whose grant carries
// the sink mlosd's broker gives a job (PagePhaseSink over a sealed memfd),
// read back through a second, read-only mapping of that memfd, as mlosd
// reads it. Everything but the socket to mlosd is the real path: the
// handle registry, the collective group (Gloo over loopback, world size 1,
// a file store), the checkpoint writer and its thread.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/handle_registry.h"
#include "core/phase_page.h"
#include "engine/job.h"
#include "engine/page_phase_sink.h"
#include "integration/temp_dir.h"
#include "mlos/checkpoint.h"
#include "mlos/collectives.h"
#include "mlos/errors.h"
#include "mlos/training.h"
#include "os/hwloc_topology.h"
#include "os/kernel.h"
#include "os/monotonic_clock.h"
#include "os/shared_page.h"

namespace {

// Grants one claim on the process's CPUs with a page-backed phase sink, as
// DaemonClaimBroker does, and keeps the page's descriptor for the reader.
class PageBroker final : public mlos::ClaimBroker {
 public:
  PageBroker(mlos::Topology t, mlos::CpuSet allowed) : topology_(std::move(t)), allowed_(std::move(allowed)) {}
  mlos::Result<mlos::Grant> acquire(const mlos::ClaimRequest& r) override {
    auto p = mlos::plan_placement(topology_, allowed_, {}, {}, r.placement);
    if (!p) return p.error();
    auto page = mlos::os::SharedPage::create("mlos-activity-test");
    if (!page) return page.error();
    auto sink = std::make_shared<mlos::PagePhaseSink>(std::move(*page), mlos::os::monotonic_ns());
    page_fd = sink->fd();
    mlos::Grant g{1, *p, ""};
    g.phase_sink = sink;
    return g;
  }
  mlos::Status release(uint64_t) override { return {}; }
  const mlos::Topology& topology() const override { return topology_; }
  mlos::CpuSet allowed_cpus() const override { return allowed_; }
  const char* engine() const override { return "test"; }

  int page_fd = -1;

 private:
  mlos::Topology topology_;
  mlos::CpuSet allowed_;
};

// Sets environment variables for the test and puts the old values back.
class ScopedEnv {
 public:
  void set(const char* name, const std::string& value) {
    const char* old = getenv(name);
    saved_.push_back({name, old ? std::optional<std::string>(old) : std::nullopt});
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
      if (it->second) {
        setenv(it->first.c_str(), it->second->c_str(), 1);
      } else {
        unsetenv(it->first.c_str());
      }
    }
  }

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

using Activity = mlos::PhaseSnapshot::Activity;

class JobActivityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(dir.path().empty());
    auto topo = mlos::os::shared_topology();
    ASSERT_TRUE(topo.ok()) << topo.error().describe();
    auto allowed = mlos::os::linux_kernel().affinity(getpid());
    ASSERT_TRUE(allowed.ok()) << allowed.error().describe();
    broker = std::make_shared<PageBroker>(*topo, *allowed);
    mlos::ClaimRequest r;
    r.placement.num_cpus = 1;
    auto grant = broker->acquire(r);
    ASSERT_TRUE(grant.ok()) << grant.error().describe();
    auto ro = mlos::os::SharedPage::map_readonly(broker->page_fd);
    ASSERT_TRUE(ro.ok()) << ro.error().describe();
    page.emplace(std::move(*ro));
    res = mlos::HandleRegistry::instance().add(std::make_shared<mlos::Job>(
        mlos::JobSpec{r.placement, 0, "activity"}, *grant, broker, mlos::os::linux_kernel()));
    ASSERT_NE(res, nullptr);
    env.set("MLOS_STORE", "file:" + dir.path() + "/store");
    env.set("MLOS_COLLECTIVE_HOST", "127.0.0.1");
    env.set("MLOS_COLLECTIVE_TIMEOUT_MS", "20000");
    std::filesystem::create_directory(dir.path() + "/store");
  }
  void TearDown() override {
    if (res != nullptr) {
      EXPECT_EQ(mlos_training_release_resources(res), MLOS_OK) << mlos_last_error_message();
    }
  }

  // What mlosd would read now.
  Activity activity() const {
    auto s = mlos::PhasePageReader(page->data()).read();
    EXPECT_TRUE(s.has_value());
    if (!s) return {};
    EXPECT_TRUE(s->activity.has_value());
    return s->activity.value_or(Activity{});
  }

  mlos_checkpoint_writer_t* open_writer(const std::string& sub, mlos_training_resources_t* resources) {
    const std::string path = dir.path() + "/" + sub;
    std::filesystem::create_directory(path);
    mlos_checkpoint_options_t o{};
    o.struct_size = sizeof o;
    o.resources = resources;
    o.flags = MLOS_CHECKPOINT_ALLOW_UNLOCKED_STAGING;  // RLIMIT_MEMLOCK is not this test's subject
    mlos_checkpoint_writer_t* w = nullptr;
    EXPECT_EQ(mlos_checkpoint_writer_open(path.c_str(), &o, &w), MLOS_OK) << mlos_last_error_message();
    return w;
  }

  mlos_test::TempDir dir{"mlos-activity"};
  ScopedEnv env;
  std::shared_ptr<PageBroker> broker;
  std::optional<mlos::os::SharedPage> page;
  mlos_training_resources_t* res = nullptr;
};

TEST_F(JobActivityTest, CollectivesCountWhatTheProfileTallies) {
  const auto before = activity();
  EXPECT_EQ(before.collective_calls, 0u);

  ASSERT_EQ(mlos_training_barrier(res, 0, 1), MLOS_OK) << mlos_last_error_message();
  std::vector<float> v(256, 1.0f);
  ASSERT_EQ(mlos_training_allreduce(res, v.data(), v.size(), MLOS_REDUCE_SUM), MLOS_OK) << mlos_last_error_message();
  int64_t n = 3;
  ASSERT_EQ(mlos_training_allreduce_typed(res, &n, 1, MLOS_DTYPE_INT64, MLOS_REDUCE_SUM), MLOS_OK);
  // Refused by the live group (rank 0 of 1): a call with its time, no bytes.
  EXPECT_EQ(mlos_training_barrier(res, 0, 2), MLOS_ERR_INVALID_ARGUMENT);

  const auto a = activity();
  EXPECT_EQ(a.collective_calls, 4u);
  EXPECT_EQ(a.collective_bytes, 256u * 4 + 8);
  EXPECT_GT(a.collective_ns, 0u);
  EXPECT_EQ(a.checkpoint_saves, 0u);

  // The same figures as the handle's own tally.
  mlos_training_phase_profile_t prof{};
  prof.struct_size = sizeof prof;
  ASSERT_EQ(mlos_training_get_phase_profile(res, &prof), MLOS_OK) << mlos_last_error_message();
  EXPECT_EQ(prof.collective_calls, a.collective_calls);
  EXPECT_EQ(prof.collective_bytes, a.collective_bytes);
  EXPECT_NEAR(prof.communication_seconds, static_cast<double>(a.collective_ns) / 1e9, 1e-6);
}

TEST_F(JobActivityTest, DurableCheckpointSavesCountWithTheirPayload) {
  mlos_checkpoint_writer_t* w = open_writer("ckpt", res);
  ASSERT_NE(w, nullptr);
  std::vector<char> small(4096, 'a'), big(100000, 'b');
  uint64_t seq = 0, ticket = 0;
  ASSERT_EQ(mlos_checkpoint_save(w, small.data(), small.size(), &seq), MLOS_OK) << mlos_last_error_message();
  auto a = activity();
  EXPECT_EQ(a.checkpoint_saves, 1u);
  EXPECT_EQ(a.checkpoint_bytes, small.size());
  EXPECT_GT(a.checkpoint_ns, 0u);

  ASSERT_EQ(mlos_checkpoint_save_async(w, big.data(), big.size(), &ticket), MLOS_OK) << mlos_last_error_message();
  ASSERT_EQ(mlos_checkpoint_wait(w, ticket, -1), MLOS_OK) << mlos_last_error_message();
  a = activity();
  EXPECT_EQ(a.checkpoint_saves, 2u);
  EXPECT_EQ(a.checkpoint_bytes, small.size() + big.size());

  // A writer opened without resources counts into no job.
  mlos_checkpoint_writer_t* plain = open_writer("plain", nullptr);
  ASSERT_NE(plain, nullptr);
  ASSERT_EQ(mlos_checkpoint_save(plain, small.data(), small.size(), &seq), MLOS_OK);
  EXPECT_EQ(mlos_checkpoint_writer_close(plain), MLOS_OK);
  EXPECT_EQ(activity().checkpoint_saves, 2u);

  // A save that never became durable (its directory is gone) counts nothing.
  mlos_checkpoint_writer_t* doomed = open_writer("doomed", res);
  ASSERT_NE(doomed, nullptr);
  std::filesystem::remove_all(dir.path() + "/doomed");
  EXPECT_NE(mlos_checkpoint_save(doomed, small.data(), small.size(), &seq), MLOS_OK);
  (void)mlos_checkpoint_writer_close(doomed);
  EXPECT_EQ(activity().checkpoint_saves, 2u);
  EXPECT_EQ(activity().collective_calls, 0u);

  EXPECT_EQ(mlos_checkpoint_writer_close(w), MLOS_OK) << mlos_last_error_message();
}

TEST_F(JobActivityTest, AsyncSaveOutlivingTheReleaseStillCounts) {
  // The writer holds the job, and so its sink, until it closes: a save that
  // completes after the handle was released writes into live memory (ASan
  // builds check that), and is counted.
  mlos_checkpoint_writer_t* w = open_writer("ckpt", res);
  ASSERT_NE(w, nullptr);
  std::vector<char> payload(1 << 20, 'c');
  uint64_t ticket = 0;
  ASSERT_EQ(mlos_checkpoint_save_async(w, payload.data(), payload.size(), &ticket), MLOS_OK)
      << mlos_last_error_message();
  EXPECT_EQ(mlos_training_release_resources(res), MLOS_OK) << mlos_last_error_message();
  res = nullptr;
  EXPECT_EQ(mlos_checkpoint_wait(w, ticket, -1), MLOS_OK) << mlos_last_error_message();
  EXPECT_EQ(mlos_checkpoint_writer_close(w), MLOS_OK) << mlos_last_error_message();
  const auto a = activity();
  EXPECT_EQ(a.checkpoint_saves, 1u);
  EXPECT_EQ(a.checkpoint_bytes, payload.size());
}

}  // namespace
