# SPDX-License-Identifier: Apache-2.0
"""MLOSDataLoader: torch's DataLoader whose worker processes run on the CPUs
of the allocation's NUMA node and whose batch fetches are marked
DATA_LOADING (the time the training loop waits for data).

Use it for any Dataset. For image classification data (an ImageFolder
tree, WebDataset tar shards, a file list) with the standard train or val
transform, mlos_training.data.ImageLoader does the decoding in a native
helper process instead of Python workers, and hands batches over without a
copy (docs/dataload.md)."""
import os
import warnings

import torch.utils.data

from .. import PHASE_DATA_LOADING
from ..errors import MLOSError
from ..context import current
from ..cpu_list import parse_cpu_list


def node_cpus(node):
    """CPUs of NUMA node `node` from sysfs; None where sysfs does not say."""
    try:
        with open(f"/sys/devices/system/node/node{node}/cpulist") as f:
            return parse_cpu_list(f.read())
    except OSError:
        return None


def worker_cpus(ctx):
    """Where the workers go: the allocation's node's CPUs that the process
    could use before the context bound its thread; the allocation's own
    CPUs if that leaves nothing."""
    allowed = set(ctx.allowed_cpus_before or os.sched_getaffinity(0))
    node = node_cpus(ctx.resources.placement()["numa_node"])
    cpus = (node & allowed) if node else allowed
    return sorted(cpus or set(ctx.resources.cpus))


class _PinWorkers:
    """worker_init_fn: pins the worker process, gives torch one thread in it
    (the default DataLoader does the same), then runs the user's own."""

    def __init__(self, cpus, user_init):
        self.cpus, self.user_init = cpus, user_init

    def __call__(self, worker_id):
        os.sched_setaffinity(0, self.cpus)
        torch.set_num_threads(1)
        if self.user_init is not None:
            self.user_init(worker_id)


def dataset_paths(dataset):
    """The file of each index of `dataset`, where it says: `samples` or
    `imgs` lists of (path, target), as torchvision's DatasetFolder and
    ImageFolder keep them. None otherwise."""
    for name in ("samples", "imgs"):
        items = getattr(dataset, name, None)
        if isinstance(items, (list, tuple)) and items and isinstance(items[0], (list, tuple)) \
                and isinstance(items[0][0], (str, os.PathLike)):
            return [os.fspath(item[0]) for item in items]
    return None


class _AnnouncingSampler(torch.utils.data.Sampler):
    """Wraps DataLoader's own sampler (RandomSampler or SequentialSampler,
    finite): each epoch's order is announced to the job (announce_reads)
    before the first index goes out, and each index is recorded as read
    (record_read) as it goes out, which is when the DataLoader hands it to
    a worker. For the `prefetch` policy (docs/prefetch.md). Best effort: an
    engine without a read log (mlosd, for now: UNSUPPORTED) or a path the
    library refuses (one that is not UTF-8, say) stops the calls for this
    loader, with a warning for the latter; the batches are never affected.
    Other attributes are the wrapped sampler's."""

    def __init__(self, inner, paths, ctx):
        self.inner, self.paths, self.ctx = inner, paths, ctx
        self.enabled = True

    def __getattr__(self, name):
        inner = self.__dict__.get("inner")
        if inner is None:
            raise AttributeError(name)
        return getattr(inner, name)

    def _call(self, fn, *args):
        if not self.enabled:
            return
        try:
            fn(*args)
        except Exception as e:  # noqa: BLE001 - a hint must never fail the epoch
            self.enabled = False
            if not (isinstance(e, MLOSError) and e.name == "UNSUPPORTED"):
                warnings.warn(f"MLOSDataLoader: not announcing reads to the job's policies any more: {e}",
                              RuntimeWarning, stacklevel=3)

    def __iter__(self):
        order = list(self.inner)
        resources = self.ctx.resources
        if resources is not None:
            self._call(resources.announce_reads, [self.paths[i] for i in order])
        for i in order:
            if resources is not None:
                self._call(resources.record_read, self.paths[i])
            yield i

    def __len__(self):
        return len(self.inner)


class _MarkedIterator:
    def __init__(self, inner, ctx):
        self.inner, self.ctx = inner, ctx

    def __iter__(self):
        return self

    def __next__(self):
        if self.ctx is not None:
            self.ctx.mark(PHASE_DATA_LOADING)
        return next(self.inner)

    def __len__(self):
        return len(self.inner)


class MLOSDataLoader(torch.utils.data.DataLoader):
    """torch.utils.data.DataLoader with the same arguments, plus
    numa_aware (default True), announce_reads (default True: tell the job's
    policies each epoch's file order, for a dataset that names its files,
    when DataLoader makes the sampler itself; see _AnnouncingSampler) and
    context (default: the active MLOSTrainingContext). Without an active
    context it behaves exactly like DataLoader. Reads are announced only
    when DataLoader's arguments past `dataset` are given by keyword and no
    sampler or batch_sampler is passed."""

    def __init__(self, dataset, *args, numa_aware=True, announce_reads=True, context=None, **kwargs):
        self.mlos_context = context or current()
        self.mlos_worker_cpus = None
        active = self.mlos_context is not None and self.mlos_context.resources is not None
        if numa_aware and active:
            self.mlos_worker_cpus = worker_cpus(self.mlos_context)
            kwargs["worker_init_fn"] = _PinWorkers(self.mlos_worker_cpus, kwargs.get("worker_init_fn"))
        self.mlos_announcing = None
        if announce_reads and active and not args and kwargs.get("batch_sampler") is None \
                and kwargs.get("sampler") is None and not isinstance(dataset, torch.utils.data.IterableDataset):
            paths = dataset_paths(dataset)
            if paths is not None:
                # What DataLoader itself would make. A sampler of the
                # caller's own (DistributedSampler, an infinite one) is left
                # alone: isinstance checks and set_epoch see it as it is.
                sampler = (torch.utils.data.RandomSampler(dataset, generator=kwargs.get("generator"))
                           if kwargs.pop("shuffle", False) else torch.utils.data.SequentialSampler(dataset))
                self.mlos_announcing = _AnnouncingSampler(sampler, paths, self.mlos_context)
                kwargs["sampler"] = self.mlos_announcing
        super().__init__(dataset, *args, **kwargs)

    def __iter__(self):
        return _MarkedIterator(super().__iter__(), self.mlos_context)
