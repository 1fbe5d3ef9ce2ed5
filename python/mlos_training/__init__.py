# SPDX-License-Identifier: Apache-2.0
"""mlOS Training Workload API for Python.

The published shapes::

    import mlos_training
    res = mlos_training.request_resources(num_cpus=4, memory_bytes=8 << 30,
                                          numa_preference=-1, exclusive_cpus=True)
    mlos_training.bind_current_thread(res)
    mlos_training.set_phase(res, mlos_training.PHASE_FORWARD)   # or Phase.FORWARD, or "forward"
    mlos_training.release_resources(res)

Every function calls libmlos's C API (shipped inside this package); a
negative result code becomes MLOSError (the subclass of its family, e.g.
MLOSPermissionError) carrying the code and the library's own message. See
docs/python.md.
"""
from . import _core
from ._resources import (AVG, MAX, MEMORY_CRITICAL, MEMORY_MODERATE, MEMORY_NORMAL, MIN, PHASE_BACKWARD,
                         PHASE_CHECKPOINT, PHASE_DATA_LOADING, PHASE_FORWARD, PHASE_IDLE, PHASE_NAMES,
                         PHASE_OPTIMIZER, PROD, SUM, Resources, _live, allowed_cpus, bind_current_thread,
                         release_resources, request_resources, set_phase, write_file_atomic)
from .context import MLOSTrainingContext
from .enums import Phase, ReduceOp
from .errors import (MLOSConnectionError, MLOSCorruptError, MLOSError, MLOSInvalidArgumentError, MLOSNotFoundError,
                     MLOSPermissionError, MLOSPolicyError, MLOSResourceError, MLOSSystemError, MLOSTimeoutError,
                     MLOSUnsupportedError)

__version__: str = _core.VERSION

__all__ = [
    "MLOSError", "MLOSInvalidArgumentError", "MLOSPermissionError", "MLOSUnsupportedError", "MLOSResourceError",
    "MLOSTimeoutError", "MLOSConnectionError", "MLOSCorruptError", "MLOSSystemError", "MLOSNotFoundError",
    "MLOSPolicyError", "Phase", "ReduceOp", "Resources", "allowed_cpus", "request_resources", "release_resources", "bind_current_thread", "set_phase",
    "PHASE_IDLE", "PHASE_DATA_LOADING", "PHASE_FORWARD", "PHASE_BACKWARD", "PHASE_OPTIMIZER", "PHASE_CHECKPOINT",
    "PHASE_NAMES", "SUM", "PROD", "MIN", "MAX", "AVG", "MEMORY_NORMAL", "MEMORY_MODERATE", "MEMORY_CRITICAL",
    "MLOSTrainingContext", "write_file_atomic",
]
