// SPDX-License-Identifier: Apache-2.0
#include "collectives/device_buffer.h"

#include <cstdio>

namespace mlos::collectives {

std::string uuid_text(const std::array<unsigned char, 16>& u) {
  char text[64];
  std::snprintf(text, sizeof text, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0],
                u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
  return text;
}

}  // namespace mlos::collectives
