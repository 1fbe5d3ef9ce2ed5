// SPDX-License-Identifier: Apache-2.0
// thread-governor: advises each job how many intra-op threads to run, so a
// neighbour on one of its CPUs does not make every operator wait for the
// thread that shares it (core/thread_governor.h says why and how). The job
// reads the advice with mlos_training_get_advice (Python: ctx.advice, which
// MLOSTrainingContext applies to torch).
//
// Job config: {"max_threads": N} (1..4096; default: the grant's
// recommended thread count). No node config.
#include <mlos/policy.h>

#include <cstdio>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "core/thread_governor.h"

namespace {

using nlohmann::json;

struct State {
  const mlos_policy_host_t* host;
  std::map<uint64_t, mlos::ThreadGovernor> jobs;
};

void write_error(char* error, size_t size, const std::string& message) { std::snprintf(error, size, "%s", message.c_str()); }

int init(const mlos_policy_host_t* host, const char* config, void** state, char* error, size_t error_size) {
  if (std::string(config) != "{}") {
    write_error(error, error_size, "thread-governor takes no node config");
    return MLOS_ERR_INVALID_ARGUMENT;
  }
  *state = new State{host, {}};
  return MLOS_OK;
}

void fini(void* state) { delete static_cast<State*>(state); }

int job_attached(void* state, uint64_t job, const char* config, char* error, size_t error_size) try {
  auto* s = static_cast<State*>(state);
  const json c = json::parse(config);
  int max_threads = 0;
  for (const auto& [key, value] : c.items()) {
    if (key != "max_threads") {
      write_error(error, error_size, "unknown key \"" + key + "\" (thread-governor knows max_threads)");
      return MLOS_ERR_INVALID_ARGUMENT;
    }
    if (!value.is_number_integer() || value.get<int64_t>() < 1 || value.get<int64_t>() > 4096) {
      write_error(error, error_size, "max_threads must be an integer in 1..4096");
      return MLOS_ERR_INVALID_ARGUMENT;
    }
    max_threads = value.get<int>();
  }
  mlos_policy_job_figures_t f{};
  f.struct_size = sizeof f;
  if (s->host->job_figures(s->host->ctx, job, &f) != MLOS_OK) return MLOS_ERR_NOT_FOUND;
  if (max_threads == 0) max_threads = f.recommended_threads > 0 ? f.recommended_threads : f.num_cpus;
  auto& g = s->jobs.insert_or_assign(job, mlos::ThreadGovernor(f.num_cpus, max_threads)).first->second;
  g.observe(f.now_seconds, f.cpus_busy_seconds, f.owner_cpu_seconds);
  s->host->advise_threads(s->host->ctx, job, g.threads());
  return MLOS_OK;
} catch (const std::exception& e) {
  write_error(error, error_size, std::string("config is not JSON: ") + e.what());
  return MLOS_ERR_INVALID_ARGUMENT;
}

void job_detached(void* state, uint64_t job) { static_cast<State*>(state)->jobs.erase(job); }

void tick(void* state, double) {
  auto* s = static_cast<State*>(state);
  for (auto& [job, governor] : s->jobs) {
    mlos_policy_job_figures_t f{};
    f.struct_size = sizeof f;
    if (s->host->job_figures(s->host->ctx, job, &f) != MLOS_OK) continue;
    if (auto threads = governor.observe(f.now_seconds, f.cpus_busy_seconds, f.owner_cpu_seconds)) {
      s->host->advise_threads(s->host->ctx, job, *threads);
    }
  }
}

const mlos_policy_t kPolicy = {
    MLOS_POLICY_ABI_VERSION,
    sizeof(mlos_policy_t),
    "thread-governor",
    "advises fewer intra-op threads while other work takes the job's CPUs, all of them when they are free",
    R"({"type":"object","properties":{"max_threads":{"type":"integer","minimum":1,"maximum":4096}},"additionalProperties":false})",
    500,
    init,
    fini,
    job_attached,
    job_detached,
    nullptr,
    nullptr,
    tick,
};

}  // namespace

extern "C" MLOS_POLICY_EXPORT const mlos_policy_t* mlos_policy_v1(void) { return &kPolicy; }
