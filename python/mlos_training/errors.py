# SPDX-License-Identifier: Apache-2.0
"""MLOSError: a negative result of the C API, with the library's message,
raised as the subclass of its error family.

The package's rule for bad arguments, the same for every function: an
object of the wrong type raises TypeError, as Python does (a callback that
is not callable, a path that is not str, bytes or os.PathLike); a value of
the right type that the library cannot take raises MLOSError with code
INVALID_ARGUMENT (MLOSInvalidArgumentError, also a ValueError) and a message
naming the argument, the error the C API documents for it. That includes
what the C ABI cannot even carry: an integer outside its C type
(memory_bytes < 0 or >= 2**64) and a path with a NUL byte (a C string would
end there: another file, silently). Callers therefore catch one exception,
MLOSError, for every refused value, or a family for one kind of failure:

    MLOSInvalidArgumentError  ValueError       INVALID_ARGUMENT, INVALID_HANDLE, INVALID_NUMA_NODE, BUFFER_TOO_SMALL
    MLOSPermissionError       PermissionError  PERMISSION, LOCK_LIMIT
    MLOSUnsupportedError                       UNSUPPORTED, NOT_IMPLEMENTED, VERSION_MISMATCH
    MLOSResourceError                          INSUFFICIENT_CPUS, CPUS_BUSY, INSUFFICIENT_MEMORY, NO_MEMORY, QUOTA, BUSY,
                                               INSUFFICIENT_GPUS, GPUS_BUSY
    MLOSTimeoutError          TimeoutError     TIMEOUT
    MLOSConnectionError       ConnectionError  PEER_LOST, DAEMON_UNAVAILABLE
    MLOSCorruptError                           STATE_CORRUPT, CHECKPOINT_CORRUPT
    MLOSSystemError           OSError          SYSTEM, IO
    MLOSNotFoundError         LookupError      NOT_FOUND, NO_SUCH_THREAD
    MLOSPolicyError                            POLICY_FAILED

The codes themselves come from include/mlos/errors.h, read at build time
(_error_codes.py); a code this table does not place raises plain MLOSError
(and tests/python/test_errors.py fails until it is placed).
"""
import os
from typing import Dict, Optional, Tuple, Type, TypeVar, Union

from . import _core
from ._error_codes import CODES, DESCRIPTIONS

NAMES: Dict[int, str] = {code: name for name, code in CODES.items()}

_E = TypeVar("_E", bound="MLOSError")


class MLOSError(RuntimeError):
    """`code` is the C API's negative mlos_error_t, `name` its name
    ("TIMEOUT"), `message` the library's reason for it (also in str()).

    MLOSError(code, message) makes the family's subclass for `code`
    (MLOSError(CODES["TIMEOUT"], ...) is an MLOSTimeoutError), so every
    place that raises MLOSError raises the right family."""

    code: int
    name: str
    message: str

    def __new__(cls: Type[_E], code: int, message: Optional[str] = None) -> _E:
        if cls is MLOSError:
            cls = error_class(code)  # type: ignore[assignment]
        # The builtin whose instance layout the class has: OSError's is
        # larger than RuntimeError's (only its __new__ may create one).
        base = OSError if issubclass(cls, OSError) else RuntimeError
        return base.__new__(cls, code)

    def __init__(self, code: int, message: Optional[str] = None) -> None:
        self.code = code
        self.name = NAMES.get(code, str(code))
        self.message = message if message is not None else _core.strerror(code)
        super().__init__(f"{self.name}: {self.message}")

    def __reduce__(self) -> Tuple[type, Tuple[int, str]]:  # pickles across processes (DataLoader workers)
        return (type(self), (self.code, self.message))


class MLOSInvalidArgumentError(MLOSError, ValueError):
    """A value the library cannot take, or a handle already released."""


class MLOSPermissionError(MLOSError, PermissionError):
    """A privilege or limit the process lacks (mlock: RLIMIT_MEMLOCK without CAP_IPC_LOCK)."""


class MLOSUnsupportedError(MLOSError):
    """The kernel, the build or the installation lacks what this needs; the message says what."""


class MLOSResourceError(MLOSError):
    """Not enough CPUs or memory, or held by others (busy, quota): may succeed later or smaller."""


class MLOSTimeoutError(MLOSError, TimeoutError):
    """A wait ran past its deadline."""


class MLOSConnectionError(MLOSError, ConnectionError):
    """A collective peer or mlosd is gone; the group (or connection) must be made again."""


