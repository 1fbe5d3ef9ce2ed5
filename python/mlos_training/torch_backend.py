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

Built: allreduce (SUM, PRODUCT, MIN, MAX, AVG), reduce, broadcast,
allgather (and all_gather_into_tensor), reduce_scatter (and
reduce_scatter_tensor; both also coalesced, as FSDP2 calls them),
all_to_all (and all_to_all_single, even or uneven splits), gather,
scatter, barrier, send and recv (isend/irecv, batch_isend_irecv).
reduce and reduce_scatter
run as an all-reduce of a copy and keep their part, as torch's Gloo
backend does. send and recv are posted at once on the calling thread
(Gloo's unbound buffers, as torch's Gloo backend does) and complete on a
thread of their own, so a send never waits behind the queued collectives
nor a receive behind a send. CPU tensors; a CUDA tensor only through
allreduce (the library reduces it through NCCL or staged, docs/gpu.md),
every other op refuses it naming the op. recv from any source is torch's default ("not supported"): torch cannot
ask a Python backend's work which rank sent."""
import concurrent.futures
import ctypes
import datetime
import os
import threading
import warnings

import torch
import torch.distributed as dist
from torch._C._distributed_c10d import Backend as _C10dBackend
from torch.futures import Future

from . import _core
from ._process_group import MLOSProcessGroup
from .errors import CODES, MLOSError, check

NAME = "mlos"
_MAX_TIMEOUT_S = 3600  # the library's bound on a group's timeout


def _flat_bytes(tensor, what):
    """tensor as a contiguous CPU tensor (itself when it already is one)."""
    if tensor.device.type != "cpu":
        raise MLOSError(CODES["UNSUPPORTED"], f"{what} of a tensor on {tensor.device}: only all_reduce takes "
                                              "GPU tensors (use \"cpu:mlos,cuda:nccl\" for the rest)")
    return tensor if tensor.is_contiguous() else tensor.contiguous()


def _byte_view(tensor):
    """A contiguous tensor's bytes as a flat uint8 tensor (no copy)."""
    return tensor.reshape(-1).view(torch.uint8) if tensor.numel() else torch.empty(0, dtype=torch.uint8)


