/* SPDX-License-Identifier: Apache-2.0 */
/* mlOS collectives: a rendezvous store supplied by the caller.
 *
 * mlos_training_barrier and mlos_training_allreduce find their peers through
 * a key-value store. By default it is named by MLOS_STORE: "file:/dir" (a
 * shared directory), "redis://host:port" (a Redis server) or
 * "tcp://host:port" (a TCPStore, torch's protocol). Without MLOS_STORE the
 * library uses a TCPStore at MASTER_ADDR:MASTER_PORT, as torchrun sets them
 * (docs/collectives.md).
 *
 * With a TCPStore, the call that creates the group on rank 0 (its first
 * collective call) may open a listening socket: when the host is an address
 * of rank 0's machine, no TCPStore answers at host:port and torchrun's agent
 * does not serve it (TORCHELASTIC_USE_AGENT_STORE), rank 0 starts a TCPStore
 * server on that port until the process exits: on the address asked for
 * (127.0.0.1: loopback only; a host name: every address), serving anyone
 * who reaches it unless every rank has MLOS_STORE_SECRET (then only ranks
 * that send it; docs/collectives.md). To avoid it, name a store:
 * MLOS_STORE=file:... or redis://..., a tcp:// store that already runs, or
 * one handed over with mlos_training_set_collective_store below.
 *
 * A program that already has a store, e.g. the TCPStore that torchrun
 * serves at MASTER_ADDR:MASTER_PORT reached through torch.distributed,
 * hands it to the library with mlos_training_set_collective_store; the
 * Python MLOSProcessGroup does exactly that. */
#ifndef MLOS_COLLECTIVES_H_
#define MLOS_COLLECTIVES_H_

#include <stddef.h>
#include <stdint.h>

