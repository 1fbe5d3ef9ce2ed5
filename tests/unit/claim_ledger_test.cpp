// SPDX-License-Identifier: Apache-2.0
// ClaimLedger: JSON round trip, corrupt input, pruning dead owners (PID
// reuse included), and the usage a request competes with.
#include "core/claim_ledger.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

namespace mlos {
namespace {

Claim make_claim(int pid, uint64_t start, const char* cpus, bool exclusive, bool envelope = false) {
  Claim c;
  c.owner = ProcessId{pid, start};
  c.uid = 1000;
  c.cpus = CpuSet::parse_list(cpus).value();
  c.exclusive = exclusive;
  c.envelope = envelope;
  return c;
}

const char* kValid = R"({"schema_version":1,"next_id":7,"claims":[
  {"id":3,"pid":123,"start_time":456,"uid":0,"cpus":"0-3","exclusive":true,
   "envelope":false,"numa_node":0,"memory_bytes":4096,"label":"train","created_unix":1700000000},
  {"id":6,"pid":124,"start_time":789,"uid":1000,"cpus":"8,10-11","exclusive":false,
   "numa_node":1}]})";

TEST(ClaimLedgerTest, ParsesDocumentedFormat) {
  auto r = ClaimLedger::parse(kValid);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const ClaimLedger& l = *r;
  EXPECT_EQ(l.next_id, 7u);
  ASSERT_EQ(l.claims.size(), 2u);
  const Claim& a = l.claims[0];
  EXPECT_EQ(a.id, 3u);
  EXPECT_EQ(a.owner, (ProcessId{123, 456}));
  EXPECT_EQ(a.uid, 0u);
  EXPECT_EQ(a.cpus.to_list(), "0-3");
  EXPECT_TRUE(a.exclusive);
  EXPECT_FALSE(a.envelope);
  EXPECT_EQ(a.numa_node, 0);
  EXPECT_EQ(a.memory_bytes, 4096u);
  EXPECT_EQ(a.label, "train");
  EXPECT_EQ(a.created_unix, 1700000000);
  // Optional fields default when absent.
  const Claim& b = l.claims[1];
  EXPECT_EQ(b.cpus.to_list(), "8,10-11");
  EXPECT_FALSE(b.envelope);
  EXPECT_EQ(b.numa_node, 1);
  EXPECT_EQ(b.memory_bytes, 0u);
  EXPECT_EQ(b.label, "");
  EXPECT_EQ(b.created_unix, 0);
}

TEST(ClaimLedgerTest, SerializeParseRoundTrip) {
  ClaimLedger l;
  Claim a = make_claim(4242, 99887766, "0-3,8", true);
  a.numa_node = 1;
  a.memory_bytes = uint64_t{3} << 30;
  a.label = "quote\" and \\ and \xc3\xa9";
  a.created_unix = 1712345678;
  EXPECT_EQ(l.add(a), 1u);
  EXPECT_EQ(l.add(make_claim(7, 1, "12-15", false, /*envelope=*/true)), 2u);
  EXPECT_EQ(l.add(make_claim(8, 2, "", false)), 3u);

  const std::string text = l.serialize();
  EXPECT_EQ(text.back(), '\n');
  EXPECT_NE(text.find("\"schema_version\": 1"), std::string::npos) << text;
  auto back = ClaimLedger::parse(text);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->next_id, 4u);
  ASSERT_EQ(back->claims.size(), 3u);
  const Claim& c = back->claims[0];
  EXPECT_EQ(c.id, 1u);
  EXPECT_EQ(c.owner, (ProcessId{4242, 99887766}));
  EXPECT_EQ(c.uid, 1000u);
  EXPECT_EQ(c.cpus.to_list(), "0-3,8");
  EXPECT_TRUE(c.exclusive);
  EXPECT_EQ(c.numa_node, 1);
  EXPECT_EQ(c.memory_bytes, uint64_t{3} << 30);
  EXPECT_EQ(c.label, a.label);
  EXPECT_EQ(c.created_unix, 1712345678);
  EXPECT_TRUE(back->claims[1].envelope);
  EXPECT_FALSE(back->claims[1].exclusive);
  EXPECT_TRUE(back->claims[2].cpus.empty());
  // Serializing again gives the same text.
  EXPECT_EQ(back->serialize(), text);
}

// A label is whatever a caller passed (a C string, a file name): bytes that
// are not UTF-8 must not make the ledger unwritable (nlohmann's dump throws
// on them by default).
TEST(ClaimLedgerTest, LabelThatIsNotUtf8IsWrittenWithReplacementCharacters) {
  ClaimLedger l;
  Claim a = make_claim(4242, 1, "0", false);
  a.label = "/tmp/x\xff\xfe.sh";
  l.add(a);
  std::string text;
  ASSERT_NO_THROW(text = l.serialize());
  auto back = ClaimLedger::parse(text);
  ASSERT_TRUE(back.ok()) << back.error().message;
  ASSERT_EQ(back->claims.size(), 1u);
  EXPECT_EQ(back->claims[0].label, "/tmp/x\xEF\xBF\xBD\xEF\xBF\xBD.sh");
}

