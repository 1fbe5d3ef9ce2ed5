/* SPDX-License-Identifier: Apache-2.0 */
/* mlOS durable checkpoints: an atomic, crash-safe checkpoint writer and a
 * verifying reader (an extension of the Training Workload API; see
 * docs/checkpoints.md).
 *
 * Conventions are those of mlos/training.h and mlos/errors.h: opaque
 * handles with open/close pairs; int results are MLOS_OK or a negative
 * mlos_error_t, with details in mlos_last_error_message(); failing calls
 * change nothing unless stated; versioned structs start with struct_size;
 * data the library returns is freed with mlos_checkpoint_free_data.
 *
 * Files: each save writes "<dir>/<prefix>-<20-digit sequence>.mlosckpt",
 * the payload followed by a 48-byte footer (magic, format version, flags,
 * payload length, sequence, XXH3-64 of the payload, checksum of the footer).
 * A save creates "<final name>.tmp" in the same directory, writes and
 * fdatasyncs it, renames it, and fsyncs the directory: after a crash at any
 * moment the directory holds the previous checkpoint and possibly the new
 * one, complete, never a torn file. It does not protect against a disk that
 * acknowledges flushes it has not done. The writer holds an advisory lock
 * (".<prefix>.mlosckpt.lock" in dir) so that one writer per directory and
 * prefix runs at a time.
 *
 * Handles: a writer handle is an opaque number, never reused in a process;
 * a NULL, closed or made-up handle returns MLOS_ERR_INVALID_HANDLE. A writer
 * belongs to the process that opened it: in a forked child every call on it
 * returns MLOS_ERR_INVALID_HANDLE (close only forgets the child's copy).
 *
 * Thread-safety: every function is thread-safe and one writer may be used
 * from several threads at once. A call racing with close either completes
 * before the writer closes or returns MLOS_ERR_INVALID_HANDLE. */
#ifndef MLOS_CHECKPOINT_H_
#define MLOS_CHECKPOINT_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mlos/errors.h"
#include "mlos/export.h"
#include "mlos/training.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Opaque writer handle. */
typedef struct mlos_checkpoint_writer mlos_checkpoint_writer_t;

/* Bits of mlos_checkpoint_options_t.flags. */
enum {
  /* If the staging memory of save_async cannot be locked (RLIMIT_MEMLOCK,
   * no CAP_IPC_LOCK), stage in ordinary prefaulted memory instead of failing
   * with MLOS_ERR_LOCK_LIMIT. Such memory is not counted against the
   * resources' memory budget; mlos_checkpoint_writer_get_info reports
   * staging_locked = false, and a warning is logged (mlos/log.h). */
  MLOS_CHECKPOINT_ALLOW_UNLOCKED_STAGING = 1u << 0
};

#define MLOS_CHECKPOINT_DEFAULT_KEEP_LAST 3
#define MLOS_CHECKPOINT_DEFAULT_PREFIX "ckpt"

typedef struct mlos_checkpoint_options {
  uint32_t struct_size; /* sizeof(mlos_checkpoint_options_t) */
  /* Checkpoints kept after a successful save (older ones are deleted only
   * once the new one is durable); 0 = MLOS_CHECKPOINT_DEFAULT_KEEP_LAST. */
  uint32_t keep_last;
  /* File-name prefix, [A-Za-z0-9_.-]{1,64} not starting with '.' (no
   * hidden files; "." and ".." are refused); NULL = "ckpt". Copied. */
  const char* prefix;
  /* Optional: staging memory for save_async comes from this job's
   * checkpoint buffers (locked, counted against its memory_bytes), and each
   * save made durable counts in the job's activity (its bytes and writing
   * time; under mlosd, the mlos_job_checkpoint_* metrics). Releasing the
   * handle while an asynchronous save is in flight waits for that save to
   * finish writing; later save_async calls then fail with
   * INVALID_HANDLE. Close the writer first. */
  mlos_training_resources_t* resources;
  uint32_t flags; /* MLOS_CHECKPOINT_* */
} mlos_checkpoint_options_t;
/* The first version of mlos_checkpoint_options_t: struct_size may be as small as this. */
#define MLOS_CHECKPOINT_OPTIONS_SIZE_V1 MLOS_SIZE_THROUGH(mlos_checkpoint_options_t, flags)


