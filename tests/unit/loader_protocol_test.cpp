// SPDX-License-Identifier: Apache-2.0
// The data loader's messages: every message survives encode/decode, and
// anything malformed (wrong types, missing or out-of-range fields, unknown
// ops, not an object, too many slots) is refused by name, never crashes.
#include <gtest/gtest.h>

#include "dataload/loader_protocol.h"

using namespace mlos::dataload;

TEST(LoaderProtocol, MessagesRoundTrip) {
  StartRequest s;
  s.source = "/data/train-{000000..000009}.tar";
  s.batch_size = 64;
  s.image_size = 224;
  s.seed = 1ull << 60;
  s.world_size = 8;
  s.rank = 7;
  s.slot_offsets = {0, 41943040};
  s.cpus = {0, 3};
  s.read_ahead_bytes = 16 << 20;
  auto t = decode_trainer_message(encode(TrainerMessage(s)).dump());
  ASSERT_TRUE(t) << t.error().message;
  const auto& back = std::get<StartRequest>(*t);
  EXPECT_EQ(back.source, s.source);
  EXPECT_EQ(back.seed, s.seed);
  EXPECT_EQ(back.slot_offsets, s.slot_offsets);
  EXPECT_EQ(back.cpus, s.cpus);
  EXPECT_EQ(back.read_ahead_bytes, s.read_ahead_bytes);
  FreeSlot free_slot;
  free_slot.slot = 2;
  free_slot.waited_us = 1500;
  free_slot.interval_us = 90000;
  free_slot.held = 1;
  auto fs = decode_trainer_message(encode(TrainerMessage(free_slot)).dump());
  ASSERT_TRUE(fs);
  EXPECT_EQ(std::get<FreeSlot>(*fs).waited_us, 1500u);
  EXPECT_EQ(std::get<FreeSlot>(*fs).interval_us, 90000u);
  EXPECT_EQ(std::get<FreeSlot>(*fs).held, 1u);
  Started started;
  started.samples = 10000;
  started.reader = 1;
  started.read_ahead_bytes = 4 << 20;
  started.notes = "reader: pread (asked for)\n";
  auto st = decode_helper_message(encode(HelperMessage(started)).dump());
  ASSERT_TRUE(st);
  EXPECT_EQ(std::get<Started>(*st).reader, 1u);
  EXPECT_EQ(std::get<Started>(*st).read_ahead_bytes, 4u << 20);
  EXPECT_EQ(std::get<Started>(*st).notes, started.notes);
  auto e = decode_trainer_message(encode(TrainerMessage(EpochRequest{5, 9})).dump());
  ASSERT_TRUE(e);
  EXPECT_EQ(std::get<EpochRequest>(*e).pass, 9u);

  auto b = decode_helper_message(encode(HelperMessage(BatchReady{3, 1, 17, 2, 60, 4, 1})).dump());
  ASSERT_TRUE(b);
  EXPECT_EQ(std::get<BatchReady>(*b).skipped, 4u);
  EXPECT_EQ(std::get<BatchReady>(*b).pass, 3u);
  EXPECT_EQ(std::get<BatchReady>(*b).active_workers, 1u);
  auto f = decode_helper_message(encode(HelperMessage(Failed{MLOS_ERR_NOT_FOUND, "no such dir"})).dump());
  ASSERT_TRUE(f);
  EXPECT_EQ(std::get<Failed>(*f).code, MLOS_ERR_NOT_FOUND);
  auto bad = decode_helper_message(encode(HelperMessage(BadSample{1, 0, "a/b.jpg", "Premature end"})).dump());
  ASSERT_TRUE(bad);
  EXPECT_EQ(std::get<BadSample>(*bad).what, "a/b.jpg");
}

TEST(LoaderProtocol, MalformedPacketsAreRefusedByName) {
  for (const char* packet : {"", "[]", "{}", "{\"op\": 3}", "{\"op\": \"dance\"}", "{\"op\": \"free\"}",
                             "{\"op\": \"free\", \"slot\": -1}", "{\"op\": \"free\", \"slot\": 4294967296}",
                             "{\"op\": \"epoch\", \"epoch\": 1}", "{\"op\": \"epoch\", \"epoch\": \"1\", \"pass\": 1}",
                             "{\"op\": \"start\", \"source\": \"x\"}", "not json"}) {
    auto m = decode_trainer_message(packet);
    ASSERT_FALSE(m) << packet;
    EXPECT_EQ(m.error().code, MLOS_ERR_INVALID_ARGUMENT) << packet;
  }
  StartRequest s;
  s.source = "x";
  s.slot_offsets.assign(1025, 0);  // too many slots
  EXPECT_FALSE(decode_trainer_message(encode(TrainerMessage(s)).dump()));
  s.slot_offsets = {0};
  s.cpus = {5000};  // not a CPU number
  EXPECT_FALSE(decode_trainer_message(encode(TrainerMessage(s)).dump()));
  for (const char* packet : {"{\"op\": \"batch\", \"pass\": 1, \"epoch\": 0, \"index\": 0, \"slot\": 0, \"count\": 1}",
                             "{\"op\": \"started\"}", "{\"op\": \"bad\", \"pass\": 1, \"epoch\": 0, \"what\": 3}",
                             "{\"op\": \"failed\", \"code\": 5000, \"message\": \"\"}"}) {
    EXPECT_FALSE(decode_helper_message(packet)) << packet;
  }
}
