// SPDX-License-Identifier: Apache-2.0
#include <string>

#include "api/last_error.h"
#include "mlos/errors.h"
#include "mlos/version.h"
#include "os/log_sink.h"

namespace mlos {

namespace {
thread_local int t_last_code = MLOS_OK;
thread_local std::string t_last_message;
}  // namespace

int record_error(const Error& e) {
  t_last_code = e.code;
  t_last_message = e.describe();
  log_message(MLOS_LOG_DEBUG, std::string(mlos_strerror(e.code)) + ": " + t_last_message + " [" +
                                  e.where.file_name() + ":" + std::to_string(e.where.line()) + "]");
  return e.code;
}

}  // namespace mlos

extern "C" {

const char* mlos_strerror(int code) {
  switch (code) {
    case MLOS_OK: return "success";
    case MLOS_ERR_INVALID_ARGUMENT: return "invalid argument";
    case MLOS_ERR_INVALID_HANDLE: return "invalid or released handle";
    case MLOS_ERR_INSUFFICIENT_CPUS: return "not enough CPUs allowed";
    case MLOS_ERR_CPUS_BUSY: return "CPUs claimed by other jobs";
    case MLOS_ERR_INSUFFICIENT_MEMORY: return "not enough memory";
    case MLOS_ERR_INVALID_NUMA_NODE: return "invalid NUMA node";
    case MLOS_ERR_PERMISSION: return "permission denied";
    case MLOS_ERR_LOCK_LIMIT: return "memory lock limit reached";
    case MLOS_ERR_UNSUPPORTED: return "not supported here";
    case MLOS_ERR_NOT_IMPLEMENTED: return "not available in this version";
    case MLOS_ERR_SYSTEM: return "system call failed";
    case MLOS_ERR_VERSION_MISMATCH: return "struct version not supported";
    case MLOS_ERR_BUFFER_TOO_SMALL: return "buffer too small";
    case MLOS_ERR_STATE_CORRUPT: return "persistent state corrupt";
    case MLOS_ERR_NO_MEMORY: return "out of memory";
    case MLOS_ERR_NO_SUCH_THREAD: return "no such thread";
    case MLOS_ERR_TIMEOUT: return "timed out";
    case MLOS_ERR_DAEMON_UNAVAILABLE: return "mlosd unavailable";
    case MLOS_ERR_IO: return "I/O error";
    case MLOS_ERR_CHECKPOINT_CORRUPT: return "checkpoint corrupt";
    case MLOS_ERR_NOT_FOUND: return "not found";
    case MLOS_ERR_PEER_LOST: return "collective peer lost";
    case MLOS_ERR_QUOTA: return "per-user quota exceeded";
    case MLOS_ERR_POLICY_FAILED: return "policy module failed";
    case MLOS_ERR_BUSY: return "still in use";
    case MLOS_ERR_INSUFFICIENT_GPUS: return "not enough GPUs";
    case MLOS_ERR_GPUS_BUSY: return "GPUs claimed by other jobs";
    default: return "unknown error";
  }
}

int mlos_last_error(void) { return mlos::t_last_code; }
const char* mlos_last_error_message(void) { return mlos::t_last_message.c_str(); }

void mlos_version(int* major, int* minor, int* patch) {
  if (major) *major = MLOS_VERSION_MAJOR;
  if (minor) *minor = MLOS_VERSION_MINOR;
  if (patch) *patch = MLOS_VERSION_PATCH;
}

const char* mlos_version_string(void) { return MLOS_VERSION_STRING; }

}  // extern "C"
