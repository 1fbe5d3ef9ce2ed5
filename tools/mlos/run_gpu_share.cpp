// SPDX-License-Identifier: Apache-2.0
#include "run_gpu_share.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "cli_output.h"
#include "gpushare/mps_detect.h"
#include "gpushare/share_file.h"
#include "install_paths.h"
#include "os/ledger_file.h"
#include "os/own_directory.h"
#include "os/process_info.h"

namespace mlos::cli {

namespace {

// "<pid>-<start time>.share" of a process that is gone.
bool of_exited_process(const std::string& name) {
  int pid = 0;
  unsigned long long start = 0;
  char tail[16] = {0};
  if (sscanf(name.c_str(), "%d-%llu.%15s", &pid, &start, tail) != 3 || std::string(tail) != "share") return false;
  return !os::is_alive(ProcessId{pid, start});
}

void remove_stale(const std::string& dir) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (of_exited_process(name)) unlink((dir + "/" + name).c_str());
  }
  closedir(d);
}

}  // namespace

Result<GpuShareRequest> parse_gpu_share(const std::string& memory, int share_percent, bool has_gpus) {
  GpuShareRequest r;
  if (!memory.empty()) {
    auto bytes = parse_size(memory);
    if (!bytes) return bytes.error();
    if (*bytes == 0) return make_error(MLOS_ERR_INVALID_ARGUMENT, "--gpu-memory must be more than 0 bytes");
    r.memory_limit = *bytes;
  }
  if (share_percent != -1 && (share_percent < 1 || share_percent > 100)) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT,
                      "--gpu-share must be a percentage from 1 to 100, got " + std::to_string(share_percent));
  }
  r.share_percent = std::max(share_percent, 0);
  if (r.wanted() && !has_gpus) {
    return make_error(MLOS_ERR_INVALID_ARGUMENT, std::string(memory.empty() ? "--gpu-share" : "--gpu-memory") +
                                                     " needs --gpus: the limits apply to the GPUs the job claims");
  }
  return r;
}

Result<GpuShareSetup> prepare_gpu_share(const GpuShareRequest& request) {
  GpuShareSetup s;
  s.library = gpushare_library();
  if (s.library.empty()) {
    return make_error(MLOS_ERR_UNSUPPORTED,
                      "--gpu-memory/--gpu-share need libmlos-gpushare.so, which this build of mlOS lacks "
                      "(it was built without cuda.h; docs/gpu.md)");
  }
  if (request.share_percent > 0 && request.share_percent < 100) {
    const gpushare::MpsState mps = gpushare::detect_mps();
    s.mechanism = mps.running ? "mps" : "throttle";
    s.note = mps.running ? "compute share by MPS (control daemon at " + mps.pipe_directory + ")"
                         : "compute share by launch throttling (" + mps.why + ")";
  }
  // Both must be this user's own before anything in them is removed or
  // created: /tmp/mlos-<uid> may have been made by someone else, whose file
  // the job would then map (docs/security.md, "GPU share files").
  const std::string runtime = os::default_runtime_dir();
  if (Status st = os::make_own_directory(runtime, 0700, "runtime directory"); !st) return st.error();
  const std::string dir = runtime + "/gpushare";
  if (Status st = os::make_own_directory(dir, 0700, "GPU share directory"); !st) return st.error();
  remove_stale(dir);
  auto self = os::process_id(getpid());
  if (!self) return self.error();
  s.share_file = dir + "/" + std::to_string(self->pid) + "-" + std::to_string(self->start_time) + ".share";
  unlink(s.share_file.c_str());  // ours from an exec that failed before: this process owns the name
  const std::string why = gpushare::create_share_file(
      s.share_file, {request.memory_limit, request.share_percent == 100 ? 0 : request.share_percent});
  if (!why.empty()) return make_error(MLOS_ERR_SYSTEM, why);
  return s;
}

void export_gpu_share(const GpuShareRequest& request, const GpuShareSetup& setup) {
  const char* preload = std::getenv("LD_PRELOAD");
  const std::string rest = preload != nullptr && *preload ? std::string(":") + preload : "";
  setenv("LD_PRELOAD", (setup.library + rest).c_str(), 1);
  setenv("MLOS_GPUSHARE_STATE", setup.share_file.c_str(), 1);
  // Informational beside the file (which holds the limits); unset when 0.
  unsetenv("MLOS_GPU_MEMORY_LIMIT");
  unsetenv("MLOS_GPU_SHARE");
  if (request.memory_limit != 0) setenv("MLOS_GPU_MEMORY_LIMIT", std::to_string(request.memory_limit).c_str(), 1);
  if (request.share_percent != 0) setenv("MLOS_GPU_SHARE", std::to_string(request.share_percent).c_str(), 1);
  if (!setup.mechanism.empty()) setenv("MLOS_GPU_SHARE_MECHANISM", setup.mechanism.c_str(), 1);
  if (setup.mechanism == "mps") {
    setenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", std::to_string(request.share_percent).c_str(), 1);
  }
}

std::string gpu_share_text(const GpuShareRequest& request, const GpuShareSetup& setup) {
  std::string out;
  if (request.memory_limit != 0) out = human_bytes(request.memory_limit) + " per GPU";
  if (request.share_percent != 0) {
    out += (out.empty() ? "" : ", ") + std::to_string(request.share_percent) + " % compute";
    if (!setup.mechanism.empty()) out += " (" + setup.mechanism + ")";
  }
  return out;
}

void discard_gpu_share(const GpuShareSetup& setup) {
  if (!setup.share_file.empty()) unlink(setup.share_file.c_str());
}

}  // namespace mlos::cli
