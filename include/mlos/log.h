/* SPDX-License-Identifier: Apache-2.0 */
/* Where libmlos's diagnostics go.
 *
 * The library never writes to stdout or stderr by itself. Messages go to the
 * handler installed here; with none installed they are dropped, unless the
 * environment variable MLOS_LOG_LEVEL (error|warn|info|debug) is set, in
 * which case messages at or above that level go to stderr. */
#ifndef MLOS_LOG_H_
#define MLOS_LOG_H_

#include "mlos/export.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum mlos_log_level {
  MLOS_LOG_ERROR = 0,
  MLOS_LOG_WARN = 1,
  MLOS_LOG_INFO = 2,
  MLOS_LOG_DEBUG = 3
} mlos_log_level_t;

/* Called synchronously on the thread that logs; must be thread-safe and must
 * not call back into libmlos. `message` is valid only during the call. */
typedef void (*mlos_log_handler_t)(mlos_log_level_t level, const char* message,
                                   void* user_data);

/* Installs `handler` (NULL restores the default) for messages at or below
 * `max_level`. Thread-safe. */
MLOS_API void mlos_set_log_handler(mlos_log_handler_t handler,
                                   mlos_log_level_t max_level, void* user_data);

#ifdef __cplusplus
}
#endif

#endif /* MLOS_LOG_H_ */
