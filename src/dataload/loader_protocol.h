/* SPDX-License-Identifier: Apache-2.0 */
// What the trainer's library and its mlos-dataload helper say to each
// other over their SOCK_SEQPACKET socketpair: one JSON object per packet,
// {"op": "...", ...}, at most kMaxPacket bytes. SEQPACKET keeps message
// boundaries and reports the peer's end as end-of-file, so neither side
// needs framing or a heartbeat. Every field is checked on receipt; anything
// unexpected is a protocol error, after which the helper exits and the
// trainer reports PEER_LOST.
//
//   trainer -> helper: start, epoch, free, stop
//   helper -> trainer: started, batch, end, bad, failed
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace mlos::dataload {

inline constexpr size_t kMaxPacket = 64 * 1024;
inline constexpr int kHelperSocketFd = 3;  // in the helper
inline constexpr int kHelperArenaFd = 4;   // the slots' pool, mapped by the helper

struct StartRequest {
  std::string source;
  uint32_t batch_size = 0, image_size = 0, transform = 0, layout = 0;
  uint64_t seed = 0;
  uint32_t rank = 0, world_size = 1, flags = 0, workers = 0;
  std::vector<uint64_t> slot_offsets;  // in the arena, one per slot
  std::vector<int> cpus;               // where the helper's threads run (empty: as inherited)
  uint64_t read_ahead_bytes = 0;       // bound on samples read and not yet decoded (0: the helper's default)
};
// `pass` numbers the trainer's start_epoch calls; the helper echoes it, so
// that a message of an abandoned pass still in the socket (even one of the
// same epoch number, begun again) is told apart.
struct EpochRequest {
  uint64_t epoch = 0;
  uint64_t pass = 0;
};
// The trainer gives a slot back, and says how much of the time since its
// previous FreeSlot (interval_us) it spent blocked waiting for a batch
// (waited_us): its DATA_LOADING share, for the helper's WorkerGovernor;
// and how many batches it still holds (held). interval_us 0: not a report
// (a slot handed back unread).
struct FreeSlot {
  uint32_t slot = 0;
  uint64_t waited_us = 0, interval_us = 0;
  uint32_t held = 0;
};
struct StopRequest {};
using TrainerMessage = std::variant<StartRequest, EpochRequest, FreeSlot, StopRequest>;

struct Started {
  uint64_t samples = 0, samples_per_epoch = 0, batches_per_epoch = 0;
  uint32_t classes = 0, workers = 0;
  uint32_t reader = 0;            // an mlos_dataload_reader_t
  uint64_t read_ahead_bytes = 0;  // in force
  std::string notes;              // how it reads and why (a fallback's reason), one line each
};
struct BatchReady {
  uint64_t pass = 0, epoch = 0, index = 0;
  uint32_t slot = 0, count = 0, skipped = 0;
  uint32_t active_workers = 0;  // decoding threads the governor lets work, as the batch was sent
};
struct EpochEnd {
  uint64_t pass = 0, epoch = 0, batches = 0, skipped = 0;
};
struct BadSample {
  uint64_t pass = 0, epoch = 0;
  std::string what, reason;  // the sample (path) and why
};
struct Failed {
  int code = MLOS_ERR_SYSTEM;  // an mlos_error_t
  std::string message;
};
using HelperMessage = std::variant<Started, BatchReady, EpochEnd, BadSample, Failed>;

nlohmann::json encode(const TrainerMessage& m);
nlohmann::json encode(const HelperMessage& m);
// INVALID_ARGUMENT naming the field for anything malformed.
Result<TrainerMessage> decode_trainer_message(const std::string& packet);
Result<HelperMessage> decode_helper_message(const std::string& packet);

// One packet. PEER_LOST when the peer is gone (EPIPE, ECONNRESET).
Status send_packet(int fd, const nlohmann::json& message);
// The next packet within timeout_ms (< 0: no limit): nullopt at the
// timeout, PEER_LOST at end of file, INVALID_ARGUMENT for a packet over
// kMaxPacket (truncated).
Result<std::optional<std::string>> receive_packet(int fd, int timeout_ms);

}  // namespace mlos::dataload
