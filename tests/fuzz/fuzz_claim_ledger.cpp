// SPDX-License-Identifier: Apache-2.0
// Fuzz target: ClaimLedger::parse. Properties: never crashes or throws;
// a parsed ledger serializes to text that parses to the same serialization.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "core/claim_ledger.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto ledger = mlos::ClaimLedger::parse(text);
  if (!ledger) {
    if (ledger.error().code != MLOS_ERR_STATE_CORRUPT) abort();
    return 0;
  }
  const std::string once = ledger->serialize();
  auto again = mlos::ClaimLedger::parse(once);
  if (!again || again->serialize() != once) abort();
  return 0;
}
