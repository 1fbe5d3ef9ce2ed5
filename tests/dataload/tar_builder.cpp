// SPDX-License-Identifier: Apache-2.0
#include "dataload/tar_builder.h"

#include <cstdio>
#include <cstring>

namespace mlos::dataload::testing {

TarBuilder& TarBuilder::add(const std::string& name, const std::string& data, char type, int base256_marker) {
  char h[512] = {};
  std::memcpy(h, name.data(), std::min<size_t>(name.size(), 100));
  std::snprintf(h + 100, 8, "%07o", 0644);
  std::snprintf(h + 108, 8, "%07o", 0);
  std::snprintf(h + 116, 8, "%07o", 0);
  if (base256_marker != 0) {
    h[124] = static_cast<char>(base256_marker);
    uint64_t v = data.size();
    for (int i = 11; i >= 4; --i, v >>= 8) h[124 + i] = static_cast<char>(v & 0xFF);
    if (base256_marker == 0xFF) std::memset(h + 125, 0xFF, 3);
  } else {
    std::snprintf(h + 124, 12, "%011llo", static_cast<unsigned long long>(data.size()));
  }
  std::snprintf(h + 136, 12, "%011o", 1700000000);
  h[156] = type;
  std::memcpy(h + 257, "ustar\0" "00", 8);
  std::memset(h + 148, ' ', 8);
  unsigned sum = 0;
  for (unsigned char c : h) sum += c;
  std::snprintf(h + 148, 8, "%06o", sum);  // six digits, NUL, space
  h[155] = ' ';
  bytes_.append(h, 512);
  bytes_ += data;
  bytes_.append((512 - data.size() % 512) % 512, '\0');
  return *this;
}

std::string pax_record(const std::string& key, const std::string& value) {
  const size_t body = 1 + key.size() + 1 + value.size() + 1;  // " key=value\n"
  size_t length = body + 1;
  while (std::to_string(length).size() + body != length) ++length;
  return std::to_string(length) + " " + key + "=" + value + "\n";
}

}  // namespace mlos::dataload::testing
