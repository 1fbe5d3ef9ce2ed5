"""Zero-code-change mode: `mlos run --cpus N -- python train.py`.

Installed at interpreter start-up when MLOS_PYTHON_HOOKS=1 (see
mlos_training_autostart.py). Nothing happens until the script imports
torch; right after torch's import:
  - an MLOSTrainingContext on the CPUs `mlos run` granted (MLOS_CPUS; a
    shared request inside mlos run's own claim) binds the main thread and
    sizes torch's intra-op pool to the allocation's physical cores;
  - global hooks mark phases for every model and optimizer: FORWARD when an
    outermost module's forward starts, BACKWARD when backward reaches its
    output, OPTIMIZER during each optimizer step (IDLE once it returns, so
    host time after a step is not counted as OPTIMIZER), DATA_LOADING at each
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

from . import PHASE_DATA_LOADING, PHASE_FORWARD, PHASE_IDLE, PHASE_OPTIMIZER
from .context import MLOSTrainingContext
from .cpu_list import parse_cpu_list

_state = threading.local()  # .outer: the module whose forward is outermost now
context = None  # the process's context once torch is imported


def _cpu_count():
    return len(parse_cpu_list(os.environ.get("MLOS_CPUS", ""))) or len(os.sched_getaffinity(0))


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
        _mark(PHASE_IDLE)  # the step's work ends here, not at the next phase mark

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
    context = MLOSTrainingContext(num_cpus=_cpu_count(), exclusive_cpus=False)
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
    _watch("torch", _on_torch_imported)
    _watch("ultralytics.utils.callbacks.base", _on_ultralytics_callbacks_imported)
