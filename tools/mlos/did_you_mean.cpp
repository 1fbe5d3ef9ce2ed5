// SPDX-License-Identifier: Apache-2.0
#include "did_you_mean.h"

#include <algorithm>
#include <cctype>

namespace mlos::cli {

size_t edit_distance(const std::string& a_in, const std::string& b_in) {
  auto lower = [](std::string s) {
    for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
  };
  const std::string a = lower(a_in), b = lower(b_in);
  // Optimal string alignment: Levenshtein plus adjacent transpositions.
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

std::vector<std::string> closest_matches(const std::string& word, const std::vector<std::string>& candidates) {
  const size_t dashes = word.find_first_not_of('-') == std::string::npos ? word.size() : word.find_first_not_of('-');
  const size_t length = word.size() - dashes;
  if (length == 0) return {};
  const size_t limit = std::min<size_t>(length <= 4 ? 1 : 2, std::max<size_t>(1, length / 2));
  size_t best = limit + 1;
  std::vector<std::string> out;
  for (const auto& c : candidates) {
    const size_t d = edit_distance(word, c);
    if (d > limit || d > best) continue;
    if (d < best) out.clear();
    best = d;
    if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
  }
  return out;
}

std::string did_you_mean(const std::vector<std::string>& matches) {
  if (matches.empty()) return "";
  std::string out = "did you mean ";
  for (size_t i = 0; i < matches.size(); ++i) {
    if (i > 0) out += i + 1 == matches.size() ? " or " : ", ";
    out += "\"" + matches[i] + "\"";
  }
  return out + "?";
}

}  // namespace mlos::cli
