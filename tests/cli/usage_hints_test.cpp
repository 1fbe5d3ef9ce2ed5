// SPDX-License-Identifier: Apache-2.0
// "Did you mean" and the `--` hint (tools/mlos/did_you_mean.h,
// usage_hints.h), over a CLI11 app shaped like mlos's.
#include "usage_hints.h"

#include <gtest/gtest.h>

#include "did_you_mean.h"

namespace mlos::cli {
namespace {

TEST(EditDistanceTest, CountsEditsAndSwapsIgnoringCase) {
  EXPECT_EQ(edit_distance("status", "status"), 0u);
  EXPECT_EQ(edit_distance("Run", "run"), 0u);
  EXPECT_EQ(edit_distance("stauts", "status"), 1u);  // one swap
  EXPECT_EQ(edit_distance("--cpu", "--cpus"), 1u);
  EXPECT_EQ(edit_distance("top", "topo"), 1u);
  EXPECT_EQ(edit_distance("", "abc"), 3u);
}

TEST(ClosestMatchesTest, OnlyTyposCloseEnoughAreOffered) {
  const std::vector<std::string> subs = {"topo", "status", "top", "daemon", "run", "policy"};
  EXPECT_EQ(closest_matches("stauts", subs), (std::vector<std::string>{"status"}));
  EXPECT_EQ(closest_matches("top0", subs), (std::vector<std::string>{"topo", "top"}));
  EXPECT_EQ(closest_matches("nosuchcmd", subs), std::vector<std::string>{});
  EXPECT_EQ(closest_matches("rn", subs), (std::vector<std::string>{"run"}));
  EXPECT_EQ(closest_matches("xy", subs), std::vector<std::string>{});  // nothing within 1 edit
  EXPECT_EQ(closest_matches("--exclusiv", {"--exclusive", "--explain"}), (std::vector<std::string>{"--exclusive"}));
  EXPECT_EQ(did_you_mean({"a", "b"}), "did you mean \"a\" or \"b\"?");
  EXPECT_EQ(did_you_mean({}), "");
}

class UsageProblemTest : public ::testing::Test {
 protected:
  UsageProblemTest() {
    auto* run = app.add_subcommand("run", "");
    run->add_option("--cpus", cpus);
    run->add_flag("--exclusive", flag);
    run->add_option("command", command);
    auto* top = app.add_subcommand("top", "");
    top->add_option("-d,--interval", interval);
    auto* policy = app.add_subcommand("policy", "");
    policy->add_subcommand("list", "");
    policy->add_subcommand("info", "")->add_option("name", name);
    run_cmd = run;
  }
  std::optional<UsageProblem> check(std::vector<std::string> args) {
    return find_usage_problem(app, args, run_cmd);
  }
  CLI::App app{"test", "mlos"};
  CLI::App* run_cmd = nullptr;
  int cpus = 0;
  bool flag = false;
  double interval = 0;
  std::string name;
  std::vector<std::string> command;
};

TEST_F(UsageProblemTest, KnownWordsAreNoProblem) {
  EXPECT_FALSE(check({"run", "--cpus", "2", "--exclusive"}));
  EXPECT_FALSE(check({"run", "--cpus=2", "python", "x.py"}));
  EXPECT_FALSE(check({"top", "-d", "-1"}));  // a value that looks like an option
  EXPECT_FALSE(check({"top", "-d0.5", "--help"}));
  EXPECT_FALSE(check({"policy", "info", "nosuchpolicy"}));  // a positional, not a subcommand
}

TEST_F(UsageProblemTest, UnknownSubcommandsAreNamedWithTheClosestAndTheList) {
  auto p = check({"stauts"});
  ASSERT_TRUE(p);
  EXPECT_EQ(p->kind, UsageProblem::Kind::kSubcommand);
  EXPECT_EQ(p->message, "mlos: unknown subcommand \"stauts\"; the subcommands are run, top, policy (see mlos --help)");
  p = check({"rum", "--cpus", "1"});
  ASSERT_TRUE(p);
  EXPECT_EQ(p->message,
            "mlos: unknown subcommand \"rum\" (did you mean \"run\"?); the subcommands are run, top, policy "
            "(see mlos --help)");
  p = check({"policy", "lst"});
  ASSERT_TRUE(p);
  EXPECT_EQ(p->path, "mlos policy");
  EXPECT_NE(p->message.find("did you mean \"list\"?"), std::string::npos) << p->message;
}

TEST_F(UsageProblemTest, UnknownOptionsGetTheClosestOption) {
  auto p = check({"run", "--cpu", "2", "true"});
  ASSERT_TRUE(p);
  EXPECT_EQ(p->kind, UsageProblem::Kind::kOption);
  EXPECT_EQ(p->path, "mlos run");
  EXPECT_EQ(p->message, "mlos run: unknown option \"--cpu\"; did you mean \"--cpus\"?");
  p = check({"top", "--intreval=2"});
  ASSERT_TRUE(p);
  EXPECT_EQ(p->message, "mlos top: unknown option \"--intreval\"; did you mean \"--interval\"?");
  p = check({"run", "--bogus-flag"});
  ASSERT_TRUE(p);
  EXPECT_EQ(p->message, "mlos run: unknown option \"--bogus-flag\" (see mlos run --help)");
}

TEST_F(UsageProblemTest, CommandOptionsWithoutDashesGetTheHint) {
  auto p = check({"run", "--cpus", "1", "python", "train.py", "--epochs", "3"});
  ASSERT_TRUE(p);
  EXPECT_EQ(p->message,
            "mlos run: unknown option \"--epochs\" after CMD \"python\": options after CMD belong to mlos; put `--` "
            "before the command (mlos run [OPTIONS] -- CMD [ARGS...])");
  // A CMD named like a subcommand is still CMD.
  p = check({"run", "top", "-x"});
  ASSERT_TRUE(p);
  EXPECT_NE(p->message.find("after CMD \"top\""), std::string::npos) << p->message;
}

}  // namespace
}  // namespace mlos::cli
