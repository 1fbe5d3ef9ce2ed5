// SPDX-License-Identifier: Apache-2.0
// index_tar against what Python's tarfile reads from the archives it wrote
// (ustar, GNU and pax; tests/fixtures/dataload/make_tar_shards.py), and on
// hand-made and damaged archives, in memory.
#include "dataload/tar_index.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "dataload/tar_builder.h"
#include "dataload/test_images.h"

namespace mlos::dataload {
namespace {

using testing::pax_record;
using testing::TarBuilder;

nlohmann::json load_record() {
  std::ifstream in(std::string(MLOS_FIXTURES_DIR) + "/dataload/tar_shards.json");
  return nlohmann::json::parse(in);
}

Result<std::vector<TarMember>> index_bytes(const std::string& bytes, const std::string& name = "t.tar") {
  return index_tar(
      [&](uint64_t offset, std::span<uint8_t> out) {
        EXPECT_LE(offset + out.size(), bytes.size()) << "read outside the archive";
        std::memcpy(out.data(), bytes.data() + offset, out.size());
        return Status::Ok();
      },
      bytes.size(), name);
}

std::string fixture(const std::string& format) {
  const auto v = testing::read_fixture("dataload/shard_" + format + ".tar");
  return {v.begin(), v.end()};
}

TEST(TarIndex, MatchesTarfileForUstarGnuAndPax) {
  const auto record = load_record();
  for (const char* format : {"ustar", "gnu", "pax"}) {
    const auto& expected = record["shards"][format]["members"];
    auto members = index_bytes(fixture(format));
    ASSERT_TRUE(members.ok()) << format << ": " << members.error().message;
    ASSERT_EQ(members->size(), expected.size()) << format;
    for (size_t i = 0; i < expected.size(); ++i) {
      const auto& m = (*members)[i];
      EXPECT_EQ(m.name, expected[i][0].get<std::string>()) << format << " " << i;
      EXPECT_EQ(m.header_offset, expected[i][1].get<uint64_t>()) << format << " " << m.name;
      EXPECT_EQ(m.data_offset, expected[i][2].get<uint64_t>()) << format << " " << m.name;
      EXPECT_EQ(m.size, expected[i][3].get<uint64_t>()) << format << " " << m.name;
    }
  }
}

TEST(TarIndex, Base256SizesAndPaxOverrides) {
  const std::string data(1000, 'z');
  auto b256 = index_bytes(TarBuilder().add("big.jpg", data, '0', 0x80).end().bytes());
  ASSERT_TRUE(b256.ok()) << b256.error().message;
  ASSERT_EQ(b256->size(), 1u);
  EXPECT_EQ((*b256)[0].size, 1000u);

  auto negative = index_bytes(TarBuilder().add("neg.jpg", data, '0', 0xFF).end().bytes());
  ASSERT_FALSE(negative.ok());
  EXPECT_NE(negative.error().message.find("malformed size field at byte offset 124"), std::string::npos)
      << negative.error().message;

  // A pax size= record wins over the header's field (tarfile writes it for
  // members of 8 GiB and more); path= over the header's name.
  const std::string real(700, 'r');
  TarBuilder pax;
  pax.add_pax(pax_record("path", "dir/" + std::string(200, 'n') + ".png") + pax_record("size", "700") +
              pax_record("mtime", "1.5"));
  pax.add("short-name", real);  // header size 700 too: the builder writes the real size
  auto p = index_bytes(pax.end().bytes());
  ASSERT_TRUE(p.ok()) << p.error().message;
  ASSERT_EQ(p->size(), 1u);
  EXPECT_EQ((*p)[0].name, "dir/" + std::string(200, 'n') + ".png");
  EXPECT_EQ((*p)[0].header_offset, 0u);
  EXPECT_EQ((*p)[0].data_offset, 1536u);  // pax header, its records, the member's header
  EXPECT_EQ((*p)[0].size, 700u);
}

TEST(TarIndex, SkipsNonRegularMembersAndStopsAtTheFirstZeroBlock) {
  TarBuilder b;
  b.add("d/", "", '5').add("old-style-dir/", "", '\0').add("link", "", '2').add("fifo", "", '6');
  b.add("global", pax_record("comment", "x"), 'g');
  b.add("a.jpg", "AAA", '\0').add("c.cls", "1", '7');
  std::string bytes = b.bytes();
  bytes.append(512, '\0');                                // one zero block ends it
  bytes += TarBuilder().add("after.jpg", "x").bytes();    // never read
  auto members = index_bytes(bytes);
  ASSERT_TRUE(members.ok()) << members.error().message;
  ASSERT_EQ(members->size(), 2u);
  EXPECT_EQ((*members)[0].name, "a.jpg");
  EXPECT_EQ((*members)[1].name, "c.cls");

  // An archive may end exactly at a member boundary, with no zero blocks.
  auto bare = index_bytes(TarBuilder().add("a.jpg", "A").bytes());
  ASSERT_TRUE(bare.ok());
  EXPECT_EQ(bare->size(), 1u);
}

TEST(TarIndex, MalformedExtendedHeadersAreErrorsWithOffsets) {
  struct Case {
    std::string bytes;
    std::string message;
  };
  const Case cases[] = {
      {TarBuilder().add_pax(pax_record("path", "ab")).end().bytes(), "end-of-archive block after an extended header"},  // 'x' then end-of-archive
      {TarBuilder().add_pax("99 path=a\n").add("a", "").end().bytes(), "malformed pax record at byte offset 512"},
      {TarBuilder().add_pax("7 path\n").add("a", "").end().bytes(), "malformed pax record at byte offset 512"},
      {TarBuilder().add_pax("x path=a\n").add("a", "").end().bytes(), "malformed pax record"},
      {TarBuilder().add_pax(pax_record("size", "12q")).add("a", "").end().bytes(), "malformed pax record"},
      {TarBuilder().add_pax(pax_record("GNU.sparse.map", "0,1")).add("a", "").end().bytes(), "sparse"},
      {TarBuilder().add_pax(pax_record("size", "99999")).add("a", "").end().bytes(), "extends past the end"},
      {TarBuilder().add_gnu_long_name("x").bytes(), "archive ends after an extended header"},
      {TarBuilder().add("big", std::string(2 << 20, 'x'), 'x').bytes(), "extended header over 1 MiB"},
  };
  for (const auto& c : cases) {
    auto r = index_bytes(c.bytes, "bad.tar");
    ASSERT_FALSE(r.ok()) << c.message;
    EXPECT_EQ(r.error().code, MLOS_ERR_INVALID_ARGUMENT);
    EXPECT_TRUE(r.error().message.starts_with("bad.tar: ")) << r.error().message;
    EXPECT_NE(r.error().message.find(c.message), std::string::npos) << r.error().message;
  }
}

TEST(TarIndex, EveryTruncationInsideAMemberIsAnError) {
  // Cut at every byte: the index is either a prefix of the full one (the
  // cut fell between members) or an error naming an offset. A cut inside
  // a member's headers, data or padding is always an error.
  for (const char* format : {"ustar", "gnu", "pax"}) {
    const std::string full = fixture(format);
    auto all = index_bytes(full);
    ASSERT_TRUE(all.ok());
    int errors = 0;
    for (size_t length = 0; length < full.size(); ++length) {
      auto r = index_bytes(full.substr(0, length));
      const bool inside_member = std::any_of(all->begin(), all->end(), [&](const TarMember& m) {
        return length > m.header_offset && length < m.data_offset + (m.size + 511) / 512 * 512;
      });
      if (!r.ok()) {
        ++errors;
        EXPECT_EQ(r.error().code, MLOS_ERR_INVALID_ARGUMENT);
        EXPECT_NE(r.error().message.find("at byte offset"), std::string::npos) << r.error().message;
        continue;
      }
      EXPECT_FALSE(inside_member) << format << " cut at " << length << " was accepted";
      ASSERT_LE(r->size(), all->size());
      for (size_t i = 0; i < r->size(); ++i) {
        EXPECT_EQ((*r)[i].name, (*all)[i].name);
        EXPECT_LE((*r)[i].data_offset + (*r)[i].size, length);
      }
    }
    EXPECT_GT(errors, static_cast<int>(full.size()) / 2) << format;
  }
}

}  // namespace
}  // namespace mlos::dataload
