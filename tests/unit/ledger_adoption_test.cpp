// SPDX-License-Identifier: Apache-2.0
// How a claim of the embedded ledger is booked as a job of mlosd (pure:
// a claim, the book, the job its owner runs in).
#include "daemon/ledger_adoption.h"

#include <gtest/gtest.h>

namespace mlos::daemon {
namespace {

Claim claim(uint64_t id, const char* cpus, bool exclusive, int pid = 500) {
  Claim c;
  c.id = id;
  c.owner = ProcessId{pid, 9};
  c.uid = 1000;
  c.cpus = *CpuSet::parse_list(cpus);
  c.exclusive = exclusive;
  c.numa_node = 0;
  return c;
}

JobRecord job(uint64_t id, const char* cpus, bool exclusive, int pid) {
  JobRecord r;
  r.id = id;
  r.owner = ProcessId{pid, 9};
  r.uid = 1000;
  r.cpus = *CpuSet::parse_list(cpus);
  r.exclusive = exclusive;
  return r;
}

const auto kNeverConfines = [](const JobRecord&) { return false; };

TEST(LedgerAdoptionTest, AClaimOfTheNodeIsBookedAsItIsWithItsClaimNamed) {
  JobBook book(4, 0);
  ClaimAdoption a = adoption_of(claim(7, "1", true), 3, *CpuSet::parse_list("0-3"), nullptr, book, kNeverConfines);
  EXPECT_EQ(a.record.id, 3u);
  EXPECT_EQ(a.record.ledger_claim, 7u);
  EXPECT_EQ(a.record.cpus.to_list(), "1");
  EXPECT_TRUE(a.record.exclusive);
  EXPECT_EQ(a.record.parent, 0u);
  EXPECT_EQ(a.record.label, "pid-500");
  ASSERT_EQ(a.notes.size(), 1u);
  EXPECT_NE(a.notes[0].find("adopted from the embedded ledger (claim 7)"), std::string::npos);
  EXPECT_EQ(book.node_usage().exclusive.to_list(), "") << "the book is only read";
}

TEST(LedgerAdoptionTest, AClaimOnCpusHeldExclusivelyIsBookedShared) {
  JobBook book(4, 0);
  book.add(job(1, "1-2", true, 400));
  ClaimAdoption a = adoption_of(claim(7, "2-3", true), 3, *CpuSet::parse_list("0-3"), nullptr, book, kNeverConfines);
  EXPECT_FALSE(a.record.exclusive);
  EXPECT_NE(a.notes.back().find("booked as shared: CPUs 2 were already granted exclusively"), std::string::npos)
      << a.notes.back();
}

TEST(LedgerAdoptionTest, AClaimInsideAnEnvelopeNestsUnlessItsGpusAreNotTheEnvelopes) {
  JobBook book(4, 2);
  JobRecord envelope = job(1, "0-3", false, 400);
  envelope.envelope = true;
  envelope.gpus = {"GPU-a"};
  book.add(envelope);
  Claim inside = claim(7, "1", true);
  inside.gpus = {"GPU-a"};
  ClaimAdoption nested = adoption_of(inside, 3, *CpuSet::parse_list("0-3"), &envelope, book, kNeverConfines);
  EXPECT_EQ(nested.record.parent, 1u);
  EXPECT_NE(nested.notes.back().find("nested in job 1"), std::string::npos);
  inside.gpus = {"GPU-b"};
  ClaimAdoption outside = adoption_of(inside, 4, *CpuSet::parse_list("0-3"), &envelope, book, kNeverConfines);
  EXPECT_EQ(outside.record.parent, 0u);
  EXPECT_NE(outside.notes.front().find("its GPU GPU-b is not that job's"), std::string::npos);
  // The owner's own first job, not an envelope: the claim is not nested.
  JobRecord own = job(2, "0-1", false, 500);
  ClaimAdoption beside = adoption_of(claim(8, "0", false), 5, *CpuSet::parse_list("0-3"), &own, book, kNeverConfines);
  EXPECT_EQ(beside.record.parent, 0u);
}

TEST(LedgerAdoptionTest, CpusOutsideMlosdsAreBookedAsTheyAreAndNoted) {
  JobBook book(2, 0);
  int asked = 0;
  ClaimAdoption a = adoption_of(claim(7, "6-7", true), 3, *CpuSet::parse_list("0-1"), nullptr, book,
                                [&](const JobRecord&) { return ++asked, true; });
  EXPECT_EQ(a.record.cpus.to_list(), "6-7");
  EXPECT_TRUE(a.record.confines);
  EXPECT_EQ(asked, 1);
  EXPECT_NE(a.notes.back().find("its CPUs 6-7 are outside mlosd's"), std::string::npos);
}

}  // namespace
}  // namespace mlos::daemon
