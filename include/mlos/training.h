/* SPDX-License-Identifier: Apache-2.0 */
/* mlOS Training Workload API -- start here.
 *
 * The published entry points (mlos_training_request_resources ...
 * mlos_training_allreduce) keep their published names, signatures and
 * struct fields, so programs written against the published API compile
 * unchanged. Everything else in this header is a documented extension.
 *
 * Conventions (see also mlos/errors.h):
 *  - Handles are opaque. A handle comes from mlos_training_request_resources
 *    and is ended by mlos_training_release_resources; nothing else frees it.
 *    Passing a released or made-up handle is detected and returns
 *    MLOS_ERR_INVALID_HANDLE (handles are never reused in a process).
 *  - int results are MLOS_OK (0) or a negative mlos_error_t; failing calls
 *    change nothing unless stated. mlos_last_error_message() has details.
 *  - Every function is thread-safe; one handle may be used from several
 *    threads at once. A call racing with release either completes before the
 *    release or returns MLOS_ERR_INVALID_HANDLE.
 *  - The published request struct is frozen. Growth happens through
 *    versioned extension structs whose first field, struct_size, the caller
 *    sets to sizeof(the struct it compiled against); the library accepts any
 *    size from the first version (MLOS_<STRUCT>_SIZE_V1) on and fills or
 *    reads only that prefix (fields past it read as zero). It
 *    never writes past the struct it was built with, whatever struct_size
 *    says: bytes a newer caller has beyond that are left as they were, so
 *    zero-initialise the struct to tell fields this library lacks.
 *  - The library never writes to stdout/stderr on its own; see mlos/log.h.
 *
 * Engines: MLOS_MODE=auto|embedded|daemon picks how requests are served.
 * "embedded" serves them in-process (cross-process claims in a file-locked
 * ledger in the runtime directory); "daemon" forwards them to mlosd
 * ($MLOS_DAEMON_SOCKET, default /run/mlos/mlosd.sock) and fails with
 * MLOS_ERR_DAEMON_UNAVAILABLE when it does not answer; "auto" (the default)
 * uses mlosd when it answers and embedded otherwise. See docs/daemon.md. */
#ifndef MLOS_TRAINING_H_
#define MLOS_TRAINING_H_

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mlos/errors.h"
#include "mlos/export.h"
#include "mlos/version.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ */
/* Published types                                                     */
/* ------------------------------------------------------------------ */

/* Versioned structs: the bytes of `type` up to and including `field`. Each
 * versioned struct has MLOS_<STRUCT>_SIZE_V1, the size of its first
 * version, built from this: the smallest struct_size the library accepts,
 * whatever later versions add. */
#define MLOS_SIZE_THROUGH(type, field) (offsetof(type, field) + sizeof(((type*)0)->field))

/* The six training phases. What each does to the job's bound threads is the
 * phase policy documented in docs/phases.md. */
typedef enum mlos_training_phase {
  MLOS_TRAINING_PHASE_IDLE = 0,
  MLOS_TRAINING_PHASE_DATA_LOADING = 1,
  MLOS_TRAINING_PHASE_FORWARD = 2,
  MLOS_TRAINING_PHASE_BACKWARD = 3,
  MLOS_TRAINING_PHASE_OPTIMIZER = 4,
  MLOS_TRAINING_PHASE_CHECKPOINT = 5
} mlos_training_phase_t;

#define MLOS_TRAINING_PHASE_COUNT 6

typedef enum mlos_reduce_op {
  MLOS_REDUCE_SUM = 0,
  MLOS_REDUCE_PROD = 1,
  MLOS_REDUCE_MIN = 2,
  MLOS_REDUCE_MAX = 3,
  MLOS_REDUCE_AVG = 4
} mlos_reduce_op_t;

/* What a job asks for. Frozen layout (published); extend through
 * mlos_training_request_options_t. Zero-initialise what you do not set. */
typedef struct mlos_training_resource_request {
  /* CPUs wanted, >= 1. Must fit inside the CPUs the process is allowed
   * (cgroup cpuset and affinity mask). */
  int num_cpus;
  /* Memory the job expects to use; 0 = no requirement. Checked against what
   * the machine and the process's memory cgroup can provide now. */
  size_t memory_bytes;
  /* NUMA node OS index, or -1 to let mlOS pick the node that fits best. */
  int numa_node_preference;
  /* Job importance, MLOS_PRIORITY_MIN..MLOS_PRIORITY_MAX, 0 = normal.
   * Higher is more important: it lowers the nice value of every phase by
   * `priority` (see docs/phases.md). */
  int priority;
  /* true: no other mlOS claim may overlap these CPUs while held.
   * false: shared; overlaps other shared claims, never exclusive ones. */
  bool exclusive_cpus;
} mlos_training_resource_request_t;

#define MLOS_PRIORITY_MIN (-10)
#define MLOS_PRIORITY_MAX 10

