/* SPDX-License-Identifier: Apache-2.0 */
/* mlOS tensor memory manager (TMM): pools of tensor memory.
 *
 * A pool is one arena of `capacity_bytes` (a memfd, so another process can
 * map it by descriptor, or private anonymous memory) from which buffers of
 * size classes are handed out and taken back. A released buffer is kept for
 * the next request of its class, so a training loop that asks for the same
 * shapes every step costs no system call after the first.
 *
 * What a pool can be, each effect checked from outside (docs/tmm.md):
 *  - bound to a NUMA node: mbind(2) over the arena before any page exists,
 *    so every page, whoever touches it first, lands there
 *    (get_mempolicy(MPOL_F_ADDR) and move_pages(2) show it);
 *  - locked: the whole arena mlock'd at creation (VmLck), or one buffer at a
 *    time with mlos_tmm_pin;
 *  - huge-page backed: transparent huge pages (madvise) or hugetlbfs; what
 *    was obtained is reported, never assumed;
 *  - registered with CUDA as pinned host memory when the CUDA runtime and a
 *    GPU are present (UNSUPPORTED otherwise, with the CUDA error).
 *
 * Contracts:
 *  - int results are MLOS_OK or a negative mlos_error_t; a failing call
 *    changes nothing; mlos_last_error_message() says why.
 *  - A pool created for a job counts its capacity against the job's
 *    memory_bytes (INSUFFICIENT_MEMORY when it does not fit), until the pool
 *    is destroyed. A pool outlives its job's release.
 *  - Thread-safe: any thread may acquire and release on any pool.
 *  - A pool handle belongs to the process that created it; a forked child
 *    gets INVALID_HANDLE (the arena is shared memory: a child allocating
 *    from its copy of the books would hand out its parent's buffers).
 */
#ifndef MLOS_TMM_H_
#define MLOS_TMM_H_

#include <stddef.h>
#include <stdint.h>

#include "mlos/errors.h"
#include "mlos/export.h"
#include "mlos/training.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mlos_tmm_pool mlos_tmm_pool_t;

/* Bits of mlos_tmm_pool_options_t.flags. */
typedef enum mlos_tmm_pool_flag {
  /* mlock the whole arena at creation (it becomes resident). LOCK_LIMIT
   * when RLIMIT_MEMLOCK is too small and CAP_IPC_LOCK is missing. */
  MLOS_TMM_LOCKED = 1u << 0,
  /* Ask for transparent huge pages (madvise MADV_HUGEPAGE). Advisory: the
   * kernel's settings decide; stats.huge_pages and the notes say what was
   * obtained. */
  MLOS_TMM_HUGE_PAGES = 1u << 1,
  /* Back the arena with hugetlbfs 2 MiB pages (MFD_HUGETLB); UNSUPPORTED
   * when the kernel has too few free (/proc/sys/vm/nr_hugepages). */
  MLOS_TMM_HUGETLB = 1u << 2,
  /* Register the arena with CUDA as pinned host memory (cudaHostRegister,
   * runtime loaded with dlopen); implies the whole arena resident.
   * UNSUPPORTED without the CUDA runtime or a GPU. */
  MLOS_TMM_CUDA_PINNED = 1u << 3,
  /* Bind strictly (MPOL_BIND: allocation fails rather than spill) instead of
   * preferring the node (MPOL_PREFERRED). */
  MLOS_TMM_STRICT_NODE = 1u << 4,
  /* Private anonymous memory instead of a memfd: not shareable
   * (mlos_tmm_pool_fd is UNSUPPORTED), but eligible for transparent huge
   * pages where the kernel's shmem THP setting is "never". */
  MLOS_TMM_PRIVATE = 1u << 5
} mlos_tmm_pool_flag_t;

/* Where a pool's pages go when options.numa_node is this: the job's nodes
 * (its placement's memory policy), or no binding for a pool without a job. */
#define MLOS_TMM_NODE_AUTO (-1)

