// SPDX-License-Identifier: Apache-2.0
// open_tar_shards: WebDataset grouping, labels, reads by pread, and
// damaged shards (every header byte corrupted, truncations, a shard
// truncated after opening), from tarfile-written fixtures
// (tests/fixtures/dataload/make_tar_shards.py) and hand-made archives.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "dataload/sample_source.h"
#include "dataload/tar_builder.h"
#include "dataload/temp_dir.h"

namespace mlos::dataload {
namespace {

using testing::TarBuilder;
using testing::TempDir;
using testing::write_file;

const std::string kFormats[] = {"ustar", "gnu", "pax"};

std::string shard_path(const std::string& format) {
  return std::string(MLOS_FIXTURES_DIR) + "/dataload/shard_" + format + ".tar";
}

nlohmann::json load_record() {
  std::ifstream in(std::string(MLOS_FIXTURES_DIR) + "/dataload/tar_shards.json");
  return nlohmann::json::parse(in);
}

std::string hex(std::span<const uint8_t> bytes) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  for (uint8_t b : bytes) {
    out += digits[b >> 4];
    out += digits[b & 15];
  }
  return out;
}

TEST(TarShardSource, SamplesLabelsAndBytesFromTarfileShards) {
  const auto samples = load_record()["samples"];
  std::vector<std::string> shards;
  for (const auto& f : kFormats) shards.push_back(shard_path(f));
  auto source = open_tar_shards(shards);
  ASSERT_TRUE(source.ok()) << source.error().message;
  const auto& s = **source;
  ASSERT_EQ(s.size(), 3 * samples.size());
  ScratchBuffer buffer;
  for (size_t i = 0; i < s.size(); ++i) {
    const auto& expected = samples[i % samples.size()];
    EXPECT_EQ(s.describe(i), shards[i / samples.size()] + ":" + expected[0].get<std::string>());
    EXPECT_EQ(s.label(i), expected[1].get<int64_t>()) << s.describe(i);
    auto bytes = s.read(i, buffer);
    ASSERT_TRUE(bytes.ok()) << bytes.error().message;
    EXPECT_EQ(hex(*bytes), expected[2].get<std::string>()) << s.describe(i);
    s.will_read(i);
  }
  EXPECT_TRUE(s.class_names().empty());
  EXPECT_FALSE(s.read(s.size(), buffer).ok());
  EXPECT_EQ(s.label(s.size()), -1);
}

TEST(TarShardSource, ConcurrentReadsReturnTheSameBytes) {
  auto source = open_tar_shards({shard_path("pax"), shard_path("gnu")});
  ASSERT_TRUE(source.ok());
  const SampleSource& s = **source;
  std::vector<std::string> reference;
  ScratchBuffer buffer;
  for (size_t i = 0; i < s.size(); ++i) reference.push_back(hex(*s.read(i, buffer)));
  std::vector<int> mismatches(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      ScratchBuffer mine;
      for (int round = 0; round < 200; ++round) {
        const size_t i = (round * 7 + t) % s.size();
        auto bytes = s.read(i, mine);
        mismatches[t] += !bytes.ok() || hex(*bytes) != reference[i];
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(mismatches, std::vector<int>(4, 0));
}

struct BadShard {
  TarBuilder tar;
  std::string message;
};

TEST(TarShardSource, SampleGroupingErrorsNameTheKey) {
  std::vector<BadShard> cases;
  cases.push_back({TarBuilder().add("a.jpg", "A").add("a.cls", "1").add("b.jpg", "B"), "\"b\" (at byte offset 2048) has no .cls"});
  cases.push_back({TarBuilder().add("a.cls", "1"), "\"a\" (at byte offset 0) has no image member"});
  cases.push_back({TarBuilder().add("a.jpg", "A").add("a.png", "P").add("a.cls", "1"), "has two image members, a.jpg and a.png"});
  cases.push_back({TarBuilder().add("a.jpg", "A").add("a.cls", "cat"), "not an integer >= 0: \"cat\""});
  cases.push_back({TarBuilder().add("a.jpg", "A").add("a.cls", "-3"), "not an integer >= 0: \"-3\""});
  cases.push_back({TarBuilder().add("a.jpg", "A").add("a.cls", std::string(65, '1')), "has a .cls member of 65 bytes"});
  cases.push_back({TarBuilder().add("a.jpg", "A").add("b.jpg", "B").add("b.cls", "0").add("a.cls", "1"),
                   "\"a\" recurs at byte offset 3072"});
  TempDir tmp;
  for (auto& c : cases) {
    write_file(tmp / "bad.tar", c.tar.end().bytes());
    auto source = open_tar_shards({tmp / "bad.tar"});
    ASSERT_FALSE(source.ok()) << c.message;
    EXPECT_EQ(source.error().code, MLOS_ERR_INVALID_ARGUMENT);
    EXPECT_NE(source.error().message.find(tmp / "bad.tar"), std::string::npos);
    EXPECT_NE(source.error().message.find(c.message), std::string::npos) << source.error().message;
  }
}

TEST(TarShardSource, MetadataRunsAndNamesWithoutKeysAreSkipped) {
  TempDir tmp;
  write_file(tmp / "ok.tar", TarBuilder()
                                 .add("__meta__.json", "{}")
                                 .add(".hidden.jpg", "H")  // nothing before the dot: no key
                                 .add("noext", "N")
                                 .add("dir.v2/k.JPG", "K")  // the key ends at the first dot after the last '/'
                                 .add("dir.v2/k.cls", "\n 4\t\n")
                                 .add("dir.v2/k.seg.png", "not the image")
                                 .end()
                                 .bytes());
  auto source = open_tar_shards({tmp / "ok.tar"});
  ASSERT_TRUE(source.ok()) << source.error().message;
  ASSERT_EQ((*source)->size(), 1u);
  EXPECT_EQ((*source)->describe(0), tmp / "ok.tar" + ":dir.v2/k.JPG");
  EXPECT_EQ((*source)->label(0), 4);
}

TEST(TarShardSource, NoShardsNoSamplesAndMissingShards) {
  TempDir tmp;
  EXPECT_EQ(open_tar_shards({}).error().code, MLOS_ERR_INVALID_ARGUMENT);
  write_file(tmp / "empty.tar", std::string(1024, '\0'));
  auto empty = open_tar_shards({tmp / "empty.tar"});
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.error().message.find("hold no samples"), std::string::npos);
  auto missing = open_tar_shards({shard_path("ustar"), tmp / "absent.tar"});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, MLOS_ERR_NOT_FOUND);
  EXPECT_NE(missing.error().message.find(tmp / "absent.tar"), std::string::npos);
}

TEST(TarShardSource, OversizedSamplesAreRefusedAtRead) {
  SourceOptions small;
  small.max_sample_bytes = 100;
  auto source = open_tar_shards({shard_path("ustar")}, small);
  ASSERT_TRUE(source.ok());
  ScratchBuffer buffer;
  auto big = (*source)->read(0, buffer);  // 768 bytes
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.error().code, MLOS_ERR_INVALID_ARGUMENT);
  EXPECT_NE(big.error().message.find("000000.jpg has 768 bytes, over the limit of 100"), std::string::npos)
      << big.error().message;
  EXPECT_EQ(buffer.capacity(), 0u);
  EXPECT_TRUE((*source)->read(2, buffer).ok());  // 1 byte
}