/* Opaque handle to granted resources. */
typedef struct mlos_training_resources mlos_training_resources_t;

/* Memory-pressure levels delivered to callbacks (see
 * mlos_training_register_memory_callback). */
typedef enum mlos_memory_pressure_level {
  MLOS_MEMORY_PRESSURE_NORMAL = 0,
  MLOS_MEMORY_PRESSURE_MODERATE = 1,
  MLOS_MEMORY_PRESSURE_CRITICAL = 2
} mlos_memory_pressure_level_t;

/* Figures behind a memory-pressure notification. Versioned: read only the
 * fields within struct_size (the library sets it to the size it filled).
 * available/budget are those of the tightest source: the job's memory
 * cgroup (limit minus working set), the node (MemAvailable of MemTotal) or
 * the job's own memory_bytes (minus its anonymous resident memory). */
typedef struct mlos_memory_pressure_info {
  uint32_t struct_size;
  mlos_memory_pressure_level_t level;
  uint64_t available_bytes;
  uint64_t budget_bytes;
  double psi_some_avg10;   /* PSI "some" avg10, percent */
  /* Extension (struct_size >= offsetof(..., sequence) + 8): */
  double psi_full_avg10;   /* PSI "full" avg10, percent */
  uint32_t source;         /* MLOS_MEMORY_SOURCE_* of available/budget */
  uint64_t detected_ns;    /* CLOCK_MONOTONIC ns when this level was entered */
  uint64_t sequence;       /* level changes of this job so far */
} mlos_memory_pressure_info_t;
/* The first version of mlos_memory_pressure_info_t: struct_size may be as small as this. */
#define MLOS_MEMORY_PRESSURE_INFO_SIZE_V1 MLOS_SIZE_THROUGH(mlos_memory_pressure_info_t, psi_some_avg10)


enum {
  MLOS_MEMORY_SOURCE_NONE = 0,
  MLOS_MEMORY_SOURCE_JOB = 1,    /* memory_bytes of the request */
  MLOS_MEMORY_SOURCE_CGROUP = 2, /* the nearest memory cgroup with a limit */
  MLOS_MEMORY_SOURCE_NODE = 3    /* the machine */
};

typedef void (*mlos_memory_callback_t)(mlos_memory_pressure_level_t level,
                                       const mlos_memory_pressure_info_t* info,
                                       void* user_data);

/* ------------------------------------------------------------------ */
/* Published entry points                                              */
/* ------------------------------------------------------------------ */

/* Claims CPUs (and a NUMA node) for a job and returns a handle.
 *
 * Placement: inside the CPUs the process may use; on the NUMA node that fits
 * best when numa_node_preference is -1 (enough free CPUs and memory, fewest
 * CPUs shared with other claims, smallest leftover); whole cores before SMT
 * siblings. If no single node can hold num_cpus and the preference is -1, the
 * claim spans the fewest nodes. Claims are recorded in the node's ledger so
 * that exclusive CPUs never overlap across processes; a claim whose process
 * died is reclaimed automatically.
 *
 * Nothing about the calling thread changes here: use bind_thread.
 * Claims are visible to every process sharing the runtime directory
 * ($MLOS_RUNTIME_DIR, /run/mlos for root, else per user); see
 * docs/placement.md. A handle is valid only in the process that requested
 * it: in a forked child every call returns INVALID_HANDLE, except release,
 * which forgets the child's copy and leaves the parent's claim alone.
 * Errors: INVALID_ARGUMENT (NULL, num_cpus < 1, priority out of range,
 * numa_node_preference < -1, bad MLOS_MODE), INVALID_NUMA_NODE,
 * INSUFFICIENT_CPUS, CPUS_BUSY, INSUFFICIENT_MEMORY, STATE_CORRUPT,
 * UNSUPPORTED (exclusive CPUs while the ledger is unusable),
 * DAEMON_UNAVAILABLE (MLOS_MODE=daemon and mlosd does not answer), SYSTEM. On error *resources is set to NULL and no claim is
 * made. */
MLOS_API int mlos_training_request_resources(
    const mlos_training_resource_request_t* request,
    mlos_training_resources_t** resources);

/* Restores what bind_thread and set_phase changed on threads that still
 * exist (affinity, nice, I/O priority; the memory policy only of the calling
 * thread, as Linux allows nothing else), unlocks and frees checkpoint
 * buffers, unlocks registered buffers and drops the claim. NULL returns
 * MLOS_OK; a second release of the same handle returns
 * MLOS_ERR_INVALID_HANDLE and does nothing else. */
MLOS_API int mlos_training_release_resources(mlos_training_resources_t* resources);

