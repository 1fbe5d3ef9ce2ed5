# SPDX-License-Identifier: Apache-2.0
"""Durable checkpoint files (include/mlos/checkpoint.h) from Python.

    with CheckpointWriter("ckpt/", prefix="model", keep_last=3) as w:
        seq = w.save(payload)              # durable when it returns
        ticket = w.save_async(payload)     # copied into locked staging, written in the background
        w.wait(ticket)                     # durable now, or MLOSError(IO)
    payload, seq, skipped = load_latest("ckpt/", "model")

Each save is "<dir>/<prefix>-<20-digit sequence>.mlosckpt": the payload, then
a 48-byte footer with its XXH3-64 checksum; a crash at any moment leaves the
previous checkpoint and possibly the new one, complete, never a torn file
(docs/checkpoints.md). Payloads are any object with the buffer protocol,
read without a copy. For torch state dicts, see
mlos_training.pytorch.AsyncCheckpointer."""
import os

from . import _core
from .errors import CODES, MLOSError, c_integer, check, fs_path


class CheckpointWriter:
    """mlos_checkpoint_writer_open on the existing directory `directory`.
    resources: a Resources (or MLOSTrainingContext) whose checkpoint
    buffers hold save_async's staging (locked, counted against its
    memory_bytes); without it the staging is locked memory of the process.
    allow_unlocked_staging: stage in ordinary memory when it cannot be
    locked instead of failing save_async with LOCK_LIMIT. Raises MLOSError
    as the C call documents (NOT_FOUND, INVALID_ARGUMENT for a bad prefix,
    SYSTEM when another writer holds the prefix)."""

    def __init__(self, directory, prefix="ckpt", keep_last=0, resources=None, allow_unlocked_staging=False):
        if resources is not None and hasattr(resources, "resources"):
            resources = resources.resources  # an MLOSTrainingContext
        if prefix is not None and not isinstance(prefix, str):
            raise TypeError(f"prefix must be a str, got {type(prefix).__name__}")
        self.directory = os.fspath(directory)
        self.prefix = prefix or "ckpt"
        flags = _core.CHECKPOINT_ALLOW_UNLOCKED_STAGING if allow_unlocked_staging else 0
        rc, self._handle = _core.checkpoint_writer_open(fs_path(directory, "directory"), prefix,
                                                        c_integer("keep_last", keep_last, 0, (1 << 32) - 1),
                                                        resources.handle if resources is not None else 0, flags)
        check(rc)
        self._resources = resources
        if resources is not None:
            resources._closers.append(self._close_quietly)

    @property
    def handle(self):
        if not self._handle:
            raise MLOSError(CODES["INVALID_HANDLE"], "checkpoint writer closed")
        return self._handle

    def path(self, sequence):
        """The file of checkpoint `sequence`."""
        return os.path.join(self.directory, f"{self.prefix}-{sequence:020d}.mlosckpt")

    def save(self, data):
        """Saves the bytes of `data` as the next checkpoint; durable on
        return. Returns its sequence. MLOSError(IO) names the errno; the
        previous checkpoint is intact."""
        rc, seq = _core.checkpoint_save(self.handle, data)
        check(rc)
        return seq

    def save_async(self, data):
        """Copies `data` into the writer's staging and returns the ticket
        (the sequence the checkpoint will have); a background thread at the
        CHECKPOINT phase's I/O priority writes it. Waits first for the
        previous async save. MLOSError: LOCK_LIMIT, INSUFFICIENT_MEMORY (the
        staging would pass the job's memory_bytes), NO_MEMORY."""
        rc, ticket = _core.checkpoint_save_async(self.handle, data)
        check(rc)
        return ticket

    def wait(self, ticket, timeout=None):
        """Waits for save `ticket`: returns its file once durable; raises
        MLOSError(IO) if it failed, MLOSError(TIMEOUT) if `timeout` seconds
        (None: forever) pass first."""
        ms = -1 if timeout is None else c_integer("timeout", round(timeout * 1000), 0, (1 << 31) - 1)
        check(_core.checkpoint_wait(self.handle, c_integer("ticket", ticket, 0, (1 << 64) - 1), ms))
        return self.path(ticket)

    def info(self):
        """next_sequence, last_saved_sequence, saves_succeeded, saves_failed,
        retention_deleted, staging_bytes, staging_locked, io_priority_applied."""
        rc, info = _core.checkpoint_writer_info(self.handle)
        check(rc)
        return info

    def close(self):
        """Waits for a save in flight and closes; raises the error of an
        async save nobody waited for. A second close does nothing."""
        handle, self._handle = self._handle, 0
        if not handle:
            return
        if self._resources is not None and self._close_quietly in self._resources._closers:
            self._resources._closers.remove(self._close_quietly)
        check(_core.checkpoint_writer_close(handle))

    def _close_quietly(self):
        try:
            self.close()
        except MLOSError:
            pass  # the allocation is being released; its wait would have reported it

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def load_latest(directory, prefix="ckpt"):
    """(payload bytes, sequence, damaged_skipped) of the newest checkpoint
    of `prefix` in `directory` that verifies. MLOSError: NOT_FOUND (none),
    CHECKPOINT_CORRUPT (some, none verifies)."""
    rc, payload, seq, skipped = _core.checkpoint_load_latest(fs_path(directory, "directory"), prefix)
    check(rc)
    return payload, seq, skipped


def verify_file(path):
    """(sequence, payload bytes) of a checkpoint file whose footer and
    checksum verify; MLOSError(CHECKPOINT_CORRUPT) says which check failed."""
    rc, seq, size = _core.checkpoint_verify_file(fs_path(path))
    check(rc)
    return seq, size
