// SPDX-License-Identifier: Apache-2.0
// See policy_binding.h.
#include "policy_binding.h"

#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <mlos/errors.h>
#include <mlos/training.h>

namespace nb = nanobind;
using namespace nb::literals;

namespace mlos_python {
namespace {

mlos_training_resources_t* handle(uintptr_t h) { return reinterpret_cast<mlos_training_resources_t*>(h); }

// Guards direct callers of _core: a C string would end at a NUL byte.
void no_nul(const std::string& s, const char* what) {
  if (s.find('\0') != std::string::npos) throw nb::value_error((std::string(what) + " contains a NUL byte").c_str());
}

int request_policy(uintptr_t h, const std::string& name, const std::string& config_json) {
  no_nul(name, "name");
  no_nul(config_json, "config_json");
  nb::gil_scoped_release unlocked;
  return mlos_training_request_policy(handle(h), name.c_str(), config_json.c_str());
}

int release_policy(uintptr_t h, const std::string& name) {
  no_nul(name, "name");
  nb::gil_scoped_release unlocked;
  return mlos_training_release_policy(handle(h), name.c_str());
}

std::pair<int, nb::dict> advice(uintptr_t h) {
  mlos_training_advice_t a{};
  a.struct_size = sizeof a;
  int rc;
  {
    nb::gil_scoped_release unlocked;
    rc = mlos_training_get_advice(handle(h), &a);
  }
  nb::dict d;
  if (rc != MLOS_OK) return {rc, d};
  d["threads"] = a.threads;
  d["threads_advised"] = a.threads_advised != 0;
  d["cpu_weight"] = a.cpu_weight;
  d["policies"] = a.policies;
  d["policies_failed"] = a.policies_failed;
  return {rc, d};
}

int record_read(uintptr_t h, const std::string& path, uint64_t offset, uint64_t length) {
  no_nul(path, "path");
  return mlos_training_record_read(handle(h), path.c_str(), offset, length);
}

int announce_reads(uintptr_t h, const std::vector<std::string>& paths) {
  std::vector<const char*> c;
  c.reserve(paths.size());
  for (const std::string& p : paths) {
    no_nul(p, "a path");
    c.push_back(p.c_str());
  }
  nb::gil_scoped_release unlocked;
  return mlos_training_announce_reads(handle(h), c.data(), c.size());
}

}  // namespace

void bind_policies(nb::module_& m) {
  m.def("request_policy", &request_policy, "handle"_a, "name"_a, "config_json"_a);
  m.def("release_policy", &release_policy, "handle"_a, "name"_a);
  m.def("advice", &advice, "handle"_a);
  m.def("record_read", &record_read, "handle"_a, "path"_a, "offset"_a, "length"_a);
  m.def("announce_reads", &announce_reads, "handle"_a, "paths"_a);
}

}  // namespace mlos_python
