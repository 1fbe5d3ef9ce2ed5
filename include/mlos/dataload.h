/* SPDX-License-Identifier: Apache-2.0 */
/* mlOS data loading: decoding and augmentation off the trainer's hands.
 *
 * mlos_dataload_start spawns a helper process, `mlos-dataload`, for the
 * caller: it runs as the caller's user (it reads exactly the files the job
 * can read), on the job's CPUs, under its own seccomp filter (file reads
 * io_uring reads and memory; no network, no exec, no new processes), and decodes and
 * transforms samples with a pool of threads. It writes whole batches into
 * slots of a tensor pool (mlos/tmm.h) that the trainer owns and the helper
 * maps by descriptor; the trainer reads them in place: no copy, no pickling,
 * no Python thread decoding.
 *
 * The trainer <-> helper interface (docs/dataload.md):
 *  - start: the library creates the pool (counted against the job's
 *    memory_bytes), spawns the helper with a SOCK_SEQPACKET socketpair on
 *    descriptor 3 and the pool's sealed memfd on descriptor 4, and sends the
 *    options and the slots' offsets. The helper opens the source, answers
 *    with the dataset's size, and waits.
 *  - epochs: mlos_dataload_start_epoch(e) has the helper produce epoch e's
 *    batches (the order shuffled by seed + e, this rank's share as
 *    torch's DistributedSampler gives it). Each batch is written into a free
 *    slot and announced; mlos_dataload_next returns it; the caller hands the
 *    slot back with mlos_dataload_release_batch once it no longer reads it.
 *  - batches may arrive out of order (a slow sample does not hold back the
 *    batches after it) unless MLOS_DATALOAD_IN_ORDER; which samples make up
 *    batch k, their crops and flips depend only on seed, epoch and k. Every
 *    sample of the epoch is delivered exactly once, or reported as bad.
 *  - bad samples (corrupt, truncated, not an image, deleted mid-epoch) are
 *    left out of their batch (count shrinks) and reported with their path
 *    (mlos_dataload_get_errors); with MLOS_DATALOAD_STRICT the epoch fails
 *    instead (MLOS_ERR_INVALID_ARGUMENT from mlos_dataload_next).
 *  - death: if the helper dies, the next call returns MLOS_ERR_PEER_LOST
 *    with how it ended; if the trainer dies, the helper sees its socket
 *    close and exits.
 *
 * Contracts as in training.h: MLOS_OK or a negative mlos_error_t, nothing
 * changed on failure, mlos_last_error_message() says why. A loader is used
 * by one thread at a time.
 */
#ifndef MLOS_DATALOAD_H_
#define MLOS_DATALOAD_H_

#include <stddef.h>
#include <stdint.h>

#include "mlos/errors.h"
#include "mlos/export.h"
#include "mlos/training.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mlos_dataload mlos_dataload_t;

typedef enum mlos_dataload_transform {
  /* RandomResizedCrop(size, scale 0.08-1, ratio 3/4-4/3), horizontal flip
   * with p 0.5: torchvision's ImageNet training recipe. */
  MLOS_DATALOAD_TRAIN = 0,
  /* Resize the shorter side to size * 256 / 224, centre crop size. */
  MLOS_DATALOAD_VAL = 1
} mlos_dataload_transform_t;

typedef enum mlos_dataload_layout {
  MLOS_DATALOAD_F32_CHW = 0, /* float32 3 x H x W, ImageNet mean/std normalised */
  MLOS_DATALOAD_U8_CHW = 1,  /* uint8 3 x H x W */
  MLOS_DATALOAD_U8_HWC = 2   /* uint8 H x W x 3 */
} mlos_dataload_layout_t;

/* Bits of mlos_dataload_options_t.flags. */
typedef enum mlos_dataload_flag {
  MLOS_DATALOAD_NO_SHUFFLE = 1u << 0, /* dataset order (still sharded by rank) */
  MLOS_DATALOAD_DROP_LAST = 1u << 1,  /* drop this rank's last, incomplete batch */
  MLOS_DATALOAD_STRICT = 1u << 2,     /* a bad sample fails the epoch */
  MLOS_DATALOAD_IN_ORDER = 1u << 3,   /* deliver batches in index order */
  MLOS_DATALOAD_PREAD = 1u << 4       /* read with pread in the decoding threads, never io_uring */
} mlos_dataload_flag_t;

