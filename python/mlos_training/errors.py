"""MLOSError: a negative result of the C API, with the library's message.

The package's rule for bad arguments, the same for every function: an
object of the wrong type raises TypeError, as Python does (a callback that
is not callable, a path that is not str, bytes or os.PathLike); a value of
the right type that the library cannot take raises MLOSError with code
INVALID_ARGUMENT and a message naming the argument, the error the C API
documents for it. That includes what the C ABI cannot even carry: an
integer outside its C type (memory_bytes < 0 or >= 2**64) and a path with a
NUL byte (a C string would end there: another file, silently). Callers
therefore catch one exception, MLOSError, for every refused value.
"""
import os

from . import _core

# mlos_error_t values (include/mlos/errors.h), by name.
CODES = {
    "INVALID_ARGUMENT": -1, "INVALID_HANDLE": -2, "INSUFFICIENT_CPUS": -3, "CPUS_BUSY": -4,
    "INSUFFICIENT_MEMORY": -5, "INVALID_NUMA_NODE": -6, "PERMISSION": -7, "LOCK_LIMIT": -8,
    "UNSUPPORTED": -9, "NOT_IMPLEMENTED": -10, "SYSTEM": -11, "VERSION_MISMATCH": -12,
    "BUFFER_TOO_SMALL": -13, "STATE_CORRUPT": -14, "NO_MEMORY": -15, "NO_SUCH_THREAD": -16,
    "TIMEOUT": -17, "DAEMON_UNAVAILABLE": -18, "IO": -19, "CHECKPOINT_CORRUPT": -20, "NOT_FOUND": -21,
    "PEER_LOST": -22, "QUOTA": -23, "POLICY_FAILED": -24, "BUSY": -25,
}
NAMES = {code: name for name, code in CODES.items()}


class MLOSError(RuntimeError):
    """`code` is the C API's negative mlos_error_t, `name` its name
    ("TIMEOUT"), and the message the library's reason for it."""

    def __init__(self, code, message=None):
        self.code = code
        self.name = NAMES.get(code, str(code))
        super().__init__(f"{self.name}: {message if message is not None else _core.strerror(code)}")


def invalid_argument(message):
    """The MLOSError(INVALID_ARGUMENT) this package raises for a bad value."""
    return MLOSError(CODES["INVALID_ARGUMENT"], message)


def c_integer(name, value, lo, hi):
    """int(value) if it is in [lo, hi] (the range of the C field), else
    MLOSError(INVALID_ARGUMENT) naming `name`. Objects int() refuses by
    type (None, a list) raise its TypeError; numbers it cannot convert
    (inf, nan, "12x") are bad values."""
    try:
        number = int(value)
    except (OverflowError, ValueError):
        raise invalid_argument(f"{name} must be an integer in {lo}..{hi}, got {value!r}") from None
    if not lo <= number <= hi:
        raise invalid_argument(f"{name} must be an integer in {lo}..{hi}, got {number}")
    return number


def fs_path(path, name="path"):
    """`path` (str, bytes or os.PathLike) as the bytes the C API gets, the
    way os functions encode it (os.fsencode, so any file name os.listdir
    returns works). TypeError for other objects; MLOSError(INVALID_ARGUMENT)
    if it holds a NUL byte, which would end the C string early."""
    raw = os.fsencode(path)
    if b"\0" in raw:
        raise invalid_argument(f"{name} {path!r} contains a NUL byte")
    return raw


def check(rc):
    """Returns rc when it is not negative, else raises MLOSError with the
    calling thread's last library error message."""
    if rc < 0:
        raise MLOSError(rc, _core.last_error_message())
    return rc
