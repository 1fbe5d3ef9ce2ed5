# SPDX-License-Identifier: Apache-2.0
"""Locked memory from Python: a job's checkpoint buffers as tensors, and
caller-owned tensors registered to be locked per phase.

    buf = res.alloc_checkpoint_buffer(64 << 20)   # mlock'd, counted against memory_bytes
    t = buf.tensor(torch.float32)                  # the same memory, no copy
    res.register_buffer(flat_grads)                # locked from BACKWARD until IDLE

LockedBuffer: memory of mlos_training_alloc_checkpoint_buffer, prefaulted,
locked (it shows in VmLck) and counted against the allocation's
memory_bytes. Its tensors and memoryviews point at the library's memory
(tensor.data_ptr() == buf.address). free() refuses while any of them is
alive (it would leave them pointing at unmapped memory). When the
allocation is released with such views still alive, the library frees the
buffer (unlocked, no longer counted) and ordinary zeroed memory is mapped at
the same address, so those views stay valid but lose their contents."""
import sys
import warnings

from . import _core
from .errors import CODES, MLOSError, c_integer, check, invalid_argument

BUFFER_GRADIENT = _core.BUFFER_GRADIENT


class LockedBuffer:
    """A checkpoint buffer of an allocation (Resources.alloc_checkpoint_buffer)."""

    __slots__ = ("_res", "_mem", "size", "address", "locked")

    def __init__(self, res, address, size, locked=True):
        self._res, self.size, self.address = res, size, address
        self.locked = locked  # False: an unlocked fallback (alloc_checkpoint_buffer(allow_unlocked=True))
        self._mem = _core.LockedMemory(address, size)

    @property
    def freed(self):
        return self._mem is None

    def in_use(self):
        """True while a tensor or memoryview made from this buffer is alive."""
        # References: our slot and getrefcount's argument; each tensor of
        # torch.frombuffer holds one more, each memoryview an export.
        return self._mem is not None and (self._mem.exports > 0 or sys.getrefcount(self._mem) > 2)

    def _memory(self):
        if self._mem is None:
            raise MLOSError(CODES["INVALID_HANDLE"], "locked buffer already freed")
        return self._mem

    def memoryview(self):
        """A writable memoryview of the whole buffer (no copy)."""
        return memoryview(self._memory())

    def tensor(self, dtype=None, shape=None):
        """A CPU tensor on this buffer (no copy): uint8 of `size` bytes by
        default, else `dtype` (size must be a multiple of its element size),
        reshaped to `shape` if given."""
        import torch
        t = torch.frombuffer(self._memory(), dtype=torch.uint8)
        if dtype is not None and dtype != torch.uint8:
            t = t.view(dtype)
        return t if shape is None else t.view(shape)

    def free(self):
        """Unlocks and unmaps the buffer and returns its bytes to the job's
        budget. MLOSError(INVALID_ARGUMENT) while tensors or memoryviews of
        it are alive; MLOSError(INVALID_HANDLE) once freed or released."""
        if self.in_use():  # before any local reference to the memory object
            raise invalid_argument("locked buffer is still in use by tensors or memoryviews; delete them first")
        check(_core.free_checkpoint_buffer(self._res.handle, self._memory().address))
        self._res._buffers.discard(self)
        self._mem = None

    def _released(self):
        """The allocation was released (the library freed the buffer): keep
        memory under views that are still alive."""
        mem, self._mem = self._mem, None
        if mem is None or not (mem.exports > 0 or sys.getrefcount(mem) > 2):
            return
        rc = mem.adopt()
        if rc != 0:
            warnings.warn(f"released locked buffer at {mem.address:#x} is still viewed and could not be "
                          f"remapped (errno {-rc}); its tensors must not be used", RuntimeWarning, stacklevel=3)

    def __repr__(self):
        state = "freed" if self._mem is None else f"{self.size} bytes at {self.address:#x}"
        if self._mem is not None and not self.locked:
            state += ", not locked"
        return f"<LockedBuffer {state}>"


def alloc_checkpoint_buffer(res, size, allow_unlocked=False):
    """See Resources.alloc_checkpoint_buffer."""
    size = c_integer("size", size, 0, _core.SIZE_MAX)
    rc, address, locked = _core.alloc_checkpoint_buffer(res.handle, size, bool(allow_unlocked))
    check(rc)
    buf = LockedBuffer(res, address, size, locked)
    res._buffers.add(buf)
    return buf


def storage_range(tensor):
    """(address, bytes) of a CPU tensor's whole storage."""
    import torch
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"expected a torch.Tensor, got {type(tensor).__name__}")
    if tensor.device.type != "cpu":
        raise invalid_argument(f"only CPU tensors can be locked, got one on {tensor.device}")
    storage = tensor.untyped_storage()
    return storage, storage.data_ptr(), storage.nbytes()


def register_buffer(res, tensor, kind=BUFFER_GRADIENT):
    """See Resources.register_buffer."""
    storage, address, nbytes = storage_range(tensor)
    check(_core.register_buffer(res.handle, address, nbytes, int(kind)))
    res._registered[address] = storage  # keeps the memory alive while the library may lock it


def unregister_buffer(res, tensor):
    """See Resources.unregister_buffer."""
    _, address, _ = storage_range(tensor)
    check(_core.unregister_buffer(res.handle, address))
    res._registered.pop(address, None)
