# SPDX-License-Identifier: Apache-2.0
"""AsyncCheckpointer: an asynchronous, durable save of a torch state dict
that blocks the training loop only for one copy of its tensors.

    ckpt = AsyncCheckpointer("ckpt/", ctx)     # ctx: the job (default: the active context)
    pending = ckpt.save(model.state_dict())    # returns after the copy into staging
    ...                                        # training goes on while it is written
    path = pending.wait()                      # durable now (or MLOSError(IO))
    state, seq = load_checkpoint("ckpt/")      # newest checkpoint that verifies

save() serialises the state dict with torch.save straight into a
checkpoint buffer of the job (locked, counted against its memory_bytes,
kept for the next save and grown when a bigger one comes; where the kernel
refuses the lock, as a user's default 8 MiB RLIMIT_MEMLOCK does for any
real model, an unlocked buffer counted the same way, with a warning): torch's format
stores tensor bytes as they are, so that serialisation is the one copy the
caller waits for, under the CHECKPOINT phase. A background thread at the
CHECKPOINT phase's I/O priority then writes the buffer through the C
writer (temporary file, fdatasync, rename, directory fsync; XXH3-64
checksum in a 48-byte footer): "<dir>/<prefix>-<sequence>.mlosckpt". A
crash at any moment leaves the previous checkpoint intact. The file is
torch.load-able as it is (the footer follows the zip archive) and
load_checkpoint verifies the checksum first. Nothing of torch is patched;
torch's own CRC-32 of each record is skipped while save() serialises (the
file's checksum covers every byte) and restored after.

One staging buffer per checkpointer: save() first waits for the previous
save's write to finish. Errors of a background write are raised by its
wait(); the previous checkpoint is intact and the checkpointer stays
usable."""
import contextlib
import os
import threading
import warnings

import torch

from .. import PHASE_CHECKPOINT, _core
from ..checkpoint import CheckpointWriter, load_latest
from ..context import current
from ..errors import CODES, MLOSError, invalid_argument

_PAGE = os.sysconf("SC_PAGE_SIZE")
_crc_lock = threading.Lock()


class PendingSave:
    """One save in flight: wait() returns its file once it is durable."""

    def __init__(self, sequence, path):
        self.sequence, self.path = sequence, path
        self._done = threading.Event()
        self._error = None
        self.io_priority_applied = None  # whether the writing thread got CHECKPOINT's I/O priority

    def done(self):
        return self._done.is_set()

    def wait(self, timeout=None):
        """The checkpoint's path once it is durable; MLOSError(IO) if its
        write failed (nothing of it remains, the previous checkpoint is
        intact), MLOSError(TIMEOUT) if `timeout` seconds pass first."""
        if not self._done.wait(timeout):
            raise MLOSError(CODES["TIMEOUT"], f"checkpoint {self.sequence} not written within {timeout} s")
        if self._error is not None:
            raise self._error
        return self.path

    def __repr__(self):
        state = "failed" if self._error else "durable" if self.done() else "writing"
        return f"<PendingSave {self.sequence} {state} {self.path}>"


class _StagingWriter:
    """A file object for torch.save that copies into `view`; past its end
    it only counts, so the caller learns the size it needs."""

    def __init__(self, view):
        self.view, self.pos = view, 0

    def write(self, data):
        n = memoryview(data).nbytes
        end = self.pos + n
        if end <= len(self.view):
            self.view[self.pos:end] = memoryview(data).cast("B")
        self.pos = end
        return n

    def flush(self):
        pass


@contextlib.contextmanager
def _without_torch_crc():
    config = getattr(getattr(getattr(torch, "utils", None), "serialization", None), "config", None)
    save = getattr(config, "save", None)
    if save is None or not hasattr(save, "compute_crc32"):
        yield
        return
    with _crc_lock:
        before = save.compute_crc32
        save.compute_crc32 = False
        try:
            yield
        finally:
            save.compute_crc32 = before


def _estimate(obj):
    """Bytes torch.save will need for `obj`: each distinct storage, with
    room for its record's headers and alignment, plus 1 MiB for the pickle
    and the archive's directory (a bad guess costs a second serialisation,
    never a wrong file)."""
    seen, total = set(), 1 << 20

    def walk(o):
        nonlocal total
        if isinstance(o, torch.Tensor):
            s = o.untyped_storage()
            if s.data_ptr() not in seen:
                seen.add(s.data_ptr())
                total += s.nbytes() + 512
        elif isinstance(o, dict):
            for v in o.values():
                walk(v)
        elif isinstance(o, (list, tuple)):
            for v in o:
                walk(v)

    walk(obj)
    return total