TEST(TarShardSource, ShardTruncatedAfterOpenIsAnIoErrorAtRead) {
  TempDir tmp;
  const std::string copy = tmp / "shard.tar";
  write_file(copy, testing::read_file(shard_path("ustar")));
  auto source = open_tar_shards({copy});
  ASSERT_TRUE(source.ok());
  ASSERT_EQ(::truncate(copy.c_str(), 9216 + 512 + 10), 0);  // inside the long-named sample's data
  ScratchBuffer buffer;
  EXPECT_TRUE((*source)->read(0, buffer).ok());
  auto cut = (*source)->read(3, buffer);
  ASSERT_FALSE(cut.ok());
  EXPECT_EQ(cut.error().code, MLOS_ERR_IO);
  EXPECT_NE(cut.error().message.find("short read of " + copy + ":long/"), std::string::npos) << cut.error().message;
  // Unlinking does not matter: the descriptor stays open.
  ASSERT_EQ(::unlink(copy.c_str()), 0);
  EXPECT_TRUE((*source)->read(1, buffer).ok());
}

// Header blocks of a tarfile-written archive: those with the ustar magic,
// and the extended-header blocks before each member's own header.
std::set<size_t> header_blocks(const std::string& bytes, const nlohmann::json& members) {
  std::set<size_t> blocks;
  for (size_t b = 0; b + 512 <= bytes.size(); b += 512) {
    if (std::memcmp(bytes.data() + b + 257, "ustar", 5) == 0) blocks.insert(b);
  }
  for (const auto& m : members) {
    for (size_t b = m[1].get<size_t>(); b < m[2].get<size_t>(); b += 512) blocks.insert(b);
  }
  return blocks;
}

