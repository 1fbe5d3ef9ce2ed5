/* SPDX-License-Identifier: Apache-2.0 */
/* Symbol visibility for libmlos.
 *
 * The library is built with -fvisibility=hidden; only declarations marked
 * MLOS_API are exported (and listed in the linker version script). */
#ifndef MLOS_EXPORT_H_
#define MLOS_EXPORT_H_

#if defined(MLOS_BUILDING_LIBRARY)
#define MLOS_API __attribute__((visibility("default")))
#else
#define MLOS_API
#endif

#endif /* MLOS_EXPORT_H_ */
