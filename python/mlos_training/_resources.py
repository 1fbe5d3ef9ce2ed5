# SPDX-License-Identifier: Apache-2.0
"""The Training Workload API's functions and constants (what
``import mlos_training`` publishes; see the package's docstring). Kept out
of the package root so that the package's own modules (context,
_process_group, autostart, data) import them from here and the root only
re-exports: no module imports the package that imports it.
"""
import atexit
import json
import os
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Set, Tuple

from . import _core
from .enums import Phase, PhaseLike, ReduceOp, phase_value
from .errors import (CODES, MLOSConnectionError, MLOSCorruptError, MLOSError, MLOSInvalidArgumentError,
                     MLOSNotFoundError, MLOSPermissionError, MLOSPolicyError, MLOSResourceError, MLOSSystemError,
                     MLOSTimeoutError, MLOSUnsupportedError, c_integer, check, fs_path, invalid_argument)

_INT_MIN, _INT_MAX = -(1 << 31), (1 << 31) - 1  # the C API's int fields

PHASE_IDLE = Phase.IDLE
PHASE_DATA_LOADING = Phase.DATA_LOADING
PHASE_FORWARD = Phase.FORWARD
PHASE_BACKWARD = Phase.BACKWARD
PHASE_OPTIMIZER = Phase.OPTIMIZER
PHASE_CHECKPOINT = Phase.CHECKPOINT
PHASE_NAMES: Tuple[str, ...] = tuple(_core.phase_name(p) for p in range(_core.PHASE_COUNT))

# Memory-pressure levels (mlos_memory_pressure_level_t).
MEMORY_NORMAL = 0
MEMORY_MODERATE = 1
MEMORY_CRITICAL = 2

# Reduction operators of barrier/all-reduce (mlos_reduce_op_t).
SUM = ReduceOp.SUM
PROD = ReduceOp.PROD
MIN = ReduceOp.MIN
MAX = ReduceOp.MAX
AVG = ReduceOp.AVG


