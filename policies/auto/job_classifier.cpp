// SPDX-License-Identifier: Apache-2.0
#include "job_classifier.h"

namespace mlos::autopolicy {

JobClassifier::Step JobClassifier::observe(const mlos_policy_job_figures_t& now) {
  Step step;
  if (!samples_.empty() && now.now_seconds <= samples_.back().now_seconds) return step;
  samples_.push_back(now);
  // Keep the newest sample at least a window old, and nothing older.
  while (samples_.size() > 2 && now.now_seconds - samples_[1].now_seconds >= c_.window_seconds) samples_.pop_front();
  const mlos_policy_job_figures_t& first = samples_.front();
  // A window short by a tenth still counts (ticks are not exact).
  if (now.now_seconds - first.now_seconds < 0.9 * c_.window_seconds) return step;
  step.features = features_between(first, now);
  if (!step.features) return step;
  ++windows_;
  if (tree_ == nullptr) return step;
  step.decision = tree_->explain(*step.features);
  const WorkloadClass verdict = step.decision->cls;
  if (candidate_ == verdict) {
    ++agreeing_;
  } else {
    candidate_ = verdict;
    agreeing_ = 1;
  }
  if (agreeing_ >= c_.confirm && settled_ != verdict) {
    settled_ = verdict;
    step.settled_changed = true;
  }
  return step;
}

}  // namespace mlos::autopolicy
