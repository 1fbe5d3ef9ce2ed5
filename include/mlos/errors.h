/* SPDX-License-Identifier: Apache-2.0 */
/* Error codes shared by every libmlos entry point.
 *
 * Conventions:
 *  - Functions returning int return MLOS_OK (0) on success and one of the
 *    negative codes below on failure. New codes may be added in later minor
 *    versions; treat an unknown negative value as a generic failure.
 *  - mlos_strerror() names a code. For the detailed reason of the most recent
 *    failure on the calling thread (which file, which errno, which CPU), use
 *    mlos_last_error_message().
 *  - A failing call changes nothing unless its documentation says otherwise.
 *  - No C++ exception ever crosses this API. */
#ifndef MLOS_ERRORS_H_
#define MLOS_ERRORS_H_

#include "mlos/export.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum mlos_error {
  MLOS_OK = 0,
  /* A NULL pointer, negative count, unknown phase or out-of-range value. */
  MLOS_ERR_INVALID_ARGUMENT = -1,
  /* The handle is NULL, already released, or was never issued. */
  MLOS_ERR_INVALID_HANDLE = -2,
  /* More CPUs requested than the process is allowed to use (cgroup cpuset,
   * affinity mask) or than the chosen NUMA node has. */
  MLOS_ERR_INSUFFICIENT_CPUS = -3,
  /* Enough CPUs exist, but other processes hold exclusive claims on them. */
  MLOS_ERR_CPUS_BUSY = -4,
  /* memory_bytes exceeds what the node / cgroup can currently provide, or a
   * locked allocation would exceed the job's memory budget. */
  MLOS_ERR_INSUFFICIENT_MEMORY = -5,
  /* numa_node_preference names a node that does not exist or is not allowed. */
  MLOS_ERR_INVALID_NUMA_NODE = -6,
  /* The operation needs a privilege the process lacks. */
  MLOS_ERR_PERMISSION = -7,
  /* mlock refused: RLIMIT_MEMLOCK too low and no CAP_IPC_LOCK. */
  MLOS_ERR_LOCK_LIMIT = -8,
  /* The kernel or build lacks what this needs; the message says what. */
  MLOS_ERR_UNSUPPORTED = -9,
  /* Part of the published API whose implementation has not landed yet. It
   * does nothing and never pretends to have worked. */
  MLOS_ERR_NOT_IMPLEMENTED = -10,
  /* An unexpected system-call failure; the message carries errno. */
  MLOS_ERR_SYSTEM = -11,
  /* A versioned struct's struct_size is smaller than the first version. */
  MLOS_ERR_VERSION_MISMATCH = -12,
  /* An output buffer was too small; the needed size was reported. */
  MLOS_ERR_BUFFER_TOO_SMALL = -13,
  /* Persistent state (the claim ledger) is unreadable; the message says which
   * file and how to recover. Nothing was changed. */
  MLOS_ERR_STATE_CORRUPT = -14,
  /* Out of memory inside the library. */
  MLOS_ERR_NO_MEMORY = -15,
  /* The thread is not (or no longer) a thread of this process. */
  MLOS_ERR_NO_SUCH_THREAD = -16,
  /* A wait ran past its deadline. */
  MLOS_ERR_TIMEOUT = -17,
  /* mlosd did not answer (MLOS_MODE=daemon with no daemon, or the
   * connection broke). Retrying later may succeed. */
  MLOS_ERR_DAEMON_UNAVAILABLE = -18,
  /* An I/O error (ENOSPC, EIO from write or fsync, a failed rename) while
   * writing, syncing or reading a checkpoint; the message carries errno.
   * A failed save leaves the previous checkpoint intact. */
  MLOS_ERR_IO = -19,
  /* A checkpoint file failed verification (not a regular file, short, bad
   * magic, unknown version, length or checksum mismatch); the message says
   * which. */
  MLOS_ERR_CHECKPOINT_CORRUPT = -20,
  /* No checkpoint (or no such directory) was found. */
  MLOS_ERR_NOT_FOUND = -21,
  /* A peer of a collective group died, left or broke the connection. The
   * group is unusable: every rank must create it again. */
  MLOS_ERR_PEER_LOST = -22,
  /* mlosd refused: the request would take the calling user past one of its
   * per-user quotas (jobs, exclusive CPUs, memory, connections; see
   * docs/security.md). The message names the quota and what is held.
   * Releasing something the user holds, or asking an administrator, helps;
   * retrying as is does not. */
  MLOS_ERR_QUOTA = -23,
  /* A policy module the job asked for crashed, hung or misbehaved (now or
   * recently: it is restarted with backoff). The job runs on mlOS's
   * built-in defaults meanwhile; the message says how the policy's host
   * ended. See docs/policies.md. */
  MLOS_ERR_POLICY_FAILED = -24,
  /* The object is still in use and was left as it was: e.g. a tensor pool
   * destroyed while buffers are acquired. Finish using it, then retry. */
  MLOS_ERR_BUSY = -25,
  /* More GPUs asked for than the machine has, or than the process may use
   * (its CUDA_VISIBLE_DEVICES, its envelope's GPUs), or none can be claimed
   * (no NVML, no NVIDIA GPU: the message says why). See docs/gpu.md. */
  MLOS_ERR_INSUFFICIENT_GPUS = -26,
  /* Enough GPUs exist, but other claims hold them (exclusively, or at all
   * for an exclusive request). */
  MLOS_ERR_GPUS_BUSY = -27
} mlos_error_t;

/* A short, static, human-readable name for an error code ("invalid
 * argument"). Unknown codes give "unknown error". Never NULL. Thread-safe. */
MLOS_API const char* mlos_strerror(int code);

/* The code of the last failing libmlos call on the calling thread (MLOS_OK if
 * none has failed yet). Successful calls do not reset it. */
MLOS_API int mlos_last_error(void);

/* The detailed message of the last failing libmlos call on the calling
 * thread, or "" if none. Valid until the next libmlos call on this thread. */
MLOS_API const char* mlos_last_error_message(void);

#ifdef __cplusplus
}
#endif

#endif /* MLOS_ERRORS_H_ */
