# SPDX-License-Identifier: Apache-2.0
"""Phases and reduction operators as IntEnums: still ints (the C values,
mlos_training_phase_t and mlos_reduce_op_t), with names; the functions that
take one also take its name as a string, in any case ("forward").

tests/python/test_errors.py checks these against the library's own names
(mlos_training_phase_name), so a phase added in C cannot be missed here.
"""
from enum import IntEnum
from typing import Dict, Optional, Type, TypeVar, Union

from .errors import invalid_argument

_T = TypeVar("_T", bound=IntEnum)


class Phase(IntEnum):
    """mlos_training_phase_t."""

    IDLE = 0
    DATA_LOADING = 1
    FORWARD = 2
    BACKWARD = 3
    OPTIMIZER = 4
    CHECKPOINT = 5


class ReduceOp(IntEnum):
    """mlos_reduce_op_t: the reductions of all_reduce."""

    SUM = 0
    PROD = 1
    MIN = 2
    MAX = 3
    AVG = 4


PhaseLike = Union[Phase, int, str]
ReduceOpLike = Union[ReduceOp, int, str]


def member_by_name(enum: Type[_T], what: str, name: str, aliases: Optional[Dict[str, str]] = None) -> _T:
    """enum's member called `name` (any case; `aliases` maps other names),
    else MLOSError(INVALID_ARGUMENT) listing the valid names."""
    key = name.strip().upper()
    key = (aliases or {}).get(key, key)
    try:
        return enum[key]
    except KeyError:
        valid = ", ".join(f"{m.name} ({m.value})" for m in enum)
        raise invalid_argument(f"{what} {name!r} is not one of {valid}") from None


def phase_value(phase: PhaseLike) -> int:
    """The C value of a Phase, an int or a phase name ("FORWARD", "forward").
    An int goes to the library as it is (it refuses unknown phases)."""
    if isinstance(phase, str):
        return int(member_by_name(Phase, "phase", phase))
    return int(phase)