/* Pins `thread` (a thread of this process) to the allocation. A thread
 * belongs to at most one handle: binding it through another handle moves it
 * there, and whichever release comes last restores what it had before. A
 * failed bind changes nothing.
 * cpu_index in [0, num_cpus) pins it to that one CPU of the allocation (the
 * order is mlos_training_get_cpus()'s); MLOS_CPU_INDEX_ALL (-1) lets it run on
 * any CPU of the allocation. When `thread` is the calling thread, its NUMA
 * memory policy is also set to the allocation's node(s); Linux offers no way
 * to set another thread's memory policy, so for other threads only the
 * affinity changes (their first-touch allocations still land on the local
 * node of the CPUs they now run on). The thread joins the job's bound
 * threads; once set_phase has been called, the current phase's policy is
 * applied to it at once (before the first set_phase, threads keep their own
 * priorities: a job that never marks phases is not treated as IDLE).
 * `thread` may be any value: it is never dereferenced, and one that is not
 * a live thread of this process (made up, pointing at other memory, or
 * already joined) is NO_SUCH_THREAD.
 * Errors: INVALID_HANDLE, INVALID_ARGUMENT (cpu_index out of range),
 * NO_SUCH_THREAD, UNSUPPORTED (a thread other than the caller where the C
 * library's thread descriptor cannot be read safely; see docs/api.md),
 * SYSTEM. */
MLOS_API int mlos_training_bind_thread(mlos_training_resources_t* resources,
                                       pthread_t thread, int cpu_index);

#define MLOS_CPU_INDEX_ALL (-1)

/* Enters `phase`: counts and times it in the phase profile and applies the
 * phase policy (CPU nice, I/O priority, buffer locking) to the job's bound
 * threads and to the process's threads that no job has (found in
 * /proc/self/task when the phase's settings differ from the last applied;
 * never pinned; docs/phases.md). Costs no system call when the resulting OS
 * settings equal the current ones. When a setting cannot be applied (e.g. raising priority
 * without CAP_SYS_NICE) the phase is still recorded, MLOS_OK is returned and
 * the reason is kept (mlos_training_get_notes, placement.degraded_effects).
 * Errors: INVALID_HANDLE, INVALID_ARGUMENT (unknown phase). */
MLOS_API int mlos_training_set_phase(mlos_training_resources_t* resources,
                                     mlos_training_phase_t phase);

/* Registers a callback for the job's memory-pressure level (see
 * docs/memory-pressure.md for the sources, thresholds and defaults).
 *
 * - When: the callback is called each time the level changes (NORMAL,
 *   MODERATE, CRITICAL), and at once if the level is not NORMAL when it is
 *   registered. Levels rise as soon as a source crosses its threshold and
 *   fall only after the figures stay clear of it (plus a hysteresis) for a
 *   hold time, so they do not flap.
 * - Where: on a library thread named "mlos-memwatch", one per job, never on
 *   the caller's thread. In daemon mode mlosd watches the job's cgroup and
 *   wakes that thread; in embedded mode the thread watches by itself.
 * - Order and pace: callbacks of a job run one at a time, in registration
 *   order. A slow callback delays the others; level changes meanwhile are
 *   coalesced (the next call carries the latest level). A call longer than
 *   1 s is reported in mlos_training_get_notes (effect memory_watch).
 * - Failure: a callback runs inside this process; if it crashes, the process
 *   crashes. A C++ exception escaping it is caught and noted.
 * - It may call any mlos_* function, including unregister and release on
 *   its own handle. `info` is valid only during the call.
 * At most MLOS_MAX_MEMORY_CALLBACKS per handle; a (callback, user_data) pair
 * once. Errors: INVALID_HANDLE, INVALID_ARGUMENT (NULL callback, already
 * registered, too many), INVALID_ARGUMENT naming the variable when an
 * MLOS_MEMORY_* environment variable is malformed, UNSUPPORTED (no memory
 * figure readable at all), DAEMON_UNAVAILABLE, SYSTEM. */
MLOS_API int mlos_training_register_memory_callback(
    mlos_training_resources_t* resources, mlos_memory_callback_t callback,
    void* user_data);

/* Allocates `size` bytes (rounded up to pages) that are prefaulted and
 * locked in RAM (they show in VmLck), for checkpoint staging. Counted against
 * memory_bytes when that is non-zero. Returns NULL on failure with
 * mlos_last_error() set: INVALID_HANDLE, INVALID_ARGUMENT (size 0),
 * LOCK_LIMIT (RLIMIT_MEMLOCK / no CAP_IPC_LOCK: never a silent unlocked
 * buffer), INSUFFICIENT_MEMORY (over budget), NO_MEMORY.
 * Free with mlos_training_free_checkpoint_buffer or release_resources. */
MLOS_API void* mlos_training_alloc_checkpoint_buffer(
    mlos_training_resources_t* resources, size_t size);

/* Flags of mlos_training_alloc_checkpoint_buffer_ex. */
#define MLOS_CHECKPOINT_BUFFER_ALLOW_UNLOCKED 1u