class Resources:
    """An allocation (mlos_training_resources_t). Release it with
    release_resources(); it is also usable as a context manager."""

    __slots__ = ("_handle", "_callbacks", "_buffers", "_registered", "_closers", "__weakref__")

    def __init__(self, handle: int) -> None:
        self._handle = handle
        self._callbacks: List[Callable[[int, Dict[str, Any]], object]] = []
        self._buffers: Set[Any] = set()  # LockedBuffers not yet freed
        self._registered: Dict[int, Any] = {}  # address -> storage of registered tensors (kept alive)
        self._closers: List[Callable[[], object]] = []  # run before release: writers whose saves use this allocation's memory
        _live.add(self)

    @property
    def handle(self) -> int:
        """The C handle as an integer (0 once released)."""
        return self._handle

    @property
    def cpus(self) -> List[int]:
        """The allocation's CPU OS indices."""
        rc, cpus = _core.get_cpus(self._handle)
        check(rc)
        return cpus

    @property
    def recommended_threads(self) -> int:
        """Intra-op thread count for this allocation (its physical cores)."""
        return check(_core.recommended_threads(self._handle))

    def phase_profile(self) -> Dict[str, Any]:
        """Seconds and entries per phase, plus communication time, calls and
        bytes of the collectives run on this allocation."""
        rc, prof = _core.phase_profile(self._handle)
        check(rc)
        return prof

    def placement(self) -> Dict[str, Any]:
        """CPUs granted, NUMA node(s), exclusivity, recommended threads,
        memory, current phase, degraded effects, claim id, bound threads."""
        rc, placement = _core.placement(self._handle)
        check(rc)
        return placement

    def register_memory_callback(self, fn: Callable[[int, Dict[str, Any]], object]) -> None:
        """Calls fn(level, info) on each memory-pressure level change (and
        at once if the level is not NORMAL now), on the library's watcher
        thread. level: MEMORY_NORMAL, MEMORY_MODERATE, MEMORY_CRITICAL;
        info: a dict of the figures (available_bytes, budget_bytes,
        psi_some_avg10, psi_full_avg10, source, detected_ns, sequence). See
        docs/memory-pressure.md. A non-callable fn raises TypeError here,
        not later on the watcher thread."""
        if not callable(fn):
            raise TypeError(f"memory callback must be callable, got {type(fn).__name__}")
        check(_core.register_memory_callback(self._handle, fn))
        self._callbacks.append(fn)

    def unregister_memory_callback(self, fn: Callable[[int, Dict[str, Any]], object]) -> None:
        """After this returns, fn is not running and will not be called."""
        check(_core.unregister_memory_callback(self._handle, fn))
        self._callbacks.remove(fn)

    def memory_pressure(self) -> Dict[str, Any]:
        """The current level and figures, as the callbacks get them."""
        rc, info = _core.memory_pressure(self._handle)
        check(rc)
        return info

    def alloc_checkpoint_buffer(self, size, allow_unlocked=False):
        """`size` bytes of memory, prefaulted and locked (VmLck), counted
        against memory_bytes when that is not 0: a LockedBuffer, whose
        .tensor() and .memoryview() use it without a copy. Raises MLOSError:
        LOCK_LIMIT (RLIMIT_MEMLOCK without CAP_IPC_LOCK; an unlocked buffer
        only with allow_unlocked=True, which the buffer's .locked then
        shows), INSUFFICIENT_MEMORY (over the job's memory_bytes),
        INVALID_ARGUMENT (size 0 or out of range), NO_MEMORY."""
        from .pinned import alloc_checkpoint_buffer
        return alloc_checkpoint_buffer(self, size, allow_unlocked)

    def register_buffer(self, tensor, kind=None):
        """Registers a CPU tensor's whole storage as a gradient buffer
        (mlos_training_register_buffer, MLOS_BUFFER_GRADIENT): locked on the
        first BACKWARD, kept through OPTIMIZER and CHECKPOINT, unlocked at
        IDLE, unregister and release. The storage is kept alive until then.
        A lock the kernel refuses does not fail the phase change: it is a
        note (notes(), placement()["degraded_effects"]). Raises MLOSError
        (INVALID_ARGUMENT: empty, overlapping a registered buffer, not on
        the CPU), TypeError for a non-tensor."""
        from .pinned import BUFFER_GRADIENT, register_buffer
        register_buffer(self, tensor, BUFFER_GRADIENT if kind is None else kind)

    def unregister_buffer(self, tensor):
        """Unlocks and forgets a tensor registered with register_buffer.
        MLOSError(INVALID_ARGUMENT) if it is not registered."""
        from .pinned import unregister_buffer
        unregister_buffer(self, tensor)

    def request_policy(self, name: str, config: "Dict[str, Any] | None" = None) -> None:
        """Attaches policy module `name` to this allocation's job, with
        `config` (a dict, sent as a JSON object; None: {}). Served by mlosd,
        or in embedded mode by a policy host libmlos starts (see
        docs/python.md, "Policy modules"). Raises MLOSError: UNSUPPORTED
        (embedded mode without an installed policy host: the message says
        where it looked), NOT_FOUND (no such policy; the message names the
        policy directory),
        INVALID_ARGUMENT (name empty or with a NUL byte, a config that is
        not JSON, or one the policy refuses: the message names the key),
        POLICY_FAILED (it crashed or hung, now or recently),
        VERSION_MISMATCH. TypeError for a name that is not str or a config
        that is not a dict."""
        name = _policy_name(name)
        if config is None:
            config = {}
        if not isinstance(config, dict):
            raise TypeError(f"config of policy {name!r} must be a dict, got {type(config).__name__}")
        try:
            text = json.dumps(config, allow_nan=False)
        except (TypeError, ValueError) as e:
            raise invalid_argument(f"config of policy {name!r} is not JSON: {e}") from None
        check(_core.request_policy(self._handle, name, text))

    def release_policy(self, name: str) -> None:
        """Detaches policy `name`; what it set is taken back. Raises
        MLOSError: NOT_FOUND (the job does not use it), UNSUPPORTED (no
        policy host), INVALID_ARGUMENT (name empty or with a NUL byte)."""
        check(_core.release_policy(self._handle, _policy_name(name)))

    def record_read(self, path: "str | os.PathLike", offset: int = 0, length: int = 0) -> None:
        """Tells the job's policies (prefetch: docs/prefetch.md) that the
        job read `length` bytes of `path` at `offset` (length 0: the whole
        file). Cheap: no system call. Raises MLOSError: UNSUPPORTED (daemon
        mode: mlosd collects no read log yet), INVALID_ARGUMENT (an empty
        path). ValueError for a negative offset or length."""
        if offset < 0 or length < 0:
            raise ValueError("offset and length must be >= 0")
        check(_core.record_read(self._handle, os.fsdecode(path), offset, length))

    def announce_reads(self, paths: "Iterable[str | os.PathLike]") -> None:
        """Tells the job's policies the order in which the job will read
        these files next (an epoch's sampler order), replacing the last
        announcement; [] withdraws it. Raises as record_read."""
        check(_core.announce_reads(self._handle, [os.fsdecode(p) for p in paths]))

    @property
    def advice(self) -> Dict[str, Any]:
        """What the job's policies advise now (one round trip to mlosd, or
        to libmlos's policy thread in embedded mode):
        {"threads": intra-op threads to use, "threads_advised": True when a
        policy advised them (else they are the grant's recommended count),
        "cpu_weight": the job cgroup's CPU weight (0 unknown), "policies":
        how many it uses, "policies_failed": how many of those failed now}.
        Raises MLOSError(UNSUPPORTED) in embedded mode without a policy host."""
        rc, advice = _core.advice(self._handle)
        check(rc)
        return advice

    @property
    def gpus(self) -> List[str]:
        """UUIDs of the NVIDIA GPUs the allocation holds ([] if none): what
        CUDA_VISIBLE_DEVICES should name for it. mlOS does not set that
        variable in a running process (CUDA may have read it already)."""
        rc, text = _core.gpus(self._handle)
        check(rc)
        return [u for u in text.split(",") if u]

    def notes(self) -> str:
        """Why effects were degraded: "effect: reason" lines (e.g. memlock)."""
        rc, text = _core.notes(self._handle)
        check(rc)
        return text

    def __enter__(self) -> "Resources":
        return self

    def __exit__(self, *exc: object) -> None:
        if self._handle:
            release_resources(self)

    def __repr__(self) -> str:
        return f"<mlos_training.Resources handle={self._handle:#x}>" if self._handle else "<Resources released>"


