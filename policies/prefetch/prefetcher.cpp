// SPDX-License-Identifier: Apache-2.0
#include "prefetcher.h"

#include <algorithm>

namespace mlos::prefetch {

Prefetcher::Prefetcher(PrefetchConfig config) : c_(config), model_(c_.block_bytes, c_.max_states) {}

uint64_t Prefetcher::budget(uint64_t memory_limit, int pressure) const {
  uint64_t b = c_.ahead_bytes;
  if (memory_limit != 0) b = std::min(b, memory_limit / 4);
  if (pressure >= 2) return 0;
  if (pressure == 1) b /= 4;
  return b;
}

void Prefetcher::judge(Source s, bool hit, uint64_t bytes) {
  const auto i = static_cast<size_t>(s);
  (hit ? stats_.hits : stats_.wasted)[i] += 1;
  (hit ? stats_.hit_bytes : stats_.wasted_bytes)[i] += bytes;
  auto& window = outcomes_[i];
  window.push_back(hit);
  if (window.size() > c_.judge_window) window.pop_front();
  if (window.size() < c_.judge_window) return;
  const auto hits = static_cast<double>(std::count(window.begin(), window.end(), true));
  if (hits / static_cast<double>(window.size()) < c_.stop_below_hit_rate) {
    paused_until_[i] = stats_.reads + c_.pause_reads;
    ++stats_.pauses[i];
    window.clear();  // judged afresh when it resumes
  }
}

void Prefetcher::observe(const std::string& path, uint64_t offset, uint64_t length) {
  ++stats_.reads;
  // A read that starts inside a pending extent is its hit. Extents of one
  // file are keyed by offset: the one at or before `offset` is the candidate.
  auto it = pending_.upper_bound(Key{path, offset});
  if (it != pending_.begin()) {
    --it;
    const auto& [key, p] = *it;
    if (key.first == path && (p.length == 0 || offset < key.second + p.length)) {
      outstanding_bytes_ -= p.bytes;
      judge(p.source, true, p.bytes);
      pending_.erase(it);
    }
  }
  if (c_.learn) model_.observe(path, offset, length);
  expire();
}

void Prefetcher::cancel(const Fetch& f) {
  auto it = pending_.find(Key{f.path, f.offset});
  if (f.refresh || it == pending_.end()) return;
  outstanding_bytes_ -= it->second.bytes;
  stats_.fetched_bytes -= it->second.bytes;
  --stats_.fetches;
  pending_.erase(it);
}

void Prefetcher::lost(uint64_t reads) {
  if (reads == 0) return;
  stats_.lost_reads += reads;
  model_.forget_last();  // the read before the gap did not lead to the one after it
}

void Prefetcher::expire() {
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (stats_.reads - it->second.issued_at > c_.expire_reads) {
      outstanding_bytes_ -= it->second.bytes;
      judge(it->second.source, false, it->second.bytes);
      it = pending_.erase(it);
    } else {
      ++it;
    }
  }
}

void Prefetcher::issue(std::vector<Fetch>& out, const std::string& path, uint64_t offset, uint64_t length,
                       uint64_t bytes, Source source, size_t& refresh) {
  Key key{path, offset};
  if (pending_.count(key)) {
    if (refresh == 0) return;
    --refresh;
    ++stats_.refreshes;
    out.push_back(Fetch{path, offset, length, source, /*refresh=*/true});
    return;
  }
  pending_.emplace(std::move(key), Pending{length, bytes, stats_.reads, source});
  outstanding_bytes_ += bytes;
  ++stats_.fetches;
  stats_.fetched_bytes += bytes;
  out.push_back(Fetch{path, offset, length, source});
}

std::vector<Fetch> Prefetcher::next(const PlanView& plan, uint64_t memory_limit, int pressure) {
  std::vector<Fetch> out;
  const uint64_t limit = budget(memory_limit, pressure);
  const bool moved = stats_.reads != reads_at_last_next_;
  reads_at_last_next_ = stats_.reads;
  // A pending extent's refresh takes no budget, only a place in the batch.
  auto room = [&] { return out.size() < c_.max_fetches_per_tick; };
  auto fits = [&](uint64_t bytes) { return outstanding_bytes_ + bytes <= limit; };
  if (limit == 0) return out;
  if (c_.use_plan && plan.generation != 0 && !paused(Source::kPlan)) {
    size_t refresh = moved ? c_.refresh_head : 0;
    uint64_t ahead = 0;  // plan bytes between the reader and this entry, fetched or not
    for (const auto& [path, size] : plan.next) {
      if (!room()) break;
      // A file of unknown size (-1) is fetched and counted as one block:
      // every fetch is charged exactly what it asks the kernel for.
      const uint64_t bytes = size > 0 ? static_cast<uint64_t>(size) : c_.block_bytes;
      ahead += bytes;
      if (ahead > limit) break;  // further ahead than the budget reaches
      if (size == 0) continue;   // empty
      if (!fits(bytes) && !pending_.count(Key{path, 0})) break;
      issue(out, path, 0, bytes, bytes, Source::kPlan, refresh);
    }
  }
  if (c_.learn && !paused(Source::kLearned)) {
    size_t refresh = moved ? c_.refresh_head : 0;
    for (const ExtentRef& e : model_.predict(limit, c_.max_fetches_per_tick, c_.min_confidence)) {
      // An extent read "to the end" of a file of unknown size: one block.
      const uint64_t bytes = e.length == 0 ? c_.block_bytes : e.length;
      if (!room() || (!fits(bytes) && !pending_.count(Key{e.path, e.offset}))) break;
      issue(out, e.path, e.offset, bytes, bytes, Source::kLearned, refresh);
    }
  }
  return out;
}

}  // namespace mlos::prefetch
