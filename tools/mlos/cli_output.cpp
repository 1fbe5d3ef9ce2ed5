// SPDX-License-Identifier: Apache-2.0
#include "cli_output.h"

#include <cctype>
#include <charconv>
#include <cstdio>
#include <iostream>

#include "mlos/errors.h"

namespace mlos::cli {

nlohmann::json json_envelope(const std::string& command) {
  return nlohmann::json{{"schema_version", kJsonSchemaVersion}, {"command", command}};
}

std::string dump_json(const nlohmann::json& j, int indent) {
  return j.dump(indent, ' ', /*ensure_ascii=*/false, nlohmann::json::error_handler_t::replace);
}

void report_error(const std::string& command, const Error& e, bool json, bool json_to_stderr) {
  std::cerr << "mlos " << command << ": " << mlos_strerror(e.code) << ": " << e.describe() << "\n";
  if (json) {
    auto j = json_envelope(command);
    j["error"] = {{"code", e.code}, {"name", mlos_strerror(e.code)}, {"message", e.describe()}};
    (json_to_stderr ? std::cerr : std::cout) << dump_json(j, json_to_stderr ? -1 : 2) << "\n";
  }
}

Result<uint64_t> parse_size(const std::string& text) {
  uint64_t value = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || p == text.data()) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT, "size \"" + text + "\" is not a number with optional K/M/G/T");
  }
  std::string unit(p, text.data() + text.size());
  for (auto& ch : unit) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  if (unit.size() >= 2 && unit.substr(unit.size() - 2) == "IB") unit.resize(unit.size() - 2);
  else if (unit.size() >= 2 && unit.back() == 'B') unit.pop_back();
  int shift = 0;
  if (unit.empty() || unit == "B") shift = 0;
  else if (unit == "K") shift = 10;
  else if (unit == "M") shift = 20;
  else if (unit == "G") shift = 30;
  else if (unit == "T") shift = 40;
  else return make_error(MLOS_ERR_INVALID_ARGUMENT, "size \"" + text + "\" has unknown unit");
  if (shift && value > (UINT64_MAX >> shift)) return make_error(MLOS_ERR_INVALID_ARGUMENT, "size \"" + text + "\" overflows");
  return value << shift;
}

}  // namespace mlos::cli
