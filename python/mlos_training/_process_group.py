# SPDX-License-Identifier: Apache-2.0
"""MLOSProcessGroup and what it needs, free of torch and of the backend's
registration: distributed.py (the published module, which registers the
torch.distributed backend when imported) and torch_backend.py both import
it from here, so neither imports the other. See distributed.py for how
the ranks meet and what errors mean."""
import datetime
import os

from . import _core
from ._resources import SUM, release_resources, request_resources
from .enums import ReduceOp, member_by_name
from .errors import CODES, MLOSError, check

# mlos_dtype_t values.
_DTYPES = {"float32": 0, "float64": 1, "float16": 2, "bfloat16": 3, "int32": 4, "int64": 5}
_OP_ALIASES = {"PRODUCT": "PROD"}  # torch.distributed.ReduceOp's name for it


class TorchStoreAdapter:
    """The library's store protocol (set, get with a timeout, wait with a
    timeout) over a torch.distributed.Store. A timeout of the torch store
    is raised as TimeoutError, which the library reports as TIMEOUT."""

    def __init__(self, store):
        self.store = store
        # compare_set(key, expected, desired) -> the value held then: the
        # library claims each rank number with it, so a rank given to two
        # processes is refused. Only where the store has it (torch's do).
        if hasattr(store, "compare_set"):
            self.compare_set = store.compare_set

    def set(self, key, value):
        self.store.set(key, value)

    def get(self, key, timeout_ms):
        self.wait([key], timeout_ms)
        return self.store.get(key)

    def wait(self, keys, timeout_ms):
        try:
            self.store.wait(keys, datetime.timedelta(milliseconds=timeout_ms))
        except Exception as e:  # torch raises DistStoreError / RuntimeError on a timeout
            if "timeout" in str(e).lower() or "timed out" in str(e).lower():
                raise TimeoutError(str(e)) from e
            raise


def _agent_serves_store(value: str) -> bool:
    """TORCHELASTIC_USE_AGENT_STORE's value: does torchrun's agent serve the store?"""
    return value.lower() == "true" or value == "1"


def _store_from_torch(rank, world_size, timeout):
    """Steps 3 and 4 above; None when neither applies or torch is absent."""
    try:
        import torch.distributed as dist
    except ImportError:
        return None
    if dist.is_available() and dist.is_initialized():
        from torch.distributed import distributed_c10d
        return distributed_c10d._get_default_store()
    addr, port = os.environ.get("MASTER_ADDR"), os.environ.get("MASTER_PORT")
    if not addr or not port:
        return None
    # A group secret is sent and checked by the library's own client and
    # server only (torch's TCPStore takes none): the library serves or
    # joins MASTER_ADDR:MASTER_PORT itself.
    if os.environ.get("MLOS_STORE_SECRET"):
        return None
    # Under torchrun (TORCHELASTIC_USE_AGENT_STORE=True) the agent serves
    # the store at MASTER_ADDR:MASTER_PORT; otherwise rank 0 serves it.
    # "true" in any case or "1", as the C side reads it (torch's C++ reads
    # it as a boolean): docs/collectives.md "Who serves the store".
    agent_serves = _agent_serves_store(os.environ.get("TORCHELASTIC_USE_AGENT_STORE", ""))
    return dist.TCPStore(addr, int(port), world_size, is_master=(rank == 0 and not agent_serves),
                         timeout=datetime.timedelta(seconds=timeout), wait_for_workers=False)


