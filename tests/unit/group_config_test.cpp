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
  EXPECT_NE(refused({{"MLOS_STORE", "http://h:1"}}, 0, 2).find("none of"), std::string::npos);
  EXPECT_NE(refused({{"MLOS_STORE", "redis://h:99999"}}, 0, 2).find("port"), std::string::npos);
  EXPECT_NE(refused({{"MLOS_STORE", "file:/s"}, {"MLOS_COLLECTIVE_TIMEOUT_MS", "0"}}, 0, 2).find("TIMEOUT"),
            std::string::npos);
  EXPECT_NE(refused({{"MLOS_STORE", "file:/s"}, {"MLOS_GROUP", "a/b"}}, 0, 2).find("MLOS_GROUP"), std::string::npos);
}

TEST(GroupConfig, TcpStoreAddressesWithIpv6InBrackets) {
  Env env{{{"MLOS_STORE", "tcp://store-host:29500"}}};
  auto c = group_config_from(1, 2, env.get());
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->store, GroupConfig::StoreKind::kTcp);
  EXPECT_EQ(c->tcp_host, "store-host");
  EXPECT_EQ(c->tcp_port, 29500);
  EXPECT_FALSE(c->tcp_may_serve);  // only rank 0 serves
  env.vars["MLOS_STORE"] = "tcp://[fe80::1]:7";
  c = group_config_from(0, 2, env.get());
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->tcp_host, "fe80::1");
  EXPECT_EQ(c->tcp_port, 7);
  EXPECT_TRUE(c->tcp_may_serve);
}

TEST(GroupConfig, MasterAddrAndPortMeanATcpStoreWhenMlosStoreIsUnset) {
  Env env{{{"MASTER_ADDR", "10.1.2.3"}, {"MASTER_PORT", "29501"}, {"RANK", "0"}, {"WORLD_SIZE", "4"}}};
  auto c = group_config_from(-1, -1, env.get());
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->store, GroupConfig::StoreKind::kTcp);
  EXPECT_EQ(c->tcp_host, "10.1.2.3");
  EXPECT_EQ(c->tcp_port, 29501);
  EXPECT_TRUE(c->tcp_may_serve);
  EXPECT_EQ(c->prefix, "mlos");

  env.vars["MLOS_STORE"] = "file:/shared/run";  // MLOS_STORE wins
  EXPECT_EQ(group_config_from(-1, -1, env.get())->store, GroupConfig::StoreKind::kFile);
  env.vars["MLOS_STORE"] = "";  // empty is unset
  EXPECT_EQ(group_config_from(-1, -1, env.get())->store, GroupConfig::StoreKind::kTcp);
}

TEST(GroupConfig, UnderTorchrunsAgentStoreRankZeroDoesNotServeAndRestartsGetTheirOwnKeys) {
  Env env{{{"MASTER_ADDR", "node0"},
           {"MASTER_PORT", "29500"},
           {"TORCHELASTIC_USE_AGENT_STORE", "True"},
           {"TORCHELASTIC_RESTART_COUNT", "2"}}};
  auto c = group_config_from(0, 2, env.get());
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_FALSE(c->tcp_may_serve);
  EXPECT_EQ(c->prefix, "mlos.restart2");
  for (const char* yes : {"true", "1", "TRUE"}) {
    env.vars["TORCHELASTIC_USE_AGENT_STORE"] = yes;
    EXPECT_FALSE(group_config_from(0, 2, env.get())->tcp_may_serve) << yes;
  }
  env.vars["TORCHELASTIC_USE_AGENT_STORE"] = "False";
  env.vars["TORCHELASTIC_RESTART_COUNT"] = "0";
  c = group_config_from(0, 2, env.get());
  EXPECT_TRUE(c->tcp_may_serve);
  EXPECT_EQ(c->prefix, "mlos");
  env.vars["TORCHELASTIC_RESTART_COUNT"] = "3";
  env.vars["MLOS_GROUP"] = "job7";  // a group the caller named is kept as it is
  EXPECT_EQ(group_config_from(0, 2, env.get())->prefix, "job7");
}