/* mlos_training_alloc_checkpoint_buffer with flags (extension). With
 * MLOS_CHECKPOINT_BUFFER_ALLOW_UNLOCKED, when the kernel refuses to lock
 * the buffer (LOCK_LIMIT: a user's RLIMIT_MEMLOCK, 8 MiB on Debian, without
 * CAP_IPC_LOCK) it is an ordinary prefaulted buffer instead, counted
 * against memory_bytes the same way; *locked (if not NULL) says which the
 * caller got. flags 0 is mlos_training_alloc_checkpoint_buffer. Errors: as
 * that call, plus INVALID_ARGUMENT (unknown flags). */
MLOS_API void* mlos_training_alloc_checkpoint_buffer_ex(
    mlos_training_resources_t* resources, size_t size, unsigned flags, bool* locked);

/* Waits until all `world_size` ranks arrive (Gloo; see docs/collectives.md).
 * The handle's first collective call joins its group: rendezvous through
 * the store in MLOS_STORE ("file:/shared/dir", "redis://host:port" or
 * "tcp://host:port", torch's TCPStore), else the TCPStore at MASTER_ADDR
 * and MASTER_PORT as torchrun sets them, within MLOS_COLLECTIVE_TIMEOUT_MS
 * (default 30000), as does every later operation. With a TCPStore that no
 * launcher serves (tcp:// or MASTER_ADDR without torchrun's agent), rank
 * 0's first call starts a TCPStore server in this process, listening on
 * the address asked for (127.0.0.1: loopback only; a host name: every
 * address) until the process exits, and raises the process's soft
 * RLIMIT_NOFILE to the hard one; with MLOS_STORE_SECRET it serves only
 * ranks that send that secret (docs/collectives.md, "What the store
 * protects"); name a file: or redis:// store to keep it from listening.
 * Errors: INVALID_HANDLE, INVALID_ARGUMENT (not 0 <= rank <
 * world_size, values differing from the handle's live group, no store
 * named, a malformed MLOS_STORE or MLOS_STORE_SECRET), TIMEOUT (a peer
 * never arrived, or the store refused this rank's secret), PEER_LOST (a peer
 * died or broke the connection). After TIMEOUT or PEER_LOST the group is
 * unusable; the next call creates a new one (every rank must do the same). */
MLOS_API int mlos_training_barrier(mlos_training_resources_t* resources,
                                   int rank, int world_size);

/* In-place all-reduce of `count` float32 values with `op` (AVG: the sum
 * divided by the world size) across the handle's group; count 0 only
 * synchronises. Rank and world size: the handle's group, else RANK and
 * WORLD_SIZE from the environment. Every rank must pass the same count and
 * op. Errors: as mlos_training_barrier, plus INVALID_ARGUMENT (data NULL
 * with count > 0, unknown op). On error `data` may hold partial results.
 *
 * `data` may be CUDA device memory (cuMemAlloc, cudaMalloc) when the
 * process has loaded the CUDA driver: every rank with a GPU of its own and
 * NCCL (2.14 or later) loaded or installed reduces through NCCL, else the
 * buffer is staged through pinned host memory; see docs/gpu.md,
 * "Collectives on device buffers". The call starts after the work queued
 * on the legacy default stream and returns with the result in place; work
 * on other non-blocking streams must be synchronised by the caller. Extra
 * errors there: INVALID_ARGUMENT (a buffer on another GPU than the group's
 * NCCL communicator), SYSTEM (a driver call failed). */
MLOS_API int mlos_training_allreduce(mlos_training_resources_t* resources,
                                     void* data, size_t count,
                                     mlos_reduce_op_t op);

/* ------------------------------------------------------------------ */
/* Extensions                                                          */
/* ------------------------------------------------------------------ */

/* Request options beyond the published struct. */
enum {
  /* Bind memory to the chosen node(s) (MPOL_BIND) instead of preferring
   * them (MPOL_PREFERRED, the default, which falls back when a node is full
   * instead of invoking the OOM killer). */
  MLOS_REQUEST_STRICT_MEMBIND = 1u << 0,
  /* Fail with INSUFFICIENT_CPUS rather than span several NUMA nodes. */
  MLOS_REQUEST_SINGLE_NODE = 1u << 1,
  /* The GPUs asked for may be shared with other shared GPU claims (the
   * default is exclusive: no other claim may hold them). */
  MLOS_REQUEST_SHARED_GPUS = 1u << 2
};

typedef struct mlos_training_request_options {
  uint32_t struct_size; /* sizeof(mlos_training_request_options_t) */
  uint32_t flags;       /* MLOS_REQUEST_* */
  const char* label;    /* shown by `mlos status`; copied; may be NULL */
  /* Extension (struct_size >= offsetof(..., gpu_uuids) + sizeof(char*)):
   * NVIDIA GPUs for the job (docs/gpu.md). num_gpus: how many, any of them;
   * gpu_uuids: or these, comma-separated UUIDs or unique prefixes (NULL:
   * any; num_gpus is then 0 or their number). Only GPUs the process's
   * CUDA_VISIBLE_DEVICES shows can be claimed, when it is set. The CPUs and
   * memory then come from the GPUs' NUMA node unless numa_node_preference
   * names one. The library does not set CUDA_VISIBLE_DEVICES (CUDA may be
   * initialised already): read the UUIDs with mlos_training_get_gpus. */
  int num_gpus;
  const char* gpu_uuids;
} mlos_training_request_options_t;
/* The first version of mlos_training_request_options_t: struct_size may be as small as this. */
#define MLOS_TRAINING_REQUEST_OPTIONS_SIZE_V1 MLOS_SIZE_THROUGH(mlos_training_request_options_t, label)


