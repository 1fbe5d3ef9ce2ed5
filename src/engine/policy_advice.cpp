// SPDX-License-Identifier: Apache-2.0
#include "engine/policy_advice.h"

namespace mlos {

using nlohmann::json;

namespace {

Error not_understood(const std::string& field) {
  return make_error(MLOS_ERR_VERSION_MISMATCH, "mlosd's advice is not understood: '" + field + "' is missing or mistyped");
}

// A string field that may be null or absent ("" then).
bool optional_text(const json& j, const char* key, std::string* out) {
  if (!j.contains(key) || j[key].is_null()) return true;
  if (!j[key].is_string()) return false;
  *out = j[key].get<std::string>();
  return true;
}

}  // namespace

Result<PolicyAdvice> advice_from_json(const json& j) {
  if (!j.is_object()) return not_understood("advice");
  PolicyAdvice a;
  if (!j.contains("threads") || !j["threads"].is_number_integer() || j["threads"].get<int64_t>() < 1 ||
      j["threads"].get<int64_t>() > INT32_MAX) {
    return not_understood("threads");
  }
  a.threads = j["threads"].get<int>();
  if (!j.contains("threads_advised") || !j["threads_advised"].is_boolean()) return not_understood("threads_advised");
  a.threads_advised = j["threads_advised"].get<bool>();
  if (!optional_text(j, "threads_by", &a.threads_by)) return not_understood("threads_by");
  if (!optional_text(j, "cpu_weight_by", &a.cpu_weight_by)) return not_understood("cpu_weight_by");
  if (j.contains("cpu_weight") && !j["cpu_weight"].is_null()) {
    if (!j["cpu_weight"].is_number_unsigned() || j["cpu_weight"].get<uint64_t>() > UINT32_MAX) {
      return not_understood("cpu_weight");
    }
    a.cpu_weight = j["cpu_weight"].get<uint32_t>();
  }
  if (!j.contains("policies") || !j["policies"].is_array()) return not_understood("policies");
  for (const auto& name : j["policies"]) {
    if (!name.is_string()) return not_understood("policies");
    a.policies.push_back(name.get<std::string>());
  }
  if (j.contains("failed_policies") && !j["failed_policies"].is_null()) {
    if (!j["failed_policies"].is_array()) return not_understood("failed_policies");
    for (const auto& f : j["failed_policies"]) {
      FailedPolicy failed;
      if (!f.is_object() || !f.contains("name") || !f["name"].is_string() || !optional_text(f, "why", &failed.why)) {
        return not_understood("failed_policies");
      }
      failed.name = f["name"].get<std::string>();
      a.failed.push_back(std::move(failed));
    }
  }
  return a;
}

Error no_policy_service() {
  return make_error(MLOS_ERR_UNSUPPORTED, "this engine serves no policy modules (it was made without a policy service)");
}

}  // namespace mlos