/* How the helper reads samples (mlos_dataload_stats_t.reader). */
typedef enum mlos_dataload_reader {
  /* One thread keeps up to 64 reads in flight through an io_uring ring
   * restricted to IORING_OP_READ, ahead of the decoding threads, within
   * the read-ahead bound. */
  MLOS_DATALOAD_READER_IO_URING = 0,
  /* Each decoding thread reads its own sample with pread, with
   * posix_fadvise(WILLNEED) hints for the samples after it: asked for with
   * MLOS_DATALOAD_PREAD, or the kernel refused io_uring (the notes say
   * why). */
  MLOS_DATALOAD_READER_PREAD = 1
} mlos_dataload_reader_t;

typedef struct mlos_dataload_options {
  uint32_t struct_size; /* sizeof(mlos_dataload_options_t) */
  uint32_t flags;       /* mlos_dataload_flag_t bits */
  /* A torchvision ImageFolder directory; a WebDataset tar shard, glob or
   * brace pattern ("train-{000000..000099}.tar"); or a text file of
   * "path<TAB>label" lines. */
  const char* source;
  uint32_t batch_size;  /* samples per batch, > 0 */
  uint32_t image_size;  /* output height = width, 8..4096 (224) */
  uint32_t transform;   /* mlos_dataload_transform_t */
  uint32_t layout;      /* mlos_dataload_layout_t */
  uint64_t seed;
  uint32_t rank;        /* this process's share of each epoch ... */
  uint32_t world_size;  /* ... of world_size (0 means 1) */
  uint32_t workers;     /* decoding threads; 0: one per CPU of the job (or of the process) */
  uint32_t prefetch;    /* batch slots; 0: 2 per worker, at least 2 */
} mlos_dataload_options_t;
/* The first version of mlos_dataload_options_t: struct_size may be as small as this. */
#define MLOS_DATALOAD_OPTIONS_SIZE_V1 MLOS_SIZE_THROUGH(mlos_dataload_options_t, prefetch)


typedef struct mlos_dataload_info {
  uint32_t struct_size;     /* set by the caller */
  uint32_t classes;         /* class names known to the source (ImageFolder), else 0 */
  uint64_t samples;         /* in the dataset */
  uint64_t samples_per_epoch; /* this rank's */
  uint64_t batches_per_epoch;
  uint64_t sample_bytes;    /* one packed sample */
  uint32_t workers;
  uint32_t slots;
  int32_t helper_pid;
  uint32_t reserved;
} mlos_dataload_info_t;
/* The first version of mlos_dataload_info_t: struct_size may be as small as this. */
#define MLOS_DATALOAD_INFO_SIZE_V1 MLOS_SIZE_THROUGH(mlos_dataload_info_t, reserved)


typedef struct mlos_dataload_batch {
  void* images;          /* count packed samples, in the pool's memory */
  const int64_t* labels; /* count labels */
  uint32_t count;        /* samples delivered (fewer for a last batch or when some were bad) */
  uint32_t skipped;      /* bad samples left out of this batch */
  uint64_t index;        /* batch index within the epoch */
  uint64_t epoch;
  uint32_t slot;         /* for mlos_dataload_release_batch */
  uint32_t reserved;
} mlos_dataload_batch_t;

typedef struct mlos_dataload_stats {
  uint32_t struct_size;      /* set by the caller */
  uint32_t reader;           /* mlos_dataload_reader_t */
  uint64_t read_ahead_bytes; /* bound on samples read and not yet decoded */
  uint32_t workers;          /* decoding threads started */
  /* Of them, the ones allowed to work as of the latest batch: the helper
   * takes threads away while batches wait for a trainer that never waits
   * for them, and gives them back when it does (docs/dataload.md). */
  uint32_t active_workers;
  uint64_t batches;          /* delivered by mlos_dataload_next since the start */
  uint64_t wait_ns;          /* the caller's time blocked in mlos_dataload_next */
} mlos_dataload_stats_t;
/* The first version of mlos_dataload_stats_t: struct_size may be as small as this. */
#define MLOS_DATALOAD_STATS_SIZE_V1 MLOS_SIZE_THROUGH(mlos_dataload_stats_t, wait_ns)


