/* SPDX-License-Identifier: Apache-2.0 */
// Thread-local "last error" behind mlos_last_error()/_message(), and the one
// place C++ errors become C codes.
#pragma once

#include "core/status.h"

namespace mlos {

// Records `e` as the calling thread's last error, logs it at debug level,
// and returns its code.
int record_error(const Error& e);
inline int to_code(const Status& s) { return s.ok() ? MLOS_OK : record_error(s.error()); }

}  // namespace mlos
