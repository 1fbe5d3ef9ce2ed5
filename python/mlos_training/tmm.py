# SPDX-License-Identifier: Apache-2.0
"""Tensor pools: reusable tensor memory that torch and numpy use without a
copy (include/mlos/tmm.h; docs/tmm.md).

    pool = TensorPool("256MiB", resources=res, locked=True)
    x = pool.tensor((64, 3, 224, 224), torch.float32)  # goes back when x goes
    buf = pool.acquire(1 << 20)                          # or by hand:
    a = buf.as_numpy(np.float32, (512, 512))
    buf.release()                                        # returns when `a` goes

A pool is one arena (a memfd: another process maps it by descriptor,
`fileno()`), bound to the job's NUMA node, optionally locked and huge-page
backed. Buffers come in size classes and are reused by class, so a loop that
asks for the same shapes every step makes no system call after the first.

Lifetimes: a tensor or array made from a buffer (through DLPack) keeps that
buffer's memory valid; the buffer goes back to the pool when it was released
(or its PoolBuffer collected) *and* nothing views it any more. Releasing
twice, or after the pool was closed, raises MLOSError; nothing crashes.
"""
from . import _core
from .errors import CODES, MLOSError, c_integer, check, invalid_argument

_U64_MAX = 2**64 - 1
_UNITS = {"": 1, "B": 1, "KIB": 1 << 10, "MIB": 1 << 20, "GIB": 1 << 30, "TIB": 1 << 40,
          "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12}


def _bytes(name, value):
    """An int, or a string such as "256MiB" / "2GB"."""
    if isinstance(value, str):
        text = value.strip().upper().replace(" ", "")
        digits = text.rstrip("KMGTIB")
        unit = text[len(digits):]
        if not digits.isdigit() or unit not in _UNITS:
            raise invalid_argument(f"{name} must be a byte count such as 1048576 or '256MiB', got {value!r}")
        value = int(digits) * _UNITS[unit]
    return c_integer(name, value, 0, _U64_MAX)


def _raise(rc, message):
    raise MLOSError(rc, message)


class PoolBuffer:
    """A buffer acquired from a TensorPool: `address`, `size` (asked for),
    `capacity` (usable: its size class) and `offset` in the pool's arena."""

    __slots__ = ("_buf",)

    def __init__(self, buf):
        self._buf = buf

    address = property(lambda self: self._buf.address)
    size = property(lambda self: self._buf.size)
    capacity = property(lambda self: self._buf.capacity)
    offset = property(lambda self: self._buf.offset)
    released = property(lambda self: self._buf.released)

    def _view(self):
        if self._buf.released:
            raise MLOSError(CODES["INVALID_ARGUMENT"], "buffer released already")
        return self._buf.view()

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """The whole buffer (capacity bytes) as a 1-D uint8 DLPack tensor on
        the CPU, owned by a reference to this buffer's memory (versioned
        DLPack when the consumer gives max_version). Never a copy: copy=True
        is refused."""
        if copy:
            raise BufferError("a pool buffer is shared, never copied (copy=True)")
        if dl_device is not None and tuple(dl_device) != (1, 0):
            raise BufferError(f"a pool buffer lives on the CPU (1, 0), not {tuple(dl_device)}")
        kwargs = {} if max_version is None else {"max_version": max_version}
        return self._view().__dlpack__(stream=stream, **kwargs)

    def __dlpack_device__(self):
        return (1, 0)  # kDLCPU, device 0

    def as_tensor(self, dtype=None, shape=None):
        """A torch tensor on this buffer, no copy (torch.from_dlpack):
        uint8 over `capacity` bytes, else `dtype` over as many whole
        elements as `shape` needs (default: all that fit)."""
        import torch
        return _shaped(torch.from_dlpack(self), dtype, shape, self.capacity, lambda t, d: t.view(d))

    def as_numpy(self, dtype=None, shape=None):
        """A numpy array on this buffer, no copy (numpy.from_dlpack)."""
        import numpy as np
        return _shaped(np.from_dlpack(self), None if dtype is None else np.dtype(dtype), shape, self.capacity,
                       lambda a, d: a.view(d))

    def release(self):
        """Gives the buffer back. Tensors and arrays made from it stay
        valid; the memory is reused once they are gone."""
        rc, message = self._buf.release()
        if rc < 0:
            _raise(rc, message)

    def __repr__(self):
        state = "released" if self.released else f"{self.capacity} bytes at offset {self.offset}"
        return f"<mlos_training.tmm.PoolBuffer {state}>"


def _elements(shape):
    count = 1
    for n in shape:
        count *= int(n)
    return count


def _shaped(flat, dtype, shape, capacity, view_as):
    if dtype is not None:
        itemsize = dtype.itemsize
        count = capacity // itemsize
        if shape is not None:
            count = _elements(shape)
            if count * itemsize > capacity:
                raise invalid_argument(f"shape {tuple(shape)} of {dtype} needs {count * itemsize} bytes, "
                                       f"the buffer has {capacity}")
        flat = view_as(flat[:count * itemsize], dtype)
    elif shape is not None:
        count = _elements(shape)
        if count > capacity:
            raise invalid_argument(f"shape {tuple(shape)} needs {count} bytes, the buffer has {capacity}")
        flat = flat[:count]
    return flat if shape is None else flat.reshape(tuple(shape))


class TensorPool:
    """A pool of `capacity` bytes (an int or '256MiB').

    resources: the job (mlos_training.Resources) whose memory_bytes the pool
        counts against and whose node it uses; None for no job.
    numa_node: a node to bind to instead (None: the job's, or none);
        strict_node: MPOL_BIND rather than preferring the node.
    locked: mlock the whole arena (shows in VmLck).
    huge_pages: ask for transparent huge pages; hugetlb: hugetlbfs pages.
    cuda_pinned: register the arena with CUDA (needs a GPU).
    private: anonymous memory, not shareable by descriptor.
    What was asked and not obtained is in notes(); stats() has the facts.
    """

    def __init__(self, capacity, *, resources=None, numa_node=None, locked=False, huge_pages=False, hugetlb=False,
                 cuda_pinned=False, strict_node=False, private=False, name=None):
        capacity = _bytes("capacity", capacity)
        node = _core.TMM_NODE_AUTO if numa_node is None else c_integer("numa_node", numa_node, 0, 1023)
        flags = ((_core.TMM_LOCKED if locked else 0) | (_core.TMM_HUGE_PAGES if huge_pages else 0) |
                 (_core.TMM_HUGETLB if hugetlb else 0) | (_core.TMM_CUDA_PINNED if cuda_pinned else 0) |
                 (_core.TMM_STRICT_NODE if strict_node else 0) | (_core.TMM_PRIVATE if private else 0))
        if name is not None and not isinstance(name, str):
            raise TypeError(f"name must be str, not {type(name).__name__}")
        handle = 0 if resources is None else resources.handle
        if resources is not None and not handle:
            raise MLOSError(CODES["INVALID_HANDLE"], "the resources were released")
        rc, pool = _core.tmm_pool_create(handle, capacity, flags, node, name or "")
        check(rc)
        self._pool = pool

    def acquire(self, nbytes):
        """A PoolBuffer of at least `nbytes`; MLOSError(NO_MEMORY) when the
        pool is full."""
        rc, result = self._pool.acquire(_bytes("nbytes", nbytes))
        if rc < 0:
            _raise(rc, result)
        return PoolBuffer(result)

    def tensor(self, shape, dtype=None):
        """A torch tensor of `shape` and `dtype` (default float32) in a pool
        buffer; the buffer goes back when the tensor is freed."""
        import torch
        return self._view_of(shape, torch.float32 if dtype is None else dtype, PoolBuffer.as_tensor)

    def numpy(self, shape, dtype="float32"):
        """As tensor(), for a numpy array."""
        import numpy as np
        return self._view_of(shape, np.dtype(dtype), PoolBuffer.as_numpy)

    def _view_of(self, shape, dtype, make):
        buf = self.acquire(max(1, _elements(shape) * dtype.itemsize))
        try:
            return make(buf, dtype, shape)
        finally:
            buf.release()  # the view keeps the memory until it goes

    def prewarm(self, nbytes, count):
        """Faults in `count` buffers of `nbytes`' class ahead of use."""
        check(self._pool.prewarm(_bytes("nbytes", nbytes), c_integer("count", count, 0, _U64_MAX)))

    def trim(self):
        """Gives the memory of released buffers back; returns the bytes."""
        rc, freed = self._pool.trim()
        check(rc)
        return freed

    def fileno(self):
        """The arena's sealed memfd (the pool's; dup it to keep it)."""
        rc, fd = self._pool.fileno()
        check(rc)
        return fd

    def stats(self):
        rc, stats = self._pool.stats()
        check(rc)
        return stats

    def notes(self):
        rc, text = self._pool.notes()
        check(rc)
        return text

    @property
    def closed(self):
        return self._pool.closed

    def close(self):
        """No more acquires. The arena goes when its last buffer and the
        last tensor on it go."""
        self._pool.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return "<mlos_training.tmm.TensorPool closed>" if self.closed else \
            f"<mlos_training.tmm.TensorPool {self.stats()['capacity_bytes']} bytes>"


__all__ = ["TensorPool", "PoolBuffer"]
