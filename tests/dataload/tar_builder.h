/* SPDX-License-Identifier: Apache-2.0 */
// Hand-made tar archives for tests: ustar headers with a correct checksum,
// and the odd cases Python's tarfile will not write (base-256 sizes,
// broken pax records, keys out of order).
#pragma once

#include <cstdint>
#include <string>

namespace mlos::dataload::testing {

class TarBuilder {
 public:
  // A member with `data`; its header's size field octal, or GNU base-256
  // (first byte 0x80, or 0xFF to write a negative number) when asked.
  TarBuilder& add(const std::string& name, const std::string& data, char type = '0', int base256_marker = 0);
  TarBuilder& add_pax(const std::string& records) { return add("PaxHeader", records, 'x'); }
  TarBuilder& add_gnu_long_name(const std::string& name) { return add("././@LongLink", name + '\0', 'L'); }
  TarBuilder& end() {
    bytes_.append(1024, '\0');
    return *this;
  }
  const std::string& bytes() const { return bytes_; }

 private:
  std::string bytes_;
};

// One pax record, "<length> key=value\n".
std::string pax_record(const std::string& key, const std::string& value);

}  // namespace mlos::dataload::testing
