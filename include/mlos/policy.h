/* SPDX-License-Identifier: Apache-2.0 */
/* mlOS policy modules: the C ABI between a policy and the host that runs it.
 *
 * A policy is a shared object that exports one symbol, MLOS_POLICY_ENTRY
 * ("mlos_policy_v1"), a function returning a pointer to a static
 * mlos_policy_t. It never runs inside mlosd or inside a training process:
 * every loaded policy lives in its own host process (mlos-policyhost),
 * unprivileged, under a seccomp filter and memory limits, fed with events
 * over a socket. A policy that crashes, hangs or misbehaves costs only
 * itself: the jobs it advised fall back to mlOS's built-in defaults.
 *
 * Conventions:
 *  - Plain C: no C++ type crosses this boundary, and no exception may leave
 *    a policy's function (the host treats an escaping exception as a crash).
 *  - Structs begin with a size or version word; the host refuses a policy
 *    whose abi_version differs from MLOS_POLICY_ABI_VERSION or whose
 *    struct_size is smaller than the host's (MLOS_ERR_VERSION_MISMATCH).
 *  - Every function of a policy is called from one thread of the host, one
 *    call at a time, and must return quickly: the host answers each event
 *    within a deadline (1 s by default) or the policy is declared hung,
 *    killed and restarted.
 *  - The policy acts only through mlos_policy_host_t. Actions are requests:
 *    the host checks each against the job's grant (its CPUs, its memory
 *    limit, the jobs attached to this policy) and applies it or refuses and
 *    counts it. An action's return value says whether it was queued, not
 *    whether it took effect.
 *  - Config is JSON text. A policy parses it strictly: an unknown key or a
 *    bad value makes init/job_attached fail with MLOS_ERR_INVALID_ARGUMENT
 *    and a message naming the key.
 *
 * docs/policies.md walks through writing one (policies/example is that
 * walk-through, built by the tests).
 */
#ifndef MLOS_POLICY_H_
#define MLOS_POLICY_H_

#include <stddef.h>
#include <stdint.h>

#include "mlos/errors.h"
#include "mlos/training.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MLOS_POLICY_ABI_VERSION 1u
#define MLOS_POLICY_ENTRY "mlos_policy_v1"

/* The longest cpu list (e.g. "0-3,8-11") a figures struct carries, NUL
 * included; a longer list is cut at a comma and cpus_truncated is set. */
#define MLOS_POLICY_CPU_LIST_MAX 256

/* What the host knows about a job, as last sampled. A figure the host could
 * not read is negative (times) or 0 with its *_known flag 0. */
typedef struct mlos_policy_job_figures {
  uint32_t struct_size;          /* sizeof(mlos_policy_job_figures_t), set by the caller */
  uint64_t job;                  /* the job's id on this node */
  double now_seconds;            /* monotonic clock at sampling */
  int phase;                     /* mlos_training_phase_t */
  int priority;                  /* MLOS_PRIORITY_MIN..MAX */
  double phase_seconds[MLOS_TRAINING_PHASE_COUNT]; /* time spent in each phase so far */
  uint64_t phase_entries[MLOS_TRAINING_PHASE_COUNT];
  int num_cpus;                  /* CPUs granted */
  char cpus[MLOS_POLICY_CPU_LIST_MAX]; /* the same as a cpu list, e.g. "0-3" */
  int cpus_truncated;
  int primary_node;              /* NUMA node, -1 if none */
  int recommended_threads;       /* the grant's thread count (physical cores) */
  double cpu_seconds;            /* CPU time of the job's cgroup (all its processes), -1 unknown */
  double owner_cpu_seconds;      /* CPU time of the job's owner process, -1 unknown */
  double cpus_busy_seconds;      /* busy time of the job's CPUs since boot, every process, -1 unknown */
  uint64_t memory_bytes;         /* memory charged to the job */
  uint64_t memory_limit_bytes;   /* its hard limit; 0: none */
  int memory_known;              /* 1 when memory_bytes is a reading */
  int memory_pressure_level;     /* mlos_memory_pressure_level_t, -1 when not watched */
  /* ---- Added later (communication). Filled when the caller's struct_size
   * reaches past MLOS_POLICY_FIGURES_SIZE_V1. ---- */
  double collective_seconds;     /* time the job spent in barriers and all-reduces, -1 unknown;
                                  * in embedded mode, its process's (all of its jobs, like cpu_seconds) */
} mlos_policy_job_figures_t;

/* The size of the figures struct before collective_seconds: the smallest
 * struct_size job_figures accepts. */
#define MLOS_POLICY_FIGURES_SIZE_V1 (offsetof(mlos_policy_job_figures_t, collective_seconds))

