// SPDX-License-Identifier: Apache-2.0
// Node-wide confinement (daemon/confinement) on an in-memory cgroup2 tree
// that enforces the kernel's rules, with /proc facts faked: which processes
// move to <base>/shared, which are left alone, which cgroups are narrowed
// and restored, and what a restarted daemon does with what it finds.
#include "daemon/confinement.h"

#include <stdlib.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "core/confinement_plan.h"
#include "fakes/fake_cgroup_v2_fs.h"

namespace mlos::daemon {
namespace {

namespace fs = std::filesystem;
using mlos_test::FakeCgroupV2Fs;

CpuSet cpus(const char* list) { return *CpuSet::parse_list(list); }

TEST(ConfinementPlanTest, ActiveOnlyWhileACpuStaysOutsideExclusiveJobs) {
  EXPECT_FALSE(plan_confinement(cpus("0-3"), CpuSet{}).active);
  const ConfinementPlan p = plan_confinement(cpus("0-3"), cpus("0-1"));
  EXPECT_TRUE(p.active);
  EXPECT_EQ(p.pool, cpus("2-3"));
  const ConfinementPlan all = plan_confinement(cpus("0-3"), cpus("0-3"));
  EXPECT_FALSE(all.active) << "never starve the system";
  EXPECT_NE(all.reason.find("every CPU"), std::string::npos) << all.reason;
}

class ConfinementTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "mlos-confinement-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    // The machine: unmanaged processes 100 (a shell), 101 (pinned to CPU 0
    // by root), 102 (pinned there by uid 1000), kernel thread 2, all in the
    // root; system.slice with
    // process 200; mlosd's own base.
    ASSERT_TRUE(tree_->make_dir("system.slice"));
    ASSERT_TRUE(tree_->make_dir("mlos"));
    tree_->set_processes("", {2, 100, 101, 102});
    tree_->set_processes("system.slice", {200});
    tree_->set_root_cpus("0-3");
    facts_[2] = ProcessFacts{true, cpus("0-3"), "kthreadd"};
    facts_[100] = ProcessFacts{false, cpus("0-3"), "bash"};
    facts_[101] = ProcessFacts{false, cpus("0"), "pinned"};  // root's: left alone
    facts_[102] = ProcessFacts{false, cpus("0"), "users-pinned", 1000};
    facts_[200] = ProcessFacts{false, cpus("0-3"), "sshd"};
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::unique_ptr<Confinement> make(const std::string& mode = "node", std::vector<std::string> list = {}) {
    ConfinementConfig c;
    c.mode = mode;
    c.cgroups = std::move(list);
    c.base = "mlos";
    c.v2 = true;
    return std::make_unique<Confinement>(c, tree_, dir_.string(), [this](pid_t pid) -> std::optional<ProcessFacts> {
      auto it = facts_.find(pid);
      if (it == facts_.end()) return std::nullopt;
      return it->second;
    });
  }

