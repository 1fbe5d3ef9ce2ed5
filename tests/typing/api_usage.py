# SPDX-License-Identifier: Apache-2.0
"""Type-checked, never run: the public API as a user's code calls it,
checked by mypy against the installed package (py.typed, the _core stubs)
in scripts/test.sh. A wrong annotation or a missing py.typed fails there."""
from typing import Dict, List, Tuple, Type

import mlos_training as m
from mlos_training import _core
from mlos_training.enums import Phase, ReduceOp
from mlos_training.errors import CODES, FAMILIES, error_class


def place(n: int) -> Tuple[List[int], int]:
    res: m.Resources = m.request_resources(num_cpus=n, memory_bytes=1 << 30, exclusive_cpus=False)
    try:
        m.bind_current_thread(res)
        m.set_phase(res, m.PHASE_FORWARD)
        m.set_phase(res, Phase.BACKWARD)
        m.set_phase(res, "optimizer")
        threads: int = res.recommended_threads
        cpus: List[int] = res.cpus
        profile: Dict[str, object] = res.phase_profile()
        assert profile and threads
        return cpus, threads
    finally:
        m.release_resources(res)


def classify(e: m.MLOSError) -> str:
    family: Type[m.MLOSError] = error_class(e.code)
    if isinstance(e, m.MLOSTimeoutError):
        return "retry"
    return f"{family.__name__}: {e.name} ({e.code}) {e.message}"


version: str = m.__version__
codes: Dict[str, int] = CODES
ops: List[ReduceOp] = [m.SUM, m.AVG, ReduceOp.MAX]
names: Tuple[str, ...] = m.PHASE_NAMES
families = FAMILIES
message: str = _core.strerror(-1)
