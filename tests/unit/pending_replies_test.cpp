// SPDX-License-Identifier: Apache-2.0
// Replies that wait for policy verdicts (daemon/pending_replies.h): a reply
// finishes once every verdict it asked for is in, with the first refusal,
// and never before every ask was made.
#include "daemon/pending_replies.h"

#include <gtest/gtest.h>

namespace mlos::daemon {
namespace {

using nlohmann::json;

TEST(PendingRepliesTest, VerdictsThatComeAtOnceFinishTheReplyAtOnce) {
  PendingReplies replies;
  int finished = 0;
  auto reply = replies.after({[](PendingReplies::Verdict v) { v(Status::Ok()); }},
                             [&](const std::optional<Error>& refused) -> Result<json> {
                               ++finished;
                               EXPECT_FALSE(refused);
                               return json{{"done", true}};
                             });
  ASSERT_TRUE(reply.ok());
  EXPECT_EQ((*reply)["done"], true);
  EXPECT_EQ(finished, 1);
  EXPECT_EQ(PendingReplies::token_of(*reply), std::nullopt);
  EXPECT_EQ(replies.waiting(), 0u);
}

TEST(PendingRepliesTest, ALaterVerdictFinishesTheReplyWithTheFirstRefusal) {
  PendingReplies replies;
  std::vector<PendingReplies::Verdict> held;
  auto hold = [&](PendingReplies::Verdict v) { held.push_back(std::move(v)); };
  auto reply = replies.after({hold, hold, hold}, [](const std::optional<Error>& refused) -> Result<json> {
    if (refused) return *refused;
    return json::object();
  });
  ASSERT_TRUE(reply.ok());
  const auto token = PendingReplies::token_of(*reply);
  ASSERT_TRUE(token.has_value());
  ASSERT_EQ(held.size(), 3u);
  held[0](Status::Ok());
  held[1](make_error(MLOS_ERR_NOT_FOUND, "no policy x"));
  EXPECT_TRUE(replies.take_finished().empty()) << "one verdict still to come";
  held[2](make_error(MLOS_ERR_POLICY_FAILED, "later refusal"));
  auto done = replies.take_finished();
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].token, *token);
  ASSERT_FALSE(done[0].reply.ok());
  EXPECT_EQ(done[0].reply.error().code, MLOS_ERR_NOT_FOUND);
  EXPECT_EQ(replies.waiting(), 0u);
  held[2](Status::Ok());  // a stray verdict after the end changes nothing
  EXPECT_TRUE(replies.take_finished().empty());
}

TEST(PendingRepliesTest, AReplyWithNoAsksFinishesAtOnceAndTokensAreOnlyPendingOnes) {
  PendingReplies replies;
  auto reply = replies.after({}, [](const std::optional<Error>&) -> Result<json> { return json{{"x", 1}}; });
  ASSERT_TRUE(reply.ok());
  EXPECT_EQ((*reply)["x"], 1);
  EXPECT_EQ(PendingReplies::token_of(json{{"pending", -1}}), std::nullopt);
  EXPECT_EQ(PendingReplies::token_of(json{{"pending", "3"}}), std::nullopt);
  EXPECT_EQ(PendingReplies::token_of(json{{"pending", uint64_t{3}}}), std::optional<uint64_t>(3));  // as after() writes it
}

}  // namespace
}  // namespace mlos::daemon