  fs::path dir_;
  std::shared_ptr<FakeCgroupV2Fs> tree_ =
      std::make_shared<FakeCgroupV2Fs>(std::vector<std::string>{"cpuset", "cpu", "io", "memory"});
  std::map<pid_t, ProcessFacts> facts_;
};

TEST_F(ConfinementTest, NodeModeMovesUnmanagedProcessesAndNarrowsOtherCgroups) {
  auto c = make();
  c->update(cpus("0-3"), cpus("0-1"));
  EXPECT_TRUE(c->active());
  EXPECT_EQ(tree_->file("mlos/shared/cpuset.cpus"), "2-3");
  EXPECT_EQ(tree_->pid_location(100), "mlos/shared");
  EXPECT_EQ(tree_->pid_location(2), "") << "kernel threads stay";
  EXPECT_EQ(tree_->pid_location(101), "") << "a process that can only run on exclusive CPUs is left alone";
  EXPECT_EQ(tree_->file("system.slice/cpuset.cpus"), "2-3");
  const auto st = c->status();
  EXPECT_EQ(st["pool"], "2-3");
  ASSERT_EQ(st["left_alone"].size(), 1u);
  EXPECT_EQ(st["left_alone"][0]["pid"], 101);
  EXPECT_EQ(st["left_alone"][0]["comm"], "pinned");
  // Another user's process pinned to the exclusive CPUs first does not
  // keep them (issue 47, finding 12): moved, and reported.
  EXPECT_EQ(tree_->pid_location(102), "mlos/shared");
  ASSERT_EQ(st["affinity_overridden"].size(), 1u) << st.dump();
  EXPECT_EQ(st["affinity_overridden"][0]["pid"], 102);
  EXPECT_EQ(st["affinity_overridden"][0]["uid"], 1000);
  // A process that appears in the root later is moved at the next sweep.
  tree_->set_processes("", {2, 101, 300});
  facts_[300] = ProcessFacts{false, cpus("0-3"), "new"};
  c->sweep();
  EXPECT_EQ(tree_->pid_location(300), "mlos/shared");
}

TEST_F(ConfinementTest, JobOwnersLeftInTheRootAreNeverMoved) {
  auto c = make();
  const auto owner = [](pid_t pid) { return pid == 100; };  // e.g. a claim adopted from the ledger
  c->update(cpus("0-3"), cpus("0-1"), owner);
  EXPECT_EQ(tree_->pid_location(100), "");
  tree_->set_processes("", {2, 100, 101, 500});
  facts_[500] = ProcessFacts{false, cpus("0-3"), "later"};
  c->sweep(owner);
  EXPECT_EQ(tree_->pid_location(100), "");
  EXPECT_EQ(tree_->pid_location(500), "mlos/shared");
}

TEST_F(ConfinementTest, UndoneWhenNoJobConfinesOrEveryCpuIsExclusive) {
  auto c = make();
  c->update(cpus("0-3"), cpus("0-1"));
  c->update(cpus("0-3"), cpus("0-3"));  // every CPU exclusive: nothing confined
  EXPECT_FALSE(c->active());
  EXPECT_EQ(tree_->pid_location(100), "");
  EXPECT_FALSE(tree_->exists("mlos/shared"));
  // It inherited; with a process inside, Linux refuses an empty list again
  // (ENOSPC): the same CPUs, spelled out.
  EXPECT_EQ(tree_->file("system.slice/cpuset.cpus"), "0-3") << "restored to the CPUs it had";
  EXPECT_TRUE(c->status()["errors"].empty()) << c->status().dump();
  EXPECT_NE(c->status()["reason"].get<std::string>().find("every CPU"), std::string::npos);
}

// Issue 47, finding 8: a mlosd that stopped while an exclusive job ran left
// every process of the machine on the pool until another mlosd started.
TEST_F(ConfinementTest, GivingTheNodeBackUndoesItAndTheNextUpdateConfinesAgain) {
  auto c = make();
  c->update(cpus("0-3"), cpus("0-1"));
  ASSERT_TRUE(c->active());
  EXPECT_TRUE(c->give_back());
  EXPECT_FALSE(c->active());
  EXPECT_EQ(tree_->pid_location(100), "");
  EXPECT_FALSE(tree_->exists("mlos/shared"));
  EXPECT_EQ(tree_->file("system.slice/cpuset.cpus"), "0-3");
  EXPECT_FALSE(c->give_back()) << "nothing left to give back";
  // What a next mlosd finds: nothing withheld.
  auto next = make();
  ASSERT_TRUE(next->load().ok());
  EXPECT_TRUE(next->withheld().empty());
  // The same exclusive CPUs confine again at the next update.
  c->update(cpus("0-3"), cpus("0-1"));
  EXPECT_TRUE(c->active());
  EXPECT_EQ(tree_->pid_location(100), "mlos/shared");
}

TEST_F(ConfinementTest, ThePoolFollowsTheExclusiveJobs) {
  auto c = make();
  c->update(cpus("0-3"), cpus("0-1"));
  c->update(cpus("0-3"), cpus("0-2"));
  EXPECT_EQ(tree_->file("mlos/shared/cpuset.cpus"), "3");
  EXPECT_EQ(tree_->file("system.slice/cpuset.cpus"), "3");
  c->update(cpus("0-3"), cpus("2"));
  EXPECT_EQ(tree_->file("mlos/shared/cpuset.cpus"), "0-1,3");
  EXPECT_EQ(tree_->file("system.slice/cpuset.cpus"), "0-1,3");
}

TEST_F(ConfinementTest, ListModeNarrowsOnlyTheListedCgroupsAndMovesNobody) {
  ASSERT_TRUE(tree_->make_dir("user.slice"));
  auto c = make("list", {"system.slice"});
  c->update(cpus("0-3"), cpus("0-1"));
  EXPECT_EQ(tree_->file("system.slice/cpuset.cpus"), "2-3");
  EXPECT_EQ(tree_->pid_location(100), "");
  EXPECT_FALSE(tree_->exists("mlos/shared"));
  EXPECT_NE(tree_->file("user.slice/cpuset.cpus"), "2-3");
}

TEST_F(ConfinementTest, ARestartedDaemonUndoesWhatNoJobNeedsAnyMore) {
  make()->update(cpus("0-3"), cpus("0-1"));  // then mlosd dies (no undo)
  auto again = make();
  auto loaded = again->load();
  ASSERT_TRUE(loaded.ok()) << loaded.error().describe();
  EXPECT_TRUE(again->active());
  again->update(cpus("0-3"), CpuSet{});  // its job ended meanwhile
  EXPECT_EQ(tree_->pid_location(100), "");
  // The original (it inherited: spelled out, as it has a process), from
  // the state file, not the narrowed value.
  EXPECT_EQ(tree_->file("system.slice/cpuset.cpus"), "0-3");
}

TEST_F(ConfinementTest, AnEmptyCgroupThatInheritedItsCpusInheritsThemAgain) {
  ASSERT_TRUE(tree_->make_dir("user.slice"));  // no process: the list may be emptied
  auto c = make();
  c->update(cpus("0-3"), cpus("0-1"));
  EXPECT_EQ(tree_->file("user.slice/cpuset.cpus"), "2-3");
  c->update(cpus("0-3"), CpuSet{});
  EXPECT_EQ(tree_->file("user.slice/cpuset.cpus"), "");
  EXPECT_EQ(tree_->file("system.slice/cpuset.cpus"), "0-3");
}

TEST_F(ConfinementTest, ARestartedDaemonReappliesToProcessesStartedMeanwhile) {
  make()->update(cpus("0-3"), cpus("0-1"));
  tree_->set_processes("", {2, 101, 400});
  facts_[400] = ProcessFacts{false, cpus("0-3"), "while-down"};
  auto again = make();
  ASSERT_TRUE(again->load().ok());
  again->update(cpus("0-3"), cpus("0-1"));
  EXPECT_EQ(tree_->pid_location(400), "mlos/shared");
  EXPECT_EQ(tree_->file("system.slice/cpuset.cpus"), "2-3");
}

TEST_F(ConfinementTest, OffChangesNothing) {
  auto c = make("off");
  c->update(cpus("0-3"), cpus("0-1"));
  EXPECT_FALSE(c->active());
  EXPECT_EQ(tree_->pid_location(100), "");
  EXPECT_EQ(c->status()["reason"], "confinement is off");
}

}  // namespace
}  // namespace mlos::daemon
