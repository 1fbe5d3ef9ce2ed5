// SPDX-License-Identifier: Apache-2.0
#include "api/profile_at_release.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "api/collective_groups.h"
#include "core/profile_report.h"
#include "os/environment.h"

namespace mlos::api {

void report_profile_if_asked(const Job& job, const void* handle) {
  const char* where = os::env("MLOS_PROFILE");
  if (where == nullptr || *where == '\0' || std::strcmp(where, "0") == 0) return;
  auto snap = job.snapshot();
  if (!snap) return;
  ProfileFigures f;
  f.claim_id = snap->claim_id;
  f.num_cpus = static_cast<int>(snap->placement.cpus.size());
  f.phase_ns = snap->phase_ns;
  f.entries = snap->entries;
  const auto comm = CollectiveGroups::instance().tally(handle);
  f.communication_ns = comm.nanoseconds;
  f.collective_calls = comm.calls;
  f.collective_bytes = comm.bytes;
  if (const char* t = os::env("MLOS_TUNE_CHOICE"); t != nullptr) f.tuning = t;
  if (const char* r = os::env("MLOS_TUNE_REASON"); r != nullptr) f.tuning_reason = r;
  const std::string text = format_profile(f);
  const bool to_stderr = std::strcmp(where, "1") == 0 || std::strcmp(where, "stderr") == 0;
  const int fd = to_stderr ? STDERR_FILENO : ::open(where, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return;
  // One write: O_APPEND keeps reports of concurrent processes whole.
  (void)!::write(fd, text.data(), text.size());
  if (!to_stderr) ::close(fd);
}

}  // namespace mlos::api