/* Actions on files (mlos_policy_host_t.advise_file). */
typedef enum mlos_policy_file_advice {
  MLOS_POLICY_FILE_SEQUENTIAL = 1, /* POSIX_FADV_SEQUENTIAL + readahead */
  MLOS_POLICY_FILE_WILLNEED = 2,   /* POSIX_FADV_WILLNEED */
  MLOS_POLICY_FILE_DONTNEED = 3    /* POSIX_FADV_DONTNEED */
} mlos_policy_file_advice_t;

/* One read of one of the job's files, from the job's read log
 * (mlos_policy_host_t.read_log). `path` is absolute and stays valid until
 * the policy's entry point returns: copy what you keep. */
typedef struct mlos_policy_read {
  const char* path;
  uint64_t offset;
  uint64_t length; /* 0: to the end of the file */
} mlos_policy_read_t;

/* What the job announced it will read next (mlos_policy_host_t.read_plan):
 * the entries of its current plan after the ones it has read. The arrays
 * stay valid until the policy's entry point returns. */
typedef struct mlos_policy_plan {
  uint32_t struct_size;      /* sizeof(mlos_policy_plan_t), set by the caller */
  uint64_t generation;       /* changes with every announcement; 0: no plan */
  uint64_t position;         /* entries of the plan read so far */
  uint64_t total;            /* entries in the whole plan */
  size_t count;              /* entries in paths/sizes: the next ones, from `position` */
  const char* const* paths;
  const int64_t* sizes;      /* bytes; -1 where the host could not stat the file */
} mlos_policy_plan_t;
/* The first version of mlos_policy_plan_t: struct_size may be as small as this. */
#define MLOS_POLICY_PLAN_SIZE_V1 MLOS_SIZE_THROUGH(mlos_policy_plan_t, sizes)


/* Placements a policy may recommend (mlos_policy_host_t.recommend_placement). */
typedef enum mlos_policy_placement {
  MLOS_POLICY_PLACEMENT_SHARED = 0,    /* the job's CPUs may be shared with other work */
  MLOS_POLICY_PLACEMENT_EXCLUSIVE = 1  /* the job should run on CPUs of its own */
} mlos_policy_placement_t;

/* The longest text request_policy's config, recommend_placement's reason
 * or report's object may be, in bytes (NUL excluded). */
#define MLOS_POLICY_PAYLOAD_MAX 4096

/* Log levels for mlos_policy_host_t.log (the daemon's own levels). */
#define MLOS_POLICY_LOG_ERROR 0
#define MLOS_POLICY_LOG_WARN 1
#define MLOS_POLICY_LOG_INFO 2
#define MLOS_POLICY_LOG_DEBUG 3

/* The host's side: what a policy may read and ask for. Every function
 * returns MLOS_OK, or MLOS_ERR_NOT_FOUND for a job not attached to this
 * policy, or MLOS_ERR_INVALID_ARGUMENT for a value outside its range (the
 * range checks below are the host's; the grant checks happen where the
 * action is applied, and a refusal there is counted, not returned). */
