# SPDX-License-Identifier: Apache-2.0
"""ImageLoader: image batches decoded and augmented outside the training
process, handed to torch without a copy (include/mlos/dataload.h;
docs/dataload.md).

    from mlos_training.data import ImageLoader

    loader = ImageLoader("/data/imagenet/train", batch_size=64)        # an ImageFolder
    loader = ImageLoader("/data/shards/train-{000000..000146}.tar")    # WebDataset shards
    for epoch in range(epochs):
        loader.set_epoch(epoch)
        for images, labels in loader:       # float32 (B, 3, 224, 224), int64 (B,)
            ...

It replaces `DataLoader(ImageFolder(root, transform=<the torchvision
ImageNet recipe>), batch_size, shuffle=True, num_workers=N)`: the same
crops (torchvision's RandomResizedCrop sampling), flips and normalisation,
done by mlos-dataload, a helper process of libjpeg-turbo decoding threads
on the job's CPUs. No Python worker processes, no pickling: a batch is
written into shared memory once and the tensors point at it.

When to use which:
  - ImageLoader: image classification data (an ImageFolder tree, tar
    shards, or a "path<TAB>label" list) with the standard train or val
    transform. Decoding is where input-bound jobs lose their time.
  - mlos_training.pytorch.MLOSDataLoader: any other Dataset (your own
    __getitem__, other modalities, custom transforms): torch's DataLoader
    with its workers placed on the job's NUMA node.

Batches: the tensors of a batch point into a slot of the loader's ring;
the slot is handed back when both tensors are freed. Keep a batch no
longer than needed (or .clone() it): the loader has `prefetch` slots, and
holding them all stalls it.
"""
import os

import torch

from . import _core
from ._resources import PHASE_DATA_LOADING
from .context import current
from .errors import CODES, MLOSError, c_integer, check, invalid_argument

_TRANSFORMS = {"train": 0, "val": 1}
_LAYOUTS = {"float": 0, "uint8_chw": 1, "uint8_hwc": 2}
_U32 = 2**32 - 1
_NO_HELPER = ("; ImageLoader needs the mlos-dataload helper, which the mlos-training wheel does not ship "
              "(it links OpenCV); install mlOS from source (cmake --install, or "
              "pip install . -Ccmake.define.MLOS_BUILD_DATALOAD=ON) or point MLOS_DATALOAD_HELPER at one, "
              "or use mlos_training.pytorch.MLOSDataLoader")


def _distributed_defaults():
    """(rank, world_size) of torch.distributed when it is initialised, else
    of torchrun's environment, else (0, 1)."""
    try:
        import torch.distributed as dist
        if dist.is_available() and dist.is_initialized():
            return dist.get_rank(), dist.get_world_size()
    except ImportError:
        pass
    return int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))