TEST(ClaimLedgerTest, EmptyOrWhitespaceIsAnEmptyLedger) {
  for (const char* text : {"", " ", "\n", " \t\r\n "}) {
    auto r = ClaimLedger::parse(text);
    ASSERT_TRUE(r.ok()) << "\"" << text << "\"";
    EXPECT_EQ(r->next_id, 1u);
    EXPECT_TRUE(r->claims.empty());
  }
  auto empty_doc = ClaimLedger::parse(R"({"schema_version":1,"next_id":1,"claims":[]})");
  ASSERT_TRUE(empty_doc.ok());
  EXPECT_TRUE(empty_doc->claims.empty());
}

TEST(ClaimLedgerTest, CorruptInputIsStateCorrupt) {
  const std::string valid = kValid;
  const std::vector<std::string> bad = {
      "{",                                                        // bad JSON
      "not json at all",                                          //
      "[]",                                                       // not an object
      "null",                                                     //
      R"({"schema_version":3,"next_id":1,"claims":[]})",          // wrong version
      R"({"schema_version":"1","next_id":1,"claims":[]})",        // wrong type
      R"({"next_id":1,"claims":[]})",                             // missing version
      R"({"schema_version":1,"claims":[]})",                      // missing next_id
      R"({"schema_version":1,"next_id":1})",                      // missing claims
      R"({"schema_version":1,"next_id":-1,"claims":[]})",         // negative next_id
      R"({"schema_version":1,"next_id":2.5,"claims":[]})",        // fractional next_id
      valid.substr(0, valid.size() / 2),                          // truncated file
      valid.substr(0, valid.size() - 1),                          // last brace lost
  };
  for (const auto& text : bad) {
    auto r = ClaimLedger::parse(text);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_EQ(r.error().code, MLOS_ERR_STATE_CORRUPT) << text;
  }
}

TEST(ClaimLedgerTest, BadClaimFieldsAreStateCorrupt) {
  auto with_claim = [](const std::string& claim, int next_id = 10) {
    return R"({"schema_version":1,"next_id":)" + std::to_string(next_id) + R"(,"claims":[)" + claim + "]}";
  };
  const std::string good =
      R"({"id":3,"pid":5,"start_time":6,"uid":0,"cpus":"0-1","exclusive":false,"numa_node":0})";
  ASSERT_TRUE(ClaimLedger::parse(with_claim(good)).ok());
  const std::vector<std::string> bad = {
      with_claim(R"({"id":3,"pid":5,"start_time":6,"uid":0,"cpus":"3-1","exclusive":false,"numa_node":0})"),
      with_claim(R"({"id":3,"pid":5,"start_time":6,"uid":0,"cpus":"a","exclusive":false,"numa_node":0})"),
      with_claim(R"({"id":3,"pid":5,"start_time":6,"uid":0,"cpus":7,"exclusive":false,"numa_node":0})"),
      with_claim(good, 3),  // id == next_id
      with_claim(good, 2),  // id > next_id
      with_claim(R"({"id":0,"pid":5,"start_time":6,"uid":0,"cpus":"0","exclusive":false,"numa_node":0})"),
      with_claim(R"({"id":3,"pid":0,"start_time":6,"uid":0,"cpus":"0","exclusive":false,"numa_node":0})"),
      with_claim(R"({"id":3,"pid":-4,"start_time":6,"uid":0,"cpus":"0","exclusive":false,"numa_node":0})"),
      with_claim(R"({"id":3,"start_time":6,"uid":0,"cpus":"0","exclusive":false,"numa_node":0})"),
      with_claim(R"({"id":3,"pid":5,"start_time":6,"uid":0,"cpus":"0","numa_node":0})"),
      with_claim(R"({"id":3,"pid":5,"start_time":6,"uid":0,"cpus":"0","exclusive":"yes","numa_node":0})"),
      with_claim(R"({"id":3,"pid":5,"start_time":-6,"uid":0,"cpus":"0","exclusive":false,"numa_node":0})"),
      with_claim(R"({"id":-3,"pid":5,"start_time":6,"uid":0,"cpus":"0","exclusive":false,"numa_node":0})"),
      with_claim(R"("a claim")"),
  };
  for (const auto& text : bad) {
    auto r = ClaimLedger::parse(text);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_EQ(r.error().code, MLOS_ERR_STATE_CORRUPT) << text;
    EXPECT_FALSE(r.error().message.empty());
  }
}