# Allocations not yet released (kept alive until then): their memory
# callbacks are unregistered at interpreter exit, so the watcher thread
# never calls into a finalising interpreter.
_live: "Set[Resources]" = set()


@atexit.register
def _unregister_callbacks_at_exit():
    for res in list(_live):
        for fn in list(res._callbacks):
            _core.unregister_memory_callback(res.handle, fn)
        res._callbacks.clear()


def _policy_name(name):
    """`name` if it is a usable policy name; TypeError for a non-str,
    MLOSError(INVALID_ARGUMENT) for an empty one or one with a NUL byte."""
    if not isinstance(name, str):
        raise TypeError(f"policy name must be a str, got {type(name).__name__}")
    if not name or "\0" in name:
        raise invalid_argument(f"policy name {name!r} is empty or contains a NUL byte")
    return name


def request_resources(num_cpus: int = 1, memory_bytes: int = 0, numa_preference: int = -1, exclusive_cpus: bool = True,
                      priority: int = 0, num_gpus: int = 0, gpu_uuids: Optional[Sequence[str]] = None,
                      shared_gpus: bool = False) -> Resources:
    """Claims `num_cpus` CPUs (and checks `memory_bytes` can be had) on the
    best-fitting NUMA node, or on `numa_preference`. With `num_gpus` (or
    `gpu_uuids`, specific GPUs) it also claims NVIDIA GPUs, exclusively
    unless `shared_gpus`, and the CPUs come from their NUMA node
    (docs/gpu.md); Resources.gpus names them. Raises MLOSError (e.g.
    INSUFFICIENT_CPUS, CPUS_BUSY, INSUFFICIENT_MEMORY, INSUFFICIENT_GPUS,
    GPUS_BUSY; INVALID_ARGUMENT naming the argument for a value out of
    range, memory_bytes < 0 included)."""
    if isinstance(gpu_uuids, str):
        raise MLOSError(CODES["INVALID_ARGUMENT"], "gpu_uuids must be a sequence of UUID strings, not one string")
    uuids = list(gpu_uuids or ())
    if any(not isinstance(u, str) or not u or "," in u for u in uuids):
        raise MLOSError(CODES["INVALID_ARGUMENT"], f"gpu_uuids must hold non-empty UUID strings without commas: {uuids!r}")
    rc, handle = _core.request_resources(c_integer("num_cpus", num_cpus, _INT_MIN, _INT_MAX),
                                         c_integer("memory_bytes", memory_bytes, 0, _core.SIZE_MAX),
                                         c_integer("numa_preference", numa_preference, _INT_MIN, _INT_MAX),
                                         bool(exclusive_cpus), c_integer("priority", priority, _INT_MIN, _INT_MAX),
                                         c_integer("num_gpus", num_gpus, _INT_MIN, _INT_MAX), ",".join(uuids),
                                         bool(shared_gpus))
    check(rc)
    return Resources(handle)


