# SPDX-License-Identifier: Apache-2.0
"""Ultralytics integration: a YOLO training run on an mlOS allocation,
phase-marked, with atomic checkpoints, through Ultralytics' callbacks.

    from ultralytics import YOLO
    from mlos_training.integrations.ultralytics import add_mlos_callbacks

    model = YOLO("yolov8n.yaml")
    mlos = add_mlos_callbacks(model)          # or add_mlos_callbacks(model, ctx)
    model.train(data="data.yaml", epochs=5, device="cpu")
    print(mlos.reports[-1]["phase_profile"])

What each callback does (Ultralytics 8.4 trainer):
  on_pretrain_routine_start  restores `workers=` (on CPU the trainer
        forces 0) and wraps the trainer's _setup_train, which then, before
        the model and DataLoaders are set up: takes the MLOSTrainingContext
        (the one given, else mlos_training.current(), else a new one on
        every CPU the process may use, released at the end); sizes torch's
        intra-op pool to the allocation (on CPU the trainer's constructor
        set it to min(8, cpus - 1)); makes DataLoader workers start on the
        allocation's NUMA node; wraps optimizer_step, save_model and
        final_eval.
  on_train_start             FORWARD/BACKWARD hooks on the trainer's model.
  on_train_epoch_start, on_train_batch_end   DATA_LOADING (the wait for
        the next batch).
  on_train_batch_start       FORWARD (preprocessing and the forward pass;
        BACKWARD when backward reaches the loss).
  optimizer_step             OPTIMIZER. Ultralytics declares this event but
        never fires it; the wrapped trainer.optimizer_step fires it before
        each step (gradient clipping, step, EMA update).
  on_train_epoch_end         FORWARD (validation).
  save_model (wrapped)       CHECKPOINT; last.pt, best.pt and epochN.pt are
        written with mlos_training.write_file_atomic (temporary, fdatasync,
        rename, directory fsync) instead of Path.write_bytes, so a process
        killed mid-save leaves the previous file, never a torn one.
  on_model_save, on_fit_epoch_end   back to IDLE between epochs.
  final_eval (wrapped)       CHECKPOINT while strip_optimizer rewrites
        last.pt/best.pt (its torch.save made atomic), FORWARD for the final
        validation.
  on_train_end, teardown     records the report, puts back what was
        patched, releases a context it created.

Everything patched is per trainer (bound methods) except two module
attributes swapped only while one of its calls runs (Path.write_bytes
during save_model, ultralytics.engine.trainer.strip_optimizer during
final_eval) and ultralytics.data.build.seed_worker for the training run.
"""
import os
import pathlib

from .. import (PHASE_CHECKPOINT, PHASE_DATA_LOADING, PHASE_FORWARD, PHASE_IDLE, PHASE_OPTIMIZER, PHASE_NAMES,
                write_file_atomic)
from ..context import MLOSTrainingContext, current
from ..pytorch.checkpoint import durable_save
from ..pytorch.data import _PinWorkers, worker_cpus
from ..pytorch.phases import attach_phase_hooks

EVENTS = ("on_pretrain_routine_start", "on_train_start", "on_train_epoch_start", "on_train_batch_start",
          "optimizer_step", "on_train_batch_end", "on_train_epoch_end", "on_model_save", "on_fit_epoch_end",
          "on_train_end", "teardown")


class _Run:
    """What the integration holds for one trainer."""

    def __init__(self, ctx, owned):
        self.ctx, self.owned = ctx, owned
        self.undo = []  # callables putting back what was patched, run in reverse
        self.report = {"batches": 0, "optimizer_steps": 0, "atomic_writes": [], "torch_threads": None,
                       "worker_cpus": None, "cpus": list(ctx.resources.cpus), "phase_profile": None}

    def mark(self, phase):
        self.ctx.mark(phase)


