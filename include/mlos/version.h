/* SPDX-License-Identifier: Apache-2.0 */
/* libmlos version.
 *
 * MLOS_VERSION_* describe the headers you compiled against; mlos_version()
 * reports the library you are running against. They differ when a newer
 * libmlos.so.0 is installed under an older binary, which the ABI allows:
 * within one major version (= SONAME) symbols and struct layouts only grow. */
#ifndef MLOS_VERSION_H_
#define MLOS_VERSION_H_

#include "mlos/export.h"

#define MLOS_VERSION_MAJOR 0
#define MLOS_VERSION_MINOR 1
#define MLOS_VERSION_PATCH 0
#define MLOS_VERSION_STRING "0.1.0"

#ifdef __cplusplus
extern "C" {
#endif

/* Writes the running library's version into any non-NULL argument.
 * Thread-safe; never fails. */
MLOS_API void mlos_version(int* major, int* minor, int* patch);

/* The running library's version as "MAJOR.MINOR.PATCH"; a static string the
 * caller must not free. */
MLOS_API const char* mlos_version_string(void);

#ifdef __cplusplus
}
#endif

#endif /* MLOS_VERSION_H_ */
