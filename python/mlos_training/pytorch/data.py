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

import torch.utils.data

from .. import PHASE_DATA_LOADING
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
    numa_aware (default True) and context (default: the active
    MLOSTrainingContext). Without an active context it behaves exactly like
    DataLoader."""

    def __init__(self, dataset, *args, numa_aware=True, context=None, **kwargs):
        self.mlos_context = context or current()
        self.mlos_worker_cpus = None
        if numa_aware and self.mlos_context is not None and self.mlos_context.resources is not None:
            self.mlos_worker_cpus = worker_cpus(self.mlos_context)
            kwargs["worker_init_fn"] = _PinWorkers(self.mlos_worker_cpus, kwargs.get("worker_init_fn"))
        super().__init__(dataset, *args, **kwargs)

    def __iter__(self):
        return _MarkedIterator(super().__iter__(), self.mlos_context)