/* mlos_training_request_resources with options; options may be NULL.
 * Extra errors: VERSION_MISMATCH (struct_size too small), INVALID_ARGUMENT
 * (unknown flag bits, num_gpus < 0), and with GPUs INSUFFICIENT_GPUS,
 * GPUS_BUSY and NOT_FOUND (a UUID no GPU has). */
MLOS_API int mlos_training_request_resources_ex(
    const mlos_training_resource_request_t* request,
    const mlos_training_request_options_t* options,
    mlos_training_resources_t** resources);

#define MLOS_MAX_MEMORY_CALLBACKS 16

/* Unregisters a callback registered with this user_data. On return it is
 * not running and will not be called again (from inside a callback: the
 * current call is the last). Errors: INVALID_HANDLE, INVALID_ARGUMENT (not
 * registered). */
MLOS_API int mlos_training_unregister_memory_callback(mlos_training_resources_t* resources,
                                                      mlos_memory_callback_t callback, void* user_data);

/* Level thresholds for a job. Versioned (struct_size). Percentages. */
typedef struct mlos_memory_thresholds {
  uint32_t struct_size;
  double moderate_headroom_percent; /* MODERATE at or below this headroom (default 20) */
  double critical_headroom_percent; /* CRITICAL at or below (default 8) */
  double moderate_psi_some;         /* MODERATE at PSI some avg10 >= this (default 10; 0 = off) */
  double critical_psi_full;         /* CRITICAL at PSI full avg10 >= this (default 5; 0 = off) */
  double hysteresis_percent;        /* headroom above the threshold needed to leave it (default 5) */
  uint32_t hold_ms;                 /* how long it must stay clear (default 1000) */
  uint32_t sample_ms;               /* sampling period between kernel events (default 100) */
} mlos_memory_thresholds_t;
/* The first version of mlos_memory_thresholds_t: struct_size may be as small as this. */
#define MLOS_MEMORY_THRESHOLDS_SIZE_V1 MLOS_SIZE_THROUGH(mlos_memory_thresholds_t, sample_ms)


/* Sets the job's thresholds (in daemon mode they are sent to mlosd).
 * Defaults come from docs/memory-pressure.md, overridden by MLOS_MEMORY_*
 * environment variables, overridden by this call. Errors: INVALID_HANDLE,
 * INVALID_ARGUMENT (NULL, inconsistent values: the message names the field),
 * VERSION_MISMATCH, DAEMON_UNAVAILABLE. */
MLOS_API int mlos_training_set_memory_thresholds(mlos_training_resources_t* resources,
                                                 const mlos_memory_thresholds_t* thresholds);

/* The job's current level and figures, for callers that poll instead of
 * registering a callback (starts the job's watcher if needed). Fills `info`
 * up to info->struct_size. Errors: INVALID_HANDLE, INVALID_ARGUMENT,
 * VERSION_MISMATCH, UNSUPPORTED, DAEMON_UNAVAILABLE. */
MLOS_API int mlos_training_get_memory_pressure(mlos_training_resources_t* resources,
                                               mlos_memory_pressure_info_t* info);

/* Element types of mlos_training_allreduce_typed. FLOAT16 is IEEE binary16
 * and BFLOAT16 the upper half of a float32, both stored as uint16_t; they
 * are reduced in float32 and rounded back to nearest even. */
typedef enum mlos_dtype {
  MLOS_DTYPE_FLOAT32 = 0,
  MLOS_DTYPE_FLOAT64 = 1,
  MLOS_DTYPE_FLOAT16 = 2,
  MLOS_DTYPE_BFLOAT16 = 3,
  MLOS_DTYPE_INT32 = 4,
  MLOS_DTYPE_INT64 = 5
} mlos_dtype_t;

/* mlos_training_allreduce for `count` elements of `dtype`. Integer AVG
 * divides the sum with truncation toward zero. Errors: as
 * mlos_training_allreduce, plus INVALID_ARGUMENT (unknown dtype). */
MLOS_API int mlos_training_allreduce_typed(mlos_training_resources_t* resources, void* data, size_t count,
                                           mlos_dtype_t dtype, mlos_reduce_op_t op);

/* Frees a buffer from mlos_training_alloc_checkpoint_buffer (unlocks and
 * unmaps it). NULL buffer returns MLOS_OK. Errors: INVALID_HANDLE,
 * INVALID_ARGUMENT (not a checkpoint buffer of this handle). */