typedef struct mlos_policy_host {
  uint32_t struct_size; /* sizeof(mlos_policy_host_t) of the host */
  void* ctx;            /* pass back as the first argument */
  /* out->struct_size must be set by the caller. */
  int (*job_figures)(void* ctx, uint64_t job, mlos_policy_job_figures_t* out);
  /* CPU weight of the job's cgroup, 1..10000 (cgroup v2 scale, 100 = the
   * kernel's default; v1 cpu.shares are converted). */
  int (*set_cpu_weight)(void* ctx, uint64_t job, uint32_t weight);
  /* I/O weight of the job's cgroup, 1..10000. */
  int (*set_io_weight)(void* ctx, uint64_t job, uint32_t weight);
  /* memory.high / memory.low of the job's cgroup, at most its hard limit;
   * UINT64_MAX: no bound. */
  int (*set_memory_high)(void* ctx, uint64_t job, uint64_t bytes);
  int (*set_memory_low)(void* ctx, uint64_t job, uint64_t bytes);
  /* The intra-op thread count the job should use now, 1..its CPUs; read by
   * the job through mlos_training_get_advice. */
  int (*advise_threads)(void* ctx, uint64_t job, int threads);
  /* A hint on one of the job's files: `path` must be readable by the job's
   * owner. */
  int (*advise_file)(void* ctx, uint64_t job, const char* path, int advice);
  /* A line for the daemon's log, tagged with the policy's name. */
  void (*log)(void* ctx, int level, const char* message);

  /* ---- Added later than the fields above (read logs and plans). A policy checks
   * struct_size >= MLOS_POLICY_HOST_SIZE_READS before using these. ---- */

  /* The job's reads since the policy's previous call, oldest first: up to
   * `max` into `out`, their number in *count. *lost (may be NULL): reads
   * the policy will never see (the log is bounded; it fell behind).
   * UNSUPPORTED when this host gets no read log for the job (mlosd does
   * not collect one yet; embedded mode does, from
   * mlos_training_record_read). */
  int (*read_log)(void* ctx, uint64_t job, mlos_policy_read_t* out, size_t max, size_t* count, uint64_t* lost);
  /* The job's announced plan (mlos_training_announce_reads) from where the
   * job is in it; generation 0 when it announced none. UNSUPPORTED as
   * read_log. */
  int (*read_plan)(void* ctx, uint64_t job, mlos_policy_plan_t* out);
  /* advise_file on bytes [offset, offset + length) of `path` (length 0: to
   * the end). Same checks as advise_file. */
  int (*advise_file_range)(void* ctx, uint64_t job, const char* path, uint64_t offset, uint64_t length, int advice);

  /* ---- Added later than the fields above (policies that manage a job's
   * policies). A policy checks struct_size >= MLOS_POLICY_HOST_SIZE_JOB_POLICIES
   * before using these. ---- */

  /* Attaches policy `name` to the job with `config_json` (a JSON object's
   * text, NULL: "{}"), as if the job had asked for it. Applied after the
   * event, by the engine: left as it is when the job already uses `name`
   * (with whatever config it has); refused (counted) when `name` is this
   * policy. Both engines (embedded, mlosd) carry it out. What this policy
   * attached is detached when it detaches or fails, and is the job's own
   * once the job requests or releases it itself. */
  int (*request_policy)(void* ctx, uint64_t job, const char* name, const char* config_json);
  /* Detaches a policy that this policy attached to the job (one the job
   * asked for itself is refused). */
  int (*release_policy)(void* ctx, uint64_t job, const char* name);
  /* Recommends a placement (mlos_policy_placement_t) for the job, with a
   * one-line reason. A recommendation only: it is shown in `mlos status`
   * (the job's report), and takes effect only when the job is started or
   * asks again with that placement through its normal request. */
  int (*recommend_placement)(void* ctx, uint64_t job, int placement, const char* reason);
  /* Publishes what the policy decided for the job and why, a JSON
   * object's text of at most MLOS_POLICY_PAYLOAD_MAX bytes; `mlos status`
   * shows the latest one per policy. */
  int (*report)(void* ctx, uint64_t job, const char* json_object);
} mlos_policy_host_t;

/* The size of a host table that has read_log, read_plan and
 * advise_file_range. */
#define MLOS_POLICY_HOST_SIZE_READS (offsetof(mlos_policy_host_t, advise_file_range) + sizeof(void*))

/* The size of a host table that has request_policy, release_policy,
 * recommend_placement and report. */
#define MLOS_POLICY_HOST_SIZE_JOB_POLICIES (offsetof(mlos_policy_host_t, report) + sizeof(void*))

/* A policy. All pointers must stay valid while the object is loaded. Entry
 * points that are NULL are skipped (except init, which is required). */
typedef struct mlos_policy {
  uint32_t abi_version;      /* MLOS_POLICY_ABI_VERSION */
  uint32_t struct_size;      /* sizeof(mlos_policy_t) */
  const char* name;          /* [a-z0-9-]{1,63}; must match the file's name */
  const char* description;   /* one line */
  const char* config_schema; /* JSON Schema of the config, for `mlos policy info`; may be NULL */
  uint32_t tick_interval_ms; /* how often tick() is wanted; 0: 1000 */
  /* Parses the node-wide config (the daemon's "policy_config" entry for
   * this policy, "{}" if none) and sets *state. On failure returns a code
   * and writes a message (naming the key) into error[0..error_size). */
  int (*init)(const mlos_policy_host_t* host, const char* config_json, void** state, char* error,
              size_t error_size);
  void (*fini)(void* state);
  /* A job asked for this policy with `config_json` (its own settings,
   * "{}" if none). A failure refuses that job's request, as init's does. */
  int (*job_attached)(void* state, uint64_t job, const char* config_json, char* error, size_t error_size);
  void (*job_detached)(void* state, uint64_t job);
  void (*phase_changed)(void* state, uint64_t job, int old_phase, int new_phase);
  void (*memory_pressure_changed)(void* state, uint64_t job, int level);
  /* Every tick_interval_ms, with the figures of every attached job fresh. */
  void (*tick)(void* state, double now_seconds);
} mlos_policy_t;
/* The first version of mlos_policy_t: struct_size may be as small as this. */
#define MLOS_POLICY_SIZE_V1 MLOS_SIZE_THROUGH(mlos_policy_t, tick)


typedef const mlos_policy_t* (*mlos_policy_entry_fn)(void);

#if defined(__GNUC__)
#define MLOS_POLICY_EXPORT __attribute__((visibility("default")))
#else
#define MLOS_POLICY_EXPORT
#endif

#ifdef __cplusplus
}
#endif

#endif /* MLOS_POLICY_H_ */
