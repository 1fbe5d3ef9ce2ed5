/* SPDX-License-Identifier: Apache-2.0 */
// The model `auto` runs: a binary decision tree over the workload features,
// read from a versioned JSON file that bench/auto/train.py writes (a
// scikit-learn tree, exported) and validated before use.
//
// Model file (format "mlos-auto-tree", version 1):
//   {"format": "mlos-auto-tree", "version": 1,
//    "features": ["data_loading_share", ...],   // exactly kFeatureNames
//    "classes": ["input_bound", ...],           // exactly kClassNames
//    "trained": {...free-form provenance...},
//    "nodes": [{"feature": 0, "threshold": 0.4, "left": 1, "right": 2},
//              {"class": 0, "confidence": 0.97}, ...]}
// Node 0 is the root. A split sends x[feature] <= threshold left. Children
// come after their parent (left, right > own index), so every walk ends.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "workload_classes.h"
#include "workload_features.h"

namespace mlos::autopolicy {

constexpr const char* kModelFormat = "mlos-auto-tree";
constexpr int kModelVersion = 1;
constexpr size_t kMaxModelNodes = 4096;

struct Decision {
  WorkloadClass cls = WorkloadClass::kComputeBound;
  double confidence = 0;  // the leaf's share of its training samples of this class
  // The tests on the way, as "feature <= threshold" / "feature > threshold".
  std::vector<std::string> why;
};

class DecisionTree {
 public:
  // The tree in `model`, or the reason it is refused: not the format or
  // version above, other features or classes than this build's, a node
  // that is malformed, points backwards or out of range, a threshold that
  // is not finite.
  static std::variant<DecisionTree, std::string> parse(const nlohmann::json& model);
  static std::variant<DecisionTree, std::string> parse_text(const std::string& text);

  WorkloadClass classify(const FeatureVector& x) const;
  // classify() with the confidence and the path (for reports).
  Decision explain(const FeatureVector& x) const;
  size_t nodes() const { return nodes_.size(); }
  const std::string& provenance() const { return provenance_; }

 private:
  struct Node {
    int32_t feature = -1;  // -1: a leaf
    double threshold = 0;
    uint32_t left = 0, right = 0;
    WorkloadClass cls = WorkloadClass::kComputeBound;
    double confidence = 0;
  };
  std::vector<Node> nodes_;
  std::string provenance_;
};

}  // namespace mlos::autopolicy