MLOS_API int mlos_training_free_checkpoint_buffer(
    mlos_training_resources_t* resources, void* buffer);

/* Kinds of caller-owned buffers whose residency follows the phase. */
typedef enum mlos_buffer_kind {
  /* Locked on the first entry into BACKWARD, kept locked through OPTIMIZER
   * and CHECKPOINT, unlocked on IDLE and at release. */
  MLOS_BUFFER_GRADIENT = 1
} mlos_buffer_kind_t;

/* Registers [addr, addr+size) (caller-owned memory, page-rounded outwards)
 * to be locked per its kind. Locking failures do not fail set_phase: they
 * are recorded as a note (MLOS_EFFECT_MEMLOCK). Registered plus checkpoint
 * buffers may total at most the request's memory_bytes (when non-zero):
 * past it, INSUFFICIENT_MEMORY and nothing is registered. Errors:
 * INSUFFICIENT_MEMORY, INVALID_HANDLE,
 * INVALID_ARGUMENT (NULL, size 0, unknown kind, overlaps a registered
 * buffer, or the page-rounded range wraps past the end of the address
 * space). */
MLOS_API int mlos_training_register_buffer(mlos_training_resources_t* resources,
                                           void* addr, size_t size,
                                           mlos_buffer_kind_t kind);

/* Unlocks and forgets a buffer registered at `addr`. Errors: INVALID_HANDLE,
 * INVALID_ARGUMENT (not registered). */
MLOS_API int mlos_training_unregister_buffer(
    mlos_training_resources_t* resources, void* addr);

/* Bits of mlos_training_placement_t.degraded_effects: effects that could not
 * be fully applied; mlos_training_get_notes() says why. */
enum {
  MLOS_EFFECT_AFFINITY = 1u << 0,
  MLOS_EFFECT_MEMPOLICY = 1u << 1,
  MLOS_EFFECT_CPU_PRIORITY = 1u << 2,
  MLOS_EFFECT_IO_PRIORITY = 1u << 3,
  MLOS_EFFECT_MEMLOCK = 1u << 4,
  MLOS_EFFECT_LEDGER = 1u << 5,
  /* A memory-pressure source is missing or degraded, or a callback was
   * slow or threw. */
  MLOS_EFFECT_MEMORY_WATCH = 1u << 6
};

typedef enum mlos_memory_policy {
  MLOS_MEMPOLICY_PREFERRED = 0, /* MPOL_PREFERRED on the node */
  MLOS_MEMPOLICY_BIND = 1,      /* MPOL_BIND on the node(s) */
  MLOS_MEMPOLICY_INTERLEAVE = 2 /* MPOL_INTERLEAVE across spanned nodes */
} mlos_memory_policy_t;

typedef struct mlos_training_placement {
  uint32_t struct_size;          /* in: sizeof(mlos_training_placement_t) */
  int num_cpus;                  /* CPUs granted */
  int numa_node;                 /* primary node (holds most of the CPUs) */
  int num_numa_nodes;            /* nodes the allocation spans (>= 1) */
  bool exclusive;                /* exclusive claim */
  int recommended_threads;       /* intra-op thread count: physical cores */
  mlos_memory_policy_t memory_policy;
  size_t memory_bytes;           /* as requested */
  mlos_training_phase_t phase;   /* current phase */
  uint32_t degraded_effects;     /* MLOS_EFFECT_* bits */
  uint64_t claim_id;             /* id in the node ledger (mlos status) */
  int bound_threads;             /* threads bound so far */
} mlos_training_placement_t;
/* The first version of mlos_training_placement_t: struct_size may be as small as this. */
#define MLOS_TRAINING_PLACEMENT_SIZE_V1 MLOS_SIZE_THROUGH(mlos_training_placement_t, bound_threads)


/* Fills `placement` up to placement->struct_size or this library's
 * sizeof(mlos_training_placement_t), whichever is smaller; bytes beyond are
 * not touched. Errors: INVALID_HANDLE, INVALID_ARGUMENT (NULL),
 * VERSION_MISMATCH (struct_size smaller than the first version). */
MLOS_API int mlos_training_get_placement(const mlos_training_resources_t* resources,
                                         mlos_training_placement_t* placement);

/* Writes the allocation's CPU OS indices, in cpu_index order, into
 * cpus[0..capacity) and the total into *count. cpus may be NULL when
 * capacity is 0 (size query). Errors: INVALID_HANDLE, INVALID_ARGUMENT,
 * BUFFER_TOO_SMALL (*count still set). */
MLOS_API int mlos_training_get_cpus(const mlos_training_resources_t* resources,
                                    int* cpus, size_t capacity, size_t* count);

/* The intra-op thread count to give thread pools (OpenMP, MKL, torch) for
 * this allocation: the number of physical cores it covers, at least 1.
 * Returns the count (> 0) or a negative error (INVALID_HANDLE). */
