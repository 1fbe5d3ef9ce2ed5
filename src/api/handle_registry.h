// Maps C handles to jobs. A handle is an opaque number that is never reused
// within a process, so a released or made-up handle is recognised and
// rejected instead of being dereferenced.
#pragma once

#include <cstdint>
#include <memory>
#include <shared_mutex>
#include <unordered_map>

#include "engine/job.h"
#include "mlos/training.h"

namespace mlos {

class HandleRegistry {
 public:
  static HandleRegistry& instance();

  mlos_training_resources_t* add(std::shared_ptr<Job> job);
  // nullptr if unknown.
  std::shared_ptr<Job> find(const mlos_training_resources_t* handle) const;
  // Removes and returns the job; nullptr if unknown (already released).
  std::shared_ptr<Job> take(mlos_training_resources_t* handle);

 private:
  mutable std::shared_mutex mu_;
  uint64_t next_ = 1;
  std::unordered_map<uintptr_t, std::shared_ptr<Job>> jobs_;
};

}  // namespace mlos