class MLOSUltralyticsCallbacks:
    """The callbacks, and one report per finished training run (reports:
    batches, optimizer_steps, atomic_writes [{path, bytes, inode}],
    torch_threads, worker_cpus, cpus, phase_profile)."""

    def __init__(self, context=None, *, workers=None, num_cpus=None):
        self.context, self.workers, self.num_cpus = context, workers, num_cpus
        self.reports = []

    def attach(self, model):
        """model.add_callback(event, ...) for every event above."""
        for event in EVENTS:
            model.add_callback(event, getattr(self, event))
        return self

    # -- set-up -----------------------------------------------------------
    def on_pretrain_routine_start(self, trainer):
        """Runs inside the trainer's constructor, which can still fail
        after it (dataset checks): only the worker count is set here; the
        rest starts with _setup_train, inside train()'s try/finally, whose
        teardown callback undoes it whatever happens. The first mlOS
        callbacks on a trainer own it; others (say, explicit ones next to
        the zero-code mode's defaults) stand aside."""
        if getattr(trainer, "mlos_callbacks", None) is not None:
            return
        trainer.mlos_callbacks = self
        if self.workers is not None:
            trainer.args.workers = self.workers
        inner = trainer._setup_train

        def setup_train():
            self._begin(trainer)
            return inner()

        trainer._setup_train = setup_train

    def _begin(self, trainer):
        ctx, owned = self.context or current(), False
        if ctx is None or ctx.resources is None:
            ctx = MLOSTrainingContext(num_cpus=self.num_cpus or len(os.sched_getaffinity(0)), exclusive_cpus=False)
            ctx.start()
            owned = True
        run = trainer.mlos = _Run(ctx, owned)
        if trainer.device.type == "cpu":  # the constructor's select_device() set min(8, cpus - 1)
            import torch
            torch.set_num_threads(ctx.torch_threads)
            run.report["torch_threads"] = torch.get_num_threads()
        self._pin_dataloader_workers(run)
        self._wrap_optimizer_step(trainer)
        self._wrap_save_model(trainer, run)
        self._wrap_final_eval(trainer, run)

    @staticmethod
    def _pin_dataloader_workers(run):
        import ultralytics.data.build as build
        original = build.seed_worker
        run.report["worker_cpus"] = worker_cpus(run.ctx)
        build.seed_worker = _PinWorkers(run.report["worker_cpus"], original)
        run.undo.append(lambda: setattr(build, "seed_worker", original))

    @staticmethod
    def _wrap_optimizer_step(trainer):
        inner = trainer.optimizer_step

        def optimizer_step():
            trainer.run_callbacks("optimizer_step")
            inner()

        trainer.optimizer_step = optimizer_step

    @staticmethod
    def _wrap_save_model(trainer, run):
        inner = trainer.save_model
        wdir = pathlib.Path(trainer.wdir).resolve()

        def write_bytes_atomically(original):
            def write_bytes(path, data):
                if pathlib.Path(path).resolve().parent != wdir:
                    return original(path, data)
                view = memoryview(data)
                write_file_atomic(path, view)
                run.report["atomic_writes"].append({"path": str(path), "bytes": view.nbytes,
                                                    "inode": os.stat(path).st_ino})
                return view.nbytes
            return write_bytes

        def save_model():
            previous = run.ctx.phase
            run.mark(PHASE_CHECKPOINT)
            original = pathlib.Path.write_bytes
            pathlib.Path.write_bytes = write_bytes_atomically(original)
            try:
                return inner()
            finally:
                pathlib.Path.write_bytes = original
                run.mark(previous)

        trainer.save_model = save_model

    @staticmethod
    def _wrap_final_eval(trainer, run):
        import ultralytics.engine.trainer as engine
        inner = trainer.final_eval

        def strip_optimizer_atomically(original):
            def strip_optimizer(*args, **kwargs):
                import torch
                run.mark(PHASE_CHECKPOINT)
                save = torch.save
                torch.save = durable_save(save)
                try:
                    return original(*args, **kwargs)
                finally:
                    torch.save = save
                    run.mark(PHASE_FORWARD)  # the final validation follows
            return strip_optimizer

        def final_eval():
            original = engine.strip_optimizer
            engine.strip_optimizer = strip_optimizer_atomically(original)
            try:
                return inner()
            finally:
                engine.strip_optimizer = original

        trainer.final_eval = final_eval

    # -- phases -----------------------------------------------------------
    def _run(self, trainer):
        """This trainer's _Run if these callbacks own it and it is going."""
        if getattr(trainer, "mlos_callbacks", None) is not self:
            return None
        return getattr(trainer, "mlos", None)

    def _mark(self, trainer, phase):
        run = self._run(trainer)
        if run is not None:
            run.mark(phase)
        return run

    def on_train_start(self, trainer):
        run = self._run(trainer)
        if run is not None:
            handles = attach_phase_hooks(run.ctx, model=trainer.model)
            run.undo.append(lambda: [h.remove() for h in handles])

    def on_train_epoch_start(self, trainer):
        self._mark(trainer, PHASE_DATA_LOADING)

    def on_train_batch_start(self, trainer):
        self._mark(trainer, PHASE_FORWARD)

    def optimizer_step(self, trainer):
        run = self._mark(trainer, PHASE_OPTIMIZER)
        if run is not None:
            run.report["optimizer_steps"] += 1

    def on_train_batch_end(self, trainer):
        run = self._mark(trainer, PHASE_DATA_LOADING)
        if run is not None:
            run.report["batches"] += 1

    def on_train_epoch_end(self, trainer):
        self._mark(trainer, PHASE_FORWARD)

    def on_model_save(self, trainer):
        self._mark(trainer, PHASE_IDLE)

    def on_fit_epoch_end(self, trainer):
        self._mark(trainer, PHASE_IDLE)

    # -- end --------------------------------------------------------------
    def on_train_end(self, trainer):
        self._finish(trainer)

    def teardown(self, trainer):
        """Also runs when training raised (Ultralytics' finally clause)."""
        self._finish(trainer)

    def _finish(self, trainer):
        run = self._run(trainer)
        if run is None:  # not ours, before _setup_train, or finished already
            return
        trainer.mlos = None
        run.mark(PHASE_IDLE)
        if run.ctx.resources is not None:
            run.report["phase_profile"] = run.ctx.phase_profile()
        while run.undo:
            run.undo.pop()()
        if run.owned:
            run.ctx.close()
        self.reports.append(run.report)


