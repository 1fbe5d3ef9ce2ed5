/* SPDX-License-Identifier: Apache-2.0 */
// Size classes of tensor-pool buffers.
//
// A released buffer is reused by any later request of its class, so the
// classes trade waste for reuse: page multiples up to 16 KiB, then four
// classes per doubling (20, 24, 28, 32 KiB, 40, 48 ...), as jemalloc spaces
// its large classes. A request over 16 KiB is rounded up by less than a
// quarter of it (under 20 % of the class unused); a smaller one to the next
// page. Every class is a whole number
// of pages, so buffers never share a page: mlock and page punching act on
// one buffer alone.
#pragma once

#include <cstddef>
#include <cstdint>

namespace mlos::tmm {

inline constexpr uint64_t kPageBytes = 4096;
inline constexpr uint64_t kHugePageBytes = 2u << 20;

// The class of a request of `bytes` (> 0). Requests up to 2^62 bytes.
int size_class(uint64_t bytes);
// The bytes of buffers of class `index`.
uint64_t class_bytes(int index);
// Alignment of class `index`'s buffers in the arena: 2 MiB from 2 MiB up
// (so transparent huge pages can back them), a page below.
uint64_t class_alignment(int index);
// Number of classes up to 2^62 bytes.
int class_count();

}  // namespace mlos::tmm