#include "mlos/training.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Callbacks over the caller's store. Keys are NUL-terminated; values are
 * bytes. Each returns MLOS_OK, MLOS_ERR_TIMEOUT when a wait ran out, or
 * another negative MLOS_ERR_* (the group's creation then fails with it).
 * They are called only while a group is being created (inside the first
 * collective call of a handle, or the first after an error), from a thread
 * the library starts for that, one call at a time. */
typedef struct mlos_collective_store {
  uint32_t struct_size; /* sizeof(mlos_collective_store_t) */
  void* user_data;      /* passed to every callback */
  int (*set)(void* user_data, const char* key, const void* value, size_t size);
  /* Waits up to timeout_ms for `key`, then returns its value in a buffer
   * from malloc() that the library frees (NULL allowed when *size is 0). */
  int (*get)(void* user_data, const char* key, void** value, size_t* size, int64_t timeout_ms);
  /* Waits up to timeout_ms until every key exists. */
  int (*wait)(void* user_data, const char* const* keys, size_t count, int64_t timeout_ms);
  /* Optional (may be NULL): the library will not call this store again,
   * because it was replaced or the resources were released. */
  void (*release)(void* user_data);
  /* Optional (may be NULL; absent from callers built before it: their
   * struct_size ends before it): sets `key` to `desired` when it is absent
   * (`expected_size` 0) or holds `expected`, and returns the value it holds
   * afterwards, as get does, as torch's Store.compare_set does. With it a
   * rank number given to two processes is refused at the rendezvous
   * (INVALID_ARGUMENT); without it, the rendezvous ends in TIMEOUT. */
  int (*compare_set)(void* user_data, const char* key, const void* expected, size_t expected_size,
                     const void* desired, size_t desired_size, void** value, size_t* size);
} mlos_collective_store_t;

/* The struct_size of mlos_collective_store_t before compare_set (also
 * accepted). */
#define MLOS_COLLECTIVE_STORE_SIZE_V1 offsetof(mlos_collective_store_t, compare_set)

/* Uses `store` (copied; the callbacks must stay valid until `release`) for
 * the rendezvous of this handle's next group, instead of MLOS_STORE. A live
 * group keeps working; the store matters when a group is created. NULL
 * store: back to MLOS_STORE. Keys are written under MLOS_GROUP's prefix as
 * usual, so several groups can share one store. Errors: INVALID_HANDLE,
 * INVALID_ARGUMENT (set, get or wait missing), VERSION_MISMATCH. */
MLOS_API int mlos_training_set_collective_store(mlos_training_resources_t* resources,
                                                const mlos_collective_store_t* store);

/* Per-handle settings that win over the environment. */
typedef struct mlos_collective_options {
  uint32_t struct_size; /* sizeof(mlos_collective_options_t) */
  /* Bound on the rendezvous and on every operation, 1..3600000 ms; 0: from
   * MLOS_COLLECTIVE_TIMEOUT_MS (default 30000). */
  int64_t timeout_ms;
  /* Key prefix in the store (copied), no spaces or '/'; NULL: MLOS_GROUP
   * (default "mlos"). Groups sharing a store need different ones. */
  const char* group;
} mlos_collective_options_t;
/* The first version of mlos_collective_options_t: struct_size may be as small as this. */
#define MLOS_COLLECTIVE_OPTIONS_SIZE_V1 MLOS_SIZE_THROUGH(mlos_collective_options_t, group)


/* Applies `options` to this handle's next group (a live group keeps its
 * own). NULL: back to the environment. Errors: INVALID_HANDLE,
 * INVALID_ARGUMENT (timeout out of range, bad group name),
 * VERSION_MISMATCH. */
MLOS_API int mlos_training_set_collective_options(mlos_training_resources_t* resources,
                                                  const mlos_collective_options_t* options);

/* Moving bytes between the ranks of the handle's group, as
 * mlos_training_barrier joins it (rank from the live group or RANK;
 * `world_size` must be the group's). Host memory only: a buffer in GPU
 * memory is UNSUPPORTED. Every rank passes the same `bytes` (and `root`).
 * bytes 0 only synchronises. Errors: as mlos_training_barrier, plus
 * INVALID_ARGUMENT (a NULL buffer with bytes > 0, root out of range) and
 * UNSUPPORTED. On error the output may hold partial results. */

/* Rank `root`'s `bytes` bytes at `data` into every rank's `data`. */
MLOS_API int mlos_training_broadcast(mlos_training_resources_t* resources, void* data, size_t bytes, int root,
                                     int world_size);

/* Every rank's `bytes` bytes at `input`, in rank order, into `output`
 * (world_size * bytes). `input` may be this rank's part of `output`. */
MLOS_API int mlos_training_allgather(mlos_training_resources_t* resources, const void* input, void* output,
                                     size_t bytes, int world_size);

/* Every rank's `bytes` bytes at `input`, in rank order, into rank
 * `root`'s `output` (world_size * bytes); `output` is not used elsewhere
 * (may be NULL). `input` and `output` must not overlap. */
MLOS_API int mlos_training_gather(mlos_training_resources_t* resources, const void* input, void* output,
                                  size_t bytes, int root, int world_size);

/* Rank `root`'s `input` (world_size chunks of `bytes`, chunk i for rank i)
 * into every rank's `output` (`bytes`); `input` is not used elsewhere (may
 * be NULL). `input` and `output` must not overlap. */
MLOS_API int mlos_training_scatter(mlos_training_resources_t* resources, const void* input, void* output,
                                   size_t bytes, int root, int world_size);

/* Personalised exchange: `input` holds world_size chunks back to back in
 * rank order, chunk i (send_bytes[i] bytes) going to rank i; `output`
 * receives from every rank r its chunk for this rank (recv_bytes[r] bytes),
 * back to back in rank order. Rank i's send_bytes[j] must equal rank j's
 * recv_bytes[i] (a mismatch is not detected: it fails with TIMEOUT or
 * PEER_LOST, or leaves short chunks). Counts may be 0; `input` and
 * `output` must not overlap. Errors also INVALID_ARGUMENT for NULL count
 * arrays or overlapping buffers. */
MLOS_API int mlos_training_alltoall(mlos_training_resources_t* resources, const void* input,
                                    const size_t* send_bytes, void* output, const size_t* recv_bytes,
                                    int world_size);

/* Point-to-point transfers between two ranks of the handle's group (the
 * group as mlos_training_barrier joins it; `world_size` must be the
 * group's). Posting returns at once, without waiting for the peer; the
 * buffer must stay valid, and a send's unchanged, until
 * mlos_training_wait_transfer returns. A send to rank d with tag t is
 * matched with rank d's receive from this rank (or from any rank) with
 * tag t, in posting order per (peer, tag); byte counts must agree (a
 * mismatch is not detected: it fails with TIMEOUT or PEER_LOST, or leaves
 * a short buffer). Unlike the collectives, transfers may be posted and
 * waited for from any thread, also while a collective of the same handle
 * runs on another thread. Host memory only (a GPU buffer is UNSUPPORTED).
 * Errors when posting: as mlos_training_barrier (the first call may create
 * the group), plus INVALID_ARGUMENT (a NULL buffer with bytes > 0, or
 * `transfer`; a peer that is not another rank of the group) and
 * UNSUPPORTED. A transfer that fails or times out breaks the group, as a
 * failed collective does. */
typedef struct mlos_transfer mlos_transfer_t;

/* Posts a send of `bytes` at `data` to rank `dst`; *transfer receives the
 * pending transfer, to be waited for once. */
MLOS_API int mlos_training_isend(mlos_training_resources_t* resources, const void* data, size_t bytes, int dst,
                                 uint32_t tag, int world_size, mlos_transfer_t** transfer);

/* Posts a receive of `bytes` into `data` from rank `src`, or from
 * whichever rank's matching send comes first when `src` is -1. */
MLOS_API int mlos_training_irecv(mlos_training_resources_t* resources, void* data, size_t bytes, int src,
                                 uint32_t tag, int world_size, mlos_transfer_t** transfer);

/* Waits until the transfer completed (a send: its bytes left this process;
 * a receive: they arrived), at most the group's timeout, and frees it
 * whatever the result. *peer (may be NULL) receives the other rank.
 * Returns MLOS_OK, TIMEOUT, PEER_LOST, or INVALID_ARGUMENT for a NULL
 * transfer. A transfer never waited for is leaked, and dropped unfinished
 * when the process exits. */
MLOS_API int mlos_training_wait_transfer(mlos_transfer_t* transfer, int* peer);

#ifdef __cplusplus
}
#endif

#endif /* MLOS_COLLECTIVES_H_ */
