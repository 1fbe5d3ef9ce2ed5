/* SPDX-License-Identifier: Apache-2.0 */
// One job's classification over time: a sliding window of its figures, the
// model's verdict on each window, and a settled class that changes only
// when `confirm` windows in a row agree (so one odd window, a checkpoint or
// an evaluation pass, does not swap the job's policies back and forth).
#pragma once

#include <deque>
#include <optional>

#include <mlos/policy.h>

#include "decision_tree.h"

namespace mlos::autopolicy {

struct ClassifierConfig {
  double window_seconds = 3;  // features are taken over this much of the job's recent past
  int confirm = 2;            // windows in a row that must agree to change the settled class
};

class JobClassifier {
 public:
  // `tree` nullptr: no model, so windows give features and no verdict.
  JobClassifier(const DecisionTree* tree, ClassifierConfig config) : tree_(tree), c_(config) {}

  struct Step {
    std::optional<FeatureVector> features;  // nullopt: the window is not full yet
    std::optional<Decision> decision;       // this window's verdict (nullopt without a model)
    bool settled_changed = false;           // settled() changed with this sample
  };
  // Takes the job's figures now (samples must come in time order).
  Step observe(const mlos_policy_job_figures_t& now);

  std::optional<WorkloadClass> settled() const { return settled_; }
  int windows() const { return windows_; }  // full windows seen so far

 private:
  const DecisionTree* tree_;
  ClassifierConfig c_;
  std::deque<mlos_policy_job_figures_t> samples_;
  std::optional<WorkloadClass> settled_, candidate_;
  int agreeing_ = 0, windows_ = 0;
};

}  // namespace mlos::autopolicy