class ImageLoader:
    """Batches of (images, labels) from `source`: an ImageFolder directory,
    a tar shard (or glob / brace pattern of shards), or a file of
    "path<TAB>label" lines.

    transform: "train" (RandomResizedCrop(size) + flip) or "val" (resize
        to size*256/224, centre crop). layout: "float" (normalised float32
        B x 3 x H x W), "uint8_chw" or "uint8_hwc".
    shuffle, seed, drop_last, rank, world_size: as DataLoader with a
        DistributedSampler (rank and world_size default to torch.distributed's
        or torchrun's). Without set_epoch(), each pass over the loader is the
        next epoch; after it, the epoch set.
    workers: decoding threads (default: one per CPU of the job); prefetch:
        batches in flight (default: 2 per worker).
    strict: a bad image raises MLOSError instead of being skipped (skipped
        ones are in `errors`). in_order: batches in index order (by default a
        slow image does not hold back the batches after it).
    reader: "auto" (io_uring where the kernel allows, else pread; `notes`
        says which and why) or "pread".
    resources: the job (default: the current MLOSTrainingContext's, if any),
        whose CPUs the helper uses and whose memory_bytes the ring counts
        against.
    """

    def __init__(self, source, batch_size=64, *, transform="train", size=224, layout="float", shuffle=True,
                 seed=0, drop_last=False, rank=None, world_size=None, workers=0, prefetch=0, strict=False,
                 in_order=False, reader="auto", resources=None, timeout=600.0):
        if not isinstance(source, (str, os.PathLike)):
            raise TypeError(f"source must be a path, not {type(source).__name__}")
        if transform not in _TRANSFORMS:
            raise invalid_argument(f"transform must be one of {sorted(_TRANSFORMS)}, got {transform!r}")
        if layout not in _LAYOUTS:
            raise invalid_argument(f"layout must be one of {sorted(_LAYOUTS)}, got {layout!r}")
        if reader not in ("auto", "pread"):
            raise invalid_argument(f"reader must be 'auto' or 'pread', got {reader!r}")
        default_rank, default_world = _distributed_defaults()
        rank = default_rank if rank is None else rank
        world_size = default_world if world_size is None else world_size
        if resources is None and current() is not None:
            resources = current().resources
        flags = ((0 if shuffle else _core.DATALOAD_NO_SHUFFLE) | (_core.DATALOAD_DROP_LAST if drop_last else 0) |
                 (_core.DATALOAD_STRICT if strict else 0) | (_core.DATALOAD_IN_ORDER if in_order else 0) |
                 (_core.DATALOAD_PREAD if reader == "pread" else 0))
        handle = 0 if resources is None else resources.handle
        self._timeout_ms = int(float(timeout) * 1000)
        self._size, self._layout = size, layout
        rc, loader = _core.dataload_start(
            handle, os.fsdecode(source), c_integer("batch_size", batch_size, 1, _U32),
            c_integer("size", size, 1, _U32), _TRANSFORMS[transform], _LAYOUTS[layout],
            c_integer("seed", seed, 0, 2**64 - 1), c_integer("rank", rank, 0, _U32),
            c_integer("world_size", world_size, 1, _U32), flags, c_integer("workers", workers, 0, _U32),
            c_integer("prefetch", prefetch, 0, _U32))
        if rc == CODES["UNSUPPORTED"] and "no mlos-dataload" in _core.last_error_message():
            # The PyPI wheel leaves the helper out (it would vendor OpenCV):
            # say so, not only where the library looked.
            raise MLOSError(rc, _core.last_error_message() + _NO_HELPER)
        check(rc)
        self._loader = loader
        rc, self._info = loader.info()
        check(rc)
        self._epoch = 0
        self._epoch_set = False
        self.skipped = 0  # bad samples left out in the last pass

    def __len__(self):
        """Batches per epoch for this rank."""
        return self._info["batches_per_epoch"]

    @property
    def info(self):
        """samples, samples_per_epoch, batches_per_epoch, classes, workers,
        slots, helper_pid."""
        return dict(self._info)

    def set_epoch(self, epoch):
        """The epoch the next pass produces (shuffle order, crops)."""
        self._epoch = c_integer("epoch", epoch, 0, 2**64 - 1)
        self._epoch_set = True

    def stats(self):
        """How the loader runs now: reader ("io_uring" or "pread"),
        read_ahead_bytes, workers, active_workers (the ones the helper lets
        decode, as of the latest batch), batches delivered, and
        wait_seconds (time this process spent waiting for batches)."""
        rc, stats = self._loader.stats()
        check(rc)
        return stats

    @property
    def notes(self):
        """How the helper reads, one line each (why it fell back to pread,
        if it did)."""
        rc, text = self._loader.notes()
        check(rc)
        return text.splitlines()

    @property
    def errors(self):
        """The bad samples of the current pass: ["path: reason", ...]."""
        rc, text = self._loader.errors()
        check(rc)
        return text.splitlines()

    def __iter__(self):
        epoch = self._epoch
        if not self._epoch_set:
            self._epoch += 1  # the next pass is the next epoch
        check(self._loader.start_epoch(epoch))
        self.skipped = 0
        return _Epoch(self)

    def _shape(self, flat):
        s = self._size
        if self._layout == "float":
            return flat.view(torch.float32).view(-1, 3, s, s)
        if self._layout == "uint8_chw":
            return flat.view(-1, 3, s, s)
        return flat.view(-1, s, s, 3)

    def close(self):
        """Stops the helper once no batch tensor is left."""
        self._loader.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class _Epoch:
    """One pass over an ImageLoader. An iterator object rather than a
    generator: a suspended generator would keep the last batch's tensors
    alive in its frame, and with them the batch's slot."""

    def __init__(self, loader):
        self._loader, self._ctx = loader, current()

    def __iter__(self):
        return self

    def __len__(self):
        return len(self._loader)

    def __next__(self):
        if self._ctx is not None:
            self._ctx.mark(PHASE_DATA_LOADING)
        owner = self._loader
        rc, batch = owner._loader.next(owner._timeout_ms)
        if rc == _core.DATALOAD_END:
            raise StopIteration
        if rc < 0:
            raise MLOSError(rc, batch)
        owner.skipped += batch[2]
        # Views of the slot, no copy (DLPack); the slot goes back to the
        # helper when both tensors are gone.
        return owner._shape(torch.from_dlpack(batch[0])), torch.from_dlpack(batch[1])


__all__ = ["ImageLoader"]