TEST(TarShardSource, EveryCorruptedHeaderByteIsAnErrorOrAValidIndex) {
  // Each byte of each header block set to three other values, one at a
  // time: open either fails with INVALID_ARGUMENT naming the shard and an
  // offset or key, or succeeds with samples that read back. Never a crash
  // (run under ASan/UBSan too), and nearly every change is caught by the
  // header checksum.
  const auto record = load_record();
  TempDir tmp;
  const std::string copy = tmp / "corrupt.tar";
  for (const auto& format : kFormats) {
    const std::string original = testing::read_file(shard_path(format));
    const auto blocks = header_blocks(original, record["shards"][format]["members"]);
    write_file(copy, original);
    const int fd = ::open(copy.c_str(), O_WRONLY);
    ASSERT_GE(fd, 0);
    int changes = 0, errors = 0, header_changes = 0, header_errors = 0;
    for (size_t block : blocks) {
      const bool is_header = std::memcmp(original.data() + block + 257, "ustar", 5) == 0;
      for (size_t pos = block; pos < block + 512; ++pos) {
        const auto old_value = static_cast<uint8_t>(original[pos]);
        for (uint8_t value : {uint8_t{0x00}, uint8_t{0xFF}, static_cast<uint8_t>(old_value ^ 0x11)}) {
          if (value == old_value) continue;
          ASSERT_EQ(::pwrite(fd, &value, 1, static_cast<off_t>(pos)), 1);
          auto source = open_tar_shards({copy});
          ++changes;
          header_changes += is_header;
          if (!source.ok()) {
            ++errors;
            header_errors += is_header;
            EXPECT_EQ(source.error().code, MLOS_ERR_INVALID_ARGUMENT) << source.error().message;
            EXPECT_TRUE(source.error().message.starts_with(copy + ": ")) << source.error().message;
            EXPECT_NE(source.error().message.find("byte offset"), std::string::npos) << source.error().message;
          } else {
            ScratchBuffer buffer;
            for (size_t i = 0; i < (*source)->size(); ++i) {
              auto bytes = (*source)->read(i, buffer);
              EXPECT_TRUE(bytes.ok()) << format << " byte " << pos << ": " << bytes.error().message;
            }
          }
          ASSERT_EQ(::pwrite(fd, &old_value, 1, static_cast<off_t>(pos)), 1);
        }
      }
    }
    ::close(fd);
    EXPECT_GT(changes, 15 * 512 * 2) << format;
    EXPECT_GT(header_errors, header_changes * 97 / 100) << format << ": " << header_errors << " of " << header_changes;
    EXPECT_LE(errors, changes);
  }
}

TEST(TarShardSource, TruncatedShardsFailToOpenOrKeepWholeSamples) {
  const auto samples = load_record()["samples"];
  TempDir tmp;
  const std::string copy = tmp / "cut.tar";
  for (const auto& format : kFormats) {
    const std::string original = testing::read_file(shard_path(format));
    int opened = 0;
    for (size_t length = 0; length <= original.size(); length += 61) {
      write_file(copy, original.substr(0, length));
      auto source = open_tar_shards({copy});
      if (!source.ok()) {
        EXPECT_EQ(source.error().code, MLOS_ERR_INVALID_ARGUMENT) << source.error().message;
        continue;
      }
      ++opened;
      ScratchBuffer buffer;
      for (size_t i = 0; i < (*source)->size(); ++i) {
        auto bytes = (*source)->read(i, buffer);
        ASSERT_TRUE(bytes.ok());
        EXPECT_EQ(hex(*bytes), samples[i][2].get<std::string>());
      }
    }
    EXPECT_GT(opened, 0) << format;  // cuts in the trailing zero blocks
  }
}

}  // namespace
}  // namespace mlos::dataload
