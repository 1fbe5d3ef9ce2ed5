// SPDX-License-Identifier: Apache-2.0
#include "api/handle_registry.h"

namespace mlos {

HandleRegistry& HandleRegistry::instance() {
  // Leaked on purpose: handles may be released from atexit handlers or
  // other static destructors.
  static auto* r = new HandleRegistry;
  return *r;
}

}  // namespace mlos
