// SPDX-License-Identifier: Apache-2.0
// auto: classifies each of its jobs from its figures (workload_features.h)
// with a small decision tree trained offline (decision_tree.h,
// bench/auto/train.py), and gives it what its class needs (class_plan.h):
// policies attached and released through the host, a placement
// recommended, memory protected. It re-checks every tick; the settled class
// changes only when `confirm` windows agree. Every window's verdict and the
// features behind it go out as the job's report (`mlos status`).
//
// Node config: {} or {"model": {...a model file's object...}} (replaces the
// model built in). Job config (all optional): {"act": bool (false: classify
// and report only), "window_s": 1..60, "confirm": 1..10}.
#include <mlos/policy.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <variant>

#include <nlohmann/json.hpp>

#include "class_plan.h"
#include "decision_tree.h"
#include "job_classifier.h"

extern const char kMlosAutoBuiltInModel[];  // auto_model_data.cpp, generated from the model file

namespace {

using mlos::autopolicy::ClassifierConfig;
using mlos::autopolicy::ClassPlan;
using mlos::autopolicy::DecisionTree;
using mlos::autopolicy::FeatureVector;
using mlos::autopolicy::JobClassifier;
using nlohmann::json;

struct JobState {
  ClassifierConfig config;
  bool act = true;
  std::unique_ptr<JobClassifier> classifier;
  std::set<std::string> attached;  // policies auto attached to the job
  std::optional<int> placement;    // the placement it last recommended
  bool memory_protected = false;
  double last_inference_us = 0;
};

struct State {
  const mlos_policy_host_t* host = nullptr;
  std::optional<DecisionTree> tree;  // none: this build has no model, jobs are only observed
  std::map<uint64_t, JobState> jobs;
};

void write_error(char* error, size_t size, const std::string& message) { std::snprintf(error, size, "%s", message.c_str()); }

double number_in(const json& v, const std::string& key, double lo, double hi) {
  if (!v.is_number() || v.get<double>() < lo || v.get<double>() > hi) {
    throw std::invalid_argument(key + " must be a number in " + std::to_string(lo) + ".." + std::to_string(hi));
  }
  return v.get<double>();
}

int init(const mlos_policy_host_t* host, const char* config, void** state, char* error, size_t error_size) try {
  if (host->struct_size < MLOS_POLICY_HOST_SIZE_JOB_POLICIES) {
    write_error(error, error_size, "this policy host cannot attach policies for a policy (an older mlOS): auto needs it");
    return MLOS_ERR_VERSION_MISMATCH;
  }
  const json c = json::parse(config);
  for (const auto& [key, value] : c.items()) {
    if (key != "model") throw std::invalid_argument("unknown key \"" + key + "\" (auto's node config knows model)");
  }
  auto s = std::make_unique<State>();
  s->host = host;
  std::variant<DecisionTree, std::string> tree = std::string();
  if (c.contains("model")) {
    tree = DecisionTree::parse(c["model"]);
  } else if (kMlosAutoBuiltInModel[0] != '\0') {
    tree = DecisionTree::parse_text(kMlosAutoBuiltInModel);
  } else {
    // A build without a model still measures: {"act": false} jobs get
    // their features reported (bench/auto/record.py records them).
    host->log(host->ctx, MLOS_POLICY_LOG_WARN,
              "this build has no trained model (policies/auto/model/auto-tree.json): jobs can only be observed "
              "({\"act\": false})");
    *state = s.release();
    return MLOS_OK;
  }
  if (auto* why = std::get_if<std::string>(&tree)) {
    write_error(error, error_size, "auto's model is refused: " + *why);
    return MLOS_ERR_VERSION_MISMATCH;
  }
  s->tree = std::get<DecisionTree>(std::move(tree));
  *state = s.release();
  return MLOS_OK;
} catch (const std::exception& e) {
  write_error(error, error_size, e.what());
  return MLOS_ERR_INVALID_ARGUMENT;
}

void fini(void* state) { delete static_cast<State*>(state); }

int job_attached(void* state, uint64_t job, const char* config, char* error, size_t error_size) try {
  auto* s = static_cast<State*>(state);
  JobState j;
  const json c = json::parse(config);  // named: items() of a temporary would outlive it
  for (const auto& [key, value] : c.items()) {
    if (key == "act") {
      if (!value.is_boolean()) throw std::invalid_argument("act must be true or false");
      j.act = value.get<bool>();
    } else if (key == "window_s") {
      j.config.window_seconds = number_in(value, key, 1, 60);
    } else if (key == "confirm") {
      j.config.confirm = static_cast<int>(number_in(value, key, 1, 10));
    } else {
      throw std::invalid_argument("unknown key \"" + key + "\" (auto knows act, window_s, confirm)");
    }
  }
  if (j.act && !s->tree) {
    write_error(error, error_size,
                "this build of auto has no trained model (policies/auto/model/auto-tree.json), so it cannot act: "
                "attach it with {\"act\": false} to observe the job");
    return MLOS_ERR_UNSUPPORTED;
  }
  j.classifier = std::make_unique<JobClassifier>(s->tree ? &*s->tree : nullptr, j.config);
  s->jobs[job] = std::move(j);
  return MLOS_OK;
} catch (const std::exception& e) {
  write_error(error, error_size, e.what());
  return MLOS_ERR_INVALID_ARGUMENT;
}

void job_detached(void* state, uint64_t job) { static_cast<State*>(state)->jobs.erase(job); }

// Makes the job's policies, placement and memory protection what `plan`
// says (what auto attached for an earlier class and the plan does not
// name is released).
void carry_out(const State& s, uint64_t job, JobState& j, const ClassPlan& plan,
               const mlos_policy_job_figures_t& f) {
  const mlos_policy_host_t* h = s.host;
  std::set<std::string> wanted;
  for (const auto& [name, config] : plan.policies) {
    wanted.insert(name);
    if (!j.attached.count(name) && h->request_policy(h->ctx, job, name.c_str(), config.c_str()) == MLOS_OK) {
      j.attached.insert(name);
    }
  }
  for (auto it = j.attached.begin(); it != j.attached.end();) {
    if (wanted.count(*it)) {
      ++it;
      continue;
    }
    (void)h->release_policy(h->ctx, job, it->c_str());
    it = j.attached.erase(it);
  }
  const int placement = plan.placement.value_or(MLOS_POLICY_PLACEMENT_SHARED);
  if (j.placement != placement) {
    const std::string reason = plan.placement ? plan.placement_reason : "no class that needs CPUs of its own";
    if (h->recommend_placement(h->ctx, job, placement, reason.c_str()) == MLOS_OK) j.placement = placement;
  }
  if (plan.protect_memory && !j.memory_protected && f.memory_known && f.memory_limit_bytes > 0) {
    // memory.low at what it holds now: reclaim goes elsewhere first.
    const uint64_t low = f.memory_bytes < f.memory_limit_bytes ? f.memory_bytes : f.memory_limit_bytes;
    j.memory_protected = h->set_memory_low(h->ctx, job, low) == MLOS_OK;
  } else if (!plan.protect_memory && j.memory_protected) {
    j.memory_protected = h->set_memory_low(h->ctx, job, 0) != MLOS_OK;
  }
}

void report(const State& s, uint64_t job, const JobState& j, const JobClassifier::Step& step) {
  json features = json::object();
  for (int i = 0; i < mlos::autopolicy::kFeatureCount; ++i) {
    features[mlos::autopolicy::kFeatureNames[i]] = (*step.features)[i];
  }
  json r{{"window", step.decision ? json(mlos::autopolicy::class_name(step.decision->cls)) : json()},
         {"confidence", step.decision ? step.decision->confidence : 0},
         {"why", step.decision ? step.decision->why : std::vector<std::string>{}},
         {"features", std::move(features)},
         {"windows", j.classifier->windows()},
         {"window_s", j.config.window_seconds},
         {"inference_us", j.last_inference_us},
         {"acting", j.act},
         {"attached", j.attached}};
  r["class"] = j.classifier->settled() ? json(mlos::autopolicy::class_name(*j.classifier->settled())) : json(nullptr);
  const std::string text = r.dump();
  (void)s.host->report(s.host->ctx, job, text.c_str());  // refused only if over the bound: the next tick tries again
}

void tick(void* state, double) try {
  auto* s = static_cast<State*>(state);
  for (auto& [job, j] : s->jobs) {
    mlos_policy_job_figures_t f{};
    f.struct_size = sizeof f;
    if (s->host->job_figures(s->host->ctx, job, &f) != MLOS_OK) continue;
    const auto t0 = std::chrono::steady_clock::now();
    JobClassifier::Step step = j.classifier->observe(f);
    j.last_inference_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    if (!step.features) continue;
    if (step.settled_changed) {
      char line[160];
      std::snprintf(line, sizeof line, "job %llu: %s (after %d windows)", static_cast<unsigned long long>(job),
                    mlos::autopolicy::class_name(*j.classifier->settled()), j.classifier->windows());
      s->host->log(s->host->ctx, MLOS_POLICY_LOG_INFO, line);
      if (j.act) carry_out(*s, job, j, mlos::autopolicy::plan_for(*j.classifier->settled(), *step.features), f);
    }
    report(*s, job, j, step);
  }
} catch (const std::exception& e) {
  // No exception may leave a policy: say what happened; the next tick tries again.
  auto* s = static_cast<State*>(state);
  s->host->log(s->host->ctx, MLOS_POLICY_LOG_ERROR, (std::string("tick: ") + e.what()).c_str());
}

const mlos_policy_t kPolicy = {
    MLOS_POLICY_ABI_VERSION,
    sizeof(mlos_policy_t),
    "auto",
    "classifies the job (input-, compute-, memory-, communication-bound or latency-sensitive inference) with a "
    "trained decision tree and gives it the policies and placement its class needs",
    R"({"type":"object","properties":{"act":{"type":"boolean"},)"
    R"("window_s":{"type":"number","minimum":1,"maximum":60},)"
    R"("confirm":{"type":"number","minimum":1,"maximum":10}},"additionalProperties":false})",
    1000,
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
