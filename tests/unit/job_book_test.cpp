// SPDX-License-Identifier: Apache-2.0
// The job book on its own: records booked in and out, what the node, an
// envelope and a uid hold, and the decisions taken from that (quotas,
// envelope memory, contended GPUs, a nested job standing alone). Pure: no
// fakes, no system.
#include "daemon/job_book.h"

#include <gtest/gtest.h>

namespace mlos::daemon {
namespace {

constexpr uint64_t kGiB = uint64_t{1} << 30;

JobRecord job(uint64_t id, const char* cpus, bool exclusive, uint32_t uid = 1000, int pid = 100) {
  JobRecord r;
  r.id = id;
  r.owner = ProcessId{pid, 7};
  r.uid = uid;
  r.cpus = *CpuSet::parse_list(cpus);
  r.exclusive = exclusive;
  return r;
}

TEST(JobBookTest, IdsAreGivenInOrderAndNeverPastTheBound) {
  JobBook book(4, 0);
  EXPECT_EQ(book.take_id(), 1u);
  EXPECT_EQ(book.take_id(), 2u);
  EXPECT_EQ(book.next_id(), 3u);
  EXPECT_FALSE(book.ids_exhausted());
  book.set_next_id(JobRegistry::kMaxJobId + 1);
  EXPECT_TRUE(book.ids_exhausted());
}

TEST(JobBookTest, BookingInAndOutLeavesNothingBehind) {
  JobBook book(4, 2);
  JobRecord a = job(1, "0-1", true), b = job(2, "1-2", false, 1001, 101);
  a.memory_bytes = kGiB;
  a.gpus = {"GPU-a"};
  a.gpus_exclusive = true;
  a.confines = true;
  book.add(a);
  book.add(b);
  EXPECT_EQ(book.node_usage().exclusive.to_list(), "0-1");
  EXPECT_EQ(book.node_usage().load(1), 1);
  EXPECT_EQ(book.node_usage().load(2), 1);
  EXPECT_EQ(book.confining().to_list(), "0-1");
  EXPECT_TRUE(book.owns_jobs(100));
  EXPECT_EQ(book.holdings_of(1000).exclusive_cpus, 2);
  EXPECT_EQ(book.holdings_of(1000).exclusive_gpus, 1);
  EXPECT_EQ(book.holdings_of(1000).memory_bytes, kGiB);
  EXPECT_EQ(book.holdings_of(1001).jobs, 1);
  book.remove(b);
  book.remove(a);
  EXPECT_TRUE(book.node_usage().exclusive.empty());
  EXPECT_TRUE(book.node_usage().shared_load.empty());
  EXPECT_TRUE(book.node_usage().gpus.exclusive.empty());
  EXPECT_TRUE(book.confining().empty());
  EXPECT_FALSE(book.owns_jobs(100));
  EXPECT_TRUE(book.holdings().empty());
}

TEST(JobBookTest, ANestedJobBooksAgainstItsEnvelopeAndCountsOnlyAsAJob) {
  JobBook book(4, 0);
  JobRecord envelope = job(1, "0-1", true);
  envelope.envelope = true;
  envelope.memory_bytes = kGiB;
  JobRecord nested = job(2, "1", true, 1000, 200);
  nested.parent = 1;
  nested.memory_bytes = kGiB / 4;
  book.add(envelope);
  book.add(nested);
  EXPECT_EQ(book.node_usage().exclusive.to_list(), "0-1");
  EXPECT_EQ(book.nested_usage(1).exclusive.to_list(), "1");
  EXPECT_EQ(book.nested_in(1), std::set<uint64_t>{2});
  EXPECT_EQ(book.holdings_of(1000).jobs, 2);
  EXPECT_EQ(book.holdings_of(1000).exclusive_cpus, 2);  // the envelope's, paid once
  EXPECT_EQ(book.holdings_of(1000).memory_bytes, kGiB);
  book.remove(nested);
  EXPECT_TRUE(book.nested_in(1).empty());
  EXPECT_TRUE(book.nested_usage(1).exclusive.empty());
}

TEST(JobBookTest, NestedJobsFitTheirEnvelopesMemory) {
  // Issue 47, finding 1: four 1 GiB jobs were granted inside a 256 MiB
  // envelope.
  JobBook book(4, 0);
  JobRecord envelope = job(1, "0-1", false);
  envelope.envelope = true;
  envelope.memory_bytes = kGiB;
  book.add(envelope);
  EXPECT_TRUE(book.fits_envelope_memory(envelope, kGiB).ok());
  JobRecord first = job(2, "0", false);
  first.parent = 1;
  first.memory_bytes = 3 * kGiB / 4;
  book.add(first);
  Status s = book.fits_envelope_memory(envelope, kGiB / 2);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, MLOS_ERR_INSUFFICIENT_MEMORY);
  EXPECT_NE(s.error().message.find(std::to_string(kGiB / 4) + " are left"), std::string::npos) << s.error().message;
  EXPECT_TRUE(book.fits_envelope_memory(envelope, kGiB / 4).ok());
  book.remove(first);
  EXPECT_TRUE(book.fits_envelope_memory(envelope, kGiB).ok());
  // An envelope that reserved nothing has nothing to carve.
  envelope.memory_bytes = 0;
  EXPECT_TRUE(book.fits_envelope_memory(envelope, 64 * kGiB).ok());
}

TEST(JobBookTest, GuestsAndEnvelopesAreFoundByTheirHostAndOwner) {
  JobBook book(4, 0);
  JobRecord outer = job(1, "0-3", false, 1000, 300), inner = job(5, "0-1", false, 1000, 300);
  outer.envelope = inner.envelope = true;
  JobRecord guest = job(6, "2", false, 1000, 300);
  guest.host = 1;
  book.add(outer);
  book.add(inner);
  book.add(guest);
  EXPECT_EQ(book.guests_of(1), std::set<uint64_t>{6});
  EXPECT_EQ(book.envelope_of(ProcessId{300, 7}), std::optional<uint64_t>(5));  // the newest
  EXPECT_EQ(book.envelope_of(ProcessId{300, 8}), std::nullopt);                 // a reused pid
  book.remove(inner);
  EXPECT_EQ(book.envelope_of(ProcessId{300, 7}), std::optional<uint64_t>(1));
  book.remove(guest);
  EXPECT_TRUE(book.guests().empty());
}

TEST(JobBookTest, QuotasCountWhatAUidHoldsOnThisNode) {
  JobBook book(2, 2);
  UserQuotas q;  // exclusive CPUs: all but one
  book.add(job(1, "0", true));
  Status s = book.check_quota(q, 1000, book.ask(1, 0, 0));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, MLOS_ERR_QUOTA);
  EXPECT_TRUE(book.check_quota(q, 1001, book.ask(1, 0, 0)).ok());
  EXPECT_TRUE(book.check_quota(q, 0, book.ask(2, 0, 0)).ok());  // root is exempt
}

