/* SPDX-License-Identifier: Apache-2.0 */
/* EXPECT for the strict-C tests: counts passes and failures (each failure
 * printed with its line) in the including file's `passes` and `failures`,
 * so a test reports every failed check, not only the first. */
#ifndef MLOS_TESTS_C_EXPECT_H
#define MLOS_TESTS_C_EXPECT_H

#include <stdio.h>

static int failures = 0, passes = 0;

#define EXPECT(cond)                                                      \
  do {                                                                    \
    if (cond) {                                                           \
      ++passes;                                                           \
    } else {                                                              \
      ++failures;                                                         \
      fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond); \
    }                                                                     \
  } while (0)

#endif
