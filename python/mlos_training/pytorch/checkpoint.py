# SPDX-License-Identifier: Apache-2.0
"""mlos_checkpoint: marks CHECKPOINT and makes torch.save to a path atomic
and durable for the duration of the block.

    with mlos_checkpoint(ctx):
        torch.save(state, "ckpt/last.pt")

Inside the block torch.save(obj, path) serialises into memory and then
replaces `path` through libmlos (mlos_checkpoint_write_file: temporary,
fdatasync, rename, directory fsync), so a process killed mid-save leaves
the previous file, never a torn one. Saves to file objects pass through
unchanged. The patch is process-wide while the block runs (torch.save is a
module attribute); nested blocks are fine."""
import contextlib
import io
import os

import torch

from .. import PHASE_CHECKPOINT, write_file_atomic
from ..context import current


def durable_save(original):
    def save(obj, f, *args, **kwargs):
        if not isinstance(f, (str, os.PathLike)):
            return original(obj, f, *args, **kwargs)
        buf = io.BytesIO()
        original(obj, buf, *args, **kwargs)
        write_file_atomic(os.fspath(f), buf.getbuffer())
        return None
    save.mlos_original = original
    return save


@contextlib.contextmanager
def mlos_checkpoint(ctx=None):
    """ctx: an MLOSTrainingContext (default: the active one; without one,
    only the atomic save applies)."""
    ctx = ctx or current()
    previous = ctx.phase if ctx is not None else None
    if ctx is not None:
        ctx.set_phase(PHASE_CHECKPOINT)
    original = torch.save
    torch.save = durable_save(original)
    try:
        yield
    finally:
        torch.save = original
        if ctx is not None and ctx.resources is not None:
            ctx.set_phase(previous)