def allowed_cpus() -> Tuple[List[int], int]:
    """(cpus, recommended_threads): the CPUs this process's requests are
    placed in and the physical cores they cover. In a local rank started
    inside `mlos run` (torchrun sets LOCAL_RANK, LOCAL_WORLD_SIZE), the
    first call moves the process into its share of mlos run's CPUs and
    returns that share (docs/placement.md, "Local ranks"). Raises
    MLOSError(INVALID_ARGUMENT) naming a malformed LOCAL_RANK,
    LOCAL_WORLD_SIZE or MLOS_CPUS."""
    rc, cpus, threads = _core.allowed_cpus()
    check(rc)
    return cpus, threads


def release_resources(res: Resources) -> None:
    """Releases the allocation: threads unbound, claim dropped, collective
    group closed. Releasing twice raises MLOSError(INVALID_HANDLE)."""
    if not res.handle:
        raise MLOSError(CODES["INVALID_HANDLE"], "resources already released")
    while res._closers:  # asynchronous checkpoint writes finish before their staging goes
        res._closers.pop()()
    for fn in list(res._callbacks):  # our references to them go only once they cannot run
        _core.unregister_memory_callback(res.handle, fn)
    res._callbacks.clear()
    handle, res._handle = res._handle, 0
    _live.discard(res)
    rc = _core.release_resources(handle)
    buffers, res._buffers = res._buffers, set()
    for buf in buffers:  # freed by the library; views still alive keep valid memory
        buf._released()
    res._registered.clear()
    check(rc)


def bind_current_thread(res: Resources, cpu_index: int = -1) -> None:
    """Pins the calling thread to the allocation (-1: all its CPUs, else
    its cpu_index-th CPU) and applies the current phase's settings to it."""
    check(_core.bind_current_thread(res.handle, int(cpu_index)))


def set_phase(res: Resources, phase: PhaseLike) -> None:
    """Enters `phase` (a Phase, PHASE_*, its int, or its name: "FORWARD",
    "forward"): timed in the phase profile, and applied to the bound
    threads (nice, I/O priority, buffer locking). An unknown name or value
    raises MLOSInvalidArgumentError listing the phases."""
    check(_core.set_phase(res.handle, c_integer("phase", phase_value(phase), _INT_MIN, _INT_MAX)))



def write_file_atomic(path: "str | bytes | os.PathLike[str] | os.PathLike[bytes]", data: Any) -> None:
    """Replaces the file `path` with the bytes of `data` (any buffer) so
    that a crash leaves the old file or the new one, never a torn one
    (temporary, fdatasync, rename, directory fsync). `path`: str, bytes or
    os.PathLike; one with a NUL byte raises MLOSError(INVALID_ARGUMENT)."""
    check(_core.write_file(fs_path(path), data))


# Published as mlos_training's own (repr, help() and pickling by name say
# mlos_training.Resources, as before this module existed).
for _published in (Resources, request_resources, allowed_cpus, release_resources, bind_current_thread, set_phase,
                   write_file_atomic):
    _published.__module__ = "mlos_training"
del _published
