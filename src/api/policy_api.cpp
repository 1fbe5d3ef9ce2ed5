// SPDX-License-Identifier: Apache-2.0
// The policy-module entry points of include/mlos/training.h: arguments are
// checked here, before anything is sent; the job forwards the call to its
// engine (mlosd, or in embedded mode the policy hosts libmlos starts;
// UNSUPPORTED only when no policy host is found).
#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "api/api_guard.h"
#include "api/versioned_struct.h"
#include "core/utf8.h"
#include "mlos/training.h"

using mlos::make_error;
using mlos::record_error;

namespace {

using mlos::api::fill_versioned;
using mlos::api::find_job;
using mlos::api::guarded;


// The policy name, or INVALID_ARGUMENT (recorded) when it is NULL, empty
// or not UTF-8 (it travels in JSON, which carries only UTF-8).
mlos::Result<std::string> policy_name(const char* name) {
  if (name == nullptr || *name == '\0') {
    return make_error(MLOS_ERR_INVALID_ARGUMENT, "the policy name must not be NULL or empty");
  }
  std::string text(name);
  if (mlos::first_invalid_utf8(text) != std::string::npos) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT, "the policy name is not valid UTF-8");
  }
  return text;
}

}  // namespace

extern "C" {

int mlos_training_request_policy(mlos_training_resources_t* resources, const char* name, const char* config_json) {
  return guarded([&] {
    auto job = find_job(resources);
    if (!job) return mlos_last_error();
    auto n = policy_name(name);
    if (!n) return record_error(n.error());
    nlohmann::json config = nlohmann::json::object();
    if (config_json != nullptr) {
      config = nlohmann::json::parse(std::string_view(config_json), nullptr, /*allow_exceptions=*/false);
      if (!config.is_object()) {
        return record_error(make_error(MLOS_ERR_INVALID_ARGUMENT,
                                       "config_json of policy '" + *n + "' is not a JSON object (e.g. {\"threads\": 2})"));
      }
    }
    auto names = job->request_policy(*n, config);
    if (!names) return record_error(names.error());
    return static_cast<int>(MLOS_OK);
  });
}

int mlos_training_release_policy(mlos_training_resources_t* resources, const char* name) {
  return guarded([&] {
    auto job = find_job(resources);
    if (!job) return mlos_last_error();
    auto n = policy_name(name);
    if (!n) return record_error(n.error());
    return mlos::to_code(job->release_policy(*n));
  });
}

int mlos_training_get_advice(mlos_training_resources_t* resources, mlos_training_advice_t* advice) {
  return guarded([&] {
    auto job = find_job(resources);
    if (!job) return mlos_last_error();
    if (advice == nullptr) return record_error(make_error(MLOS_ERR_INVALID_ARGUMENT, "advice is NULL"));
    if (mlos::Status s = mlos::api::check_struct_size<mlos_training_advice_t>(advice->struct_size); !s) {
      return record_error(s.error());
    }
    auto a = job->advice();
    if (!a) return record_error(a.error());
    mlos_training_advice_t out{};
    out.threads = a->threads;
    out.threads_advised = a->threads_advised ? 1 : 0;
    out.cpu_weight = a->cpu_weight;
    out.policies = static_cast<int>(a->policies.size());
    out.policies_failed = static_cast<int>(a->failed.size());
    return fill_versioned(advice, out);
  });
}

}  // extern "C"
