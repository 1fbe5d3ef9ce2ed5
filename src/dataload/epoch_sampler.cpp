// SPDX-License-Identifier: Apache-2.0
#include "dataload/epoch_sampler.h"

#include <numeric>
#include <random>

namespace mlos::dataload {
namespace {

uint64_t splitmix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Uniform in [0, bound), bound > 0: Lemire's multiply-and-reject, exact
// for any engine output and the same on every standard library.
uint64_t bounded(std::mt19937_64& engine, uint64_t bound) {
  unsigned __int128 m = static_cast<unsigned __int128>(engine()) * bound;
  auto low = static_cast<uint64_t>(m);
  if (low < bound) {
    const uint64_t threshold = -bound % bound;
    while (low < threshold) {
      m = static_cast<unsigned __int128>(engine()) * bound;
      low = static_cast<uint64_t>(m);
    }
  }
  return static_cast<uint64_t>(m >> 64);
}

}  // namespace

Result<EpochSampler> EpochSampler::create(size_t dataset_size, const SamplerOptions& options) {
  if (options.world_size == 0) return make_error(MLOS_ERR_INVALID_ARGUMENT, "sampler: world_size is 0");
  if (options.rank >= options.world_size) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT, "sampler: rank " + std::to_string(options.rank) +
                                                     " is not below world_size " + std::to_string(options.world_size));
  }
  if (options.batch_size == 0) return make_error(MLOS_ERR_INVALID_ARGUMENT, "sampler: batch_size is 0");
  if (dataset_size == 0) return make_error(MLOS_ERR_INVALID_ARGUMENT, "sampler: the dataset is empty");
  return EpochSampler(dataset_size, options);
}

size_t EpochSampler::samples_per_epoch() const {
  return (dataset_size_ + options_.world_size - 1) / options_.world_size;
}

size_t EpochSampler::batches_per_epoch() const {
  const size_t samples = samples_per_epoch();
  return options_.drop_last ? samples / options_.batch_size
                            : (samples + options_.batch_size - 1) / options_.batch_size;
}

std::vector<uint64_t> EpochSampler::indices(uint64_t epoch) const {
  std::vector<uint64_t> all(dataset_size_);
  std::iota(all.begin(), all.end(), uint64_t{0});
  if (options_.shuffle) {
    std::mt19937_64 engine(options_.seed + epoch);  // DistributedSampler: manual_seed(seed + epoch)
    for (size_t i = all.size() - 1; i > 0; --i) std::swap(all[i], all[bounded(engine, i + 1)]);
  }
  // Padded to total = per_rank * world_size by repeating from the start
  // (wrapping more than once when world_size > N), then strided by rank.
  const size_t per_rank = samples_per_epoch();
  std::vector<uint64_t> mine;
  mine.reserve(per_rank);
  for (size_t k = 0; k < per_rank; ++k) {
    const size_t position = options_.rank + k * options_.world_size;
    mine.push_back(all[position % dataset_size_]);
  }
  return mine;
}

uint64_t sample_seed(uint64_t seed, uint64_t epoch, uint64_t sample_index) {
  return splitmix64(splitmix64(splitmix64(seed) ^ epoch) ^ sample_index);
}

}  // namespace mlos::dataload