typedef struct mlos_tmm_pool_options {
  uint32_t struct_size;    /* sizeof(mlos_tmm_pool_options_t) */
  uint32_t flags;          /* mlos_tmm_pool_flag_t bits */
  uint64_t capacity_bytes; /* arena size (rounded up to pages); required */
  int32_t numa_node;       /* a node, or MLOS_TMM_NODE_AUTO */
  uint32_t reserved;       /* zero */
  const char* name;        /* shown in /proc/<pid>/maps as memfd:mlos-tmm:<name>; may be NULL */
} mlos_tmm_pool_options_t;
/* The first version of mlos_tmm_pool_options_t: struct_size may be as small as this. */
#define MLOS_TMM_POOL_OPTIONS_SIZE_V1 MLOS_SIZE_THROUGH(mlos_tmm_pool_options_t, name)


/* A buffer handed out by mlos_tmm_acquire. */
typedef struct mlos_tmm_buffer {
  void* data;        /* page-aligned; 2 MiB-aligned from 2 MiB up */
  uint64_t size;     /* bytes asked for */
  uint64_t capacity; /* bytes usable: the size class (>= size) */
  uint64_t offset;   /* of data in the arena: what another process that
                        mapped the pool's descriptor uses */
} mlos_tmm_buffer_t;

/* How huge pages were obtained (mlos_tmm_stats_t.huge_pages). */
typedef enum mlos_tmm_huge_pages {
  MLOS_TMM_HUGE_NONE = 0,
  MLOS_TMM_HUGE_THP = 1,     /* advised; stats.huge_bytes says how much the kernel gave */
  MLOS_TMM_HUGE_HUGETLB = 2  /* hugetlbfs pages: all of the arena */
} mlos_tmm_huge_pages_t;

typedef struct mlos_tmm_stats {
  uint32_t struct_size;      /* sizeof(mlos_tmm_stats_t), set by the caller */
  uint32_t huge_pages;       /* mlos_tmm_huge_pages_t */
  int32_t numa_node;         /* node the arena is bound to, -1 if none */
  uint32_t flags;            /* the flags in effect */
  uint64_t capacity_bytes;
  uint64_t acquires;         /* successful mlos_tmm_acquire calls */
  uint64_t releases;
  uint64_t reuse_hits;       /* acquires served from released buffers */
  uint64_t failed_acquires;  /* refused: the pool was full */
  uint64_t buffers_in_use;
  uint64_t bytes_in_use;     /* class sizes of buffers handed out */
  uint64_t bytes_cached;     /* class sizes of released buffers kept */
  uint64_t high_water_bytes; /* the most bytes_in_use has been */
  uint64_t resident_bytes;   /* arena pages present in memory now */
  uint64_t locked_bytes;     /* arena bytes mlock'd now */
  uint64_t huge_bytes;       /* arena bytes mapped with huge pages now */
  uint64_t remote_node_pages; /* resident pages not on numa_node (0 if unbound) */
} mlos_tmm_stats_t;
/* The first version of mlos_tmm_stats_t: struct_size may be as small as this. */
#define MLOS_TMM_STATS_SIZE_V1 MLOS_SIZE_THROUGH(mlos_tmm_stats_t, remote_node_pages)


/* Creates a pool for `resources` (the job whose memory_bytes it counts
 * against and whose node it uses; may be NULL for a pool of no job).
 * Errors: INVALID_HANDLE, INVALID_ARGUMENT (NULL options or pool, capacity
 * 0, unknown flags, reserved not zero, name with '/' or over 200 bytes),
 * VERSION_MISMATCH (struct_size), INVALID_NUMA_NODE, INSUFFICIENT_MEMORY
 * (over the job's memory_bytes), NO_MEMORY (the arena cannot be mapped),
 * LOCK_LIMIT, UNSUPPORTED (HUGETLB or CUDA_PINNED not available here; the
 * message says why), SYSTEM. */
MLOS_API int mlos_tmm_pool_create(mlos_training_resources_t* resources,
                                  const mlos_tmm_pool_options_t* options,
                                  mlos_tmm_pool_t** pool);

/* Unmaps the arena and returns its reservation to the job. Errors:
 * INVALID_HANDLE, BUSY (buffers still acquired: release them first; the
 * pool stays usable). */
MLOS_API int mlos_tmm_pool_destroy(mlos_tmm_pool_t* pool);

/* Hands out a buffer of at least `size` bytes (contents unspecified: a
 * reused buffer keeps what was written into it). Errors: INVALID_HANDLE,
 * INVALID_ARGUMENT (size 0 or over the capacity, NULL buffer), NO_MEMORY
 * (the pool is full: nothing cached fits and no free range is large
 * enough), LOCK_LIMIT. */
