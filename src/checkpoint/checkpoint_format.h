/* SPDX-License-Identifier: Apache-2.0 */
// The on-disk checkpoint format: the payload, then a fixed 48-byte footer
// (docs/checkpoints.md). Pure: encoding, decoding and checking bytes, no I/O.
//
// Footer, little-endian, at the very end of the file:
//   0  magic "MLOSCKPT" (8 bytes)
//   8  format version, u32 (kCheckpointFormatVersion)
//  12  flags, u32 (none defined: must be 0)
//  16  payload length in bytes, u64 (file size - 48)
//  24  sequence number, u64
//  32  XXH3-64 of the payload, u64
//  40  XXH3-64 of footer bytes [0, 40), u64
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "core/status.h"

namespace mlos::checkpoint {

inline constexpr size_t kFooterSize = 48;
inline constexpr uint32_t kCheckpointFormatVersion = 1;
inline constexpr std::array<char, 8> kFooterMagic = {'M', 'L', 'O', 'S', 'C', 'K', 'P', 'T'};

struct Footer {
  uint32_t version = kCheckpointFormatVersion;
  uint32_t flags = 0;
  uint64_t payload_length = 0;
  uint64_t sequence = 0;
  uint64_t payload_hash = 0;  // XXH3-64
  bool operator==(const Footer&) const = default;
};

using FooterBytes = std::array<unsigned char, kFooterSize>;

// The footer's bytes, with its own checksum filled in.
FooterBytes encode_footer(const Footer& footer);

// Checks magic, the footer's own checksum, the version and the flags, in that
// order. Errors: MLOS_ERR_CHECKPOINT_CORRUPT, with a message saying which
// check failed.
Result<Footer> decode_footer(const unsigned char* bytes);

// Checks that a file of `file_size` bytes can hold a footer.
// Errors: MLOS_ERR_CHECKPOINT_CORRUPT ("short file").
Status check_footer_fits(uint64_t file_size);

// Checks that a decoded footer describes a file of `file_size` bytes.
// Errors: MLOS_ERR_CHECKPOINT_CORRUPT ("length mismatch").
Status check_file_length(const Footer& footer, uint64_t file_size);

// Checks the payload hash computed by the reader against the footer's.
// Errors: MLOS_ERR_CHECKPOINT_CORRUPT ("payload checksum mismatch").
Status check_payload_hash(const Footer& footer, uint64_t computed_hash);

// Verifies a whole checkpoint file held in memory (payload + footer): every
// check the file reader makes, in the same order. Errors:
// MLOS_ERR_CHECKPOINT_CORRUPT ("short file", or a message above).
Result<Footer> verify_checkpoint_image(const void* bytes, size_t size);

// XXH3-64 of a whole buffer.
uint64_t payload_hash(const void* data, size_t size);

// The payload hash computed piece by piece, as a writer writes or a reader
// reads (so each piece is hashed while it is in cache).
class PayloadHasher {
 public:
  PayloadHasher();
  ~PayloadHasher();
  PayloadHasher(const PayloadHasher&) = delete;
  PayloadHasher& operator=(const PayloadHasher&) = delete;
  void update(const void* data, size_t size);
  uint64_t digest() const;

 private:
  void* state_;  // XXH3_state_t, kept out of this header
};

}  // namespace mlos::checkpoint
