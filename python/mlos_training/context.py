# SPDX-License-Identifier: Apache-2.0
"""MLOSTrainingContext: one allocation for a training process, bound to its
threads, with the thread pools sized to it, released on exit.

    with mlos_training.MLOSTrainingContext(num_cpus=8, memory_gb=16) as ctx:
        ctx.set_phase(mlos_training.PHASE_FORWARD)

With torch imported: torch's intra-op pool is sized to the allocation
(its physical cores), and `model=`/`optimizer=` mark FORWARD, BACKWARD and
OPTIMIZER by themselves (see mlos_training.pytorch). With world_size > 1 a
MLOSProcessGroup is created on the allocation (ctx.process_group).
`policies={"name": {config}}` attaches policy modules to the job right
after the grant (docs/python.md, "Policy modules").
"""
import os
import sys
import threading

from . import _core
from ._resources import (PHASE_FORWARD, PHASE_IDLE, bind_current_thread, release_resources, request_resources,
                         set_phase)
from .enums import Phase, phase_value
from .errors import MLOSError, c_integer, invalid_argument
from .thread_advice import AdvisedThreads

_GIB = 1 << 30
_stack = threading.local()


def current():
    """The innermost active context of this thread, else of any thread
    (DataLoader and checkpoint helpers find it this way); None if none."""
    stack = getattr(_stack, "contexts", None)
    if stack:
        return stack[-1]
    return _Active.latest


class _Active:
    latest = None  # the context most recently entered in any thread