TEST(ClaimLedgerTest, AddRemoveFind) {
  ClaimLedger l;
  Claim c = make_claim(10, 100, "0", true);
  c.id = 555;  // ignored: add assigns
  EXPECT_EQ(l.add(c), 1u);
  EXPECT_EQ(l.add(make_claim(11, 110, "1", false)), 2u);
  EXPECT_EQ(l.add(make_claim(12, 120, "2", false)), 3u);
  EXPECT_EQ(l.next_id, 4u);
  ASSERT_NE(l.find(2), nullptr);
  EXPECT_EQ(l.find(2)->owner.pid, 11);
  EXPECT_EQ(l.find(555), nullptr);
  EXPECT_TRUE(l.remove(2));
  EXPECT_FALSE(l.remove(2));
  EXPECT_EQ(l.find(2), nullptr);
  EXPECT_EQ(l.claims.size(), 2u);
  // Ids are never reused after a removal.
  EXPECT_EQ(l.add(make_claim(13, 130, "3", false)), 4u);
  std::vector<uint64_t> ids;
  for (const auto& x : l.claims) ids.push_back(x.id);
  EXPECT_EQ(ids, std::vector<uint64_t>({1, 3, 4}));
}

TEST(ClaimLedgerTest, PruneRemovesDeadOwnersIncludingReusedPids) {
  ClaimLedger l;
  l.add(make_claim(100, 1000, "0", true));   // 1: alive
  l.add(make_claim(200, 2000, "1", true));   // 2: pid gone
  l.add(make_claim(300, 3000, "2", false));  // 3: pid 300 reused by a newer process
  l.add(make_claim(100, 1000, "3", false));  // 4: alive (same owner as 1)
  const std::set<std::pair<int, uint64_t>> live = {{100, 1000}, {300, 3500}};
  int calls = 0;
  auto dead = l.prune([&](const ProcessId& id) {
    ++calls;
    return live.count({id.pid, id.start_time}) > 0;
  });
  EXPECT_EQ(calls, 4);
  ASSERT_EQ(dead.size(), 2u);
  EXPECT_EQ(dead[0].id, 2u);
  EXPECT_EQ(dead[1].id, 3u);
  EXPECT_EQ(dead[1].owner, (ProcessId{300, 3000}));
  ASSERT_EQ(l.claims.size(), 2u);
  EXPECT_EQ(l.claims[0].id, 1u);  // survivors keep their order
  EXPECT_EQ(l.claims[1].id, 4u);
  EXPECT_EQ(l.next_id, 5u);       // pruning does not recycle ids
  EXPECT_TRUE(l.prune([](const ProcessId&) { return true; }).empty());
  EXPECT_EQ(l.prune([](const ProcessId&) { return false; }).size(), 2u);
  EXPECT_TRUE(l.claims.empty());
}

TEST(ClaimLedgerTest, UsageCountsExclusiveAndSharedClaims) {
  ClaimLedger l;
  l.add(make_claim(1, 1, "0-3", true));
  l.add(make_claim(2, 2, "4-5", false));
  l.add(make_claim(3, 3, "5-6", false));
  l.add(make_claim(4, 4, "10", true));
  CpuUsage u = l.usage_for({ProcessId{99, 9}});
  EXPECT_EQ(u.exclusive.to_list(), "0-3,10");
  EXPECT_EQ(u.shared_load, (std::map<int, int>{{4, 1}, {5, 2}, {6, 1}}));
  EXPECT_EQ(u.load(5), 2);
  EXPECT_EQ(u.load(0), 0);
  EXPECT_TRUE(ClaimLedger().usage_for({}).exclusive.empty());
}

TEST(ClaimLedgerTest, UsageIgnoresOnlyEnvelopesOfTheLineage) {
  // `mlos run` (pid 50) holds an exclusive envelope on 0-7; its child, pid 60,
  // asks for CPUs. Pid 60 itself also holds a plain exclusive claim on 2-3.
  ClaimLedger l;
  l.add(make_claim(50, 500, "0-7", true, /*envelope=*/true));
  l.add(make_claim(60, 600, "2-3", true));
  l.add(make_claim(70, 700, "8-11", true, /*envelope=*/true));  // unrelated run
  l.add(make_claim(50, 500, "12", false, /*envelope=*/true));   // shared envelope, same parent
  l.add(make_claim(50, 501, "13", true, /*envelope=*/true));    // old pid 50 (reused)
  const std::vector<ProcessId> lineage = {{60, 600}, {50, 500}, {1, 1}};
  CpuUsage u = l.usage_for(lineage);
  // Own envelopes (0-7 and 12) do not compete; the non-envelope claim of the
  // same process does; the unrelated envelope and the envelope of the
  // previous holder of pid 50 do.
  EXPECT_EQ(u.exclusive.to_list(), "2-3,8-11,13");
  EXPECT_TRUE(u.shared_load.empty());
  // An unrelated process competes with every claim.
  CpuUsage other = l.usage_for({ProcessId{80, 800}});
  EXPECT_EQ(other.exclusive.to_list(), "0-11,13");
  EXPECT_EQ(other.load(12), 1);
}

}  // namespace
}  // namespace mlos
