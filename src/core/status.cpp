// SPDX-License-Identifier: Apache-2.0
#include "core/status.h"

#include <cstring>

namespace mlos {

std::string Error::describe() const {
  if (sys_errno == 0) return message;
  char buf[128];
  // GNU strerror_r returns the message pointer (possibly not buf).
  const char* text = strerror_r(sys_errno, buf, sizeof buf);
  return message + " (" + text + ")";
}

}  // namespace mlos
