# SPDX-License-Identifier: Apache-2.0
"""Automatic phase marking through torch's own hooks: no set_phase calls in
the training loop.

  FORWARD    a forward pre-hook on the model (the top-level module only:
             one call per forward, not one per layer)
  BACKWARD   a hook on the forward's output tensor, which autograd calls
             when the gradient reaches it, i.e. when backward starts
  OPTIMIZER  an optimizer step pre-hook, ended by a step post-hook that
             enters DATA_LOADING (the loop's wait for its next batch):
             host time after the step (logging, a pause, zero_grad) is not
             counted as OPTIMIZER
DATA_LOADING is marked by MLOSDataLoader, CHECKPOINT by mlos_checkpoint.
Each hook is one set_phase call (about a microsecond from Python; no
system call when the phase's OS settings do not change)."""
from .. import PHASE_BACKWARD, PHASE_DATA_LOADING, PHASE_FORWARD, PHASE_OPTIMIZER


def _first_grad_tensor(out):
    """The first tensor that requires grad in a forward's output (tensors,
    or lists, tuples, dicts of them); None if there is none."""
    import torch
    if isinstance(out, torch.Tensor):
        return out if out.requires_grad else None
    items = out.values() if isinstance(out, dict) else out if isinstance(out, (list, tuple)) else ()
    for item in items:
        t = _first_grad_tensor(item)
        if t is not None:
            return t
    return None


def mark_backward_when_reached(out, mark):
    """Calls mark(PHASE_BACKWARD) when backward reaches the forward output
    `out` (a hook on its first tensor that requires grad; none under
    no_grad). The gradient is left as it is."""
    t = _first_grad_tensor(out)
    if t is not None:
        t.register_hook(lambda grad: mark(PHASE_BACKWARD))


def attach_phase_hooks(ctx, model=None, optimizer=None):
    """Registers the hooks; returns their handles (each has .remove())."""
    handles = []
    if model is not None:
        def before_forward(module, args):
            ctx.mark(PHASE_FORWARD)

        def after_forward(module, args, out):
            mark_backward_when_reached(out, ctx.mark)

        handles.append(model.register_forward_pre_hook(before_forward))
        handles.append(model.register_forward_hook(after_forward))
    if optimizer is not None:
        handles.append(optimizer.register_step_pre_hook(lambda opt, args, kwargs: ctx.mark(PHASE_OPTIMIZER)))
        # The step ends at its post-hook; until the next forward the loop gets
        # its next batch (see autostart.after_step for why not IDLE).
        handles.append(optimizer.register_step_post_hook(lambda opt, args, kwargs: ctx.mark(PHASE_DATA_LOADING)))
    return handles
