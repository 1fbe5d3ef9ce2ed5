/* SPDX-License-Identifier: Apache-2.0 */
// Byte counts for people: "512 B", "1.5 KiB", "3.0 MiB" (powers of 1024).
#pragma once

#include <cstdint>
#include <string>

namespace mlos {

std::string human_bytes(uint64_t bytes);

}  // namespace mlos