TEST(JobBookTest, AContendedGpuIsBookedShared) {
  JobBook book(4, 2);
  JobRecord first = job(1, "0", false);
  first.gpus = {"GPU-a"};
  first.gpus_exclusive = true;
  EXPECT_EQ(book.share_contended_gpus(first), "");
  book.add(first);
  JobRecord second = job(2, "1", false);
  second.gpus = {"GPU-a", "GPU-b"};
  second.gpus_exclusive = true;
  EXPECT_EQ(book.share_contended_gpus(second), "GPUs booked as shared: GPU-a are held by another job too");
  EXPECT_FALSE(second.gpus_exclusive);
}

TEST(JobBookTest, ANestedJobStandingAlonePastItsQuotaRunsShared) {
  // Issue 47, finding 1: a nested exclusive job re-homed when its envelope
  // ended kept its CPUs exclusive past its owner's quota.
  JobBook book(2, 2);
  UserQuotas q;
  q.exclusive_cpus_per_uid = 1;
  q.memory_bytes_per_uid = kGiB;
  JobRecord held = job(1, "0", true);  // the uid's whole exclusive quota
  book.add(held);
  JobRecord envelope = job(2, "1", false, 1000, 400);
  envelope.envelope = true;
  book.add(envelope);
  JobRecord nested = job(3, "1", true, 1000, 401);
  nested.parent = 2;
  nested.memory_bytes = 2 * kGiB;
  nested.gpus = {"GPU-a"};
  nested.gpus_exclusive = true;
  book.add(nested);
  book.remove(envelope);
  int confine_asked = 0;
  auto notes = book.stand_alone(nested, 2, q, [&](const JobRecord& r) {
    ++confine_asked;
    return r.exclusive;
  });
  EXPECT_EQ(nested.parent, 0u);
  EXPECT_FALSE(nested.exclusive);
  EXPECT_EQ(nested.memory_bytes, 0u);
  EXPECT_TRUE(nested.gpus_exclusive);  // within the default GPU quota (all but one of 2)
  EXPECT_FALSE(nested.confines);
  EXPECT_EQ(confine_asked, 1);
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_NE(notes[0].find("its envelope (job 2) ended"), std::string::npos) << notes[0];
  EXPECT_NE(notes[0].find("shared from now on"), std::string::npos) << notes[0];
  EXPECT_NE(notes[1].find("no longer reserved"), std::string::npos) << notes[1];
  // Booked at node level now: shared on CPU 1, one more GPU held.
  EXPECT_EQ(book.node_usage().load(1), 1);
  EXPECT_EQ(book.holdings_of(1000).exclusive_cpus, 1);
  EXPECT_EQ(book.holdings_of(1000).exclusive_gpus, 1);
  EXPECT_TRUE(book.nested_in(2).empty());
}

}  // namespace
}  // namespace mlos::daemon