/* Opens a writer on the existing directory `dir` (not created). Removes
 * temporaries a crashed writer of the same prefix left behind; sequence
 * numbers continue after the newest checkpoint file of that prefix (1 in an
 * empty directory). options may be NULL (all defaults).
 * Errors: INVALID_ARGUMENT (dir or writer NULL, bad prefix, unknown flag
 * bits), VERSION_MISMATCH (options->struct_size too small), INVALID_HANDLE
 * (options->resources not a live handle of this process), NOT_FOUND (dir
 * does not exist or is not a directory), PERMISSION, SYSTEM (including
 * errno EWOULDBLOCK: another writer, in this or another process, has this
 * prefix in dir open). On error *writer is set to NULL. */
MLOS_API int mlos_checkpoint_writer_open(const char* dir, const mlos_checkpoint_options_t* options,
                                         mlos_checkpoint_writer_t** writer);

/* Waits for a pending async save, stops the writer's thread, frees its
 * staging memory, releases the directory lock and ends the handle. Returns
 * the first error of an async save that no mlos_checkpoint_wait reported
 * (IO), else MLOS_OK; the writer is closed either way. NULL returns MLOS_OK;
 * a second close of the same handle returns INVALID_HANDLE. */
MLOS_API int mlos_checkpoint_writer_close(mlos_checkpoint_writer_t* writer);

/* Saves `size` bytes as the next checkpoint; durable when MLOS_OK returns.
 * Waits first while an async save of this writer is in flight (saves are
 * written one at a time, in sequence order). On success *sequence (may be
 * NULL) is the new checkpoint's sequence, and checkpoints beyond keep_last
 * are deleted. Errors: INVALID_HANDLE, INVALID_ARGUMENT (data NULL, size 0),
 * IO (ENOSPC, EIO from write or fsync, a failed rename...: the message has
 * the errno; no file of this save remains, the previous checkpoint is intact
 * and the writer stays usable; the failed save used up its sequence number).
 */
MLOS_API int mlos_checkpoint_save(mlos_checkpoint_writer_t* writer, const void* data, size_t size,
                                  uint64_t* sequence);

/* Copies `size` bytes into the writer's staging memory and returns; a
 * background thread (at the CHECKPOINT phase's I/O priority, best-effort
 * level 0) then saves them exactly as mlos_checkpoint_save would. The
 * caller may reuse `data` as soon as this returns. *ticket is the sequence
 * the checkpoint will have; pass it to mlos_checkpoint_wait.
 * Blocking rule: there is one staging area per writer, so this call first
 * waits until the previous async save has been written (or failed).
 * Staging memory is mmap'd, prefaulted and mlock'd (visible in VmLck), kept
 * for the next save and grown when a bigger one arrives; with
 * options.resources it is a checkpoint buffer of that job.
 * Errors: INVALID_HANDLE, INVALID_ARGUMENT (data or ticket NULL, size 0),
 * LOCK_LIMIT (staging cannot be locked and
 * MLOS_CHECKPOINT_ALLOW_UNLOCKED_STAGING is not set), INSUFFICIENT_MEMORY
 * (staging would exceed the job's memory_bytes), NO_MEMORY, SYSTEM. On error
 * nothing is saved and no sequence number is used. */
MLOS_API int mlos_checkpoint_save_async(mlos_checkpoint_writer_t* writer, const void* data, size_t size,
                                        uint64_t* ticket);

/* Waits for save `ticket` (an async ticket or a sequence a synchronous save
 * of this writer returned) and returns its result: MLOS_OK once it is
 * durable, or the IO error it failed with (as mlos_checkpoint_save
 * describes). timeout_ms < 0 waits forever, 0 polls. Errors: INVALID_HANDLE,
 * INVALID_ARGUMENT (ticket not issued by this writer), TIMEOUT (not finished
 * yet; wait again), IO. */
MLOS_API int mlos_checkpoint_wait(mlos_checkpoint_writer_t* writer, uint64_t ticket, int timeout_ms);

