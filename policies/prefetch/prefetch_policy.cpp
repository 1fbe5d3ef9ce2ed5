// SPDX-License-Identifier: Apache-2.0
// prefetch: reads ahead of a job, into the page cache, what it will read
// next: the plan it announced (mlos_training_announce_reads) and what its
// read log (mlos_training_record_read) taught the learned model
// (read_model.h). Budget, judging and back-off: prefetcher.h. The host
// applies each fetch as posix_fadvise(WILLNEED) on the range, in the job's
// process (embedded mode), so the page cache it fills is charged to the
// job's memory cgroup like the job's own reads.
//
// Job config (all optional): {"ahead_mb": 1..4096, "block_kb": 4..65536,
// "use_plan": bool, "learn": bool, "min_confidence": 0..1,
// "stop_below_hit_rate": 0..1}. No node config.
#include <mlos/policy.h>

#include <cstdio>
#include <map>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "prefetcher.h"

namespace {

using mlos::prefetch::Prefetcher;
using mlos::prefetch::PrefetchConfig;
using mlos::prefetch::Source;
using nlohmann::json;

constexpr size_t kReadBatch = 256;

struct State {
  const mlos_policy_host_t* host;
  std::map<uint64_t, std::unique_ptr<Prefetcher>> jobs;
};

void write_error(char* error, size_t size, const std::string& message) { std::snprintf(error, size, "%s", message.c_str()); }

// The config's value of `key` as a number in lo..hi, or throws naming it.
double number_in(const json& v, const std::string& key, double lo, double hi) {
  if (!v.is_number() || v.get<double>() < lo || v.get<double>() > hi) {
    throw std::invalid_argument(key + " must be a number in " + std::to_string(lo) + ".." + std::to_string(hi));
  }
  return v.get<double>();
}

bool boolean(const json& v, const std::string& key) {
  if (!v.is_boolean()) throw std::invalid_argument(key + " must be true or false");
  return v.get<bool>();
}

PrefetchConfig parse_config(const char* text) {
  const json c = json::parse(text);
  PrefetchConfig out;
  for (const auto& [key, value] : c.items()) {
    if (key == "ahead_mb") {
      out.ahead_bytes = static_cast<uint64_t>(number_in(value, key, 1, 4096)) << 20;
    } else if (key == "block_kb") {
      out.block_bytes = static_cast<uint64_t>(number_in(value, key, 4, 65536)) << 10;
    } else if (key == "use_plan") {
      out.use_plan = boolean(value, key);
    } else if (key == "learn") {
      out.learn = boolean(value, key);
    } else if (key == "min_confidence") {
      out.min_confidence = number_in(value, key, 0, 1);
    } else if (key == "stop_below_hit_rate") {
      out.stop_below_hit_rate = number_in(value, key, 0, 1);
    } else {
      throw std::invalid_argument("unknown key \"" + key +
                                  "\" (prefetch knows ahead_mb, block_kb, use_plan, learn, min_confidence, "
                                  "stop_below_hit_rate)");
    }
  }
  return out;
}

int init(const mlos_policy_host_t* host, const char* config, void** state, char* error, size_t error_size) {
  if (std::string(config) != "{}") {
    write_error(error, error_size, "prefetch takes no node config");
    return MLOS_ERR_INVALID_ARGUMENT;
  }
  if (host->struct_size < MLOS_POLICY_HOST_SIZE_READS) {
    write_error(error, error_size, "this policy host has no read_log (an older mlOS): prefetch needs it");
    return MLOS_ERR_VERSION_MISMATCH;
  }
  *state = new State{host, {}};
  return MLOS_OK;
}

void fini(void* state) { delete static_cast<State*>(state); }

void log_summary(const State& s, uint64_t job, const Prefetcher& p) {
  const auto& st = p.stats();
  char line[400];
  std::snprintf(line, sizeof line,
                "job %llu: %llu reads, %llu fetches (%.1f MiB); plan hits %llu, wasted %.1f MiB, pauses %llu; "
                "learned hits %llu, wasted %.1f MiB, pauses %llu; model %zu extents; lost reads %llu",
                static_cast<unsigned long long>(job), static_cast<unsigned long long>(st.reads),
                static_cast<unsigned long long>(st.fetches), static_cast<double>(st.fetched_bytes) / (1 << 20),
                static_cast<unsigned long long>(st.hits[0]), static_cast<double>(st.wasted_bytes[0]) / (1 << 20),
                static_cast<unsigned long long>(st.pauses[0]), static_cast<unsigned long long>(st.hits[1]),
                static_cast<double>(st.wasted_bytes[1]) / (1 << 20), static_cast<unsigned long long>(st.pauses[1]),
                p.model().states(), static_cast<unsigned long long>(st.lost_reads));
  s.host->log(s.host->ctx, MLOS_POLICY_LOG_INFO, line);
}

int job_attached(void* state, uint64_t job, const char* config, char* error, size_t error_size) try {
  auto* s = static_cast<State*>(state);
  PrefetchConfig c = parse_config(config);
  size_t count = 0;
  const int rc = s->host->read_log(s->host->ctx, job, nullptr, 0, &count, nullptr);
  if (rc == MLOS_ERR_UNSUPPORTED) {
    write_error(error, error_size,
                "prefetch needs the job's read log, which this engine does not collect (embedded mode does; "
                "mlosd does not yet)");
    return MLOS_ERR_UNSUPPORTED;
  }
  if (rc != MLOS_OK) return rc;
  s->jobs[job] = std::make_unique<Prefetcher>(c);
  return MLOS_OK;
} catch (const std::exception& e) {
  write_error(error, error_size, e.what());
  return MLOS_ERR_INVALID_ARGUMENT;
}

void job_detached(void* state, uint64_t job) {
  auto* s = static_cast<State*>(state);
  auto it = s->jobs.find(job);
  if (it == s->jobs.end()) return;
  log_summary(*s, job, *it->second);
  s->jobs.erase(it);
}

void serve(const mlos_policy_host_t* host, uint64_t job, Prefetcher& p) {
  mlos_policy_read_t reads[kReadBatch];
  for (;;) {
    size_t count = 0;
    uint64_t lost = 0;
    if (host->read_log(host->ctx, job, reads, kReadBatch, &count, &lost) != MLOS_OK) return;
    p.lost(lost);
    for (size_t i = 0; i < count; ++i) p.observe(reads[i].path, reads[i].offset, reads[i].length);
    if (count < kReadBatch) break;
  }
  mlos::prefetch::PlanView view;
  mlos_policy_plan_t plan{};
  plan.struct_size = sizeof plan;
  if (host->read_plan(host->ctx, job, &plan) == MLOS_OK) {
    view.generation = plan.generation;
    for (size_t i = 0; i < plan.count; ++i) view.next.emplace_back(plan.paths[i], plan.sizes[i]);
  }
  mlos_policy_job_figures_t f{};
  f.struct_size = sizeof f;
  if (host->job_figures(host->ctx, job, &f) != MLOS_OK) return;
  for (const auto& fetch : p.next(view, f.memory_limit_bytes, f.memory_pressure_level)) {
    // QUOTA: the reply is full (many jobs this tick); it waits for the next.
    if (host->advise_file_range(host->ctx, job, fetch.path.c_str(), fetch.offset, fetch.length,
                                MLOS_POLICY_FILE_WILLNEED) != MLOS_OK) {
      p.cancel(fetch);
    }
  }
}

void tick(void* state, double) {
  auto* s = static_cast<State*>(state);
  for (auto& [job, prefetcher] : s->jobs) serve(s->host, job, *prefetcher);
}

const mlos_policy_t kPolicy = {
    MLOS_POLICY_ABI_VERSION,
    sizeof(mlos_policy_t),
    "prefetch",
    "reads ahead of the job what it announced and what its read log taught a Markov model, within its memory budget",
    R"({"type":"object","properties":{"ahead_mb":{"type":"number","minimum":1,"maximum":4096},)"
    R"("block_kb":{"type":"number","minimum":4,"maximum":65536},"use_plan":{"type":"boolean"},)"
    R"("learn":{"type":"boolean"},"min_confidence":{"type":"number","minimum":0,"maximum":1},)"
    R"("stop_below_hit_rate":{"type":"number","minimum":0,"maximum":1}},"additionalProperties":false})",
    50,
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
