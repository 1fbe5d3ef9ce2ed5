// SPDX-License-Identifier: Apache-2.0
#include "core/located_json.h"

#include <iterator>
#include <string_view>
#include <vector>

namespace mlos {

namespace {

using nlohmann::json;

// A character iterator that tells how far the parser has read: nlohmann's
// SAX interface reports values, not where they are, so key positions are
// taken from how much input had been consumed when the key arrived.
class CountingIterator {
 public:
  using iterator_category = std::input_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char*;
  using reference = const char&;

  CountingIterator(const char* p, size_t* consumed) : p_(p), consumed_(consumed) {}
  reference operator*() const { return *p_; }
  CountingIterator& operator++() {
    ++p_;
    if (consumed_ != nullptr) ++*consumed_;
    return *this;
  }
  CountingIterator operator++(int) {
    CountingIterator old = *this;
    ++*this;
    return old;
  }
  bool operator==(const CountingIterator& o) const { return p_ == o.p_; }
  bool operator!=(const CountingIterator& o) const { return p_ != o.p_; }

 private:
  const char* p_;
  size_t* consumed_;
};

// Builds the document as nlohmann's DOM parser would, and records key
// positions on the way.
class LocatingSax : public nlohmann::detail::json_sax_dom_parser<json> {
 public:
  LocatingSax(json& root, const std::string& text, const size_t* consumed, LocatedJson* out)
      : json_sax_dom_parser(root, false), text_(text), consumed_(consumed), out_(out) {}

  bool key(string_t& val) {
    // The parser has just read the key's closing quote: its opening quote
    // is the nearest unescaped one before it.
    size_t end = *consumed_ == 0 ? 0 : *consumed_ - 1;
    size_t start = end;
    while (start > 0) {
      --start;
      if (text_[start] == '"' && (start == 0 || text_[start - 1] != '\\')) break;
    }
    path_.back() = json_pointer_token(val);
    out_->keys[pointer()] = position_of(text_, start);
    return json_sax_dom_parser::key(val);
  }
  bool start_object(std::size_t n) {
    path_.emplace_back();
    return json_sax_dom_parser::start_object(n);
  }
  bool end_object() {
    path_.pop_back();
    return json_sax_dom_parser::end_object();
  }
  bool start_array(std::size_t n) {
    path_.emplace_back("-");  // arrays' elements are located by their key
    return json_sax_dom_parser::start_array(n);
  }
  bool end_array() {
    path_.pop_back();
    return json_sax_dom_parser::end_array();
  }
  bool parse_error(std::size_t position, const std::string& last_token, const nlohmann::detail::exception& e) {
    std::string what = e.what();
    // nlohmann says "[json.exception.parse_error.101] parse error at line
    // 3, column 5: syntax error ..."; keep what follows the location.
    const size_t colon = what.find(": ");
    if (colon != std::string::npos) what = what.substr(colon + 2);
    // `position` is just past the token that did not fit: point at its
    // start. The lexer's token text holds a whole string, number or
    // literal, but for a structural character it keeps what came before
    // since the last of those: that token is its last character.
    size_t length = last_token.size();
    if (length > 0 && std::string_view("{}[]:,").find(last_token.back()) != std::string_view::npos) length = 1;
    const TextPosition at = position_of(text_, position > length ? position - length : 0);
    error_ = std::to_string(at.line) + ":" + std::to_string(at.column) + ": " + what;
    return false;
  }
  const std::string& error() const { return error_; }

 private:
  std::string pointer() const {
    std::string p;
    for (const std::string& token : path_) p += "/" + token;
    return p;
  }

  const std::string& text_;
  const size_t* consumed_;
  LocatedJson* out_;
  std::vector<std::string> path_;
  std::string error_;
};

}  // namespace

std::string json_pointer_token(const std::string& key) {
  std::string out;
  for (char c : key) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

TextPosition position_of(const std::string& text, size_t offset) {
  TextPosition p{1, 1};
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++p.line;
      p.column = 1;
    } else {
      ++p.column;
    }
  }
  return p;
}

std::string LocatedJson::where(std::string pointer) const {
  for (;;) {
    if (auto it = keys.find(pointer); it != keys.end()) {
      return std::to_string(it->second.line) + ":" + std::to_string(it->second.column);
    }
    const size_t slash = pointer.rfind('/');
    if (slash == std::string::npos || pointer.empty()) return "";
    pointer.resize(slash);
  }
}

Result<LocatedJson> parse_located_json(const std::string& text) {
  LocatedJson out;
  size_t consumed = 0;
  LocatingSax sax(out.value, text, &consumed, &out);
  const bool ok = json::sax_parse(CountingIterator(text.data(), &consumed),
                                  CountingIterator(text.data() + text.size(), nullptr), &sax,
                                  json::input_format_t::json, /*strict=*/true, /*ignore_comments=*/true);
  if (!ok) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT, sax.error().empty() ? "not valid JSON" : sax.error());
  }
  return out;
}

}  // namespace mlos