class MLOSTrainingContext:
    """Allocates on __enter__ (or start()), releases on __exit__ (or
    close()), also when the body raises.

    num_cpus, memory_gb, numa_preference, exclusive_cpus, priority: the
    request (memory_bytes= instead of memory_gb is accepted too; a size
    below 0 or past 2**64 bytes raises MLOSError(INVALID_ARGUMENT) here). rank,
    world_size: >1 creates ctx.process_group. bind: pin the entering thread.
    model, optimizer: automatic phase marking (torch). size_threads: give
    torch set_num_threads(recommended_threads) while the context is active.
    adapt_threads: keep the pool at the size the job's policies advise (the
    default thread-governor policy: the allocation's CPUs that other
    processes leave free), read at each FORWARD of the entering thread
    (AdvisedThreads, thread_advice.py); default on, MLOS_ADAPT_THREADS=0
    turns it off.
    policies: {name: config dict} of policy modules to request right after
    the grant (served by mlosd, or in embedded mode by a policy host libmlos
    starts); one that cannot be attached makes start() raise and release
    what it took.
    """

    def __init__(self, num_cpus=1, memory_gb=0, *, memory_bytes=None, numa_preference=-1, exclusive_cpus=True,
                 priority=0, rank=None, world_size=None, model=None, optimizer=None, bind=True, size_threads=True,
                 group_timeout=None, adapt_threads=None, policies=None):
        # Checked here, so a bad size fails at construction, naming the
        # argument the caller gave (request_resources checks the others).
        if memory_bytes is not None:
            memory_bytes = c_integer("memory_bytes", memory_bytes, 0, _core.SIZE_MAX)
        else:
            try:
                memory_bytes = c_integer("memory_gb", memory_gb * _GIB, 0, _core.SIZE_MAX)
            except MLOSError:
                raise invalid_argument(f"memory_gb must be a size in GiB in 0..{_core.SIZE_MAX / _GIB:g}, "
                                       f"got {memory_gb!r}") from None
        self.request = dict(num_cpus=num_cpus, numa_preference=numa_preference, exclusive_cpus=exclusive_cpus,
                            priority=priority, memory_bytes=memory_bytes)
        self.rank, self.world_size = rank, world_size
        self.model, self.optimizer = model, optimizer
        self.bind, self.size_threads = bind, size_threads
        self.group_timeout = group_timeout
        if adapt_threads is None:
            adapt_threads = os.environ.get("MLOS_ADAPT_THREADS", "1") != "0"
        self.adapt_threads = adapt_threads
        if policies is not None and not isinstance(policies, dict):
            raise TypeError(f"policies must be a dict of policy name -> config dict, got {type(policies).__name__}")
        self.policies = dict(policies or {})
        self.governor = None  # an AdvisedThreads while the pool is kept sized
        self._torch, self._thread = None, None
        self.resources = None
        self.process_group = None
        self.phase = PHASE_IDLE
        self.allowed_cpus_before = None  # the process's CPUs before binding (DataLoader workers)
        self.pid = None  # the process that started the context
        self._undo = []  # callables that put back what start() changed, run in reverse

    # -- lifetime ---------------------------------------------------------
    def start(self):
        self.pid = os.getpid()
        self.allowed_cpus_before = sorted(os.sched_getaffinity(0))
        self.resources = request_resources(**self.request)
        try:
            for name, config in self.policies.items():
                self.resources.request_policy(name, config)
            if self.bind:
                bind_current_thread(self.resources)
            torch = sys.modules.get("torch")
            if torch is not None and self.size_threads:
                before = torch.get_num_threads()
                torch.set_num_threads(self.resources.recommended_threads)
                self._undo.append(lambda: torch.set_num_threads(before))
                if self.adapt_threads:
                    res = self.resources
                    self.governor = AdvisedThreads(lambda: res.advice, res.recommended_threads, len(res.cpus))
                    # Advice the policies already give (e.g. a CPU taken
                    # since before the job started) applies at once.
                    threads = self.governor.poll()
                    if threads is not None:
                        torch.set_num_threads(threads)
                    self._torch, self._thread = torch, threading.get_ident()
                    self._undo.append(lambda: setattr(self, "governor", None))
            if self.model is not None or self.optimizer is not None:
                from .pytorch.phases import attach_phase_hooks
                handles = attach_phase_hooks(self, model=self.model, optimizer=self.optimizer)
                self._undo.append(lambda: [h.remove() for h in handles])
            if self.world_size is not None and int(self.world_size) > 1:
                from .distributed import MLOSProcessGroup
                self.process_group = MLOSProcessGroup(self.rank, self.world_size, resources=self.resources,
                                                      timeout=self.group_timeout)
                self._undo.append(self.process_group.close)
        except BaseException:
            self.close()
            raise
        stack = getattr(_stack, "contexts", None)
        if stack is None:
            stack = _stack.contexts = []
        stack.append(self)
        _Active.latest = self
        return self

    def close(self):
        while self._undo:
            self._undo.pop()()
        stack = getattr(_stack, "contexts", [])
        if self in stack:
            stack.remove(self)
        if _Active.latest is self:
            _Active.latest = stack[-1] if stack else None
        res, self.resources = self.resources, None
        if res is not None and res.handle:
            release_resources(res)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.close()

    # -- use --------------------------------------------------------------
    def set_phase(self, phase):
        """Enters `phase` for this allocation's bound threads. At FORWARD,
        in the thread that entered the context, torch's pool may be resized
        to the advised size (between operators, where that is safe).
        `phase`: a Phase, its int or its name, as set_phase takes it."""
        set_phase(self.resources, phase)
        phase = Phase(phase_value(phase))  # the library took it, so it is a phase
        self.phase = phase
        if phase == PHASE_FORWARD and self.governor is not None and threading.get_ident() == self._thread:
            threads = self.governor.poll()
            if threads is not None:
                self._torch.set_num_threads(threads)

    def mark(self, phase):
        """set_phase for automatic hooks: does nothing once the allocation
        is released, or in a process forked from the one that made it
        (DataLoader workers run the same modules, e.g. torchvision
        transforms, and must not touch the parent's allocation)."""
        if self.resources is not None and os.getpid() == self.pid:
            self.set_phase(phase)

    @property
    def torch_threads(self):
        """The intra-op pool size the context wants now: the advised size
        while the pool is kept sized, else the allocation's recommended_threads.
        For code that must put the pool back after something else resized
        it (Ultralytics does on CPU)."""
        return self.governor.threads if self.governor is not None else self.resources.recommended_threads

    @property
    def cpus(self):
        return self.resources.cpus

    # -- policy modules ---------------------------------------------------
    def request_policy(self, name, **config):
        """Attaches policy module `name` to this job with `config`
        as its JSON object, e.g. ctx.request_policy("example", threads=2).
        See Resources.request_policy for the errors."""
        self.resources.request_policy(name, config)

    def release_policy(self, name):
        """Detaches policy `name` (Resources.release_policy)."""
        self.resources.release_policy(name)

    def record_read(self, path, offset=0, length=0):
        """Resources.record_read: feeds the job's read log (prefetch)."""
        self.resources.record_read(path, offset, length)

    def announce_reads(self, paths):
        """Resources.announce_reads: the order of the job's next reads."""
        self.resources.announce_reads(paths)

    @property
    def advice(self):
        """What the job's policies advise now (Resources.advice): a dict
        with threads, threads_advised, cpu_weight, policies,
        policies_failed. Served by mlosd, or in embedded mode by the policy
        host processes libmlos starts itself (one per policy).
        MLOSError(UNSUPPORTED) only when no policy host is found."""
        return self.resources.advice

    def phase_profile(self):
        return self.resources.phase_profile()

    def __repr__(self):
        state = f"cpus={self.resources.cpus}" if self.resources else "not started"
        return f"<MLOSTrainingContext {state} phase={self.phase}>"
