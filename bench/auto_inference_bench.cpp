// SPDX-License-Identifier: Apache-2.0
// The cost of one `auto` decision (docs/auto.md, "Results"): the shipped
// model's walk alone (classify), the walk with the path it reports
// (explain), and a whole step of the policy's classifier (a sample into the
// window, the features, explain), as the policy runs it every tick. The
// model is read from the file the policy embeds (MLOS_AUTO_MODEL_PATH).
#include <benchmark/benchmark.h>

#include <fstream>
#include <random>
#include <sstream>
#include <vector>

#include "decision_tree.h"
#include "job_classifier.h"

namespace {

using mlos::autopolicy::DecisionTree;
using mlos::autopolicy::FeatureVector;

const DecisionTree* shipped_model() {
  static const DecisionTree* tree = [] () -> const DecisionTree* {
    std::ifstream in(MLOS_AUTO_MODEL_PATH);
    std::stringstream text;
    text << in.rdbuf();
    auto t = DecisionTree::parse_text(text.str());
    return std::holds_alternative<DecisionTree>(t) ? new DecisionTree(std::get<DecisionTree>(std::move(t))) : nullptr;
  }();
  return tree;
}

// Feature vectors spread over the ranges the features take (shares 0..1,
// pressure -1..2), seeded: every run walks the same inputs.
std::vector<FeatureVector> inputs() {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> share(0, 1);
  std::vector<FeatureVector> out(1024);
  for (auto& x : out) {
    for (auto& v : x) v = share(rng);
    x[mlos::autopolicy::kMemoryPressure] = static_cast<int>(share(rng) * 4) - 1;
    x[mlos::autopolicy::kPhaseChangesPerSecond] = share(rng) * 400;
  }
  return out;
}

void BM_Classify(benchmark::State& state) {
  const DecisionTree* t = shipped_model();
  if (t == nullptr) return state.SkipWithError("no valid model at " MLOS_AUTO_MODEL_PATH);
  const auto xs = inputs();
  size_t i = 0;
  for (auto _ : state) benchmark::DoNotOptimize(t->classify(xs[i++ & 1023]));
}
BENCHMARK(BM_Classify);

void BM_Explain(benchmark::State& state) {
  const DecisionTree* t = shipped_model();
  if (t == nullptr) return state.SkipWithError("no valid model at " MLOS_AUTO_MODEL_PATH);
  const auto xs = inputs();
  size_t i = 0;
  for (auto _ : state) benchmark::DoNotOptimize(t->explain(xs[i++ & 1023]));
}
BENCHMARK(BM_Explain);

// One tick of the policy for one job: what its inference_us measures.
void BM_ClassifierStep(benchmark::State& state) {
  const DecisionTree* t = shipped_model();
  if (t == nullptr) return state.SkipWithError("no valid model at " MLOS_AUTO_MODEL_PATH);
  mlos::autopolicy::JobClassifier c(t, {});
  mlos_policy_job_figures_t f{};
  f.struct_size = sizeof f;
  f.num_cpus = 2;
  f.cpu_seconds = f.cpus_busy_seconds = f.collective_seconds = 0;
  for (auto _ : state) {
    f.now_seconds += 1;
    f.phase_seconds[MLOS_TRAINING_PHASE_FORWARD] += 0.3;
    f.phase_seconds[MLOS_TRAINING_PHASE_BACKWARD] += 0.5;
    f.phase_entries[MLOS_TRAINING_PHASE_FORWARD] += 10;
    f.cpu_seconds += 1.6;
    f.cpus_busy_seconds += 1.9;
    benchmark::DoNotOptimize(c.observe(f));
  }
}
BENCHMARK(BM_ClassifierStep);

}  // namespace

BENCHMARK_MAIN();
