# SPDX-License-Identifier: Apache-2.0
"""Zero-code-change mode: `mlos run --cpus N -- python train.py`.

Installed at interpreter start-up when MLOS_PYTHON_HOOKS=1 (see
mlos_training_autostart.py). In a local rank (torchrun's LOCAL_RANK of
LOCAL_WORLD_SIZE > 1), the process moves into its share of mlos run's CPUs
at once, before any thread pool starts, and the thread-pool variables that
`mlos run` set (MLOS_THREAD_ENV) are resized to the share's physical cores
(docs/placement.md, "Local ranks"). Nothing else happens until the script
imports torch; right after torch's import:
  - an MLOSTrainingContext on the CPUs the process may use (all of mlos
    run's, or the rank's share; a shared request inside mlos run's own
    claim) binds the main thread and sizes torch's intra-op pool to their
    physical cores, unless OMP_NUM_THREADS was set by someone other than
    mlos run (the user, or torchrun's default under --no-thread-env): that
    size is kept;
  - global hooks mark phases for every model and optimizer: FORWARD when an
    outermost module's forward starts, BACKWARD when backward reaches its
    output, OPTIMIZER during each optimizer step (DATA_LOADING once it returns,
    so host time after a step is not counted as OPTIMIZER), DATA_LOADING at each
    DataLoader fetch;
  - at exit the context is released, which prints the phase profile when
    MLOS_PROFILE is set (`mlos run --profile`).
DataLoader workers are forked from the bound main thread and inherit its
CPUs. When Ultralytics is imported, the callbacks of
mlos_training.integrations.ultralytics become defaults of every model it
creates (torch threads, phases, atomic checkpoints; Ultralytics' own worker
count kept). Disable with `mlos run --no-python-hooks`.
"""
import atexit
import importlib.machinery
import os
import sys
import threading

from ._resources import PHASE_DATA_LOADING, PHASE_FORWARD, PHASE_OPTIMIZER, allowed_cpus
from .context import MLOSTrainingContext
from .errors import MLOSError

_state = threading.local()  # .outer: the module whose forward is outermost now
context = None  # the process's context once torch is imported


def _cpu_count():
    return len(allowed_cpus()[0])


def _thread_env_set_by_mlos():
    """Names of the thread-pool variables `mlos run` set (MLOS_THREAD_ENV);
    the others are the user's (or the launcher's) and are left alone."""
    return [n for n in os.environ.get("MLOS_THREAD_ENV", "").split(",") if n]


def _threads_sized_by_someone_else():
    return "OMP_NUM_THREADS" in os.environ and "OMP_NUM_THREADS" not in _thread_env_set_by_mlos()


def _take_rank_share():
    """A local rank inside mlos run takes its share now (single-threaded:
    every later thread inherits it) and sizes mlos run's thread variables
    to it, for torch's pool and for any child process."""
    if os.environ.get("LOCAL_WORLD_SIZE", "1") in ("", "1") or not os.environ.get("MLOS_CPUS"):
        return
    try:
        _, threads = allowed_cpus()
    except MLOSError as e:
        # Every request of this process will fail with the same error; the
        # interpreter itself must still start.
        sys.stderr.write(f"mlos_training: the local rank's share was not applied: {e}\n")
        return
    for name in _thread_env_set_by_mlos():
        os.environ[name] = str(threads)
    os.environ["MLOS_RECOMMENDED_THREADS"] = str(threads)


def _mark(phase):
    if context is not None:
        context.mark(phase)


def _install_hooks(torch):
    from torch.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook
    from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook
    from torch.utils.data.dataloader import _BaseDataLoaderIter

    from .pytorch.phases import mark_backward_when_reached

    def before_forward(module, args):
        if getattr(_state, "outer", None) is None:
            _state.outer = module
            _mark(PHASE_FORWARD)

    def after_forward(module, args, out):
        if getattr(_state, "outer", None) is module:
            _state.outer = None
            mark_backward_when_reached(out, _mark)

    def before_step(optimizer, args, kwargs):
        _state.outer = None  # a forward that raised leaves no stale outermost module
        _mark(PHASE_OPTIMIZER)

    def after_step(optimizer, args, kwargs):
        # The step's work ends here, not at the next phase mark. What follows
        # until the next forward is the loop getting its next batch (the
        # DataLoader hook marks the same phase, so such a loop pays no extra
        # change): DATA_LOADING, not IDLE, which would lower the job's
        # priority and unlock its gradient buffers at every step.
        _mark(PHASE_DATA_LOADING)

    original_next = _BaseDataLoaderIter.__next__

    def next_batch(self):
        _state.outer = None
        _mark(PHASE_DATA_LOADING)
        return original_next(self)

    register_module_forward_pre_hook(before_forward)
    register_module_forward_hook(after_forward)
    register_optimizer_step_pre_hook(before_step)
    register_optimizer_step_post_hook(after_step)
    _BaseDataLoaderIter.__next__ = next_batch


def _on_torch_imported(torch):
    global context
    context = MLOSTrainingContext(num_cpus=_cpu_count(), exclusive_cpus=False,
                                  size_threads=not _threads_sized_by_someone_else())
    context.start()
    atexit.register(context.close)
    _install_hooks(torch)


class _ImportWatcher:
    """A meta-path finder that lets module `name`'s import run as usual and
    calls on_imported(module) once it has."""

    def __init__(self, name, on_imported):
        self.name, self.on_imported = name, on_imported

    def find_spec(self, fullname, path=None, target=None):
        if fullname != self.name:
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return spec
        exec_module = spec.loader.exec_module

        def exec_then_hook(module):
            exec_module(module)
            self.on_imported(module)

        spec.loader.exec_module = exec_then_hook
        return spec


def _on_ultralytics_callbacks_imported(base):
    from .integrations.ultralytics import register_default_callbacks
    register_default_callbacks(base)


def _watch(name, on_imported):
    if name in sys.modules:
        on_imported(sys.modules[name])
    else:
        sys.meta_path.insert(0, _ImportWatcher(name, on_imported))


def install():
    _take_rank_share()
    _watch("torch", _on_torch_imported)
    _watch("ultralytics.utils.callbacks.base", _on_ultralytics_callbacks_imported)
