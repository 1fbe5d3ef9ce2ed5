/* SPDX-License-Identifier: Apache-2.0 */
// Maps C handles to jobs. A handle is an opaque number that is never reused
// within a process, so a released or made-up handle is recognised and
// rejected instead of being dereferenced.
#pragma once

#include <memory>

#include "api/handle_table.h"
#include "engine/job.h"
#include "mlos/training.h"

namespace mlos {

class HandleRegistry {
 public:
  static HandleRegistry& instance();

  mlos_training_resources_t* add(std::shared_ptr<Job> job) { return table_.add(std::move(job)); }
  // nullptr if unknown.
  std::shared_ptr<Job> find(const mlos_training_resources_t* handle) const { return table_.find(handle); }
  // Removes and returns the job; nullptr if unknown (already released).
  std::shared_ptr<Job> take(mlos_training_resources_t* handle) { return table_.take(handle); }

 private:
  HandleTable<Job, mlos_training_resources_t, 0x6d6c /* "ml" */> table_;
};

}  // namespace mlos
