/* SPDX-License-Identifier: Apache-2.0 */
// Which samples a rank reads in an epoch, and in which order: the index
// set of torch.utils.data.DistributedSampler(shuffle, seed,
// drop_last=False) followed by DataLoader-style batching.
//
// For epoch e: all dataset indices, permuted by a generator seeded with
// seed + e when shuffling (identity order otherwise), padded by repeating
// from the start up to a multiple of world_size, then every world_size-th
// index starting at rank. Every rank gets ceil(N / world_size) indices, so
// all ranks run the same number of steps; the padding repeats at most
// world_size - 1 samples.
//
// The permutation is not torch.randperm's: reproducing it needs torch's
// Philox/MT generator and randperm algorithm. It is std::mt19937_64 (whose
// output sequence the C++ standard fixes) and a Fisher-Yates shuffle with
// its own unbiased bounded draw (std::uniform_int_distribution differs
// between standard libraries), so an order is the same on every platform
// and build for the same (seed, epoch, dataset size).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/status.h"

namespace mlos::dataload {

struct SamplerOptions {
  uint64_t seed = 0;
  bool shuffle = true;
  uint32_t rank = 0, world_size = 1;
  bool drop_last = false;  // DataLoader's: drop an incomplete last batch
  uint32_t batch_size = 1;
};

class EpochSampler {
 public:
  // MLOS_ERR_INVALID_ARGUMENT for world_size 0, rank >= world_size,
  // batch_size 0 or an empty dataset.
  static Result<EpochSampler> create(size_t dataset_size, const SamplerOptions& options);

  // This rank's sample indices for `epoch`, in order: the sampler's whole
  // output, with or without drop_last. With drop_last a consumer batches
  // the first batches_per_epoch() * batch_size of them and skips the rest,
  // as DataLoader's BatchSampler does. Deterministic in (seed, epoch);
  // O(dataset_size) time and memory per call.
  std::vector<uint64_t> indices(uint64_t epoch) const;
  size_t samples_per_epoch() const;  // indices(e).size() = ceil(N / world_size)
  size_t batches_per_epoch() const;  // ceil(samples / batch_size), or floor with drop_last

  size_t dataset_size() const { return dataset_size_; }
  const SamplerOptions& options() const { return options_; }

 private:
  EpochSampler(size_t dataset_size, const SamplerOptions& options) : dataset_size_(dataset_size), options_(options) {}
  size_t dataset_size_;
  SamplerOptions options_;
};

// A seed for per-sample randomness (augmentations) that depends only on
// (seed, epoch, sample index), never on which worker or thread decodes the
// sample: splitmix64's finaliser applied in a chain. For fixed seed and
// epoch it is a bijection of the sample index, so no two samples of an
// epoch share a seed.
uint64_t sample_seed(uint64_t seed, uint64_t epoch, uint64_t sample_index);

}  // namespace mlos::dataload