def _split_bytes(tensor, split_sizes, world_size, what):
    """all_to_all_single's per-rank byte counts: rows of dim 0 per rank,
    given (`split_sizes`) or an even split."""
    rows = tensor.shape[0] if tensor.dim() else 1
    row_bytes = tensor.numel() * tensor.element_size() // rows if rows else 0
    if not split_sizes:
        if rows % world_size:
            raise MLOSError(CODES["INVALID_ARGUMENT"], f"all_to_all_single: the {what}'s {rows} rows do not split "
                                                       f"evenly over {world_size} ranks")
        split_sizes = [rows // world_size] * world_size
    if len(split_sizes) != world_size or sum(split_sizes) != rows or min(split_sizes) < 0:
        raise MLOSError(CODES["INVALID_ARGUMENT"], f"all_to_all_single: {what} splits {list(split_sizes)} do not "
                                                   f"cover its {rows} rows over {world_size} ranks")
    return [int(n) * row_bytes for n in split_sizes]


def _set_os_thread_name(name):
    """prctl(PR_SET_NAME): the kernel's name of the calling thread (15 bytes
    at most), which Python 3.11's threading does not set."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(15, ctypes.c_char_p(name.encode()[:15]), 0, 0, 0)  # 15: PR_SET_NAME


def oversubscription_advice(local_ranks, threads, allowed_cpus, online_cpus):
    """A warning when this rank's `threads` intra-op threads exceed its share
    of the CPUs (its own CPUs when a launcher confined it, else the
    `allowed_cpus` split over `local_ranks`), or None. Why it matters
    (docs/benchmarks.md, "DDP backend"): OpenMP threads spin while they wait
    for work, so on overfilled CPUs every rank's communication threads wait
    behind them; the mlos backend, whose operations pass through a Python
    thread, suffers the most."""
    if local_ranks < 1 or threads < 1:
        return None
    share = allowed_cpus if allowed_cpus < online_cpus else allowed_cpus / local_ranks
    if threads <= share:
        return None
    fit = max(1, int(share))
    return (f"mlos backend: {local_ranks} local ranks with {threads} intra-op threads each on {allowed_cpus} CPUs "
            f"oversubscribe them; spinning OpenMP threads then delay every rank's communication. Run the ranks "
            f"under `mlos run`, or set OMP_NUM_THREADS={fit} (or OMP_WAIT_POLICY=PASSIVE)")


def _op_name(reduce_op):
    """The name of a torch ReduceOp as the options carry it."""
    return reduce_op.op.name if hasattr(reduce_op, "op") else reduce_op


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
        advice = oversubscription_advice(int(os.environ.get("LOCAL_WORLD_SIZE") or 0), torch.get_num_threads(),
                                         len(os.sched_getaffinity(0)), os.cpu_count() or 1)
        if advice:
            warnings.warn(advice, RuntimeWarning, stacklevel=2)
        # The worker runs Gloo's algorithms (reductions included); the
        # transfer thread waits for posted transfers in posting order (each
        # is posted before it is waited for, so an earlier one never waits
        # for a later one of this rank). Both are confined to the job's CPUs
        # (this rank's when the backend is made: a launcher's or `mlos
        # run`'s allocation), whichever thread starts them, but not to the
        # group's one CPU where Gloo's thread runs: the worker waits for that
        # thread at every step of an algorithm, and sharing one CPU with it
        # made a 1 MiB all-reduce take 3.9 ms instead of 1.0 ms here
        # (docs/benchmarks.md, "DDP backend").
        self.job_cpus = sorted(os.sched_getaffinity(0))
        self.thread_ids = []  # the kernel's ids of both, once started (tests read them in /proc)
        self._worker = concurrent.futures.ThreadPoolExecutor(1, initializer=self._start_thread,
                                                             initargs=("mlos-c10d",))
        self._transfers = concurrent.futures.ThreadPoolExecutor(1, initializer=self._start_thread,
                                                                initargs=("mlos-c10d-p2p",))

    def getBackendName(self):
        return NAME

    # What torch asks a backend before choosing a path. Answered here: the
    # inherited C++ properties of a Python backend ask the Python object
    # again, which recurses until Python's limit (torch 2.15; seen with
    # batch_isend_irecv, which reads supports_coalescing).
    supports_coalescing = property(lambda self: False)  # batch_isend_irecv posts one by one
    supports_splitting = property(lambda self: False)

    # -- the operations -------------------------------------------------

    def allreduce(self, tensors, opts):
        op = _op_name(opts.reduceOp)
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
        return self._run("all_gather_into_tensor", [output], lambda: self._gather_into(output, input))

    def all_gather_single_coalesced(self, outputs, inputs, opts):  # FSDP2's all-gathers
        def run():
            for out, mine in zip(outputs, inputs):
                self._gather_into(out, mine)
        return self._run("all_gather_into_tensor", outputs, run)

    def _gather_into(self, output, input):
        mine = _flat_bytes(input, "all_gather_into_tensor")
        out = _flat_bytes(output, "all_gather_into_tensor")
        n = self._nbytes(mine)
        if self._nbytes(out) != n * self.size():
            raise MLOSError(CODES["INVALID_ARGUMENT"], f"all_gather_into_tensor: the output holds "
                                                       f"{self._nbytes(out)} bytes, not {self.size()} x {n}")
        self._move(lambda h: _core.allgather(h, mine.data_ptr(), out.data_ptr(), n, self.size()))
        if out is not output:
            output.copy_(out)

    all_gather_single = _allgather_base

    def gather(self, output_tensors, input_tensors, opts):
        root = opts.rootRank

        def run():
            for i, t in enumerate(input_tensors):
                mine = _flat_bytes(t, "gather")
                n = self._nbytes(mine)
                if self.rank() != root:
                    self._move(lambda h: _core.gather(h, mine.data_ptr(), 0, n, root, self.size()))
                    continue
                outs = output_tensors[i]
                if len(outs) != self.size():
                    raise MLOSError(CODES["INVALID_ARGUMENT"], f"gather: {len(outs)} outputs for "
                                                               f"{self.size()} ranks")
                for o in outs:
                    _flat_bytes(o, "gather")  # refuses a GPU output before the exchange
                flat = torch.empty(n * self.size(), dtype=torch.uint8)
                self._move(lambda h: _core.gather(h, mine.data_ptr(), flat.data_ptr(), n, root, self.size()))
                for r, out in enumerate(outs):
                    out.copy_(flat[r * n:(r + 1) * n].view(t.dtype).view(out.shape))
        return self._run("gather", output_tensors, run)

    def scatter(self, output_tensors, input_tensors, opts):
        root = opts.rootRank

        def run():
            for i, out in enumerate(output_tensors):
                mine = _flat_bytes(out, "scatter")
                n = self._nbytes(mine)
                whole = 0
                if self.rank() == root:
                    ins = input_tensors[i]
                    if len(ins) != self.size():
                        raise MLOSError(CODES["INVALID_ARGUMENT"], f"scatter: {len(ins)} inputs for "
                                                                   f"{self.size()} ranks")
                    flat = torch.cat([_byte_view(_flat_bytes(x, "scatter")) for x in ins])
                    if flat.numel() != n * self.size():
                        raise MLOSError(CODES["INVALID_ARGUMENT"], f"scatter: the inputs hold {flat.numel()} "
                                                                   f"bytes, not {self.size()} x {n}")
                    whole = flat.data_ptr()
                self._move(lambda h: _core.scatter(h, whole, mine.data_ptr(), n, root, self.size()))
                if mine is not out:
                    out.copy_(mine)
        return self._run("scatter", output_tensors, run)

    def reduce(self, tensors, opts):
        op, root = _op_name(opts.reduceOp), opts.rootRank

        def run():
            for t in tensors:
                work = _flat_bytes(t, "reduce")
                # Only the root's tensor is the result; the others keep
                # their input (the reduction runs on a copy there).
                target = work if self.rank() == root else work.clone()
                self._group.all_reduce(target, op=op)
                if target is not t and self.rank() == root:
                    t.copy_(target)
        return self._run("reduce", tensors, run)

    def reduce_scatter(self, output_tensors, input_tensors, opts):
        op = _op_name(opts.reduceOp)

        def run():
            for out, ins in zip(output_tensors, input_tensors):
                if len(ins) != self.size():
                    raise MLOSError(CODES["INVALID_ARGUMENT"], f"reduce_scatter: {len(ins)} inputs for "
                                                               f"{self.size()} ranks")
                flat = torch.cat([_flat_bytes(i, "reduce_scatter").reshape(-1) for i in ins])
                self._group.all_reduce(flat, op=op)
                start = sum(i.numel() for i in ins[:self.rank()])
                out.copy_(flat[start:start + out.numel()].view(out.shape))
        return self._run("reduce_scatter", output_tensors, run)

    def reduce_scatter_single(self, output, input, opts):  # dist.reduce_scatter_tensor
        op = _op_name(opts.reduceOp)
        return self._run("reduce_scatter_tensor", [output], lambda: self._scatter_reduced(output, input, op))

    def reduce_scatter_single_coalesced(self, outputs, inputs, opts):  # FSDP2's reduce-scatters
        op = _op_name(opts.reduceOp)

        def run():
            for out, whole in zip(outputs, inputs):
                self._scatter_reduced(out, whole, op)
        return self._run("reduce_scatter_tensor", outputs, run)

    def _scatter_reduced(self, output, input, op):
        if input.numel() != output.numel() * self.size():
            raise MLOSError(CODES["INVALID_ARGUMENT"], f"reduce_scatter_tensor: the input has {input.numel()} "
                                                       f"elements, not {self.size()} x {output.numel()}")
        flat = _flat_bytes(input, "reduce_scatter_tensor").reshape(-1).clone()
        self._group.all_reduce(flat, op=op)
        n = output.numel()
        output.copy_(flat[self.rank() * n:(self.rank() + 1) * n].view(output.shape))

    _reduce_scatter_base = reduce_scatter_single

    def alltoall(self, output_tensors, input_tensors, opts):
        def run():
            if len(output_tensors) != self.size() or len(input_tensors) != self.size():
                raise MLOSError(CODES["INVALID_ARGUMENT"], f"all_to_all: {len(input_tensors)} inputs and "
                                                           f"{len(output_tensors)} outputs for {self.size()} ranks")
            for o in output_tensors:
                _flat_bytes(o, "all_to_all")  # refuses a GPU output before any rank waits
            sends = [_byte_view(_flat_bytes(t, "all_to_all")) for t in input_tensors]
            flat_in = torch.cat(sends) if sends else torch.empty(0, dtype=torch.uint8)
            recv_bytes = [self._nbytes(o) for o in output_tensors]
            flat_out = torch.empty(sum(recv_bytes), dtype=torch.uint8)
            self._move(lambda h: _core.alltoall(h, flat_in.data_ptr(), [s.numel() for s in sends],
                                                flat_out.data_ptr(), recv_bytes))
            at = 0
            for o, n in zip(output_tensors, recv_bytes):
                o.copy_(flat_out[at:at + n].view(o.dtype).view(o.shape))
                at += n
        return self._run("all_to_all", output_tensors, run)

    def all_to_all_single(self, output, input, output_split_sizes, input_split_sizes, opts):
        def run():
            send_bytes = _split_bytes(input, input_split_sizes, self.size(), "input")
            recv_bytes = _split_bytes(output, output_split_sizes, self.size(), "output")
            mine = _flat_bytes(input, "all_to_all_single")
            out = _flat_bytes(output, "all_to_all_single")
            self._move(lambda h: _core.alltoall(h, mine.data_ptr(), send_bytes, out.data_ptr(), recv_bytes))
            if out is not output:
                output.copy_(out)
        return self._run("all_to_all_single", [output], run)

    alltoall_base = all_to_all_single

    def barrier(self, opts):
        return self._run("barrier", [], self._group.barrier)

    def send(self, tensors, dst, tag):
        return self._transfer("send", tensors, dst, tag)

    def recv(self, tensors, src, tag):
        return self._transfer("recv", tensors, src, tag)

    def _transfer(self, what, tensors, peer, tag):
        """Posts the transfer of each tensor now; a Work completed by the
        transfer thread when they all finished (a receive through a
        contiguous copy is copied out then)."""
        future = Future()
        posted = []
        try:
            if tag < 0 or tag > 0xFFFFFFFF:
                raise MLOSError(CODES["INVALID_ARGUMENT"], f"tag {tag} is not in 0..2**32-1")
            bufs = [_flat_bytes(t, what) for t in tensors]  # every refusal before anything is posted
            post = _core.isend if what == "send" else _core.irecv
            for t, buf in zip(tensors, bufs):
                code, transfer = post(self._group.resources.handle, buf.data_ptr(), self._nbytes(buf), peer, tag,
                                      self.size())
                check(code)
                posted.append((t, buf, transfer))
        except BaseException as e:  # noqa: BLE001: a refused post completes the work with the error
            for _, _, transfer in posted:  # frees them (an unfinished one breaks the group)
                _core.wait_transfer(transfer)
            future.set_result(dist.DistBackendError(f"mlos {what}: {e}"))
            return _FutureWork(future)

        def finish():
            error = None
            for t, buf, transfer in posted:  # every one is waited for, also after a failure
                code, _ = _core.wait_transfer(transfer)
                try:
                    check(code)
                    if buf is not t:
                        t.copy_(buf)
                except BaseException as e:  # noqa: BLE001
                    error = error or e
            future.set_result(dist.DistBackendError(f"mlos {what}: {error}") if error else tensors)
        self._transfers.submit(finish)
        return _FutureWork(future)

    # -- plumbing ---------------------------------------------------------

    def _start_thread(self, name):
        """Names the thread (in /proc, top, perf) and confines it to the
        job's CPUs. Best effort, as the library places Gloo's thread: a
        thread that cannot be confined still communicates, wherever the
        process may run."""
        threading.current_thread().name = name
        _set_os_thread_name(name)
        self.thread_ids.append(threading.get_native_id())
        try:
            os.sched_setaffinity(0, self.job_cpus)  # 0: the calling thread
        except OSError:
            pass

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
        self._transfers.shutdown(wait=True)
        self._group.close()


def _create(store, rank, size, timeout):
    return MLOSBackend(store, rank, size, timeout)


def register():
    """Makes "mlos" a torch.distributed backend for CPU and CUDA tensors
    (idempotent)."""
    if NAME.upper() in dist.Backend._plugins:  # noqa: SLF001: torch keeps no public registry
        return
    dist.Backend.register_backend(NAME, _create, devices=["cpu", "cuda"])
