/* SPDX-License-Identifier: Apache-2.0 */
// The library's single log sink (see include/mlos/log.h).
#pragma once

#include <string>

#include "mlos/log.h"

namespace mlos {

void log_message(mlos_log_level_t level, const std::string& message);

}  // namespace mlos
