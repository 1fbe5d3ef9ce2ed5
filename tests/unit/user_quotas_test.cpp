// SPDX-License-Identifier: Apache-2.0
// The per-uid quota rules and their config parsing (pure logic).
#include "daemon/user_quotas.h"

#include <gtest/gtest.h>

#include "daemon/daemon_config.h"

namespace mlos::daemon {
namespace {

using nlohmann::json;

TEST(UserQuotasTest, ConfigKeysAreParsedStrictly) {
  UserQuotas q;
  ASSERT_TRUE(q.merge({{"jobs_per_uid", 10}, {"exclusive_cpus_per_uid", 3}, {"memory_bytes_per_uid", 1 << 30}}).ok());
  EXPECT_EQ(q.jobs_per_uid, 10);
  EXPECT_EQ(q.exclusive_cpu_bound(64), 3);
  EXPECT_EQ(q.memory_bytes_per_uid, uint64_t{1} << 30);
  for (const json& bad : {json{{"jobs_per_uid", 0}}, json{{"jobs_per_uid", "9"}}, json{{"nosuch", 1}},
                          json{{"memory_bytes_per_uid", -1}}, json{{"exclusive_cpus_per_uid", -2}}, json(5),
                          // 2^64-1 is -1 once read as int64: it must not pass as "the default"
                          json{{"exclusive_cpus_per_uid", UINT64_MAX}}, json{{"jobs_per_uid", 2.5}}}) {
    UserQuotas before = q;
    Status s = q.merge(bad);
    ASSERT_FALSE(s.ok()) << bad.dump();
    EXPECT_EQ(s.error().code, MLOS_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(q.jobs_per_uid, before.jobs_per_uid);  // nothing half-applied
  }
}

TEST(UserQuotasTest, DaemonConfigTakesQuotasAndShowsThem) {
  DaemonConfig c;
  ASSERT_TRUE(c.merge({{"quotas", {{"connections_per_uid", 5}}}, {"client_idle_timeout_ms", 1500}}).ok());
  EXPECT_EQ(c.quotas.connections_per_uid, 5);
  EXPECT_EQ(c.to_json()["quotas"]["connections_per_uid"], 5);
  EXPECT_EQ(c.to_json()["client_idle_timeout_ms"], 1500);
  EXPECT_FALSE(c.merge({{"quotas", {{"connections_per_uid", 0}}}}).ok());
}

TEST(UserQuotasTest, DefaultExclusiveBoundLeavesOneCpu) {
  UserQuotas q;
  EXPECT_EQ(q.exclusive_cpu_bound(2), 1);
  EXPECT_EQ(q.exclusive_cpu_bound(1), 1);
  EXPECT_EQ(q.exclusive_cpu_bound(128), 127);
}

TEST(UserQuotasTest, ConnectionsKeepAShareForRoot) {
  UserQuotas q;
  q.root_reserved_connections = 2;
  q.connections_per_uid = 3;
  UserHoldings none, three;
  three.connections = 3;
  EXPECT_TRUE(check_connection_quota(q, 1000, none, 7, 10).ok());
  EXPECT_EQ(check_connection_quota(q, 1000, none, 8, 10).error().code, MLOS_ERR_DAEMON_UNAVAILABLE);
  EXPECT_TRUE(check_connection_quota(q, 0, none, 9, 10).ok());
  EXPECT_EQ(check_connection_quota(q, 0, none, 10, 10).error().code, MLOS_ERR_DAEMON_UNAVAILABLE);
  EXPECT_EQ(check_connection_quota(q, 1000, three, 3, 10).error().code, MLOS_ERR_QUOTA);
  EXPECT_TRUE(check_connection_quota(q, 0, three, 3, 10).ok());
}

TEST(UserQuotasTest, MemoryBoundDoesNotOverflow) {
  UserQuotas q;
  q.memory_bytes_per_uid = 100;
  UserHoldings held;
  held.memory_bytes = 60;
  EXPECT_TRUE(check_job_quota(q, 1000, held, JobAsk{0, 40, 0, 8, 0}).ok());
  EXPECT_EQ(check_job_quota(q, 1000, held, JobAsk{0, 41, 0, 8, 0}).error().code, MLOS_ERR_QUOTA);
  EXPECT_EQ(check_job_quota(q, 1000, held, JobAsk{0, UINT64_MAX, 0, 8, 0}).error().code, MLOS_ERR_QUOTA);
  // A uid already past the bound (a config reload lowered it) may still
  // take jobs that ask for no memory.
  held.memory_bytes = 200;
  EXPECT_TRUE(check_job_quota(q, 1000, held, JobAsk{1, 0, 0, 8, 0}).ok());
}

TEST(UserQuotasTest, ExclusiveGpusAreBoundedLikeCpus) {
  UserQuotas q;
  EXPECT_EQ(q.exclusive_gpu_bound(2), 1);
  EXPECT_EQ(q.exclusive_gpu_bound(1), 1);
  EXPECT_EQ(q.exclusive_gpu_bound(8), 7);
  UserHoldings held;
  held.exclusive_gpus = 1;
  auto over = check_job_quota(q, 1000, held, JobAsk{0, 0, 1, 8, 2});
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.error().code, MLOS_ERR_QUOTA);
  EXPECT_NE(over.error().message.find("exclusive_gpus_per_uid"), std::string::npos) << over.error().message;
  EXPECT_TRUE(check_job_quota(q, 0, held, JobAsk{0, 0, 2, 8, 2}).ok()) << "root is exempt";
  ASSERT_TRUE(q.merge({{"exclusive_gpus_per_uid", 2}}).ok());
  EXPECT_TRUE(check_job_quota(q, 1000, held, JobAsk{0, 0, 1, 8, 2}).ok());
  EXPECT_FALSE(q.merge({{"exclusive_gpus_per_uid", -2}}).ok());
}

}  // namespace
}  // namespace mlos::daemon
