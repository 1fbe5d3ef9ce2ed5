// SPDX-License-Identifier: Apache-2.0
#include "checkpoint/checkpoint_format.h"

#include <xxhash.h>

#include <cstring>
#include <new>
#include <string>

namespace mlos::checkpoint {

namespace {

constexpr size_t kHashedFooterBytes = 40;  // everything before the footer's own checksum

void put_u32(unsigned char* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<unsigned char>(v >> (8 * i));
}
void put_u64(unsigned char* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<unsigned char>(v >> (8 * i));
}
uint32_t get_u32(const unsigned char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
uint64_t get_u64(const unsigned char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

Error corrupt(const std::string& what) { return make_error(MLOS_ERR_CHECKPOINT_CORRUPT, what); }

}  // namespace

FooterBytes encode_footer(const Footer& footer) {
  FooterBytes b{};
  std::memcpy(b.data(), kFooterMagic.data(), kFooterMagic.size());
  put_u32(b.data() + 8, footer.version);
  put_u32(b.data() + 12, footer.flags);
  put_u64(b.data() + 16, footer.payload_length);
  put_u64(b.data() + 24, footer.sequence);
  put_u64(b.data() + 32, footer.payload_hash);
  put_u64(b.data() + 40, XXH3_64bits(b.data(), kHashedFooterBytes));
  return b;
}

Result<Footer> decode_footer(const unsigned char* bytes) {
  if (std::memcmp(bytes, kFooterMagic.data(), kFooterMagic.size()) != 0) {
    return corrupt("bad magic: not an mlOS checkpoint footer");
  }
  if (get_u64(bytes + 40) != XXH3_64bits(bytes, kHashedFooterBytes)) return corrupt("footer checksum mismatch");
  Footer f;
  f.version = get_u32(bytes + 8);
  f.flags = get_u32(bytes + 12);
  f.payload_length = get_u64(bytes + 16);
  f.sequence = get_u64(bytes + 24);
  f.payload_hash = get_u64(bytes + 32);
  if (f.version != kCheckpointFormatVersion) {
    return corrupt("unknown format version " + std::to_string(f.version) + " (this library reads version " +
                   std::to_string(kCheckpointFormatVersion) + ")");
  }
  if (f.flags != 0) return corrupt("unknown footer flags " + std::to_string(f.flags));
  return f;
}

Status check_footer_fits(uint64_t file_size) {
  if (file_size >= kFooterSize) return Status::Ok();
  return corrupt("short file (" + std::to_string(file_size) + " bytes, smaller than the " +
                 std::to_string(kFooterSize) + "-byte footer)");
}

Status check_file_length(const Footer& footer, uint64_t file_size) {
  if (file_size < kFooterSize || file_size - kFooterSize != footer.payload_length) {
    return corrupt("length mismatch: footer says " + std::to_string(footer.payload_length) +
                   " payload bytes, the file holds " +
                   std::to_string(file_size < kFooterSize ? 0 : file_size - kFooterSize));
  }
  return Status::Ok();
}

Status check_payload_hash(const Footer& footer, uint64_t computed_hash) {
  if (footer.payload_hash != computed_hash) return corrupt("payload checksum mismatch");
  return Status::Ok();
}

Result<Footer> verify_checkpoint_image(const void* bytes, size_t size) {
  if (Status s = check_footer_fits(size); !s) return s.error();
  const auto* p = static_cast<const unsigned char*>(bytes);
  auto footer = decode_footer(p + size - kFooterSize);
  if (!footer) return footer;
  if (Status s = check_file_length(*footer, size); !s) return s.error();
  if (Status s = check_payload_hash(*footer, payload_hash(p, size - kFooterSize)); !s) return s.error();
  return footer;
}

uint64_t payload_hash(const void* data, size_t size) { return XXH3_64bits(data, size); }

PayloadHasher::PayloadHasher() : state_(XXH3_createState()) {
  if (state_ == nullptr) throw std::bad_alloc();  // becomes NO_MEMORY at the API
  XXH3_64bits_reset(static_cast<XXH3_state_t*>(state_));
}

PayloadHasher::~PayloadHasher() { XXH3_freeState(static_cast<XXH3_state_t*>(state_)); }

void PayloadHasher::update(const void* data, size_t size) {
  XXH3_64bits_update(static_cast<XXH3_state_t*>(state_), data, size);
}

uint64_t PayloadHasher::digest() const { return XXH3_64bits_digest(static_cast<const XXH3_state_t*>(state_)); }

}  // namespace mlos::checkpoint
