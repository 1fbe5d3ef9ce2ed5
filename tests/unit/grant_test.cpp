// SPDX-License-Identifier: Apache-2.0
// The "request" op as types, used by both the client and mlosd: what one
// side encodes, the other decodes unchanged; fields an older mlosd would
// refuse are left out when unused; bad input is refused naming the field.
#include "protocol/grant.h"

#include <gtest/gtest.h>

namespace mlos::protocol {
namespace {

using nlohmann::json;

GrantRequest full_request() {
  GrantRequest r;
  r.placement.num_cpus = 3;
  r.placement.memory_bytes = 1ull << 33;
  r.placement.numa_preference = 1;
  r.placement.exclusive = true;
  r.placement.single_node = true;
  r.placement.strict_membind = true;
  r.placement.gpus.count = 2;
  r.placement.gpus.uuids = {"GPU-a", "GPU-b"};
  r.placement.gpus.exclusive = false;
  r.priority = -3;
  r.label = "trainer";
  r.page_fd = 7;
  r.envelope = true;
  r.dry_run = true;
  r.allowed = *CpuSet::parse_list("0-3,8");
  r.policies = json{{"example", {{"threads", 1}}}};
  r.cuda_visible_devices = "0,1";
  r.gpu_share_file = "/run/user/1000/mlos/gpushare/x";
  return r;
}

TEST(GrantTest, ARequestDecodesAsItWasEncoded) {
  const GrantRequest sent = full_request();
  auto got = decode_grant_request(encode_grant_request(sent));
  ASSERT_TRUE(got.ok()) << got.error().describe();
  EXPECT_EQ(got->placement.num_cpus, 3);
  EXPECT_EQ(got->placement.memory_bytes, 1ull << 33);
  EXPECT_EQ(got->placement.numa_preference, 1);
  EXPECT_TRUE(got->placement.exclusive && got->placement.single_node && got->placement.strict_membind);
  EXPECT_EQ(got->placement.gpus.count, 2);
  EXPECT_EQ(got->placement.gpus.uuids, sent.placement.gpus.uuids);
  EXPECT_FALSE(got->placement.gpus.exclusive);
  EXPECT_EQ(got->priority, -3);
  EXPECT_EQ(got->label, "trainer");
  EXPECT_EQ(got->page_fd, 7);
  EXPECT_TRUE(got->envelope && got->dry_run);
  ASSERT_TRUE(got->allowed.has_value());
  EXPECT_EQ(got->allowed->to_list(), "0-3,8");
  EXPECT_EQ(got->policies, sent.policies);
  EXPECT_EQ(got->cuda_visible_devices, std::optional<std::string>("0,1"));
  EXPECT_EQ(got->gpu_share_file, sent.gpu_share_file);
}

TEST(GrantTest, UnusedFieldsAnOlderMlosdWouldRefuseAreLeftOut) {
  GrantRequest plain;
  plain.cuda_visible_devices = "0";  // without GPUs asked for: not sent
  const json args = encode_grant_request(plain);
  for (const char* absent : {"policies", "num_gpus", "gpu_uuids", "exclusive_gpus", "cuda_visible_devices",
                             "gpu_share_file", "page_fd", "dry_run", "allowed_cpus"}) {
    EXPECT_FALSE(args.contains(absent)) << absent;
  }
  auto got = decode_grant_request(args);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->page_fd, -1);
  EXPECT_FALSE(got->allowed.has_value());
  EXPECT_TRUE(got->placement.gpus.exclusive) << "exclusive GPUs unless said otherwise";
}

TEST(GrantTest, BadRequestsAreRefusedNamingTheField) {
  const json good = encode_grant_request(full_request());
  const std::vector<std::pair<json, std::string>> bad{
      {json{{"surprise", 1}}, "unknown field 'surprise'"},
      {json{{"num_cpus", 1.5}}, "num_cpus"},
      {json{{"exclusive", 1}}, "exclusive"},
      {json{{"priority", 99}}, "priority 99"},
      {json{{"label", std::string(129, 'x')}}, "label"},
      {json{{"page_fd", -2}}, "page_fd"},
      {json{{"num_gpus", -1}}, "num_gpus"},
      {json{{"gpu_share_file", "relative"}}, "gpu_share_file"},
      {json{{"allowed_cpus", ""}}, "allowed_cpus"},
      {json{{"policies", {{"example", 1}}}}, "config of policy example"},
      {json{{"memory_bytes", -1}}, "memory_bytes"},
  };
  for (const auto& [change, names] : bad) {
    json args = good;
    args.update(change);
    auto got = decode_grant_request(args);
    ASSERT_FALSE(got.ok()) << change.dump();
    EXPECT_EQ(got.error().code, MLOS_ERR_INVALID_ARGUMENT);
    EXPECT_NE(got.error().message.find(names), std::string::npos) << got.error().message;
  }
  EXPECT_FALSE(decode_grant_request(json::array()).ok());
}

TEST(GrantTest, AGrantAndAPlanDecodeAsTheyWereEncoded) {
  GrantReply sent;
  sent.placement.cpus = {2, 3};
  sent.placement.cpu_set = *CpuSet::parse_list("2-3");
  sent.placement.nodes = {0};
  sent.placement.primary_node = 0;
  sent.placement.memory_policy = MLOS_MEMPOLICY_BIND;
  sent.placement.physical_cores = 2;
  sent.placement.gpus = {"GPU-a"};
  sent.placement.gpu_note = "GPU-a on node 0";
  sent.job = 42;
  sent.cgroup = "/mlos/job-42";
  sent.policies = {"phase-weights"};
  sent.notes = {"GPU-a on node 0", "nested in job 7"};
  const json wire = encode_grant_reply(sent);
  EXPECT_EQ(wire["mems"], "0");
  auto got = decode_grant_reply(wire);
  ASSERT_TRUE(got.ok()) << got.error().describe();
  EXPECT_EQ(got->placement.cpus, sent.placement.cpus);
  EXPECT_EQ(got->placement.cpu_set.to_list(), "2-3");
  EXPECT_EQ(got->placement.memory_policy, MLOS_MEMPOLICY_BIND);
  EXPECT_EQ(got->placement.gpus, sent.placement.gpus);
  EXPECT_EQ(got->job, 42u);
  EXPECT_EQ(got->cgroup, sent.cgroup);
  EXPECT_EQ(got->policies, sent.policies);
  EXPECT_EQ(got->notes, sent.notes);
  EXPECT_FALSE(got->dry_run);

  GrantReply plan;
  plan.placement = sent.placement;
  plan.dry_run = true;
  plan.nested_in = 7;
  const json planned = encode_grant_reply(plan);
  EXPECT_FALSE(planned.contains("job")) << "a plan grants nothing";
  got = decode_grant_reply(planned);
  ASSERT_TRUE(got.ok());
  EXPECT_TRUE(got->dry_run);
  EXPECT_EQ(got->nested_in, std::optional<uint64_t>(7));
}

TEST(GrantTest, AReplyWithoutItsPlacementIsNotUnderstood) {
  auto got = decode_grant_reply(json{{"job", 1}});
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error().code, MLOS_ERR_VERSION_MISMATCH);
  EXPECT_NE(got.error().message.find("not understood"), std::string::npos);
}

}  // namespace
}  // namespace mlos::protocol
