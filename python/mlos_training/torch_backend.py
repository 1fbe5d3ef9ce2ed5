# SPDX-License-Identifier: Apache-2.0
"""The `mlos` torch.distributed backend (docs/collectives.md, "torch.distributed
backend"): DistributedDataParallel over libmlos's collectives (Gloo inside),
with mlOS's placement of the communication threads and its accounting.

    import mlos_training.distributed          # registers "mlos"
    dist.init_process_group("mlos")           # torchrun, Slurm, MASTER_ADDR/PORT
    dist.init_process_group("cpu:mlos,cuda:nccl")

A Python subclass of torch's C++ Backend (no code compiled against torch's
headers, so the wheel does not depend on the torch version). Each backend
instance is one MLOSProcessGroup: its own one-CPU allocation, its ranks met
through torch's store for that group. Operations run in issue order on one
worker thread per group and return torch Works whose futures complete when
the library returns, so DDP's gradient buckets overlap backward; failures
complete them with DistBackendError. (Work.is_completed() stays False for
works of a Python backend, a limit of torch's wrapping: use wait() or
get_future().done().)

Built: allreduce (SUM, PRODUCT, MIN, MAX, AVG), broadcast, allgather (and
all_gather_into_tensor), barrier. CPU tensors; a CUDA tensor only through
allreduce (the library reduces it through NCCL or staged, docs/gpu.md),
every other op refuses it naming the op. Other ops are torch's default
("not supported")."""
import concurrent.futures
import datetime

import torch
import torch.distributed as dist
from torch._C._distributed_c10d import Backend as _C10dBackend
from torch.futures import Future

from . import _core
from .distributed import MLOSProcessGroup
from .errors import CODES, MLOSError, check

NAME = "mlos"
_MAX_TIMEOUT_S = 3600  # the library's bound on a group's timeout


def _flat_bytes(tensor, what):
    """tensor as a contiguous CPU tensor (itself when it already is one)."""
    if tensor.device.type != "cpu":
        raise MLOSError(CODES["UNSUPPORTED"], f"{what} of a tensor on {tensor.device}: only all_reduce takes "
                                              "GPU tensors (use \"cpu:mlos,cuda:nccl\" for the rest)")
    return tensor if tensor.is_contiguous() else tensor.contiguous()


class _FutureWork(dist._Work):  # noqa: SLF001: torch's base class for Python works
    """A Work over a torch Future that the group's worker thread completes
    with the operation's result, or with its DistBackendError as the value:
    a Python future cannot hold an error that torch's C++ side sees, so
    wait() raises it here."""

    def __init__(self, future):
        super().__init__()
        self._future = future

    def wait(self, timeout=None):
        """Waits for the operation (whose own bound is the group's timeout:
        `timeout` is not used) and raises its error."""
        value = self._future.wait()
        if isinstance(value, BaseException):
            raise value
        return True

    def get_future(self):
        return self._future.then(_raise_error)


def _raise_error(future):
    value = future.value()
    if isinstance(value, BaseException):
        raise value
    return value


class MLOSBackend(_C10dBackend):
    """One group of torch.distributed, as torch creates it (store: the
    group's prefixed store; timeout: a timedelta)."""

    def __init__(self, store, rank, size, timeout):
        super().__init__(rank, size)
        seconds = timeout.total_seconds() if isinstance(timeout, datetime.timedelta) else float(timeout)
        self._group = MLOSProcessGroup(rank, size, store=store, timeout=min(max(seconds, 1.0), _MAX_TIMEOUT_S),
                                       group_name="torch")
        self._worker = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="mlos-c10d")

    def getBackendName(self):
        return NAME

    # -- the operations -------------------------------------------------

    def allreduce(self, tensors, opts):
        op = opts.reduceOp.op.name if hasattr(opts.reduceOp, "op") else opts.reduceOp
        for t in tensors:
            if t.device.type == "cuda":  # what the caller's stream queued must land first
                torch.cuda.current_stream(t.device).synchronize()
        return self._run("all_reduce", tensors, lambda: [self._group.all_reduce(t, op=op) for t in tensors])

    def broadcast(self, tensors, opts):
        root = opts.rootRank

        def run():
            for t in tensors:
                work = _flat_bytes(t, "broadcast")
                self._move(lambda h: _core.broadcast(h, work.data_ptr(), self._nbytes(work), root, self.size()))
                if work is not t:
                    t.copy_(work)
        return self._run("broadcast", tensors, run)

    def allgather(self, output_tensors, input_tensors, opts):
        def run():
            for outs, t in zip(output_tensors, input_tensors):
                mine = _flat_bytes(t, "all_gather")
                n = self._nbytes(mine)
                flat = torch.empty(n * self.size(), dtype=torch.uint8)
                self._move(lambda h: _core.allgather(h, mine.data_ptr(), flat.data_ptr(), n, self.size()))
                for r, out in enumerate(outs):
                    out.copy_(flat[r * n:(r + 1) * n].view(t.dtype).view(t.shape))
        return self._run("all_gather", output_tensors, run)

    def _allgather_base(self, output, input, opts):  # dist.all_gather_into_tensor
        def run():
            mine = _flat_bytes(input, "all_gather_into_tensor")
            out = _flat_bytes(output, "all_gather_into_tensor")
            n = self._nbytes(mine)
            if self._nbytes(out) != n * self.size():
                raise MLOSError(CODES["INVALID_ARGUMENT"], f"all_gather_into_tensor: the output holds {self._nbytes(out)} bytes, "
                                    f"not {self.size()} x {n}")
            self._move(lambda h: _core.allgather(h, mine.data_ptr(), out.data_ptr(), n, self.size()))
            if out is not output:
                output.copy_(out)
        return self._run("all_gather_into_tensor", [output], run)

    all_gather_single = _allgather_base

    def barrier(self, opts):
        return self._run("barrier", [], self._group.barrier)

    # -- plumbing ---------------------------------------------------------

    @staticmethod
    def _nbytes(tensor):
        return tensor.numel() * tensor.element_size()

    def _move(self, call):
        check(call(self._group.resources.handle))

    def _run(self, what, result, body):
        """body() on the group's worker thread; a Work whose future gets
        `result` when it returns, or DistBackendError when it raises."""
        future = Future()

        def task():
            try:
                body()
            except BaseException as e:  # noqa: BLE001: every failure completes the future
                future.set_result(dist.DistBackendError(f"mlos {what}: {e}"))
                return
            future.set_result(result)
        try:
            self._worker.submit(task)
        except RuntimeError as e:  # the group was shut down
            future.set_result(dist.DistBackendError(f"mlos {what}: {e}"))
        return _FutureWork(future)

    def shutdown(self):
        """Finishes queued work and releases the group's allocation."""
        self._worker.shutdown(wait=True)
        self._group.close()


def _create(store, rank, size, timeout):
    return MLOSBackend(store, rank, size, timeout)


def register():
    """Makes "mlos" a torch.distributed backend for CPU and CUDA tensors
    (idempotent)."""
    if NAME.upper() in dist.Backend._plugins:  # noqa: SLF001: torch keeps no public registry
        return
    dist.Backend.register_backend(NAME, _create, devices=["cpu", "cuda"])