class MLOSCorruptError(MLOSError):
    """Persistent state or a checkpoint file failed verification; the message says which."""


class MLOSSystemError(MLOSError, OSError):
    """A system call or I/O failure; the message carries errno."""


class MLOSNotFoundError(MLOSError, LookupError):
    """No such checkpoint, policy or thread."""


class MLOSPolicyError(MLOSError):
    """A policy module crashed, hung or misbehaved; the job runs on the built-in defaults."""


# Which family each code of errors.h raises (by name, as in CODES).
FAMILIES: Dict[Type[MLOSError], Tuple[str, ...]] = {
    MLOSInvalidArgumentError: ("INVALID_ARGUMENT", "INVALID_HANDLE", "INVALID_NUMA_NODE", "BUFFER_TOO_SMALL"),
    MLOSPermissionError: ("PERMISSION", "LOCK_LIMIT"),
    MLOSUnsupportedError: ("UNSUPPORTED", "NOT_IMPLEMENTED", "VERSION_MISMATCH"),
    MLOSResourceError: ("INSUFFICIENT_CPUS", "CPUS_BUSY", "INSUFFICIENT_MEMORY", "NO_MEMORY", "QUOTA", "BUSY",
                        "INSUFFICIENT_GPUS", "GPUS_BUSY"),
    MLOSTimeoutError: ("TIMEOUT",),
    MLOSConnectionError: ("PEER_LOST", "DAEMON_UNAVAILABLE"),
    MLOSCorruptError: ("STATE_CORRUPT", "CHECKPOINT_CORRUPT"),
    MLOSSystemError: ("SYSTEM", "IO"),
    MLOSNotFoundError: ("NOT_FOUND", "NO_SUCH_THREAD"),
    MLOSPolicyError: ("POLICY_FAILED",),
}
_CLASS_OF_CODE: Dict[int, Type[MLOSError]] = {
    CODES[name]: family for family, names in FAMILIES.items() for name in names if name in CODES
}


def error_class(code: int) -> Type[MLOSError]:
    """The exception class `code` raises: its family's, MLOSError for a
    code this package does not know (errors.h: treat as a generic failure)."""
    return _CLASS_OF_CODE.get(code, MLOSError)


def invalid_argument(message: str) -> MLOSInvalidArgumentError:
    """The MLOSError(INVALID_ARGUMENT) this package raises for a bad value."""
    return MLOSInvalidArgumentError(CODES["INVALID_ARGUMENT"], message)


def c_integer(name: str, value: object, lo: int, hi: int) -> int:
    """int(value) if it is in [lo, hi] (the range of the C field), else
    MLOSError(INVALID_ARGUMENT) naming `name`. Objects int() refuses by
    type (None, a list) raise its TypeError; numbers it cannot convert
    (inf, nan, "12x") are bad values."""
    try:
        number = int(value)  # type: ignore[call-overload]
    except (OverflowError, ValueError):
        raise invalid_argument(f"{name} must be an integer in {lo}..{hi}, got {value!r}") from None
    if not lo <= number <= hi:
        raise invalid_argument(f"{name} must be an integer in {lo}..{hi}, got {number}")
    return number


def fs_path(path: "Union[str, bytes, os.PathLike[str], os.PathLike[bytes]]", name: str = "path") -> bytes:
    """`path` (str, bytes or os.PathLike) as the bytes the C API gets, the
    way os functions encode it (os.fsencode, so any file name os.listdir
    returns works). TypeError for other objects; MLOSError(INVALID_ARGUMENT)
    if it holds a NUL byte, which would end the C string early."""
    raw = os.fsencode(path)
    if b"\0" in raw:
        raise invalid_argument(f"{name} {path!r} contains a NUL byte")
    return raw


def check(rc: int) -> int:
    """Returns rc when it is not negative, else raises the MLOSError family
    of rc with the calling thread's last library error message."""
    if rc < 0:
        raise MLOSError(rc, _core.last_error_message())
    return rc


__all__ = [
    "CODES", "DESCRIPTIONS", "NAMES", "FAMILIES", "MLOSError", "MLOSInvalidArgumentError", "MLOSPermissionError",
    "MLOSUnsupportedError", "MLOSResourceError", "MLOSTimeoutError", "MLOSConnectionError", "MLOSCorruptError",
    "MLOSSystemError", "MLOSNotFoundError", "MLOSPolicyError", "error_class", "check", "c_integer", "fs_path",
    "invalid_argument",
]
