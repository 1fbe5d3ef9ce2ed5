"""MLOSError: a negative result of the C API, with the library's message."""
from . import _core

# mlos_error_t values (include/mlos/errors.h), by name.
CODES = {
    "INVALID_ARGUMENT": -1, "INVALID_HANDLE": -2, "INSUFFICIENT_CPUS": -3, "CPUS_BUSY": -4,
    "INSUFFICIENT_MEMORY": -5, "INVALID_NUMA_NODE": -6, "PERMISSION": -7, "LOCK_LIMIT": -8,
    "UNSUPPORTED": -9, "NOT_IMPLEMENTED": -10, "SYSTEM": -11, "VERSION_MISMATCH": -12,
    "BUFFER_TOO_SMALL": -13, "STATE_CORRUPT": -14, "NO_MEMORY": -15, "NO_SUCH_THREAD": -16,
    "TIMEOUT": -17, "DAEMON_UNAVAILABLE": -18, "IO": -19, "CHECKPOINT_CORRUPT": -20, "NOT_FOUND": -21,
    "PEER_LOST": -22, "QUOTA": -23,
}
NAMES = {code: name for name, code in CODES.items()}


class MLOSError(RuntimeError):
    """`code` is the C API's negative mlos_error_t, `name` its name
    ("TIMEOUT"), and the message the library's reason for it."""

    def __init__(self, code, message=None):
        self.code = code
        self.name = NAMES.get(code, str(code))
        super().__init__(f"{self.name}: {message if message is not None else _core.strerror(code)}")


def check(rc):
    """Returns rc when it is not negative, else raises MLOSError with the
    calling thread's last library error message."""
    if rc < 0:
        raise MLOSError(rc, _core.last_error_message())
    return rc