typedef struct mlos_checkpoint_writer_info {
  uint32_t struct_size;          /* in: sizeof(mlos_checkpoint_writer_info_t) */
  uint64_t next_sequence;        /* the sequence the next save will get */
  uint64_t last_saved_sequence;  /* newest successful save of this writer; 0 = none */
  uint64_t saves_succeeded;
  uint64_t saves_failed;
  uint64_t retention_deleted;    /* files deleted by keep_last */
  size_t staging_bytes;          /* staging memory held now (page-rounded) */
  bool staging_locked;           /* false: unlocked fallback in use (see flags) */
  bool io_priority_applied;      /* the async thread got CHECKPOINT's I/O priority */
} mlos_checkpoint_writer_info_t;
/* The first version of mlos_checkpoint_writer_info_t: struct_size may be as small as this. */
#define MLOS_CHECKPOINT_WRITER_INFO_SIZE_V1 MLOS_SIZE_THROUGH(mlos_checkpoint_writer_info_t, io_priority_applied)


/* Fills `info` up to info->struct_size or this library's
 * sizeof(mlos_checkpoint_writer_info_t), whichever is smaller; bytes beyond
 * are not touched. Errors: INVALID_HANDLE, INVALID_ARGUMENT (NULL),
 * VERSION_MISMATCH (struct_size smaller than the first version). */
MLOS_API int mlos_checkpoint_writer_get_info(const mlos_checkpoint_writer_t* writer,
                                             mlos_checkpoint_writer_info_t* info);

/* Loads the newest checkpoint of `prefix` (NULL = "ckpt") in `dir` that
 * verifies. Newer files that fail verification (torn, truncated, damaged,
 * renamed, or not a regular file: a FIFO, socket, device or directory with a
 * checkpoint's name, which is never waited on) are skipped, and
 * *damaged_skipped (may be NULL) says how many.
 * On success *data is a malloc'd copy of the payload (free it with
 * mlos_checkpoint_free_data), *size its length and *sequence (may be NULL)
 * its sequence. Errors: INVALID_ARGUMENT (dir, data or size NULL, bad
 * prefix), NOT_FOUND (dir missing, or no checkpoint of that prefix),
 * CHECKPOINT_CORRUPT (checkpoints exist but none verifies; the message names
 * the newest and the check it failed), PERMISSION, NO_MEMORY, SYSTEM. On
 * error *data is NULL and *size 0. */
MLOS_API int mlos_checkpoint_load_latest(const char* dir, const char* prefix, void** data, size_t* size,
                                         uint64_t* sequence, uint32_t* damaged_skipped);

/* Frees a payload from mlos_checkpoint_load_latest. NULL is ignored. */
MLOS_API void mlos_checkpoint_free_data(void* data);

/* Replaces the file `path` with exactly `size` bytes, by the writer's
 * protocol (temporary file in the same directory, fdatasync, rename,
 * directory fsync) but without the footer: for files that other programs
 * read as they are, e.g. what torch.save produces. After a crash at any
 * moment `path` is the old file or the new one, never torn; a process
 * killed mid-write may leave "<path>.mlos-tmp.<pid>.<n>" behind. data may be
 * NULL when size is 0. Errors: INVALID_ARGUMENT (path NULL or ending in
 * '/', data NULL with size > 0), NOT_FOUND (the directory does not exist),
 * IO (the message has the errno; `path` is untouched). */
MLOS_API int mlos_checkpoint_write_file(const char* path, const void* data, size_t size);

/* Verifies one checkpoint file: footer (magic, version, footer checksum),
 * length and payload checksum. On success *sequence and *size (each may be
 * NULL) are its sequence and payload length. Errors: INVALID_ARGUMENT (path
 * NULL), NOT_FOUND, PERMISSION, CHECKPOINT_CORRUPT (the message says which
 * check failed: not a regular file, short file, bad magic, footer checksum,
 * unknown version, length mismatch, payload checksum), IO (read error),
 * SYSTEM. A FIFO or device at `path` is refused at once, never waited on. */
MLOS_API int mlos_checkpoint_verify_file(const char* path, uint64_t* sequence, size_t* size);

#ifdef __cplusplus
}
#endif

#endif /* MLOS_CHECKPOINT_H_ */
