// SPDX-License-Identifier: Apache-2.0
#include "core/cpu_set.h"

#include <algorithm>
#include <bit>
#include <charconv>

namespace mlos {

namespace {
// Guard against absurd input ("0-999999999") turning into huge allocations.
constexpr int kMaxIndex = 1 << 20;

bool parse_int(std::string_view s, int* out) {
  if (s.empty()) return false;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && ptr == s.data() + s.size() && *out >= 0 && *out < kMaxIndex;
}
}  // namespace

CpuSet CpuSet::of(std::initializer_list<int> cpus) {
  CpuSet s;
  for (int c : cpus) s.set(c);
  return s;
}

CpuSet CpuSet::range(int first, int last) {
  CpuSet s;
  for (int c = first; c <= last; ++c) s.set(c);
  return s;
}

Result<CpuSet> CpuSet::parse_list(std::string_view text) {
  CpuSet s;
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  if (text.empty()) return s;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    std::string_view item = text.substr(pos, comma == std::string_view::npos ? text.npos : comma - pos);
    size_t dash = item.find('-');
    int lo = 0, hi = 0;
    bool good = dash == std::string_view::npos
                    ? (parse_int(item, &lo) && (hi = lo, true))
                    : (parse_int(item.substr(0, dash), &lo) && parse_int(item.substr(dash + 1), &hi) && lo <= hi);
    if (!good) {
      return make_error(MLOS_ERR_INVALID_ARGUMENT,
                        "bad CPU list \"" + std::string(text) + "\" at \"" + std::string(item) + "\"");
    }
    for (int c = lo; c <= hi; ++c) s.set(c);
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  return s;
}

void CpuSet::set(int cpu) {
  size_t w = static_cast<size_t>(cpu) / 64;
  if (words_.size() <= w) words_.resize(w + 1, 0);
  words_[w] |= uint64_t{1} << (cpu % 64);
}

void CpuSet::reset(int cpu) {
  size_t w = static_cast<size_t>(cpu) / 64;
  if (w < words_.size()) words_[w] &= ~(uint64_t{1} << (cpu % 64));
  trim();
}

bool CpuSet::test(int cpu) const {
  if (cpu < 0) return false;
  size_t w = static_cast<size_t>(cpu) / 64;
  return w < words_.size() && (words_[w] >> (cpu % 64)) & 1;
}

int CpuSet::count() const {
  int n = 0;
  for (uint64_t w : words_) n += std::popcount(w);
  return n;
}

int CpuSet::extent() const {
  for (size_t i = words_.size(); i-- > 0;) {
    if (words_[i]) return static_cast<int>(i * 64 + 64 - std::countl_zero(words_[i]));
  }
  return 0;
}

CpuSet CpuSet::operator&(const CpuSet& o) const {
  CpuSet r;
  r.words_.resize(std::min(words_.size(), o.words_.size()));
  for (size_t i = 0; i < r.words_.size(); ++i) r.words_[i] = words_[i] & o.words_[i];
  r.trim();
  return r;
}

CpuSet CpuSet::operator|(const CpuSet& o) const {
  CpuSet r;
  r.words_.resize(std::max(words_.size(), o.words_.size()), 0);
  for (size_t i = 0; i < r.words_.size(); ++i) {
    r.words_[i] = (i < words_.size() ? words_[i] : 0) | (i < o.words_.size() ? o.words_[i] : 0);
  }
  return r;
}

CpuSet CpuSet::minus(const CpuSet& o) const {
  CpuSet r = *this;
  for (size_t i = 0; i < r.words_.size() && i < o.words_.size(); ++i) r.words_[i] &= ~o.words_[i];
  r.trim();
  return r;
}

bool CpuSet::operator==(const CpuSet& o) const {
  CpuSet a = *this, b = o;
  a.trim();
  b.trim();
  return a.words_ == b.words_;
}

std::vector<int> CpuSet::to_vector() const {
  std::vector<int> out;
  for (size_t i = 0; i < words_.size(); ++i) {
    for (uint64_t w = words_[i]; w; w &= w - 1) out.push_back(static_cast<int>(i * 64) + std::countr_zero(w));
  }
  return out;
}

std::string CpuSet::to_list() const {
  std::string out;
  std::vector<int> v = to_vector();
  for (size_t i = 0; i < v.size();) {
    size_t j = i;
    while (j + 1 < v.size() && v[j + 1] == v[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(v[i]);
    if (j > i) out += '-' + std::to_string(v[j]);
    i = j + 1;
  }
  return out;
}

void CpuSet::trim() {
  while (!words_.empty() && words_.back() == 0) words_.pop_back();
}

}  // namespace mlos
