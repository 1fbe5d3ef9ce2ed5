# SPDX-License-Identifier: Apache-2.0
"""PyTorch integration of mlOS.

    from mlos_training.pytorch import MLOSDataLoader, MLOSTrainingContext, mlos_checkpoint

    with MLOSTrainingContext(num_cpus=8, memory_gb=16, model=model, optimizer=opt) as ctx:
        for x, y in MLOSDataLoader(dataset, batch_size=64, num_workers=4):   # DATA_LOADING
            loss = loss_fn(model(x), y)                                      # FORWARD (hook)
            loss.backward()                                                  # BACKWARD (hook)
            opt.step()                                                       # OPTIMIZER (hook)
        with mlos_checkpoint(ctx):
            torch.save(model.state_dict(), "model.pt")                       # CHECKPOINT, atomic
        pending = AsyncCheckpointer("ckpt/", ctx).save(model.state_dict())   # stalls for one copy
        pending.wait()                                                       # durable
"""
from ..context import MLOSTrainingContext, current
from .async_checkpoint import AsyncCheckpointer, PendingSave, load_checkpoint
from .checkpoint import mlos_checkpoint
from .data import MLOSDataLoader
from .phases import attach_phase_hooks

__all__ = ["MLOSDataLoader", "MLOSTrainingContext", "mlos_checkpoint", "attach_phase_hooks", "current",
           "AsyncCheckpointer", "PendingSave", "load_checkpoint"]