class MLOSProcessGroup:
    """A group of `world_size` ranks (this one is `rank`) doing barrier and
    all-reduce on CPU or CUDA tensors. rank/world_size None: RANK/WORLD_SIZE.
    resources: an allocation from request_resources() whose CPUs the
    group's communication thread uses; None: the group requests a shared
    one-CPU allocation of its own (released by close()). timeout: seconds
    bounding the rendezvous and every operation (None: the library's,
    MLOS_COLLECTIVE_TIMEOUT_MS or 30 s)."""

    def __init__(self, rank=None, world_size=None, *, resources=None, store=None, timeout=None,
                 group_name="mlos"):
        self.rank = int(os.environ["RANK"] if rank is None else rank)
        self.world_size = int(os.environ["WORLD_SIZE"] if world_size is None else world_size)
        if not 0 <= self.rank < self.world_size:
            raise MLOSError(CODES["INVALID_ARGUMENT"],
                            f"need 0 <= rank < world_size, got rank {self.rank}, world_size {self.world_size}")
        self._owns_resources = resources is None
        self.resources = request_resources(num_cpus=1, exclusive_cpus=False) if resources is None else resources
        try:
            timeout_ms = 0 if timeout is None else int(timeout * 1000)
            check(_core.set_collective_options(self.resources.handle, timeout_ms, group_name))
            if store is None and not os.environ.get("MLOS_STORE"):
                store = _store_from_torch(self.rank, self.world_size, timeout or 30)
            if store is not None:
                adapter = store if isinstance(store, TorchStoreAdapter) else TorchStoreAdapter(store)
                check(_core.set_collective_store(self.resources.handle, adapter))
            self.barrier()  # the rendezvous: a bad store or a missing rank fails here, not later
        except BaseException:
            self.close()
            raise

    def barrier(self):
        """Returns when every rank has entered the barrier."""
        check(_core.barrier(self.resources.handle, self.rank, self.world_size))

    def all_reduce(self, tensor, op=SUM):
        """Reduces `tensor` in place across the ranks (every rank gets the
        result) and returns it. tensor: a torch.Tensor or a numpy array, of
        float32/float64/float16/bfloat16/int32/int64; op: a ReduceOp (SUM,
        PROD, MIN, MAX, AVG), its int, its name in any case ("avg"), or
        torch.distributed.ReduceOp.SUM/PRODUCT/MIN/MAX/AVG.
        A non-contiguous tensor is reduced through a contiguous copy.

        CUDA tensors: the tensor's current stream is synchronised first
        (its pending writes land), then the library reduces the device
        buffer itself: through NCCL when every rank has a GPU of its own,
        else staged through pinned host memory into Gloo (docs/gpu.md,
        "Collectives on device buffers"). The result is in place when this
        returns. Tensors on other devices: UNSUPPORTED."""
        op = _op_code(op)
        if hasattr(tensor, "is_cuda"):
            return self._all_reduce_torch(tensor, op)
        return self._all_reduce_array(tensor, op)

    def close(self):
        """Closes the group (and the allocation it requested itself)."""
        res, self.resources = getattr(self, "resources", None), None
        if res is not None and self._owns_resources and res.handle:
            release_resources(res)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _reduce(self, address, count, dtype_name, op):
        dtype = _DTYPES.get(dtype_name)
        if dtype is None:
            raise MLOSError(CODES["INVALID_ARGUMENT"],
                            f"dtype {dtype_name} is not one of {', '.join(_DTYPES)}")
        check(_core.allreduce(self.resources.handle, address, count, dtype, op))

    def _all_reduce_torch(self, tensor, op):
        kind = tensor.device.type
        if kind not in ("cpu", "cuda"):
            raise MLOSError(CODES["UNSUPPORTED"], f"tensors on {kind} devices: only CPU and CUDA tensors are reduced")
        work = tensor if tensor.is_contiguous() else tensor.contiguous()
        if kind == "cuda" and work.numel():
            import torch
            # The library works outside torch's streams: what was queued
            # for this tensor (and the contiguous copy) must be done.
            torch.cuda.current_stream(tensor.device).synchronize()
        self._reduce(work.data_ptr() if work.numel() else 0, work.numel(), str(work.dtype).replace("torch.", ""), op)
        if work is not tensor:
            tensor.copy_(work)
        return tensor

    def _all_reduce_array(self, array, op):
        import numpy as np
        if not isinstance(array, np.ndarray):
            raise TypeError(f"all_reduce takes a torch.Tensor or a numpy.ndarray, not {type(array).__name__}")
        if not array.flags.writeable:
            raise MLOSError(CODES["INVALID_ARGUMENT"], "the array is read-only; all_reduce works in place")
        work = array if array.flags.c_contiguous else np.ascontiguousarray(array)
        self._reduce(work.ctypes.data if work.size else 0, work.size, work.dtype.name, op)
        if work is not array:
            array[...] = work
        return array


def _op_code(op):
    """A ReduceOp, its int or name, or torch's ReduceOp by name (its
    numbering differs); else MLOSInvalidArgumentError listing the names."""
    if isinstance(op, int) and not isinstance(op, bool) and op in ReduceOp._value2member_map_:
        return ReduceOp(op)
    if isinstance(op, str):
        return member_by_name(ReduceOp, "reduction", op, _OP_ALIASES)
    name = getattr(op, "name", None) or str(op).rsplit(".", 1)[-1]
    return member_by_name(ReduceOp, "reduction", str(name), _OP_ALIASES)