TEST(GroupConfig, AStoreSecretGoesToEveryRankOfATcpStoreAndIsRefusedWhereTheAgentServesIt) {
  const std::string secret = "f3a9c1d2e4b5a6978812";
  Env env{{{"MLOS_STORE", "tcp://127.0.0.1:29500"}, {"MLOS_STORE_SECRET", secret}}};
  for (int rank : {0, 1}) {
    auto c = group_config_from(rank, 2, env.get());
    ASSERT_TRUE(c) << c.error().message;
    EXPECT_EQ(c->tcp_secret, secret);
  }
  env.vars["MLOS_STORE_SECRET"] = "";  // empty is unset
  EXPECT_EQ(group_config_from(0, 2, env.get())->tcp_secret, "");
  // Too short, too long, with a space: refused by name, with what is wrong.
  for (const std::string& bad : {std::string("short"), std::string(300, 'x'), std::string("with a space inside it")}) {
    env.vars["MLOS_STORE_SECRET"] = bad;
    auto c = group_config_from(0, 2, env.get());
    ASSERT_FALSE(c) << bad;
    EXPECT_EQ(c.error().code, MLOS_ERR_INVALID_ARGUMENT);
    EXPECT_NE(c.error().message.find("MLOS_STORE_SECRET"), std::string::npos) << c.error().message;
  }
  // Another kind of store does not use it; torchrun's agent serving this
  // one (torch's server, which takes none) cannot honour it: refused.
  env.vars["MLOS_STORE_SECRET"] = secret;
  env.vars["MLOS_STORE"] = "file:/shared/run";
  auto file = group_config_from(0, 2, env.get());
  ASSERT_TRUE(file) << file.error().message;
  EXPECT_EQ(file->tcp_secret, "");
  env.vars.erase("MLOS_STORE");
  env.vars["MASTER_ADDR"] = "node0";
  env.vars["MASTER_PORT"] = "29500";
  env.vars["TORCHELASTIC_USE_AGENT_STORE"] = "True";
  for (int rank : {0, 1}) {
    auto agent = group_config_from(rank, 2, env.get());
    ASSERT_FALSE(agent);
    EXPECT_NE(agent.error().message.find("torchrun's agent"), std::string::npos) << agent.error().message;
  }
}

TEST(GroupConfig, TcpStoreRefusalsNameTheVariable) {
  auto refused = [](std::map<std::string, std::string> vars) {
    Env env{std::move(vars)};
    auto c = group_config_from(0, 2, env.get());
    EXPECT_FALSE(c);
    if (c) return std::string();
    EXPECT_EQ(c.error().code, MLOS_ERR_INVALID_ARGUMENT);
    return c.error().message;
  };
  auto says = [](const std::string& message, const char* what) {
    return message.find(what) != std::string::npos ? ::testing::AssertionSuccess()
                                                   : ::testing::AssertionFailure() << message;
  };
  EXPECT_TRUE(says(refused({{"MLOS_STORE", "tcp://h"}}), "no port"));
  EXPECT_TRUE(says(refused({{"MLOS_STORE", "tcp://h:0"}}), "bad port"));
  EXPECT_TRUE(says(refused({{"MLOS_STORE", "tcp://h:65536"}}), "bad port"));
  EXPECT_TRUE(says(refused({{"MLOS_STORE", "tcp://h:29500/x"}}), "bad port"));
  EXPECT_TRUE(says(refused({{"MLOS_STORE", "tcp://:29500"}}), "no host"));
  EXPECT_TRUE(says(refused({{"MLOS_STORE", "tcp://::1:29500"}}), "brackets"));
  EXPECT_TRUE(says(refused({{"MLOS_STORE", "tcp://[::1]29500"}}), "no port"));
  EXPECT_TRUE(says(refused({{"MLOS_STORE", "tcp://[::1:29500"}}), "']'"));
  EXPECT_TRUE(says(refused({{"MASTER_ADDR", "h"}, {"MASTER_PORT", "http"}}), "MASTER_PORT=\"http\""));
  EXPECT_TRUE(says(refused({{"MASTER_ADDR", "h"}, {"MASTER_PORT", "70000"}}), "MASTER_PORT"));
  EXPECT_TRUE(says(refused({{"MASTER_ADDR", "h"}}), "MASTER_PORT is not"));
  EXPECT_TRUE(says(refused({{"MASTER_PORT", "29500"}}), "MASTER_ADDR is not"));
  EXPECT_TRUE(says(refused({}), "MASTER_ADDR"));  // the no-store message names the fallback too
  EXPECT_TRUE(says(refused({{"MASTER_ADDR", "h"}, {"MASTER_PORT", "1"}, {"TORCHELASTIC_RESTART_COUNT", "-1"}}),
                   "TORCHELASTIC_RESTART_COUNT"));
}

}  // namespace
}  // namespace mlos::collectives
