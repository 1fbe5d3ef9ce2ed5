// SPDX-License-Identifier: Apache-2.0
// Rendezvous configuration from the call and the launcher's environment:
// what is taken from where, and every refusal naming its cause.
#include "collectives/group_config.h"

#include <gloo/rendezvous/hash_store.h>
#include <gtest/gtest.h>

#include <map>
#include <string>

namespace mlos::collectives {
namespace {

struct Env {
  std::map<std::string, std::string> vars;
  std::function<const char*(const char*)> get() const {
    return [this](const char* k) -> const char* {
      auto it = vars.find(k);
      return it == vars.end() ? nullptr : it->second.c_str();
    };
  }
};

TEST(GroupConfig, TheCallsValuesWinOverTheEnvironment) {
  Env env{{{"RANK", "3"}, {"WORLD_SIZE", "8"}, {"MLOS_STORE", "file:/shared/run1"}}};
  auto c = group_config_from(1, 2, env.get());
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->rank, 1);
  EXPECT_EQ(c->world_size, 2);
  auto e = group_config_from(-1, -1, env.get());
  ASSERT_TRUE(e);
  EXPECT_EQ(e->rank, 3);
  EXPECT_EQ(e->world_size, 8);
  EXPECT_EQ(e->store, GroupConfig::StoreKind::kFile);
  EXPECT_EQ(e->store_path, "/shared/run1");
  EXPECT_EQ(e->timeout.count(), 30000);
  EXPECT_EQ(e->prefix, "mlos");
}

TEST(GroupConfig, ACallersStoreIsUsedAndMlosStoreIsThenNotRead) {
  auto store = std::make_shared<gloo::rendezvous::HashStore>();
  Env env{{{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MLOS_STORE", "nonsense"}}};
  auto c = group_config_from(-1, -1, env.get(), store);
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->store, GroupConfig::StoreKind::kCaller);
  EXPECT_EQ(c->caller_store, store);
  EXPECT_FALSE(group_config_from(-1, -1, env.get()));  // without it, the bad MLOS_STORE is refused
}

TEST(GroupConfig, RedisStoreTimeoutPrefixAndAddress) {
  Env env{{{"MLOS_STORE", "redis://10.0.0.5:7000"},
           {"MLOS_COLLECTIVE_TIMEOUT_MS", "2500"},
           {"MLOS_GROUP", "job42"},
           {"MLOS_COLLECTIVE_IFACE", "eth1"}}};
  auto c = group_config_from(0, 2, env.get());
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->store, GroupConfig::StoreKind::kRedis);
  EXPECT_EQ(c->redis_host, "10.0.0.5");
  EXPECT_EQ(c->redis_port, 7000);
  EXPECT_EQ(c->timeout.count(), 2500);
  EXPECT_EQ(c->prefix, "job42");
  EXPECT_EQ(c->iface, "eth1");
  env.vars["MLOS_STORE"] = "redis://redis-host";
  EXPECT_EQ(group_config_from(0, 2, env.get())->redis_port, 6379);
}

TEST(GroupConfig, RefusalsNameTheirCause) {
  auto refused = [](std::map<std::string, std::string> vars, int rank, int world) {
    Env env{std::move(vars)};
    auto c = group_config_from(rank, world, env.get());
    EXPECT_FALSE(c);
    if (c) return std::string();
    EXPECT_EQ(c.error().code, MLOS_ERR_INVALID_ARGUMENT);
    return c.error().message;
  };
  const std::map<std::string, std::string> store{{"MLOS_STORE", "file:/s"}};
  EXPECT_NE(refused({}, 0, 2).find("MLOS_STORE"), std::string::npos);
  EXPECT_NE(refused(store, 2, 2).find("rank 2"), std::string::npos);
  EXPECT_NE(refused(store, -1, 2).find("RANK"), std::string::npos);
  EXPECT_NE(refused({{"MLOS_STORE", "file:/s"}, {"RANK", "x"}}, -1, 2).find("RANK=\"x\""), std::string::npos);
  EXPECT_NE(refused({{"MLOS_STORE", "file:relative"}}, 0, 2).find("absolute"), std::string::npos);
  EXPECT_NE(refused({{"MLOS_STORE", "tcp://h:1"}}, 0, 2).find("neither"), std::string::npos);
  EXPECT_NE(refused({{"MLOS_STORE", "redis://h:99999"}}, 0, 2).find("port"), std::string::npos);
  EXPECT_NE(refused({{"MLOS_STORE", "file:/s"}, {"MLOS_COLLECTIVE_TIMEOUT_MS", "0"}}, 0, 2).find("TIMEOUT"),
            std::string::npos);
  EXPECT_NE(refused({{"MLOS_STORE", "file:/s"}, {"MLOS_GROUP", "a/b"}}, 0, 2).find("MLOS_GROUP"), std::string::npos);
}

}  // namespace
}  // namespace mlos::collectives
