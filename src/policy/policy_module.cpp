// SPDX-License-Identifier: Apache-2.0
#include "policy/policy_module.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstring>

namespace mlos::policy {

Result<mlos_policy_t> load_policy_module(const std::string& path, const std::string& expected_name,
                                         int module_fd) {
  const std::string open_as = module_fd >= 0 ? "/proc/self/fd/" + std::to_string(module_fd) : path;
  dlerror();
  void* handle = dlopen(open_as.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return make_error(MLOS_ERR_NOT_FOUND, "cannot load policy " + path + ": " + (why ? why : "dlopen failed"));
  }
  // Never dlclose()d: the host exists for this one policy.
  auto entry = reinterpret_cast<mlos_policy_entry_fn>(dlsym(handle, MLOS_POLICY_ENTRY));
  if (entry == nullptr) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT,
                      path + " is not an mlOS policy: it exports no " MLOS_POLICY_ENTRY " (include/mlos/policy.h)");
  }
  const mlos_policy_t* p = entry();
  if (p == nullptr) return make_error(MLOS_ERR_INVALID_ARGUMENT, path + ": " MLOS_POLICY_ENTRY "() returned NULL");
  if (p->abi_version != MLOS_POLICY_ABI_VERSION) {
    return make_error(MLOS_ERR_VERSION_MISMATCH, path + " was built for policy ABI " +
                                                     std::to_string(p->abi_version) + ", this host speaks " +
                                                     std::to_string(MLOS_POLICY_ABI_VERSION));
  }
  if (p->struct_size < MLOS_POLICY_SIZE_V1) {
    return make_error(MLOS_ERR_VERSION_MISMATCH, path + ": its mlos_policy_t is " + std::to_string(p->struct_size) +
                                                     " bytes, smaller than the first version's " +
                                                     std::to_string(MLOS_POLICY_SIZE_V1));
  }
  // Its prefix; fields a module built before them lacks stay NULL / 0.
  mlos_policy_t policy{};
  std::memcpy(static_cast<void*>(&policy), p, std::min<size_t>(p->struct_size, sizeof policy));
  policy.struct_size = sizeof policy;
  const std::string name = policy.name != nullptr ? policy.name : "";
  if (!valid_policy_name(name)) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT, path + ": policy name '" + name.substr(0, 64) +
                                                     "' is not [a-z0-9-]{1,63}");
  }
  if (name != expected_name) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT, path + " calls itself '" + name + "', which clashes with its file name ('" +
                                                     expected_name + "')");
  }
  if (policy.init == nullptr) return make_error(MLOS_ERR_INVALID_ARGUMENT, path + ": policy '" + name + "' has no init");
  return policy;
}

PolicyInfo describe(const mlos_policy_t& policy) {
  PolicyInfo info;
  info.name = policy.name != nullptr ? policy.name : "";
  info.description = policy.description != nullptr ? policy.description : "";
  info.config_schema = policy.config_schema != nullptr ? policy.config_schema : "";
  info.tick_interval_ms = policy.tick_interval_ms == 0 ? 1000 : policy.tick_interval_ms;
  return info;
}

}  // namespace mlos::policy