MLOS_API int mlos_training_recommended_threads(
    const mlos_training_resources_t* resources);

/* The CPUs this process's requests are placed in (their outer bound): its
 * main thread's affinity at the library's first use, narrowed to the
 * process's share when it is one of several local ranks (LOCAL_RANK of
 * LOCAL_WORLD_SIZE > 1, as torchrun sets them) started inside `mlos run`
 * and still on all of mlos run's CPUs (docs/placement.md, "Local ranks").
 * The first call, or the first request, applies that share: every thread
 * of the process still on mlos run's CPUs moves into it. A rank that then
 * requests more CPUs than its share gets its share, with an
 * MLOS_EFFECT_AFFINITY note. Writes the CPU OS indices, ascending, into
 * cpus[0..capacity) and their number into *count; if recommended_threads
 * is not NULL, the physical cores they cover (at least 1) into it. cpus may
 * be NULL when capacity is 0 (size query). MLOS_RANK_SPLIT=0 turns the
 * split off. Errors: INVALID_ARGUMENT (count NULL, cpus NULL with
 * capacity > 0, LOCAL_RANK/LOCAL_WORLD_SIZE/MLOS_CPUS malformed or
 * inconsistent: every request of the process then fails the same way),
 * BUFFER_TOO_SMALL (*count still set), SYSTEM. */
MLOS_API int mlos_training_get_allowed_cpus(int* cpus, size_t capacity, size_t* count,
                                            int* recommended_threads);

typedef struct mlos_training_phase_profile {
  uint32_t struct_size;                 /* in: sizeof(...) */
  mlos_training_phase_t current_phase;
  /* Wall seconds spent in each phase since the request (the current phase
   * counts up to now). */
  double seconds[MLOS_TRAINING_PHASE_COUNT];
  /* Times each phase was entered (a set_phase to the current phase is not
   * an entry). */
  uint64_t entries[MLOS_TRAINING_PHASE_COUNT];
  uint64_t set_phase_calls;  /* all set_phase calls, including no-ops */
  uint64_t os_updates;       /* calls that had to change OS settings */
  /* Extension (filled when struct_size >= offsetof(..., collective_bytes)
   * + 8): collectives on this handle (barrier, all-reduce): wall seconds inside those calls,
   * the rendezvous of a new group included; calls made, failed ones
   * included; bytes reduced by the successful ones. This time overlaps the
   * phases above: it is also counted in whichever phase was current. */
  double communication_seconds;
  uint64_t collective_calls;
  uint64_t collective_bytes;
} mlos_training_phase_profile_t;
/* The first version of mlos_training_phase_profile_t: struct_size may be as small as this. */
#define MLOS_TRAINING_PHASE_PROFILE_SIZE_V1 MLOS_SIZE_THROUGH(mlos_training_phase_profile_t, os_updates)


/* Fills `profile` up to profile->struct_size or this library's
 * sizeof(mlos_training_phase_profile_t), whichever is smaller; bytes beyond
 * are not touched. Errors: INVALID_HANDLE, INVALID_ARGUMENT (NULL),
 * VERSION_MISMATCH (struct_size smaller than the first version). */
MLOS_API int mlos_training_get_phase_profile(
    const mlos_training_resources_t* resources,
    mlos_training_phase_profile_t* profile);

/* Why effects were degraded: one line per effect, "effect: reason\n", the
 * latest reason per effect. Writes a NUL-terminated string into buf (may be
 * NULL when len is 0) and the needed size including the NUL into *needed.
 * Errors: INVALID_HANDLE, INVALID_ARGUMENT, BUFFER_TOO_SMALL. */
MLOS_API int mlos_training_get_notes(const mlos_training_resources_t* resources,
                                     char* buf, size_t len, size_t* needed);

/* The UUIDs of the GPUs the job holds, comma-separated ("" if none): what
 * CUDA_VISIBLE_DEVICES should hold for it. Writes a NUL-terminated string
 * into buf (may be NULL when len is 0) and the needed size including the
 * NUL into *needed. Errors: INVALID_HANDLE, INVALID_ARGUMENT,
 * BUFFER_TOO_SMALL. */
MLOS_API int mlos_training_get_gpus(const mlos_training_resources_t* resources,
                                    char* buf, size_t len, size_t* needed);

/* Name of a phase ("FORWARD"), or "UNKNOWN". Static string. */
MLOS_API const char* mlos_training_phase_name(mlos_training_phase_t phase);

/* ------------------------------------------------------------------ */
/* Policy modules                                                      */
/* ------------------------------------------------------------------ */