MLOS_API int mlos_tmm_acquire(mlos_tmm_pool_t* pool, size_t size, mlos_tmm_buffer_t* buffer);

/* Takes back a buffer by its data pointer (it is unpinned if pinned).
 * Errors: INVALID_HANDLE, INVALID_ARGUMENT (not the start of a buffer of
 * this pool that is acquired: e.g. released twice). */
MLOS_API int mlos_tmm_release(mlos_tmm_pool_t* pool, void* data);

/* Carves `count` buffers of `size`'s class, faults their pages in (on the
 * pool's node) and keeps them for reuse, so the first steps of training do
 * not pay page faults. Buffers already cached count towards `count`.
 * Errors: INVALID_HANDLE, INVALID_ARGUMENT (size 0 or over the capacity),
 * NO_MEMORY (the pool filled up; what was prewarmed stays). */
MLOS_API int mlos_tmm_prewarm(mlos_tmm_pool_t* pool, size_t size, size_t count);

/* Locks (pin) or unlocks (unpin) the pages of one acquired buffer against
 * eviction. Errors: INVALID_HANDLE, INVALID_ARGUMENT (not an acquired
 * buffer; unpin in a MLOS_TMM_LOCKED pool, which is locked as a whole),
 * LOCK_LIMIT. Pinning a pinned buffer is MLOS_OK. */
MLOS_API int mlos_tmm_pin(mlos_tmm_pool_t* pool, void* data);
MLOS_API int mlos_tmm_unpin(mlos_tmm_pool_t* pool, void* data);

/* Gives the memory of released buffers back to the kernel (their pages are
 * punched out of the arena; the buffers stay cached, and fault in anew when
 * reused). *freed_bytes (may be NULL) gets the bytes given back. Errors:
 * INVALID_HANDLE, SYSTEM. */
MLOS_API int mlos_tmm_trim(mlos_tmm_pool_t* pool, uint64_t* freed_bytes);

/* Fills `stats` (struct_size set by the caller; see mlos_training_get_placement
 * for the versioning rule). Errors: INVALID_HANDLE, INVALID_ARGUMENT,
 * VERSION_MISMATCH. */
MLOS_API int mlos_tmm_get_stats(mlos_tmm_pool_t* pool, mlos_tmm_stats_t* stats);

/* What the pool asked for and did not get, one "effect: reason" line each
 * (e.g. "huge_pages: shmem THP is off ..."); "" if everything was obtained.
 * Same buffer contract as mlos_training_get_notes. */
MLOS_API int mlos_tmm_get_notes(mlos_tmm_pool_t* pool, char* buf, size_t len, size_t* needed);

/* The arena's memfd, sealed against shrinking and growing: pass it over a
 * Unix socket (SCM_RIGHTS) and the peer maps it with mlos_tmm_map_arena.
 * The descriptor stays the pool's (close-on-exec); dup it to keep it.
 * Errors: INVALID_HANDLE, INVALID_ARGUMENT (NULL fd), UNSUPPORTED
 * (a MLOS_TMM_PRIVATE pool). */
MLOS_API int mlos_tmm_pool_fd(mlos_tmm_pool_t* pool, int* fd);

/* A pool's arena mapped by a process that received its descriptor. */
typedef struct mlos_tmm_mapping {
  void* base;    /* buffer `offset` lies at base + offset */
  uint64_t size; /* the arena's size */
} mlos_tmm_mapping_t;

/* Maps an arena received from another process read-write and shared.
 * Only a sealed arena is mapped: an unsealed file could be truncated under
 * the mapping by its owner, and a read would then kill this process with
 * SIGBUS. Errors: INVALID_ARGUMENT (NULL mapping, bad descriptor, not a
 * memfd sealed against shrinking), NO_MEMORY, SYSTEM. */
MLOS_API int mlos_tmm_map_arena(int fd, mlos_tmm_mapping_t* mapping);

/* Unmaps what mlos_tmm_map_arena mapped and zeroes *mapping. Errors:
 * INVALID_ARGUMENT (NULL, or not a mapping from mlos_tmm_map_arena). */
MLOS_API int mlos_tmm_unmap_arena(mlos_tmm_mapping_t* mapping);

#ifdef __cplusplus
}
#endif

#endif /* MLOS_TMM_H_ */
