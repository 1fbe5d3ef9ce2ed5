/* SPDX-License-Identifier: Apache-2.0 */
// A Gloo rendezvous store over a caller's mlos_collective_store_t
// callbacks (include/mlos/collectives.h), e.g. torch's TCPStore reached
// through Python. Owns the callbacks: the destructor calls `release`.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include <gloo/rendezvous/store.h>

#include "mlos/collectives.h"

namespace mlos::collectives {

class CallbackStore final : public gloo::rendezvous::Store {
 public:
  explicit CallbackStore(const mlos_collective_store_t& callbacks) : c_(callbacks) {}
  ~CallbackStore() override;
  CallbackStore(const CallbackStore&) = delete;
  CallbackStore& operator=(const CallbackStore&) = delete;

  // A callback's error is thrown as std::runtime_error whose message says
  // "timed out" for MLOS_ERR_TIMEOUT (process_group maps it to TIMEOUT).
  void set(const std::string& key, const std::vector<char>& data) override;
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override { wait(keys, kDefaultTimeout); }
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override;
  bool has_compare_set() const { return c_.compare_set != nullptr; }
  // The caller's compare_set (the value held afterwards); nullopt when the
  // caller gave none.
  std::optional<std::vector<char>> compare_set(const std::string& key, const std::vector<char>& expected,
                                               const std::vector<char>& desired);

 private:
  mlos_collective_store_t c_;
};

}  // namespace mlos::collectives