/* mlos_dataload_next's result at the end of an epoch (not an error). */
#define MLOS_DATALOAD_END 1

/* Starts a loader for `resources` (may be NULL: no job; the pool is then
 * counted against nothing and the helper runs on the process's CPUs).
 * Errors: INVALID_ARGUMENT (bad option; the source cannot be opened or
 * read, with the helper's reason), INVALID_HANDLE, VERSION_MISMATCH,
 * NOT_FOUND (no such source), INSUFFICIENT_MEMORY (the slots do not fit the
 * job's memory_bytes), UNSUPPORTED (no mlos-dataload binary found: the
 * message names where the library looked), PEER_LOST (the helper died while
 * starting), SYSTEM. */
MLOS_API int mlos_dataload_start(mlos_training_resources_t* resources, const mlos_dataload_options_t* options,
                                 mlos_dataload_t** loader);

/* Sizes of the dataset and of an epoch. Errors: INVALID_HANDLE,
 * INVALID_ARGUMENT, VERSION_MISMATCH. */
MLOS_API int mlos_dataload_get_info(mlos_dataload_t* loader, mlos_dataload_info_t* info);

/* Begins producing epoch `epoch`'s batches. Batches of an unfinished
 * previous epoch not yet returned are dropped (their slots come back once
 * released). Errors: INVALID_HANDLE, PEER_LOST. */
MLOS_API int mlos_dataload_start_epoch(mlos_dataload_t* loader, uint64_t epoch);

/* Waits up to timeout_ms (< 0: no limit) for the next batch of the current
 * epoch. Returns MLOS_OK with *batch filled, MLOS_DATALOAD_END when every
 * batch of the epoch was returned, or an error: INVALID_HANDLE,
 * INVALID_ARGUMENT (no epoch started; a bad sample under STRICT), BUSY
 * (every slot holds a batch the caller has not released: nothing can
 * come), TIMEOUT, PEER_LOST (the helper died: the message says how). */
MLOS_API int mlos_dataload_next(mlos_dataload_t* loader, mlos_dataload_batch_t* batch, int64_t timeout_ms);

/* Gives a batch's slot back for the helper to fill again; the batch's
 * memory must not be read afterwards. Errors: INVALID_HANDLE,
 * INVALID_ARGUMENT (not a slot handed out, or released twice). */
MLOS_API int mlos_dataload_release_batch(mlos_dataload_t* loader, uint32_t slot);

/* The bad samples of the current epoch so far, one "path: reason" line
 * each (the latest 1000). Same buffer contract as mlos_training_get_notes.
 * Errors: INVALID_HANDLE, INVALID_ARGUMENT, BUFFER_TOO_SMALL. */
MLOS_API int mlos_dataload_get_errors(mlos_dataload_t* loader, char* buf, size_t len, size_t* needed);

/* How the loader runs now. Fills min(info->struct_size,
 * sizeof(mlos_dataload_stats_t)) bytes. Errors: INVALID_HANDLE,
 * INVALID_ARGUMENT, VERSION_MISMATCH. */
MLOS_API int mlos_dataload_get_stats(mlos_dataload_t* loader, mlos_dataload_stats_t* stats);

/* How the helper reads, one line each: the reader and its bound, and why
 * it fell back to pread if it did. Same buffer contract as
 * mlos_training_get_notes. Errors: INVALID_HANDLE, INVALID_ARGUMENT,
 * BUFFER_TOO_SMALL. */
MLOS_API int mlos_dataload_get_notes(mlos_dataload_t* loader, char* buf, size_t len, size_t* needed);

/* Stops the helper (it exits; killed after 2 s), unmaps the slots and
 * ends the handle: batches not released must not be read afterwards.
 * Errors: INVALID_HANDLE. */
MLOS_API int mlos_dataload_stop(mlos_dataload_t* loader);

#ifdef __cplusplus
}
#endif

#endif /* MLOS_DATALOAD_H_ */
