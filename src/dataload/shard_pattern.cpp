// SPDX-License-Identifier: Apache-2.0
// expand_shard_pattern: WebDataset shard lists ("shard-{000..099}.tar")
// and shell globs.
//
// Brace groups follow the braceexpand package that webdataset uses, for
// the forms shard lists need: decimal ranges "{A..B}" (ascending or
// descending; zero-padded to the wider bound when a bound other than "0"
// starts with '0') and lists "{a,b,c}". Not supported, and refused rather
// than misread: nesting, steps ("{0..10..2}"), letter ranges, negative
// bounds, and a group with neither ".." nor ',' (braceexpand keeps "{a}"
// literally). Expanded names are not globbed again.
#include <glob.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <string_view>

#include "dataload/sample_source.h"

namespace mlos::dataload {
namespace {

constexpr size_t kMaxNames = 1'000'000;

struct Segment {
  std::vector<std::string> choices;  // one choice for literal text
};

bool is_decimal(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

Result<std::vector<std::string>> expand_group(std::string_view body, const std::string& pattern) {
  auto bad = [&](const std::string& why) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT, "shard pattern " + pattern + ": " + why + " in {" + std::string(body) + "}");
  };
  const size_t dots = body.find("..");
  if (dots != std::string_view::npos) {
    const std::string_view lo_text = body.substr(0, dots), hi_text = body.substr(dots + 2);
    if (!is_decimal(lo_text) || !is_decimal(hi_text)) return bad("a range needs two non-negative decimal bounds");
    uint64_t lo = 0, hi = 0;
    if (std::from_chars(lo_text.data(), lo_text.data() + lo_text.size(), lo).ec != std::errc() ||
        std::from_chars(hi_text.data(), hi_text.data() + hi_text.size(), hi).ec != std::errc()) {
      return bad("range bound too large");
    }
    const uint64_t count = (lo <= hi ? hi - lo : lo - hi) + 1;
    if (count == 0 || count > kMaxNames) return bad("more than a million names");
    auto padded = [](std::string_view s) { return s.size() > 1 && s.front() == '0'; };
    const int width = padded(lo_text) || padded(hi_text) ? static_cast<int>(std::max(lo_text.size(), hi_text.size())) : 0;
    std::vector<std::string> out;
    out.reserve(count);
    for (uint64_t i = 0; i < count; ++i) {
      const uint64_t v = lo <= hi ? lo + i : lo - i;
      char buf[32];
      std::snprintf(buf, sizeof buf, "%0*llu", width, static_cast<unsigned long long>(v));
      out.emplace_back(buf);
    }
    return out;
  }
  if (body.find(',') == std::string_view::npos) return bad("a group needs \"A..B\" or a ',' list");
  std::vector<std::string> out;
  for (size_t start = 0;;) {
    const size_t comma = body.find(',', start);
    out.emplace_back(body.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

Result<std::vector<std::string>> expand_braces(const std::string& pattern) {
  std::vector<Segment> segments;
  size_t total = 1;
  for (size_t pos = 0; pos < pattern.size();) {
    const size_t open = pattern.find_first_of("{}", pos);
    if (open == std::string::npos) {
      segments.push_back({{pattern.substr(pos)}});
      break;
    }
    if (pattern[open] == '}') {
      return make_error(MLOS_ERR_INVALID_ARGUMENT, "shard pattern " + pattern + ": unbalanced '}' at " + std::to_string(open));
    }
    const size_t close = pattern.find_first_of("{}", open + 1);
    if (close == std::string::npos || pattern[close] == '{') {
      return make_error(MLOS_ERR_INVALID_ARGUMENT,
                        "shard pattern " + pattern + ": '{' at " + std::to_string(open) + " is unclosed or nested");
    }
    segments.push_back({{pattern.substr(pos, open - pos)}});
    auto choices = expand_group(std::string_view(pattern).substr(open + 1, close - open - 1), pattern);
    if (!choices.ok()) return choices.error();
    total *= choices->size();
    if (total > kMaxNames) {
      return make_error(MLOS_ERR_INVALID_ARGUMENT, "shard pattern " + pattern + " expands to more than a million names");
    }
    segments.push_back({std::move(*choices)});
    pos = close + 1;
  }
  std::vector<std::string> names{""};
  for (const Segment& segment : segments) {
    std::vector<std::string> next;
    next.reserve(names.size() * segment.choices.size());
    for (const auto& prefix : names) {
      for (const auto& choice : segment.choices) next.push_back(prefix + choice);
    }
    names = std::move(next);
  }
  size_t missing = 0;
  std::string first_missing;
  for (const auto& name : names) {
    struct stat st {};
    if (::stat(name.c_str(), &st) != 0) {
      if (missing++ == 0) first_missing = name;
    }
  }
  if (missing != 0) {
    return make_error(MLOS_ERR_NOT_FOUND, "shard pattern " + pattern + ": " + std::to_string(missing) + " of " +
                                              std::to_string(names.size()) + " shards do not exist, the first " +
                                              first_missing);
  }
  return names;
}

// An unreadable directory fails the expansion instead of silently dropping
// the shards inside it; one that does not exist is just no match (which
// GLOB_ERR would turn into GLOB_ABORTED too).
int stop_on_unreadable_directory(const char* /*path*/, int error) { return error == ENOENT || error == ENOTDIR ? 0 : 1; }

Result<std::vector<std::string>> expand_glob(const std::string& pattern) {
  glob_t g{};
  const int rc = ::glob(pattern.c_str(), GLOB_NOSORT, stop_on_unreadable_directory, &g);
  std::vector<std::string> names;
  if (rc == 0) names.assign(g.gl_pathv, g.gl_pathv + g.gl_pathc);
  ::globfree(&g);
  if (rc == GLOB_NOMATCH) return make_error(MLOS_ERR_NOT_FOUND, "shard pattern " + pattern + " matches no file");
  if (rc == GLOB_NOSPACE) return make_error(MLOS_ERR_NO_MEMORY, "shard pattern " + pattern + ": glob ran out of memory");
  if (rc != 0) return make_error(MLOS_ERR_IO, "shard pattern " + pattern + ": a directory could not be read");
  return names;
}

}  // namespace

Result<std::vector<std::string>> expand_shard_pattern(const std::string& pattern) {
  auto names = pattern.find_first_of("{}") != std::string::npos ? expand_braces(pattern) : expand_glob(pattern);
  if (!names.ok()) return names;
  std::sort(names->begin(), names->end());
  names->erase(std::unique(names->begin(), names->end()), names->end());
  return names;
}

}  // namespace mlos::dataload
