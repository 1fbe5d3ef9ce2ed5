// SPDX-License-Identifier: Apache-2.0
// phase-weights: a job's CPU weight follows its training phase (a job in
// BACKWARD or CHECKPOINT outweighs one in IDLE or DATA_LOADING on the CPUs
// they share), scaled by its priority. Node config: mlosd's "arbitration"
// object ({"phase_weights": {"BACKWARD": 300, ...}}); no job config.
// mlosd loads it for every job by default; its built-in fallback is the
// same table (core/phase_weights.h).
#include <mlos/policy.h>

#include <cstdio>
#include <new>
#include <string>

#include <nlohmann/json.hpp>

#include "core/phase_weights.h"

namespace {

using mlos::PhaseWeights;

struct State {
  const mlos_policy_host_t* host;
  PhaseWeights table;
};

void write_error(char* error, size_t size, const std::string& message) { std::snprintf(error, size, "%s", message.c_str()); }

void follow(State* s, uint64_t job, int phase) {
  mlos_policy_job_figures_t f{};
  f.struct_size = sizeof f;
  if (s->host->job_figures(s->host->ctx, job, &f) != MLOS_OK) return;
  s->host->set_cpu_weight(s->host->ctx, job,
                          s->table.weight(static_cast<mlos_training_phase_t>(phase), f.priority));
}

int init(const mlos_policy_host_t* host, const char* config, void** state, char* error, size_t error_size) try {
  auto parsed = nlohmann::json::parse(config);
  auto table = PhaseWeights::from_json(parsed);
  if (!table) {
    write_error(error, error_size, table.error().message);
    return MLOS_ERR_INVALID_ARGUMENT;
  }
  *state = new State{host, *table};
  return MLOS_OK;
} catch (const std::exception& e) {
  write_error(error, error_size, std::string("config is not JSON: ") + e.what());
  return MLOS_ERR_INVALID_ARGUMENT;
}

void fini(void* state) { delete static_cast<State*>(state); }

int job_attached(void* state, uint64_t job, const char* config, char* error, size_t error_size) {
  if (std::string(config) != "{}") {
    write_error(error, error_size, "phase-weights takes no job config (its table is the node's)");
    return MLOS_ERR_INVALID_ARGUMENT;
  }
  auto* s = static_cast<State*>(state);
  mlos_policy_job_figures_t f{};
  f.struct_size = sizeof f;
  // A job that has not marked a phase yet computes like FORWARD (the
  // kernel's default weight, scaled by priority), as mlosd's fallback does.
  if (s->host->job_figures(s->host->ctx, job, &f) == MLOS_OK) {
    bool marked = false;
    for (uint64_t n : f.phase_entries) marked = marked || n != 0;
    follow(s, job, marked ? f.phase : MLOS_TRAINING_PHASE_FORWARD);
  }
  return MLOS_OK;
}

void phase_changed(void* state, uint64_t job, int, int new_phase) { follow(static_cast<State*>(state), job, new_phase); }

const mlos_policy_t kPolicy = {
    MLOS_POLICY_ABI_VERSION,
    sizeof(mlos_policy_t),
    "phase-weights",
    "CPU weight follows the training phase (BACKWARD and CHECKPOINT outweigh IDLE and DATA_LOADING)",
    R"({"type":"object","properties":{"phase_weights":{"type":"object","additionalProperties":{"type":"integer","minimum":1,"maximum":10000}}},"additionalProperties":false})",
    0,
    init,
    fini,
    job_attached,
    nullptr,
    phase_changed,
    nullptr,
    nullptr,
};

}  // namespace

extern "C" MLOS_POLICY_EXPORT const mlos_policy_t* mlos_policy_v1(void) { return &kPolicy; }