class AsyncCheckpointer:
    """Asynchronous durable saves of state dicts into `directory` (which
    must exist) for the job of `ctx` (an MLOSTrainingContext or Resources;
    default: the active context). prefix, keep_last: as CheckpointWriter.
    allow_unlocked_staging: when the kernel refuses to lock the staging
    (RLIMIT_MEMLOCK without CAP_IPC_LOCK), stage in ordinary memory, still
    counted against the job's memory_bytes, with one RuntimeWarning (True,
    the default); False raises MLOSError(LOCK_LIMIT) from save() instead.
    Raises MLOSError(INVALID_ARGUMENT) without a job: the staging memory
    is the job's and counts against its memory_bytes."""

    def __init__(self, directory, ctx=None, prefix="ckpt", keep_last=0, allow_unlocked_staging=True):
        ctx = ctx or current()
        resources = getattr(ctx, "resources", ctx)
        if resources is None or not getattr(resources, "handle", 0):
            raise invalid_argument("AsyncCheckpointer needs an active MLOSTrainingContext (or Resources): its "
                                   "staging memory is locked and counted against that job")
        self._ctx = ctx if hasattr(ctx, "set_phase") else None
        self._resources = resources
        self._allow_unlocked = bool(allow_unlocked_staging)
        self._warned_unlocked = False
        self._writer = CheckpointWriter(directory, prefix=prefix, keep_last=keep_last)
        self._staging = None  # a LockedBuffer
        self._view = None  # its memoryview (an export: the buffer cannot be freed under it)
        self._pending = None
        self._thread = None
        resources._closers.append(self._close_quietly)

    @property
    def staging_bytes(self):
        """Staging held now (0 before the first save)."""
        return self._staging.size if self._staging is not None else 0

    @property
    def staging_locked(self):
        """Whether the staging held now is locked (None before the first save)."""
        return self._staging.locked if self._staging is not None else None

    def save(self, state_dict):
        """Serialises `state_dict` (anything torch.save takes) into the
        job's staging under the CHECKPOINT phase, starts its durable write
        in the background and returns a PendingSave. Waits first for the
        previous save's write. MLOSError: LOCK_LIMIT (only with
        allow_unlocked_staging=False), INSUFFICIENT_MEMORY (staging past the
        job's memory_bytes), INVALID_HANDLE (closed)."""
        writer = self._writer.handle  # INVALID_HANDLE once closed
        self._join()
        previous = self._ctx.phase if self._ctx is not None else None
        if self._ctx is not None:
            self._ctx.set_phase(PHASE_CHECKPOINT)
        try:
            size = self._serialise(state_dict)
            sequence = self._writer.info()["next_sequence"]
            pending = PendingSave(sequence, self._writer.path(sequence))
            self._thread = threading.Thread(target=self._write, args=(writer, self._view[:size], pending),
                                            name="mlos-ckpt-write", daemon=True)
            self._pending = pending
            self._thread.start()
            return pending
        finally:
            if self._ctx is not None and self._ctx.resources is not None:
                self._ctx.set_phase(previous)

    def _serialise(self, state_dict):
        need = _estimate(state_dict)
        for _ in range(2):
            self._reserve(need)
            out = _StagingWriter(self._view)
            with _without_torch_crc():
                torch.save(state_dict, out)
            if out.pos <= len(self._view):
                return out.pos
            need = out.pos  # the estimate was short: grow to what it took, once
        raise MLOSError(CODES["SYSTEM"], "state dict serialised to a different size twice")

    def _reserve(self, need):
        if self._staging is not None and self._staging.size >= need:
            return
        need = (need + _PAGE - 1) // _PAGE * _PAGE
        self._drop_staging()  # first, so that the old and new buffers are never both counted
        self._staging = self._resources.alloc_checkpoint_buffer(need, allow_unlocked=self._allow_unlocked)
        self._view = self._staging.memoryview()
        if not self._staging.locked and not self._warned_unlocked:
            self._warned_unlocked = True
            warnings.warn(f"AsyncCheckpointer: the kernel refused to lock {need} bytes of checkpoint staging "
                          "(RLIMIT_MEMLOCK; `ulimit -l`, systemd's LimitMEMLOCK= or CAP_IPC_LOCK raise it): staging "
                          "in unlocked memory, still counted against the job's memory_bytes; a save can stall "
                          "longer if it is swapped out (allow_unlocked_staging=False raises LOCK_LIMIT instead)",
                          RuntimeWarning, stacklevel=4)

    def _drop_staging(self):
        if self._staging is not None:
            view, self._view = self._view, None
            view.release()
            staging, self._staging = self._staging, None
            if not staging.freed and self._resources.handle:
                staging.free()

    @staticmethod
    def _write(writer, data, pending):
        pending.io_priority_applied = _core.set_checkpoint_io_priority() == 0
        rc, _ = _core.checkpoint_save(writer, data)
        if rc < 0:
            pending._error = MLOSError(rc, _core.last_error_message())  # this thread's message
        data.release()
        pending._done.set()

    def _join(self):
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def wait(self, timeout=None):
        """Waits for the latest save (see PendingSave.wait); None if none."""
        return self._pending.wait(timeout) if self._pending is not None else None

    def close(self):
        """Waits for the write in flight, frees the staging and closes the
        writer. Errors of that write stay with its PendingSave."""
        if self._resources is not None and self._close_quietly in self._resources._closers:
            self._resources._closers.remove(self._close_quietly)
        self._join()
        self._drop_staging()
        self._writer._close_quietly()

    def _close_quietly(self):
        self.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def load_checkpoint(directory, prefix="ckpt", **torch_load_kwargs):
    """(object, sequence) of the newest checkpoint of `prefix` in
    `directory` whose checksum verifies (newer damaged ones are skipped),
    through torch.load. MLOSError: NOT_FOUND, CHECKPOINT_CORRUPT."""
    import io
    payload, sequence, _ = load_latest(directory, prefix)
    return torch.load(io.BytesIO(payload), **torch_load_kwargs), sequence


__all__ = ["AsyncCheckpointer", "PendingSave", "load_checkpoint"]

