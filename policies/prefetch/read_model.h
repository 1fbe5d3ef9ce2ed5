/* SPDX-License-Identifier: Apache-2.0 */
// What the `prefetch` policy learns: a first-order Markov chain over the
// extents a job reads, in the spirit of Lynx (Markov chains over block
// accesses). An extent is the block (block_bytes) a read starts in, of one
// file; its length is the furthest end a read starting there reached. The
// chain counts, for each extent, which extent was read next. Files read
// whole in a repeated order, block runs within a file in a repeated
// pattern, and scans over the same shards all become chains the model can
// walk ahead of the reader. A shuffled order leaves each extent with many
// successors of one count each, and the model predicts nothing there.
//
// Confidence of a successor: its count / (the extent's transitions + 1),
// so one observation gives 0.5 and a successor seen once of two gives 1/3.
//
// Bounded: at most max_states extents (new ones beyond are not learned)
// and kMaxSuccessors successors each (the rarest is replaced).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace mlos::prefetch {

struct ExtentRef {
  std::string path;
  uint64_t offset = 0;
  uint64_t length = 0;  // 0: to the end of the file
  double confidence = 0;
};

class ReadModel {
 public:
  static constexpr size_t kMaxSuccessors = 4;

  ReadModel(uint64_t block_bytes, size_t max_states);

  // Learns that `path` was read at [offset, offset + length) (length 0:
  // the whole file) after the previous observed read. A read within the
  // extent of the previous one teaches nothing new.
  void observe(const std::string& path, uint64_t offset, uint64_t length);

  // Walks the chain from the last observed read: each step takes the most
  // likely successor if its confidence is at least `min_confidence`, and
  // stops at a repeat, after `max` extents, or once they add up to `bytes`
  // (an extent read to the end counts as block_bytes).
  std::vector<ExtentRef> predict(uint64_t bytes, size_t max, double min_confidence) const;

  // The next observe() starts a new chain (reads were lost in between).
  void forget_last() { last_ = -1; }

  size_t states() const { return states_.size(); }
  uint64_t dropped_states() const { return dropped_states_; }  // not learned: the model was full

 private:
  struct Successor {
    uint32_t state;
    uint32_t count;
  };
  struct State {
    uint32_t file;
    uint64_t block;
    uint64_t end = 0;  // furthest end read from this extent; 0: to the end of the file
    uint32_t transitions = 0;
    std::vector<Successor> next;
  };
  static uint64_t key(uint32_t file, uint64_t block) { return (static_cast<uint64_t>(file) << 40) ^ block; }
  // The state of (file, block), made if the model has room; -1 if full.
  int64_t state_of(uint32_t file, uint64_t block);
  uint32_t file_id(const std::string& path);

  uint64_t block_bytes_;
  size_t max_states_;
  std::vector<State> states_;
  std::unordered_map<uint64_t, uint32_t> by_key_;
  std::vector<std::string> files_;
  std::unordered_map<std::string, uint32_t> file_ids_;
  int64_t last_ = -1;
  uint64_t dropped_states_ = 0;
};

}  // namespace mlos::prefetch
