/* SPDX-License-Identifier: Apache-2.0 */
/* The deterministic payload of checkpoint `sequence` in the crash test:
 * the child writes it, the parent recomputes it to check what it loads.
 * Plain C so that the child stays a C program on the public API. */
#ifndef MLOS_TEST_CRASH_PAYLOAD_H_
#define MLOS_TEST_CRASH_PAYLOAD_H_

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define CRASH_MIN_SIZE ((size_t)4096)
#define CRASH_MAX_SIZE ((size_t)4 << 20)

static inline uint64_t crash_mix(uint64_t x) { /* splitmix64 */
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/* 4 KiB .. 4 MiB, varying with the sequence. */
static inline size_t crash_payload_size(uint64_t sequence) {
  return CRASH_MIN_SIZE + (size_t)(crash_mix(sequence) % (CRASH_MAX_SIZE - CRASH_MIN_SIZE + 1));
}

/* Fills buf[0, crash_payload_size(sequence)). */
static inline void crash_fill_payload(uint64_t sequence, unsigned char* buf) {
  const size_t size = crash_payload_size(sequence);
  uint64_t word = 0;
  size_t i;
  for (i = 0; i < size; ++i) {
    if (i % 8 == 0) word = crash_mix(sequence * 0x100000001b3ull + i / 8);
    buf[i] = (unsigned char)(word >> (8 * (i % 8)));
  }
}

#endif /* MLOS_TEST_CRASH_PAYLOAD_H_ */