def add_mlos_callbacks(model, context=None, *, workers=None, num_cpus=None):
    """Registers the mlOS callbacks on an Ultralytics model (YOLO(...))
    before model.train(); returns the MLOSUltralyticsCallbacks, whose
    .reports fill in as runs end.

    context: the MLOSTrainingContext to train on (default: the active one,
    else one created for the run on num_cpus CPUs, default all the process
    may use). workers: DataLoader workers to use even on CPU (Ultralytics
    forces 0 there); None keeps Ultralytics' choice."""
    return MLOSUltralyticsCallbacks(context, workers=workers, num_cpus=num_cpus).attach(model)


_defaults = None  # the callbacks register_default_callbacks installed


def _default_callback(event):
    """A module-level function per event: Ultralytics deep-copies its
    default callbacks for every model, which copies functions as they are
    but would copy a bound method's object (and the context in it)."""
    def callback(trainer):
        return getattr(_defaults, event)(trainer)
    callback.__name__ = callback.__qualname__ = f"mlos_{event}"
    return callback


def register_default_callbacks(base=None):
    """Adds the callbacks (on the active context, Ultralytics' worker
    count) to Ultralytics' default callbacks, so that every model created
    afterwards has them; the zero-code mode (mlos run) calls this when
    Ultralytics is imported. Idempotent; returns the
    MLOSUltralyticsCallbacks."""
    global _defaults
    if base is None:
        import ultralytics.utils.callbacks.base as base
    if _defaults is None:
        _defaults = MLOSUltralyticsCallbacks()
        for event in EVENTS:
            base.default_callbacks.setdefault(event, []).append(_default_callback(event))
    return _defaults


__all__ = ["add_mlos_callbacks", "register_default_callbacks", "MLOSUltralyticsCallbacks", "EVENTS", "PHASE_NAMES"]
