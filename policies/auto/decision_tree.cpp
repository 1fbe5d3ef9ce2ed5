// SPDX-License-Identifier: Apache-2.0
#include "decision_tree.h"

#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace mlos::autopolicy {

using nlohmann::json;

namespace {

template <class T>
T field(const json& j, const char* key, const std::string& where) {
  if (!j.is_object() || !j.contains(key)) throw std::invalid_argument(where + " has no \"" + key + "\"");
  try {
    return j.at(key).get<T>();
  } catch (const json::exception&) {
    throw std::invalid_argument(where + ": \"" + key + "\" has the wrong type");
  }
}

// `names` equals `expected`, or throws naming the first difference.
template <size_t N>
void same_names(const json& names, const std::array<const char*, N>& expected, const char* what) {
  if (!names.is_array() || names.size() != N) {
    throw std::invalid_argument(std::string("the model has ") + (names.is_array() ? std::to_string(names.size()) : "no") +
                                " " + what + ", this build has " + std::to_string(N) + " (a model for another version?)");
  }
  for (size_t i = 0; i < N; ++i) {
    if (!names[i].is_string() || names[i].get<std::string>() != expected[i]) {
      throw std::invalid_argument(std::string(what) + " " + std::to_string(i) + " is " + names[i].dump() +
                                  ", this build expects \"" + expected[i] + "\" (a model for another version?)");
    }
  }
}

std::string format_threshold(double t) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", t);
  return buf;
}

}  // namespace

std::variant<DecisionTree, std::string> DecisionTree::parse(const json& model) {
  try {
    if (!model.is_object()) throw std::invalid_argument("the model is not a JSON object");
    const auto format = field<std::string>(model, "format", "the model");
    if (format != kModelFormat) throw std::invalid_argument("format \"" + format + "\" is not " + kModelFormat);
    const auto version = field<int>(model, "version", "the model");
    if (version != kModelVersion) {
      throw std::invalid_argument("model version " + std::to_string(version) + ", this build reads version " +
                                  std::to_string(kModelVersion));
    }
    same_names(model.value("features", json()), kFeatureNames, "features");
    same_names(model.value("classes", json()), kClassNames, "classes");
    const json& nodes = model.value("nodes", json());
    if (!nodes.is_array() || nodes.empty() || nodes.size() > kMaxModelNodes) {
      throw std::invalid_argument("\"nodes\" must be an array of 1.." + std::to_string(kMaxModelNodes) + " nodes");
    }
    DecisionTree tree;
    tree.nodes_.reserve(nodes.size());
    for (size_t i = 0; i < nodes.size(); ++i) {
      const json& n = nodes[i];
      const std::string where = "node " + std::to_string(i);
      Node out;
      if (n.is_object() && n.contains("class")) {
        const auto c = field<int>(n, "class", where);
        if (c < 0 || c >= kClassCount) throw std::invalid_argument(where + ": class " + std::to_string(c) + " out of range");
        out.cls = static_cast<WorkloadClass>(c);
        out.confidence = field<double>(n, "confidence", where);
        if (!(out.confidence >= 0 && out.confidence <= 1)) throw std::invalid_argument(where + ": confidence outside 0..1");
      } else {
        out.feature = field<int32_t>(n, "feature", where);
        out.threshold = field<double>(n, "threshold", where);
        const auto left = field<int64_t>(n, "left", where), right = field<int64_t>(n, "right", where);
        if (out.feature < 0 || out.feature >= kFeatureCount) throw std::invalid_argument(where + ": feature out of range");
        if (!std::isfinite(out.threshold)) throw std::invalid_argument(where + ": threshold is not finite");
        const auto self = static_cast<int64_t>(i), count = static_cast<int64_t>(nodes.size());
        if (left <= self || right <= self || left >= count || right >= count) {
          throw std::invalid_argument(where + ": children must come after it and exist");
        }
        out.left = static_cast<uint32_t>(left);
        out.right = static_cast<uint32_t>(right);
      }
      tree.nodes_.push_back(out);
    }
    if (model.contains("trained")) tree.provenance_ = model["trained"].dump();
    return tree;
  } catch (const std::exception& e) {
    return std::string(e.what());
  }
}

std::variant<DecisionTree, std::string> DecisionTree::parse_text(const std::string& text) {
  const json model = json::parse(text, nullptr, false);
  if (model.is_discarded()) return std::string("the model is not valid JSON");
  return parse(model);
}

WorkloadClass DecisionTree::classify(const FeatureVector& x) const {
  uint32_t i = 0;
  while (nodes_[i].feature >= 0) {
    const Node& n = nodes_[i];
    i = x[n.feature] <= n.threshold ? n.left : n.right;
  }
  return nodes_[i].cls;
}

Decision DecisionTree::explain(const FeatureVector& x) const {
  Decision d;
  uint32_t i = 0;
  while (nodes_[i].feature >= 0) {
    const Node& n = nodes_[i];
    const bool left = x[n.feature] <= n.threshold;
    d.why.push_back(std::string(kFeatureNames[n.feature]) + (left ? " <= " : " > ") + format_threshold(n.threshold));
    i = left ? n.left : n.right;
  }
  d.cls = nodes_[i].cls;
  d.confidence = nodes_[i].confidence;
  return d;
}

}  // namespace mlos::autopolicy