/* A job may ask for policy modules by name (see docs/api.md, "Policy
 * modules"): shared objects in the policy directory (mlosd's, or in
 * embedded mode the one beside libmlos), each run in its own confined
 * host process, that advise the job (e.g. a thread count) and, under
 * mlosd, steer its cgroup within what it was granted. A policy that crashes or
 * hangs costs the policy, never the job: the job then runs on mlOS's
 * built-in defaults for what that policy decided.
 *
 * mlosd serves them, and in embedded mode (MLOS_MODE=embedded, or auto
 * with no mlosd answering) libmlos does, with a policy host it finds next
 * to itself (docs/policies.md, "Embedded mode"); without one these calls
 * return MLOS_ERR_UNSUPPORTED once their arguments are checked, saying
 * where it looked ("no policy host found" below). */

/* What a job's policies advise it now. Versioned: the caller sets
 * struct_size; the library fills the fields within it. */
typedef struct mlos_training_advice {
  uint32_t struct_size;   /* sizeof(mlos_training_advice_t), set by the caller */
  int threads;            /* intra-op threads to use now (>= 1) */
  int threads_advised;    /* 1: a policy advised `threads`; 0: it is the grant's recommended count */
  uint32_t cpu_weight;    /* the job cgroup's CPU weight now (v2 scale), 0 if unknown */
  int policies;           /* policies the job uses */
  int policies_failed;    /* of which failed now (the job runs on built-in defaults for them) */
} mlos_training_advice_t;
/* The first version of mlos_training_advice_t: struct_size may be as small as this. */
#define MLOS_TRAINING_ADVICE_SIZE_V1 MLOS_SIZE_THROUGH(mlos_training_advice_t, policies_failed)


/* Attaches policy `name` to the job with `config_json`, a JSON object
 * (NULL means "{}"), checked here before anything is sent; the policy
 * checks its own keys. Requesting a policy the job already uses changes
 * nothing with the same config, and is INVALID_ARGUMENT with another one
 * (release it first). Errors: INVALID_HANDLE, INVALID_ARGUMENT (name NULL,
 * empty or not UTF-8; config_json not a JSON object; the policy refused
 * the config: the message names the key), NOT_FOUND (no such
 * policy: the message names the policy directory), VERSION_MISMATCH
 * (the policy was built for another policy ABI), POLICY_FAILED (the policy
 * crashed or hung, now or recently), PERMISSION, UNSUPPORTED (no policy
 * host found), DAEMON_UNAVAILABLE. */
MLOS_API int mlos_training_request_policy(mlos_training_resources_t* resources, const char* name,
                                          const char* config_json);

/* Detaches policy `name` from the job; what it set is taken back (the
 * built-in defaults apply again). Errors: INVALID_HANDLE, INVALID_ARGUMENT
 * (name NULL, empty or not UTF-8), NOT_FOUND (the job does not use it),
 * UNSUPPORTED (no policy host found), DAEMON_UNAVAILABLE. */
MLOS_API int mlos_training_release_policy(mlos_training_resources_t* resources, const char* name);

/* Fills `advice` up to advice->struct_size or this library's
 * sizeof(mlos_training_advice_t), whichever is smaller. Cheap enough to
 * poll (one round trip to mlosd, or none in embedded mode): a thread pool
 * can be resized to `threads` between steps. Errors: INVALID_HANDLE,
 * INVALID_ARGUMENT (NULL), VERSION_MISMATCH (struct_size smaller than the
 * first version, or a reply this library does not understand), UNSUPPORTED
 * (no policy host found), DAEMON_UNAVAILABLE. */
MLOS_API int mlos_training_get_advice(mlos_training_resources_t* resources, mlos_training_advice_t* advice);

/* ---- The job's reads, for its policies (docs/prefetch.md) ----
 *
 * A policy such as `prefetch` learns from what the job reads and from what
 * it announces it will read. Both calls are cheap (no round trip; no system
 * call for an absolute path) and only feed the job's policies: without one
 * that reads them they change nothing. Embedded mode only for now: a daemon-mode job
 * gets MLOS_ERR_UNSUPPORTED (mlosd collects no read log yet). */

/* Records that the job read `length` bytes of `path` at `offset` (length
 * 0: the whole file). A relative path is taken from the working directory
 * now (that costs a getcwd). Errors: INVALID_HANDLE, INVALID_ARGUMENT (path
 * NULL, empty, longer than PATH_MAX or not UTF-8; offset + length past
 * INT64_MAX), UNSUPPORTED (daemon mode). */
MLOS_API int mlos_training_record_read(mlos_training_resources_t* resources, const char* path, uint64_t offset,
                                       uint64_t length);

/* Announces the order in which the job will read `count` files next (an
 * epoch's sampler order), replacing the previous announcement; count 0
 * withdraws it. Paths as for mlos_training_record_read; reads recorded
 * afterwards advance the job's position in it. Errors: INVALID_HANDLE,
 * INVALID_ARGUMENT (paths NULL with count > 0, a bad path: the message
 * gives its index), UNSUPPORTED (daemon mode). */
MLOS_API int mlos_training_announce_reads(mlos_training_resources_t* resources, const char* const* paths,
                                          size_t count);

#ifdef __cplusplus
}
#endif

#endif /* MLOS_TRAINING_H_ */
