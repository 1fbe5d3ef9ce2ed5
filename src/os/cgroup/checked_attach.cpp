// SPDX-License-Identifier: Apache-2.0
#include "os/cgroup/checked_attach.h"

#include "os/process_handle.h"

namespace mlos::os {

Status attach_checked(CgroupDriver& driver, const std::string& job, const ProcessId& target, uid_t requester) {
  auto handle = ProcessHandle::open(target.pid);
  if (!handle) return handle.error();
  auto now = handle->identity();
  if (!now) return now.error();
  if (*now != target) {
    return make_error(MLOS_ERR_NO_SUCH_THREAD, "pid " + std::to_string(target.pid) +
                                                   " now names another process (started at tick " +
                                                   std::to_string(now->start_time) + ", not " +
                                                   std::to_string(target.start_time) + ")");
  }
  if (Status s = check_same_user(target.pid, requester); !s) return s;
  if (Status s = driver.attach(job, target.pid); !s) return s;
  if (handle->exited()) {
    return make_error(MLOS_ERR_NO_SUCH_THREAD,
                      "pid " + std::to_string(target.pid) + " exited while it was moved into " + job);
  }
  return Status::Ok();
}

}  // namespace mlos::os
